//! The eleven hook events, their input fields, matcher kinds and merge strategies.
//!
//! Everything here is a static property of an event name as Gemini CLI defines it (spec §1.4,
//! §2, §4.4, §5). Other modules ask this one instead of matching on event names themselves.

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
        }
    }

    /// How this event applies matchers.
    pub fn matcher_kind(self) -> MatcherKind {
        match self {
            HookEventName::BeforeTool | HookEventName::AfterTool => MatcherKind::ToolName,
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
    /// followed by hookd's own additions (D6 for AfterModel).
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
        }
    }

    /// How outputs of this event are merged.
    pub fn merge_strategy(self) -> MergeStrategy {
        match self {
            HookEventName::BeforeTool
            | HookEventName::AfterTool
            | HookEventName::BeforeAgent
            | HookEventName::AfterAgent
            | HookEventName::SessionStart => MergeStrategy::OrMerge,
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

/// The error for a string that is not one of the eleven event names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook event name {0:?}")]
pub struct UnknownEvent(pub String);

impl FromStr for HookEventName {
    type Err = UnknownEvent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HookEventName::ALL
            .into_iter()
            .find(|event| event.as_str() == s)
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
        assert!("PreToolUse".parse::<HookEventName>().is_err());
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
