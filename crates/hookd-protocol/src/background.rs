//! The wire types of background work and the circuit breaker: what `status`, `stats` and
//! `list` tell about async hooks, detached events and paused hooks (`docs/async.md`).

use serde::{Deserialize, Serialize};

/// Background runs (async hooks, detached events) since start, in `status` and `stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundStatus {
    /// Background runs in flight now.
    pub running: u64,
    /// The most background runs in flight at once (`hookd --max-background`).
    pub max: u64,
    /// Background runs started since start.
    pub started: u64,
    /// Background runs that finished (their hooks ran to an end, failed ones included).
    pub finished: u64,
    /// Background runs not started because `max` were already in flight; their hooks are
    /// recorded as refused.
    pub dropped: u64,
    /// Background runs killed by a graceful stop whose grace period ran out.
    pub cut_short: u64,
}

/// The circuit breaker's settings and state, in `status` and `stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerStatus {
    /// Failures in a row that pause a hook; 0: the breaker is off.
    pub threshold: u32,
    /// The first pause, in milliseconds.
    pub backoff_ms: u64,
    /// The longest pause, in milliseconds.
    pub max_backoff_ms: u64,
    /// Times a hook was paused since start (failed trials included).
    pub pauses: u64,
    /// Runs not spawned because their hook was paused, since start.
    pub skipped: u64,
    /// The hooks paused now.
    pub paused: Vec<PausedHook>,
}

/// A hook paused by the circuit breaker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PausedHook {
    /// The event it is registered for.
    pub event: String,
    /// Its display name.
    pub name: String,
    /// The failures in a row that paused it.
    pub failures: u32,
    /// Milliseconds until its trial run; 0 when the trial is due or running.
    pub retry_in_ms: u64,
}
