//! What each Claude Code event accepts from a hook, read from the output schemas Claude Code
//! 2.1.328 ships: its `hookSpecificOutput` fields, how a block is said, and whether plain
//! stdout after exit 0 means something.

/// The `hookSpecificOutput` fields Claude Code defines for `claude_event` (besides
/// `hookEventName`). Claude Code rejects an answer with fields its event does not define, so
/// hookd never sends others.
pub fn claude_specific_fields(claude_event: &str) -> &'static [&'static str] {
    match claude_event {
        "PreToolUse" | "PreSkillShellCommand" => &[
            "permissionDecision",
            "permissionDecisionReason",
            "updatedInput",
            "additionalContext",
        ],
        "PostToolUse" => &[
            "additionalContext",
            "updatedToolOutput",
            "updatedMCPToolOutput",
        ],
        "UserPromptSubmit" => &[
            "additionalContext",
            "sessionTitle",
            "suppressOriginalPrompt",
        ],
        "UserPromptExpansion" => &["additionalContext", "suppressOriginalPrompt"],
        "SessionStart" => &[
            "additionalContext",
            "initialUserMessage",
            "sessionTitle",
            "watchPaths",
            "reloadSkills",
        ],
        "PostToolUseFailure" | "PostToolBatch" | "Stop" | "SubagentStop" | "SubagentStart"
        | "Setup" | "Notification" | "PostModelSwitch" => &["additionalContext"],
        "PermissionRequest" => &["decision"],
        "PermissionDenied" => &["retry"],
        "PreModelSwitch" => &["permissionDecision", "permissionDecisionReason"],
        "Elicitation" | "ElicitationResult" => &["action", "content"],
        "CwdChanged" | "FileChanged" => &["watchPaths"],
        "MessageDisplay" => &["displayContent"],
        "WorktreeCreate" => &["worktreePath"],
        _ => &[],
    }
}

/// How Claude Code lets a hook block what `claude_event` is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockStyle {
    /// `hookSpecificOutput.permissionDecision: "deny"` with `permissionDecisionReason`.
    PermissionDecision,
    /// `hookSpecificOutput.decision: {"behavior": "deny", "message"}`.
    PermissionRequest,
    /// The top-level `decision: "block"` with `reason`.
    Decision,
    /// Only exit code 2, with the reason on stderr.
    ExitCode,
    /// The event cannot be blocked: exit 2 only shows stderr to the user.
    None,
}

/// How a block is said for `claude_event` (Claude Code's hooks reference, "decision control").
pub fn claude_block_style(claude_event: &str) -> BlockStyle {
    match claude_event {
        "PreToolUse" | "PreSkillShellCommand" | "PreModelSwitch" => BlockStyle::PermissionDecision,
        "PermissionRequest" => BlockStyle::PermissionRequest,
        "PostToolUse"
        | "PostToolUseFailure"
        | "PostToolBatch"
        | "UserPromptSubmit"
        | "UserPromptExpansion"
        | "Stop"
        | "SubagentStop"
        | "ConfigChange" => BlockStyle::Decision,
        "PreCompact" | "TeammateIdle" | "TaskCreated" | "TaskCompleted" | "WorktreeCreate"
        | "Elicitation" | "ElicitationResult" => BlockStyle::ExitCode,
        _ => BlockStyle::None,
    }
}

/// What plain (non-JSON) stdout after exit 0 is for `claude_event`: the field of
/// `hookSpecificOutput` it fills, where it is more than transcript text.
pub fn claude_plain_stdout_field(claude_event: &str) -> Option<&'static str> {
    match claude_event {
        "UserPromptSubmit" | "UserPromptExpansion" | "SessionStart" | "Setup" => {
            Some("additionalContext")
        }
        "WorktreeCreate" => Some("worktreePath"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::claude::CLAUDE_OWN_EVENTS;

    #[test]
    fn every_claude_event_has_an_answer_shape() {
        // (event, specific fields, block style, plain stdout)
        let cases: [(&str, &[&str], BlockStyle, Option<&str>); 13] = [
            (
                "PreToolUse",
                &[
                    "permissionDecision",
                    "permissionDecisionReason",
                    "updatedInput",
                    "additionalContext",
                ],
                BlockStyle::PermissionDecision,
                None,
            ),
            (
                "PermissionRequest",
                &["decision"],
                BlockStyle::PermissionRequest,
                None,
            ),
            (
                "PostToolUse",
                &[
                    "additionalContext",
                    "updatedToolOutput",
                    "updatedMCPToolOutput",
                ],
                BlockStyle::Decision,
                None,
            ),
            (
                "PostToolUseFailure",
                &["additionalContext"],
                BlockStyle::Decision,
                None,
            ),
            ("PermissionDenied", &["retry"], BlockStyle::None, None),
            (
                "WorktreeCreate",
                &["worktreePath"],
                BlockStyle::ExitCode,
                Some("worktreePath"),
            ),
            ("TaskCompleted", &[], BlockStyle::ExitCode, None),
            ("ConfigChange", &[], BlockStyle::Decision, None),
            ("StopFailure", &[], BlockStyle::None, None),
            (
                "MessageDisplay",
                &["displayContent"],
                BlockStyle::None,
                None,
            ),
            (
                "PreModelSwitch",
                &["permissionDecision", "permissionDecisionReason"],
                BlockStyle::PermissionDecision,
                None,
            ),
            (
                "SessionStart",
                &[
                    "additionalContext",
                    "initialUserMessage",
                    "sessionTitle",
                    "watchPaths",
                    "reloadSkills",
                ],
                BlockStyle::None,
                Some("additionalContext"),
            ),
            ("Unknown", &[], BlockStyle::None, None),
        ];
        for (event, fields, style, plain) in cases {
            assert_eq!(claude_specific_fields(event), fields, "{event}");
            assert_eq!(claude_block_style(event), style, "{event}");
            assert_eq!(claude_plain_stdout_field(event), plain, "{event}");
        }
        // Every Claude-only event that blocks says how.
        for event in &CLAUDE_OWN_EVENTS {
            assert_eq!(
                event.can_block,
                claude_block_style(event.name) != BlockStyle::None,
                "{}",
                event.name
            );
        }
    }
}
