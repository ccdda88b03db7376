//! Persistent workers (`"mode": "persistent"`): long-lived hook processes that answer one
//! JSON line per event.
//!
//! A worker is started exactly like a one-shot hook (`bash -c <command>` in its own process
//! group, the hook's environment, the session's working directory, three real pipes) and kept
//! alive. For each event it is written the hook's normal stdin payload as one line of compact
//! JSON, and the one line it writes back to stdout is the hook's stdout, interpreted as a
//! one-shot hook's stdout with exit code 0. Its stderr is drained all the time into a small
//! ring; what arrived during a request is that request's stderr.
//!
//! Workers are pooled per [`ProcessKey`] (the hook, the session, its directories and the
//! hook's environment): up to `pool` workers, each answering one request at a time; requests
//! beyond wait for a free worker, for at most the hook's timeout. Every worker holds a permit
//! of the daemon-wide hook semaphore for as long as it is alive (see `crate::slots`).
//!
//! Each worker is one task, a small state machine: *idle* (waiting for a request while
//! draining stderr, watching for its exit and for stray output, and for its idle timeout) →
//! *busy* (writing the request while reading its answer, with the hook's timeout) → back to
//! idle, or *stopping* (`SIGTERM` to its group, the grace period, `SIGKILL`). A request that
//! times out, is cancelled, or gets an answer that is not one JSON line stops the worker; a
//! worker that exits is not restarted until the next request needs it, and then after a
//! backoff that grows with consecutive failures ([`restart_delay`]). While a pool backs off
//! and has no live worker, its requests fail at once instead of waiting.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use hookd_core::command::CommandVars;
use hookd_core::event::HookEventName;
use hookd_core::exec::WorkerSettings;
use hookd_core::model::{HookEntry, Source};
use hookd_core::result::{HookOutcome, HookRun, StreamName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{Notify, OwnedSemaphorePermit, mpsc, oneshot};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::process::{GroupGuard, ProcessLimits, ProcessSpec, spawn_process, terminate_group};
use crate::slots::{IdleProcesses, Reclaimed, SlotSource};
use crate::spawn::{self, HookChild, HookEnv};

/// The most stderr bytes a worker keeps; a request's stderr is at most this much of what
/// arrived during it (the latest bytes), with a note saying how much was dropped.
pub const STDERR_RING_BYTES: usize = 64 * 1024;

/// The most pools remembered at once. Pools with live workers or requests in flight are never
/// forgotten; past this many, forgetting the others loses only their restart backoff.
pub const MAX_POOLS: usize = 1024;

/// The restart delay after the second consecutive failure; it doubles after each further one.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The longest restart delay.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// How long a worker that exited during a request may keep its pipes open before the rest of
/// its group is killed and the request answered.
const AFTER_EXIT_DRAIN: Duration = Duration::from_millis(500);

/// How much one read of a worker's pipe takes at most.
const READ_CHUNK: usize = 8192;

/// How much of a bad answer line is quoted in the request's stderr.
const QUOTED_ANSWER_CHARS: usize = 200;

/// How long a pool waits before starting a worker again after `failures` consecutive
/// failures: none after the first (a crash is retried at once), then 100 ms, doubling up to
/// 5 s. A request answered successfully resets the count.
pub fn restart_delay(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => FIRST_BACKOFF
            .checked_mul(1u32 << (n - 2).min(16))
            .map_or(MAX_BACKOFF, |delay| delay.min(MAX_BACKOFF)),
    }
}

/// Everything that makes two runs of a hook interchangeable, so that one process may serve
/// both: the hook's identity, the session, and exactly what would be spawned.
///
/// Persistent workers and pre-warmed spares are kept per key.
#[derive(Debug, Clone)]
pub struct ProcessKey {
    /// The event the hook is registered for.
    pub event: HookEventName,
    /// The layer the hook came from.
    pub source: Source,
    /// The file the hook was read from.
    pub origin: Option<PathBuf>,
    /// The hook's `name`.
    pub name: Option<String>,
    /// The hook's `command`, as written.
    pub command: String,
    /// The project directory of the session.
    pub project_dir: String,
    /// The session id.
    pub session_id: String,
    /// The plans directory of the session.
    pub plans_dir: String,
    /// The program spawned (the shell).
    pub program: PathBuf,
    /// Its arguments (`-c` and the expanded command).
    pub args: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Its complete environment.
    pub env: Arc<HookEnv>,
    /// Its `RLIMIT_DATA` in bytes (the hook's `max_memory_mb`), if limited.
    pub max_data_bytes: Option<u64>,
}

// Paths are compared and hashed as the bytes that are spawned (`Path`'s own equality and hash
// walk its components, so `/a/b/` equals `/a/b` there, and hashing them is slow), keeping
// equality and hash consistent.
/// A map by process key. Keys are hashed with foldhash rather than SipHash: a key is a dozen
/// strings (the command twice, directories, the session), hashed for every run of a worker or
/// pre-warmed hook, and SipHash took about 2,000 instructions of each streamed chunk on it.
pub(crate) type KeyMap<V> = HashMap<Arc<ProcessKey>, V, foldhash::fast::RandomState>;

/// A set of process keys, hashed as [`KeyMap`]'s.
pub(crate) type KeySet = std::collections::HashSet<Arc<ProcessKey>, foldhash::fast::RandomState>;

impl PartialEq for ProcessKey {
    fn eq(&self, other: &ProcessKey) -> bool {
        self.event == other.event
            && self.source == other.source
            && self.origin.as_deref().map(Path::as_os_str)
                == other.origin.as_deref().map(Path::as_os_str)
            && self.name == other.name
            && self.command == other.command
            && self.project_dir == other.project_dir
            && self.session_id == other.session_id
            && self.plans_dir == other.plans_dir
            && self.program.as_os_str() == other.program.as_os_str()
            && self.args == other.args
            && self.cwd.as_os_str() == other.cwd.as_os_str()
            && self.env == other.env
            && self.max_data_bytes == other.max_data_bytes
    }
}

impl Eq for ProcessKey {}

impl std::hash::Hash for ProcessKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        use std::os::unix::ffi::OsStrExt;

        self.event.hash(state);
        self.source.hash(state);
        self.origin
            .as_ref()
            .map(|path| path.as_os_str().as_bytes())
            .hash(state);
        self.name.hash(state);
        self.command.hash(state);
        self.project_dir.hash(state);
        self.session_id.hash(state);
        self.plans_dir.hash(state);
        self.program.as_os_str().as_bytes().hash(state);
        self.args.hash(state);
        self.cwd.as_os_str().as_bytes().hash(state);
        self.env.hash(state);
        self.max_data_bytes.hash(state);
    }
}

impl ProcessKey {
    /// The key of `entry` run as `spec` in the session `vars` describe.
    pub fn new(entry: &HookEntry, vars: &CommandVars<'_>, spec: &ProcessSpec) -> ProcessKey {
        ProcessKey {
            event: entry.event,
            source: entry.source,
            origin: entry.origin.path.clone(),
            name: entry.config.name.clone(),
            command: entry.config.command.clone().unwrap_or_default(),
            project_dir: vars.project_dir.to_owned(),
            session_id: vars.session_id.to_owned(),
            plans_dir: vars.plans_dir.to_owned(),
            program: spec.program.clone(),
            args: spec.args.clone(),
            cwd: spec.cwd.clone(),
            env: Arc::clone(&spec.env),
            max_data_bytes: spec.max_data_bytes,
        }
    }

    /// The process to spawn for this key, with `stdin` and `timeout` for its run.
    pub fn spec(&self, stdin: Bytes, timeout: Duration) -> ProcessSpec {
        ProcessSpec {
            program: self.program.clone(),
            args: self.args.clone(),
            cwd: self.cwd.clone(),
            env: Arc::clone(&self.env),
            stdin,
            timeout,
            max_data_bytes: self.max_data_bytes,
        }
    }

