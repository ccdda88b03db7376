//! Copilot CLI's answers: hookd's answer in Copilot's shape (the relay), and what a hook
//! written in Copilot's dialect said, in Claude Code's shape, which hookd already reads.
//!
//! What Copilot CLI 1.0.102 reads of a command hook's stdout (observed, exit 0): `preToolUse`
//! `permissionDecision` (`allow`, `deny`, `ask`; a headless `ask` is a deny),
//! `permissionDecisionReason` and `modifiedArgs` (the tool's new arguments, also without a
//! decision); `postToolUse` `additionalContext` and `decision: "block"` with `reason` (the
//! result is withheld from the model); `userPromptSubmitted` `decision: "block"` (the prompt is
//! refused); `agentStop` `decision: "block"` with `reason` (the turn goes on, at most 8 times
//! in a row). Claude Code's `hookSpecificOutput` and `continue` are ignored there, so the relay
//! never relies on them: a stop asked of a tool event becomes a deny.
//!
//! Exit codes of a `preToolUse` command hook: 2 and every other non-zero exit (a crash) deny;
//! a timeout lets the call through; stdout that is not JSON is no opinion. On
//! `userPromptSubmitted` exit 2 only shows stderr.

use serde_json::{Map, Value};

use super::names::{claude_args_to_copilot, copilot_args_to_claude};
use crate::dialect::HostAnswer;
use crate::result::{HookOutcome, HookRun};

/// The reason Copilot's deny shows when hookd gave none.
const NO_REASON: &str = "No reason provided";

/// The relay's answer to Copilot CLI for `copilot_event` (of the tool Copilot calls
/// `copilot_tool`), from Claude Code's answer to the same firing: Copilot's own fields, exit 0.
pub fn copilot_answer_from_claude(
    copilot_event: &str,
    copilot_tool: Option<&str>,
    claude: &HostAnswer,
) -> HostAnswer {
    let parsed: Option<Map<String, Value>> = serde_json::from_str(claude.stdout.trim()).ok();
    let mut merged = parsed.unwrap_or_default();
    if claude.exit_code == 2 {
        // Claude Code's exit-code block (its only way on some events): a decision here.
        merged.insert("decision".to_owned(), Value::from("block"));
        merged.insert("reason".to_owned(), Value::from(claude.stderr.trim()));
    }
    let specific = merged
        .get("hookSpecificOutput")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let text = |map: &Map<String, Value>, key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    let stopped = merged.get("continue") == Some(&Value::Bool(false));
    let stop_reason = text(&merged, "stopReason").or_else(|| text(&merged, "reason"));
    let blocked = merged.get("decision").and_then(Value::as_str) == Some("block");

    let mut out = Map::new();
    match copilot_event {
        "preToolUse" => {
            let decision = text(&specific, "permissionDecision");
            let reason = text(&specific, "permissionDecisionReason");
            let (decision, reason) = if stopped {
                // Copilot ignores `continue` here: not running the call is what is left of a stop.
                (Some("deny".to_owned()), stop_reason.clone())
            } else {
                (
                    decision.filter(|d| matches!(d.as_str(), "allow" | "deny" | "ask")),
                    reason,
                )
            };
            if let Some(decision) = decision {
                let denied = decision == "deny";
                out.insert("permissionDecision".to_owned(), Value::from(decision));
                match reason {
                    Some(reason) => {
                        out.insert("permissionDecisionReason".to_owned(), Value::from(reason));
                    }
                    None if denied => {
                        out.insert(
                            "permissionDecisionReason".to_owned(),
                            Value::from(NO_REASON),
                        );
                    }
                    None => {}
                }
            }
            if let (Some(Value::Object(input)), Some(tool)) =
                (specific.get("updatedInput"), copilot_tool)
                && out.get("permissionDecision").and_then(Value::as_str) != Some("deny")
            {
                out.insert(
                    "modifiedArgs".to_owned(),
                    Value::Object(claude_args_to_copilot(tool, input)),
                );
            }
        }
        "permissionRequest" => {
            // Claude's `decision: {"behavior", "message"}` is Copilot's answer itself.
            let given = specific.get("decision").and_then(Value::as_object);
            let behavior = given
                .and_then(|decision| text(decision, "behavior"))
                .filter(|behavior| matches!(behavior.as_str(), "allow" | "deny"));
            let (behavior, message) = if stopped {
                (Some("deny".to_owned()), stop_reason.clone())
            } else {
                (
                    behavior,
                    given.and_then(|decision| text(decision, "message")),
                )
            };
            if let Some(behavior) = behavior {
                let denied = behavior == "deny";
                out.insert("behavior".to_owned(), Value::from(behavior));
                if denied || message.is_some() {
                    out.insert(
                        "message".to_owned(),
                        Value::from(message.unwrap_or_else(|| NO_REASON.to_owned())),
                    );
                }
            }
        }
        // A stop ends the turn in Claude Code; on the prompt and the tool result Copilot's
        // nearest is to refuse them. On agentStop and subagentStop the turn ends anyway.
        "postToolUse" | "userPromptSubmitted" | "agentStop" | "subagentStop"
            if blocked || (stopped && !matches!(copilot_event, "agentStop" | "subagentStop")) =>
        {
            out.insert("decision".to_owned(), Value::from("block"));
            let reason = if blocked {
                text(&merged, "reason")
            } else {
                stop_reason.clone()
            };
            out.insert(
                "reason".to_owned(),
                Value::from(reason.unwrap_or_else(|| NO_REASON.to_owned())),
            );
        }
        _ => {}
    }
    if copilot_event == "postToolUse"
        && !out.contains_key("decision")
        && let Some(result) = specific
            .get("updatedToolOutput")
            .or_else(|| specific.get("updatedMCPToolOutput"))
            .and_then(tool_result_for_copilot)
    {
        out.insert("modifiedResult".to_owned(), result);
    }
    if takes_context(copilot_event)
        && let Some(context) = text(&specific, "additionalContext")
    {
        out.insert("additionalContext".to_owned(), Value::from(context));
    }
    if let Some(message) = text(&merged, "systemMessage") {
        out.insert("systemMessage".to_owned(), Value::from(message));
    }
    HostAnswer {
        stdout: if out.is_empty() {
            String::new()
        } else {
            format!("{}\n", Value::Object(out))
        },
        stderr: if claude.exit_code == 2 {
            String::new()
        } else {
            claude.stderr.clone()
        },
        exit_code: 0,
    }
}

