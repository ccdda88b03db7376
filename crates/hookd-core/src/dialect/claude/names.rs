//! The name tables: events, tools, tool input keys and notification types, each way.
//!
//! Gemini CLI's tool names and parameter names are those of its core tools
//! (`packages/core/src/tools/definitions/base-declarations.ts`); Claude Code's are those its
//! hooks documentation and payloads use. Only renames that mean exactly the same thing are
//! mapped; a parameter whose meaning differs (`Read`'s `offset`/`limit` against `read_file`'s
//! `start_line`/`end_line`) is left as it is rather than guessed.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::dialect::Host;
use crate::event::{HookEventName, HostEvent, HostEventSpec};

/// Claude Code's hook events that have a Gemini CLI counterpart, in the order of its
/// documentation.
pub const CLAUDE_EVENTS: [&str; 9] = [
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "Notification",
];

/// Claude Code's dialect name, which its own events carry.
const CLAUDE: &str = <super::Claude as Host>::NAME;

/// Claude Code's own events, which Gemini CLI has no counterpart for (Claude Code 2.1.33x),
/// in Claude Code's order: hookd holds them as themselves (`HookEventName::Host`). The
/// other nine (`PreToolUse`, `Stop`, ...) are fired as their Gemini events ([`CLAUDE_EVENTS`]).
pub static CLAUDE_OWN_EVENTS: [HostEventSpec; 25] = [
    // A tool call failed.
    HostEventSpec {
        host: CLAUDE,
        name: "PostToolUseFailure",
        matcher_field: Some("tool_name"),
        can_block: true,
    },
    // After every tool call of one model turn ran.
    HostEventSpec {
        host: CLAUDE,
        name: "PostToolBatch",
        matcher_field: None,
        can_block: true,
    },
    // Claude Code is about to show a permission dialog.
    HostEventSpec {
        host: CLAUDE,
        name: "PermissionRequest",
        matcher_field: Some("tool_name"),
        can_block: true,
    },
    // The auto-mode classifier denied a tool call.
    HostEventSpec {
        host: CLAUDE,
        name: "PermissionDenied",
        matcher_field: Some("tool_name"),
        can_block: false,
    },
    // A slash command or skill is about to expand into a prompt.
    HostEventSpec {
        host: CLAUDE,
        name: "UserPromptExpansion",
        matcher_field: Some("command_name"),
        can_block: true,
    },
    // A turn ended with an API error.
    HostEventSpec {
        host: CLAUDE,
        name: "StopFailure",
        matcher_field: Some("error"),
        can_block: false,
    },
    // A subagent was started.
    HostEventSpec {
        host: CLAUDE,
        name: "SubagentStart",
        matcher_field: Some("agent_type"),
        can_block: false,
    },
    // `claude --init` / `--maintenance`.
    HostEventSpec {
        host: CLAUDE,
        name: "Setup",
        matcher_field: Some("trigger"),
        can_block: false,
    },
    // After a compaction.
    HostEventSpec {
        host: CLAUDE,
        name: "PostCompact",
        matcher_field: Some("trigger"),
        can_block: false,
    },
    // Before the model is switched.
    HostEventSpec {
        host: CLAUDE,
        name: "PreModelSwitch",
        matcher_field: Some("to_model"),
        can_block: true,
    },
    // After the model was switched.
    HostEventSpec {
        host: CLAUDE,
        name: "PostModelSwitch",
        matcher_field: Some("to_model"),
        can_block: false,
    },
    // An MCP server asks the user for input.
    HostEventSpec {
        host: CLAUDE,
        name: "Elicitation",
        matcher_field: Some("mcp_server_name"),
        can_block: true,
    },
    // The user answered an MCP elicitation.
    HostEventSpec {
        host: CLAUDE,
        name: "ElicitationResult",
        matcher_field: Some("mcp_server_name"),
        can_block: true,
    },
    // A settings or skills file changed during the session.
    HostEventSpec {
        host: CLAUDE,
        name: "ConfigChange",
        matcher_field: Some("source"),
        can_block: true,
    },
    // A CLAUDE.md or rules file was loaded.
    HostEventSpec {
        host: CLAUDE,
        name: "InstructionsLoaded",
        matcher_field: Some("load_reason"),
        can_block: false,
    },
    // A directory was added to the session.
    HostEventSpec {
        host: CLAUDE,
        name: "DirectoryAdded",
        matcher_field: Some("source"),
        can_block: false,
    },
    // The working directory changed.
    HostEventSpec {
        host: CLAUDE,
        name: "CwdChanged",
        matcher_field: None,
        can_block: false,
    },
    // A watched file changed.
    HostEventSpec {
        host: CLAUDE,
        name: "FileChanged",
        matcher_field: Some("file_path"),
        can_block: false,
    },
    // A worktree is to be created.
    HostEventSpec {
        host: CLAUDE,
        name: "WorktreeCreate",
        matcher_field: None,
        can_block: true,
    },
    // A worktree is to be removed.
    HostEventSpec {
        host: CLAUDE,
        name: "WorktreeRemove",
        matcher_field: None,
        can_block: false,
    },
    // A teammate of an agent team is about to go idle.
    HostEventSpec {
        host: CLAUDE,
        name: "TeammateIdle",
        matcher_field: None,
        can_block: true,
    },
    // A task is being created.
    HostEventSpec {
        host: CLAUDE,
        name: "TaskCreated",
        matcher_field: None,
        can_block: true,
    },
    // A task is being marked completed.
    HostEventSpec {
        host: CLAUDE,
        name: "TaskCompleted",
        matcher_field: None,
        can_block: true,
    },
    // A message is about to be displayed.
    HostEventSpec {
        host: CLAUDE,
        name: "MessageDisplay",
        matcher_field: None,
        can_block: false,
    },
    // A skill's shell command is about to run (Claude Code 2.1.332 and later).
    HostEventSpec {
        host: CLAUDE,
        name: "PreSkillShellCommand",
        matcher_field: Some("tool_name"),
        can_block: true,
    },
];