    /// The hook's name for messages: its `name`, else its command.
    pub fn display_name(&self) -> &str {
        self.name
            .as_deref()
            .filter(|name| !name.is_empty())
            .unwrap_or(&self.command)
    }
}

/// The persistent workers of a daemon, pooled per [`ProcessKey`].
///
/// [`WorkerPools::shutdown`] stops every worker; dropping the pools stops them too (with
/// `SIGKILL` right away if the runtime is gone).
#[derive(Default)]
pub struct WorkerPools {
    inner: Arc<PoolsInner>,
}

impl std::fmt::Debug for WorkerPools {
    // Counts only: the keys hold hooks' environments, which may hold secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPools")
            .field("live_workers", &self.live_workers())
            .finish_non_exhaustive()
    }
}

/// Idle workers give their permit up to a hook that finds none free (`crate::slots`).
impl IdleProcesses for WorkerPools {
    /// Woken whenever a worker becomes idle.
    fn idle_changed(&self) -> &Notify {
        &self.inner.idle_changed
    }

    /// The least recently used idle worker of any pool; a worker retires on its own terms, so
    /// `kill_grace` is not needed here.
    fn reclaim(&self, _kill_grace: Duration) -> Reclaimed<'_> {
        Box::pin(self.reclaim_idle())
    }
}

impl WorkerPools {
    /// Stops the least recently used idle worker of any pool and hands its permit over, or
    /// `None` if no worker is idle.
    async fn reclaim_idle(&self) -> Option<OwnedSemaphorePermit> {
        let handle = {
            let pools = lock(&self.inner.pools);
            let mut oldest: Option<(&Arc<Pool>, Instant)> = None;
            for pool in pools.values() {
                let state = pool.state();
                if let Some(first) = state.idle.first() {
                    if oldest.is_none_or(|(_, since)| first.idle_since < since) {
                        oldest = Some((pool, first.idle_since));
                    }
                }
            }
            let (pool, _) = oldest?;
            let mut state = pool.state();
            (!state.idle.is_empty()).then(|| state.idle.remove(0))?
        };
        let (reply, permit) = oneshot::channel();
        handle.jobs.send(Job::Retire { reply }).await.ok()?;
        permit.await.ok()
    }

    /// No workers yet; they are started by the first request that needs one.
    pub fn new() -> WorkerPools {
        WorkerPools::default()
    }

    /// How many workers are alive (idle or busy, including those being started).
    pub fn live_workers(&self) -> usize {
        let pools = lock(&self.inner.pools);
        pools.values().map(|pool| pool.state().live).sum()
    }

    /// Stops every worker (`SIGTERM` to its group, the grace period, `SIGKILL`) and waits for
    /// them; requests from now on are answered as cancelled. A request still running gets the
    /// cancelled outcome.
    pub async fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.shutdown.cancel();
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }

    /// Serves one request with a worker of its key's pool, starting one if needed.
    pub(crate) async fn run(&self, request: WorkerRequest<'_>) -> HookRun {
        let started = Instant::now();
        if request.cancel.is_cancelled() || self.inner.closed.load(Ordering::Acquire) {
            return not_run(HookOutcome::Cancelled, started);
        }
        let pool = self.inner.pool(&request.key, request.settings);
        let user = PoolUser {
            inner: &self.inner,
            pool,
        };
        self.serve(&user.pool, &request, started).await
    }

    async fn serve(
        &self,
        pool: &Arc<Pool>,
        request: &WorkerRequest<'_>,
        started: Instant,
    ) -> HookRun {
        let wait_until = later(started, request.timeout);
        loop {
            let mut freed = pin!(pool.freed.notified());
            freed.as_mut().enable();
            let handle = match pool.claim() {
                Claim::Worker(handle) => handle,
                Claim::Spawn => {
                    let reservation = Reservation { pool, armed: true };
                    let permit = tokio::select! {
                        // A worker of this pool freed up while we waited for a hook slot: use
                        // it rather than start (or take a slot from) another.
                        biased;
                        () = &mut freed => {
                            drop(reservation);
                            continue;
                        }
                        permit = request.slots.acquire(request.cancel) => permit,
                    };
                    let Some(permit) = permit else {
                        return not_run(HookOutcome::Cancelled, started);
                    };
                    match self.spawn_worker(reservation, permit, request) {
                        Ok(handle) => handle,
                        Err(run) => return run,
                    }
                }
                Claim::Backoff { failures, left } => {
                    let message = format!(
                        "Failed to spawn hook: the worker of {} failed {failures} times in a \
                         row; it is started again in {} ms",
                        pool.key.display_name(),
                        left.as_millis().max(1)
                    );
                    return not_run(
                        HookOutcome::SpawnFailed {
                            message,
                            cause: hookd_core::SpawnCause::Hook,
                        },
                        started,
                    );
                }
                Claim::Wait { retry_at } => {
                    let retry = pin!(async {
                        match retry_at {
                            Some(at) => sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    });
                    tokio::select! {
                        biased;
                        () = request.cancel.cancelled() => {
                            return not_run(HookOutcome::Cancelled, started);
                        }
                        () = freed => continue,
                        () = retry => continue,
                        () = sleep_until(wait_until) => {
                            return not_run(timed_out(request.timeout), started);
                        }
                    }
                }
            };
            let asked = Instant::now();
            match ask(handle, request).await {
                Reply::Run(mut run) => {
                    run.duration = asked.elapsed();
                    return run;
                }
                // That worker exited while idle; try the next one.
                Reply::Gone => continue,
            }
        }
    }

    /// Starts a worker for the reservation's pool (whose `live` count already includes it)
    /// with `permit`.
    fn spawn_worker(
        &self,
        mut reservation: Reservation<'_>,
        permit: OwnedSemaphorePermit,
        request: &WorkerRequest<'_>,
    ) -> Result<WorkerHandle, HookRun> {
        let started = Instant::now();
        let pool = reservation.pool;
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(not_run(HookOutcome::Cancelled, started));
        }
        let spec = pool.key.spec(Bytes::new(), request.timeout);
        let process = match spawn_process(&spec) {
            Ok(process) => process,
            Err(failure) => {
                // hookd's own shortage says nothing about the worker: no restart delay.
                if failure.cause == hookd_core::SpawnCause::Hook {
                    reservation.failed();
                }
                let outcome = HookOutcome::SpawnFailed {
                    message: failure.message,
                    cause: failure.cause,
                };
                return Err(not_run(outcome, started));
            }
        };
        let (child, guard) = process.into_parts();
        let pid = child.id();
        let worker = match Worker::new(child, guard, permit) {
            Ok(worker) => worker,
            Err(error) => {
                // Dropping what was built kills the process's group.
                reservation.failed();
                let message = format!("Failed to spawn hook: {error}");
                let cause = crate::process::spawn_cause(&error);
                return Err(not_run(
                    HookOutcome::SpawnFailed { message, cause },
                    started,
                ));
            }
        };
        // The worker's task owns the `live` count from here on.
        reservation.armed = false;
        let (jobs, receiver) = mpsc::channel(1);
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let task = WorkerTask {
            id,
            served: false,
            worker,
            jobs: receiver,
            me: jobs.downgrade(),
            pool: Arc::clone(pool),
            inner: Arc::clone(&self.inner),
            limits: request.limits.clone(),
        };
        tracing::debug!(
            hook = pool.key.display_name(),
            pid,
            "started a persistent worker"
        );
        self.inner.tasks.spawn(task.serve());
        Ok(WorkerHandle {
            id,
            jobs,
            idle_since: Instant::now(),
        })
    }
}

