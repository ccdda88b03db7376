//! What running one hook produced: the typed outcome from the runner and the interpreted record.

use std::time::Duration;

use serde_json::Value;

use crate::event::HookEventName;
use crate::failure::FailureKind;
use crate::model::Source;

/// Which captured stream a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamName {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl StreamName {
    /// `"stdout"` or `"stderr"`.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamName::Stdout => "stdout",
            StreamName::Stderr => "stderr",
        }
    }
}

/// Why a hook process could not be started, as far as the circuit breaker is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpawnCause {
    /// Something about the hook: its program or working directory is missing, it is not
    /// executable, its own memory limit is too small to start it, its worker keeps failing.
    #[default]
    Hook,
    /// hookd itself was short of a resource (`EMFILE`, `ENFILE`, `EAGAIN` from `fork`,
    /// `ENOMEM`): the hook was never tried, so its failure says nothing about it.
    DaemonResources,
}

/// How a hook run ended. Every failure mode is its own variant, never a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// The process exited by itself with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// The process was killed by a signal it did not get from hookd.
    Signalled {
        /// The signal number.
        signal: i32,
    },
    /// The hook outlived its timeout; its process group was terminated.
    TimedOut {
        /// The timeout that expired, in milliseconds.
        timeout_ms: u64,
    },
    /// A captured stream exceeded its cap (hookd's output caps). The process still ran to completion.
    OutputTooLarge {
        /// The stream that overflowed (stdout if both did).
        stream: StreamName,
        /// The cap in bytes.
        cap_bytes: usize,
        /// The exit code, if the process exited rather than being signalled.
        code: Option<i32>,
    },
    /// The process could not be started (missing cwd, no `bash`, resource limits, ...).
    SpawnFailed {
        /// Why, as the operating system said it.
        message: String,
        /// Whose trouble it was: the hook's, or hookd's own shortage of resources.
        cause: SpawnCause,
    },
    /// The run was cancelled (client gone, cancel request, shutdown).
    Cancelled,
    /// hookd refused to run the hook (e.g. a `runtime` hook from a file has no function).
    Refused {
        /// Why.
        message: String,
    },
}

impl HookOutcome {
    /// A stable machine-readable name for the outcome, used on the wire and in logs.
    pub fn kind(&self) -> &'static str {
        match self {
            HookOutcome::Exited { .. } => "exited",
            HookOutcome::Signalled { .. } => "signalled",
            HookOutcome::TimedOut { .. } => "timed_out",
            HookOutcome::OutputTooLarge { .. } => "output_too_large",
            HookOutcome::SpawnFailed { .. } => "spawn_failed",
            HookOutcome::Cancelled => "cancelled",
            HookOutcome::Refused { .. } => "refused",
        }
    }
}

/// The raw material of one hook run, as the runner captured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// How it ended.
    pub outcome: HookOutcome,
    /// Captured stdout (lossily decoded as UTF-8; a truncation marker appended when capped).
    pub stdout: String,
    /// Captured stderr (same rules).
    pub stderr: String,
    /// Wall-clock time from spawn to result.
    pub duration: Duration,
}

/// How a hook's output was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// The hook printed a JSON object (or array).
    Json,
    /// The hook printed plain text, turned into an output by the exit-code rules.
    Text,
}

impl OutputFormat {
    /// `"json"` or `"text"`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Json => "json",
            OutputFormat::Text => "text",
        }
    }
}

/// The per-hook record (spec §4.8): what the aggregator and the client see.
#[derive(Debug, Clone, PartialEq)]
pub struct HookResult {
    /// The hook's display name.
    pub name: String,
    /// The layer the hook came from.
    pub source: Source,
    /// The event that fired.
    pub event: HookEventName,
    /// `true` only when the hook exited 0 within its limits.
    pub success: bool,
    /// The parsed output object, if any.
    pub output: Option<Value>,
    /// How the output was given.
    pub output_format: Option<OutputFormat>,
    /// Captured stdout.
    pub stdout: String,
    /// Captured stderr.
    pub stderr: String,
    /// The exit code as Gemini CLI reports it (a signal reports 0; absent when never spawned).
    pub exit_code: Option<i32>,
    /// Wall-clock duration.
    pub duration: Duration,
    /// The error message, for failures that Gemini CLI reports as errors.
    pub error: Option<String>,
    /// The typed outcome.
    pub outcome: HookOutcome,
    /// Which way the run failed (hookd's failure policy), or `None` when it did not fail or was
    /// cancelled; see [`crate::policy`].
    pub failure: Option<FailureKind>,
    /// A note for the user that is not an error: the first run of an untrusted project hook
    /// under the `warn` trust policy says so here (hookd's project-hook trust).
    pub warning: Option<String>,
}
