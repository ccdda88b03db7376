//! Event inputs: a Claude Code stdin object as a Gemini event, and a Gemini payload as the
//! object a Claude-dialect hook reads.
//!
//! Claude → Gemini ([`claude_input_to_gemini`]) renames what Gemini CLI spells differently:
//! the event, `tool_name`, the keys of `tool_input`, `notification_type`; it gives
//! `tool_response` Gemini's shape (`{"llmContent", "returnDisplay"}`, the text being the
//! Claude response itself, or its JSON when it is not a string) and, for `Stop` and
//! `SubagentStop`, `prompt_response` from `last_assistant_message`. Every other field is
//! kept as it is (`permission_mode`, `tool_use_id`, `custom_instructions`, `agent_id`, ...).
//! The original spellings are kept in `claude_event` (always) and in `claude_tool_name`,
//! `claude_tool_input`, `claude_tool_response` when the Gemini form does not lead back to
//! them.
//!
//! Gemini → Claude ([`gemini_payload_to_claude`]) undoes that: a `claude_*` original is used
//! when it still translates to what the payload now holds (a sequential hook may have
//! rewritten `tool_input`, a tail call changes `tool_name`), otherwise the Gemini value is
//! translated back. A payload Gemini CLI built itself has no `claude_*` fields and is
//! translated field by field. Gemini's `timestamp`, which Claude Code never sends, is left
//! out (except for the model events, which keep Gemini's payload). Other Gemini-only fields (`mcp_context`,
//! `original_request_name`, `details`, `prompt`, ...) are passed along; Claude hooks ignore
//! what they do not know.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::matchers::claude_matcher_matches;
use super::names::{
    claude_event_to_gemini, claude_notification_type_to_gemini, claude_tool_input_to_gemini,
    claude_tool_to_gemini, gemini_event_to_claude, gemini_notification_type_to_claude,
    gemini_tool_input_to_claude, gemini_tool_to_claude, static_claude_event,
};
use crate::dialect::DialectError;
use crate::event::HookEventName;
use crate::model::HookConfig;

/// The base fields both CLIs send first.
const BASE_FIELDS: [&str; 3] = ["session_id", "transcript_path", "cwd"];

/// The fields of a translated input that only record Claude's original spellings.
const BOOKKEEPING: [&str; 4] = [
    "claude_event",
    "claude_tool_name",
    "claude_tool_input",
    "claude_tool_response",
];