/// Whether Copilot CLI reads `additionalContext` from the hooks of `copilot_event`.
fn takes_context(copilot_event: &str) -> bool {
    matches!(
        copilot_event,
        "sessionStart"
            | "userPromptSubmitted"
            | "preToolUse"
            | "postToolUse"
            | "postToolUseFailure"
            | "subagentStart"
            | "notification"
    )
}

/// Copilot's `modifiedResult` (a tool result object) for Claude Code's rewritten tool output:
/// a text becomes a successful result with that text for the model; an object is taken as
/// Copilot's own result object; anything else is no rewrite.
fn tool_result_for_copilot(output: &Value) -> Option<Value> {
    match output {
        Value::String(text) => {
            let mut result = Map::new();
            result.insert("resultType".to_owned(), Value::from("success"));
            result.insert("textResultForLlm".to_owned(), Value::from(text.as_str()));
            Some(Value::Object(result))
        }
        Value::Object(result) if result.get("textResultForLlm").is_some_and(Value::is_string) => {
            Some(output.clone())
        }
        _ => None,
    }
}

/// The relay's answer to Copilot CLI for one of its own events (`userPromptTransformed`,
/// `preMcpToolCall`, `errorOccurred`), from hookd's aggregate: the fields Copilot reads for
/// that event, taken from the top level or `hookSpecificOutput`, and hookd's errors as a
/// `systemMessage`. Always exit 0: none of these events blocks.
pub fn copilot_answer_for_own_event(
    copilot_event: &str,
    final_output: Option<&Value>,
    errors: &[String],
) -> HostAnswer {
    let empty = Map::new();
    let merged = final_output.and_then(Value::as_object).unwrap_or(&empty);
    let specific = merged.get("hookSpecificOutput").and_then(Value::as_object);
    let mut out = Map::new();
    for field in super::names::copilot_own_answer_fields(copilot_event) {
        let value = specific
            .and_then(|specific| specific.get(*field))
            .or_else(|| merged.get(*field));
        let wanted = match (*field, value) {
            (_, None | Some(Value::Null)) => None,
            ("modifiedTransformedPrompt" | "userNotification", Some(Value::String(text))) => {
                Some(Value::from(text.as_str()))
            }
            ("errorHandling", Some(Value::String(how)))
                if matches!(how.as_str(), "retry" | "skip" | "abort") =>
            {
                Some(Value::from(how.as_str()))
            }
            ("retryCount", Some(count @ Value::Number(_))) => Some(count.clone()),
            ("suppressOutput", Some(Value::Bool(true))) => Some(Value::Bool(true)),
            ("metaToUse", Some(meta @ Value::Object(_))) => Some(meta.clone()),
            _ => None,
        };
        if let Some(value) = wanted {
            out.insert((*field).to_owned(), value);
        }
    }
    let given = merged.get("systemMessage").and_then(Value::as_str);
    if let Some(message) = crate::dialect::system_message(given, errors) {
        out.insert("systemMessage".to_owned(), Value::from(message));
    }
    HostAnswer::json(out)
}