impl Drop for WorkerPools {
    fn drop(&mut self) {
        // Each worker's task stops its worker; if the runtime is gone, dropping the task
        // kills the worker's group.
        self.inner.closed.store(true, Ordering::Release);
        self.inner.shutdown.cancel();
    }
}

/// One request for a worker.
pub(crate) struct WorkerRequest<'a> {
    /// Which pool serves it.
    pub(crate) key: Arc<ProcessKey>,
    /// The hook's pool size and idle timeout.
    pub(crate) settings: WorkerSettings,
    /// The hook's stdin payload (compact JSON without a newline).
    pub(crate) payload: Bytes,
    /// The hook's timeout.
    pub(crate) timeout: Duration,
    /// Output caps and the kill grace period.
    pub(crate) limits: &'a ProcessLimits,
    /// Where a new worker gets its permit.
    pub(crate) slots: SlotSource<'a>,
    /// The run's cancellation.
    pub(crate) cancel: &'a CancellationToken,
}

/// Sends the request to the worker of `handle` and waits for its reply. A cancellation drops
/// the reply channel, which tells the worker to stop.
async fn ask(handle: WorkerHandle, request: &WorkerRequest<'_>) -> Reply {
    let (reply, answer) = oneshot::channel();
    let job = Job::Run {
        payload: request.payload.clone(),
        timeout: request.timeout,
        reply,
    };
    if handle.jobs.send(job).await.is_err() {
        return Reply::Gone;
    }
    // `handle` is held until the reply: the worker re-registers as idle with a sender of its
    // own before replying, and the channel must not close in between.
    let reply = tokio::select! {
        biased;
        answer = answer => answer.unwrap_or_else(|_| {
            Reply::Run(not_run(
                HookOutcome::SpawnFailed {
                    message: "Lost track of the hook's worker".to_owned(),
                    cause: hookd_core::SpawnCause::Hook,
                },
                Instant::now(),
            ))
        }),
        () = request.cancel.cancelled() => {
            Reply::Run(not_run(HookOutcome::Cancelled, Instant::now()))
        }
    };
    drop(handle);
    reply
}

#[derive(Debug, Default)]
struct PoolsInner {
    pools: Mutex<KeyMap<Arc<Pool>>>,
    /// Notified whenever a worker becomes idle.
    idle_changed: Notify,
    /// Cancelled when every worker must stop.
    shutdown: CancellationToken,
    /// The workers' tasks.
    tasks: TaskTracker,
    /// Set once the pools stop taking requests.
    closed: AtomicBool,
    next_id: AtomicU64,
}

impl PoolsInner {
    /// The pool of `key`, created if needed, with one more request using it.
    fn pool(&self, key: &Arc<ProcessKey>, settings: WorkerSettings) -> Arc<Pool> {
        let mut pools = lock(&self.pools);
        let pool = match pools.get(key) {
            Some(pool) => Arc::clone(pool),
            None => {
                if pools.len() >= MAX_POOLS {
                    pools.retain(|_, pool| !pool.state().unused());
                }
                // The caller's `Arc`, so that its later lookups (a stream reuses it) compare
                // equal by pointer.
                let key = Arc::clone(key);
                let pool = Arc::new(Pool {
                    key: Arc::clone(&key),
                    state: Mutex::new(PoolState {
                        settings,
                        idle: Vec::new(),
                        live: 0,
                        users: 0,
                        failures: 0,
                        retry_at: None,
                    }),
                    freed: Notify::new(),
                });
                pools.insert(key, Arc::clone(&pool));
                pool
            }
        };
        let mut state = pool.state();
        state.settings = settings;
        state.users += 1;
        drop(state);
        pool
    }

    /// Forgets `pool` if nothing uses it any more. Called with no pool locked.
    fn forget_if_unused(&self, pool: &Arc<Pool>) {
        let mut pools = lock(&self.pools);
        if pool.state().unused() {
            if let Some(listed) = pools.get(&pool.key) {
                if Arc::ptr_eq(listed, pool) {
                    pools.remove(&pool.key);
                }
            }
        }
    }
}

/// The workers of one key.
#[derive(Debug)]
struct Pool {
    key: Arc<ProcessKey>,
    state: Mutex<PoolState>,
    /// Notified whenever a worker becomes idle or stops, so waiting requests look again.
    freed: Notify,
}

#[derive(Debug)]
struct PoolState {
    /// The latest settings a request brought.
    settings: WorkerSettings,
    /// Idle workers, least recently used first.
    idle: Vec<WorkerHandle>,
    /// Workers alive or being started.
    live: usize,
    /// Requests being served.
    users: usize,
    /// Consecutive failures.
    failures: u32,
    /// No worker is started before this.
    retry_at: Option<Instant>,
}

impl PoolState {
    fn unused(&self) -> bool {
        self.live == 0 && self.users == 0 && self.failures == 0
    }
}

/// What a request may do next.
enum Claim {
    /// Use this idle worker.
    Worker(WorkerHandle),
    /// Start a worker (counted in `live` already).
    Spawn,
    /// Wait for a worker to become free, or until `retry_at` to start one.
    Wait { retry_at: Option<Instant> },
    /// Fail at once: no worker is alive and none may be started for `left` yet.
    Backoff { failures: u32, left: Duration },
}

impl Pool {
    fn state(&self) -> MutexGuard<'_, PoolState> {
        lock(&self.state)
    }

    fn claim(&self) -> Claim {
        let mut state = self.state();
        if let Some(handle) = state.idle.pop() {
            return Claim::Worker(handle);
        }
        if state.live >= state.settings.pool {
            return Claim::Wait { retry_at: None };
        }
        if let Some(at) = state.retry_at {
            let now = Instant::now();
            if now < at {
                return if state.live == 0 {
                    Claim::Backoff {
                        failures: state.failures,
                        left: at - now,
                    }
                } else {
                    Claim::Wait { retry_at: Some(at) }
                };
            }
        }
        state.live += 1;
        Claim::Spawn
    }

    /// Removes the worker `id` from the idle list; `false` if it is not there (a request has
    /// just claimed it).
    fn remove_idle(&self, id: u64) -> bool {
        let mut state = self.state();
        match state.idle.iter().position(|handle| handle.id == id) {
            Some(index) => {
                state.idle.remove(index);
                true
            }
            None => false,
        }
    }

    /// Counts a worker that stopped (or was never started); a failure starts or extends the
    /// backoff.
    fn leave(&self, failed: bool) {
        let mut state = self.state();
        state.live = state.live.saturating_sub(1);
        if failed {
            state.failures = state.failures.saturating_add(1);
            state.retry_at = Some(Instant::now() + restart_delay(state.failures));
        }
        drop(state);
        self.freed.notify_waiters();
    }
}

/// A request's use of a pool; lets the pool be forgotten once unused.
struct PoolUser<'a> {
    inner: &'a PoolsInner,
    pool: Arc<Pool>,
}

impl Drop for PoolUser<'_> {
    fn drop(&mut self) {
        {
            let mut state = self.pool.state();
            state.users = state.users.saturating_sub(1);
        }
        self.inner.forget_if_unused(&self.pool);
    }
}

/// A worker being started: gives its `live` count back unless the worker's task took it.
struct Reservation<'a> {
    pool: &'a Arc<Pool>,
    armed: bool,
}

impl Reservation<'_> {
    fn failed(&mut self) {
        if self.armed {
            self.armed = false;
            self.pool.leave(true);
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.pool.leave(false);
        }
    }
}

/// How a request reaches an idle worker.
#[derive(Debug)]
struct WorkerHandle {
    id: u64,
    jobs: mpsc::Sender<Job>,
    idle_since: Instant,
}

/// What a worker is asked to do.
enum Job {
    /// Answer one request.
    Run {
        payload: Bytes,
        timeout: Duration,
        reply: oneshot::Sender<Reply>,
    },
    /// Stop, and hand the permit over to the sender.
    Retire {
        reply: oneshot::Sender<OwnedSemaphorePermit>,
    },
}

