//! A hook's `if`: a condition on the tool call, in Claude Code's permission-rule syntax,
//! checked by the daemon before anything is spawned.
//!
//! `"if": "Bash(git *)"` runs the hook only for shell commands that start with `git `. A
//! condition is a tool name, optionally followed by a specifier in parentheses:
//!
//! | tool | specifier | holds when |
//! |---|---|---|
//! | any | none | the tool is the one named |
//! | `Bash` | a command pattern: `*` is any text; `prefix:*` is a prefix | the whole command, or any simple command of it (split at `&&`, `\|\|`, `;`, `\|`, new lines), matches |
//! | `Read`, `Edit`, `MultiEdit`, `Write`, `NotebookEdit`, `Glob`, `Grep`, `LS` | a path pattern: `*` and `?` within one path segment, `**` across segments; `//abs/path` is absolute | the tool's path matches; a pattern that is not absolute (`src/**`, `./x`, `/x`, `~/x`) matches at any depth of the path |
//! | `WebFetch` | `domain:example.com` | the URL's host is that domain or one below it |
//! | `WebSearch` | a query pattern | the query matches |
//! | `Agent` (`Task`) | an agent type pattern | the subagent type matches |
//! | `Skill` | a skill name pattern | the skill matches |
//!
//! Tool names are Claude Code's (`Bash`) or Gemini CLI's (`run_shell_command`): both mean the
//! same tool, for hooks of either dialect. An MCP tool is `mcp__server__tool`; `mcp__server`
//! (or `mcp__server__*`) names every tool of that server. The tool name may use `*`.
//!
//! Where hookd cannot decide, the hook runs: an event without a tool call (a condition is
//! about tool calls), a specifier for a tool whose input hookd does not know how to read, and
//! a path pattern relative to a directory hookd is not given (`/x` relative to the settings
//! file, `~/x` relative to the home) which is matched at any depth instead. A guard that runs
//! once too often costs a spawn; one that does not run lets a call through.
//!
//! Matching is linear in the input: patterns become `regex` programs (at most
//! [`MAX_CONDITION_BYTES`] bytes of condition, compiled once when the registry is built).

use serde_json::{Map, Value};

use crate::dialect::{claude_tool_to_gemini, gemini_tool_input_to_claude, gemini_tool_to_claude};

/// The longest condition accepted.
pub const MAX_CONDITION_BYTES: usize = 1024;

/// Why a condition cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConditionError {
    /// Not a string.
    #[error("`if` must be a string such as \"Bash(git *)\"")]
    NotAString,
    /// Empty, unbalanced parentheses, or a bad tool name.
    #[error("`if` {0:?} is not a permission rule such as \"Bash(git *)\"")]
    Syntax(String),
    /// Longer than [`MAX_CONDITION_BYTES`].
    #[error("`if` is longer than {MAX_CONDITION_BYTES} bytes")]
    TooLong,
}

/// A compiled condition.
#[derive(Debug, Clone)]
pub struct Condition {
    text: String,
    tool: regex::Regex,
    spec: Option<Spec>,
}

/// The specifier of a condition, compiled for the kind of input it reads.
#[derive(Debug, Clone)]
struct Spec {
    /// The specifier as written.
    text: String,
    /// The command pattern (any text for `*`), or a prefix match for `prefix:*`.
    command: regex::Regex,
    /// The path pattern (`*` within a segment), anchored only at the end unless absolute.
    path: regex::Regex,
}

