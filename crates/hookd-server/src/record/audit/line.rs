//! One audit line: what an event run did ([`RunRecord`]), formatted as the JSON object the
//! log keeps for it.

use hookd_core::aggregate::Aggregate;
use hookd_core::{HookEventName, HookResult};
use serde_json::{Map, Value};

/// What one event run did, as the audit line records it.
pub(crate) struct RunRecord<'a> {
    /// When the event fired, as the hooks' payload says it (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
    pub(crate) time: &'a str,
    /// The event.
    pub(crate) event: HookEventName,
    /// The agent's session id.
    pub(crate) session_id: &'a str,
    /// The project directory (the request's `cwd`).
    pub(crate) cwd: &'a str,
    /// The event's own input fields, for the tool name.
    pub(crate) input: &'a Map<String, Value>,
    /// The registry generation the run used.
    pub(crate) generation: u64,
    /// Every hook's record, in plan order.
    pub(crate) results: &'a [HookResult],
    /// The merged result.
    pub(crate) aggregate: &'a Aggregate,
    /// The stdin payload the plan's hooks were given (the first hook's, for a sequential
    /// chain), when the log includes it.
    pub(crate) stdin: Option<Map<String, Value>>,
    /// For a run outside the answer (`crate::background`): `async`, `detached`, `dropped`
    /// or `cut_short`.
    pub(crate) background: Option<&'static str>,
}

/// Formats one audit line (without its newline).
///
/// Keys, in order: `time`, `event`, `session_id`, `cwd`, `tool_name` (tool events only),
/// `generation`, `hooks` (each `name`, `source`, `decision`, `exit_code`, `duration_ms`,
/// `outcome`, `failure`, `success`), `decision`, `continue`, `success`, `background` for a
/// run no client waited for (`crate::background`), then `stdin` when included. A hook's `decision` is the string `decision` of its output (after its failure
/// policy), else `null`; the run's `decision` and `continue` are those of the merged output,
/// `null` where it has none.
pub(crate) fn format_line(record: &RunRecord<'_>) -> String {
    let mut line = Map::new();
    line.insert("time".into(), record.time.into());
    line.insert("event".into(), record.event.as_str().into());
    line.insert("session_id".into(), record.session_id.into());
    line.insert("cwd".into(), record.cwd.into());
    if let Some(tool) = record.input.get("tool_name").and_then(Value::as_str) {
        line.insert("tool_name".into(), tool.into());
    }
    line.insert("generation".into(), record.generation.into());
    let hooks = record.results.iter().map(hook_entry).collect();
    line.insert("hooks".into(), Value::Array(hooks));
    let final_output = record.aggregate.final_output.as_ref();
    line.insert("decision".into(), field(final_output, "decision"));
    line.insert("continue".into(), field(final_output, "continue"));
    line.insert("success".into(), record.aggregate.success.into());
    if let Some(background) = record.background {
        line.insert("background".into(), background.into());
    }
    if let Some(stdin) = &record.stdin {
        line.insert("stdin".into(), Value::Object(stdin.clone()));
    }
    Value::Object(line).to_string()
}

/// One hook's part of an audit line.
fn hook_entry(result: &HookResult) -> Value {
    let mut hook = Map::new();
    hook.insert("name".into(), result.name.as_str().into());
    hook.insert("source".into(), result.source.label().into());
    let decision = result
        .output
        .as_ref()
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str);
    hook.insert("decision".into(), decision.into());
    hook.insert("exit_code".into(), result.exit_code.into());
    // Microsecond precision is plenty, and keeps lines short.
    let duration_ms = (result.duration.as_secs_f64() * 1_000_000.0).round() / 1000.0;
    hook.insert("duration_ms".into(), duration_ms.into());
    hook.insert("outcome".into(), result.outcome.kind().into());
    hook.insert(
        "failure".into(),
        result.failure.map(|kind| kind.as_str()).into(),
    );
    hook.insert("success".into(), result.success.into());
    Value::Object(hook)
}

