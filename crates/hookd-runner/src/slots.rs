//! Taking a permit of the daemon-wide hook semaphore for a new process, and getting one back
//! from an idle process when none is free.
//!
//! Persistent workers and pre-warmed spares are live processes, so each holds a permit of
//! [`RunnerConfig::hook_slots`](crate::fire::RunnerConfig::hook_slots) for as long as it is
//! alive, idle or not: the cap on hook processes holds whatever mode the hooks run in. Left at
//! that, a daemon whose permits were all held by idle processes (many sessions, each with its
//! own worker, kept until their idle timeout) would make every other hook wait for those
//! timeouts. So a hook that finds no free permit first stops an idle process (an unused spare,
//! else the least recently used idle worker) and takes its permit over; only when no process
//! is idle does it wait in line, and it looks again whenever a process becomes idle.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;

/// The permit an idle process gave up when it was stopped; `None` if none was idle.
pub(crate) type Reclaimed<'a> =
    Pin<Box<dyn Future<Output = Option<OwnedSemaphorePermit>> + Send + 'a>>;

/// Live processes that hold a permit while idle and can be stopped for it: the persistent
/// workers (`crate::worker`) and the pre-warmed spares (`crate::prewarm`). The trait is here,
/// below both, so that taking a permit needs neither module and neither needs the other.
pub(crate) trait IdleProcesses: Sync + std::fmt::Debug {
    /// Woken whenever one of these processes becomes idle, that is whenever
    /// [`IdleProcesses::reclaim`] may find something to stop.
    fn idle_changed(&self) -> &Notify;

    /// Stops one idle process (given `kill_grace` between `SIGTERM` and `SIGKILL` where the
    /// kind of process takes one) and hands its permit over, or `None` if none is idle. Boxed
    /// because it is called only when no permit is free, where a stopped process costs far
    /// more than the allocation.
    fn reclaim(&self, kill_grace: Duration) -> Reclaimed<'_>;
}

/// Where a new hook process gets its permit from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotSource<'a> {
    /// The daemon-wide hook semaphore.
    pub(crate) semaphore: &'a Arc<Semaphore>,
    /// Idle workers that may be stopped for their permit.
    pub(crate) workers: &'a dyn IdleProcesses,
    /// Unused spares that may be stopped for their permit (stopped before idle workers).
    pub(crate) prewarm: &'a dyn IdleProcesses,
    /// How long a stopped process gets between `SIGTERM` and `SIGKILL`.
    pub(crate) kill_grace: Duration,
}

impl SlotSource<'_> {
    /// A permit for one more process: a free one, else one taken over from an idle process,
    /// else the next one freed. `None` when `cancel` fires first or the semaphore is closed
    /// (the daemon is stopping).
    pub(crate) async fn acquire(&self, cancel: &CancellationToken) -> Option<OwnedSemaphorePermit> {
        loop {
            if cancel.is_cancelled() {
                return None;
            }
            // Registered before looking, so a process that becomes idle while we look is seen.
            let mut workers_idle = pin!(self.workers.idle_changed().notified());
            let mut spares_idle = pin!(self.prewarm.idle_changed().notified());
            workers_idle.as_mut().enable();
            spares_idle.as_mut().enable();
            match Arc::clone(self.semaphore).try_acquire_owned() {
                Ok(permit) => return Some(permit),
                Err(TryAcquireError::Closed) => return None,
                Err(TryAcquireError::NoPermits) => {}
            }
            if let Some(permit) = self.prewarm.reclaim(self.kill_grace).await {
                return Some(permit);
            }
            if let Some(permit) = self.workers.reclaim(self.kill_grace).await {
                return Some(permit);
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                permit = Arc::clone(self.semaphore).acquire_owned() => return permit.ok(),
                () = &mut workers_idle => {}
                () = &mut spares_idle => {}
            }
        }
    }
}