/// A run of a hook written in Copilot's dialect as the run of a Claude Code hook that means
/// the same to Copilot CLI (for [`crate::dialect::claude_hook_result`]): its JSON in Claude's
/// fields, and its exit codes by Copilot's rules. On `preToolUse` every non-zero exit, a signal
/// and a failed start deny (exit 2, with Copilot's words); elsewhere exit 2 does not block and
/// counts as any other failure. A timeout stays a timeout: Copilot lets the call through,
/// hookd applies the hook's failure policy, which is never weaker.
pub fn copilot_run_as_claude(
    claude_event: &str,
    copilot_tool: Option<&str>,
    mut run: HookRun,
) -> HookRun {
    let permission = claude_event == "PermissionRequest";
    let guards = claude_event == "PreToolUse" || permission;
    // Copilot's own words for each failure (observed), which its model is shown.
    let (exit_two, errored) = if permission {
        (
            "Permission denied by hook.",
            "Permission request hook failed",
        )
    } else {
        ("hook exited with code 2", "hook errored")
    };
    let unreadable = permission
        && matches!(run.outcome, HookOutcome::Exited { code: 0 })
        && !run.stdout.trim().is_empty()
        && !matches!(
            serde_json::from_str::<Value>(run.stdout.trim()),
            Ok(Value::Object(_))
        );
    let denial = match &run.outcome {
        HookOutcome::Exited { code: 2 } if guards => Some(exit_two.to_owned()),
        HookOutcome::Exited { code } if guards && *code != 0 => Some(errored.to_owned()),
        HookOutcome::Exited { .. } if unreadable => Some(errored.to_owned()),
        HookOutcome::Signalled { .. } if guards => Some(errored.to_owned()),
        HookOutcome::SpawnFailed { .. } if permission => Some(errored.to_owned()),
        HookOutcome::SpawnFailed { message, .. } if guards => {
            Some(format!("hook errored: {message}"))
        }
        _ => None,
    };
    if let Some(reason) = denial {
        run.outcome = HookOutcome::Exited { code: 2 };
        run.stdout = String::new();
        run.stderr = reason;
        return run;
    }
    match run.outcome {
        HookOutcome::Exited { code: 2 } => {
            run.outcome = HookOutcome::Exited { code: 1 };
        }
        HookOutcome::Exited { code: 0 } => {
            run.stdout = match serde_json::from_str::<Value>(run.stdout.trim()) {
                Ok(Value::Object(output)) => {
                    let claude = copilot_output_to_claude(claude_event, copilot_tool, &output);
                    format!("{}\n", Value::Object(claude))
                }
                // Copilot reads nothing but a JSON object.
                _ => String::new(),
            };
        }
        _ => {}
    }
    run
}

