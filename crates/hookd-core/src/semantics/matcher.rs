//! Matchers: which firings of an event a hook definition applies to (spec §2, hookd's JavaScript regexes).
//!
//! A matcher is compiled once when the registry is built and evaluated against a
//! [`MatchContext`] derived from the event's input:
//!
//! 1. No matcher, or the empty string, matches everything. So does a matcher that is empty or
//!    `*` after trimming.
//! 2. With a non-empty tool name in the context, the trimmed matcher is a JavaScript regular
//!    expression with no flags, searched anywhere in the tool name (`read` matches `read_file`
//!    and `spread`), case-sensitively. A pattern JavaScript cannot compile (`[invalid-regex`,
//!    judged by `regress`, an ECMAScript engine) falls back to exact equality with the trimmed
//!    matcher. Slashes are ordinary characters: `/read_file/` only matches a name containing
//!    them.
//! 3. Otherwise, with a non-empty trigger in the context, the trimmed matcher must equal the
//!    trigger exactly: `startup|resume` matches nothing.
//! 4. Otherwise everything matches. Events whose matcher Gemini CLI ignores (BeforeAgent,
//!    AfterAgent, the model events, Notification) get an empty context, so their matchers
//!    never filter.
//!
//! # Bounded in time, whatever the pattern
//!
//! Matching runs on the daemon's threads, so no pattern may take long, however it is written
//! (`(.*){20}!` took hours in a backtracking engine). A tool-name pattern is evaluated by the
//! first of these that applies:
//!
//! 1. plain text: most matchers are plain names, perhaps anchored or listed with `|`
//!    (`run_shell_command`, `^read_file$`, `write_file|replace`), evaluated with string
//!    comparisons;
//! 2. linear: any other pattern made of regular constructs is translated
//!    ([`crate::jsregex`]) to the `regex` crate with JavaScript's meaning and searched in time
//!    linear in the tool name (compiled size at most [`LINEAR_SIZE_LIMIT`]);
//! 3. bounded backtracking: a pattern with look-around or back-references runs with
//!    `regress` when a static bound of its work on a name of at most
//!    [`jsregex::BACKTRACK_MAX_INPUT`] bytes is below [`jsregex::BACKTRACK_BUDGET`] steps
//!    (about 0.3 ms). A longer tool name is treated as matched by such a pattern;
//! 4. refused: anything else (an unboundable pattern, one over [`MAX_PATTERN_BYTES`], a
//!    compiled form over the limit). A refused matcher matches every tool, with a warning
//!    naming the file: a hook whose matcher cannot be evaluated safely still runs, so a gate
//!    stays closed rather than silently switched off. A project gains nothing by it, since it
//!    could write `*`.
//!
//! None of these allocates when it does not match, so an event no matcher matches costs no
//! allocation.

use serde_json::{Map, Value};

use crate::event::{HookEventName, MatcherKind};
use crate::jsregex;

/// What one firing offers to match against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchContext {
    /// The tool's registry name, for BeforeTool and AfterTool.
    pub tool_name: Option<String>,
    /// The trigger string (`source`, `reason` or `trigger`), for SessionStart, SessionEnd and
    /// PreCompress.
    pub trigger: Option<String>,
}

impl MatchContext {
    /// A context with a tool name.
    pub fn tool(tool_name: impl Into<String>) -> MatchContext {
        MatchContext {
            tool_name: Some(tool_name.into()),
            trigger: None,
        }
    }

    /// A context with a trigger.
    pub fn trigger(trigger: impl Into<String>) -> MatchContext {
        MatchContext {
            tool_name: None,
            trigger: Some(trigger.into()),
        }
    }

