//! GitHub Copilot CLI's events and tool names, and their Claude Code counterparts, through
//! which they reach hookd's.
//!
//! Copilot CLI itself gives the hooks of a repository's `.claude/settings.json` Claude Code's
//! event names and `Bash` for its `bash` tool (observed with 1.0.102), so Claude Code's names
//! are the natural bridge: a Copilot event is fired as its Claude counterpart is.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::event::{HookEventName, HostEvent, HostEventSpec};

/// Copilot CLI's hook events (1.0.102), in Copilot's order, with the Claude Code event each is
/// seen as; `None` for Copilot's own events ([`COPILOT_OWN_EVENTS`]), which Claude Code has no
/// counterpart for and hookd holds as themselves. Payloads and answers of each were checked
/// against the CLI (`docs/dialects.md`); `preCompact` follows Copilot's documented shape (a
/// headless run does not compact).
pub const COPILOT_EVENTS: [(&str, Option<&str>); 15] = [
    ("sessionStart", Some("SessionStart")),
    ("userPromptSubmitted", Some("UserPromptSubmit")),
    ("userPromptTransformed", None),
    ("preToolUse", Some("PreToolUse")),
    ("permissionRequest", Some("PermissionRequest")),
    ("postToolUse", Some("PostToolUse")),
    ("postToolUseFailure", Some("PostToolUseFailure")),
    ("preMcpToolCall", None),
    ("agentStop", Some("Stop")),
    ("subagentStart", Some("SubagentStart")),
    ("subagentStop", Some("SubagentStop")),
    ("preCompact", Some("PreCompact")),
    ("notification", Some("Notification")),
    ("errorOccurred", None),
    ("sessionEnd", Some("SessionEnd")),
];

/// Copilot CLI's dialect name, which its own events carry.
const COPILOT: &str = "copilot";

/// Copilot CLI's own events, which neither Gemini CLI nor Claude Code has: hookd holds them as
/// themselves (`HookEventName::Host`), so hookd's files may name them. None of them can block:
/// what their hooks can do is rewrite (`modifiedTransformedPrompt`, `metaToUse`) or advise
/// (`errorHandling`, `userNotification`).
pub static COPILOT_OWN_EVENTS: [HostEventSpec; 3] = [
    // After Copilot added its context to a submitted prompt, before the model sees it.
    HostEventSpec {
        host: COPILOT,
        name: "userPromptTransformed",
        matcher_field: None,
        can_block: false,
    },
    // Before an MCP tool's request is sent (after `preToolUse` allowed the call).
    HostEventSpec {
        host: COPILOT,
        name: "preMcpToolCall",
        matcher_field: Some("tool_name"),
        can_block: false,
    },
    // A model call, tool or the session failed.
    HostEventSpec {
        host: COPILOT,
        name: "errorOccurred",
        matcher_field: Some("error_context"),
        can_block: false,
    },
];

/// The answer fields Copilot CLI reads from the hooks of each of its own events.
pub fn copilot_own_answer_fields(copilot_event: &str) -> &'static [&'static str] {
    match copilot_event {
        "userPromptTransformed" => &["modifiedTransformedPrompt"],
        "preMcpToolCall" => &["metaToUse"],
        "errorOccurred" => &[
            "errorHandling",
            "retryCount",
            "userNotification",
            "suppressOutput",
        ],
        _ => &[],
    }
}

/// The Claude Code event a Copilot CLI event is seen as (`preToolUse` → `PreToolUse`); `None`
/// for Copilot's own events and for names Copilot does not fire.
pub fn copilot_event_to_claude(copilot_event: &str) -> Option<&'static str> {
    COPILOT_EVENTS
        .iter()
        .find(|(copilot, _)| *copilot == copilot_event)
        .and_then(|(_, claude)| *claude)
}

/// The Copilot CLI event a Claude Code event is (`Stop` → `agentStop`).
pub fn claude_event_to_copilot(claude_event: &str) -> Option<&'static str> {
    COPILOT_EVENTS
        .iter()
        .find(|(_, claude)| *claude == Some(claude_event))
        .map(|(copilot, _)| *copilot)
}

/// Copilot's own event of that name.
pub fn copilot_own_event(copilot_event: &str) -> Option<HostEvent> {
    COPILOT_OWN_EVENTS
        .iter()
        .find(|spec| spec.name == copilot_event)
        .map(HostEvent::new)
}

