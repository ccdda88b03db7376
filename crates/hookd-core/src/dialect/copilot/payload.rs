//! Copilot CLI's stdin objects and Claude Code's, both ways.
//!
//! Copilot CLI 1.0.102 sends camelCase objects (`sessionId`, `toolName`, `toolArgs` as an
//! object, `toolResult`, `transcriptPath`, `stopReason`; `timestamp` in epoch milliseconds)
//! and keeps `stop_hook_active` as it is. The Claude Code object of the same firing has
//! Claude's names (`session_id`, `tool_name` in Claude's spelling, `tool_input`,
//! `tool_response`, `transcript_path`, `stop_reason`), which hookd already reads.

use serde_json::{Map, Value};

use super::names::{
    claude_args_to_copilot, claude_tool_to_copilot, copilot_args_to_claude, copilot_tool_to_claude,
};
use crate::dialect::DialectError;

/// `(copilot key, claude key)` of the fields that only change their names, on every event.
const RENAMED: [(&str, &str); 14] = [
    ("sessionId", "session_id"),
    ("transcriptPath", "transcript_path"),
    ("stopReason", "stop_reason"),
    ("toolResult", "tool_response"),
    ("agentId", "agent_id"),
    ("agentType", "agent_type"),
    ("parentAgentId", "parent_agent_id"),
    ("agentName", "agent_name"),
    ("agentDisplayName", "agent_display_name"),
    ("agentDescription", "agent_description"),
    ("permissionSuggestions", "permission_suggestions"),
    ("errorContext", "error_context"),
    ("transformedPrompt", "transformed_prompt"),
    ("serverName", "server_name"),
];

/// `(claude event, copilot key, claude key)` of the fields renamed on one event only:
/// `permissionRequest` gives the tool's arguments as `toolInput` (not `toolArgs`), and
/// `subagentStop` the sub-agent's last message as `response` (Claude Code's
/// `last_assistant_message`).
const RENAMED_ON: [(&str, &str, &str); 2] = [
    ("PermissionRequest", "toolInput", "tool_input"),
    ("SubagentStop", "response", "last_assistant_message"),
];

/// Whether `event` (a Claude Code event, or one of Copilot's own) names its tools as Copilot's
/// built-in tools: Copilot's own `preMcpToolCall` names an MCP server's tool, which keeps its
/// name.
fn names_builtin_tools(event: &str) -> bool {
    super::names::copilot_own_event(event).is_none()
}

/// The Claude Code stdin object of a Copilot CLI firing of `claude_event` (the Copilot event's
/// Claude counterpart, or the name of one of Copilot's own events, which keeps its fields'
/// meaning under Claude's spelling). Copilot's `timestamp` (epoch milliseconds, where Claude
/// Code's objects have none) is left out; fields neither host names differently stay as
/// they are.
pub fn copilot_input_to_claude(
    claude_event: &str,
    input: &Map<String, Value>,
) -> Result<Map<String, Value>, DialectError> {
    let mut out = Map::new();
    out.insert("hook_event_name".to_owned(), Value::from(claude_event));
    let builtin = names_builtin_tools(claude_event);
    let copilot_tool = match input.get("toolName") {
        None => None,
        Some(Value::String(name)) => Some(name.as_str()),
        Some(_) => {
            return Err(DialectError::InvalidField {
                field: "toolName",
                expected: "a string",
            });
        }
    };
    for (key, value) in input {
        match key.as_str() {
            "timestamp" | "hook_event_name" => {}
            "toolName" => {
                let name = copilot_tool.unwrap_or_default();
                let name = if builtin {
                    copilot_tool_to_claude(name)
                } else {
                    name.into()
                };
                out.insert("tool_name".to_owned(), Value::from(name.as_ref()));
            }
            "toolArgs" => {
                let args = tool_arguments(value, "toolArgs")?;
                let args = copilot_args_to_claude(copilot_tool.unwrap_or_default(), &args);
                out.insert("tool_input".to_owned(), Value::Object(args));
            }
            other => {
                if let Some((_, _, claude)) = RENAMED_ON
                    .iter()
                    .find(|(event, copilot, _)| *event == claude_event && *copilot == other)
                {
                    let value = if *claude == "tool_input" {
                        let args = tool_arguments(value, "toolInput")?;
                        Value::Object(copilot_args_to_claude(
                            copilot_tool.unwrap_or_default(),
                            &args,
                        ))
                    } else {
                        value.clone()
                    };
                    out.insert((*claude).to_owned(), value);
                    continue;
                }
                let name = RENAMED
                    .iter()
                    .find(|(copilot, _)| *copilot == other)
                    .map_or(other, |(_, claude)| claude);
                out.insert(name.to_owned(), value.clone());
            }
        }
    }
    Ok(out)
}