/// Claude Code's own event named `name` (case-sensitive), held as itself.
pub fn claude_own_event(name: &str) -> Option<HostEvent> {
    CLAUDE_OWN_EVENTS
        .iter()
        .find(|spec| spec.name == name)
        .map(HostEvent::new)
}

/// The event hookd fires for a Claude Code event: its Gemini CLI counterpart, or for Claude's
/// own events (`PermissionRequest`, `PostToolUseFailure`, `SubagentStart`, ...) the
/// Claude-only event itself (`HookEventName::Host`); `None` for a name Claude Code does not
/// have.
///
/// Both `Stop` and `SubagentStop` become `AfterAgent`: Gemini CLI has one "the agent finished"
/// event. Names are case-sensitive.
pub fn claude_event_to_gemini(name: &str) -> Option<HookEventName> {
    Some(match name {
        "PreToolUse" => HookEventName::BeforeTool,
        "PostToolUse" => HookEventName::AfterTool,
        "UserPromptSubmit" => HookEventName::BeforeAgent,
        "Stop" | "SubagentStop" => HookEventName::AfterAgent,
        "SessionStart" => HookEventName::SessionStart,
        "SessionEnd" => HookEventName::SessionEnd,
        "PreCompact" => HookEventName::PreCompress,
        "Notification" => HookEventName::Notification,
        other => return claude_own_event(other).map(HookEventName::Host),
    })
}

/// The Claude Code event a Gemini CLI event is seen as; `None` for the model events
/// (`BeforeModel`, `AfterModel`, `BeforeToolSelection`), which Claude Code does not have.
/// `AfterAgent` is `Stop` (the main agent finished).
pub fn gemini_event_to_claude(event: HookEventName) -> Option<&'static str> {
    Some(match event {
        HookEventName::BeforeTool => "PreToolUse",
        HookEventName::AfterTool => "PostToolUse",
        HookEventName::BeforeAgent => "UserPromptSubmit",
        HookEventName::AfterAgent => "Stop",
        HookEventName::SessionStart => "SessionStart",
        HookEventName::SessionEnd => "SessionEnd",
        HookEventName::PreCompress => "PreCompact",
        HookEventName::Notification => "Notification",
        HookEventName::BeforeModel
        | HookEventName::AfterModel
        | HookEventName::BeforeToolSelection => return None,
        HookEventName::Host(event) if event.host() == CLAUDE => event.as_str(),
        HookEventName::Host(_) => return None,
    })
}