impl Condition {
    /// Parses and compiles a hook's `if` value.
    pub fn parse(value: &Value) -> Result<Condition, ConditionError> {
        let Value::String(text) = value else {
            return Err(ConditionError::NotAString);
        };
        if text.len() > MAX_CONDITION_BYTES {
            return Err(ConditionError::TooLong);
        }
        let trimmed = text.trim();
        let syntax = || ConditionError::Syntax(text.clone());
        let (tool, spec) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let inner = trimmed[open + 1..].strip_suffix(')').ok_or_else(syntax)?;
                (&trimmed[..open], Some(inner))
            }
        };
        let tool = tool.trim();
        let tool_ok = !tool.is_empty()
            && tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '.'));
        if !tool_ok {
            return Err(syntax());
        }
        let tool = compile(&tool_pattern(tool)).ok_or_else(syntax)?;
        let spec = match spec.map(str::trim) {
            None | Some("") | Some("*") => None,
            Some(spec) => Some(Spec {
                text: spec.to_owned(),
                command: compile(&command_pattern(spec)).ok_or_else(syntax)?,
                path: compile(&path_pattern(spec)).ok_or_else(syntax)?,
            }),
        };
        Ok(Condition {
            text: text.clone(),
            tool,
            spec,
        })
    }

    /// The condition as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether a firing with this event input (`tool_name`, `tool_input`, in either CLI's
    /// names) lets the hook run; see the module documentation.
    pub fn holds(&self, input: &Map<String, Value>) -> bool {
        let Some(tool) = input.get("tool_name").and_then(Value::as_str) else {
            return true;
        };
        // The tool in Claude Code's words, whichever CLI sent it.
        let claude_tool = input
            .get("claude_tool_name")
            .and_then(Value::as_str)
            .filter(|original| claude_tool_to_gemini(original) == tool)
            .map(str::to_owned)
            .unwrap_or_else(|| gemini_tool_to_claude(tool).into_owned());
        let gemini_tool = claude_tool_to_gemini(&claude_tool).into_owned();
        let named = [tool, claude_tool.as_str(), gemini_tool.as_str()]
            .iter()
            .any(|name| self.tool.is_match(name));
        if !named {
            return false;
        }
        let Some(spec) = &self.spec else {
            return true;
        };
        let empty = Map::new();
        let tool_input = match input.get("claude_tool_input") {
            Some(Value::Object(original)) => original.clone(),
            _ => {
                let given = input
                    .get("tool_input")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                gemini_tool_input_to_claude(&gemini_tool, given)
            }
        };
        let field = |key: &str| tool_input.get(key).and_then(Value::as_str);
        match claude_tool.as_str() {
            "Bash" | "PowerShell" => field("command").is_none_or(|command| {
                spec.command.is_match(command.trim())
                    || simple_commands(command).any(|part| spec.command.is_match(part))
            }),
            "Read" | "Edit" | "MultiEdit" | "Write" | "NotebookEdit" | "Glob" | "Grep" | "LS" => {
                let path = field("file_path")
                    .or_else(|| field("notebook_path"))
                    .or_else(|| field("path"));
                path.is_none_or(|path| spec.path.is_match(path))
            }
            "WebFetch" => match (spec.text.strip_prefix("domain:"), field("url")) {
                (Some(domain), Some(url)) => host_is(url, domain.trim()),
                _ => true,
            },
            "WebSearch" => field("query").is_none_or(|query| spec.command.is_match(query)),
            "Agent" | "Task" => {
                field("subagent_type").is_none_or(|kind| spec.command.is_match(kind))
            }
            "Skill" => field("skill")
                .or_else(|| field("command"))
                .is_none_or(|skill| spec.command.is_match(skill)),
            _ => true,
        }
    }
}

