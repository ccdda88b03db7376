//! Gemini CLI's dialect: hookd's own model, so the relay's translations are identities.
//!
//! Gemini CLI's eleven events are hookd's events, its payload is hookd's payload, and a hook
//! answers in hookd's output fields; Gemini CLI merges several hooks' answers by the same
//! rules as the daemon (`gemini-hooks-semantics.md`). What is particular to it is the
//! relay's answer:
//!
//! **The answer** ([`answer_for_gemini`]) aggregates a single hook's output with the same
//! rules the daemon used, and the merged output is a fixed point of them, so the answer is
//! the merged output itself as JSON. When a hook reported an error the exit code is 1 and the
//! errors go to stderr: Gemini CLI then reports the relay as failed, still uses the JSON, and
//! with no JSON shows the errors as a warning (except for BeforeToolSelection, where any
//! output at all would select tools, so stderr stays empty).
//!
//! Settings: `~/.gemini/settings.json` (or under `GEMINI_CLI_HOME`) and
//! `<project>/.gemini/settings.json`; timeouts in milliseconds (default 60 s); the project
//! root in `GEMINI_PROJECT_DIR`. The relay entry is named `hookd-relay`, which is how Gemini
//! CLI's `/hooks` panel lists it.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{DialectError, HomeEnv, Host, HostAnswer, HostFiles, HostRelay, HostRun, RelayInput};
use crate::command::{CommandVars, expand_command};
use crate::event::{HookEventName, MergeStrategy};
use crate::model::{DEFAULT_TIMEOUT_MS, LayerFile, Source};

/// The name of the relay's entries in Gemini CLI's settings.
pub const RELAY_NAME: &str = "hookd-relay";

/// Gemini CLI.
#[derive(Debug, Clone, Copy)]
pub struct Gemini;

/// One of Gemini CLI's events by its name (not one of Claude Code's own, which hookd also
/// holds).
/// The directory `~` stands for in Gemini CLI's paths (its `.gemini/` directory, extensions,
/// trusted folders): `GEMINI_CLI_HOME` when set and not empty, else the home directory. The
/// one place this rule lives; the loader, the daemon and `hookctl` all ask it.
pub fn gemini_home(env: &HomeEnv<'_>) -> PathBuf {
    (env.var)("GEMINI_CLI_HOME")
        .filter(|home| !home.is_empty())
        .map_or_else(|| env.home.to_owned(), PathBuf::from)
}

fn gemini_event(name: &str) -> Option<HookEventName> {
    name.parse::<HookEventName>()
        .ok()
        .filter(|event| event.host_only().is_none())
}

impl Host for Gemini {
    const NAME: &'static str = "gemini";
    const PRODUCT: &'static str = "Gemini CLI";
}

impl HostRun for Gemini {
    fn default_timeout_ms(&self) -> u64 {
        DEFAULT_TIMEOUT_MS
    }

    fn hook_variables<'a>(&self, vars: &CommandVars<'a>) -> Vec<(&'static str, &'a str)> {
        crate::env::gemini_variables(vars).to_vec()
    }

    fn hook_command<'c>(&self, command: &'c str, vars: &CommandVars<'_>) -> Cow<'c, str> {
        Cow::Owned(expand_command(command, vars))
    }

    fn expands_settings_strings(&self) -> bool {
        true
    }

    fn runs_layer(&self, source: Source, file: LayerFile) -> bool {
        source == Source::Extension || file == LayerFile::Gemini
    }
}

impl HostRelay for Gemini {
    fn events(&self) -> Vec<&'static str> {
        HookEventName::ALL
            .iter()
            .map(|event| event.as_str())
            .collect()
    }

    fn event_to_hookd(&self, host_event: &str) -> Option<HookEventName> {
        gemini_event(host_event)
    }

    fn project_dir_var(&self) -> Option<&'static str> {
        Some("GEMINI_PROJECT_DIR")
    }

    fn relay_input(
        &self,
        host_event: &str,
        host_input: Map<String, Value>,
    ) -> Result<RelayInput, DialectError> {
        let event = gemini_event(host_event).ok_or_else(|| DialectError::UnknownEvent {
            host: <Self as Host>::PRODUCT,
            event: host_event.to_owned(),
        })?;
        Ok(RelayInput {
            host_event: host_event.to_owned(),
            event,
            input: host_input,
            host_input: Map::new(),
        })
    }

    fn relay_answer(
        &self,
        event: &RelayInput,
        final_output: Option<&Value>,
        errors: &[String],
    ) -> HostAnswer {
        answer_for_gemini(event.event, final_output, errors)
    }
}

