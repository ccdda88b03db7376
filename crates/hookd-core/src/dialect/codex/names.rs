//! Codex CLI's events and tool names, and hookd's names for them.

use std::borrow::Cow;

use crate::event::HookEventName;

/// Codex CLI's hook events, in its own order. `Interrupt` is listed for completeness; hookd
/// has no event for it ([`codex_event_to_hookd`] gives `None`), so it is never relayed.
pub const CODEX_EVENTS: [&str; 12] = [
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "PostCompact",
    "Interrupt",
];

/// The hookd event a Codex CLI event is fired as. Codex's events are Claude Code's where
/// they share a name, so they map as Claude's do (`PreToolUse` → `BeforeTool`, `Stop` and
/// `SubagentStop` → `AfterAgent`, `PermissionRequest` → hookd's Claude-only event of that
/// name); `Interrupt` has no counterpart.
pub fn codex_event_to_hookd(name: &str) -> Option<HookEventName> {
    if name == "Interrupt" || !CODEX_EVENTS.contains(&name) {
        return None;
    }
    crate::dialect::claude_event_to_gemini(name)
}

/// The label Codex uses for an event in trust keys and hashes (`pre_tool_use`).
pub fn codex_event_label(name: &str) -> Option<&'static str> {
    Some(match name {
        "PreToolUse" => "pre_tool_use",
        "PermissionRequest" => "permission_request",
        "PostToolUse" => "post_tool_use",
        "UserPromptSubmit" => "user_prompt_submit",
        "Stop" => "stop",
        "SubagentStart" => "subagent_start",
        "SubagentStop" => "subagent_stop",
        "SessionStart" => "session_start",
        "SessionEnd" => "session_end",
        "PreCompact" => "pre_compact",
        "PostCompact" => "post_compact",
        "Interrupt" => "interrupt",
        _ => return None,
    })
}

/// Whether Codex reads a group's `matcher` for this event (it ignores it for the rest, and
/// leaves it out of the trust hash).
pub fn codex_event_has_matcher(name: &str) -> bool {
    matches!(
        name,
        "PreToolUse"
            | "PermissionRequest"
            | "PostToolUse"
            | "SubagentStart"
            | "SubagentStop"
            | "SessionStart"
            | "PreCompact"
            | "PostCompact"
    )
}

/// hookd's (Gemini CLI's) name for a Codex tool: `Bash` → `run_shell_command`,
/// `apply_patch` → `replace` (a patch edits files: guards of `replace` and `write_file` must
/// see it; its `tool_input` keeps Codex's `command` key, the patch text),
/// `mcp__server__tool` → `mcp_server_tool`; others (`spawn_agent`, `dynamic__ns__tool`)
/// unchanged.
pub fn codex_tool_to_hookd(name: &str) -> Cow<'_, str> {
    match name {
        "apply_patch" => Cow::Borrowed("replace"),
        "spawn_agent" => Cow::Borrowed("spawn_agent"),
        _ => crate::dialect::claude_tool_to_gemini(name),
    }
}

/// Codex's names for a hookd tool, for matchers: `run_shell_command` → `Bash`, `replace` and
/// `write_file` → `apply_patch`, `mcp_s_t` → `mcp__s__t`; others unchanged.
pub fn hookd_tool_to_codex(name: &str) -> Cow<'_, str> {
    match name {
        "replace" | "write_file" => Cow::Borrowed("apply_patch"),
        "run_shell_command" => Cow::Borrowed("Bash"),
        _ => crate::dialect::gemini_tool_to_claude(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_map_to_hookd() {
        let cases = [
            ("PreToolUse", Some(HookEventName::BeforeTool)),
            ("PostToolUse", Some(HookEventName::AfterTool)),
            ("UserPromptSubmit", Some(HookEventName::BeforeAgent)),
            ("Stop", Some(HookEventName::AfterAgent)),
            ("SubagentStop", Some(HookEventName::AfterAgent)),
            ("SessionStart", Some(HookEventName::SessionStart)),
            ("SessionEnd", Some(HookEventName::SessionEnd)),
            ("PreCompact", Some(HookEventName::PreCompress)),
            ("Interrupt", None),
            ("Notification", None),
            ("pretooluse", None),
        ];
        for (name, expected) in cases {
            assert_eq!(codex_event_to_hookd(name), expected, "{name}");
        }
        for name in ["PermissionRequest", "SubagentStart", "PostCompact"] {
            assert!(codex_event_to_hookd(name).is_some(), "{name}");
        }
        for name in CODEX_EVENTS {
            assert!(codex_event_label(name).is_some(), "{name}");
        }
    }

    #[test]
    fn tool_names_both_ways() {
        // (codex, hookd, back to codex)
        let cases = [
            ("Bash", "run_shell_command", "Bash"),
            ("apply_patch", "replace", "apply_patch"),
            ("spawn_agent", "spawn_agent", "spawn_agent"),
            (
                "mcp__github__create_issue",
                "mcp_github_create_issue",
                "mcp__github__create_issue",
            ),
            (
                "dynamic__ns__tool",
                "dynamic__ns__tool",
                "dynamic__ns__tool",
            ),
        ];
        for (codex, hookd, back) in cases {
            assert_eq!(codex_tool_to_hookd(codex), hookd, "{codex}");
            assert_eq!(hookd_tool_to_codex(hookd), back, "{hookd}");
        }
        assert_eq!(hookd_tool_to_codex("write_file"), "apply_patch");
    }
}
