//! Claude Code's matchers, and their Gemini CLI equivalents for tool events.
//!
//! Claude Code reads a matcher by what it contains:
//!
//! - `*`, the empty string or no matcher: everything matches;
//! - only letters, digits, `_`, `-`, spaces, `,` and `|`: a list of exact names separated by
//!   `|` or `,` (surrounding spaces ignored), so `Edit|Write` matches those two tools only;
//! - anything else: a JavaScript regular expression, searched anywhere in the name
//!   (`Notebook.*`, `mcp__memory__.*`); one that does not compile matches nothing.
//!
//! Gemini CLI reads every tool matcher as an unanchored regular expression of *its* tool names,
//! so translating a matcher means more than renaming words inside it: `Bash` must become
//! `^run_shell_command$` (not `run_shell_command`, and not a pattern that also matches
//! `Bash2`), and `Re.*` must match `read_file` because Claude's `Read` matches it. A regular
//! expression is translated by evaluating it against every tool both CLIs have (the table in
//! [`super::names`]); the tools it selects are listed exactly, the Gemini names it would match
//! by accident are excluded, and every other name (tools only one CLI has) is still searched
//! with the original expression. MCP names differ in their separators (`mcp__s__t` against
//! `mcp_s_t`): a pattern that mentions `__` is applied to Gemini MCP names with each `__`
//! written as `_`.

use super::names::{TOOLS, claude_tool_to_gemini};

/// How Claude Code reads one matcher.
enum ClaudeMatcher {
    /// Matches everything.
    All,
    /// Matches exactly these names.
    Names(Vec<String>),
    /// A regular expression searched anywhere in the name.
    Regex(regress::Regex),
    /// A pattern JavaScript cannot compile: matches nothing.
    Invalid,
}

fn parse(matcher: &str) -> ClaudeMatcher {
    let trimmed = matcher.trim();
    if trimmed.is_empty() || trimmed == "*" {
        return ClaudeMatcher::All;
    }
    let plain = trimmed
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'));
    if plain {
        let names = trimmed
            .split(['|', ','])
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect();
        return ClaudeMatcher::Names(names);
    }
    match regress::Regex::new(trimmed) {
        Ok(regex) => ClaudeMatcher::Regex(regex),
        Err(_) => ClaudeMatcher::Invalid,
    }
}

/// Whether Claude Code's `matcher` selects `value` (a tool name, a session source, a
/// notification type, ...), by the rules in the module documentation.
pub fn claude_matcher_matches(matcher: &str, value: &str) -> bool {
    match parse(matcher) {
        ClaudeMatcher::All => true,
        ClaudeMatcher::Names(names) => names.iter().any(|name| name == value),
        ClaudeMatcher::Regex(regex) => regex.find(value).is_some(),
        ClaudeMatcher::Invalid => false,
    }
}

/// Whether Claude Code can use `matcher` at all: `false` for a regular expression JavaScript
/// cannot compile, which never matches anything.
pub fn is_valid_claude_matcher(matcher: &str) -> bool {
    !matches!(parse(matcher), ClaudeMatcher::Invalid)
}

/// A Gemini CLI tool matcher that selects the Gemini tools whose Claude counterparts Claude
/// Code's `matcher` selects (see the module documentation).
///
/// `*` and the empty string are returned as they are (both match everything in Gemini CLI
/// too). An exact list becomes an anchored alternation of Gemini names (`Edit|Write` →
/// `^(?:replace|write_file)$`); a regular expression is returned unchanged when it already
/// selects the same tools, and otherwise wrapped as described above. Where two Claude tools
/// share one Gemini tool (`Edit` and `MultiEdit` are both `replace`), the Gemini tool is
/// selected when either is. A pattern JavaScript cannot compile becomes `(?!)`, which matches
/// nothing, as in Claude Code.
pub fn claude_matcher_to_gemini(matcher: &str) -> String {
    match parse(matcher) {
        ClaudeMatcher::All => matcher.trim().to_owned(),
        ClaudeMatcher::Names(names) => {
            let mut gemini: Vec<String> = Vec::new();
            for name in &names {
                let name = claude_tool_to_gemini(name).into_owned();
                if !gemini.contains(&name) {
                    gemini.push(name);
                }
            }
            exact_names(&gemini)
        }
        ClaudeMatcher::Regex(regex) => translate_regex(matcher.trim(), &regex),
        ClaudeMatcher::Invalid => NEVER.to_owned(),
    }
}