/// A Copilot hook's JSON answer in Claude Code's fields, for the Claude event it fired as
/// (`modifiedResult` as `updatedToolOutput`, `permissionRequest`'s `behavior` as Claude's
/// `decision`), or, for Copilot's own events, its fields as they are.
fn copilot_output_to_claude(
    claude_event: &str,
    copilot_tool: Option<&str>,
    output: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = Map::new();
    let mut specific = Map::new();
    match claude_event {
        "PreToolUse" => {
            for key in ["permissionDecision", "permissionDecisionReason"] {
                if let Some(value) = output.get(key) {
                    specific.insert(key.to_owned(), value.clone());
                }
            }
            if let Some(Value::Object(args)) = output.get("modifiedArgs") {
                let tool = copilot_tool.unwrap_or_default();
                let input = copilot_args_to_claude(tool, args);
                specific.insert("updatedInput".to_owned(), Value::Object(input));
                // Copilot applies `modifiedArgs` without a decision; Claude's reading needs one.
                specific
                    .entry("permissionDecision")
                    .or_insert_with(|| Value::from("allow"));
            }
        }
        "PermissionRequest" => {
            if let Some(behavior @ ("allow" | "deny")) =
                output.get("behavior").and_then(Value::as_str)
            {
                let mut decision = Map::new();
                decision.insert("behavior".to_owned(), Value::from(behavior));
                if let Some(message) = output.get("message").filter(|m| m.is_string()) {
                    decision.insert("message".to_owned(), message.clone());
                }
                specific.insert("decision".to_owned(), Value::Object(decision));
            }
        }
        "PostToolUse" | "UserPromptSubmit" | "Stop" | "SubagentStop"
            if output.get("decision").and_then(Value::as_str) == Some("block") =>
        {
            out.insert("decision".to_owned(), Value::from("block"));
            if let Some(reason) = output.get("reason") {
                out.insert("reason".to_owned(), reason.clone());
            }
        }
        _ if super::names::copilot_own_event(claude_event).is_some() => {
            // Copilot's own events: its fields, where hookd's merge keeps them.
            for field in super::names::copilot_own_answer_fields(claude_event) {
                if let Some(value) = output.get(*field) {
                    specific.insert((*field).to_owned(), value.clone());
                }
            }
        }
        _ => {}
    }
    if claude_event == "PostToolUse"
        && let Some(result) = output
            .get("modifiedResult")
            .and_then(tool_result_for_copilot)
    {
        // Claude Code's rewritten tool output; Copilot's result object is kept whole.
        specific.insert("updatedToolOutput".to_owned(), result);
    }
    let copilot_event = super::names::claude_event_to_copilot(claude_event).unwrap_or_default();
    if takes_context(copilot_event)
        && let Some(context) = output.get("additionalContext")
    {
        specific.insert("additionalContext".to_owned(), context.clone());
    }
    if let Some(message) = output.get("systemMessage") {
        out.insert("systemMessage".to_owned(), message.clone());
    }
    if !specific.is_empty() {
        let mut named = Map::new();
        named.insert("hookEventName".to_owned(), Value::from(claude_event));
        named.extend(specific);
        out.insert("hookSpecificOutput".to_owned(), Value::Object(named));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn claude(stdout: Value, exit_code: i32, stderr: &str) -> HostAnswer {
        HostAnswer {
            stdout: if stdout.is_null() {
                String::new()
            } else {
                format!("{stdout}\n")
            },
            stderr: stderr.to_owned(),
            exit_code,
        }
    }

    #[test]
    fn claude_answers_become_copilot_answers() {
        let pre = |specific: Value| json!({"hookSpecificOutput": specific});
        let cases = [
            (
                "permissionRequest",
                pre(json!({"hookEventName": "PermissionRequest",
                           "decision": {"behavior": "deny", "message": "not here"}})),
                0,
                json!({"behavior": "deny", "message": "not here"}),
            ),
            (
                "permissionRequest",
                pre(
                    json!({"hookEventName": "PermissionRequest", "decision": {"behavior": "deny"}}),
                ),
                0,
                json!({"behavior": "deny", "message": "No reason provided"}),
            ),
            (
                "permissionRequest",
                pre(
                    json!({"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}),
                ),
                0,
                json!({"behavior": "allow"}),
            ),
            (
                "permissionRequest",
                pre(
                    json!({"hookEventName": "PermissionRequest", "decision": {"behavior": "later"}}),
                ),
                0,
                Value::Null,
            ),
            (
                "permissionRequest",
                json!({"continue": false, "stopReason": "halt"}),
                0,
                json!({"behavior": "deny", "message": "halt"}),
            ),
            (
                "postToolUse",
                pre(json!({"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]"})),
                0,
                json!({"modifiedResult": {"resultType": "success", "textResultForLlm": "[redacted]"}}),
            ),
            (
                "postToolUse",
                pre(json!({"hookEventName": "PostToolUse", "updatedToolOutput": 7})),
                0,
                Value::Null,
            ),
            (
                // A withheld result is not also rewritten.
                "postToolUse",
                json!({"decision": "block", "reason": "secret",
                       "hookSpecificOutput": {"updatedToolOutput": "x"}}),
                0,
                json!({"decision": "block", "reason": "secret"}),
            ),
            (
                "subagentStop",
                json!({"decision": "block", "reason": "not yet"}),
                0,
                json!({"decision": "block", "reason": "not yet"}),
            ),
            (
                "subagentStop",
                json!({"continue": false, "stopReason": "halt"}),
                0,
                Value::Null,
            ),
            (
                "postToolUseFailure",
                pre(json!({"hookEventName": "PostToolUseFailure", "additionalContext": "retry"})),
                0,
                json!({"additionalContext": "retry"}),
            ),
            (
                "preCompact",
                pre(json!({"hookEventName": "PreCompact", "additionalContext": "x"})),
                0,
                Value::Null,
            ),
            (
                "preToolUse",
                pre(
                    json!({"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}),
                ),
                0,
                json!({"permissionDecision": "deny", "permissionDecisionReason": "no"}),
            ),
            (
                "preToolUse",
                pre(json!({"hookEventName": "PreToolUse", "permissionDecision": "deny"})),
                0,
                json!({"permissionDecision": "deny", "permissionDecisionReason": "No reason provided"}),
            ),
            (
                "preToolUse",
                pre(
                    json!({"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "sure?"}),
                ),
                0,
                json!({"permissionDecision": "ask", "permissionDecisionReason": "sure?"}),
            ),
            (
                "preToolUse",
                pre(json!({"hookEventName": "PreToolUse", "permissionDecision": "defer"})),
                0,
                Value::Null,
            ),
            (
                "preToolUse",
                pre(
                    json!({"hookEventName": "PreToolUse", "permissionDecision": "allow",
                           "updatedInput": {"command": "echo safe"}}),
                ),
                0,
                json!({"permissionDecision": "allow", "modifiedArgs": {"command": "echo safe"}}),
            ),
            (
                "preToolUse",
                json!({"continue": false, "stopReason": "halt"}),
                0,
                json!({"permissionDecision": "deny", "permissionDecisionReason": "halt"}),
            ),
            (
                "preToolUse",
                json!({"systemMessage": "hookd: daemon unreachable"}),
                0,
                json!({"systemMessage": "hookd: daemon unreachable"}),
            ),
            (
                "postToolUse",
                json!({"decision": "block", "reason": "secret", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "ctx"}}),
                0,
                json!({"decision": "block", "reason": "secret", "additionalContext": "ctx"}),
            ),
            (
                "userPromptSubmitted",
                json!({"continue": false, "stopReason": "quiet"}),
                0,
                json!({"decision": "block", "reason": "quiet"}),
            ),
            (
                "agentStop",
                json!({"decision": "block", "reason": "keep going"}),
                0,
                json!({"decision": "block", "reason": "keep going"}),
            ),
            ("agentStop", json!({"continue": false}), 0, Value::Null),
            (
                "sessionStart",
                json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "hello"}}),
                0,
                json!({"additionalContext": "hello"}),
            ),
            ("sessionEnd", Value::Null, 0, Value::Null),
        ];
        for (event, given, code, expected) in cases {
            let answer =
                copilot_answer_from_claude(event, Some("bash"), &claude(given.clone(), code, ""));
            assert_eq!(answer.exit_code, 0, "{event} {given}");
            let printed: Value = if answer.stdout.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&answer.stdout).unwrap_or_default()
            };
            assert_eq!(printed, expected, "{event} {given}");
        }
    }

    #[test]
    fn rewritten_arguments_get_copilot_keys() {
        let given = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "allow", "updatedInput": {"file_path": "/p/b", "content": "x"}}});
        let answer =
            copilot_answer_from_claude("preToolUse", Some("create"), &claude(given, 0, ""));
        let printed: Value = serde_json::from_str(&answer.stdout).unwrap_or_default();
        assert_eq!(
            printed["modifiedArgs"],
            json!({"path": "/p/b", "file_text": "x"})
        );
    }

    #[test]
    fn an_exit_code_block_becomes_a_decision() {
        let answer =
            copilot_answer_from_claude("agentStop", None, &claude(Value::Null, 2, "again\n"));
        assert_eq!(answer.exit_code, 0);
        assert_eq!(answer.stderr, "");
        let printed: Value = serde_json::from_str(&answer.stdout).unwrap_or_default();
        assert_eq!(printed, json!({"decision": "block", "reason": "again"}));
    }

    fn run(outcome: HookOutcome, stdout: &str) -> HookRun {
        HookRun {
            outcome,
            stdout: stdout.to_owned(),
            stderr: "boom".to_owned(),
            duration: Duration::from_millis(1),
        }
    }

    /// Copilot's exit-code rules (observed with 1.0.102), as a Claude run.
    #[test]
    fn copilot_runs_read_as_claude_runs() {
        let exited = |code| HookOutcome::Exited { code };
        let cases = [
            ("PreToolUse", exited(1), "", exited(2), "", "hook errored"),
            (
                "PreToolUse",
                exited(2),
                "",
                exited(2),
                "",
                "hook exited with code 2",
            ),
            (
                "PreToolUse",
                HookOutcome::Signalled { signal: 9 },
                "",
                exited(2),
                "",
                "hook errored",
            ),
            (
                "PreToolUse",
                HookOutcome::TimedOut { timeout_ms: 1000 },
                "",
                HookOutcome::TimedOut { timeout_ms: 1000 },
                "",
                "boom",
            ),
            ("PreToolUse", exited(0), "not json", exited(0), "", "boom"),
            (
                "PreToolUse",
                exited(0),
                r#"{"permissionDecision":"deny","permissionDecisionReason":"no"}"#,
                exited(0),
                "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no\"}}\n",
                "boom",
            ),
            (
                "PreToolUse",
                exited(0),
                r#"{"modifiedArgs":{"path":"/a"}}"#,
                exited(0),
                "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"updatedInput\":{\"file_path\":\"/a\"},\"permissionDecision\":\"allow\"}}\n",
                "boom",
            ),
            ("UserPromptSubmit", exited(2), "", exited(1), "", "boom"),
            (
                "Stop",
                exited(0),
                r#"{"decision":"block","reason":"more"}"#,
                exited(0),
                "{\"decision\":\"block\",\"reason\":\"more\"}\n",
                "boom",
            ),
        ];
        for (event, outcome, stdout, want_outcome, want_stdout, want_stderr) in cases {
            let tool = if event == "PreToolUse" && stdout.contains("path") {
                "view"
            } else {
                "bash"
            };
            let converted = copilot_run_as_claude(event, Some(tool), run(outcome.clone(), stdout));
            assert_eq!(
                converted.outcome, want_outcome,
                "{event} {outcome:?} {stdout}"
            );
            assert_eq!(
                converted.stdout, want_stdout,
                "{event} {outcome:?} {stdout}"
            );
            assert_eq!(
                converted.stderr, want_stderr,
                "{event} {outcome:?} {stdout}"
            );
        }
    }
}
