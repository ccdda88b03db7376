//! Pre-warmed one-shot hooks (`"prewarm": true`): one process of the hook kept started ahead
//! of the next event, blocked on its stdin.
//!
//! Starting an interpreter (Python, Node) often costs more than the hook's own work. For a
//! pre-warmed hook, hookd keeps one *spare* per [`ProcessKey`]: the exact process the next run
//! would spawn, started already and waiting for its input. When an event needs the hook, the
//! spare (if there is one and it is still alive) is written the payload, its stdin closed and
//! its run collected exactly as any one-shot run (`crate::process`: timeout, output caps, group
//! kill); its timeout and duration count from that moment. A new spare is started in the
//! background once the run is over (not during it, where its start-up would compete with the
//! run for the CPU). Without a spare, the hook runs as usual and a spare is started after it
//! for next time, so the first event of a key never has one.
//!
//! A spare holds a permit of the daemon-wide hook semaphore while it is alive, and is only
//! started when a permit is free right away: a spare never makes a real hook wait, and a hook
//! that finds no free permit stops an unused spare for its permit (see `crate::slots`). A spare
//! unused for the hook's `idle_timeout` is stopped (`SIGTERM` to its group, the grace period,
//! `SIGKILL`), and so is every spare when the daemon stops.
//!
//! A hook that does not wait for its stdin cannot be pre-warmed: its spare would run (and do
//! its work) before the event. A spare that exits before its event is therefore discarded,
//! and its key is not pre-warmed again for the daemon's lifetime (a warning is logged).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use hookd_core::result::{HookOutcome, HookRun};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::process::{ProcessLimits, SpawnedProcess, run_process, spawn_process};
use crate::slots::{IdleProcesses, Reclaimed, SlotSource};
use crate::worker::{KeyMap, KeySet, ProcessKey};

/// The most keys remembered as not pre-warmable; past it the memory starts over, which at
/// worst tries one more spare for a key.
pub const MAX_REFUSED_KEYS: usize = 4096;

/// The spares of a daemon's pre-warmed hooks, one per [`ProcessKey`].
///
/// [`Prewarmer::shutdown`] stops every spare; dropping the prewarmer stops them too (with
/// `SIGKILL` right away if the runtime is gone).
#[derive(Default)]
pub struct Prewarmer {
    inner: Arc<SparesInner>,
}

impl std::fmt::Debug for Prewarmer {
    // Counts only: the keys hold hooks' environments, which may hold secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prewarmer")
            .field("spares", &self.spares())
            .finish_non_exhaustive()
    }
}

/// Unused spares give their permit up to a hook that finds none free (`crate::slots`).
impl IdleProcesses for Prewarmer {
    /// Woken whenever a spare is ready.
    fn idle_changed(&self) -> &Notify {
        &self.inner.changed
    }

    /// One unused spare, terminated with `kill_grace`.
    fn reclaim(&self, kill_grace: Duration) -> Reclaimed<'_> {
        Box::pin(self.reclaim_spare(kill_grace))
    }
}

impl Prewarmer {
    /// Stops one unused spare and hands its permit over, or `None` if there is none.
    async fn reclaim_spare(&self, grace: Duration) -> Option<OwnedSemaphorePermit> {
        let handle = {
            let mut spares = lock(&self.inner.spares);
            let key = spares.keys().next().cloned()?;
            spares.remove(&key)?
        };
        let Spare { process, permit } = ask(handle).await?;
        process.terminate(grace).await;
        Some(permit)
    }
    /// No spares yet; the first run of each pre-warmed hook starts its first spare.
    pub fn new() -> Prewarmer {
        Prewarmer::default()
    }

    /// How many spares are waiting for an event.
    pub fn spares(&self) -> usize {
        lock(&self.inner.spares).len()
    }