/// The `&'static str` spelling of a Claude event name, if it is one of [`CLAUDE_EVENTS`].
pub(crate) fn static_claude_event(name: &str) -> Option<&'static str> {
    CLAUDE_EVENTS
        .into_iter()
        .find(|event| *event == name)
        .or_else(|| claude_own_event(name).map(HostEvent::as_str))
}

/// One built-in tool both CLIs have, with its input keys that are spelled differently.
pub(crate) struct ToolMapping {
    /// Claude Code's name.
    pub claude: &'static str,
    /// Gemini CLI's name.
    pub gemini: &'static str,
    /// `(claude key, gemini key)` pairs of `tool_input` that mean the same thing.
    keys: &'static [(&'static str, &'static str)],
    /// Whether the items of the `todos` list rename `content` to `description`.
    todo_items: bool,
}

/// The tools both CLIs have. Where two Claude tools map to one Gemini tool (`Edit` and
/// `MultiEdit` are both `replace`), the first listed is the one Gemini's name maps back to.
pub(crate) const TOOLS: [ToolMapping; 11] = [
    ToolMapping {
        claude: "Bash",
        gemini: "run_shell_command",
        keys: &[("run_in_background", "is_background")],
        todo_items: false,
    },
    ToolMapping {
        claude: "Edit",
        gemini: "replace",
        keys: &[("replace_all", "allow_multiple")],
        todo_items: false,
    },
    ToolMapping {
        claude: "MultiEdit",
        gemini: "replace",
        keys: &[],
        todo_items: false,
    },
    ToolMapping {
        claude: "Read",
        gemini: "read_file",
        keys: &[],
        todo_items: false,
    },
    ToolMapping {
        claude: "Write",
        gemini: "write_file",
        keys: &[],
        todo_items: false,
    },
    ToolMapping {
        claude: "Glob",
        gemini: "glob",
        keys: &[("path", "dir_path")],
        todo_items: false,
    },
    ToolMapping {
        claude: "Grep",
        gemini: "grep_search",
        keys: &[("path", "dir_path"), ("glob", "include_pattern")],
        todo_items: false,
    },
    ToolMapping {
        claude: "LS",
        gemini: "list_directory",
        keys: &[("path", "dir_path")],
        todo_items: false,
    },
    ToolMapping {
        claude: "WebFetch",
        gemini: "web_fetch",
        keys: &[],
        todo_items: false,
    },
    ToolMapping {
        claude: "WebSearch",
        gemini: "google_web_search",
        keys: &[],
        todo_items: false,
    },
    ToolMapping {
        claude: "TodoWrite",
        gemini: "write_todos",
        keys: &[],
        todo_items: true,
    },
];

fn by_claude_name(name: &str) -> Option<&'static ToolMapping> {
    TOOLS.iter().find(|tool| tool.claude == name)
}

fn by_gemini_name(name: &str) -> Option<&'static ToolMapping> {
    TOOLS.iter().find(|tool| tool.gemini == name)
}

