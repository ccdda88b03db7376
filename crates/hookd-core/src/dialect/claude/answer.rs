//! The daemon's aggregate as the answer of one hook to its host: what `hookctl relay` prints
//! and exits with so that Claude Code or Gemini CLI decides what hookd's hooks decided.
//!
//! **Claude Code** ([`answer_for_claude_input`]) reads JSON on stdout only after exit 0, so
//! every answer is exit 0 with JSON, except a blocked `PreCompact`, which only exit 2 can
//! express. The merged Gemini output (spec §5) maps back:
//!
//! | Gemini aggregate | Claude Code answer |
//! |---|---|
//! | `continue: false`, `stopReason` | `continue: false`, `stopReason` (the stop reason, else the reason) |
//! | `suppressOutput: true` | `suppressOutput: true` |
//! | `systemMessage` (and hook errors) | `systemMessage`, one error per line after it |
//! | `decision` `deny`/`block` | `PreToolUse`: `permissionDecision: "deny"`; `PostToolUse`, `UserPromptSubmit`, `Stop`, `SubagentStop`: `decision: "block"`; reason: Gemini's effective reason (stop reason, else reason, else `No reason provided`); `PreCompact`: exit 2 with the reason on stderr |
//! | `decision: "ask"` | `PreToolUse`: `permissionDecision: "ask"` with the reason (else the system message) |
//! | `hookSpecificOutput.permissionDecision: "allow"` (only a Claude hook's explicit allow) | `PreToolUse`: `permissionDecision: "allow"` |
//! | `hookSpecificOutput.tool_input` | `PreToolUse`: `updatedInput`, with Claude's key names |
//! | `hookSpecificOutput.additionalContext` | `hookSpecificOutput.additionalContext` for `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `SessionStart` |
//!
//! Gemini's aggregate says `decision: "allow"` whenever nothing blocked; that default is
//! never turned into Claude's `allow`, which would skip Claude Code's permission rules.
//!
//! **Gemini CLI** ([`answer_for_gemini`]) aggregates a single hook's output with the same
//! rules the daemon used, and the merged output is a fixed point of them, so the answer is
//! the merged output itself as JSON. When a hook reported an error the exit code is 1 and the
//! errors go to stderr: Gemini CLI then reports the relay as failed, still uses the JSON, and
//! with no JSON shows the errors as a warning (except for BeforeToolSelection, where any
//! output at all would select tools, so stderr stays empty).

use serde_json::{Map, Value};

use super::events::{BlockStyle, claude_block_style, claude_specific_fields};
use super::names::{claude_tool_to_gemini, gemini_tool_input_to_claude};
use crate::dialect::HostAnswer;

/// Claude Code's answer for `claude_event` (see the module documentation).
///
/// Without the tool, `hookSpecificOutput.tool_input` is passed as `updatedInput` with Gemini's
/// key names; for tool events prefer [`answer_for_claude_input`], which renames them.
pub fn answer_for_claude(
    claude_event: &str,
    final_output: Option<&Value>,
    errors: &[String],
) -> HostAnswer {
    claude_answer(claude_event, None, final_output, errors)
}

/// Claude Code's answer to the stdin object `claude_input` it sent (its `hook_event_name`
/// and, for tool events, `tool_name` are read from it); see the module documentation.
pub fn answer_for_claude_input(
    claude_input: &Map<String, Value>,
    final_output: Option<&Value>,
    errors: &[String],
) -> HostAnswer {
    let event = claude_input
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let tool = claude_input.get("tool_name").and_then(Value::as_str);
    claude_answer(event, tool, final_output, errors)
}