/// A tool's arguments: an object, or (older Copilot CLIs) an object as a JSON string.
fn tool_arguments(value: &Value, field: &'static str) -> Result<Map<String, Value>, DialectError> {
    match value {
        Value::Object(args) => Ok(args.clone()),
        Value::String(text) => match serde_json::from_str(text) {
            Ok(Value::Object(args)) => Ok(args),
            _ => Err(DialectError::InvalidField {
                field,
                expected: "an object",
            }),
        },
        _ => Err(DialectError::InvalidField {
            field,
            expected: "an object",
        }),
    }
}

/// The Copilot CLI stdin object of a firing whose Claude Code object is `claude`: the inverse
/// of [`copilot_input_to_claude`], for hooks written in Copilot's dialect that hookd runs.
/// `hook_event_name`, which Copilot does not send (but on `notification`), is left out.
pub fn claude_input_to_copilot(claude: &Map<String, Value>) -> Map<String, Value> {
    let event = claude
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let builtin = names_builtin_tools(event);
    let copilot_tool = claude.get("tool_name").and_then(Value::as_str).map(|name| {
        if builtin {
            claude_tool_to_copilot(name).into_owned()
        } else {
            name.to_owned()
        }
    });
    let mut out = Map::new();
    for (key, value) in claude {
        match key.as_str() {
            "hook_event_name" if event == "Notification" => {
                // The one Copilot event whose object names itself, Claude Code's way.
                out.insert(key.clone(), value.clone());
            }
            "hook_event_name" => {}
            "tool_name" => {
                out.insert(
                    "toolName".to_owned(),
                    copilot_tool.clone().map_or(value.clone(), Value::from),
                );
            }
            "tool_input" => {
                let args = match (value, copilot_tool.as_deref()) {
                    (Value::Object(input), Some(tool)) => {
                        Value::Object(claude_args_to_copilot(tool, input))
                    }
                    _ => value.clone(),
                };
                let name = if event == "PermissionRequest" {
                    "toolInput"
                } else {
                    "toolArgs"
                };
                out.insert(name.to_owned(), args);
            }
            other => {
                let name = RENAMED_ON
                    .iter()
                    .find(|(on, _, claude)| *on == event && *claude == other)
                    .map(|(_, copilot, _)| *copilot)
                    .or_else(|| {
                        RENAMED
                            .iter()
                            .find(|(_, claude)| *claude == other)
                            .map(|(copilot, _)| *copilot)
                    })
                    .unwrap_or(other);
                out.insert(name.to_owned(), value.clone());
            }
        }
    }
    out
}