    /// Derives the context the agent CLI passes for `event` from the event's input fields:
    /// `tool_name` for tool events, the event's trigger field for trigger events, nothing
    /// otherwise. Fields that are missing or not strings are treated as absent.
    pub fn from_input(event: HookEventName, input: &Map<String, Value>) -> MatchContext {
        let string_field =
            |field: &str| input.get(field).and_then(Value::as_str).map(str::to_owned);
        match event.matcher_kind() {
            MatcherKind::ToolName => MatchContext {
                tool_name: string_field(event.matcher_field().unwrap_or("tool_name")),
                trigger: None,
            },
            MatcherKind::Trigger => MatchContext {
                tool_name: None,
                trigger: event.trigger_field().and_then(string_field),
            },
            MatcherKind::Ignored => MatchContext::default(),
        }
    }
}

/// The size limit of a matcher compiled for the `regex` crate: a matcher is a short pattern,
/// and a bigger program means a pattern written to be expensive (`a{1000}{1000}`).
pub const LINEAR_SIZE_LIMIT: usize = 256 * 1024;

/// The longest matcher, in bytes, that is compiled as a regular expression at all.
pub const MAX_PATTERN_BYTES: usize = 4096;

/// A compiled matcher.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// The trimmed matcher, or `None` when it matches everything.
    pattern: Option<String>,
    /// How a tool name is tested.
    engine: Engine,
    /// How the event applies matchers.
    kind: MatcherKind,
}

/// How a tool-name pattern is evaluated.
#[derive(Debug, Clone)]
enum Engine {
    /// Exact equality with the trimmed pattern: triggers, and tool patterns JavaScript cannot
    /// compile.
    Exact,
    /// `|`-separated plain text, by string comparison (no allocation, no regex engine).
    Literal(Vec<Literal>),
    /// The pattern translated to the linear-time `regex` crate with JavaScript's meaning.
    Linear(regex::Regex),
    /// A pattern that needs backtracking, whose work on a tool name of at most
    /// [`jsregex::BACKTRACK_MAX_INPUT`] bytes is bounded below [`jsregex::BACKTRACK_BUDGET`].
    Backtrack(regress::Regex),
    /// A valid pattern that could not be bounded: it matches every tool name, so a gate
    /// behind it still runs (fail closed). The string says why.
    Refused(String),
}

/// One alternative of a pattern made of plain text: its text and its anchors.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Literal {
    text: String,
    /// `^`: the tool name must start with the text.
    start: bool,
    /// `$`: the tool name must end with the text.
    end: bool,
}

impl Literal {
    /// What the regular expression `^?text$?` finds in `name` (no flags).
    fn matches(&self, name: &str) -> bool {
        match (self.start, self.end) {
            (true, true) => name == self.text,
            (true, false) => name.starts_with(&self.text),
            (false, true) => name.ends_with(&self.text),
            (false, false) => name.contains(&self.text),
        }
    }
}

/// Reads a pattern as `|`-separated alternatives of plain text, each optionally anchored by a
/// leading `^` and a trailing `$`; `None` when any other regex syntax appears. Plain text is
/// ASCII letters, digits and `_ - : / @ = , space`, which a JavaScript regex (no flags)
/// matches literally.
fn literal_alternatives(pattern: &str) -> Option<Vec<Literal>> {
    pattern
        .split('|')
        .map(|alternative| {
            let (start, rest) = match alternative.strip_prefix('^') {
                Some(rest) => (true, rest),
                None => (false, alternative),
            };
            let (end, text) = match rest.strip_suffix('$') {
                Some(text) => (true, text),
                None => (false, rest),
            };
            let plain = text.bytes().all(|byte| {
                byte.is_ascii_alphanumeric()
                    || matches!(byte, b'_' | b'-' | b':' | b'/' | b'@' | b'=' | b',' | b' ')
            });
            plain.then(|| Literal {
                text: text.to_owned(),
                start,
                end,
            })
        })
        .collect()
}