/// hookd's matcher (an unanchored JavaScript regular expression) that selects the same values
/// as Claude Code's `matcher`, for fields whose values hookd does not rename (the matcher
/// fields of Claude Code's own events: its tool names, agent types, sources, ...). An exact
/// list becomes an anchored alternation; a regular expression stays as it is.
pub fn claude_matcher_verbatim(matcher: &str) -> String {
    match parse(matcher) {
        ClaudeMatcher::All => matcher.trim().to_owned(),
        ClaudeMatcher::Names(names) => exact_names(&names),
        ClaudeMatcher::Regex(_) => matcher.trim().to_owned(),
        ClaudeMatcher::Invalid => NEVER.to_owned(),
    }
}

/// A regular expression that matches nothing.
const NEVER: &str = "(?!)";

/// An anchored alternation of exactly these names.
fn exact_names(names: &[String]) -> String {
    match names {
        [] => NEVER.to_owned(),
        [name] => format!("^{}$", escape(name)),
        _ => {
            let alternatives: Vec<String> = names.iter().map(|name| escape(name)).collect();
            format!("^(?:{})$", alternatives.join("|"))
        }
    }
}

/// `name` with JavaScript's regular expression syntax characters escaped.
fn escape(name: &str) -> String {
    let mut escaped = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(
            c,
            '\\' | '^' | '$' | '.' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}'
        ) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

fn translate_regex(pattern: &str, regex: &regress::Regex) -> String {
    let matches = |name: &str| regex.find(name).is_some();
    // The Gemini tools whose Claude counterpart the pattern selects, and the Gemini names
    // the pattern itself would match.
    let mut selected: Vec<&str> = Vec::new();
    let mut accidental: Vec<&str> = Vec::new();
    for tool in &TOOLS {
        if matches(tool.claude) && !selected.contains(&tool.gemini) {
            selected.push(tool.gemini);
        }
        if matches(tool.gemini) && !accidental.contains(&tool.gemini) {
            accidental.push(tool.gemini);
        }
    }
    let mcp = pattern.contains("__");
    let same_set =
        selected.len() == accidental.len() && selected.iter().all(|name| accidental.contains(name));
    if same_set && !mcp {
        return pattern.to_owned();
    }
    let wrongly_matched: Vec<String> = accidental
        .iter()
        .filter(|name| !selected.contains(name))
        .map(|name| escape(name))
        .collect();
    let exclusion = if wrongly_matched.is_empty() {
        String::new()
    } else {
        format!("(?!(?:{})$)", wrongly_matched.join("|"))
    };

    let mut branches: Vec<String> = Vec::new();
    if !selected.is_empty() {
        let selected: Vec<String> = selected.iter().map(|name| (*name).to_owned()).collect();
        branches.push(exact_names(&selected));
    }
    let mcp_pattern = pattern.replace("__", "_");
    if mcp && !has_group_references(pattern) {
        // Two copies of the pattern: one for MCP names (with Gemini's separators), one for
        // everything else.
        branches.push(format!("^(?!mcp_){exclusion}[\\s\\S]*?(?:{pattern})"));
        branches.push(format!("^(?=mcp_)[\\s\\S]*?(?:{mcp_pattern})"));
    } else {
        // One copy: numbered back-references and named groups cannot be duplicated. A
        // pattern that mentions `__` is then written with Gemini's MCP separators.
        let pattern = if mcp { &mcp_pattern } else { pattern };
        if exclusion.is_empty() {
            branches.push(format!("(?:{pattern})"));
        } else {
            branches.push(format!("^{exclusion}[\\s\\S]*?(?:{pattern})"));
        }
    }
    branches.join("|")
}

/// Whether a pattern has back-references or named groups, which cannot appear twice in one
/// expression.
fn has_group_references(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    let numbered = bytes
        .windows(2)
        .any(|pair| pair[0] == b'\\' && (b'1'..=b'9').contains(&pair[1]));
    let named = pattern.contains("\\k<")
        || pattern
            .match_indices("(?<")
            .any(|(at, _)| !matches!(bytes.get(at + 3), Some(b'=' | b'!')));
    numbered || named
}

#[cfg(test)]
mod tests {
    use super::super::names::gemini_tool_to_claude;
    use super::*;
    use crate::event::MatcherKind;
    use crate::matcher::{MatchContext, Matcher};