/// The server and tool of a Claude MCP tool name `mcp__<server>__<tool>`.
fn claude_mcp_parts(name: &str) -> Option<(&str, &str)> {
    let (server, tool) = name.strip_prefix("mcp__")?.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// The server and tool of a Gemini MCP tool name `mcp_<server>_<tool>` (the server ends at
/// the first `_`, as Gemini CLI parses it).
fn gemini_mcp_parts(name: &str) -> Option<(&str, &str)> {
    let (server, tool) = name.strip_prefix("mcp_")?.split_once('_')?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// Gemini CLI's name for a Claude Code tool: the built-in tools by the table in
/// `docs/dialects.md` (`Bash` → `run_shell_command`, `Edit` and `MultiEdit` → `replace`, ...),
/// MCP tools from `mcp__<server>__<tool>` to `mcp_<server>_<tool>`, anything else unchanged.
pub fn claude_tool_to_gemini(name: &str) -> Cow<'_, str> {
    if let Some(tool) = by_claude_name(name) {
        return Cow::Borrowed(tool.gemini);
    }
    match claude_mcp_parts(name) {
        Some((server, tool)) => Cow::Owned(format!("mcp_{server}_{tool}")),
        None => Cow::Borrowed(name),
    }
}

/// Claude Code's name for a Gemini CLI tool: the inverse of [`claude_tool_to_gemini`]
/// (`replace` → `Edit`; `mcp_<server>_<tool>` → `mcp__<server>__<tool>`, the server ending at
/// the first `_`), anything else unchanged.
pub fn gemini_tool_to_claude(name: &str) -> Cow<'_, str> {
    if let Some(tool) = by_gemini_name(name) {
        return Cow::Borrowed(tool.claude);
    }
    match gemini_mcp_parts(name) {
        Some((server, tool)) => Cow::Owned(format!("mcp__{server}__{tool}")),
        None => Cow::Borrowed(name),
    }
}

/// Every Claude Code tool name that [`claude_tool_to_gemini`] turns into `gemini`: the
/// built-in tools of the table (`replace` is both `Edit` and `MultiEdit`), else the one name
/// [`gemini_tool_to_claude`] gives. For a relay entry's matcher that must cover a hook's.
pub fn claude_tools_for_gemini(gemini: &str) -> Vec<String> {
    let mut names: Vec<String> = TOOLS
        .iter()
        .filter(|tool| tool.gemini == gemini)
        .map(|tool| tool.claude.to_owned())
        .collect();
    if names.is_empty() {
        names.push(gemini_tool_to_claude(gemini).into_owned());
    }
    names
}

/// A Claude tool's `tool_input` with Gemini CLI's key names, for the tool Claude calls
/// `claude_tool`. A key is renamed only when the new name is not already taken; order is kept.
pub fn claude_tool_input_to_gemini(
    claude_tool: &str,
    input: &Map<String, Value>,
) -> Map<String, Value> {
    match by_claude_name(claude_tool) {
        Some(tool) => rename(input, tool, Direction::ToGemini),
        None => input.clone(),
    }
}

/// A Gemini tool's `tool_input` with Claude Code's key names, for the tool Gemini calls
/// `gemini_tool`: the inverse of [`claude_tool_input_to_gemini`].
pub fn gemini_tool_input_to_claude(
    gemini_tool: &str,
    input: &Map<String, Value>,
) -> Map<String, Value> {
    match by_gemini_name(gemini_tool) {
        Some(tool) => rename(input, tool, Direction::ToClaude),
        None => input.clone(),
    }
}

#[derive(Clone, Copy)]
enum Direction {
    ToGemini,
    ToClaude,
}

fn rename(
    input: &Map<String, Value>,
    tool: &ToolMapping,
    direction: Direction,
) -> Map<String, Value> {
    let pairs = tool.keys.iter().map(|&(claude, gemini)| match direction {
        Direction::ToGemini => (claude, gemini),
        Direction::ToClaude => (gemini, claude),
    });
    let mut renamed = rename_keys(input, pairs);
    if tool.todo_items {
        let item_pair = match direction {
            Direction::ToGemini => ("content", "description"),
            Direction::ToClaude => ("description", "content"),
        };
        if let Some(Value::Array(items)) = renamed.get_mut("todos") {
            for item in items.iter_mut() {
                if let Value::Object(fields) = item {
                    *fields = rename_keys(fields, std::iter::once(item_pair));
                }
            }
        }
    }
    renamed
}