/// The hookd event a Copilot CLI event is fired as: its Claude counterpart's, or itself for
/// Copilot's own events.
pub fn copilot_event_to_hookd(copilot_event: &str) -> Option<HookEventName> {
    match copilot_event_to_claude(copilot_event) {
        Some(claude) => crate::dialect::claude_event_to_gemini(claude),
        None => copilot_own_event(copilot_event).map(HookEventName::Host),
    }
}

/// One built-in Copilot CLI tool with a Claude Code counterpart, and the argument keys spelled
/// differently (`(copilot key, claude key)`), from the tool schemas Copilot CLI 1.0.102 sends
/// its model.
struct CopilotTool {
    copilot: &'static str,
    claude: &'static str,
    keys: &'static [(&'static str, &'static str)],
}

const TOOLS: [CopilotTool; 7] = [
    CopilotTool {
        copilot: "bash",
        claude: "Bash",
        keys: &[],
    },
    CopilotTool {
        copilot: "view",
        claude: "Read",
        keys: &[("path", "file_path")],
    },
    CopilotTool {
        copilot: "create",
        claude: "Write",
        keys: &[("path", "file_path"), ("file_text", "content")],
    },
    CopilotTool {
        copilot: "edit",
        claude: "Edit",
        keys: &[
            ("path", "file_path"),
            ("old_str", "old_string"),
            ("new_str", "new_string"),
        ],
    },
    CopilotTool {
        copilot: "grep",
        claude: "Grep",
        keys: &[],
    },
    CopilotTool {
        copilot: "glob",
        claude: "Glob",
        keys: &[],
    },
    CopilotTool {
        copilot: "task",
        claude: "Task",
        keys: &[],
    },
];

/// Claude Code's name for a Copilot CLI tool (`bash` → `Bash`, `view` → `Read`); other tools
/// (`sql`, `skill`, MCP tools) keep their names.
pub fn copilot_tool_to_claude(name: &str) -> Cow<'_, str> {
    TOOLS
        .iter()
        .find(|tool| tool.copilot == name)
        .map_or(Cow::Borrowed(name), |tool| Cow::Borrowed(tool.claude))
}

/// Copilot CLI's name for a Claude Code tool: the inverse of [`copilot_tool_to_claude`].
pub fn claude_tool_to_copilot(name: &str) -> Cow<'_, str> {
    TOOLS
        .iter()
        .find(|tool| tool.claude == name)
        .map_or(Cow::Borrowed(name), |tool| Cow::Borrowed(tool.copilot))
}

/// A Copilot tool's arguments with Claude Code's key names (`path` → `file_path` for `view`);
/// a key is renamed only when the new name is free, and the order is kept.
pub fn copilot_args_to_claude(copilot_tool: &str, args: &Map<String, Value>) -> Map<String, Value> {
    let keys = TOOLS
        .iter()
        .find(|tool| tool.copilot == copilot_tool)
        .map_or(&[][..], |tool| tool.keys);
    rename(
        args,
        keys.iter().map(|(copilot, claude)| (*copilot, *claude)),
    )
}

/// A Claude tool input with Copilot CLI's key names, for the tool Copilot calls
/// `copilot_tool`: the inverse of [`copilot_args_to_claude`].
pub fn claude_args_to_copilot(
    copilot_tool: &str,
    input: &Map<String, Value>,
) -> Map<String, Value> {
    let keys = TOOLS
        .iter()
        .find(|tool| tool.copilot == copilot_tool)
        .map_or(&[][..], |tool| tool.keys);
    rename(
        input,
        keys.iter().map(|(copilot, claude)| (*claude, *copilot)),
    )
}

