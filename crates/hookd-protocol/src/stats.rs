//! The `stats` answer: what the daemon has run since it started, per hook, per event, per
//! client and per relaying host.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::RequestId;

/// The answer to a `stats` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsResponse {
    /// The `stats` request's id.
    pub id: RequestId,
    /// Time since the daemon started, in milliseconds: every counter counts from then.
    pub uptime_ms: u64,
    /// Event requests answered, with or without hooks (as in `status`).
    pub events_served: u64,
    /// One entry per hook that ran, by event, name and layer, in the order they first ran.
    pub hooks: Vec<HookStats>,
    /// One entry per event that ran hooks, in the order they first ran.
    pub events: Vec<EventStats>,
    /// One entry per client name that connected.
    pub clients: Vec<ClientStats>,
    /// Events relayed by each host's relay (`gemini`, `claude`).
    pub relays: Vec<RelayStats>,
    /// Hooks whose runs were not kept apart because the table was full; they are counted in
    /// their events only.
    #[serde(default)]
    pub hooks_untracked: u64,
    /// Background runs (async hooks, detached events); `None` from daemons that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<crate::BackgroundStatus>,
    /// The circuit breaker and the hooks it has paused; `None` from daemons that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<crate::BreakerStatus>,
    /// The OpenTelemetry export (its queue and drops); `None` when it is off (or the daemon
    /// predates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Box<crate::TelemetryStatus>>,
}

/// What one hook did since start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookStats {
    /// The event it ran for.
    pub event: String,
    /// Its display name.
    pub name: String,
    /// The layer it came from (`project`, `user`, ...).
    pub source: String,
    /// How many times it ran (cancelled runs included).
    pub runs: u64,
    /// Runs that failed, any way.
    pub failures: u64,
    /// Failed runs by kind (`timed_out`, `spawn_failed`, `signalled`, `refused`,
    /// `output_too_large`, `exited_without_decision`).
    pub failures_by_kind: BTreeMap<String, u64>,
    /// Runs that outlived their timeout (also in `failures_by_kind.timed_out`).
    pub timeouts: u64,
    /// Runs by the decision the hook gave (`allow`, `deny`, ...; `ok` for a run without one).
    pub decisions: BTreeMap<String, u64>,
    /// Median duration, in milliseconds, over its most recent runs (up to 1024).
    pub p50_ms: f64,
    /// 99th-percentile duration, in milliseconds, over the same runs.
    pub p99_ms: f64,
    /// The longest run since start, in milliseconds.
    pub max_ms: f64,
    /// The error of its most recent failed run.
    pub last_error: Option<String>,
}

/// What one event's runs did since start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventStats {
    /// The event.
    pub event: String,
    /// Runs that had at least one hook.
    pub runs: u64,
    /// Runs with at least one failed hook.
    pub failed_runs: u64,
    /// Runs by final decision (`allow`, `deny`, `block`, `ask`, `stop`, or `none`).
    pub decisions: BTreeMap<String, u64>,
    /// Median wall time of a run, in milliseconds, over its most recent runs (up to 1024).
    pub p50_ms: f64,
    /// 99th-percentile wall time, in milliseconds.
    pub p99_ms: f64,
}

/// What the clients of one name did since start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientStats {
    /// The name it gave in its hello.
    pub name: String,
    /// Connections open now.
    pub connections: u64,
    /// Connections since start.
    pub connections_total: u64,
    /// Event requests (and stream chunks) answered, with or without hooks.
    pub events: u64,
    /// Of those, runs that had hooks.
    pub runs: u64,
}

/// The events one host's relay sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayStats {
    /// The host (`gemini` or `claude`).
    pub host: String,
    /// Events its relay sent.
    pub events: u64,
}