/// A worker's reply to a request.
enum Reply {
    /// The request's run.
    Run(HookRun),
    /// The worker exited while idle, before the request reached it; use another one.
    Gone,
}

/// A live worker process and what is read from it.
struct Worker {
    child: HookChild,
    guard: GroupGuard,
    stdin: Option<pipe::Sender>,
    stdout: Option<pipe::Receiver>,
    stderr: Option<pipe::Receiver>,
    /// Bytes read from stdout and not yet consumed.
    out: Vec<u8>,
    ring: StderrRing,
    permit: Option<OwnedSemaphorePermit>,
}

impl Worker {
    fn new(
        mut child: HookChild,
        guard: GroupGuard,
        permit: OwnedSemaphorePermit,
    ) -> io::Result<Worker> {
        let stdin = child.stdin.take().map(spawn::async_stdin).transpose()?;
        let stdout = child
            .stdout
            .take()
            .map(spawn::register_reader)
            .transpose()?;
        let stderr = child
            .stderr
            .take()
            .map(spawn::register_reader)
            .transpose()?;
        Ok(Worker {
            stdin,
            stdout,
            stderr,
            child,
            guard,
            out: Vec::new(),
            ring: StderrRing::new(STDERR_RING_BYTES),
            permit: Some(permit),
        })
    }

    /// Stops the worker: closes its stdin (a worker may take end-of-file as its cue), then
    /// `SIGTERM`, the grace period and `SIGKILL` to its group.
    async fn stop(&mut self, grace: Duration) {
        self.stdin = None;
        terminate_group(&mut self.child, &mut self.guard, grace).await;
    }
}

/// Why an idle worker stops waiting for requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leave {
    /// The process exited (or closed its stdout).
    Exited,
    /// It wrote to stdout with no request to answer.
    Stray,
    /// Its idle timeout passed.
    Idle,
    /// The daemon is stopping.
    Shutdown,
}

/// What a worker does next after waiting while idle.
enum Next {
    Job(Job),
    Stop { failed: bool },
}

/// What one request's exchange came to.
enum Exchange {
    /// A whole line arrived. `in_sync` is false when the worker answered before taking the
    /// whole request, or wrote more than one line.
    Answered { line: Vec<u8>, in_sync: bool },
    /// The answer broke the protocol (not JSON, too long).
    Bad { why: String },
    /// The process exited.
    Exited { status: io::Result<ExitStatus> },
    /// The hook's timeout passed.
    TimedOut,
    /// The request was cancelled.
    Cancelled,
    /// The daemon is stopping.
    Shutdown,
}

/// The task that owns one worker.
struct WorkerTask {
    id: u64,
    /// Whether it has taken a request yet. A new worker's first request is already on its
    /// way, so whatever the worker does first (exit, print) is that request's answer.
    served: bool,
    worker: Worker,
    jobs: mpsc::Receiver<Job>,
    /// A sender for the idle list, without keeping the channel open by itself.
    me: mpsc::WeakSender<Job>,
    pool: Arc<Pool>,
    inner: Arc<PoolsInner>,
    limits: ProcessLimits,
}

impl WorkerTask {
    async fn serve(mut self) {
        let failed = loop {
            let job = match self.wait_for_job().await {
                Next::Job(job) => job,
                Next::Stop { failed } => break failed,
            };
            match job {
                Job::Retire { reply } => {
                    self.worker.stop(self.limits.kill_grace).await;
                    let permit = self.worker.permit.take();
                    self.pool.leave(false);
                    self.inner.forget_if_unused(&self.pool);
                    if let Some(permit) = permit {
                        let _ = reply.send(permit);
                    }
                    return;
                }
                Job::Run {
                    payload,
                    timeout,
                    reply,
                } => {
                    if let Some(failed) = self.answer(payload, timeout, reply).await {
                        break failed;
                    }
                }
            }
        };
        self.worker.stop(self.limits.kill_grace).await;
        drop(self.worker.permit.take());
        self.pool.leave(failed);
        self.inner.forget_if_unused(&self.pool);
    }

    /// Serves one request; `Some(failed)` when the worker must stop afterwards.
    async fn answer(
        &mut self,
        payload: Bytes,
        timeout: Duration,
        mut reply: oneshot::Sender<Reply>,
    ) -> Option<bool> {
        let started = Instant::now();
        self.served = true;
        self.worker.ring.clear();
        let exchange = self.exchange(&payload, timeout, &mut reply).await;
        let cap = self.limits.max_output_bytes;
        let (outcome, stdout, fate) = match exchange {
            Exchange::Answered { line, in_sync } => match check_answer(line, cap) {
                Ok(line) => {
                    if !in_sync {
                        tracing::warn!(
                            hook = self.pool.key.display_name(),
                            "a persistent worker answered before reading its whole request, \
                             or wrote more than one line; it is replaced"
                        );
                    }
                    let fate = if in_sync { Fate::Stay } else { Fate::Replace };
                    (HookOutcome::Exited { code: 0 }, line, fate)
                }
                Err(why) => (
                    HookOutcome::Exited { code: 1 },
                    String::new(),
                    Fate::Bad(why),
                ),
            },
            Exchange::Bad { why } => (
                HookOutcome::Exited { code: 1 },
                String::new(),
                Fate::Bad(why),
            ),
            Exchange::Exited { status } => {
                let (outcome, stdout) = exited_outcome(status, &mut self.worker.out, cap);
                (outcome, stdout, Fate::Failed)
            }
            Exchange::TimedOut => (timed_out(timeout), String::new(), Fate::Failed),
            Exchange::Cancelled => return Some(false),
            Exchange::Shutdown => {
                let run = not_run(HookOutcome::Cancelled, started);
                let _ = reply.send(Reply::Run(run));
                return Some(false);
            }
        };
        drain_ready(self.worker.stderr.as_ref(), &mut self.worker.ring);
        let mut stderr = self.worker.ring.take_text();
        if let Fate::Bad(why) = &fate {
            if !stderr.is_empty() && !stderr.ends_with('\n') {
                stderr.push('\n');
            }
            stderr.push_str(&format!(
                "[hookd: the worker answered with {why}; it was stopped and starts again on \
                 the next event]"
            ));
        }
        let run = HookRun {
            outcome,
            stdout,
            stderr,
            duration: started.elapsed(),
        };
        if matches!(fate, Fate::Stay) && self.become_idle() {
            let _ = reply.send(Reply::Run(run));
            self.pool.freed.notify_waiters();
            self.inner.idle_changed.notify_waiters();
            return None;
        }
        let _ = reply.send(Reply::Run(run));
        Some(!matches!(fate, Fate::Stay | Fate::Replace))
    }

    /// Puts this worker back on its pool's idle list after a success; `false` if the pools
    /// are closed (or the channel cannot be reopened), in which case it must stop.
    fn become_idle(&mut self) -> bool {
        let Some(jobs) = self.me.upgrade() else {
            return false;
        };
        let mut state = self.pool.state();
        state.failures = 0;
        state.retry_at = None;
        if self.inner.closed.load(Ordering::Acquire) {
            return false;
        }
        state.idle.push(WorkerHandle {
            id: self.id,
            jobs,
            idle_since: Instant::now(),
        });
        true
    }