fn rename<'a>(
    input: &Map<String, Value>,
    pairs: impl Iterator<Item = (&'a str, &'a str)> + Clone,
) -> Map<String, Value> {
    input
        .iter()
        .map(|(key, value)| {
            let renamed = pairs
                .clone()
                .find(|(from, to)| from == key && !input.contains_key(*to))
                .map_or(key.as_str(), |(_, to)| to);
            (renamed.to_owned(), value.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_map_both_ways() {
        let cases = [
            (
                "sessionStart",
                Some("SessionStart"),
                Some(HookEventName::SessionStart),
            ),
            (
                "userPromptSubmitted",
                Some("UserPromptSubmit"),
                Some(HookEventName::BeforeAgent),
            ),
            (
                "preToolUse",
                Some("PreToolUse"),
                Some(HookEventName::BeforeTool),
            ),
            (
                "postToolUse",
                Some("PostToolUse"),
                Some(HookEventName::AfterTool),
            ),
            ("agentStop", Some("Stop"), Some(HookEventName::AfterAgent)),
            (
                "sessionEnd",
                Some("SessionEnd"),
                Some(HookEventName::SessionEnd),
            ),
            (
                "permissionRequest",
                Some("PermissionRequest"),
                "PermissionRequest".parse().ok(),
            ),
            (
                "postToolUseFailure",
                Some("PostToolUseFailure"),
                "PostToolUseFailure".parse().ok(),
            ),
            (
                "subagentStart",
                Some("SubagentStart"),
                "SubagentStart".parse().ok(),
            ),
            (
                "subagentStop",
                Some("SubagentStop"),
                Some(HookEventName::AfterAgent),
            ),
            (
                "preCompact",
                Some("PreCompact"),
                Some(HookEventName::PreCompress),
            ),
            (
                "notification",
                Some("Notification"),
                Some(HookEventName::Notification),
            ),
            (
                "userPromptTransformed",
                None,
                "userPromptTransformed".parse().ok(),
            ),
            ("preMcpToolCall", None, "preMcpToolCall".parse().ok()),
            ("errorOccurred", None, "errorOccurred".parse().ok()),
            ("PreToolUse", None, None),
            ("sessionStarted", None, None),
        ];
        for (copilot, claude, hookd) in cases {
            assert_eq!(copilot_event_to_claude(copilot), claude, "{copilot}");
            assert_eq!(copilot_event_to_hookd(copilot), hookd, "{copilot}");
            if let Some(claude) = claude {
                assert_eq!(claude_event_to_copilot(claude), Some(copilot));
            }
            if copilot != "PreToolUse" && copilot != "sessionStarted" {
                assert!(hookd.is_some(), "{copilot} is fired");
            }
        }
        // Copilot's own events are held as themselves, named by Copilot.
        for spec in &COPILOT_OWN_EVENTS {
            let event = copilot_event_to_hookd(spec.name).expect(spec.name);
            assert_eq!(event.host_only().map(|e| e.host()), Some("copilot"));
            assert_eq!(
                event.host_only().map(|e| e.can_block()),
                Some(false),
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn tools_and_their_arguments_round_trip() {
        let cases = [
            (
                "bash",
                "Bash",
                json!({"command": "ls", "description": "d"}),
                json!({"command": "ls", "description": "d"}),
            ),
            (
                "view",
                "Read",
                json!({"path": "/a", "view_range": [1, 2]}),
                json!({"file_path": "/a", "view_range": [1, 2]}),
            ),
            (
                "create",
                "Write",
                json!({"path": "/a", "file_text": "x"}),
                json!({"file_path": "/a", "content": "x"}),
            ),
            (
                "edit",
                "Edit",
                json!({"path": "/a", "old_str": "o", "new_str": "n"}),
                json!({"file_path": "/a", "old_string": "o", "new_string": "n"}),
            ),
            ("sql", "sql", json!({"query": "q"}), json!({"query": "q"})),
        ];
        for (copilot, claude, args, claude_args) in cases {
            assert_eq!(copilot_tool_to_claude(copilot), claude);
            assert_eq!(claude_tool_to_copilot(claude), copilot);
            let Value::Object(args) = args else {
                unreachable!()
            };
            let converted = copilot_args_to_claude(copilot, &args);
            assert_eq!(Value::Object(converted.clone()), claude_args, "{copilot}");
            assert_eq!(
                claude_args_to_copilot(copilot, &converted),
                args,
                "{copilot}"
            );
        }
    }

    #[test]
    fn a_taken_key_is_not_overwritten() {
        let Value::Object(args) = json!({"path": "/a", "file_path": "/b"}) else {
            unreachable!()
        };
        let converted = copilot_args_to_claude("view", &args);
        assert_eq!(
            Value::Object(converted),
            json!({"path": "/a", "file_path": "/b"})
        );
    }
}