/// Translates Claude Code's stdin object into the Gemini event it stands for and that
/// event's input fields (base fields included), as described in the module documentation.
pub fn claude_input_to_gemini(
    input: &Map<String, Value>,
) -> Result<(HookEventName, Map<String, Value>), DialectError> {
    let claude_event = input
        .get("hook_event_name")
        .and_then(Value::as_str)
        .ok_or(DialectError::MissingEventName)?;
    let event = claude_event_to_gemini(claude_event).ok_or_else(|| DialectError::UnknownEvent {
        host: "Claude Code",
        event: claude_event.to_owned(),
    })?;

    let mut out = Map::new();
    for key in BASE_FIELDS {
        if let Some(value) = input.get(key) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    let mut consumed: Vec<&str> = vec!["hook_event_name"];
    let mut originals: Vec<(&str, Value)> = Vec::new();

    match event {
        HookEventName::BeforeTool | HookEventName::AfterTool => {
            let claude_tool = match input.get("tool_name") {
                Some(Value::String(name)) => name.as_str(),
                _ => {
                    return Err(DialectError::InvalidField {
                        field: "tool_name",
                        expected: "a string",
                    });
                }
            };
            let gemini_tool = claude_tool_to_gemini(claude_tool);
            out.insert("tool_name".to_owned(), Value::from(gemini_tool.as_ref()));
            consumed.push("tool_name");
            if gemini_tool_to_claude(&gemini_tool) != claude_tool {
                originals.push(("claude_tool_name", Value::from(claude_tool)));
            }
            match input.get("tool_input") {
                None => {}
                Some(Value::Object(claude_input)) => {
                    let gemini_input = claude_tool_input_to_gemini(claude_tool, claude_input);
                    if gemini_tool_input_to_claude(&gemini_tool, &gemini_input) != *claude_input {
                        originals.push(("claude_tool_input", Value::Object(claude_input.clone())));
                    }
                    out.insert("tool_input".to_owned(), Value::Object(gemini_input));
                    consumed.push("tool_input");
                }
                Some(_) => {
                    return Err(DialectError::InvalidField {
                        field: "tool_input",
                        expected: "an object",
                    });
                }
            }
            if event == HookEventName::AfterTool {
                if let Some(response) = input.get("tool_response") {
                    out.insert(
                        "tool_response".to_owned(),
                        tool_response_to_gemini(response),
                    );
                    consumed.push("tool_response");
                    originals.push(("claude_tool_response", response.clone()));
                }
            }
        }
        HookEventName::AfterAgent => {
            if let Some(message @ Value::String(_)) = input.get("last_assistant_message") {
                if !input.contains_key("prompt_response") {
                    out.insert("prompt_response".to_owned(), message.clone());
                }
            }
        }
        HookEventName::Notification => {
            if let Some(Value::String(kind)) = input.get("notification_type") {
                out.insert(
                    "notification_type".to_owned(),
                    Value::from(claude_notification_type_to_gemini(kind)),
                );
                consumed.push("notification_type");
            }
        }
        _ => {}
    }

    for (key, value) in input {
        if !consumed.contains(&key.as_str()) && !out.contains_key(key) {
            out.insert(key.clone(), value.clone());
        }
    }
    out.insert("claude_event".to_owned(), Value::from(claude_event));
    for (key, value) in originals {
        out.insert(key.to_owned(), value);
    }
    Ok((event, out))
}

/// Gemini's `tool_response` for a Claude one: the text is the response itself when it is a
/// string, else its JSON.
fn tool_response_to_gemini(response: &Value) -> Value {
    let text = match response {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut gemini = Map::new();
    gemini.insert("llmContent".to_owned(), Value::from(text.clone()));
    gemini.insert("returnDisplay".to_owned(), Value::from(text));
    Value::Object(gemini)
}

/// The Claude event a firing of `event` with this payload is: the payload's `claude_event`
/// when it was translated from Claude Code and still belongs to `event`, else the event's
/// Claude name ([`gemini_event_to_claude`]); `None` for the model events.
pub fn effective_claude_event(
    event: HookEventName,
    payload: &Map<String, Value>,
) -> Option<&'static str> {
    payload
        .get("claude_event")
        .and_then(Value::as_str)
        .filter(|name| claude_event_to_gemini(name) == Some(event))
        .and_then(static_claude_event)
        .or_else(|| gemini_event_to_claude(event))
}

/// The Claude name of the payload's tool: the original when it still translates to the
/// payload's `tool_name`, else the MCP server and tool from `mcp_context`, else the Gemini
/// name translated back.
pub(crate) fn claude_tool_name(payload: &Map<String, Value>) -> Option<String> {
    let gemini_tool = payload.get("tool_name")?.as_str()?;
    if let Some(original) = payload.get("claude_tool_name").and_then(Value::as_str) {
        if claude_tool_to_gemini(original) == gemini_tool {
            return Some(original.to_owned());
        }
    }
    if gemini_tool.starts_with("mcp_") {
        let context = payload.get("mcp_context");
        let field = |key: &str| context.and_then(|c| c.get(key)).and_then(Value::as_str);
        if let (Some(server), Some(tool)) = (field("server_name"), field("tool_name")) {
            return Some(format!("mcp__{server}__{tool}"));
        }
    }
    Some(gemini_tool_to_claude(gemini_tool).into_owned())
}

/// The object a Claude-dialect hook reads on stdin for a firing of `event` with the Gemini
/// `payload`, as described in the module documentation. For the model events, which Claude
/// Code does not have, the payload is returned with only the bookkeeping fields removed.
pub fn gemini_payload_to_claude(
    event: HookEventName,
    payload: &Map<String, Value>,
) -> Map<String, Value> {
    let claude_event = effective_claude_event(event, payload);
    let mut out = Map::new();
    for key in BASE_FIELDS.iter().chain(&["permission_mode"]) {
        if let Some(value) = payload.get(*key) {
            out.insert((*key).to_owned(), value.clone());
        }
    }
    out.insert(
        "hook_event_name".to_owned(),
        Value::from(claude_event.unwrap_or(event.as_str())),
    );
    let mut consumed: Vec<&str> = vec!["hook_event_name"];

    match event {
        HookEventName::BeforeTool | HookEventName::AfterTool => {
            let gemini_tool = payload.get("tool_name").and_then(Value::as_str);
            let claude_tool = claude_tool_name(payload);
            if let Some(name) = &claude_tool {
                out.insert("tool_name".to_owned(), Value::from(name.as_str()));
                consumed.push("tool_name");
            }
            if let Some(Value::Object(gemini_input)) = payload.get("tool_input") {
                let original = match (payload.get("claude_tool_input"), &claude_tool) {
                    (Some(Value::Object(original)), Some(tool))
                        if claude_tool_input_to_gemini(tool, original) == *gemini_input =>
                    {
                        Some(original.clone())
                    }
                    _ => None,
                };
                let claude_input = original.unwrap_or_else(|| {
                    gemini_tool_input_to_claude(gemini_tool.unwrap_or(""), gemini_input)
                });
                out.insert("tool_input".to_owned(), Value::Object(claude_input));
                consumed.push("tool_input");
            }
            if let Some(gemini_response) = payload.get("tool_response") {
                let response = match payload.get("claude_tool_response") {
                    Some(original) if tool_response_to_gemini(original) == *gemini_response => {
                        original.clone()
                    }
                    _ => gemini_response.clone(),
                };
                out.insert("tool_response".to_owned(), response);
                consumed.push("tool_response");
            }
        }
        HookEventName::AfterAgent => {
            let message = payload
                .get("last_assistant_message")
                .or_else(|| payload.get("prompt_response"))
                .filter(|value| value.is_string());
            if let Some(message) = message {
                if payload.get("prompt_response") == Some(message) {
                    consumed.push("prompt_response");
                }
                out.insert("last_assistant_message".to_owned(), message.clone());
                consumed.push("last_assistant_message");
            }
        }
        HookEventName::Notification => {
            if let Some(Value::String(kind)) = payload.get("notification_type") {
                out.insert(
                    "notification_type".to_owned(),
                    Value::from(gemini_notification_type_to_claude(kind)),
                );
                consumed.push("notification_type");
            }
        }
        _ => {}
    }

    for (key, value) in payload {
        let key_str = key.as_str();
        // `timestamp` is Gemini CLI's base field; Claude Code sends none.
        let gemini_only = key_str == "timestamp" && claude_event.is_some();
        if !consumed.contains(&key_str)
            && !BOOKKEEPING.contains(&key_str)
            && !gemini_only
            && !out.contains_key(key_str)
        {
            out.insert(key.clone(), value.clone());
        }
    }
    out
}

/// Whether a hook converted from Claude Code settings takes part in a firing of `event` with
/// this payload.
///
/// Gemini events are coarser than Claude's in two places, and a Claude-dialect hook carries
/// what it was written for: `claude_event` (so a `SubagentStop` hook does not run when the
/// main agent stops, which Gemini CLI fires as the same `AfterAgent`) and, for Notification
/// and SubagentStop hooks, `claude_matcher` (the notification type or agent type it selects,
/// which Gemini CLI cannot filter on). Hooks without these keys, Gemini hooks included,
/// always take part.
pub fn claude_hook_applies(
    config: &HookConfig,
    event: HookEventName,
    payload: &Map<String, Value>,
) -> bool {
    let firing = effective_claude_event(event, payload);
    if let (Some(hook_event), Some(firing)) = (
        config.raw.get("claude_event").and_then(Value::as_str),
        firing,
    ) {
        if hook_event != firing {
            return false;
        }
    }
    let Some(matcher) = config.raw.get("claude_matcher").and_then(Value::as_str) else {
        return true;
    };
    let value: Option<Cow<'_, str>> = match firing {
        Some("Notification") => payload
            .get("notification_type")
            .and_then(Value::as_str)
            .map(|kind| Cow::Borrowed(gemini_notification_type_to_claude(kind))),
        Some("SubagentStop") => payload
            .get("agent_type")
            .and_then(Value::as_str)
            .map(Cow::Borrowed),
        _ => None,
    };
    value.is_none_or(|value| claude_matcher_matches(matcher, &value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HookType;
    use crate::payload::{BaseFields, build_payload};
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    /// What the daemon builds from a translated input: base fields from the input, a
    /// timestamp added.
    fn daemon_payload(event: HookEventName, input: &Map<String, Value>) -> Map<String, Value> {
        let field = |key: &str| {
            input
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let base = BaseFields {
            session_id: field("session_id"),
            transcript_path: field("transcript_path"),
            cwd: field("cwd"),
            timestamp: "2026-01-02T03:04:05.678Z".to_owned(),
        };
        build_payload(event, &base, input)
    }

    const BASE: [(&str, &str); 4] = [
        ("session_id", "abc123"),
        ("transcript_path", "/home/u/.claude/projects/p/t.jsonl"),
        ("cwd", "/srv/proj"),
        ("permission_mode", "default"),
    ];

    fn claude(event: &str, fields: Value) -> Map<String, Value> {
        let mut input = Map::new();
        for (key, value) in BASE {
            input.insert(key.to_owned(), Value::from(value));
        }
        input.insert("hook_event_name".to_owned(), Value::from(event));
        input.extend(object(fields));
        input
    }

    /// Every event: Claude input → Gemini input (checked) → daemon payload → Claude payload,
    /// which equals the original (the daemon's timestamp is not passed on).
    #[test]
    fn every_event_round_trips() {
        // (Claude input fields, Gemini event, expected Gemini input fields besides the base
        // fields and permission_mode)
        let cases: Vec<(Map<String, Value>, HookEventName, Value)> = vec![
            (
                claude(
                    "PreToolUse",
                    json!({"tool_name": "Bash", "tool_input": {"command": "ls", "run_in_background": false}, "tool_use_id": "toolu_1"}),
                ),
                HookEventName::BeforeTool,
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls", "is_background": false}, "tool_use_id": "toolu_1", "claude_event": "PreToolUse"}),
            ),
            (
                claude(
                    "PreToolUse",
                    json!({"tool_name": "MultiEdit", "tool_input": {"file_path": "/a", "edits": [{"old_string": "x", "new_string": "y"}]}}),
                ),
                HookEventName::BeforeTool,
                json!({"tool_name": "replace", "tool_input": {"file_path": "/a", "edits": [{"old_string": "x", "new_string": "y"}]}, "claude_event": "PreToolUse", "claude_tool_name": "MultiEdit"}),
            ),
            (
                claude(
                    "PreToolUse",
                    json!({"tool_name": "Grep", "tool_input": {"pattern": "x", "dir_path": "/b"}}),
                ),
                HookEventName::BeforeTool,
                json!({"tool_name": "grep_search", "tool_input": {"pattern": "x", "dir_path": "/b"}, "claude_event": "PreToolUse", "claude_tool_input": {"pattern": "x", "dir_path": "/b"}}),
            ),
            (
                claude(
                    "PreToolUse",
                    json!({"tool_name": "mcp__my_db__query", "tool_input": {"sql": "select 1"}}),
                ),
                HookEventName::BeforeTool,
                json!({"tool_name": "mcp_my_db_query", "tool_input": {"sql": "select 1"}, "claude_event": "PreToolUse", "claude_tool_name": "mcp__my_db__query"}),
            ),
            (
                claude(
                    "PostToolUse",
                    json!({"tool_name": "Write", "tool_input": {"file_path": "/a", "content": "c"}, "tool_response": {"filePath": "/a", "success": true}, "tool_use_id": "t"}),
                ),
                HookEventName::AfterTool,
                json!({"tool_name": "write_file", "tool_input": {"file_path": "/a", "content": "c"}, "tool_response": {"llmContent": "{\"filePath\":\"/a\",\"success\":true}", "returnDisplay": "{\"filePath\":\"/a\",\"success\":true}"}, "tool_use_id": "t", "claude_event": "PostToolUse", "claude_tool_response": {"filePath": "/a", "success": true}}),
            ),
            (
                claude(
                    "PostToolUse",
                    json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": "a\nb"}),
                ),
                HookEventName::AfterTool,
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}, "tool_response": {"llmContent": "a\nb", "returnDisplay": "a\nb"}, "claude_event": "PostToolUse", "claude_tool_response": "a\nb"}),
            ),
            (
                claude("UserPromptSubmit", json!({"prompt": "Write a function"})),
                HookEventName::BeforeAgent,
                json!({"prompt": "Write a function", "claude_event": "UserPromptSubmit"}),
            ),
            (
                claude("Stop", json!({"stop_hook_active": true})),
                HookEventName::AfterAgent,
                json!({"stop_hook_active": true, "claude_event": "Stop"}),
            ),
            (
                claude(
                    "Stop",
                    json!({"stop_hook_active": false, "last_assistant_message": "Done."}),
                ),
                HookEventName::AfterAgent,
                json!({"prompt_response": "Done.", "stop_hook_active": false, "last_assistant_message": "Done.", "claude_event": "Stop"}),
            ),
            (
                claude(
                    "SubagentStop",
                    json!({"stop_hook_active": false, "agent_id": "a1", "agent_type": "reviewer", "agent_transcript_path": "/t/a1.jsonl"}),
                ),
                HookEventName::AfterAgent,
                json!({"stop_hook_active": false, "agent_id": "a1", "agent_type": "reviewer", "agent_transcript_path": "/t/a1.jsonl", "claude_event": "SubagentStop"}),
            ),
            (
                claude("SessionStart", json!({"source": "compact", "model": "m"})),
                HookEventName::SessionStart,
                json!({"source": "compact", "model": "m", "claude_event": "SessionStart"}),
            ),
            (
                claude("SessionEnd", json!({"reason": "prompt_input_exit"})),
                HookEventName::SessionEnd,
                json!({"reason": "prompt_input_exit", "claude_event": "SessionEnd"}),
            ),
            (
                claude(
                    "PreCompact",
                    json!({"trigger": "manual", "custom_instructions": "keep it short"}),
                ),
                HookEventName::PreCompress,
                json!({"trigger": "manual", "custom_instructions": "keep it short", "claude_event": "PreCompact"}),
            ),
            (
                claude(
                    "Notification",
                    json!({"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"}),
                ),
                HookEventName::Notification,
                json!({"notification_type": "ToolPermission", "message": "Claude needs your permission to use Bash", "claude_event": "Notification"}),
            ),
            (
                claude(
                    "Notification",
                    json!({"message": "waiting", "notification_type": "idle_prompt"}),
                ),
                HookEventName::Notification,
                json!({"notification_type": "idle_prompt", "message": "waiting", "claude_event": "Notification"}),
            ),
        ];
        for (input, event, expected) in cases {
            let (got_event, gemini) = claude_input_to_gemini(&input).expect("translates");
            assert_eq!(got_event, event, "{input:?}");
            let mut expected = object(expected);
            for (key, value) in BASE {
                expected.insert(key.to_owned(), Value::from(value));
            }
            assert_eq!(gemini, expected, "{input:?}");

            let payload = daemon_payload(event, &gemini);
            let back = gemini_payload_to_claude(event, &payload);
            assert_eq!(back, input, "{input:?}");
            // The base fields and the event name come first, in Claude's order.
            let first: Vec<&str> = back.keys().take(5).map(String::as_str).collect();
            assert_eq!(
                first,
                [
                    "session_id",
                    "transcript_path",
                    "cwd",
                    "permission_mode",
                    "hook_event_name"
                ]
            );
        }
    }

    #[test]
    fn untranslatable_inputs_are_errors() {
        let cases = [
            (json!({}), DialectError::MissingEventName),
            (
                json!({"hook_event_name": 3}),
                DialectError::MissingEventName,
            ),
            (
                json!({"hook_event_name": "PermissionAsked"}),
                DialectError::UnknownEvent {
                    host: "Claude Code",
                    event: "PermissionAsked".to_owned(),
                },
            ),
            (
                json!({"hook_event_name": "PreToolUse"}),
                DialectError::InvalidField {
                    field: "tool_name",
                    expected: "a string",
                },
            ),
            (
                json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": "ls"}),
                DialectError::InvalidField {
                    field: "tool_input",
                    expected: "an object",
                },
            ),
        ];
        for (input, error) in cases {
            assert_eq!(
                claude_input_to_gemini(&object(input.clone())),
                Err(error),
                "{input}"
            );
        }
    }

    /// What a Claude-dialect hook reads when Gemini CLI itself fired the event.
    #[test]
    fn gemini_payloads_read_as_claude() {
        let base = json!({"session_id": "s", "transcript_path": "", "cwd": "/srv/p", "hook_event_name": "X", "timestamp": "t"});
        let with = |fields: Value| {
            let mut payload = object(base.clone());
            payload.extend(object(fields));
            payload
        };
        let cases = [
            (
                HookEventName::BeforeTool,
                with(json!({"tool_name": "list_directory", "tool_input": {"dir_path": "/srv/p"}})),
                with(
                    json!({"hook_event_name": "PreToolUse", "tool_name": "LS", "tool_input": {"path": "/srv/p"}}),
                ),
            ),
            (
                HookEventName::BeforeTool,
                with(
                    json!({"tool_name": "mcp_my_db_query", "tool_input": {}, "mcp_context": {"server_name": "my_db", "tool_name": "query"}}),
                ),
                with(
                    json!({"hook_event_name": "PreToolUse", "tool_name": "mcp__my_db__query", "tool_input": {}, "mcp_context": {"server_name": "my_db", "tool_name": "query"}}),
                ),
            ),
            (
                HookEventName::AfterTool,
                with(
                    json!({"tool_name": "replace", "tool_input": {"file_path": "/a", "allow_multiple": true}, "tool_response": {"llmContent": "ok", "returnDisplay": "ok"}}),
                ),
                with(
                    json!({"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": "/a", "replace_all": true}, "tool_response": {"llmContent": "ok", "returnDisplay": "ok"}}),
                ),
            ),
            (
                HookEventName::AfterAgent,
                with(json!({"prompt": "p", "prompt_response": "r", "stop_hook_active": false})),
                with(
                    json!({"hook_event_name": "Stop", "prompt": "p", "last_assistant_message": "r", "stop_hook_active": false}),
                ),
            ),
            (
                HookEventName::Notification,
                with(
                    json!({"notification_type": "ToolPermission", "message": "Tool x requires execution", "details": {"type": "exec"}}),
                ),
                with(
                    json!({"hook_event_name": "Notification", "notification_type": "permission_prompt", "message": "Tool x requires execution", "details": {"type": "exec"}}),
                ),
            ),
            (
                HookEventName::PreCompress,
                with(json!({"trigger": "auto"})),
                with(json!({"hook_event_name": "PreCompact", "trigger": "auto"})),
            ),
            (
                HookEventName::BeforeModel,
                with(json!({"llm_request": {"model": "m"}, "claude_event": "Stop"})),
                with(json!({"hook_event_name": "BeforeModel", "llm_request": {"model": "m"}})),
            ),
        ];
        for (event, payload, mut expected) in cases {
            // Claude Code sends no timestamp; the model events keep Gemini's payload.
            if gemini_event_to_claude(event).is_some() {
                expected.shift_remove("timestamp");
            }
            assert_eq!(
                gemini_payload_to_claude(event, &payload),
                expected,
                "{event}"
            );
        }
    }

    /// A sequential hook rewrote `tool_input`: the Claude original no longer applies.
    #[test]
    fn stale_originals_are_not_used() {
        let input = claude(
            "PreToolUse",
            json!({"tool_name": "Grep", "tool_input": {"pattern": "x", "dir_path": "/b"}}),
        );
        let (event, mut gemini) = claude_input_to_gemini(&input).expect("translates");
        assert!(gemini.contains_key("claude_tool_input"));
        gemini.insert(
            "tool_input".to_owned(),
            json!({"pattern": "y", "dir_path": "/c"}),
        );
        let back = gemini_payload_to_claude(event, &daemon_payload(event, &gemini));
        assert_eq!(back["tool_input"], json!({"pattern": "y", "path": "/c"}));

        // A tail call replaced the tool: the original name is not used either.
        let input = claude(
            "PreToolUse",
            json!({"tool_name": "MultiEdit", "tool_input": {}}),
        );
        let (event, mut gemini) = claude_input_to_gemini(&input).expect("translates");
        gemini.insert("tool_name".to_owned(), json!("read_file"));
        let back = gemini_payload_to_claude(event, &gemini);
        assert_eq!(back["tool_name"], json!("Read"));

        // A claude_event of another Gemini event is ignored.
        let mut payload = object(json!({"claude_event": "PreToolUse"}));
        assert_eq!(
            effective_claude_event(HookEventName::AfterAgent, &payload),
            Some("Stop")
        );
        payload.insert("claude_event".to_owned(), json!("SubagentStop"));
        assert_eq!(
            effective_claude_event(HookEventName::AfterAgent, &payload),
            Some("SubagentStop")
        );
        assert_eq!(
            effective_claude_event(HookEventName::AfterModel, &payload),
            None
        );
    }

    fn hook(raw: Value) -> HookConfig {
        HookConfig {
            hook_type: HookType::Command,
            command: Some("x".to_owned()),
            name: None,
            description: None,
            timeout_ms: None,
            env: Vec::new(),
            raw: object(raw),
        }
    }

    #[test]
    fn claude_hooks_apply_to_their_own_events() {
        let stop = json!({"claude_event": "Stop"});
        let subagent = json!({"claude_event": "SubagentStop"});
        let reviewer = json!({"claude_event": "SubagentStop", "claude_matcher": "reviewer"});
        let idle = json!({"claude_event": "Notification", "claude_matcher": "idle_prompt"});
        let permission = json!({"claude_event": "Notification", "claude_matcher": "permission_prompt|idle_prompt"});
        let gemini = json!({});
        let a = HookEventName::AfterAgent;
        let n = HookEventName::Notification;
        // (hook, event, payload, applies)
        let cases = [
            (&stop, a, json!({}), true),
            (&subagent, a, json!({}), false),
            (&stop, a, json!({"claude_event": "Stop"}), true),
            (&subagent, a, json!({"claude_event": "Stop"}), false),
            (&stop, a, json!({"claude_event": "SubagentStop"}), false),
            (&subagent, a, json!({"claude_event": "SubagentStop"}), true),
            (
                &reviewer,
                a,
                json!({"claude_event": "SubagentStop", "agent_type": "reviewer"}),
                true,
            ),
            (
                &reviewer,
                a,
                json!({"claude_event": "SubagentStop", "agent_type": "planner"}),
                false,
            ),
            (&reviewer, a, json!({"claude_event": "SubagentStop"}), true),
            (&gemini, a, json!({"claude_event": "SubagentStop"}), true),
            (
                &idle,
                n,
                json!({"notification_type": "ToolPermission"}),
                false,
            ),
            (&idle, n, json!({"notification_type": "idle_prompt"}), true),
            (
                &permission,
                n,
                json!({"notification_type": "ToolPermission"}),
                true,
            ),
            (&idle, n, json!({}), true),
        ];
        for (raw, event, payload, expected) in cases {
            assert_eq!(
                claude_hook_applies(&hook(raw.clone()), event, &object(payload.clone())),
                expected,
                "{raw} on {event} {payload}"
            );
        }
    }
}