/// Copilot's `timestamp` (epoch milliseconds) for hookd's (`2026-11-22T10:20:30.123Z`, UTC);
/// `None` for any other text.
pub fn copilot_timestamp(iso: &str) -> Option<u64> {
    let bytes = iso.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<u64> {
        let digits = iso.get(range)?;
        if digits.bytes().all(|b| b.is_ascii_digit()) && !digits.is_empty() {
            digits.parse().ok()
        } else {
            None
        }
    };
    if bytes.len() < 20 || bytes.get(4) != Some(&b'-') || bytes.get(10) != Some(&b'T') {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let rest = iso.get(19..)?;
    let (millis, zone) = match rest.strip_prefix('.') {
        Some(fraction) => {
            let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
            let padded = format!("{:0<3}", fraction.get(..digits.min(3))?);
            (padded.parse::<u64>().ok()?, fraction.get(digits..)?)
        }
        None => (0, rest),
    };
    if zone != "Z"
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
        || year < 1970
    {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (March-based year).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = (era * 146_097 + day_of_era).checked_sub(719_468)?;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some(seconds * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    /// The stdin objects Copilot CLI 1.0.102 sent (observed), and their Claude Code shapes.
    #[test]
    fn copilot_objects_read_as_claude_objects() {
        let cases = [
            (
                "PreToolUse",
                json!({"sessionId": "s", "timestamp": 1795915663989_u64, "cwd": "/p", "toolName": "bash",
                       "toolArgs": {"command": "ls", "description": "d"}}),
                json!({"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/p", "tool_name": "Bash",
                       "tool_input": {"command": "ls", "description": "d"}}),
            ),
            (
                "PreToolUse",
                json!({"sessionId": "s", "cwd": "/p", "toolName": "view", "toolArgs": "{\"path\": \"/p/a\"}"}),
                json!({"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/p", "tool_name": "Read",
                       "tool_input": {"file_path": "/p/a"}}),
            ),
            (
                "PostToolUse",
                json!({"sessionId": "s", "cwd": "/p", "toolName": "bash", "toolArgs": {"command": "ls"},
                       "toolResult": {"resultType": "success", "textResultForLlm": "ok"}}),
                json!({"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/p", "tool_name": "Bash",
                       "tool_input": {"command": "ls"},
                       "tool_response": {"resultType": "success", "textResultForLlm": "ok"}}),
            ),
            (
                "Stop",
                json!({"sessionId": "s", "cwd": "/p", "transcriptPath": "/t", "stopReason": "end_turn",
                       "stop_hook_active": true}),
                json!({"hook_event_name": "Stop", "session_id": "s", "cwd": "/p", "transcript_path": "/t",
                       "stop_reason": "end_turn", "stop_hook_active": true}),
            ),
            (
                "UserPromptSubmit",
                json!({"sessionId": "s", "cwd": "/p", "prompt": "hi"}),
                json!({"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "/p", "prompt": "hi"}),
            ),
            (
                "PermissionRequest",
                json!({"hookName": "permissionRequest", "sessionId": "s", "timestamp": 1, "cwd": "/p",
                       "toolName": "bash", "toolInput": {"command": "touch m"}, "permissionSuggestions": []}),
                json!({"hook_event_name": "PermissionRequest", "hookName": "permissionRequest", "session_id": "s",
                       "cwd": "/p", "tool_name": "Bash", "tool_input": {"command": "touch m"},
                       "permission_suggestions": []}),
            ),
            (
                "PostToolUseFailure",
                json!({"sessionId": "s", "cwd": "/p", "toolName": "view", "toolArgs": {"path": "missing.txt"},
                       "error": "Path does not exist"}),
                json!({"hook_event_name": "PostToolUseFailure", "session_id": "s", "cwd": "/p",
                       "tool_name": "Read", "tool_input": {"file_path": "missing.txt"},
                       "error": "Path does not exist"}),
            ),
            (
                "SubagentStart",
                json!({"sessionId": "s", "cwd": "/p", "transcriptPath": "/t", "agentName": "task",
                       "agentId": "a", "agentType": "task", "parentAgentId": "s"}),
                json!({"hook_event_name": "SubagentStart", "session_id": "s", "cwd": "/p", "transcript_path": "/t",
                       "agent_name": "task", "agent_id": "a", "agent_type": "task", "parent_agent_id": "s"}),
            ),
            (
                "SubagentStop",
                json!({"sessionId": "s", "cwd": "/p", "agentId": "a", "agentType": "task", "response": "done",
                       "stopReason": "end_turn", "stop_hook_active": false}),
                json!({"hook_event_name": "SubagentStop", "session_id": "s", "cwd": "/p", "agent_id": "a",
                       "agent_type": "task", "last_assistant_message": "done", "stop_reason": "end_turn",
                       "stop_hook_active": false}),
            ),
            (
                "userPromptTransformed",
                json!({"sessionId": "s", "cwd": "/p", "prompt": "hi", "transformedPrompt": "<t/> hi"}),
                json!({"hook_event_name": "userPromptTransformed", "session_id": "s", "cwd": "/p",
                       "prompt": "hi", "transformed_prompt": "<t/> hi"}),
            ),
            (
                "errorOccurred",
                json!({"sessionId": "s", "cwd": "/p", "errorContext": "model_call", "recoverable": true,
                       "error": {"message": "m", "name": "Error"}}),
                json!({"hook_event_name": "errorOccurred", "session_id": "s", "cwd": "/p",
                       "error_context": "model_call", "recoverable": true,
                       "error": {"message": "m", "name": "Error"}}),
            ),
            (
                // An MCP tool keeps its name, even one spelled like a built-in tool.
                "preMcpToolCall",
                json!({"sessionId": "s", "cwd": "/p", "serverName": "gh", "toolName": "view",
                       "toolCallId": "c", "arguments": {"q": 1}}),
                json!({"hook_event_name": "preMcpToolCall", "session_id": "s", "cwd": "/p",
                       "server_name": "gh", "tool_name": "view", "toolCallId": "c", "arguments": {"q": 1}}),
            ),
        ];
        for (event, copilot, claude) in cases {
            let converted = copilot_input_to_claude(event, &object(copilot.clone()));
            assert_eq!(
                converted.map(Value::Object),
                Ok(claude.clone()),
                "{copilot}"
            );
            let mut back = object(copilot);
            back.remove("timestamp");
            if let Some(Value::String(text)) = back.get("toolArgs").cloned() {
                back.insert(
                    "toolArgs".to_owned(),
                    serde_json::from_str(&text).unwrap_or_default(),
                );
            }
            assert_eq!(claude_input_to_copilot(&object(claude)), back, "{event}");
        }
    }

    #[test]
    fn notification_objects_keep_their_own_event_name() {
        let copilot = json!({"sessionId": "s", "cwd": "/p", "message": "m", "title": "t",
                             "hook_event_name": "Notification", "notification_type": "permission_prompt"});
        let claude = copilot_input_to_claude("Notification", &object(copilot.clone()));
        assert_eq!(
            claude.clone().map(Value::Object),
            Ok(
                json!({"hook_event_name": "Notification", "session_id": "s", "cwd": "/p", "message": "m",
                      "title": "t", "notification_type": "permission_prompt"})
            )
        );
        let back = claude_input_to_copilot(&claude.unwrap_or_default());
        assert_eq!(Value::Object(back), copilot);
    }

    #[test]
    fn timestamps_become_epoch_milliseconds() {
        let cases = [
            ("1970-01-01T00:00:00.000Z", Some(0)),
            ("2026-11-29T03:10:02.429Z", Some(1_795_921_802_429)),
            ("2000-02-29T12:00:00Z", Some(951_825_600_000)),
            ("2026-11-29T03:10:02.4Z", Some(1_795_921_802_400)),
            ("2026-11-29T03:10:02.429+01:00", None),
            ("2026-13-01T00:00:00.000Z", None),
            ("yesterday", None),
            ("", None),
        ];
        for (iso, expected) in cases {
            assert_eq!(copilot_timestamp(iso), expected, "{iso}");
        }
    }

    #[test]
    fn malformed_tool_fields_are_refused() {
        for input in [
            json!({"toolName": 3, "toolArgs": {}}),
            json!({"toolName": "bash", "toolArgs": "not json"}),
            json!({"toolName": "bash", "toolArgs": [1]}),
        ] {
            assert!(
                copilot_input_to_claude("PreToolUse", &object(input.clone())).is_err(),
                "{input}"
            );
        }
        for input in [
            json!({"toolName": "bash", "toolInput": "not json"}),
            json!({"toolName": "bash", "toolInput": 7}),
        ] {
            assert!(
                copilot_input_to_claude("PermissionRequest", &object(input.clone())).is_err(),
                "{input}"
            );
        }
    }
}