fn claude_answer(
    claude_event: &str,
    claude_tool: Option<&str>,
    final_output: Option<&Value>,
    errors: &[String],
) -> HostAnswer {
    let empty = Map::new();
    let merged = final_output.and_then(Value::as_object).unwrap_or(&empty);
    let string = |key: &str| {
        merged
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    };
    let specific = merged.get("hookSpecificOutput").and_then(Value::as_object);
    let specific_field = |key: &str| specific.and_then(|specific| specific.get(key));
    let decision = merged.get("decision").and_then(Value::as_str);
    let blocked = matches!(decision, Some("deny" | "block"));
    // Gemini CLI's effective reason (spec §5.5).
    let effective_reason = string("stopReason")
        .or_else(|| string("reason"))
        .unwrap_or("No reason provided");

    let style = claude_block_style(claude_event);
    if blocked && style == BlockStyle::ExitCode {
        return HostAnswer {
            stdout: String::new(),
            stderr: format!("{effective_reason}\n"),
            exit_code: 2,
        };
    }

    let mut out = Map::new();
    if merged.get("continue") == Some(&Value::Bool(false)) {
        out.insert("continue".to_owned(), Value::Bool(false));
        if let Some(reason) = string("stopReason").or_else(|| string("reason")) {
            out.insert("stopReason".to_owned(), Value::from(reason));
        }
    }
    if merged.get("suppressOutput") == Some(&Value::Bool(true)) {
        out.insert("suppressOutput".to_owned(), Value::Bool(true));
    }
    if let Some(message) = crate::dialect::system_message(string("systemMessage"), errors) {
        out.insert("systemMessage".to_owned(), Value::from(message));
    }

    let mut claude_specific = Map::new();
    match style {
        BlockStyle::PermissionDecision => {
            let permission = if blocked {
                Some(("deny", Some(effective_reason)))
            } else if specific_field("permissionDecision").and_then(Value::as_str) == Some("defer")
                && claude_event == "PreToolUse"
            {
                Some(("defer", string("reason")))
            } else if decision == Some("ask") {
                Some(("ask", string("reason").or_else(|| string("systemMessage"))))
            } else if specific_field("permissionDecision").and_then(Value::as_str) == Some("allow")
            {
                Some(("allow", string("reason")))
            } else {
                None
            };
            if let Some((permission, reason)) = permission {
                claude_specific.insert("permissionDecision".to_owned(), Value::from(permission));
                if let Some(reason) = reason {
                    claude_specific
                        .insert("permissionDecisionReason".to_owned(), Value::from(reason));
                }
            }
            if let Some(Value::Object(tool_input)) = specific_field("tool_input")
                && claude_event != "PreModelSwitch"
            {
                let updated = match claude_tool {
                    Some(tool) if claude_event == "PreToolUse" => {
                        gemini_tool_input_to_claude(&claude_tool_to_gemini(tool), tool_input)
                    }
                    _ => tool_input.clone(),
                };
                claude_specific.insert("updatedInput".to_owned(), Value::Object(updated));
            }
        }
        BlockStyle::PermissionRequest => {
            let given = specific_field("decision").filter(|answer| answer.is_object());
            if blocked {
                let mut deny = Map::new();
                deny.insert("behavior".to_owned(), Value::from("deny"));
                deny.insert("message".to_owned(), Value::from(effective_reason));
                if let Some(Value::Bool(true)) = given.and_then(|answer| answer.get("interrupt")) {
                    deny.insert("interrupt".to_owned(), Value::Bool(true));
                }
                claude_specific.insert("decision".to_owned(), Value::Object(deny));
            } else if let Some(answer) = given {
                claude_specific.insert("decision".to_owned(), answer.clone());
            }
        }
        BlockStyle::Decision if blocked => {
            out.insert("decision".to_owned(), Value::from("block"));
            out.insert("reason".to_owned(), Value::from(effective_reason));
        }
        _ => {}
    }
    // The event's other fields, as the hooks gave them (Claude's names).
    for field in claude_specific_fields(claude_event) {
        if claude_specific.contains_key(*field)
            || matches!(
                *field,
                "permissionDecision" | "permissionDecisionReason" | "updatedInput" | "decision"
            )
        {
            continue;
        }
        match specific_field(field) {
            Some(Value::String(text)) if text.is_empty() => {}
            Some(value @ Value::String(_)) => {
                claude_specific.insert((*field).to_owned(), value.clone());
            }
            Some(_) if *field == "additionalContext" => {}
            Some(value) if !value.is_null() => {
                claude_specific.insert((*field).to_owned(), value.clone());
            }
            _ => {}
        }
    }
    if !claude_specific.is_empty() {
        let mut named = Map::new();
        named.insert("hookEventName".to_owned(), Value::from(claude_event));
        named.extend(claude_specific);
        out.insert("hookSpecificOutput".to_owned(), Value::Object(named));
    }

    HostAnswer::json(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check_claude(
        claude_event: &str,
        tool: Option<&str>,
        final_output: Value,
        errors: &[&str],
        expected_stdout: Option<Value>,
        expected_code: i32,
    ) {
        let mut input = Map::new();
        input.insert("hook_event_name".to_owned(), json!(claude_event));
        if let Some(tool) = tool {
            input.insert("tool_name".to_owned(), json!(tool));
        }
        let errors: Vec<String> = errors.iter().map(|e| (*e).to_owned()).collect();
        let final_output = (!final_output.is_null()).then_some(final_output);
        let answer = answer_for_claude_input(&input, final_output.as_ref(), &errors);
        let description = format!("{claude_event} {final_output:?}");
        assert_eq!(answer.exit_code, expected_code, "{description}");
        match expected_stdout {
            Some(expected) => {
                assert!(answer.stdout.ends_with('\n'), "{description}");
                let printed: Value = serde_json::from_str(&answer.stdout).expect("JSON");
                assert_eq!(printed, expected, "{description}");
            }
            None => assert_eq!(answer.stdout, "", "{description}"),
        }
    }

    /// The defaults every OR-merged aggregate has.
    fn merged(fields: Value) -> Value {
        let mut out = json!({"continue": true, "suppressOutput": false, "decision": "allow"});
        if let (Some(out), Some(fields)) = (out.as_object_mut(), fields.as_object()) {
            out.extend(fields.clone());
        }
        out
    }

    /// (Claude event, tool, aggregate, errors, stdout JSON, exit code)
    type ClaudeCase = (
        &'static str,
        Option<&'static str>,
        Value,
        Vec<&'static str>,
        Option<Value>,
        i32,
    );

    #[test]
    fn claude_answers_for_claude_only_events() {
        // (Claude event, tool, aggregate, errors, stdout JSON, exit code)
        let cases: Vec<ClaudeCase> = vec![
            (
                "PermissionRequest",
                Some("Bash"),
                merged(json!({"decision": "deny", "reason": "not on main"})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                    "decision": {"behavior": "deny", "message": "not on main"}}}),
                ),
                0,
            ),
            (
                "PermissionRequest",
                Some("Bash"),
                merged(json!({"hookSpecificOutput": {"decision": {"behavior": "allow"}}})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                    "decision": {"behavior": "allow"}}}),
                ),
                0,
            ),
            // Only exit 2 blocks these.
            (
                "TaskCompleted",
                None,
                merged(json!({"decision": "block", "reason": "tests fail"})),
                vec![],
                None,
                2,
            ),
            (
                "ConfigChange",
                None,
                merged(json!({"decision": "block", "reason": "locked"})),
                vec![],
                Some(json!({"decision": "block", "reason": "locked"})),
                0,
            ),
            (
                "PostToolUseFailure",
                Some("Bash"),
                merged(
                    json!({"hookSpecificOutput": {"additionalContext": "try again",
                    "tool_input": {"command": "ls"}}}),
                ),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                    "additionalContext": "try again"}}),
                ),
                0,
            ),
            (
                "PreModelSwitch",
                None,
                merged(json!({"decision": "deny", "reason": "budget"})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PreModelSwitch",
                    "permissionDecision": "deny", "permissionDecisionReason": "budget"}}),
                ),
                0,
            ),
            (
                "WorktreeCreate",
                None,
                merged(json!({"hookSpecificOutput": {"worktreePath": "/srv/wt/a"}})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "WorktreeCreate",
                    "worktreePath": "/srv/wt/a"}}),
                ),
                0,
            ),
            (
                "SessionStart",
                None,
                merged(json!({"hookSpecificOutput": {"sessionTitle": "fix CI",
                    "watchPaths": ["/p/.env"], "reloadSkills": true, "additionalContext": "ctx"}})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "SessionStart",
                    "sessionTitle": "fix CI", "watchPaths": ["/p/.env"], "reloadSkills": true,
                    "additionalContext": "ctx"}}),
                ),
                0,
            ),
            (
                "PostToolUse",
                Some("Bash"),
                merged(json!({"hookSpecificOutput": {"updatedToolOutput": "[filtered]"}})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                    "updatedToolOutput": "[filtered]"}}),
                ),
                0,
            ),
            (
                "PreToolUse",
                Some("Bash"),
                merged(json!({"hookSpecificOutput": {"permissionDecision": "defer"}})),
                vec![],
                Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "defer"}})),
                0,
            ),
            // A blocked event that cannot block says nothing of it.
            (
                "StopFailure",
                None,
                merged(json!({"decision": "block", "reason": "x"})),
                vec![],
                None,
                0,
            ),
        ];
        for (event, tool, aggregate, errors, stdout, code) in cases {
            check_claude(event, tool, aggregate, &errors, stdout, code);
        }
    }

    #[test]
    fn claude_answers_for_every_event() {
        let none = Value::Null;
        // (Claude event, tool, aggregate, errors, stdout JSON, exit code)
        let cases: Vec<ClaudeCase> = vec![
            // No hook answered.
            ("PreToolUse", Some("Bash"), none.clone(), vec![], None, 0),
            // Gemini's default allow is not Claude's allow.
            (
                "PreToolUse",
                Some("Bash"),
                merged(json!({})),
                vec![],
                None,
                0,
            ),
            (
                "PreToolUse",
                Some("Bash"),
                merged(json!({"decision": "deny", "reason": "no rm"})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no rm"}}),
                ),
                0,
            ),
            (
                "PreToolUse",
                Some("Bash"),
                merged(json!({"decision": "block"})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "No reason provided"}}),
                ),
                0,
            ),
            (
                "PreToolUse",
                Some("Bash"),
                merged(json!({"decision": "ask", "systemMessage": "Really run it?"})),
                vec![],
                Some(
                    json!({"systemMessage": "Really run it?", "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "Really run it?"}}),
                ),
                0,
            ),
            (
                "PreToolUse",
                Some("Read"),
                merged(
                    json!({"reason": "docs are fine", "hookSpecificOutput": {"hookEventName": "BeforeTool", "permissionDecision": "allow"}}),
                ),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "docs are fine"}}),
                ),
                0,
            ),
            // An explicit allow loses to a deny.
            (
                "PreToolUse",
                Some("Read"),
                merged(
                    json!({"decision": "deny", "reason": "r", "hookSpecificOutput": {"permissionDecision": "allow"}}),
                ),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "r"}}),
                ),
                0,
            ),
            // A rewritten input, in Claude's key names.
            (
                "PreToolUse",
                Some("Grep"),
                merged(
                    json!({"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"pattern": "x", "dir_path": "/src"}, "additionalContext": "ctx"}}),
                ),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"pattern": "x", "path": "/src"}, "additionalContext": "ctx"}}),
                ),
                0,
            ),
            (
                "PreToolUse",
                Some("Bash"),
                json!({"continue": false, "stopReason": "budget spent", "decision": "deny", "reason": "r", "suppressOutput": true}),
                vec![],
                Some(
                    json!({"continue": false, "stopReason": "budget spent", "suppressOutput": true, "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "budget spent"}}),
                ),
                0,
            ),
            (
                "PostToolUse",
                Some("Write"),
                merged(
                    json!({"decision": "block", "reason": "lint failed", "hookSpecificOutput": {"additionalContext": "see log"}}),
                ),
                vec![],
                Some(
                    json!({"decision": "block", "reason": "lint failed", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "see log"}}),
                ),
                0,
            ),
            (
                "PostToolUse",
                Some("Write"),
                merged(json!({"decision": "ask"})),
                vec![],
                None,
                0,
            ),
            (
                "UserPromptSubmit",
                None,
                merged(json!({"decision": "deny", "reason": "secrets"})),
                vec![],
                Some(json!({"decision": "block", "reason": "secrets"})),
                0,
            ),
            (
                "UserPromptSubmit",
                None,
                merged(json!({"hookSpecificOutput": {"additionalContext": "a\nb"}})),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "a\nb"}}),
                ),
                0,
            ),
            (
                "UserPromptSubmit",
                None,
                json!({"continue": false, "reason": "stop now"}),
                vec![],
                Some(json!({"continue": false, "stopReason": "stop now"})),
                0,
            ),
            (
                "Stop",
                None,
                merged(json!({"decision": "block", "reason": "tests fail"})),
                vec![],
                Some(json!({"decision": "block", "reason": "tests fail"})),
                0,
            ),
            (
                "SubagentStop",
                None,
                merged(json!({"decision": "block", "reason": "more"})),
                vec![],
                Some(json!({"decision": "block", "reason": "more"})),
                0,
            ),
            (
                "Stop",
                None,
                merged(json!({"hookSpecificOutput": {"clearContext": true}})),
                vec![],
                None,
                0,
            ),
            (
                "SessionStart",
                None,
                merged(
                    json!({"decision": "deny", "hookSpecificOutput": {"additionalContext": "branch main"}}),
                ),
                vec![],
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "branch main"}}),
                ),
                0,
            ),
            (
                "SessionEnd",
                None,
                json!({"decision": "block", "systemMessage": "bye"}),
                vec![],
                Some(json!({"systemMessage": "bye"})),
                0,
            ),
            (
                "Notification",
                None,
                json!({"systemMessage": "pinged"}),
                vec![],
                Some(json!({"systemMessage": "pinged"})),
                0,
            ),
            (
                "PreCompact",
                None,
                json!({"decision": "block", "reason": "not now"}),
                vec![],
                None,
                2,
            ),
            (
                "PreCompact",
                None,
                json!({"systemMessage": "compacting"}),
                vec![],
                Some(json!({"systemMessage": "compacting"})),
                0,
            ),
            // Errors become lines of the system message; the exit code stays 0.
            (
                "PreToolUse",
                Some("Bash"),
                merged(json!({"systemMessage": "m"})),
                vec!["Hook timed out after 500ms"],
                Some(json!({"systemMessage": "m\nhookd: Hook timed out after 500ms"})),
                0,
            ),
            (
                "Stop",
                None,
                none,
                vec!["boom"],
                Some(json!({"systemMessage": "hookd: boom"})),
                0,
            ),
            // Not a Claude event: only the common fields.
            (
                "BeforeTool",
                None,
                merged(json!({"decision": "deny"})),
                vec![],
                None,
                0,
            ),
        ];
        for (event, tool, final_output, errors, stdout, code) in cases {
            check_claude(event, tool, final_output, &errors, stdout, code);
        }
        let blocked = answer_for_claude(
            "PreCompact",
            Some(&json!({"decision": "deny", "reason": "r"})),
            &[],
        );
        assert_eq!(blocked.stderr, "r\n");
        // Without the tool, the input keys stay as Gemini wrote them.
        let answer = answer_for_claude(
            "PreToolUse",
            Some(&json!({"hookSpecificOutput": {"tool_input": {"dir_path": "/a"}}})),
            &[],
        );
        assert_eq!(
            answer.stdout,
            "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"updatedInput\":{\"dir_path\":\"/a\"}}}\n"
        );
    }
}
