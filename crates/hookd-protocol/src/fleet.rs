//! What `status`, `stats` and `doctor` tell about the parts of hookd that reach past one
//! machine: the administrator's managed hooks file and the OpenTelemetry export
//! (`docs/fleet.md`).

use serde::{Deserialize, Serialize};

/// The managed hooks file in `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagedStatus {
    /// The file hookd looks for (`/etc/hookd/hooks.json` or `HOOKD_MANAGED_HOOKS`).
    pub path: String,
    /// `loaded`, `absent` (nothing to load) or `refused` (it exists but root alone could not
    /// have written it, or it could not be read; see `reason`).
    pub state: String,
    /// Why it was refused, for `refused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The OpenTelemetry export in `status` and `stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TelemetryStatus {
    /// Where traces, metrics and logs go (their endpoints, comma-separated when they
    /// differ).
    pub endpoint: String,
    /// The OTLP protocol, `http/protobuf`.
    pub protocol: String,
    /// Records waiting in the export queue now.
    pub queued: u64,
    /// The queue's capacity: a record that finds it full is dropped and counted.
    pub capacity: u64,
    /// Records handed to the export queue since start.
    pub recorded: u64,
    /// Records dropped because the queue was full (a slow or unreachable collector).
    pub dropped: u64,
    /// Spans sent to the collector and accepted.
    pub spans_exported: u64,
    /// Log records sent and accepted.
    pub logs_exported: u64,
    /// Metric exports sent and accepted.
    pub metric_exports: u64,
    /// Exports that failed (refused, timed out, unreachable); their records are lost.
    pub failed_exports: u64,
    /// The error of the most recent failed export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}
