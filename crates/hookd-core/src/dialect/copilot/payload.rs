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

/// `(copilot key, claude key)` of the fields that only change their names.
const RENAMED: [(&str, &str); 4] = [
    ("sessionId", "session_id"),
    ("transcriptPath", "transcript_path"),
    ("stopReason", "stop_reason"),
    ("toolResult", "tool_response"),
];

/// The Claude Code stdin object of a Copilot CLI firing of `claude_event` (the Copilot event's
/// Claude counterpart). Copilot's `timestamp` (epoch milliseconds, where Claude Code's
/// objects have none) is left out; fields neither host names differently stay as they are.
pub fn copilot_input_to_claude(
    claude_event: &str,
    input: &Map<String, Value>,
) -> Result<Map<String, Value>, DialectError> {
    let mut out = Map::new();
    out.insert("hook_event_name".to_owned(), Value::from(claude_event));
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
                let name = copilot_tool_to_claude(copilot_tool.unwrap_or_default());
                out.insert("tool_name".to_owned(), Value::from(name.as_ref()));
            }
            "toolArgs" => {
                // Older Copilot CLIs sent the arguments as a JSON string.
                let args = match value {
                    Value::Object(args) => args.clone(),
                    Value::String(text) => match serde_json::from_str(text) {
                        Ok(Value::Object(args)) => args,
                        _ => {
                            return Err(DialectError::InvalidField {
                                field: "toolArgs",
                                expected: "an object",
                            });
                        }
                    },
                    _ => {
                        return Err(DialectError::InvalidField {
                            field: "toolArgs",
                            expected: "an object",
                        });
                    }
                };
                let args = copilot_args_to_claude(copilot_tool.unwrap_or_default(), &args);
                out.insert("tool_input".to_owned(), Value::Object(args));
            }
            other => {
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

/// The Copilot CLI stdin object of a firing whose Claude Code object is `claude`: the inverse
/// of [`copilot_input_to_claude`], for hooks written in Copilot's dialect that hookd runs.
/// `hook_event_name`, which Copilot does not send, is left out.
pub fn claude_input_to_copilot(claude: &Map<String, Value>) -> Map<String, Value> {
    let copilot_tool = claude
        .get("tool_name")
        .and_then(Value::as_str)
        .map(|name| claude_tool_to_copilot(name).into_owned());
    let mut out = Map::new();
    for (key, value) in claude {
        match key.as_str() {
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
                out.insert("toolArgs".to_owned(), args);
            }
            other => {
                let name = RENAMED
                    .iter()
                    .find(|(_, claude)| *claude == other)
                    .map_or(other, |(copilot, _)| copilot);
                out.insert(name.to_owned(), value.clone());
            }
        }
    }
    out
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
    }
}
