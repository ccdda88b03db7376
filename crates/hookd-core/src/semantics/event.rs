//! The hook events, their input fields, matcher kinds and merge strategies.
//!
//! Everything here is a static property of an event name as Gemini CLI defines it (spec §1.4,
//! §2, §4.4, §5). Other modules ask this one instead of matching on event names themselves.
//!
//! Besides Gemini CLI's eleven events, hookd holds Claude Code's events that have no Gemini
//! counterpart ([`ClaudeEvent`], `HookEventName::Claude`): a hook in hookd's files or a
//! Claude Code layer can be registered for `PermissionRequest` or `TaskCompleted`, and the
//! relay fires them by Claude Code's name. Their payload is Claude Code's own, their matcher
//! is applied to the field Claude Code matches on (`tool_name`, `agent_type`, `source`, ...;
//! [`HookEventName::matcher_field`]), and their outputs are OR-merged.

use std::fmt;
use std::str::FromStr;

/// A lifecycle event an agent CLI fires. Names are exact and case-sensitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEventName {
    /// Before a tool runs; may block it or rewrite its input.
    BeforeTool,
    /// After a tool ran; may block its result or add context.
    AfterTool,
    /// Once per user prompt, before the first model call.
    BeforeAgent,
    /// When a tool call needs the user's confirmation.
    Notification,
    /// Once per prompt when the agent finished.
    AfterAgent,
    /// Session startup, resume or clear.
    SessionStart,
    /// Session exit or clear.
    SessionEnd,
    /// Before a chat compression attempt.
    PreCompress,
    /// Before every model API call.
    BeforeModel,
    /// For every streamed model response chunk.
    AfterModel,
    /// Right after BeforeModel: may restrict the tools the model may call.
    BeforeToolSelection,
    /// One of Claude Code's events with no Gemini CLI counterpart.
    Claude(ClaudeEvent),
}

/// Claude Code's hook events that Gemini CLI has no counterpart for (Claude Code 2.1.33x).
/// The other nine (`PreToolUse`, `Stop`, ...) are fired as their Gemini events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaudeEvent {
    /// A tool call failed.
    PostToolUseFailure,
    /// After every tool call of one model turn ran.
    PostToolBatch,
    /// Claude Code is about to show a permission dialog.
    PermissionRequest,
    /// The auto-mode classifier denied a tool call.
    PermissionDenied,
    /// A slash command or skill is about to expand into a prompt.
    UserPromptExpansion,
    /// A turn ended with an API error.
    StopFailure,
    /// A subagent was started.
    SubagentStart,
    /// `claude --init` / `--maintenance`.
    Setup,
    /// After a compaction.
    PostCompact,
    /// Before the model is switched.
    PreModelSwitch,
    /// After the model was switched.
    PostModelSwitch,
    /// An MCP server asks the user for input.
    Elicitation,
    /// The user answered an MCP elicitation.
    ElicitationResult,
    /// A settings or skills file changed during the session.
    ConfigChange,
    /// A CLAUDE.md or rules file was loaded.
    InstructionsLoaded,
    /// A directory was added to the session.
    DirectoryAdded,
    /// The working directory changed.
    CwdChanged,
    /// A watched file changed.
    FileChanged,
    /// A worktree is to be created.
    WorktreeCreate,
    /// A worktree is to be removed.
    WorktreeRemove,
    /// A teammate of an agent team is about to go idle.
    TeammateIdle,
    /// A task is being created.
    TaskCreated,
    /// A task is being marked completed.
    TaskCompleted,
    /// A message is about to be displayed.
    MessageDisplay,
    /// A skill's shell command is about to run (Claude Code 2.1.332 and later).
    PreSkillShellCommand,
}

impl ClaudeEvent {
    /// Every Claude-only event, in Claude Code's order.
    pub const ALL: [ClaudeEvent; 25] = [
        ClaudeEvent::PostToolUseFailure,
        ClaudeEvent::PostToolBatch,
        ClaudeEvent::PermissionRequest,
        ClaudeEvent::PermissionDenied,
        ClaudeEvent::UserPromptExpansion,
        ClaudeEvent::StopFailure,
        ClaudeEvent::SubagentStart,
        ClaudeEvent::Setup,
        ClaudeEvent::PostCompact,
        ClaudeEvent::PreModelSwitch,
        ClaudeEvent::PostModelSwitch,
        ClaudeEvent::Elicitation,
        ClaudeEvent::ElicitationResult,
        ClaudeEvent::ConfigChange,
        ClaudeEvent::InstructionsLoaded,
        ClaudeEvent::DirectoryAdded,
        ClaudeEvent::CwdChanged,
        ClaudeEvent::FileChanged,
        ClaudeEvent::WorktreeCreate,
        ClaudeEvent::WorktreeRemove,
        ClaudeEvent::TeammateIdle,
        ClaudeEvent::TaskCreated,
        ClaudeEvent::TaskCompleted,
        ClaudeEvent::MessageDisplay,
        ClaudeEvent::PreSkillShellCommand,
    ];

