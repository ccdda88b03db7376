//! Limits the daemon enforces by waiting rather than refusing: the connection limit, whose
//! saturation is logged once per episode, and each connection's cap on in-flight event runs,
//! which pauses reading that connection until one of its runs finishes.
//!
//! Every limit, its default and what a user sees when it is reached are listed in
//! `docs/limits.md`.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A change in the connection limit's saturation, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Episode {
    /// Every connection slot is taken: new clients wait in the listen backlog.
    Started,
    /// Enough slots are free again.
    Ended,
}

/// Tracks the connection limit's saturation so that it is logged once per episode, not once
/// per waiting client.
///
/// An episode starts when a new client finds every slot taken, and ends when at least a
/// tenth of the slots (at least one) are free at an accept: the margin keeps a daemon that
/// hovers at its limit from logging every connection.
#[derive(Debug)]
pub(crate) struct ConnectionGauge {
    max: usize,
    saturated: bool,
}

impl ConnectionGauge {
    /// A gauge for a limit of `max` connections.
    pub(crate) fn new(max: usize) -> ConnectionGauge {
        ConnectionGauge {
            max: max.max(1),
            saturated: false,
        }
    }

    /// Notes that `free` slots are free as the accept loop is about to take one; returns the
    /// episode that starts or ends here, if any.
    pub(crate) fn observe(&mut self, free: usize) -> Option<Episode> {
        let margin = (self.max / 10).max(1);
        if free == 0 && !self.saturated {
            self.saturated = true;
            Some(Episode::Started)
        } else if free >= margin && self.saturated {
            self.saturated = false;
            Some(Episode::Ended)
        } else {
            None
        }
    }

    /// Takes a connection slot, waiting for one if every slot is taken, and logs the start and
    /// end of saturation episodes. `Err` only if the semaphore was closed.
    pub(crate) async fn acquire(
        &mut self,
        slots: &Arc<Semaphore>,
    ) -> Result<OwnedSemaphorePermit, tokio::sync::AcquireError> {
        match self.observe(slots.available_permits()) {
            Some(Episode::Started) => tracing::warn!(
                max_connections = self.max,
                "connection limit reached ({} connections); new clients wait in the listen \
                 backlog until one closes (hookd --max-connections raises it)",
                self.max
            ),
            Some(Episode::Ended) => tracing::info!(
                max_connections = self.max,
                "below the connection limit again"
            ),
            None => {}
        }
        Arc::clone(slots).acquire_owned().await
    }
}

/// One connection's cap on in-flight event runs.
///
/// The connection's read loop calls [`InflightLimit::ready`] before it reads a frame, so at
/// the cap it stops reading (the client's requests wait in the socket, then its writes block)
/// until a run finishes; an event run holds the slot [`InflightLimit::enter`] gives it until
/// it ends. Only the read loop takes slots, so a slot that was free in `ready` is still free
/// when the frame it read turns out to be an event.
#[derive(Debug, Clone)]
pub(crate) struct InflightLimit {
    slots: Arc<Semaphore>,
}

impl InflightLimit {
    /// A cap of `max` runs (at least 1).
    pub(crate) fn new(max: usize) -> InflightLimit {
        InflightLimit {
            slots: Arc::new(Semaphore::new(max.max(1))),
        }
    }

    /// Waits until a run could start. Cancel-safe: it takes nothing.
    pub(crate) async fn ready(&self) {
        // The permit is only looked at, never kept: `enter` takes it for real.
        let _ = self.slots.acquire().await;
    }

    /// Takes a slot for a run that is starting, to be dropped when it ends. `None` only if no
    /// slot is free, which `ready` rules out; the run then goes ahead without one rather than
    /// being refused.
    pub(crate) fn enter(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.slots).try_acquire_owned().ok()
    }
}

/// The output budget of one connection, in KiB (64 MiB): each event run holds its worst-case
/// captured output from before it starts until its result is written.
pub(crate) const OUTPUT_BUDGET_KIB: u32 = 64 * 1024;

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    /// Feeds `observations` (free slots at each accept) to a gauge for `max` connections and
    /// compares the episodes reported with `expected`.
    fn check_gauge(max: usize, observations: &[usize], expected: &[Option<Episode>]) {
        let mut gauge = ConnectionGauge::new(max);
        let episodes: Vec<Option<Episode>> = observations
            .iter()
            .map(|&free| gauge.observe(free))
            .collect();
        assert_eq!(episodes, expected, "max {max}, free {observations:?}");
    }

    #[test]
    fn saturation_is_reported_once_per_episode() {
        use Episode::{Ended, Started};
        check_gauge(4, &[4, 3, 1], &[None, None, None]);
        check_gauge(4, &[0, 0, 0], &[Some(Started), None, None]);
        check_gauge(
            4,
            &[0, 1, 0, 2],
            &[Some(Started), Some(Ended), Some(Started), Some(Ended)],
        );
        // With 100 slots the episode ends only when 10 are free.
        check_gauge(
            100,
            &[0, 1, 9, 0, 10, 0],
            &[Some(Started), None, None, None, Some(Ended), Some(Started)],
        );
        // A limit of 0 is treated as 1.
        check_gauge(0, &[0, 1], &[Some(Started), Some(Ended)]);
    }

    #[tokio::test]
    async fn the_gauge_hands_out_slots_and_waits_when_none_is_free() {
        let slots = Arc::new(Semaphore::new(1));
        let mut gauge = ConnectionGauge::new(1);
        let held = gauge.acquire(&slots).await.unwrap();
        let mut waiting = Box::pin(gauge.acquire(&slots));
        assert!(waiting.as_mut().now_or_never().is_none());
        drop(held);
        let _second = waiting.await.unwrap();
    }

    #[tokio::test]
    async fn ready_waits_for_a_run_to_end_and_enter_takes_the_slot() {
        let limit = InflightLimit::new(2);
        limit.ready().await;
        let first = limit.enter().unwrap();
        limit.ready().await;
        let second = limit.enter().unwrap();
        assert!(limit.enter().is_none(), "a third run has no slot");
        let mut ready = Box::pin(limit.ready());
        assert!(ready.as_mut().now_or_never().is_none());
        drop(first);
        ready.await;
        assert!(limit.enter().is_some());
        drop(second);
    }

    #[tokio::test]
    async fn a_cap_of_zero_is_treated_as_one() {
        let limit = InflightLimit::new(0);
        limit.ready().await;
        assert!(limit.enter().is_some());
    }
}
