//! The words of a hook's failure: its `on_failure` policy ([`FailurePolicy`]) and the ways
//! a run fails ([`FailureKind`]). What a failure then decides is [`crate::policy`]'s.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

/// What a failing hook decides: the value of its `on_failure` key, or the daemon's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FailurePolicy {
    /// Fail open: the failure does not change the hook's output (Gemini CLI's behaviour).
    #[default]
    Allow,
    /// Fail closed: the failure denies.
    Deny,
    /// The failure asks the user to confirm.
    Ask,
}

impl FailurePolicy {
    /// `"allow"`, `"deny"` or `"ask"`: the spelling in settings, on the command line and in
    /// the decision it produces.
    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Allow => "allow",
            FailurePolicy::Deny => "deny",
            FailurePolicy::Ask => "ask",
        }
    }

    /// Parses the exact lower-case spelling; anything else is `None`.
    pub fn parse(text: &str) -> Option<FailurePolicy> {
        match text {
            "allow" => Some(FailurePolicy::Allow),
            "deny" => Some(FailurePolicy::Deny),
            "ask" => Some(FailurePolicy::Ask),
            _ => None,
        }
    }
}

impl fmt::Display for FailurePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FailurePolicy {
    type Err = InvalidFailurePolicy;

    fn from_str(text: &str) -> Result<FailurePolicy, InvalidFailurePolicy> {
        FailurePolicy::parse(text).ok_or_else(|| InvalidFailurePolicy {
            found: Value::String(text.to_owned()).to_string(),
        })
    }
}

/// A failure policy that is not one of the three values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected \"allow\", \"deny\" or \"ask\", not {found}")]
pub struct InvalidFailurePolicy {
    /// The value found, as JSON (a string keeps its quotes).
    pub found: String,
}

/// Reads a hook entry's `on_failure` value: absent or `null` is `Ok(None)` (the daemon's
/// default applies); anything but one of the three strings is an error.
pub fn parse_on_failure(
    value: Option<&Value>,
) -> Result<Option<FailurePolicy>, InvalidFailurePolicy> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => text.parse().map(Some),
        Some(other) => Err(InvalidFailurePolicy {
            found: other.to_string(),
        }),
    }
}

/// Which way a hook run failed, for the per-hook record and the policy's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The process could not be started.
    SpawnFailed,
    /// hookd would not run the hook.
    Refused,
    /// The hook outlived its timeout.
    TimedOut,
    /// The process was killed by a signal hookd did not send.
    Signalled,
    /// A captured stream exceeded its cap.
    OutputTooLarge,
    /// The process exited non-zero without a JSON output carrying a string `decision`.
    ExitedWithoutDecision,
}

impl FailureKind {
    /// A stable machine-readable name, used on the wire and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::SpawnFailed => "spawn_failed",
            FailureKind::Refused => "refused",
            FailureKind::TimedOut => "timed_out",
            FailureKind::Signalled => "signalled",
            FailureKind::OutputTooLarge => "output_too_large",
            FailureKind::ExitedWithoutDecision => "exited_without_decision",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