impl Matcher {
    /// Compiles a definition's raw `matcher` for an event with the given matcher kind.
    ///
    /// Only tool-name matchers are compiled as regular expressions; for the other kinds the
    /// trimmed string is all that is ever needed.
    pub fn compile(raw: Option<&str>, kind: MatcherKind) -> Matcher {
        let trimmed = raw.map(str::trim).unwrap_or("");
        if trimmed.is_empty() || trimmed == "*" || kind == MatcherKind::Ignored {
            return Matcher {
                pattern: None,
                engine: Engine::Exact,
                kind,
            };
        }
        let engine = match kind {
            MatcherKind::ToolName => tool_engine(trimmed),
            MatcherKind::Trigger | MatcherKind::Ignored => Engine::Exact,
        };
        Matcher {
            pattern: Some(trimmed.to_owned()),
            engine,
            kind,
        }
    }

    /// Whether this matcher accepts every firing.
    pub fn matches_everything(&self) -> bool {
        self.pattern.is_none()
    }

    /// Whether a tool-name pattern failed to compile and falls back to exact equality.
    pub fn is_exact_fallback(&self) -> bool {
        self.kind == MatcherKind::ToolName
            && self.pattern.is_some()
            && matches!(self.engine, Engine::Exact)
    }

    /// Why a valid tool-name pattern was refused (it then matches every tool name);
    /// `None` when it was not.
    pub fn refusal(&self) -> Option<&str> {
        match &self.engine {
            Engine::Refused(reason) => Some(reason),
            _ => None,
        }
    }

    /// Whether a firing with this context is matched.
    pub fn matches(&self, context: &MatchContext) -> bool {
        let Some(pattern) = &self.pattern else {
            return true;
        };
        if let Some(tool_name) = context.tool_name.as_deref().filter(|t| !t.is_empty()) {
            return match &self.engine {
                Engine::Literal(literal) => literal
                    .iter()
                    .any(|alternative| alternative.matches(tool_name)),
                Engine::Linear(regex) => regex.is_match(tool_name),
                // Longer names than the bound was computed for run the hook (fail closed).
                Engine::Backtrack(regex) => {
                    tool_name.len() > jsregex::BACKTRACK_MAX_INPUT
                        || regex.find(tool_name).is_some()
                }
                Engine::Refused(_) => true,
                Engine::Exact => pattern == tool_name,
            };
        }
        if let Some(trigger) = context.trigger.as_deref().filter(|t| !t.is_empty()) {
            return pattern == trigger;
        }
        true
    }
}