    /// Waits, idle, for the next job, draining stderr and watching the process meanwhile.
    async fn wait_for_job(&mut self) -> Next {
        let idle_for = {
            let state = self.pool.state();
            Duration::from_millis(state.settings.idle_timeout_ms)
        };
        let deadline = later(Instant::now(), idle_for);
        let leave = {
            let Worker {
                child,
                stdout,
                stderr,
                out,
                ring,
                ..
            } = &mut self.worker;
            loop {
                tokio::select! {
                    biased;
                    job = self.jobs.recv() => match job {
                        Some(job) => return Next::Job(job),
                        // No request can reach this worker any more.
                        None => return Next::Stop { failed: false },
                    },
                    _ = child.wait() => break Leave::Exited,
                    read = read_some(stdout.as_mut(), out) => {
                        break if read { Leave::Stray } else { Leave::Exited };
                    }
                    open = read_stderr(stderr.as_mut(), ring) => {
                        if !open {
                            *stderr = None;
                        }
                    }
                    () = sleep_until(deadline) => break Leave::Idle,
                    () = self.inner.shutdown.cancelled() => break Leave::Shutdown,
                }
            }
        };
        if leave == Leave::Stray {
            tracing::warn!(
                hook = self.pool.key.display_name(),
                "a persistent worker wrote to stdout with no request to answer; it is replaced"
            );
        }
        if self.pool.remove_idle(self.id) {
            return Next::Stop { failed: false };
        }
        // A request claimed this worker just now: its job is on the way (or its sender was
        // dropped with the request).
        let Some(job) = self.jobs.recv().await else {
            return Next::Stop { failed: false };
        };
        match (leave, job) {
            (_, job @ Job::Retire { .. }) | (Leave::Idle, job) => Next::Job(job),
            (Leave::Exited | Leave::Stray, job) if !self.served => Next::Job(job),
            (Leave::Exited | Leave::Stray, Job::Run { reply, .. }) => {
                let _ = reply.send(Reply::Gone);
                Next::Stop { failed: false }
            }
            (Leave::Shutdown, Job::Run { reply, .. }) => {
                let run = not_run(HookOutcome::Cancelled, Instant::now());
                let _ = reply.send(Reply::Run(run));
                Next::Stop { failed: false }
            }
        }
    }

    /// Writes the request while reading the answer line, draining stderr, watching the
    /// process, the hook's timeout, the request's cancellation and the daemon's shutdown.
    async fn exchange(
        &mut self,
        payload: &Bytes,
        timeout: Duration,
        reply: &mut oneshot::Sender<Reply>,
    ) -> Exchange {
        let cap = self.limits.max_output_bytes;
        let deadline = later(Instant::now(), timeout);
        let Worker {
            child,
            stdin,
            stdout,
            stderr,
            out,
            ring,
            ..
        } = &mut self.worker;
        // `out` is empty here except for a new worker that printed before its first request
        // was written: that is its answer.
        let mut pipe = stdin.take();
        let mut written = false;
        let mut broken = false;
        let ended = 'exchange: {
            let mut write = pin!(write_line(pipe.as_mut(), payload));
            // Made once for the exchange, not again each time a branch (the write, a piece
            // of stderr) ends and the loop goes round.
            let mut timeout = pin!(sleep_until(deadline));
            let mut abandoned = pin!(reply.closed());
            let mut shutdown = pin!(self.inner.shutdown.cancelled());
            loop {
                tokio::select! {
                    result = &mut write, if !written => {
                        written = true;
                        // A worker that closed its stdin is exiting, or answers anyway.
                        broken = result.is_err();
                    }
                    line = read_line(stdout.as_mut(), out, cap) => match line {
                        LineRead::Line(end) => {
                            let in_sync = written && !broken && out.len() == end + 1;
                            let mut line: Vec<u8> = out.drain(..=end).collect();
                            line.pop();
                            if line.last() == Some(&b'\r') {
                                line.pop();
                            }
                            break 'exchange Exchange::Answered { line, in_sync };
                        }
                        LineRead::TooLong => {
                            break 'exchange Exchange::Bad {
                                why: format!("a line longer than the {cap}-byte output cap"),
                            };
                        }
                        LineRead::Eof => {
                            *stdout = None;
                        }
                    },
                    open = read_stderr(stderr.as_mut(), ring) => {
                        if !open {
                            *stderr = None;
                        }
                    }
                    status = child.wait() => break 'exchange Exchange::Exited { status },
                    () = &mut timeout => break 'exchange Exchange::TimedOut,
                    () = &mut abandoned => break 'exchange Exchange::Cancelled,
                    () = &mut shutdown => break 'exchange Exchange::Shutdown,
                }
            }
        };
        if !broken {
            *stdin = pipe;
        }
        if let Exchange::Exited { .. } = ended {
            // Read what the worker wrote before it exited, for a short while, then give up on
            // anything that still holds its pipes.
            let drain_until = Instant::now() + AFTER_EXIT_DRAIN;
            while stdout.is_some() || stderr.is_some() {
                tokio::select! {
                    open = read_capped(stdout.as_mut(), out, cap) => {
                        if !open {
                            *stdout = None;
                        }
                    }
                    open = read_stderr(stderr.as_mut(), ring) => {
                        if !open {
                            *stderr = None;
                        }
                    }
                    () = sleep_until(drain_until) => break,
                }
            }
        }
        ended
    }
}

/// What becomes of a worker after a request.
enum Fate {
    /// It answered well and waits for the next request.
    Stay,
    /// It answered, but out of step; it is stopped without counting as a failure.
    Replace,
    /// It answered with something that is not an answer (the reason); stopped, a failure.
    Bad(String),
    /// It exited or timed out; stopped, a failure.
    Failed,
}

/// The answer line as the hook's stdout, or why it is not an answer: it must be UTF-8 and
/// either blank (no output) or one JSON value.
fn check_answer(line: Vec<u8>, cap: usize) -> Result<String, String> {
    if line.len() > cap {
        return Err(format!("a line longer than the {cap}-byte output cap"));
    }
    let line = match String::from_utf8(line) {
        Ok(line) => line,
        Err(error) => {
            let text = String::from_utf8_lossy(error.as_bytes()).into_owned();
            return Err(format!("a line that is not UTF-8: {}", quote(&text)));
        }
    };
    // Only checked here (the runner interprets it): parsed without building anything.
    if line.trim().is_empty() || serde_json::from_str::<serde::de::IgnoredAny>(&line).is_ok() {
        Ok(line)
    } else {
        Err(format!("a line that is not JSON: {}", quote(&line)))
    }
}

/// `text`, shortened for a message.
fn quote(text: &str) -> String {
    let mut quoted: String = text.chars().take(QUOTED_ANSWER_CHARS).collect();
    if quoted.len() < text.len() {
        quoted.push_str("...");
    }
    format!("{quoted:?}")
}

/// The outcome of a worker that exited during a request, and its stdout (what it wrote
/// before exiting), as a one-shot hook that exited that way would have them.
fn exited_outcome(
    status: io::Result<ExitStatus>,
    out: &mut Vec<u8>,
    cap: usize,
) -> (HookOutcome, String) {
    use std::os::unix::process::ExitStatusExt;

    let overflowed = out.len() > cap;
    out.truncate(cap);
    let stdout = String::from_utf8_lossy(out).into_owned();
    out.clear();
    let outcome = match status {
        Ok(status) => match (status.code(), status.signal()) {
            (code, _) if overflowed => HookOutcome::OutputTooLarge {
                stream: StreamName::Stdout,
                cap_bytes: cap,
                code,
            },
            (Some(code), _) => HookOutcome::Exited { code },
            (None, Some(signal)) => HookOutcome::Signalled { signal },
            (None, None) => HookOutcome::Exited { code: 0 },
        },
        Err(error) => HookOutcome::SpawnFailed {
            message: format!("Lost track of the hook's worker: {error}"),
            cause: crate::process::spawn_cause(&error),
        },
    };
    (outcome, stdout)
}