impl HostFiles for Gemini {
    fn timeout_unit_ms(&self) -> u64 {
        1
    }

    fn relay_matcher(&self, event: HookEventName, matchers: &[Option<String>]) -> Option<String> {
        matches!(event, HookEventName::BeforeTool | HookEventName::AfterTool)
            .then(|| gemini_matcher(matchers))
            .flatten()
    }

    fn relay_handler(&self, _host_event: &str, command: &str, timeout_ms: u64) -> Value {
        json!({
            "type": "command",
            "name": RELAY_NAME,
            "command": command,
            "timeout": timeout_ms,
        })
    }

    fn user_settings_file(&self, env: &HomeEnv<'_>) -> PathBuf {
        gemini_home(env).join(".gemini").join("settings.json")
    }

    fn project_settings_file(&self, project: &Path) -> PathBuf {
        project.join(".gemini").join("settings.json")
    }

    fn pickup_note(&self) -> &'static str {
        "Gemini CLI reads its hooks when a session starts: restart running sessions."
    }
}

/// What one Gemini command hook prints and exits with so that Gemini CLI decides for `event`
/// what the daemon's hooks decided (see the module documentation).
pub fn answer_for_gemini(
    event: HookEventName,
    final_output: Option<&Value>,
    errors: &[String],
) -> HostAnswer {
    let stdout = final_output.map_or_else(String::new, |output| format!("{output}\n"));
    if errors.is_empty() {
        return HostAnswer {
            stdout,
            stderr: String::new(),
            exit_code: 0,
        };
    }
    let quiet = final_output.is_none() && event.merge_strategy() == MergeStrategy::ToolSelection;
    let stderr = if quiet {
        String::new()
    } else {
        errors.iter().map(|error| format!("{error}\n")).collect()
    };
    HostAnswer {
        stdout,
        stderr,
        exit_code: 1,
    }
}

