//! The hook events, their input fields, matcher kinds and merge strategies.
//!
//! Everything here is a static property of an event name as Gemini CLI defines it (spec §1.4,
//! §2, §4.4, §5). Other modules ask this one instead of matching on event names themselves.
//!
//! Besides Gemini CLI's eleven events, hookd holds the events of a host's own that have no
//! Gemini counterpart ([`HostEvent`], `HookEventName::Host`), each declared by its host's
//! dialect ([`HostEventSpec`]): a hook in hookd's files or a Claude Code layer can be
//! registered for Claude Code's `PermissionRequest` or `TaskCompleted`, and the relay fires
//! them by the host's name. Their payload is the host's own, their matcher is applied to the
//! field the host matches on (`tool_name`, `agent_type`, `source`, ...;
//! [`HookEventName::matcher_field`]), and their outputs are OR-merged. Which names are
//! events ([`HookEventName`]'s `FromStr`, `HookEventName::all`) is answered where the hosts
//! are known, in the dialect room.

use std::fmt;

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
    /// An event of one host's own with no Gemini CLI counterpart (Claude Code's
    /// `PermissionRequest`, ...).
    Host(HostEvent),
}

/// The declaration of an event of one host's own, which Gemini CLI has no counterpart for
/// (Claude Code's `PermissionRequest`, ...): made by the host's dialect, in the list it gives
/// (`dialect::HostRelay::own_events`), so that the event model needs no knowledge of hosts.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct HostEventSpec {
    /// The host's dialect name (`"claude"`).
    pub host: &'static str,
    /// The event as the host names it, which is also hookd's name for it on the wire, in
    /// settings and in records (`"PermissionRequest"`).
    pub name: &'static str,
    /// The input field the host applies the event's matcher to; `None` where it ignores
    /// matchers.
    pub matcher_field: Option<&'static str>,
    /// Whether a hook's exit code 2 (or `decision: "block"`) blocks what the event is about,
    /// as the host documents it; for the others stderr is only shown to the user.
    pub can_block: bool,
}

/// One host's own event ([`HostEventSpec`]): a `Copy` handle, compared, hashed and ordered by
/// host and name.
#[derive(Clone, Copy)]
pub struct HostEvent(&'static HostEventSpec);

impl HostEvent {
    /// The handle on `spec`.
    pub const fn new(spec: &'static HostEventSpec) -> HostEvent {
        HostEvent(spec)
    }

    /// The host's dialect name.
    pub fn host(self) -> &'static str {
        self.0.host
    }

    /// The event's name.
    pub fn as_str(self) -> &'static str {
        self.0.name
    }

    /// The input field the host applies the event's matcher to, if any.
    pub fn matcher_field(self) -> Option<&'static str> {
        self.0.matcher_field
    }

    /// Whether a hook can block what the event is about.
    pub fn can_block(self) -> bool {
        self.0.can_block
    }

    fn key(self) -> (&'static str, &'static str) {
        (self.0.host, self.0.name)
    }
}

impl PartialEq for HostEvent {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for HostEvent {}

impl std::hash::Hash for HostEvent {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl PartialOrd for HostEvent {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HostEvent {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl fmt::Debug for HostEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for HostEvent {
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
            HookEventName::Host(event) => event.as_str(),
        }
    }

    /// The host's own event this is, if it is one.
    pub fn host_only(self) -> Option<HostEvent> {
        match self {
            HookEventName::Host(event) => Some(event),
            _ => None,
        }
    }

    /// The input field a [`MatcherKind::ToolName`] matcher is searched in: `tool_name` for
    /// Gemini's tool events, the field the host matches on for a host's own events.
    pub fn matcher_field(self) -> Option<&'static str> {
        match self {
            HookEventName::BeforeTool | HookEventName::AfterTool => Some("tool_name"),
            HookEventName::Host(event) => event.matcher_field(),
            _ => None,
        }
    }

    /// How this event applies matchers.
    pub fn matcher_kind(self) -> MatcherKind {
        match self {
            HookEventName::BeforeTool | HookEventName::AfterTool => MatcherKind::ToolName,
            HookEventName::Host(event) if event.matcher_field().is_some() => MatcherKind::ToolName,
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
            // The host's payload is passed as it is.
            HookEventName::Host(_) => &[],
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
            | HookEventName::Host(_) => MergeStrategy::OrMerge,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_own_event_is_what_its_declaration_says() {
        // Declarations as a host's dialect makes them: the event model knows no host.
        static OWN: [HostEventSpec; 3] = [
            HostEventSpec {
                host: "one",
                name: "Picked",
                matcher_field: Some("item"),
                can_block: true,
            },
            HostEventSpec {
                host: "one",
                name: "Idle",
                matcher_field: None,
                can_block: false,
            },
            HostEventSpec {
                host: "two",
                name: "Picked",
                matcher_field: None,
                can_block: false,
            },
        ];
        let [picked, idle, other] = [0, 1, 2].map(|i| HookEventName::Host(HostEvent::new(&OWN[i])));
        // (event, name, matcher field, matcher kind)
        let cases = [
            (picked, "Picked", Some("item"), MatcherKind::ToolName),
            (idle, "Idle", None, MatcherKind::Ignored),
            (other, "Picked", None, MatcherKind::Ignored),
        ];
        for (event, name, field, kind) in cases {
            assert_eq!(event.as_str(), name);
            assert_eq!(event.to_string(), name);
            assert_eq!(event.matcher_field(), field, "{name}");
            assert_eq!(event.matcher_kind(), kind, "{name}");
            assert_eq!(event.merge_strategy(), MergeStrategy::OrMerge, "{name}");
            assert!(event.input_fields().is_empty(), "{name}");
            assert!(event.host_only().is_some(), "{name}");
        }
        // Two hosts' events of one name are two events; a copy of a declaration is the same.
        assert_ne!(picked, other);
        static COPY: HostEventSpec = HostEventSpec {
            host: "one",
            name: "Picked",
            matcher_field: Some("item"),
            can_block: true,
        };
        assert_eq!(picked, HookEventName::Host(HostEvent::new(&COPY)));
        assert_eq!(picked.host_only().map(HostEvent::host), Some("one"));
        assert!(HookEventName::BeforeTool.host_only().is_none());
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