/// `map` with each `from` key renamed to `to`, in place, unless `to` is already a key.
fn rename_keys<'a>(
    map: &Map<String, Value>,
    pairs: impl Iterator<Item = (&'a str, &'a str)> + Clone,
) -> Map<String, Value> {
    map.iter()
        .map(|(key, value)| {
            let target = pairs
                .clone()
                .find(|(from, to)| key == from && !map.contains_key(*to))
                .map_or(key.as_str(), |(_, to)| to);
            (target.to_owned(), value.clone())
        })
        .collect()
}

/// Gemini CLI's `notification_type` for Claude Code's: `permission_prompt` is
/// `ToolPermission`; other types (`idle_prompt`, ...) have no Gemini counterpart and are kept.
pub fn claude_notification_type_to_gemini(kind: &str) -> &str {
    match kind {
        "permission_prompt" => "ToolPermission",
        other => other,
    }
}

/// Claude Code's `notification_type` for Gemini CLI's: the inverse of
/// [`claude_notification_type_to_gemini`].
pub fn gemini_notification_type_to_claude(kind: &str) -> &str {
    match kind {
        "ToolPermission" => "permission_prompt",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn events_map_both_ways() {
        // (Claude, Gemini, Claude name Gemini maps back to)
        let cases = [
            ("PreToolUse", HookEventName::BeforeTool, "PreToolUse"),
            ("PostToolUse", HookEventName::AfterTool, "PostToolUse"),
            (
                "UserPromptSubmit",
                HookEventName::BeforeAgent,
                "UserPromptSubmit",
            ),
            ("Stop", HookEventName::AfterAgent, "Stop"),
            ("SubagentStop", HookEventName::AfterAgent, "Stop"),
            ("SessionStart", HookEventName::SessionStart, "SessionStart"),
            ("SessionEnd", HookEventName::SessionEnd, "SessionEnd"),
            ("PreCompact", HookEventName::PreCompress, "PreCompact"),
            ("Notification", HookEventName::Notification, "Notification"),
        ];
        assert_eq!(cases.len(), CLAUDE_EVENTS.len());
        for (claude, gemini, back) in cases {
            assert!(CLAUDE_EVENTS.contains(&claude));
            assert_eq!(claude_event_to_gemini(claude), Some(gemini), "{claude}");
            assert_eq!(gemini_event_to_claude(gemini), Some(back), "{gemini}");
        }
        // Claude Code's own events are held as themselves.
        for spec in &CLAUDE_OWN_EVENTS {
            let event = HostEvent::new(spec);
            let held = HookEventName::Host(event);
            assert_eq!(claude_event_to_gemini(event.as_str()), Some(held));
            assert_eq!(gemini_event_to_claude(held), Some(event.as_str()));
        }
        for unknown in [
            "permissionrequest",
            "SubAgentStop",
            "pretooluse",
            "BeforeTool",
            "",
        ] {
            assert_eq!(claude_event_to_gemini(unknown), None, "{unknown}");
        }
        for model in [
            HookEventName::BeforeModel,
            HookEventName::AfterModel,
            HookEventName::BeforeToolSelection,
        ] {
            assert_eq!(gemini_event_to_claude(model), None);
        }
    }

    #[test]
    fn tool_names_map_both_ways() {
        // (Claude, Gemini, Claude name Gemini maps back to)
        let cases = [
            ("Bash", "run_shell_command", "Bash"),
            ("Edit", "replace", "Edit"),
            ("MultiEdit", "replace", "Edit"),
            ("Read", "read_file", "Read"),
            ("Write", "write_file", "Write"),
            ("Glob", "glob", "Glob"),
            ("Grep", "grep_search", "Grep"),
            ("LS", "list_directory", "LS"),
            ("WebFetch", "web_fetch", "WebFetch"),
            ("WebSearch", "google_web_search", "WebSearch"),
            ("TodoWrite", "write_todos", "TodoWrite"),
            // MCP tools change their separators.
            (
                "mcp__github__create_issue",
                "mcp_github_create_issue",
                "mcp__github__create_issue",
            ),
            (
                "mcp__memory__read__all",
                "mcp_memory_read__all",
                "mcp__memory__read__all",
            ),
            // Anything else is unchanged.
            ("Task", "Task", "Task"),
            ("NotebookEdit", "NotebookEdit", "NotebookEdit"),
            ("mcp__", "mcp__", "mcp__"),
            ("mcp__x", "mcp__x", "mcp__x"),
            ("bash", "bash", "bash"),
            ("", "", ""),
        ];
        for (claude, gemini, back) in cases {
            assert_eq!(claude_tool_to_gemini(claude), gemini, "{claude}");
            assert_eq!(gemini_tool_to_claude(gemini), back, "{gemini}");
        }
        // Gemini-only tools stay as they are.
        for gemini in ["read_many_files", "save_memory", "mcp_x", "mcp__y_z"] {
            assert_eq!(gemini_tool_to_claude(gemini), gemini);
        }
        // A server name with an underscore cannot survive the round trip by name alone; the
        // payload keeps the original (see `payload`).
        assert_eq!(claude_tool_to_gemini("mcp__my_db__q"), "mcp_my_db_q");
        assert_eq!(gemini_tool_to_claude("mcp_my_db_q"), "mcp__my__db_q");
    }

    #[test]
    fn tool_input_keys_map_both_ways() {
        // (Claude tool, Claude input, Gemini input)
        let cases = [
            (
                "Bash",
                json!({"command": "ls", "description": "d", "timeout": 5, "run_in_background": true}),
                json!({"command": "ls", "description": "d", "timeout": 5, "is_background": true}),
            ),
            (
                "Edit",
                json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": false}),
                json!({"file_path": "/a", "old_string": "x", "new_string": "y", "allow_multiple": false}),
            ),
            (
                "Grep",
                json!({"pattern": "p", "path": "/src", "glob": "*.rs", "-i": true}),
                json!({"pattern": "p", "dir_path": "/src", "include_pattern": "*.rs", "-i": true}),
            ),
            (
                "Glob",
                json!({"pattern": "**/*.rs", "path": "/s"}),
                json!({"pattern": "**/*.rs", "dir_path": "/s"}),
            ),
            (
                "LS",
                json!({"path": "/s", "ignore": ["x"]}),
                json!({"dir_path": "/s", "ignore": ["x"]}),
            ),
            (
                "Read",
                json!({"file_path": "/a", "offset": 10, "limit": 5}),
                json!({"file_path": "/a", "offset": 10, "limit": 5}),
            ),
            (
                "TodoWrite",
                json!({"todos": [{"content": "a", "status": "pending", "activeForm": "A"}, "odd"]}),
                json!({"todos": [{"description": "a", "status": "pending", "activeForm": "A"}, "odd"]}),
            ),
            // A key whose target is taken stays as it is.
            (
                "Glob",
                json!({"path": "/a", "dir_path": "/b"}),
                json!({"path": "/a", "dir_path": "/b"}),
            ),
            // Unknown tools are untouched.
            (
                "mcp__fs__list",
                json!({"path": "/a"}),
                json!({"path": "/a"}),
            ),
        ];
        for (tool, claude, gemini) in cases {
            let gemini_tool = claude_tool_to_gemini(tool);
            let forward = claude_tool_input_to_gemini(tool, &object(claude.clone()));
            assert_eq!(Value::Object(forward.clone()), gemini, "{tool}");
            // Key order is kept.
            let keys: Vec<&String> = forward.keys().collect();
            let expected: Vec<&String> = gemini
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            assert_eq!(keys, expected, "{tool}");
            let back = gemini_tool_input_to_claude(&gemini_tool, &forward);
            assert_eq!(Value::Object(back), claude, "{tool}");
        }
    }

    #[test]
    fn notification_types_map_both_ways() {
        let cases = [
            ("permission_prompt", "ToolPermission"),
            ("idle_prompt", "idle_prompt"),
            ("auth_success", "auth_success"),
        ];
        for (claude, gemini) in cases {
            assert_eq!(claude_notification_type_to_gemini(claude), gemini);
            assert_eq!(gemini_notification_type_to_claude(gemini), claude);
        }
    }
}