    /// Claude Code's name of the event.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaudeEvent::PostToolUseFailure => "PostToolUseFailure",
            ClaudeEvent::PostToolBatch => "PostToolBatch",
            ClaudeEvent::PermissionRequest => "PermissionRequest",
            ClaudeEvent::PermissionDenied => "PermissionDenied",
            ClaudeEvent::UserPromptExpansion => "UserPromptExpansion",
            ClaudeEvent::StopFailure => "StopFailure",
            ClaudeEvent::SubagentStart => "SubagentStart",
            ClaudeEvent::Setup => "Setup",
            ClaudeEvent::PostCompact => "PostCompact",
            ClaudeEvent::PreModelSwitch => "PreModelSwitch",
            ClaudeEvent::PostModelSwitch => "PostModelSwitch",
            ClaudeEvent::Elicitation => "Elicitation",
            ClaudeEvent::ElicitationResult => "ElicitationResult",
            ClaudeEvent::ConfigChange => "ConfigChange",
            ClaudeEvent::InstructionsLoaded => "InstructionsLoaded",
            ClaudeEvent::DirectoryAdded => "DirectoryAdded",
            ClaudeEvent::CwdChanged => "CwdChanged",
            ClaudeEvent::FileChanged => "FileChanged",
            ClaudeEvent::WorktreeCreate => "WorktreeCreate",
            ClaudeEvent::WorktreeRemove => "WorktreeRemove",
            ClaudeEvent::TeammateIdle => "TeammateIdle",
            ClaudeEvent::TaskCreated => "TaskCreated",
            ClaudeEvent::TaskCompleted => "TaskCompleted",
            ClaudeEvent::MessageDisplay => "MessageDisplay",
            ClaudeEvent::PreSkillShellCommand => "PreSkillShellCommand",
        }
    }

    /// The Claude-only event of that (case-sensitive) name.
    pub fn parse(name: &str) -> Option<ClaudeEvent> {
        ClaudeEvent::ALL
            .into_iter()
            .find(|event| event.as_str() == name)
    }

    /// The input field Claude Code applies the event's matcher to; `None` where it ignores
    /// matchers.
    pub fn matcher_field(self) -> Option<&'static str> {
        Some(match self {
            ClaudeEvent::PostToolUseFailure
            | ClaudeEvent::PermissionRequest
            | ClaudeEvent::PermissionDenied
            | ClaudeEvent::PreSkillShellCommand => "tool_name",
            ClaudeEvent::UserPromptExpansion => "command_name",
            ClaudeEvent::StopFailure => "error",
            ClaudeEvent::SubagentStart => "agent_type",
            ClaudeEvent::Setup | ClaudeEvent::PostCompact => "trigger",
            ClaudeEvent::PreModelSwitch | ClaudeEvent::PostModelSwitch => "to_model",
            ClaudeEvent::Elicitation | ClaudeEvent::ElicitationResult => "mcp_server_name",
            ClaudeEvent::ConfigChange | ClaudeEvent::DirectoryAdded => "source",
            ClaudeEvent::InstructionsLoaded => "load_reason",
            ClaudeEvent::FileChanged => "file_path",
            ClaudeEvent::PostToolBatch
            | ClaudeEvent::CwdChanged
            | ClaudeEvent::WorktreeCreate
            | ClaudeEvent::WorktreeRemove
            | ClaudeEvent::TeammateIdle
            | ClaudeEvent::TaskCreated
            | ClaudeEvent::TaskCompleted
            | ClaudeEvent::MessageDisplay => return None,
        })
    }

    /// Whether a hook's exit code 2 (or `decision: "block"`) blocks what the event is about,
    /// as Claude Code documents it; for the others stderr is only shown to the user.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            ClaudeEvent::PermissionRequest
                | ClaudeEvent::UserPromptExpansion
                | ClaudeEvent::PostToolUseFailure
                | ClaudeEvent::PostToolBatch
                | ClaudeEvent::PreModelSwitch
                | ClaudeEvent::Elicitation
                | ClaudeEvent::ElicitationResult
                | ClaudeEvent::ConfigChange
                | ClaudeEvent::WorktreeCreate
                | ClaudeEvent::TeammateIdle
                | ClaudeEvent::TaskCreated
                | ClaudeEvent::TaskCompleted
                | ClaudeEvent::PreSkillShellCommand
        )
    }
}