/// Chooses how a trimmed, non-empty tool-name pattern is evaluated.
fn tool_engine(pattern: &str) -> Engine {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Engine::Refused(format!("it is longer than {MAX_PATTERN_BYTES} bytes"));
    }
    // `regress` is JavaScript's judge of what compiles; compiling is linear in the pattern.
    let Ok(backtracking) = regress::Regex::new(pattern) else {
        return Engine::Exact;
    };
    if let Some(literal) = literal_alternatives(pattern) {
        return Engine::Literal(literal);
    }
    let node = match jsregex::parse(pattern) {
        Ok(node) => node,
        Err(jsregex::Unsupported(what)) => {
            return Engine::Refused(format!("hookd cannot bound its cost ({what})"));
        }
    };
    if let Some(translated) = node.to_rust() {
        return match regex::RegexBuilder::new(&translated)
            .size_limit(LINEAR_SIZE_LIMIT)
            .dfa_size_limit(LINEAR_SIZE_LIMIT)
            .build()
        {
            Ok(regex) => Engine::Linear(regex),
            Err(_) => Engine::Refused(format!(
                "its compiled form exceeds {} KiB",
                LINEAR_SIZE_LIMIT / 1024
            )),
        };
    }
    let cost = jsregex::backtrack_cost(&node, jsregex::BACKTRACK_MAX_INPUT);
    if cost <= jsregex::BACKTRACK_BUDGET {
        Engine::Backtrack(backtracking)
    } else {
        Engine::Refused(
            "it needs backtracking (look-around or a back-reference) and its worst case is too \
             slow"
                .to_owned(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(event: HookEventName, matcher: Option<&str>, context: MatchContext, expected: bool) {
        let compiled = Matcher::compile(matcher, event.matcher_kind());
        assert_eq!(
            compiled.matches(&context),
            expected,
            "{event} matcher {matcher:?} context {context:?}"
        );
    }

    #[test]
    fn tool_matchers_are_unanchored_case_sensitive_js_regexes() {
        use HookEventName::{AfterTool, BeforeTool};
        let cases: &[(HookEventName, Option<&str>, &str, bool)] = &[
            (BeforeTool, None, "read_file", true),
            (BeforeTool, Some(""), "read_file", true),
            (BeforeTool, Some("*"), "read_file", true),
            (BeforeTool, Some("  *  "), "read_file", true),
            (BeforeTool, Some("   "), "read_file", true),
            // Unanchored search.
            (BeforeTool, Some("read"), "read_file", true),
            (BeforeTool, Some("read"), "spread", true),
            (BeforeTool, Some("^read$"), "read_file", false),
            // Case-sensitive.
            (BeforeTool, Some("READ"), "read_file", false),
            (BeforeTool, Some("Read_File"), "read_file", false),
            // Alternation.
            (BeforeTool, Some("write_file|replace"), "replace", true),
            (BeforeTool, Some("write_file|replace"), "write_file", true),
            (BeforeTool, Some("write_file|replace"), "read_file", false),
            // Trimmed before compiling.
            (AfterTool, Some("  replace  "), "replace", true),
            // Look-behind, which the `regex` crate cannot compile.
            (
                BeforeTool,
                Some("(?<=mcp_)github"),
                "mcp_github_create_issue",
                true,
            ),
            (BeforeTool, Some("(?<=mcp_)github"), "github", false),
            // Look-ahead.
            (BeforeTool, Some("^read(?!_many)"), "read_file", true),
            (BeforeTool, Some("^read(?!_many)"), "read_many_files", false),
            // Back-reference.
            (BeforeTool, Some("^(\\w)\\w*_\\1"), "mcp_server_mtool", true),
            (BeforeTool, Some("^(\\w)\\w*_\\1"), "mcp_server_tool", false),
            // An invalid pattern falls back to exact equality of the trimmed matcher.
            (BeforeTool, Some("[invalid-regex"), "[invalid-regex", true),
            (BeforeTool, Some(" [invalid-regex "), "[invalid-regex", true),
            (BeforeTool, Some("[invalid-regex"), "invalid-regex", false),
            // Slashes are literal characters.
            (BeforeTool, Some("/read_file/"), "read_file", false),
            (BeforeTool, Some("/read_file/"), "x/read_file/y", true),
            // MCP names.
            (BeforeTool, Some("mcp_.*"), "mcp_github_list", true),
            (BeforeTool, Some("mcp_.*"), "run_shell_command", false),
        ];
        for &(event, matcher, tool, expected) in cases {
            check(event, matcher, MatchContext::tool(tool), expected);
        }
    }

    #[test]
    fn plain_text_patterns_match_exactly_as_the_regex_engine_does() {
        let patterns = [
            "run_shell_command",
            "^read_file$",
            "^read",
            "file$",
            "read_file|write_file",
            "^read_file$|^glob$",
            "mcp__server__tool",
            "a|",
            "|",
            "^$",
            "^",
            "$",
            "web-fetch:v2",
            "a b",
        ];
        let names = [
            "run_shell_command",
            "read_file",
            "write_file",
            "spread_file",
            "glob",
            "read_file_x",
            "mcp__server__tool_extra",
            "web-fetch:v2",
            "a b c",
            "x",
        ];
        for pattern in patterns {
            let compiled = Matcher::compile(Some(pattern), MatcherKind::ToolName);
            assert!(
                matches!(compiled.engine, Engine::Literal(_)),
                "{pattern} is plain text"
            );
            let regex = regress::Regex::new(pattern).unwrap();
            for name in names {
                assert_eq!(
                    compiled.matches(&MatchContext::tool(name)),
                    regex.find(name).is_some(),
                    "{pattern} on {name}"
                );
            }
        }
        // Anything else goes to the regex engine.
        for pattern in [
            "read.file",
            "^(read|write)_file$",
            "a+",
            "[ab]",
            "\\w",
            "a{2}",
            "é",
        ] {
            let compiled = Matcher::compile(Some(pattern), MatcherKind::ToolName);
            assert!(
                !matches!(compiled.engine, Engine::Literal(_)),
                "{pattern} is a regex"
            );
        }
        // A trigger matcher is never a regex.
        assert!(!matches!(
            Matcher::compile(Some("startup"), MatcherKind::Trigger).engine,
            Engine::Literal(_)
        ));
    }

    /// Whether `regress` (JavaScript's semantics) finds `pattern` in `name`.
    fn js_matches(pattern: &str, name: &str) -> bool {
        regress::Regex::new(pattern)
            .map(|regex| regex.find(name).is_some())
            .unwrap_or(pattern == name)
    }

    #[test]
    fn translated_patterns_keep_javascripts_meaning() {
        let patterns = [
            "read.file",
            "^(read|write)_file$",
            "a+",
            "[ab]",
            "[^ab]",
            "\\w+_\\d",
            "^\\w+$",
            "^\\W",
            "\\d",
            "\\D",
            "^\\s",
            "\\S$",
            "^.$",
            "^[^]$",
            "[]",
            "a^",
            "\\bfile",
            "\\Bfile",
            "e\\b",
            "file$",
            "a{2}",
            "a{,2}",
            "x{2,3}y",
            "]",
            "}",
            "{",
            "[\\b]",
            "\\cJ",
            "\\x41",
            "\\u0041",
            "\\x4",
            "\\u12",
            "\\0",
            "[\\w-]",
            "[a\\-z]",
            "[-a]",
            "\\.",
            "\\/",
            "(?:mcp_)?git(hub)?",
            "(?<name>read)_file",
            "mcp_.*_(create|delete)_.+",
            "^(?:a|ab)(?:c|bcd)(?:d*)$",
            "(a*)*b",
            "(|a)+$",
            "é",
            "[à-ÿ]",
            "\\k",
        ];
        let names = [
            "read_file",
            "write_file",
            "Aa",
            "ab",
            "aab",
            "a",
            "x",
            "xxy",
            "xxxy",
            "mcp_github_create_issue",
            "read_file_2",
            "\u{663}",
            "é",
            "café_file",
            "file",
            "afile",
            "a\n",
            "\n",
            "\r",
            "\u{2028}",
            "\u{85}",
            "\u{a0}",
            "\u{feff}x",
            " x",
            "]}{",
            "\u{8}",
            "A",
            "\0",
            "x4",
            "u12",
            "a{,2}",
            "a/b.c",
            "-",
            "\\",
            "abcd",
            "k",
        ];
        for pattern in patterns {
            let compiled = Matcher::compile(Some(pattern), MatcherKind::ToolName);
            assert!(
                matches!(compiled.engine, Engine::Linear(_) | Engine::Literal(_)),
                "{pattern} is translated: {:?}",
                compiled.engine
            );
            for name in names {
                assert_eq!(
                    compiled.matches(&MatchContext::tool(name)),
                    js_matches(pattern, name),
                    "{pattern:?} on {name:?}"
                );
            }
        }
    }

    /// A small pseudo-random generator, so the property test needs no dependency and repeats.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    #[test]
    fn random_patterns_match_as_in_javascript() {
        let atoms = [
            "a", "b", "_", ".", "\\w", "\\W", "\\d", "\\s", "[ab]", "[^a]", "[a-c_]", "^", "$",
            "\\b", "\\B", "(a|b)", "(?:ab|a)", "(?=a)", "(?!b)", "(?<=a)", "(?<!_)", "(a)\\1",
        ];
        let quantifiers = ["", "", "*", "+", "?", "{2}", "{1,2}", "*?"];
        let alphabet = ['a', 'b', '_', '1', ' ', 'é', '\n'];
        let mut random = Lcg(7);
        for _ in 0..3000 {
            let mut pattern = String::new();
            for _ in 0..1 + random.below(4) {
                if random.below(8) == 0 {
                    pattern.push('|');
                }
                pattern.push_str(atoms[random.below(atoms.len())]);
                pattern.push_str(quantifiers[random.below(quantifiers.len())]);
            }
            let compiled = Matcher::compile(Some(&pattern), MatcherKind::ToolName);
            if compiled.refusal().is_some() {
                continue;
            }
            for _ in 0..8 {
                let name: String = (0..1 + random.below(6))
                    .map(|_| alphabet[random.below(alphabet.len())])
                    .collect();
                assert_eq!(
                    compiled.matches(&MatchContext::tool(name.as_str())),
                    js_matches(&pattern, &name),
                    "{pattern:?} on {name:?} ({:?})",
                    compiled.engine
                );
            }
        }
    }

    #[test]
    fn catastrophic_patterns_are_fast_or_refused() {
        // (pattern, the engine that must take it: "linear", "backtrack" or "refused")
        let cases = [
            ("(.*){20}!", "linear"),
            ("(.*){12}!", "linear"),
            ("(a+)+$", "linear"),
            ("(a|a)*$", "linear"),
            ("(a|aa)+$", "linear"),
            ("(\\w+\\s?)*$", "linear"),
            ("^(([a-z])+.)+[A-Z]([a-z])+$", "linear"),
            ("(?=(a+)+$)", "refused"),
            ("(?=(.*){20}!)", "refused"),
            ("(?!(a|a)*$)", "refused"),
            ("(a+)+\\1$", "refused"),
            ("(?=x).*.*.*!", "refused"),
            ("(?<=(a+)+)b", "refused"),
            ("^(?!mcp_).*", "backtrack"),
            ("(?<=mcp_)github", "backtrack"),
            ("^(\\w)\\w*_\\1", "backtrack"),
            ("(?:a{1000}){1000}", "refused"),
        ];
        let inputs = [
            "a".repeat(28) + "!",
            "a".repeat(28),
            "x".repeat(64),
            "x".repeat(63) + "!",
            "a".repeat(5000) + "!",
            "mcp_".repeat(16),
        ];
        for (pattern, expected) in cases {
            let compiled = Matcher::compile(Some(pattern), MatcherKind::ToolName);
            let engine = match compiled.engine {
                Engine::Linear(_) => "linear",
                Engine::Backtrack(_) => "backtrack",
                Engine::Refused(_) => "refused",
                _ => "other",
            };
            assert_eq!(engine, expected, "{pattern}");
            for input in &inputs {
                let start = std::time::Instant::now();
                compiled.matches(&MatchContext::tool(input.as_str()));
                // Generous for an unoptimised build on a busy machine; the catastrophic
                // cases took seconds to hours before.
                assert!(
                    start.elapsed() < std::time::Duration::from_millis(50),
                    "{pattern} on {} bytes took {:?}",
                    input.len(),
                    start.elapsed()
                );
            }
        }
        // A refused pattern matches every tool, so a gate behind it still runs.
        let refused = Matcher::compile(Some("(?=(a+)+$)"), MatcherKind::ToolName);
        assert!(refused.matches(&MatchContext::tool("read_file")));
        assert!(refused.refusal().is_some());
        // A long name is matched by a backtracking pattern without running it.
        let bounded = Matcher::compile(Some("(?<=mcp_)github"), MatcherKind::ToolName);
        assert!(bounded.matches(&MatchContext::tool("x".repeat(65))));
        assert!(!bounded.matches(&MatchContext::tool("x".repeat(64))));
        // An overlong pattern is refused before anything compiles it.
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        assert!(
            Matcher::compile(Some(&long), MatcherKind::ToolName)
                .refusal()
                .is_some()
        );
    }

    #[test]
    fn invalid_pattern_is_reported_as_exact_fallback() {
        let invalid = Matcher::compile(Some("[invalid-regex"), MatcherKind::ToolName);
        assert!(invalid.is_exact_fallback());
        let valid = Matcher::compile(Some("read"), MatcherKind::ToolName);
        assert!(!valid.is_exact_fallback());
        assert!(Matcher::compile(Some(" * "), MatcherKind::ToolName).matches_everything());
        // Trigger matchers are never regular expressions, so they never fall back.
        assert!(!Matcher::compile(Some("[x"), MatcherKind::Trigger).is_exact_fallback());
    }

    #[test]
    fn trigger_matchers_are_exact() {
        use HookEventName::{PreCompress, SessionEnd, SessionStart};
        let cases: &[(HookEventName, Option<&str>, &str, bool)] = &[
            (SessionStart, Some("startup"), "startup", true),
            (SessionStart, Some(" startup "), "startup", true),
            (SessionStart, Some("startup"), "resume", false),
            (SessionStart, Some("startup|resume"), "startup", false),
            (SessionStart, Some("startup|resume"), "resume", false),
            (SessionStart, Some("start"), "startup", false),
            (SessionStart, Some("*"), "clear", true),
            (SessionStart, None, "clear", true),
            (SessionEnd, Some("exit"), "exit", true),
            (SessionEnd, Some("Exit"), "exit", false),
            (PreCompress, Some("manual"), "auto", false),
            (PreCompress, Some("auto"), "auto", true),
        ];
        for &(event, matcher, trigger, expected) in cases {
            check(event, matcher, MatchContext::trigger(trigger), expected);
        }
    }

    #[test]
    fn ignored_kinds_always_match() {
        use HookEventName::{AfterAgent, BeforeModel, BeforeToolSelection, Notification};
        let input = json!({"notification_type": "ToolPermission", "tool_name": "x"});
        let input = input.as_object().cloned().unwrap_or_default();
        for event in [Notification, AfterAgent, BeforeModel, BeforeToolSelection] {
            for matcher in ["NOPE", "ToolPermission", "[invalid"] {
                let context = MatchContext::from_input(event, &input);
                check(event, Some(matcher), context, true);
            }
        }
    }

    #[test]
    fn empty_context_fields_match_everything() {
        let compiled = Matcher::compile(Some("write_file"), MatcherKind::ToolName);
        assert!(compiled.matches(&MatchContext::default()));
        assert!(compiled.matches(&MatchContext::tool("")));
        let compiled = Matcher::compile(Some("startup"), MatcherKind::Trigger);
        assert!(compiled.matches(&MatchContext::trigger("")));
    }

    fn check_context(event: HookEventName, input: Value, expected: MatchContext) {
        let map = input.as_object().cloned().unwrap_or_default();
        assert_eq!(MatchContext::from_input(event, &map), expected, "{event}");
    }

    #[test]
    fn context_is_derived_from_event_input() {
        use HookEventName::*;
        check_context(
            BeforeTool,
            json!({"tool_name": "read_file", "source": "x"}),
            MatchContext::tool("read_file"),
        );
        check_context(AfterTool, json!({"tool_name": 5}), MatchContext::default());
        check_context(
            SessionStart,
            json!({"source": "resume", "tool_name": "t"}),
            MatchContext::trigger("resume"),
        );
        check_context(
            SessionEnd,
            json!({"reason": "exit"}),
            MatchContext::trigger("exit"),
        );
        check_context(
            PreCompress,
            json!({"trigger": "auto"}),
            MatchContext::trigger("auto"),
        );
        check_context(
            Notification,
            json!({"notification_type": "ToolPermission"}),
            MatchContext::default(),
        );
        check_context(BeforeAgent, json!({"prompt": "p"}), MatchContext::default());
    }

    #[test]
    fn compiled_matchers_can_be_shared_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Matcher>();
    }
}