/// One Gemini CLI matcher covering all of `matchers` (`None` in them: a hook that matches
/// every tool): the one matcher, else their alternation. A matcher Gemini CLI would not
/// compile as a regular expression (it then compares it as a plain name) cannot be put in an
/// alternation: the entry matches every tool.
pub fn gemini_matcher(matchers: &[Option<String>]) -> Option<String> {
    let mut patterns = Vec::new();
    for matcher in matchers {
        let pattern = matcher.as_deref()?;
        let compiled =
            crate::matcher::Matcher::compile(Some(pattern), crate::event::MatcherKind::ToolName);
        if compiled.is_exact_fallback() || compiled.matches_everything() {
            return None;
        }
        patterns.push(pattern);
    }
    match patterns.as_slice() {
        [] => None,
        [one] => Some((*one).to_owned()),
        many => Some(
            many.iter()
                .map(|pattern| format!("(?:{pattern})"))
                .collect::<Vec<_>>()
                .join("|"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::aggregate::aggregate;
    use crate::model::Source;
    use crate::output::parse_output;
    use crate::result::{HookOutcome, HookResult};

    /// Gemini CLI, reading the relay's answer as one hook's output, aggregates to the same
    /// final output the daemon sent.
    #[test]
    fn gemini_answers_aggregate_to_the_same_output() {
        let cases: Vec<(HookEventName, Vec<Value>)> = vec![
            (
                HookEventName::BeforeTool,
                vec![
                    json!({"decision": "deny", "reason": "a"}),
                    json!({"decision": "ask", "systemMessage": "s", "hookSpecificOutput": {"tool_input": {"x": 1}}}),
                ],
            ),
            (
                HookEventName::BeforeTool,
                vec![
                    json!({"continue": false, "stopReason": "stop"}),
                    json!({"reason": "r2"}),
                ],
            ),
            (
                HookEventName::AfterTool,
                vec![
                    json!({"hookSpecificOutput": {"additionalContext": "a"}}),
                    json!({"hookSpecificOutput": {"additionalContext": "b"}}),
                ],
            ),
            (
                HookEventName::AfterAgent,
                vec![json!({"decision": "block", "hookSpecificOutput": {"clearContext": true}})],
            ),
            (
                HookEventName::SessionStart,
                vec![
                    json!({"systemMessage": "one"}),
                    json!({"systemMessage": "two"}),
                ],
            ),
            (
                HookEventName::BeforeModel,
                vec![
                    json!({"decision": "block"}),
                    json!({"decision": "allow", "hookSpecificOutput": {"llm_request": {"model": "m"}}}),
                ],
            ),
            (
                HookEventName::BeforeToolSelection,
                vec![
                    json!({"hookSpecificOutput": {"toolConfig": {"mode": "ANY", "allowedFunctionNames": ["b", "a"]}}}),
                    json!({}),
                ],
            ),
            (
                HookEventName::Notification,
                vec![
                    json!({"systemMessage": "x"}),
                    json!({"suppressOutput": true}),
                ],
            ),
            (HookEventName::PreCompress, vec![json!({})]),
        ];
        for (event, outputs) in cases {
            let results: Vec<HookResult> =
                outputs.iter().map(|output| result(event, output)).collect();
            let daemon = aggregate(event, &results, &Map::new());
            let answer = answer_for_gemini(event, daemon.final_output.as_ref(), &[]);
            assert_eq!(answer.exit_code, 0);
            let (output, _) = parse_output(event, &answer.stdout, &answer.stderr, answer.exit_code);
            let output = output.expect("an output");
            let relayed = aggregate(event, &[result(event, &output)], &Map::new());
            assert_eq!(
                relayed.final_output, daemon.final_output,
                "{event}: {outputs:?}"
            );
        }
    }

    fn result(event: HookEventName, output: &Value) -> HookResult {
        HookResult {
            name: "h".to_owned(),
            source: Source::Project,
            event,
            success: true,
            output: Some(output.clone()),
            output_format: None,
            stdout: String::new(),
            stderr: String::new(),
            exit_code: Some(0),
            duration: Duration::ZERO,
            error: None,
            outcome: HookOutcome::Exited { code: 0 },
            failure: None,
            warning: None,
        }
    }

    #[test]
    fn gemini_answers_report_errors() {
        let errors = ["Hook timed out after 500ms".to_owned()];
        let deny = json!({"decision": "deny"});
        let cases = [
            (HookEventName::BeforeTool, None, &[][..], "", "", 0),
            (
                HookEventName::BeforeTool,
                Some(&deny),
                &[][..],
                "{\"decision\":\"deny\"}\n",
                "",
                0,
            ),
            (
                HookEventName::BeforeTool,
                Some(&deny),
                &errors[..],
                "{\"decision\":\"deny\"}\n",
                "Hook timed out after 500ms\n",
                1,
            ),
            (
                HookEventName::AfterAgent,
                None,
                &errors[..],
                "",
                "Hook timed out after 500ms\n",
                1,
            ),
            // Any output would select tools: the error is reported by the exit code only.
            (
                HookEventName::BeforeToolSelection,
                None,
                &errors[..],
                "",
                "",
                1,
            ),
        ];
        for (event, final_output, errors, stdout, stderr, code) in cases {
            let answer = answer_for_gemini(event, final_output, errors);
            assert_eq!(
                answer,
                HostAnswer {
                    stdout: stdout.to_owned(),
                    stderr: stderr.to_owned(),
                    exit_code: code,
                },
                "{event}"
            );
        }
    }

    /// `GEMINI_CLI_HOME` replaces the home directory unless it is empty.
    #[test]
    fn gemini_home_follows_gemini_cli_home() {
        let home = Path::new("/home/u");
        let cases: [(Option<&str>, &str); 3] =
            [(None, "/home/u"), (Some(""), "/home/u"), (Some("/g"), "/g")];
        for (value, expected) in cases {
            let var = |name: &str| {
                value
                    .filter(|_| name == "GEMINI_CLI_HOME")
                    .map(str::to_owned)
            };
            let env = HomeEnv { home, var: &var };
            assert_eq!(gemini_home(&env), PathBuf::from(expected), "{value:?}");
            assert_eq!(
                Gemini.user_settings_file(&env),
                PathBuf::from(expected).join(".gemini/settings.json")
            );
        }
    }
}