impl fmt::Display for ClaudeEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an event's matcher string is applied (spec §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatcherKind {
    /// The matcher is a JavaScript regular expression searched in the tool name.
    ToolName,
    /// The matcher must equal the event's trigger string exactly (after trimming).
    Trigger,
    /// The matcher is ignored: every hook of the event matches.
    Ignored,
}

/// How the outputs of several hooks of one event are merged (spec §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeStrategy {
    /// §5.1: OR-merge of decisions, concatenated messages and contexts.
    OrMerge,
    /// §5.2: later hooks replace earlier fields.
    FieldReplacement,
    /// §5.3: union of tool configs.
    ToolSelection,
    /// §5.4: plain last-wins shallow merge.
    Simple,
}

impl HookEventName {
    /// All events, in the order Gemini CLI's settings schema lists them.
    pub const ALL: [HookEventName; 11] = [
        HookEventName::BeforeTool,
        HookEventName::AfterTool,
        HookEventName::BeforeAgent,
        HookEventName::Notification,
        HookEventName::AfterAgent,
        HookEventName::SessionStart,
        HookEventName::SessionEnd,
        HookEventName::PreCompress,
        HookEventName::BeforeModel,
        HookEventName::AfterModel,
        HookEventName::BeforeToolSelection,
    ];

    /// The event's exact name as it appears in settings files and payloads.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEventName::BeforeTool => "BeforeTool",
            HookEventName::AfterTool => "AfterTool",
            HookEventName::BeforeAgent => "BeforeAgent",
            HookEventName::Notification => "Notification",
            HookEventName::AfterAgent => "AfterAgent",
            HookEventName::SessionStart => "SessionStart",
            HookEventName::SessionEnd => "SessionEnd",
            HookEventName::PreCompress => "PreCompress",
            HookEventName::BeforeModel => "BeforeModel",
            HookEventName::AfterModel => "AfterModel",
            HookEventName::BeforeToolSelection => "BeforeToolSelection",
            HookEventName::Claude(event) => event.as_str(),
        }
    }

    /// Every event hookd holds: Gemini CLI's eleven, then Claude Code's own.
    pub fn all() -> impl Iterator<Item = HookEventName> {
        HookEventName::ALL
            .into_iter()
            .chain(ClaudeEvent::ALL.into_iter().map(HookEventName::Claude))
    }

    /// The Claude-only event this is, if it is one.
    pub fn claude_only(self) -> Option<ClaudeEvent> {
        match self {
            HookEventName::Claude(event) => Some(event),
            _ => None,
        }
    }

    /// The input field a [`MatcherKind::ToolName`] matcher is searched in: `tool_name` for
    /// Gemini's tool events, the field Claude Code matches on for its own events.
    pub fn matcher_field(self) -> Option<&'static str> {
        match self {
            HookEventName::BeforeTool | HookEventName::AfterTool => Some("tool_name"),
            HookEventName::Claude(event) => event.matcher_field(),
            _ => None,
        }
    }

    /// How this event applies matchers.
    pub fn matcher_kind(self) -> MatcherKind {
        match self {
            HookEventName::BeforeTool | HookEventName::AfterTool => MatcherKind::ToolName,
            HookEventName::Claude(event) if event.matcher_field().is_some() => {
                MatcherKind::ToolName
            }
            HookEventName::SessionStart
            | HookEventName::SessionEnd
            | HookEventName::PreCompress => MatcherKind::Trigger,
            _ => MatcherKind::Ignored,
        }
    }

    /// The input field whose value is the trigger for [`MatcherKind::Trigger`] events.
    pub fn trigger_field(self) -> Option<&'static str> {
        match self {
            HookEventName::SessionStart => Some("source"),
            HookEventName::SessionEnd => Some("reason"),
            HookEventName::PreCompress => Some("trigger"),
            _ => None,
        }
    }

    /// The event-specific input fields, in the order Gemini CLI serialises them (spec §4.4),
    /// followed by hookd's own additions (chunk text for AfterModel).
    pub fn input_fields(self) -> &'static [&'static str] {
        match self {
            HookEventName::BeforeTool => &[
                "tool_name",
                "tool_input",
                "mcp_context",
                "original_request_name",
            ],
            HookEventName::AfterTool => &[
                "tool_name",
                "tool_input",
                "tool_response",
                "mcp_context",
                "original_request_name",
            ],
            HookEventName::BeforeAgent => &["prompt"],
            HookEventName::AfterAgent => &["prompt", "prompt_response", "stop_hook_active"],
            HookEventName::Notification => &["notification_type", "message", "details"],
            HookEventName::SessionStart => &["source"],
            HookEventName::SessionEnd => &["reason"],
            HookEventName::PreCompress => &["trigger"],
            HookEventName::BeforeModel => &["llm_request"],
            HookEventName::AfterModel => {
                &["llm_request", "llm_response", "content", "full_content"]
            }
            HookEventName::BeforeToolSelection => &["llm_request"],
            // Claude Code's payload is passed as it is.
            HookEventName::Claude(_) => &[],
        }
    }

    /// How outputs of this event are merged.
    pub fn merge_strategy(self) -> MergeStrategy {
        match self {
            HookEventName::BeforeTool
            | HookEventName::AfterTool
            | HookEventName::BeforeAgent
            | HookEventName::AfterAgent
            | HookEventName::SessionStart
            | HookEventName::Claude(_) => MergeStrategy::OrMerge,
            HookEventName::BeforeModel | HookEventName::AfterModel => {
                MergeStrategy::FieldReplacement
            }
            HookEventName::BeforeToolSelection => MergeStrategy::ToolSelection,
            HookEventName::Notification
            | HookEventName::SessionEnd
            | HookEventName::PreCompress => MergeStrategy::Simple,
        }
    }
}