/// A top-level field of the merged output, or `null`.
fn field(output: Option<&Value>, key: &str) -> Value {
    output
        .and_then(|output| output.get(key))
        .cloned()
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hookd_core::policy::FailureKind;
    use hookd_core::{HookOutcome, OutputFormat, Source};
    use serde_json::json;

    use super::*;

    /// A hook record with the fields the audit line reads.
    fn result(
        name: &str,
        output: Option<Value>,
        outcome: HookOutcome,
        failure: Option<FailureKind>,
    ) -> HookResult {
        HookResult {
            name: name.to_owned(),
            source: Source::Project,
            event: HookEventName::BeforeTool,
            success: outcome == HookOutcome::Exited { code: 0 },
            output_format: output.as_ref().map(|_| OutputFormat::Json),
            output,
            stdout: "secret stdout".to_owned(),
            stderr: "secret stderr".to_owned(),
            exit_code: match outcome {
                HookOutcome::Exited { code } => Some(code),
                _ => None,
            },
            duration: Duration::from_micros(12_345),
            error: None,
            outcome,
            failure,
            warning: None,
        }
    }

    /// An aggregate with this merged output.
    fn aggregate(final_output: Option<Value>, success: bool) -> Aggregate {
        Aggregate {
            success,
            final_output,
            all_outputs: Vec::new(),
            errors: Vec::new(),
            total_duration: Duration::ZERO,
        }
    }

    /// Formats a line for `results` and `aggregate` and compares it, parsed, with `expected`.
    fn check_line(
        results: &[HookResult],
        aggregate: &Aggregate,
        stdin: Option<Map<String, Value>>,
        expected: Value,
    ) {
        let input = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
        let record = RunRecord {
            time: "2023-11-14T22:13:20.123Z",
            event: HookEventName::BeforeTool,
            session_id: "s1",
            cwd: "/srv/p",
            input: input.as_object().unwrap(),
            generation: 3,
            results,
            aggregate,
            stdin,
            background: None,
        };
        let line = format_line(&record);
        assert!(!line.contains('\n'), "one line: {line}");
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed, expected);
        // Key order is part of the format: people read these files.
        let keys: Vec<&String> = parsed.as_object().unwrap().keys().collect();
        let expected_keys: Vec<&String> = expected.as_object().unwrap().keys().collect();
        assert_eq!(keys, expected_keys);
    }

    #[test]
    fn lines_record_each_hook_and_the_final_decision_without_stdin() {
        let deny = json!({"decision": "deny", "reason": "no"});
        let results = [
            result(
                "guard",
                Some(deny.clone()),
                HookOutcome::Exited { code: 0 },
                None,
            ),
            result(
                "slow",
                None,
                HookOutcome::TimedOut { timeout_ms: 500 },
                Some(FailureKind::TimedOut),
            ),
        ];
        check_line(
            &results,
            &aggregate(Some(deny), false),
            None,
            json!({
                "time": "2023-11-14T22:13:20.123Z",
                "event": "BeforeTool",
                "session_id": "s1",
                "cwd": "/srv/p",
                "tool_name": "run_shell_command",
                "generation": 3,
                "hooks": [
                    {"name": "guard", "source": "project", "decision": "deny", "exit_code": 0,
                     "duration_ms": 12.345, "outcome": "exited", "failure": null, "success": true},
                    {"name": "slow", "source": "project", "decision": null, "exit_code": null,
                     "duration_ms": 12.345, "outcome": "timed_out", "failure": "timed_out",
                     "success": false},
                ],
                "decision": "deny",
                "continue": null,
                "success": false,
            }),
        );
        // No merged output: decision and continue are null.
        check_line(
            &[result("quiet", None, HookOutcome::Exited { code: 0 }, None)],
            &aggregate(None, true),
            None,
            json!({
                "time": "2023-11-14T22:13:20.123Z", "event": "BeforeTool", "session_id": "s1",
                "cwd": "/srv/p", "tool_name": "run_shell_command", "generation": 3,
                "hooks": [{"name": "quiet", "source": "project", "decision": null, "exit_code": 0,
                           "duration_ms": 12.345, "outcome": "exited", "failure": null,
                           "success": true}],
                "decision": null, "continue": null, "success": true,
            }),
        );
        // A stop: continue false.
        check_line(
            &[],
            &aggregate(Some(json!({"continue": false, "stopReason": "x"})), true),
            None,
            json!({
                "time": "2023-11-14T22:13:20.123Z", "event": "BeforeTool", "session_id": "s1",
                "cwd": "/srv/p", "tool_name": "run_shell_command", "generation": 3,
                "hooks": [], "decision": null, "continue": false, "success": true,
            }),
        );
    }

    #[test]
    fn stdin_is_included_only_when_given() {
        let stdin = json!({"session_id": "s1", "tool_input": {"command": "ls"}});
        check_line(
            &[],
            &aggregate(None, true),
            stdin.as_object().cloned(),
            json!({
                "time": "2023-11-14T22:13:20.123Z", "event": "BeforeTool", "session_id": "s1",
                "cwd": "/srv/p", "tool_name": "run_shell_command", "generation": 3,
                "hooks": [], "decision": null, "continue": null, "success": true,
                "stdin": stdin,
            }),
        );
    }
}