    /// Stops every spare and waits for them; no spare is started from now on.
    pub async fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.shutdown.cancel();
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }

    /// Runs a pre-warmed hook: with its spare if one is ready, else as usual; either way a
    /// new spare is started for the next event once the run is over.
    pub(crate) async fn run(&self, request: PrewarmRequest<'_>) -> HookRun {
        let started = Instant::now();
        if request.cancel.is_cancelled() {
            return not_run(HookOutcome::Cancelled, started);
        }
        let key = request.key;
        let grace = request.limits.kill_grace;
        // The next spare is started once this run is over: an interpreter's start-up would
        // otherwise compete for the CPU with the very run it is meant to speed up.
        if let Some(spare) = self.take(&key, grace).await {
            let Spare { process, permit } = spare;
            let run = process
                .feed_and_collect(
                    request.stdin,
                    request.timeout,
                    request.limits,
                    request.cancel,
                )
                .await;
            drop(permit);
            self.refill(&key, request.idle, request.slots.semaphore, grace);
            return run;
        }
        let Some(permit) = request.slots.acquire(request.cancel).await else {
            return not_run(HookOutcome::Cancelled, started);
        };
        let spec = key.spec(request.stdin, request.timeout);
        let run = run_process(spec, request.limits, request.cancel).await;
        drop(permit);
        self.refill(&key, request.idle, request.slots.semaphore, grace);
        run
    }

    /// The spare of `key`, if one is ready and still waiting for its input.
    async fn take(&self, key: &Arc<ProcessKey>, grace: Duration) -> Option<Spare> {
        let handle = lock(&self.inner.spares).remove(key)?;
        let mut spare = ask(handle).await?;
        if spare.process.has_exited() {
            self.inner.refuse(key);
            spare.process.terminate(grace).await;
            return None;
        }
        Some(spare)
    }

    /// Starts a spare for `key` in the background, if the key has none, may have one, and a
    /// permit is free right now.
    fn refill(
        &self,
        key: &Arc<ProcessKey>,
        idle: Duration,
        semaphore: &Arc<Semaphore>,
        grace: Duration,
    ) {
        if self.inner.closed.load(Ordering::Acquire)
            || lock(&self.inner.refused).contains(key)
            || lock(&self.inner.spares).contains_key(key)
        {
            return;
        }
        let Ok(permit) = Arc::clone(semaphore).try_acquire_owned() else {
            return;
        };
        let inner = Arc::clone(&self.inner);
        let key = Arc::clone(key);
        self.inner.tasks.spawn(async move {
            inner.keep_spare(key, permit, idle, grace).await;
        });
    }
}

impl Drop for Prewarmer {
    fn drop(&mut self) {
        // Each spare's task stops its spare; if the runtime is gone, dropping the task kills
        // the spare's group.
        self.inner.closed.store(true, Ordering::Release);
        self.inner.shutdown.cancel();
    }
}

/// One run of a pre-warmed hook.
pub(crate) struct PrewarmRequest<'a> {
    /// Which spare may serve it.
    pub(crate) key: Arc<ProcessKey>,
    /// The hook's stdin payload.
    pub(crate) stdin: Bytes,
    /// The hook's timeout.
    pub(crate) timeout: Duration,
    /// How long a spare may wait unused.
    pub(crate) idle: Duration,
    /// Output caps and the kill grace period.
    pub(crate) limits: &'a ProcessLimits,
    /// Where processes get their permits.
    pub(crate) slots: SlotSource<'a>,
    /// The run's cancellation.
    pub(crate) cancel: &'a CancellationToken,
}

/// A started process waiting for its input, with its permit.
#[derive(Debug)]
struct Spare {
    process: SpawnedProcess,
    permit: OwnedSemaphorePermit,
}

/// How a spare is asked for: send it where to deliver itself.
#[derive(Debug)]
struct SpareHandle {
    id: u64,
    take: oneshot::Sender<oneshot::Sender<Spare>>,
}

/// Asks a spare's task for the spare.
async fn ask(handle: SpareHandle) -> Option<Spare> {
    let (reply, spare) = oneshot::channel();
    handle.take.send(reply).ok()?;
    spare.await.ok()
}

#[derive(Debug, Default)]
struct SparesInner {
    spares: Mutex<KeyMap<SpareHandle>>,
    /// Keys whose spare exited before its event.
    refused: Mutex<KeySet>,
    /// Notified whenever a spare is ready.
    changed: Notify,
    /// Cancelled when every spare must stop.
    shutdown: CancellationToken,
    /// The spares' tasks.
    tasks: TaskTracker,
    /// Set once no spare may be started.
    closed: AtomicBool,
    next_id: AtomicU64,
}