impl fmt::Display for HookEventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a string that is not an event name hookd holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook event name {0:?}")]
pub struct UnknownEvent(pub String);

impl FromStr for HookEventName {
    type Err = UnknownEvent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HookEventName::ALL
            .into_iter()
            .find(|event| event.as_str() == s)
            .or_else(|| ClaudeEvent::parse(s).map(HookEventName::Claude))
            .ok_or_else(|| UnknownEvent(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_case_sensitive() {
        for event in HookEventName::ALL {
            assert_eq!(event.as_str().parse::<HookEventName>(), Ok(event));
        }
        assert!("beforetool".parse::<HookEventName>().is_err());
        assert!("BeforeTool ".parse::<HookEventName>().is_err());
        // Claude Code's names of Gemini's events are not hookd's names for them.
        assert!("PreToolUse".parse::<HookEventName>().is_err());
        assert!("Stop".parse::<HookEventName>().is_err());
        for event in ClaudeEvent::ALL {
            assert_eq!(
                event.as_str().parse::<HookEventName>(),
                Ok(HookEventName::Claude(event))
            );
        }
        assert_eq!(HookEventName::all().count(), 36);
        assert!("permissionrequest".parse::<HookEventName>().is_err());
    }

    #[test]
    fn claude_events_match_on_claude_codes_field() {
        // (event, matcher field, matcher kind)
        let cases = [
            (
                "PermissionRequest",
                Some("tool_name"),
                MatcherKind::ToolName,
            ),
            (
                "PostToolUseFailure",
                Some("tool_name"),
                MatcherKind::ToolName,
            ),
            ("SubagentStart", Some("agent_type"), MatcherKind::ToolName),
            ("ConfigChange", Some("source"), MatcherKind::ToolName),
            ("FileChanged", Some("file_path"), MatcherKind::ToolName),
            ("PreModelSwitch", Some("to_model"), MatcherKind::ToolName),
            ("TaskCompleted", None, MatcherKind::Ignored),
            ("CwdChanged", None, MatcherKind::Ignored),
        ];
        for (name, field, kind) in cases {
            let event: HookEventName = name.parse().expect(name);
            assert_eq!(event.matcher_field(), field, "{name}");
            assert_eq!(event.matcher_kind(), kind, "{name}");
            assert_eq!(event.merge_strategy(), MergeStrategy::OrMerge, "{name}");
        }
    }

    #[test]
    fn matcher_kinds_follow_spec_table() {
        let cases = [
            (HookEventName::BeforeTool, MatcherKind::ToolName),
            (HookEventName::AfterTool, MatcherKind::ToolName),
            (HookEventName::SessionStart, MatcherKind::Trigger),
            (HookEventName::SessionEnd, MatcherKind::Trigger),
            (HookEventName::PreCompress, MatcherKind::Trigger),
            (HookEventName::Notification, MatcherKind::Ignored),
            (HookEventName::BeforeAgent, MatcherKind::Ignored),
            (HookEventName::AfterAgent, MatcherKind::Ignored),
            (HookEventName::BeforeModel, MatcherKind::Ignored),
            (HookEventName::AfterModel, MatcherKind::Ignored),
            (HookEventName::BeforeToolSelection, MatcherKind::Ignored),
        ];
        for (event, kind) in cases {
            assert_eq!(event.matcher_kind(), kind, "{event}");
        }
    }
}