/// The outcome of a hook whose `timeout` passed.
fn timed_out(timeout: Duration) -> HookOutcome {
    HookOutcome::TimedOut {
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
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

/// `start + duration`, or far in the future when that cannot be represented.
fn later(start: Instant, duration: Duration) -> Instant {
    start
        .checked_add(duration)
        .or_else(|| start.checked_add(Duration::from_secs(100 * 365 * 24 * 60 * 60)))
        .unwrap_or(start)
}

/// Locks a mutex; a panic elsewhere while it was held leaves data that is still consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes one request line. Fails when there is no stdin or the worker closed it.
async fn write_line(stdin: Option<&mut pipe::Sender>, payload: &Bytes) -> io::Result<()> {
    let Some(stdin) = stdin else {
        return Err(io::ErrorKind::BrokenPipe.into());
    };
    // One write for the line: a worker blocked in `readline` wakes once, not once for the
    // payload and again for its newline. Nearly always the pipe takes it all at once, from
    // the payload and a newline side by side.
    let parts = [io::IoSlice::new(payload), io::IoSlice::new(b"\n")];
    let written = match stdin.try_write_vectored(&parts) {
        Ok(written) => written,
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => 0,
        Err(error) => return Err(error),
    };
    if written == payload.len() + 1 {
        return Ok(());
    }
    let mut rest = Vec::with_capacity(payload.len() + 1 - written);
    rest.extend_from_slice(payload.get(written..).unwrap_or_default());
    if written <= payload.len() {
        rest.push(b'\n');
    }
    stdin.write_all(&rest).await?;
    stdin.flush().await
}

/// How reading an answer line ended.
enum LineRead {
    /// `out[..=end]` is a line, its `\n` at `end`.
    Line(usize),
    /// More than the cap arrived without a newline.
    TooLong,
    /// End of file (or a read error).
    Eof,
}

/// Reads from stdout into `out` until it holds a whole line. Cancel-safe: what was read stays
/// in `out`. Pends forever without a pipe.
async fn read_line(stdout: Option<&mut pipe::Receiver>, out: &mut Vec<u8>, cap: usize) -> LineRead {
    let Some(stdout) = stdout else {
        return std::future::pending().await;
    };
    let mut searched = 0;
    loop {
        if let Some(offset) = out[searched..].iter().position(|&byte| byte == b'\n') {
            return LineRead::Line(searched + offset);
        }
        if out.len() > cap {
            return LineRead::TooLong;
        }
        searched = out.len();
        out.reserve(4096);
        match stdout.read_buf(out).await {
            Ok(0) | Err(_) => return LineRead::Eof,
            Ok(_) => {}
        }
    }
}

/// Reads one chunk into `out`, keeping at most one byte past `cap` (enough to tell that the
/// cap was passed); `false` at end of file. Pends forever without a pipe.
async fn read_capped<R: AsyncRead + Unpin>(
    pipe: Option<&mut R>,
    out: &mut Vec<u8>,
    cap: usize,
) -> bool {
    let Some(pipe) = pipe else {
        return std::future::pending().await;
    };
    let before = out.len();
    out.reserve(READ_CHUNK);
    match pipe.read_buf(out).await {
        Ok(0) | Err(_) => false,
        Ok(_) => {
            // Read into the buffer's spare room (not zeroed first), then cut back to the cap.
            out.truncate(out.len().min((cap + 1).max(before)));
            true
        }
    }
}

/// Reads one chunk of stdout while idle: `true` if anything arrived, `false` at end of file.
async fn read_some(stdout: Option<&mut pipe::Receiver>, out: &mut Vec<u8>) -> bool {
    read_capped(stdout, out, STDERR_RING_BYTES).await
}

/// Reads one chunk of stderr into the ring; `false` at end of file. Pends forever without a
/// pipe.
async fn read_stderr(stderr: Option<&mut pipe::Receiver>, ring: &mut StderrRing) -> bool {
    let Some(stderr) = stderr else {
        return std::future::pending().await;
    };
    ring.scratch.clear();
    match stderr.read_buf(&mut ring.scratch).await {
        Ok(0) | Err(_) => false,
        Ok(_) => {
            ring.push_scratch();
            true
        }
    }
}

/// Reads whatever stderr holds right now without waiting, so that what a worker wrote to
/// stderr just before its answer line is part of that request's stderr even though the two
/// pipes are read independently.
fn drain_ready(stderr: Option<&pipe::Receiver>, ring: &mut StderrRing) {
    let Some(stderr) = stderr else {
        return;
    };
    // The pipe is non-blocking: an empty pipe is `EAGAIN`.
    for _ in 0..64 {
        ring.scratch.clear();
        match stderr.try_read_buf(&mut ring.scratch) {
            Ok(0) | Err(_) => return,
            Ok(_) => ring.push_scratch(),
        }
    }
}

/// The latest stderr bytes of a worker, at most `cap` of them.
#[derive(Debug)]
struct StderrRing {
    bytes: std::collections::VecDeque<u8>,
    cap: usize,
    /// Bytes dropped from the front since the last `clear`.
    dropped: u64,
    /// Where each read lands before it joins the ring, kept for the worker's life.
    scratch: Vec<u8>,
}

impl StderrRing {
    fn new(cap: usize) -> StderrRing {
        StderrRing {
            bytes: std::collections::VecDeque::new(),
            cap,
            dropped: 0,
            scratch: Vec::with_capacity(READ_CHUNK),
        }
    }

    /// Adds what the last read put into `scratch`.
    fn push_scratch(&mut self) {
        let scratch = std::mem::take(&mut self.scratch);
        self.push(&scratch);
        self.scratch = scratch;
    }

    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let over = self.bytes.len().saturating_sub(self.cap);
        if over > 0 {
            self.bytes.drain(..over);
            self.dropped += over as u64;
        }
    }

    fn clear(&mut self) {
        self.bytes = std::collections::VecDeque::new();
        self.dropped = 0;
    }

    /// What arrived since the last `clear`, as text, with a note if some was dropped.
    fn take_text(&mut self) -> String {
        let (front, back) = self.bytes.as_slices();
        let mut bytes = Vec::with_capacity(front.len() + back.len());
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        let mut text = String::new();
        if self.dropped > 0 {
            text.push_str(&format!(
                "[hookd: {} earlier bytes of the worker's stderr were dropped]\n",
                self.dropped
            ));
        }
        text.push_str(&String::from_utf8_lossy(&bytes));
        self.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::Value;
    use tokio::sync::Semaphore;

    use crate::prewarm::Prewarmer;

    const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

    /// A worker that counts its requests and answers `{"n": <count>, "pid": <pid>}`, except
    /// for requests containing `crash` (exit 3), `hang` (sleep), `garbage` (not JSON),
    /// `flood` (a line over the cap) and `slow` (answers after a second). It notes each
    /// ordinary request on stderr.
    const WORKER: &str = r#"i=0
while IFS= read -r line; do
  i=$((i+1))
  case "$line" in
    *crash*) echo "dying on request $i" >&2; exit 3;;
    *hang*) echo "hanging" >&2; sleep 30;;
    *garbage*) echo "not json";;
    *flood*) head -c 5000 /dev/zero | tr '\0' x; echo;;
    *slow*) sleep 1; printf '{"n":%d,"pid":%d}\n' "$i" "$$";;
    *) echo "note $i" >&2; printf '{"n":%d,"pid":%d}\n' "$i" "$$";;
  esac
