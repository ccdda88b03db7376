//! The types of the host interface that belong to no one host: how a host's settings convert
//! into hookd's (`HostFiles::convert_settings`) and why a host's stdin cannot be translated
//! (`HostRelay::relay_input`).

use std::fmt;

use serde_json::{Map, Value};

/// What the converted hooks are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A settings layer hookd runs as Claude wrote it: every hook is marked `"dialect":
    /// "claude"` (it reads Claude payloads and answers in Claude's fields) and carries its
    /// Claude event as `claude_event` and, for Notification and SubagentStop, its matcher as
    /// `claude_matcher` (see [`super::claude::claude_hook_applies`]). `$CLAUDE_PROJECT_DIR` keeps its
    /// name.
    Layer,
    /// Plain Gemini CLI hooks for the user to adapt (`hookctl migrate --from-claude`):
    /// `$CLAUDE_PROJECT_DIR` becomes `${GEMINI_PROJECT_DIR}`; a Notification hook whose
    /// matcher does not select permission prompts, which Gemini CLI would run for every
    /// permission prompt, and hookd's own relay entries are left out; a SubagentStop
    /// matcher is reported as lost.
    Migrate,
}

/// Whether a problem cost a hook or only changed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// The entry is not in the converted hooks.
    Skipped,
    /// The entry was converted, but behaves differently from Claude Code in the way the
    /// message says.
    Changed,
}

/// One entry that could not be converted as it was, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionProblem {
    /// Where in the Claude settings, like `hooks.PreToolUse[0].hooks[1]`.
    pub location: String,
    /// Whether the entry was left out or converted with a difference.
    pub kind: ProblemKind,
    /// What happened, as a sentence.
    pub message: String,
}

impl fmt::Display for ConversionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ProblemKind::Skipped => "not converted",
            ProblemKind::Changed => "converted with a change",
        };
        write!(f, "{}: {what}: {}", self.location, self.message)
    }
}

/// Claude Code hooks in Gemini CLI's form, and what did not convert cleanly.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conversion {
    /// The Gemini `hooks` object: Gemini event → list of definitions.
    pub hooks: Map<String, Value>,
    /// Every entry that was left out or changed, in file order.
    pub problems: Vec<ConversionProblem>,
}

impl Conversion {
    /// How many hook definitions the Gemini `hooks` object holds.
    pub fn definition_count(&self) -> usize {
        self.hooks
            .values()
            .filter_map(Value::as_array)
            .map(Vec::len)
            .sum()
    }

    /// The problems of one kind.
    pub fn problems_of(&self, kind: ProblemKind) -> impl Iterator<Item = &ConversionProblem> {
        self.problems
            .iter()
            .filter(move |problem| problem.kind == kind)
    }

    pub(crate) fn problem(
        &mut self,
        location: impl Into<String>,
        kind: ProblemKind,
        message: impl Into<String>,
    ) {
        self.problems.push(ConversionProblem {
            location: location.into(),
            kind,
            message: message.into(),
        });
    }
}

/// Why a host's stdin object cannot be translated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DialectError {
    /// `hook_event_name` is missing or not a string.
    #[error("the input has no hook_event_name string")]
    MissingEventName,
    /// The host's event has no counterpart in hookd.
    #[error("{host}'s {event} event has no counterpart in hookd")]
    UnknownEvent {
        /// The host's product name (`Host::PRODUCT`), such as `Codex CLI`.
        host: &'static str,
        /// The event as the host names it.
        event: String,
    },
    /// A field the event needs has the wrong type.
    #[error("{field} must be {expected}")]
    InvalidField {
        /// The field, such as `tool_name`.
        field: &'static str,
        /// What it must be, such as `a string`.
        expected: &'static str,
    },
}