/// Why a spare stops waiting.
enum Leave {
    /// A run wants it, here.
    Asked(oneshot::Sender<Spare>),
    /// It exited before its event.
    Exited,
    /// Its idle timeout passed.
    Idle,
    /// The daemon is stopping.
    Shutdown,
    /// Its handle was dropped without asking for it.
    Dropped,
}

/// Why a spare stopped waiting, other than being asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    Exited,
    Idle,
    Shutdown,
    Dropped,
}

impl SparesInner {
    /// Starts a spare for `key` and keeps it until it is taken, exits, goes unused for `idle`,
    /// or the daemon stops.
    async fn keep_spare(
        self: Arc<Self>,
        key: Arc<ProcessKey>,
        permit: OwnedSemaphorePermit,
        idle: Duration,
        grace: Duration,
    ) {
        let spec = key.spec(Bytes::new(), Duration::ZERO);
        let mut process = match spawn_process(&spec) {
            Ok(process) => process,
            Err(message) => {
                tracing::debug!(hook = key.display_name(), "no spare: {message}");
                return;
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (take, mut asked) = oneshot::channel();
        let listed = {
            let mut spares = lock(&self.spares);
            let wanted = !self.closed.load(Ordering::Acquire) && !spares.contains_key(&key);
            if wanted {
                spares.insert(Arc::clone(&key), SpareHandle { id, take });
            }
            wanted
        };
        if !listed {
            process.terminate(grace).await;
            drop(permit);
            return;
        }
        tracing::debug!(
            hook = key.display_name(),
            pid = process.id(),
            "started a spare"
        );
        self.changed.notify_waiters();
        let deadline = Instant::now() + idle;
        let leave = tokio::select! {
            reply = &mut asked => match reply {
                Ok(reply) => Leave::Asked(reply),
                Err(_) => Leave::Dropped,
            },
            () = process.wait_exit() => Leave::Exited,
            () = sleep_until(deadline) => Leave::Idle,
            () = self.shutdown.cancelled() => Leave::Shutdown,
        };
        let leave = match leave {
            Leave::Asked(reply) => {
                if let Err(spare) = reply.send(Spare { process, permit }) {
                    // The taker is gone.
                    spare.process.terminate(grace).await;
                }
                return;
            }
            Leave::Exited => Left::Exited,
            Leave::Idle => Left::Idle,
            Leave::Shutdown => Left::Shutdown,
            Leave::Dropped => Left::Dropped,
        };
        let still_listed = {
            let mut spares = lock(&self.spares);
            let listed = spares.get(&key).is_some_and(|handle| handle.id == id);
            if listed {
                spares.remove(&key);
            }
            listed
        };
        if !still_listed && leave != Left::Dropped {
            // Someone took the handle just now: hand the spare over unless the daemon is
            // stopping (the taker checks that it is still alive).
            if let Ok(reply) = asked.await {
                if leave != Left::Shutdown {
                    if let Err(spare) = reply.send(Spare { process, permit }) {
                        spare.process.terminate(grace).await;
                    }
                    return;
                }
            }
        }
        if leave == Left::Exited {
            self.refuse(&key);
        }
        process.terminate(grace).await;
        drop(permit);
    }

    /// Remembers that `key`'s spare exited before its event, so the key is not pre-warmed
    /// again.
    fn refuse(&self, key: &Arc<ProcessKey>) {
        let mut refused = lock(&self.refused);
        if refused.len() >= MAX_REFUSED_KEYS {
            refused.clear();
        }
        if refused.insert(Arc::clone(key)) {
            tracing::warn!(
                hook = key.display_name(),
                "a pre-warmed hook exited before its event was sent, so it does not wait for \
                 its stdin and cannot be pre-warmed; it runs on demand from now on"
            );
        }
    }
}

/// A run with no output.
fn not_run(outcome: HookOutcome, started: Instant) -> HookRun {
    HookRun {
        outcome,
        stdout: String::new(),
        stderr: String::new(),
        duration: started.elapsed(),
    }
}

/// Locks a mutex; a panic elsewhere while it was held leaves data that is still consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::PathBuf;

    use crate::spawn::HookEnv;

    use hookd_core::event::HookEventName;
    use hookd_core::model::Source;

    use crate::worker::WorkerPools;

    const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

    /// Records its pid in `started` as soon as it starts, then answers with its pid and its
    /// input once that arrives.
    const SPARE: &str = r#"echo $$ >> started; IFS= read -r line; echo "$$ $line""#;

    struct Harness {
        semaphore: Arc<Semaphore>,
        workers: WorkerPools,
        prewarm: Prewarmer,
        limits: ProcessLimits,
        dir: tempfile::TempDir,
    }

    impl Harness {
        fn new(slots: usize) -> Harness {
            Harness {
                semaphore: Arc::new(Semaphore::new(slots)),
                workers: WorkerPools::new(),
                prewarm: Prewarmer::new(),
                limits: ProcessLimits {
                    max_output_bytes: 4096,
                    kill_grace: Duration::from_millis(500),
                },
                dir: tempfile::tempdir().expect("tempdir"),
            }
        }

        fn key(&self, script: &str) -> ProcessKey {
            ProcessKey {
                event: HookEventName::BeforeTool,
                source: Source::User,
                origin: None,
                name: Some("warm".to_owned()),
                command: script.to_owned(),
                project_dir: "/srv/proj".to_owned(),
                session_id: "s".to_owned(),
                plans_dir: "/srv/plans".to_owned(),
                program: PathBuf::from("bash"),
                args: vec!["-c".to_owned(), script.to_owned()],
                cwd: self.dir.path().to_path_buf(),
                env: Arc::new(HookEnv::new(vec![("PATH".to_owned(), PATH.to_owned())])),
                max_data_bytes: None,
            }
        }

        async fn run(&self, key: &ProcessKey, stdin: &str, idle: Duration) -> HookRun {
            let request = PrewarmRequest {
                key: Arc::new(key.clone()),
                stdin: Bytes::copy_from_slice(stdin.as_bytes()),
                timeout: Duration::from_secs(10),
                idle,
                limits: &self.limits,
                slots: SlotSource {
                    semaphore: &self.semaphore,
                    workers: &self.workers,
                    prewarm: &self.prewarm,
                    kill_grace: self.limits.kill_grace,
                },
                cancel: &CancellationToken::new(),
            };
            self.prewarm.run(request).await
        }

        /// The pid of the one process recorded by [`SPARE`] besides `run`'s (the first run
        /// and its spare start at the same time, in either order).
        fn spare_of(&self, run: &HookRun) -> i32 {
            let ran = answered_pid(run);
            let others: Vec<i32> = self
                .started()
                .into_iter()
                .filter(|pid| *pid != ran)
                .collect();
            assert_eq!(others.len(), 1, "{others:?}");
            others[0]
        }

        /// The pids recorded by [`SPARE`] processes, in start order.
        fn started(&self) -> Vec<i32> {
            std::fs::read_to_string(self.dir.path().join("started"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect()
        }
    }

    /// The pid a [`SPARE`] answered with.
    fn answered_pid(run: &HookRun) -> i32 {
        run.stdout
            .split_whitespace()
            .next()
            .and_then(|pid| pid.parse().ok())
            .unwrap_or_else(|| panic!("no pid in {run:?}"))
    }

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    }

    async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(std::time::Instant::now() < deadline, "never: {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn the_next_run_is_served_by_a_process_started_before_it() {
        let harness = Harness::new(4);
        let key = harness.key(SPARE);
        let idle = Duration::from_secs(60);
        let first = harness.run(&key, "one\n", idle).await;
        assert_eq!(first.outcome, HookOutcome::Exited { code: 0 });
        let first_pid = answered_pid(&first);
        assert_eq!(first.stdout, format!("{first_pid} one\n"));
        // The first run had no spare; it started one.
        eventually("a spare started", || harness.started().len() == 2).await;
        eventually("the spare is ready", || harness.prewarm.spares() == 1).await;
        let spare = harness.spare_of(&first);
        assert!(alive(spare));

        let second = harness.run(&key, "two\n", idle).await;
        assert_eq!(second.outcome, HookOutcome::Exited { code: 0 });
        assert_eq!(second.stdout, format!("{spare} two\n"));
        assert!(!alive(spare), "the spare ran to completion");
        // ... and the next spare is on its way.
        eventually("another spare started", || harness.started().len() == 3).await;
        eventually("it is ready", || harness.prewarm.spares() == 1).await;
        // A spare holds a permit.
        assert_eq!(harness.semaphore.available_permits(), 3);
    }

    #[tokio::test]
    async fn unused_spares_are_stopped_after_the_idle_timeout() {
        let harness = Harness::new(4);
        let key = harness.key(SPARE);
        let first = harness.run(&key, "one\n", Duration::from_millis(300)).await;
        eventually("a spare started", || harness.started().len() == 2).await;
        let spare = harness.spare_of(&first);
        eventually("the idle spare is gone", || !alive(spare)).await;
        eventually("its permit is back", || {
            harness.semaphore.available_permits() == 4
        })
        .await;
        assert_eq!(harness.prewarm.spares(), 0);
        // The next run has no spare and runs as usual.
        let run = harness.run(&key, "two\n", Duration::from_millis(300)).await;
        assert_eq!(run.stdout, format!("{} two\n", answered_pid(&run)));
        assert_ne!(answered_pid(&run), spare);
    }

    #[tokio::test]
    async fn shutdown_and_drop_stop_the_spares() {
        for drop_it in [false, true] {
            let harness = Harness::new(4);
            let key = harness.key(SPARE);
            let first = harness.run(&key, "one\n", Duration::from_secs(60)).await;
            eventually("a spare started", || harness.started().len() == 2).await;
            eventually("the spare is ready", || harness.prewarm.spares() == 1).await;
            let spare = harness.spare_of(&first);
            if drop_it {
                let Harness { prewarm, dir, .. } = harness;
                drop(prewarm);
                eventually("the dropped prewarmer's spare is gone", || !alive(spare)).await;
                drop(dir);
            } else {
                tokio::time::timeout(Duration::from_secs(10), harness.prewarm.shutdown())
                    .await
                    .expect("shutdown is bounded");
                assert!(!alive(spare));
                // No spare is started any more.
                let run = harness.run(&key, "two\n", Duration::from_secs(60)).await;
                assert_eq!(run.outcome, HookOutcome::Exited { code: 0 });
                assert_eq!(harness.prewarm.spares(), 0);
            }
        }
    }

    #[tokio::test]
    async fn a_hook_that_does_not_wait_for_stdin_is_not_prewarmed() {
        let harness = Harness::new(4);
        let key = harness.key("echo $$ >> started; echo done");
        let idle = Duration::from_secs(60);
        for _ in 0..3 {
            let run = harness.run(&key, "{}", idle).await;
            assert_eq!(
                (run.outcome, run.stdout.as_str()),
                (HookOutcome::Exited { code: 0 }, "done\n")
            );
        }
        // The first run's spare ran before any event and exited: the key is refused, so the
        // hook ran three times and one spare was tried, never more.
        eventually("the refusal is remembered", || {
            lock(&harness.prewarm.inner.refused).len() == 1
        })
        .await;
        let runs = harness.run(&key, "{}", idle).await;
        assert_eq!(runs.stdout, "done\n");
        assert!(harness.started().len() <= 6, "{:?}", harness.started());
        assert_eq!(harness.prewarm.spares(), 0);
    }

    #[tokio::test]
    async fn a_hook_that_needs_a_permit_takes_it_from_a_spare() {
        let harness = Harness::new(2);
        let key = harness.key(SPARE);
        let first = harness.run(&key, "one\n", Duration::from_secs(60)).await;
        eventually("the spare is ready", || harness.prewarm.spares() == 1).await;
        eventually("a spare started", || harness.started().len() == 2).await;
        let spare = harness.spare_of(&first);
        let _held = Arc::clone(&harness.semaphore)
            .try_acquire_owned()
            .expect("the other permit");
        let slots = SlotSource {
            semaphore: &harness.semaphore,
            workers: &harness.workers,
            prewarm: &harness.prewarm,
            kill_grace: harness.limits.kill_grace,
        };
        let permit = tokio::time::timeout(
            Duration::from_secs(10),
            slots.acquire(&CancellationToken::new()),
        )
        .await
        .expect("the spare gave its permit up");
        assert!(permit.is_some());
        assert!(!alive(spare));
    }
}