    #[test]
    fn claude_matching_rules() {
        // (matcher, value, matches)
        let cases = [
            ("", "Bash", true),
            ("*", "anything", true),
            (" * ", "anything", true),
            ("Bash", "Bash", true),
            ("Bash", "Bash2", false),
            ("Bash", "bash", false),
            ("Edit|Write", "Write", true),
            ("Edit|Write", "MultiEdit", false),
            ("Edit, Write", "Write", true),
            ("Edit , Write", "Edit", true),
            ("code-reviewer", "code-reviewer", true),
            ("startup|resume", "resume", true),
            ("Notebook.*", "NotebookEdit", true),
            ("Edit.*", "MultiEdit", true),
            ("^Edit", "MultiEdit", false),
            (".*Edit", "MultiEdit", true),
            ("^Edit$", "Edit", true),
            ("mcp__memory__.*", "mcp__memory__create", true),
            ("mcp__memory__.*", "mcp__github__x", false),
            ("[invalid", "[invalid", false),
            ("(?<=x)y", "xy", true),
        ];
        for (matcher, value, expected) in cases {
            assert_eq!(
                claude_matcher_matches(matcher, value),
                expected,
                "{matcher:?} on {value:?}"
            );
        }
        assert!(is_valid_claude_matcher("Bash|Edit"));
        assert!(is_valid_claude_matcher("a.*"));
        assert!(!is_valid_claude_matcher("[invalid"));
    }

    #[test]
    fn translated_matchers_read_as_written() {
        let cases = [
            ("", ""),
            ("*", "*"),
            ("Bash", "^run_shell_command$"),
            ("Edit|Write", "^(?:replace|write_file)$"),
            ("Edit|MultiEdit", "^replace$"),
            ("Edit, Write", "^(?:replace|write_file)$"),
            ("Task", "^Task$"),
            ("mcp__github__create_issue", "^mcp_github_create_issue$"),
            ("|", "(?!)"),
            ("[invalid", "(?!)"),
            // Already the same selection: unchanged.
            (".*", ".*"),
            ("Notebook.*", "Notebook.*"),
            // `Re` selects Read (read_file) but would match nothing of Gemini's by itself.
            ("^Re", "^read_file$|(?:^Re)"),
            // `glob` is both Claude's `Grep` input key and Gemini's tool: `gl` matches the
            // Gemini name `glob` but no Claude name.
            ("gl.b", "^(?!(?:glob)$)[\\s\\S]*?(?:gl.b)"),
            (
                "mcp__memory__.*",
                "^(?!mcp_)[\\s\\S]*?(?:mcp__memory__.*)|^(?=mcp_)[\\s\\S]*?(?:mcp_memory_.*)",
            ),
        ];
        for (claude, gemini) in cases {
            assert_eq!(claude_matcher_to_gemini(claude), gemini, "{claude:?}");
        }
    }

    /// The translated matcher, compiled the way hookd (and Gemini CLI) compile tool matchers,
    /// selects a Gemini tool exactly when Claude's matcher selects its Claude name.
    #[test]
    fn translated_matchers_select_the_same_tools() {
        let gemini_names = [
            "run_shell_command",
            "replace",
            "read_file",
            "write_file",
            "glob",
            "grep_search",
            "list_directory",
            "web_fetch",
            "google_web_search",
            "write_todos",
            "read_many_files",
            "save_memory",
            "Task",
            "NotebookEdit",
            "mcp_github_create_issue",
            "mcp_memory_read_graph",
            "mcp_fs_write_file",
            "discovered_tool_lint",
        ];
        let matchers = [
            "",
            "*",
            "Bash",
            "Edit|Write",
            "Write,Read",
            "MultiEdit",
            "Read",
            "Task",
            "Notebook.*",
            ".*",
            "^Re",
            "Web.*",
            "(Glob|Grep)",
            "^(?!Bash$).*",
            "e$",
            "gl.b",
            "mcp__.*",
            "mcp__memory__.*",
            "mcp__.*__write.*",
            "^mcp__github__create_issue$",
            "(a)\\1|mcp__fs__.*",
            "[invalid",
            "_",
            "file",
        ];
        for claude in matchers {
            let gemini = claude_matcher_to_gemini(claude);
            let compiled = Matcher::compile(Some(&gemini), MatcherKind::ToolName);
            assert!(
                !compiled.is_exact_fallback(),
                "{claude:?} → {gemini:?} does not compile"
            );
            for name in gemini_names {
                let claude_name = gemini_tool_to_claude(name);
                // `replace` stands for both Edit and MultiEdit.
                let expected = if name == "replace" {
                    claude_matcher_matches(claude, "Edit")
                        || claude_matcher_matches(claude, "MultiEdit")
                } else {
                    claude_matcher_matches(claude, &claude_name)
                };
                assert_eq!(
                    compiled.matches(&MatchContext::tool(name)),
                    expected,
                    "{claude:?} → {gemini:?} on {name} (Claude: {claude_name})"
                );
            }
        }
    }
}