/// The simple commands of a shell command line, split at `&&`, `||`, `;`, `|` and new lines
/// (quotes are not interpreted: a split inside a quoted string only adds candidates).
fn simple_commands(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(['\n', ';', '|', '&'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
}

/// Whether the URL's host is `domain` or below it.
fn host_is(url: &str, domain: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("")
        .rsplit('@')
        .next()
        .unwrap_or("");
    let host = host.split(':').next().unwrap_or("").to_ascii_lowercase();
    let domain = domain.to_ascii_lowercase();
    host == domain || host.ends_with(&format!(".{domain}"))
}

fn compile(pattern: &str) -> Option<regex::Regex> {
    regex::RegexBuilder::new(pattern)
        .size_limit(256 * 1024)
        .build()
        .ok()
}

/// A tool name with `*` as any text; `mcp__server` also names the server's tools.
fn tool_pattern(tool: &str) -> String {
    let body = glob(tool, ".*", ".*");
    if tool.starts_with("mcp__") && !tool[5..].contains("__") {
        format!("^{body}(?:__.*)?$")
    } else {
        format!("^{body}$")
    }
}

/// A command pattern: `*` is any text, `prefix:*` a prefix.
fn command_pattern(spec: &str) -> String {
    match spec.strip_suffix(":*") {
        Some(prefix) => format!("^{}(?:\\s.*)?$", regex::escape(prefix.trim_end())),
        None => format!("^{}$", glob(spec, ".*", ".*")),
    }
}

/// A path pattern: `//x` is absolute; anything else matches at any depth.
fn path_pattern(spec: &str) -> String {
    if let Some(absolute) = spec.strip_prefix("//") {
        return format!("^/{}$", glob(absolute, "[^/]*", ".*"));
    }
    let relative = spec
        .trim_start_matches("~/")
        .trim_start_matches("./")
        .trim_start_matches('/');
    format!("(?:^|/){}$", glob(relative, "[^/]*", ".*"))
}

/// A glob as regular expression text: `**` → `double`, `*` → `single`, `?` → one character
/// (not `/` in paths), everything else literal.
fn glob(pattern: &str, single: &str, double: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                // `**/` also matches no directory at all.
                if chars.peek() == Some(&'/') {
                    chars.next();
                    out.push_str(&format!("(?:{double}/)?"));
                } else {
                    out.push_str(double);
                }
            }
            '*' => out.push_str(single),
            '?' => out.push_str(if single == ".*" { "." } else { "[^/]" }),
            other => out.push_str(&regex::escape(other.encode_utf8(&mut [0; 4]))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn holds(condition: &str, input: Value) -> bool {
        let condition = Condition::parse(&json!(condition)).expect(condition);
        condition.holds(input.as_object().expect("object"))
    }

    #[test]
    fn grammar() {
        // (text, parses)
        let cases = [
            ("Bash", true),
            ("Bash(git *)", true),
            (" Bash ( git * ) ", true),
            ("Bash()", true),
            ("mcp__github", true),
            ("mcp__github__*", true),
            ("Read(//etc/**)", true),
            ("WebFetch(domain:example.com)", true),
            ("", false),
            ("Bash(git *", false),
            ("(git *)", false),
            ("Bash git", false),
            ("Bash(a)b", false),
        ];
        for (text, ok) in cases {
            assert_eq!(Condition::parse(&json!(text)).is_ok(), ok, "{text:?}");
        }
        assert_eq!(
            Condition::parse(&json!(7)).err(),
            Some(ConditionError::NotAString)
        );
        let long = format!("Bash({})", "x".repeat(MAX_CONDITION_BYTES));
        assert_eq!(
            Condition::parse(&json!(long)).err(),
            Some(ConditionError::TooLong)
        );
    }

    #[test]
    fn conditions_on_tool_calls() {
        let bash = |command: &str| json!({"tool_name": "Bash", "tool_input": {"command": command}});
        let gemini_shell = |command: &str| json!({"tool_name": "run_shell_command", "tool_input": {"command": command}});
        let read =
            |path: &str| json!({"tool_name": "read_file", "tool_input": {"file_path": path}});
        let fetch = |url: &str| json!({"tool_name": "WebFetch", "tool_input": {"url": url}});
        // (condition, input, holds)
        let cases: Vec<(&str, Value, bool)> = vec![
            ("Bash", bash("ls"), true),
            ("Bash", read("/a"), false),
            ("Bash(git *)", bash("git status"), true),
            ("Bash(git *)", bash("gitk"), false),
            ("Bash(git *)", bash("cd repo && git push"), true),
            ("Bash(rm *)", bash("echo hi; rm -rf /"), true),
            ("Bash(rm *)", bash("echo rm"), false),
            ("Bash(npm run test:*)", bash("npm run test --watch"), true),
            ("Bash(npm run test:*)", bash("npm run test"), true),
            ("Bash(npm run test:*)", bash("npm run testing"), false),
            // Gemini CLI's names, either way round.
            ("Bash(git *)", gemini_shell("git log"), true),
            ("run_shell_command(git *)", bash("git log"), true),
            ("run_shell_command(git *)", gemini_shell("ls"), false),
            ("Read(//etc/**)", read("/etc/passwd"), true),
            ("Read(//etc/**)", read("/srv/etc/passwd"), false),
            ("Read(src/**/*.rs)", read("/p/src/a/b.rs"), true),
            ("Read(src/**/*.rs)", read("/p/src/b.rs"), true),
            ("Read(src/*.rs)", read("/p/src/a/b.rs"), false),
            ("Read(*.env)", read("/p/.env"), true),
            ("Read(./secrets/*)", read("/p/secrets/k"), true),
            ("Edit(*.md)", read("/p/x.md"), false),
            (
                "Edit(*.md)",
                json!({"tool_name": "replace", "tool_input": {"file_path": "/p/x.md"}}),
                true,
            ),
            (
                "WebFetch(domain:example.com)",
                fetch("https://docs.example.com/x"),
                true,
            ),
            (
                "WebFetch(domain:example.com)",
                fetch("https://example.com.evil.io/"),
                false,
            ),
            (
                "WebFetch(domain:example.com)",
                fetch("https://u@example.com:8443/"),
                true,
            ),
            (
                "mcp__github",
                json!({"tool_name": "mcp__github__create_issue"}),
                true,
            ),
            (
                "mcp__github",
                json!({"tool_name": "mcp_github_create_issue"}),
                true,
            ),
            ("mcp__github", json!({"tool_name": "mcp__gitlab__x"}), false),
            (
                "mcp__github__create_*",
                json!({"tool_name": "mcp__github__create_pr"}),
                true,
            ),
            // What hookd cannot decide runs the hook.
            ("Bash(git *)", json!({"prompt": "no tool call"}), true),
            ("Bash(git *)", json!({"tool_name": "Bash"}), true),
            ("Frobnicate(x)", json!({"tool_name": "Frobnicate"}), true),
            ("WebFetch(example.com)", fetch("https://other.org"), true),
        ];
        for (condition, input, expected) in cases {
            assert_eq!(
                holds(condition, input.clone()),
                expected,
                "{condition} {input}"
            );
        }
    }
}
