//! Counters behind the `status` request. Relaxed atomics: they are reported, never relied on.

use std::sync::atomic::{AtomicU64, Ordering};

/// Daemon-wide counters.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Connections currently open.
    pub(crate) connections: AtomicU64,
    /// Event requests answered (with or without hooks).
    pub(crate) events_served: AtomicU64,
    /// Hooks of in-flight plans that have not produced a result yet (running or queued).
    pub(crate) hooks_pending: AtomicU64,
    /// Chunks of filter-only AfterModel streams run through their filters (the OpenTelemetry
    /// metric `hookd.stream.chunks_filtered`).
    pub(crate) chunks_filtered: AtomicU64,
}

impl Stats {
    /// Adds `n` to a counter.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Subtracts `n` from a counter, saturating at zero.
    pub(crate) fn sub(counter: &AtomicU64, n: u64) {
        let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |value| {
            Some(value.saturating_sub(n))
        });
    }

    /// Reads a counter.
    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