done"#;

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

        fn key(&self, script: &str, session: &str) -> ProcessKey {
            ProcessKey {
                event: HookEventName::BeforeTool,
                source: Source::User,
                origin: None,
                name: Some("w".to_owned()),
                command: script.to_owned(),
                project_dir: "/srv/proj".to_owned(),
                session_id: session.to_owned(),
                plans_dir: "/srv/plans".to_owned(),
                program: PathBuf::from("bash"),
                args: vec!["-c".to_owned(), script.to_owned()],
                cwd: self.dir.path().to_path_buf(),
                env: Arc::new(HookEnv::new(vec![("PATH".to_owned(), PATH.to_owned())])),
                max_data_bytes: None,
            }
        }

        async fn ask_with(
            &self,
            key: &ProcessKey,
            pool: usize,
            idle_ms: u64,
            payload: &str,
            timeout: Duration,
            cancel: &CancellationToken,
        ) -> HookRun {
            let request = WorkerRequest {
                key: Arc::new(key.clone()),
                settings: WorkerSettings {
                    pool,
                    idle_timeout_ms: idle_ms,
                },
                payload: Bytes::copy_from_slice(payload.as_bytes()),
                timeout,
                limits: &self.limits,
                slots: SlotSource {
                    semaphore: &self.semaphore,
                    workers: &self.workers,
                    prewarm: &self.prewarm,
                    kill_grace: self.limits.kill_grace,
                },
                cancel,
            };
            self.workers.run(request).await
        }

        async fn ask(&self, key: &ProcessKey, payload: &str) -> HookRun {
            let cancel = CancellationToken::new();
            self.ask_with(key, 1, 60_000, payload, Duration::from_secs(10), &cancel)
                .await
        }
    }

    /// The `(n, pid)` of an answer of [`WORKER`].
    fn answer(run: &HookRun) -> (u64, i32) {
        let value: Value =
            serde_json::from_str(&run.stdout).unwrap_or_else(|_| panic!("not an answer: {run:?}"));
        let n = value["n"].as_u64().expect("n");
        let pid = value["pid"].as_i64().expect("pid");
        (n, i32::try_from(pid).expect("pid fits"))
    }

    /// Whether `pid` is alive (a zombie counts as dead).
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    }

    /// Polls `condition` until it holds, failing after 10 s.
    async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(std::time::Instant::now() < deadline, "never: {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn restart_delays_grow_and_stop_at_five_seconds() {
        let ms = |n| restart_delay(n).as_millis();
        let delays: Vec<u128> = (0..10).map(ms).collect();
        assert_eq!(delays, [0, 0, 100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(ms(u32::MAX), 5000);
    }

    #[test]
    fn answers_must_be_one_json_value_or_blank() {
        // (line, accepted?)
        let cases: [(&[u8], bool); 8] = [
            (br#"{"decision":"deny"}"#, true),
            (b"[1,2]", true),
            (b"\"text\"", true),
            (b"42", true),
            (b"", true),
            (b"  ", true),
            (b"not json", false),
            (b"{\"a\":\xff}", false),
        ];
        for (line, accepted) in cases {
            let checked = check_answer(line.to_vec(), 100);
            assert_eq!(checked.is_ok(), accepted, "{line:?}: {checked:?}");
        }
        let long = check_answer(vec![b'1'; 101], 100);
        assert_eq!(
            long,
            Err("a line longer than the 100-byte output cap".to_owned())
        );
        let quoted = check_answer(vec![b'x'; 300], 1000).expect_err("not JSON");
        assert!(quoted.ends_with("...\""), "{quoted}");
    }

    #[test]
    fn the_stderr_ring_keeps_the_latest_bytes() {
        let mut ring = StderrRing::new(4);
        ring.push(b"ab");
        assert_eq!(ring.take_text(), "ab");
        ring.push(b"abcdef");
        assert_eq!(
            ring.take_text(),
            "[hookd: 2 earlier bytes of the worker's stderr were dropped]\ncdef"
        );
        assert_eq!(ring.take_text(), "");
    }

    #[tokio::test]
    async fn one_worker_answers_every_request_and_its_stderr_goes_with_each() {
        let harness = Harness::new(4);
        let key = harness.key(WORKER, "s");
        let mut pids = Vec::new();
        for expected in 1..=50 {
            let run = harness.ask(&key, r#"{"x":1}"#).await;
            assert_eq!(run.outcome, HookOutcome::Exited { code: 0 }, "{run:?}");
            let (n, pid) = answer(&run);
            assert_eq!(n, expected);
            assert_eq!(run.stderr, format!("note {n}\n"));
            pids.push(pid);
        }
        pids.dedup();
        assert_eq!(pids.len(), 1, "{pids:?}");
        assert_eq!(harness.workers.live_workers(), 1);
        // One permit is held by the live worker.
        assert_eq!(harness.semaphore.available_permits(), 3);
    }

    #[tokio::test]
    async fn a_line_larger_than_the_pipe_reaches_the_worker_whole() {
        let harness = Harness::new(4);
        // Answers with the length of each line it reads.
        let key = harness.key(
            r#"while IFS= read -r line; do printf '{"length":%d}\n' "${#line}"; done"#,
            "s",
        );
        for size in [10, 300_000, 20] {
            let payload = format!(r#"{{"x":"{}"}}"#, "y".repeat(size));
            let run = harness.ask(&key, &payload).await;
            assert_eq!(run.outcome, HookOutcome::Exited { code: 0 }, "{run:?}");
            assert_eq!(
                run.stdout,
                format!(r#"{{"length":{}}}"#, payload.len()),
                "{size}"
            );
        }
    }

    #[tokio::test]
    async fn failures_stop_the_worker_and_the_next_request_gets_a_new_one() {
        let harness = Harness::new(4);
        let key = harness.key(WORKER, "s");
        let timeout = Duration::from_secs(1);
        // (request, outcome, what its stderr contains)
        let cases = [
            (
                "crash",
                HookOutcome::Exited { code: 3 },
                "dying on request 2",
            ),
            (
                "hang",
                HookOutcome::TimedOut { timeout_ms: 1000 },
                "hanging",
            ),
            (
                "garbage",
                HookOutcome::Exited { code: 1 },
                "[hookd: the worker answered with a line that is not JSON: \"not json\"; it \
                 was stopped and starts again on the next event]",
            ),
            (
                "flood",
                HookOutcome::Exited { code: 1 },
                "the worker answered with a line longer than the 4096-byte output cap",
            ),
        ];
        for (request, outcome, stderr) in cases {
            let first = harness.ask(&key, "{}").await;
            let (_, pid) = answer(&first);
            let started = std::time::Instant::now();
            let cancel = CancellationToken::new();
            let run = harness
                .ask_with(&key, 1, 60_000, request, timeout, &cancel)
                .await;
            assert!(started.elapsed() < Duration::from_secs(5), "{request}");
            assert_eq!(run.outcome, outcome, "{request}: {run:?}");
            assert!(run.stderr.contains(stderr), "{request}: {run:?}");
            assert_eq!(run.stdout, "", "{request}");
            eventually(&format!("worker {pid} is gone after {request}"), || {
                !alive(pid)
            })
            .await;
            // Its first failure in a row: restarted at once, counting from 1 again.
            let next = harness.ask(&key, "{}").await;
            let (n, new_pid) = answer(&next);
            assert_eq!(n, 1, "{request}: {next:?}");
            assert_ne!(new_pid, pid, "{request}");
        }
    }

    #[tokio::test]
    async fn a_worker_that_keeps_failing_is_restarted_with_a_backoff() {
        let harness = Harness::new(4);
        let key = harness.key("echo 'broken worker' >&2; exit 7", "s");
        let first = harness.ask(&key, "{}").await;
        assert_eq!(first.outcome, HookOutcome::Exited { code: 7 }, "{first:?}");
        assert_eq!(first.stderr, "broken worker\n");
        // The first failure is retried at once; from the second on, a backoff of 100 ms,
        // doubling, during which requests fail at once. The backoff only grows, so however
        // slow the machine, a request soon falls inside one.
        let second = harness.ask(&key, "{}").await;
        assert_eq!(second.outcome, HookOutcome::Exited { code: 7 });
        let mut failed_fast = None;
        for _ in 0..10 {
            let run = harness.ask(&key, "{}").await;
            match run.outcome {
                HookOutcome::Exited { code: 7 } => continue,
                HookOutcome::SpawnFailed { message, .. } => {
                    failed_fast = Some(message);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        let message = failed_fast.expect("a request during a backoff fails at once");
        assert!(
            message.starts_with("Failed to spawn hook: the worker of w failed "),
            "{message}"
        );
        assert!(message.contains(" times in a row; it is started again in "));
        // After the backoff (at most 5 s) it is tried again.
        let mut retried = None;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let run = harness.ask(&key, "{}").await;
            if run.outcome == (HookOutcome::Exited { code: 7 }) {
                retried = Some(run);
                break;
            }
        }
        assert!(retried.is_some(), "the worker was never started again");
        assert_eq!(harness.workers.live_workers(), 0);
        eventually("every permit is back", || {
            harness.semaphore.available_permits() == 4
        })
        .await;
    }

    #[tokio::test]
    async fn a_cancelled_request_stops_its_worker_and_frees_its_slot() {
        // One permit: the next request can only be served once the first worker is gone.
        let harness = Harness::new(1);
        let key = harness.key(WORKER, "s");
        let (_, pid) = answer(&harness.ask(&key, "{}").await);
        let cancel = CancellationToken::new();
        let hung = harness.ask_with(&key, 1, 60_000, "hang", Duration::from_secs(30), &cancel);
        let stop = async {
            // Give the request time to reach the worker (which is stopped either way).
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        };
        let (run, ()) = tokio::join!(hung, stop);
        assert_eq!(run.outcome, HookOutcome::Cancelled);
        eventually("the cancelled worker is gone", || !alive(pid)).await;
        let next = tokio::time::timeout(Duration::from_secs(10), harness.ask(&key, "{}"))
            .await
            .expect("served after the cancellation");
        let (n, new_pid) = answer(&next);
        assert_eq!(n, 1);
        assert_ne!(new_pid, pid);
    }

    #[tokio::test]
    async fn idle_workers_are_stopped_and_give_their_permit_back() {
        let harness = Harness::new(2);
        let key = harness.key(WORKER, "s");
        let cancel = CancellationToken::new();
        let run = harness
            .ask_with(&key, 1, 300, "{}", Duration::from_secs(10), &cancel)
            .await;
        let (_, pid) = answer(&run);
        assert!(alive(pid));
        eventually("the idle worker is gone", || !alive(pid)).await;
        eventually("its permit is back", || {
            harness.semaphore.available_permits() == 2
        })
        .await;
        eventually("its pool is forgotten", || {
            lock(&harness.workers.inner.pools).is_empty()
        })
        .await;
    }

    #[tokio::test]
    async fn a_pool_serves_requests_in_parallel_and_sessions_have_their_own_workers() {
        let harness = Harness::new(8);
        // Each request waits (up to 5 s) until two requests are being served at once.
        let script = format!(
            "cd '{}'; while IFS= read -r line; do touch \"busy.$$\"; \
             for i in $(seq 250); do [ $(ls busy.* | wc -l) -ge 2 ] && break; sleep 0.02; done; \
             printf '{{\"n\":%d,\"pid\":%d}}\\n' \"$(ls busy.* | wc -l)\" $$; done",
            harness.dir.path().display()
        );
        let key = harness.key(&script, "s");
        let cancel = CancellationToken::new();
        let ask = || harness.ask_with(&key, 2, 60_000, "{}", Duration::from_secs(20), &cancel);
        let (a, b) = tokio::join!(ask(), ask());
        let (seen_a, pid_a) = answer(&a);
        let (seen_b, pid_b) = answer(&b);
        assert_ne!(pid_a, pid_b);
        assert_eq!((seen_a, seen_b), (2, 2), "the two requests overlapped");
        assert_eq!(harness.workers.live_workers(), 2);

        let (_, one) = answer(&harness.ask(&harness.key(WORKER, "session-1"), "{}").await);
        let (_, two) = answer(&harness.ask(&harness.key(WORKER, "session-2"), "{}").await);
        let (_, one_again) = answer(&harness.ask(&harness.key(WORKER, "session-1"), "{}").await);
        assert_ne!(one, two);
        assert_eq!(one, one_again);
    }

    #[tokio::test]
    async fn a_request_waiting_for_a_slot_takes_a_worker_of_its_pool_that_frees_up() {
        // One hook slot, a pool of two: the second request cannot start a worker, so it
        // takes the first one when that one is done, rather than stopping it for its slot.
        let harness = Harness::new(1);
        let key = harness.key(WORKER, "s");
        let cancel = CancellationToken::new();
        let ask =
            |payload| harness.ask_with(&key, 2, 60_000, payload, Duration::from_secs(20), &cancel);
        // `join!` polls the slow request first, so it starts the only worker.
        let (slow, quick) = tokio::join!(ask("slow"), ask("{}"));
        let (n_slow, pid_slow) = answer(&slow);
        let (n_quick, pid_quick) = answer(&quick);
        assert_eq!((n_slow, n_quick), (1, 2));
        assert_eq!(pid_slow, pid_quick);
        assert_eq!(harness.workers.live_workers(), 1);
    }

    #[tokio::test]
    async fn shutdown_and_drop_stop_every_worker() {
        let harness = Harness::new(4);
        let key = harness.key(WORKER, "s");
        let (_, pid) = answer(&harness.ask(&key, "{}").await);
        tokio::time::timeout(Duration::from_secs(10), harness.workers.shutdown())
            .await
            .expect("shutdown is bounded");
        assert!(!alive(pid));
        let after = harness.ask(&key, "{}").await;
        assert_eq!(after.outcome, HookOutcome::Cancelled);

        let harness = Harness::new(4);
        let (_, pid) = answer(&harness.ask(&key, "{}").await);
        drop(harness);
        eventually("the dropped pools' worker is gone", || !alive(pid)).await;
    }

    #[tokio::test]
    async fn a_hook_that_needs_a_permit_takes_it_from_an_idle_worker() {
        let harness = Harness::new(1);
        let (_, pid) = answer(&harness.ask(&harness.key(WORKER, "s"), "{}").await);
        assert_eq!(harness.semaphore.available_permits(), 0);
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
        .expect("the idle worker gave its permit up");
        assert!(permit.is_some());
        assert!(!alive(pid));
        assert_eq!(harness.workers.live_workers(), 0);
    }

    #[test]
    fn process_keys_compare_and_hash_paths_as_the_bytes_spawned() {
        use std::hash::{DefaultHasher, Hash, Hasher};

        let hash = |key: &ProcessKey| {
            let mut hasher = DefaultHasher::new();
            key.hash(&mut hasher);
            hasher.finish()
        };
        let key = ProcessKey {
            event: HookEventName::AfterModel,
            source: Source::Project,
            origin: Some(PathBuf::from("/srv/proj/.gemini/settings.json")),
            name: Some("w".to_owned()),
            command: "python3 w.py".to_owned(),
            project_dir: "/srv/proj".to_owned(),
            session_id: "s".to_owned(),
            plans_dir: "/srv/plans".to_owned(),
            program: PathBuf::from("/bin/bash"),
            args: vec!["-c".to_owned(), "python3 w.py".to_owned()],
            cwd: PathBuf::from("/srv/proj"),
            env: Arc::new(HookEnv::new(vec![("PATH".to_owned(), PATH.to_owned())])),
            max_data_bytes: None,
        };
        let same = key.clone();
        assert_eq!(key, same);
        assert_eq!(hash(&key), hash(&same));
        // `Path` would call these equal; the processes spawned differ, and so do the keys.
        let mut slash = key.clone();
        slash.cwd = PathBuf::from("/srv/proj/");
        assert_ne!(key, slash);
        let mut origin = key.clone();
        origin.origin = Some(PathBuf::from("/srv/proj//.gemini/settings.json"));
        assert_ne!(key, origin);
        let mut session = key.clone();
        session.session_id = "t".to_owned();
        assert_ne!(key, session);
    }
}
