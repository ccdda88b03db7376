//! Running one hook command as a child process (spec §4.1, §4.5; hookd's hard timeouts and output caps).
//!
//! Each run is a small state machine: *spawning* → *running* → *terminating* → *done*.
//!
//! - **Spawning.** The command starts in its own process group with a complete, explicit
//!   environment and three real pipes (`crate::spawn`: a `vfork`-style clone, never a
//!   `fork` of the daemon). The program is resolved against the `PATH` of that environment
//!   here, and remembered, so a hook's start costs no search of `PATH`.
//! - **Feeding.** The payload is written at once when the pipe takes it whole (nearly always:
//!   a pipe holds 64 KiB) and stdin is closed; a larger one is written while the outputs are
//!   read.
//! - **Running.** stdin is written while stdout and stderr are drained, all in one future, so
//!   a hook that never reads its input or floods its output cannot deadlock us. For its first
//!   few milliseconds a hook is watched through its exit alone and its pipes are read once it
//!   has exited (one wake-up instead of three for the hooks that finish that fast); after that
//!   its pipes are drained as it runs. Each stream is
//!   captured up to a cap; the rest is read and counted but discarded. The run ends when the
//!   direct child has exited *and* both output pipes reached end-of-file — Gemini CLI's
//!   `close` event — but never later than the hook's timeout, and never later than
//!   [`EXITED_GRACE`] after the direct child exited: then whatever of the group still holds a
//!   pipe (`sleep 30 &`) gets `SIGKILL`, and the run ends with the hook's own exit status and
//!   the output read so far (Gemini CLI would wait for the background process).
//! - **Terminating.** At the deadline (or on cancellation) the whole process group gets
//!   `SIGTERM`; draining continues; after the grace period the group gets `SIGKILL`; shortly
//!   after that we stop waiting for anything, even a process that escaped the group and still
//!   holds a pipe. A run therefore always ends within timeout + grace + a small slack.
//! - **Done.** However the run ended, the process group then gets `SIGKILL`, so background
//!   processes the hook started and left behind (`sleep 300 &` with its output redirected,
//!   which does not hold our pipes) die with it. This departs from Gemini CLI, which leaves
//!   them running: a hook must not be able to leave load behind on every event. A hook that
//!   wants a long-lived helper starts it in its own session, with `setsid` run in the
//!   foreground (`setsid sh -c 'helper >/dev/null 2>&1 &'`), so that the helper has left the
//!   group before the hook exits.
//!
//! The direct child is always waited for explicitly, so no zombie is left behind; only a child
//! that survives `SIGKILL` beyond the slack (an uninterruptible sleep) is left to tokio's
//! background reaper.
//!
//! [`run_process`] is [`spawn_process`] followed by [`SpawnedProcess::feed_and_collect`]; the
//! two halves are separate so that a pre-warmed hook's process can be started before its
//! event and fed when the event comes (`crate::prewarm`). A spawned process that is dropped
//! unfed, or whose run is dropped half-way, has its group killed (`GroupGuard`).

use std::ffi::CString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use hookd_core::result::{HookOutcome, HookRun, SpawnCause, StreamName};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::spawn::{self, HookChild, HookEnv, Launch, ReadNow, SpawnError};

/// The default cap on each captured stream (hookd's output caps).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// The default time between `SIGTERM` and `SIGKILL` (hookd's hard timeouts).
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// How long a hook is waited for by its exit alone before its output pipes are drained as it
/// runs (see `SpawnedProcess::collect`): the longest a hook that fills a pipe (64 KiB) within
/// that time waits for it to be read.
const QUICK_EXIT: Duration = Duration::from_millis(5);

/// How long a process group may keep the hook's output pipes open after the hook itself has
/// exited (a background `sleep 30 &` that inherited them) before the group is killed. Output
/// already written is read whole; the hook's exit is its outcome, not a timeout.
pub const EXITED_GRACE: Duration = Duration::from_millis(250);

/// How long we keep draining after `SIGKILL` before giving up on the pipes and the child.
///
/// `SIGKILL` takes effect almost at once, so this only matters when a process escaped the
/// group while holding a pipe, or the child is stuck in the kernel.
const KILL_SLACK: Duration = Duration::from_millis(200);

/// The first buffer reserved for a stream that produces output. Most hooks print a small JSON
/// object; staying under 1 KiB keeps this a small-bin allocation in glibc.
const INITIAL_CAPTURE: usize = 512;

/// The read size once a stream is over its cap: one default Linux pipe buffer.
const DISCARD_CHUNK: usize = 64 * 1024;

/// Far enough in the future to mean "no deadline" for timeouts too large to represent.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// Limits that apply to every hook process, whatever its own configuration says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLimits {
    /// The most bytes captured from each of stdout and stderr (hookd's output caps).
    pub max_output_bytes: usize,
    /// How long a terminated process group gets between `SIGTERM` and `SIGKILL` (hookd's hard timeouts).
    pub kill_grace: Duration,
}

impl Default for ProcessLimits {
    fn default() -> Self {
        ProcessLimits {
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            kill_grace: DEFAULT_KILL_GRACE,
        }
    }
}

/// Everything needed to run one hook process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    /// The program, usually `bash`; a name without `/` is looked up in the `PATH` of [`env`].
    ///
    /// [`env`]: ProcessSpec::env
    pub program: PathBuf,
    /// The arguments, usually `["-c", <expanded command>]`.
    pub args: Vec<String>,
    /// The working directory (the session's working directory).
    pub cwd: PathBuf,
    /// The complete environment of the process; nothing is inherited from the daemon.
    pub env: Arc<HookEnv>,
    /// The bytes written to the process's stdin, which is closed afterwards.
    pub stdin: Bytes,
    /// How long the process may run before its process group is terminated.
    pub timeout: Duration,
    /// The process's `RLIMIT_DATA` in bytes (the hook's `max_memory_mb`), if limited.
    pub max_data_bytes: Option<u64>,
}

/// Runs one process to completion, timeout or cancellation and reports what happened.
///
/// This never fails: every way a run can end is a [`HookOutcome`]. It returns within
/// `spec.timeout + limits.kill_grace` plus a small slack, whatever the process does.
pub async fn run_process(
    spec: ProcessSpec,
    limits: &ProcessLimits,
    cancel: &CancellationToken,
) -> HookRun {
    run_started_by(spec, limits, cancel, spawn_process).await
}

/// Runs `spec` as [`run_process`] does, its process started by `start`.
pub(crate) async fn run_started_by(
    spec: ProcessSpec,
    limits: &ProcessLimits,
    cancel: &CancellationToken,
    start: impl FnOnce(&ProcessSpec) -> Result<SpawnedProcess, SpawnFailure>,
) -> HookRun {
    let started = Instant::now();
    if cancel.is_cancelled() {
        return finished(
            HookOutcome::Cancelled,
            Capture::new(0),
            Capture::new(0),
            started,
        );
    }
    match start(&spec) {
        Ok(process) => {
            process
                .collect(started, spec.stdin, spec.timeout, limits, cancel)
                .await
        }
        Err(failure) => spawn_failed(failure, started),
    }
}

/// Why a process could not be started: the message a run reports, and whose trouble it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnFailure {
    /// The message, as the hook's record shows it.
    pub message: String,
    /// The hook's trouble, or hookd's own shortage of resources ([`spawn_cause`]).
    pub cause: SpawnCause,
}

impl SpawnFailure {
    /// A failure that is the hook's (a missing program, a bad argument).
    pub fn of_hook(message: String) -> SpawnFailure {
        SpawnFailure {
            message,
            cause: SpawnCause::Hook,
        }
    }
}

impl std::fmt::Display for SpawnFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Whether `error` says hookd itself was short of a resource: out of descriptors (`EMFILE`,
/// the process's; `ENFILE`, the system's), out of processes or threads (`EAGAIN` from
/// `fork`/`clone`) or out of memory (`ENOMEM`). Such a start never reached the hook, so the
/// circuit breaker must not count it against the hook (`crate::breakers::verdict`).
pub fn spawn_cause(error: &io::Error) -> SpawnCause {
    match error.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::EAGAIN | libc::ENOMEM) => {
            SpawnCause::DaemonResources
        }
        _ => SpawnCause::Hook,
    }
}

/// The executable `program` names on `path_var` from `cwd` (remembered as spawns remember
/// it), or `program` itself when it holds a `/`; `None` when there is none.
pub(crate) fn find_program(program: &Path, path_var: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    PROGRAMS
        .find(program, path_var, cwd)
        .ok()
        .map(|(found, _)| found)
}

/// Starts the process of `spec` (its program, arguments, working directory and environment;
/// `stdin` and `timeout` are for [`SpawnedProcess::feed_and_collect`]) and returns it
/// blocked on its stdin, or the message of a failed spawn as `run_process` reports it.
///
/// This is the first half of [`run_process`], for a process started before its input is
/// known (a pre-warmed hook, see `crate::prewarm`).
pub fn spawn_process(spec: &ProcessSpec) -> Result<SpawnedProcess, SpawnFailure> {
    let mut child = spawn_child(spec)?;
    // The child leads its own group, so its pid is the group id. It cannot be reused while
    // the child is unreaped, and the group id stays reserved while any member is alive.
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    Ok(SpawnedProcess {
        stdin: child.stdin.take(),
        child,
        guard: GroupGuard(group),
    })
}

/// A started hook process with its three pipes, not yet given its input.
///
/// Dropping it kills its whole process group with `SIGKILL`, so a process that is never fed
/// (a spare dropped at shutdown, a run whose future is dropped) is not left behind.
#[derive(Debug)]
pub struct SpawnedProcess {
    child: HookChild,
    /// The write end of the process's stdin (non-blocking), until the input is written.
    stdin: Option<OwnedFd>,
    guard: GroupGuard,
}

impl SpawnedProcess {
    /// The process id (also its process group id), while it has not been reaped.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Whether the process has already exited (it is reaped if so).
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Writes `stdin` to the process, closes it, and collects the run exactly as
    /// [`run_process`] does; `timeout` and the run's duration count from this call.
    pub async fn feed_and_collect(
        self,
        stdin: Bytes,
        timeout: Duration,
        limits: &ProcessLimits,
        cancel: &CancellationToken,
    ) -> HookRun {
        self.collect(Instant::now(), stdin, timeout, limits, cancel)
            .await
    }

    /// Waits until the process exits (it is reaped then).
    pub(crate) async fn wait_exit(&mut self) {
        let _ = self.child.wait().await;
    }

    /// Stops the process without feeding it (a spare that is no longer wanted): see
    /// [`terminate_group`].
    pub(crate) async fn terminate(mut self, grace: Duration) {
        self.stdin = None;
        terminate_group(&mut self.child, &mut self.guard, grace).await;
    }

    /// The child and its group guard, for a caller that drives the pipes itself (a
    /// persistent worker, see `crate::worker`).
    pub(crate) fn into_parts(self) -> (HookChild, GroupGuard) {
        let SpawnedProcess {
            mut child,
            stdin,
            guard,
        } = self;
        child.stdin = stdin;
        (child, guard)
    }

    async fn collect(
        self,
        started: Instant,
        stdin: Bytes,
        timeout: Duration,
        limits: &ProcessLimits,
        cancel: &CancellationToken,
    ) -> HookRun {
        let SpawnedProcess {
            mut child,
            stdin: pipe,
            mut guard,
        } = self;
        let group = guard.0;
        let mut out = Capture::new(limits.max_output_bytes);
        let mut err = Capture::new(limits.max_output_bytes);
        // Nearly every payload fits in the pipe at once: written here, stdin is closed before
        // the first wait and never registered with the runtime.
        let unwritten = write_stdin_now(pipe, &stdin);
        let mut stdin_done = unwritten.is_none();
        let mut stdin_task = pin!(feed_stdin(unwritten, stdin));
        let deadline = later(started, timeout);
        let mut status: Option<io::Result<ExitStatus>> = None;

        // A short hook is waited for by its exit alone, and its pipes are read once it has
        // exited: the daemon then wakes once, not once for each pipe the exiting hook closes
        // and once more for the exit (each such wake-up preempts the exiting hook on its CPU).
        // A hook still running after `QUICK_EXIT` (or still being fed its input, or cancelled)
        // has its pipes drained as it runs from then on, so none waits on a full pipe longer.
        let (mut stdout_fd, mut stderr_fd) = (child.stdout.take(), child.stderr.take());
        if stdin_done {
            let quick = sleep_until(deadline.min(Instant::now() + QUICK_EXIT));
            tokio::select! {
                biased;
                exited = child.wait() => status = Some(exited),
                () = quick => {}
                // The loop below stops the group.
                () = cancel.cancelled() => {}
            }
            if status.is_some() {
                drain_now(&mut stdout_fd, &mut out);
                drain_now(&mut stderr_fd, &mut err);
            }
        }
        // A pipe that cannot be watched (the runtime is out of resources) loses the hook's
        // output, and with it any decision, or cuts its input: the run is a failure then,
        // under the hook's `on_failure`, never an empty allow.
        let mut lost_pipe: Option<io::Error> = None;
        let mut stdout = stdout_fd.and_then(|fd| register_output(fd, &mut lost_pipe));
        let mut stderr = stderr_fd.and_then(|fd| register_output(fd, &mut lost_pipe));

        let mut timer = pin!(sleep_until(deadline));
        let mut phase = Phase::Running;
        let mut stop: Option<StopReason> = None;

        loop {
            if status.is_some() && stdout.is_none() && stderr.is_none() {
                break;
            }
            if status.is_some() && phase == Phase::Running {
                // The hook has exited but something it started still holds a pipe (`sleep 30
                // &`): it gets a short grace to finish writing, then the group is killed.
                phase = Phase::Exited;
                let grace = later(Instant::now(), EXITED_GRACE).min(deadline);
                timer.as_mut().reset(grace);
            }
            tokio::select! {
                fed = &mut stdin_task, if !stdin_done => {
                    stdin_done = true;
                    // The hook would read a cut payload: as unsafe as a lost answer.
                    if let Err(error) = fed {
                        lost_pipe.get_or_insert(error);
                    }
                }
                open = read_chunk(stdout.as_mut(), &mut out), if stdout.is_some() => {
                    if !open {
                        if let Some(reader) = stdout.take() {
                            spawn::defer_reader(reader);
                        }
                    }
                }
                open = read_chunk(stderr.as_mut(), &mut err), if stderr.is_some() => {
                    if !open {
                        if let Some(reader) = stderr.take() {
                            spawn::defer_reader(reader);
                        }
                    }
                }
                exited = child.wait(), if status.is_none() => status = Some(exited),
                () = &mut timer => {
                    match phase {
                        Phase::Exited => {
                            // Not a timeout: the hook answered by exiting; what it left
                            // behind is killed, and its exit is the outcome.
                            signal_group(group, Signal::SIGKILL);
                            phase = Phase::Killed;
                            timer.as_mut().reset(later(Instant::now(), KILL_SLACK));
                        }
                        Phase::Running => {
                            stop.get_or_insert(StopReason::TimedOut);
                            signal_group(group, Signal::SIGTERM);
                            phase = Phase::Terminating;
                            timer.as_mut().reset(later(Instant::now(), limits.kill_grace));
                        }
                        Phase::Terminating => {
                            signal_group(group, Signal::SIGKILL);
                            phase = Phase::Killed;
                            timer.as_mut().reset(later(Instant::now(), KILL_SLACK));
                        }
                        // Whatever still holds a pipe escaped the group; stop waiting for it.
                        Phase::Killed => break,
                    }
                }
                () = cancel.cancelled(), if stop.is_none() => {
                    stop = Some(StopReason::Cancelled);
                    signal_group(group, Signal::SIGTERM);
                    phase = Phase::Terminating;
                    timer.as_mut().reset(later(Instant::now(), limits.kill_grace));
                }
            }
        }

        // Nothing of the hook outlives its run. If members remain, they keep the group id
        // reserved, so the signal reaches exactly them. If none remain and the leader is
        // reaped, the id is free and the kill finds no one: Linux hands out pids cyclically,
        // so the id comes back only after the counter has wrapped around, never within the
        // microseconds since the reap.
        signal_group(group, Signal::SIGKILL);
        // From here on the group id may be reused, so nothing may signal it again.
        guard.disarm();

        if status.is_none() {
            // Only reachable after SIGKILL plus the slack: take the status if it is there by
            // now; otherwise dropping the child hands it to tokio's background reaper.
            status = child.try_wait().transpose();
        }

        let outcome = match stop {
            Some(StopReason::TimedOut) => HookOutcome::TimedOut {
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            },
            Some(StopReason::Cancelled) => HookOutcome::Cancelled,
            None => match status {
                Some(Ok(_)) if lost_pipe.is_some() => HookOutcome::SpawnFailed {
                    message: format!(
                        "Lost the hook's input or output: cannot watch its pipes ({})",
                        lost_pipe
                            .as_ref()
                            .map_or_else(String::new, ToString::to_string)
                    ),
                    cause: lost_pipe.as_ref().map_or(SpawnCause::Hook, spawn_cause),
                },
                Some(Ok(status)) => exit_outcome(status, &out, &err, limits.max_output_bytes),
                Some(Err(error)) => HookOutcome::SpawnFailed {
                    message: format!("Lost track of the hook process: {error}"),
                    cause: spawn_cause(&error),
                },
                // The loop only ends without a status after a stop, handled above.
                None => HookOutcome::Cancelled,
            },
        };
        finished(outcome, out, err, started)
    }
}

/// Kills a hook's process group with `SIGKILL` when dropped, unless disarmed first.
///
/// Armed from spawn until the group has had its final `SIGKILL` after the leader was reaped:
/// after that the group id may be handed out again, so it must never be signalled.
#[derive(Debug)]
pub(crate) struct GroupGuard(Option<Pid>);

impl GroupGuard {
    /// Signals the group, if the guard is still armed.
    pub(crate) fn signal(&self, signal: Signal) {
        signal_group(self.0, signal);
    }

    /// Stops guarding: the group is gone or must no longer be signalled.
    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.0, Signal::SIGKILL);
    }
}

/// Stops a process group the way a timed-out hook is stopped (hookd's hard timeouts): `SIGTERM` to the
/// group, up to `grace` for the leader to exit, `SIGKILL`, a short wait for the leader, and a
/// last `SIGKILL` for whatever is left of the group. Pipes are not drained meanwhile: nothing
/// more is wanted from the process. Returns within `grace` plus a small slack.
pub(crate) async fn terminate_group(
    child: &mut HookChild,
    guard: &mut GroupGuard,
    grace: Duration,
) {
    guard.signal(Signal::SIGTERM);
    let mut reaped = tokio::time::timeout(grace, child.wait()).await.is_ok();
    guard.signal(Signal::SIGKILL);
    if !reaped {
        reaped = tokio::time::timeout(KILL_SLACK, child.wait()).await.is_ok();
    }
    if reaped {
        // The leader is reaped and the rest of the group has had its SIGKILL.
        guard.disarm();
    }
    // Otherwise the unreaped leader keeps the group id reserved, and the guard's own SIGKILL
    // when it is dropped is still safe.
}

/// `start + duration`, or a time too far away to matter when a configured duration is too
/// large to represent.
fn later(start: Instant, duration: Duration) -> Instant {
    start
        .checked_add(duration)
        .or_else(|| start.checked_add(FAR_FUTURE))
        .unwrap_or(start)
}

/// Where the run is in its life; what the timer means depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The timer is the hook's deadline.
    Running,
    /// The hook itself has exited while something it started holds a pipe; the timer is the
    /// end of [`EXITED_GRACE`].
    Exited,
    /// `SIGTERM` was sent; the timer is the end of the grace period.
    Terminating,
    /// `SIGKILL` was sent; the timer is the last moment we wait for anything.
    Killed,
}

/// Why hookd stopped the process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    /// The hook's timeout expired (possibly only a grandchild still held a pipe).
    TimedOut,
    /// The caller cancelled the run.
    Cancelled,
}

/// One output stream's captured bytes, bounded by the cap.
#[derive(Debug)]
struct Capture {
    /// The kept bytes; never longer than `cap` between reads.
    buf: Vec<u8>,
    /// The most bytes kept.
    cap: usize,
    /// How many bytes were read past the cap and thrown away.
    discarded: u64,
}

impl Capture {
    fn new(cap: usize) -> Capture {
        Capture {
            buf: Vec::new(),
            cap,
            discarded: 0,
        }
    }

    /// Makes room for the next read without growing far past the cap.
    fn reserve(&mut self) {
        let len = self.buf.len();
        let spare = self.buf.capacity() - len;
        if len >= self.cap {
            if spare < DISCARD_CHUNK {
                self.buf.reserve_exact(DISCARD_CHUNK);
            }
        } else if spare == 0 {
            // Double like a Vec would, but stop at the cap plus one discard-sized read.
            let room = (self.cap - len).max(DISCARD_CHUNK);
            self.buf.reserve_exact(len.max(INITIAL_CAPTURE).min(room));
        }
    }

    /// Keeps what of `bytes` fits under the cap and counts the rest as discarded.
    fn push(&mut self, bytes: &[u8]) {
        let keep = bytes.len().min(self.cap.saturating_sub(self.buf.len()));
        self.buf.extend_from_slice(&bytes[..keep]);
        self.discarded += (bytes.len() - keep) as u64;
    }

    /// Drops whatever the last read put past the cap, counting it.
    fn trim(&mut self) {
        if self.buf.len() > self.cap {
            self.discarded += (self.buf.len() - self.cap) as u64;
            self.buf.truncate(self.cap);
        }
    }

    fn truncated(&self) -> bool {
        self.discarded > 0
    }

    /// Decodes the whole buffer at once (so multi-byte characters split across reads survive)
    /// and appends the truncation marker if bytes were discarded.
    fn into_text(self, stream: StreamName) -> String {
        let mut text = match String::from_utf8(self.buf) {
            Ok(text) => text,
            Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
        };
        if self.discarded > 0 {
            text.push_str(&format!(
                "\n[hookd: {} truncated after {} bytes; {} more bytes discarded]",
                stream.as_str(),
                self.cap,
                self.discarded
            ));
        }
        text
    }
}

/// Reads one chunk from `pipe` into `capture`; returns `false` at end-of-file or on a read
/// error. Pends forever without a pipe, so a closed stream's `select!` branch stays quiet.
async fn read_chunk<R: AsyncRead + Unpin>(pipe: Option<&mut R>, capture: &mut Capture) -> bool {
    let Some(pipe) = pipe else {
        return std::future::pending().await;
    };
    capture.reserve();
    match pipe.read_buf(&mut capture.buf).await {
        Ok(0) | Err(_) => false,
        Ok(_) => {
            capture.trim();
            true
        }
    }
}

/// Reads what an output pipe holds right now into `capture`; closes the pipe (`None`) once its
/// writers are gone.
fn drain_now(pipe: &mut Option<OwnedFd>, capture: &mut Capture) {
    if let Some(fd) = pipe {
        if spawn::read_now(spawn::borrow(fd), |bytes| capture.push(bytes)) == ReadNow::Eof {
            if let Some(fd) = pipe.take() {
                spawn::defer_close(fd);
            }
        }
    }
}

/// Registers an output pipe with the runtime, to be drained as the hook runs. A pipe that
/// cannot be registered (the runtime is out of resources) is given up: the run does not wait
/// for it, and `lost` records why, so that the run is reported as a failure.
fn register_output(
    fd: OwnedFd,
    lost: &mut Option<io::Error>,
) -> Option<tokio::net::unix::pipe::Receiver> {
    match spawn::register_reader(fd) {
        Ok(pipe) => Some(pipe),
        Err(error) => {
            tracing::warn!(%error, "cannot watch a hook's output pipe");
            lost.get_or_insert(error);
            None
        }
    }
}

/// Writes what of `payload` the pipe takes at once. Returns the pipe and how much was written
/// when some is left, else closes it (a hook need not read its input: a broken pipe, like any
/// other write error, simply ends the writing).
fn write_stdin_now(stdin: Option<OwnedFd>, payload: &Bytes) -> Option<(OwnedFd, usize)> {
    let stdin = stdin?;
    match spawn::write_now(spawn::borrow(&stdin), payload) {
        Ok(written) if written < payload.len() => Some((stdin, written)),
        // Dropping `stdin` closes the pipe so the hook sees end-of-file.
        _ => None,
    }
}

/// Writes the rest of the payload, waiting for the hook to read, then closes stdin. A write
/// error (the hook closed its stdin) simply ends the writing; only a pipe that cannot be
/// watched (the runtime is out of resources) is an error, since the hook would then see a cut
/// payload as if it were whole.
async fn feed_stdin(stdin: Option<(OwnedFd, usize)>, payload: Bytes) -> io::Result<()> {
    let Some((stdin, written)) = stdin else {
        return Ok(());
    };
    let mut pipe = spawn::async_stdin(stdin)?;
    let _ = pipe.write_all(&payload[written..]).await;
    // Dropping `pipe` here closes it so the hook sees end-of-file.
    Ok(())
}

/// Sends `signal` to the hook's process group. A group that is already gone (`ESRCH`) is the
/// goal, and there is nothing better to do about any other error than to carry on draining.
fn signal_group(group: Option<Pid>, signal: Signal) {
    if let Some(group) = group {
        let _ = killpg(group, signal);
    }
}

/// The outcome of a process that ended without being stopped by us.
fn exit_outcome(status: ExitStatus, out: &Capture, err: &Capture, cap: usize) -> HookOutcome {
    use std::os::unix::process::ExitStatusExt;

    // The output is read from stdout, or from stderr when stdout is blank. Only an overflow of
    // that stream is a failure: a stderr flood beside a printed decision is cut at the cap (the
    // hook's log, with the truncation marker) and the decision on stdout stands.
    let overflowed = if out.truncated() {
        Some(StreamName::Stdout)
    } else if err.truncated() && is_blank(&out.buf) {
        Some(StreamName::Stderr)
    } else {
        None
    };
    match (overflowed, status.code(), status.signal()) {
        (Some(stream), code, _) => HookOutcome::OutputTooLarge {
            stream,
            cap_bytes: cap,
            code,
        },
        (None, Some(code), _) => HookOutcome::Exited { code },
        (None, None, Some(signal)) => HookOutcome::Signalled { signal },
        // Neither an exit code nor a signal cannot happen for a waited-for process on Unix.
        (None, None, None) => HookOutcome::Exited { code: 0 },
    }
}

/// Whether captured output is blank by JavaScript's `trim` (what Gemini CLI reads the output
/// with): only whitespace and line terminators, the byte-order mark included.
fn is_blank(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes).chars().all(|c| {
        matches!(
            c,
            '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202f}'
                    | '\u{205f}'
                    | '\u{3000}'
                    | '\u{feff}'
        )
    })
}

fn finished(outcome: HookOutcome, out: Capture, err: Capture, started: Instant) -> HookRun {
    HookRun {
        outcome,
        stdout: out.into_text(StreamName::Stdout),
        stderr: err.into_text(StreamName::Stderr),
        duration: started.elapsed(),
    }
}

fn spawn_failed(failure: SpawnFailure, started: Instant) -> HookRun {
    finished(
        HookOutcome::SpawnFailed {
            message: failure.message,
            cause: failure.cause,
        },
        Capture::new(0),
        Capture::new(0),
        started,
    )
}

/// Starts the process: own process group, exactly the given environment, three pipes. Returns
/// the message of a failed spawn as the run reports it.
///
/// The program comes from [`PROGRAMS`]; if a remembered path no longer works, the lookup is
/// done afresh once before giving up.
fn spawn_child(spec: &ProcessSpec) -> Result<HookChild, SpawnFailure> {
    let failed = |error: &io::Error| {
        SpawnFailure::of_hook(spawn_failure_message(&spec.program, &spec.cwd, error))
    };
    let nul = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    };
    // Keep the name as given for argv[0]: bash prefixes its own messages with it, and a hook's
    // stderr (e.g. `bash: line 1: x: command not found`) can become a deny reason.
    let argv = std::iter::once(spec.program.as_os_str().as_bytes())
        .chain(spec.args.iter().map(String::as_bytes))
        .map(CString::new)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| failed(&nul()))?;
    let cwd = CString::new(spec.cwd.as_os_str().as_bytes()).map_err(|_| failed(&nul()))?;
    let path_var = spec.env.get("PATH");
    let launch = |program: &Path| -> Result<HookChild, SpawnError> {
        let path =
            CString::new(program.as_os_str().as_bytes()).map_err(|_| SpawnError::Other(nul()))?;
        spawn::spawn(&Launch {
            path: &path,
            argv: &argv,
            env: &spec.env,
            cwd: &cwd,
            max_data_bytes: spec.max_data_bytes,
        })
    };
    let (program, remembered) = PROGRAMS
        .find(&spec.program, path_var, &spec.cwd)
        .map_err(|error| failed(&error))?;
    let spawned = match launch(&program) {
        Err(SpawnError::Exec(error)) if remembered && error.kind() == io::ErrorKind::NotFound => {
            PROGRAMS.forget(&spec.program, path_var);
            let (program, _) = PROGRAMS
                .find(&spec.program, path_var, &spec.cwd)
                .map_err(|error| failed(&error))?;
            launch(&program)
        }
        spawned => spawned,
    };
    spawned.map_err(|error| {
        let message = match &error {
            SpawnError::Chdir(_) => spawn_failure_message(&spec.program, &spec.cwd, error.io()),
            SpawnError::Exec(io) | SpawnError::Other(io) => {
                format!("Failed to spawn hook: {}: {io}", spec.program.display())
            }
        };
        let cause = match &error {
            // `execve` refusing the image for want of memory under the hook's own
            // `max_memory_mb` is the hook's setting, not hookd's shortage.
            SpawnError::Exec(io)
                if spec.max_data_bytes.is_some() && io.raw_os_error() == Some(libc::ENOMEM) =>
            {
                SpawnCause::Hook
            }
            _ => spawn_cause(error.io()),
        };
        SpawnFailure { message, cause }
    })
}

/// Program lookups remembered across runs, shared by the whole daemon.
static PROGRAMS: ProgramCache = ProgramCache::new();

/// How many (program, `PATH`) pairs [`ProgramCache`] remembers.
const PROGRAM_CACHE_SIZE: usize = 32;

/// Remembers where a program was found on a given `PATH`.
///
/// Nearly every hook runs `bash` with the same few `PATH`s, and searching a long `PATH` costs
/// a failed `stat` per entry on every run — measurable next to a 1 ms spawn. A remembered path
/// that stops working is forgotten by [`spawn_child`]; lookups that depend on the working
/// directory (an empty `PATH` entry) are never remembered.
struct ProgramCache {
    entries: Mutex<Vec<CachedProgram>>,
}

struct CachedProgram {
    program: PathBuf,
    path_var: String,
    found: PathBuf,
}

impl ProgramCache {
    const fn new() -> ProgramCache {
        ProgramCache {
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The executable to run for `program`, and whether it came from the cache.
    fn find(
        &self,
        program: &Path,
        path_var: Option<&str>,
        cwd: &Path,
    ) -> io::Result<(PathBuf, bool)> {
        let not_found = || io::Error::new(io::ErrorKind::NotFound, "not found in PATH");
        if program.as_os_str().as_bytes().contains(&b'/') {
            return Ok((program.to_path_buf(), false));
        }
        let path_var = path_var.ok_or_else(not_found)?;
        {
            let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            let hit = entries
                .iter()
                .find(|entry| entry.program == program && entry.path_var == path_var);
            if let Some(entry) = hit {
                return Ok((entry.found.clone(), true));
            }
        }
        let (found, from_cwd) = search_path(program, path_var, cwd).ok_or_else(not_found)?;
        if !from_cwd {
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            if entries.len() >= PROGRAM_CACHE_SIZE {
                entries.remove(0);
            }
            entries.push(CachedProgram {
                program: program.to_path_buf(),
                path_var: path_var.to_owned(),
                found: found.clone(),
            });
        }
        Ok((found, false))
    }

    fn forget(&self, program: &Path, path_var: Option<&str>) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|entry| {
            !(entry.program == program && Some(entry.path_var.as_str()) == path_var)
        });
    }
}

/// Says why a spawn failed. A missing working directory and a missing program both come back
/// from the kernel as "not found", so the directory is checked separately, and only on failure
/// to keep it off the fast path.
fn spawn_failure_message(program: &Path, cwd: &Path, error: &io::Error) -> String {
    match std::fs::metadata(cwd) {
        Err(_) => format!(
            "Failed to spawn hook: working directory {} does not exist",
            cwd.display()
        ),
        Ok(meta) if !meta.is_dir() => format!(
            "Failed to spawn hook: working directory {} is not a directory",
            cwd.display()
        ),
        Ok(_) => format!("Failed to spawn hook: {}: {error}", program.display()),
    }
}

/// Searches `path_var` for an executable file named `program`, as a shell or Node's `spawn`
/// would with the hook's environment. Also says whether it was found through an empty entry,
/// which means the working directory.
fn search_path(program: &Path, path_var: &str, cwd: &Path) -> Option<(PathBuf, bool)> {
    if program.as_os_str().is_empty() {
        return None;
    }
    path_var.split(':').find_map(|dir| {
        let from_cwd = dir.is_empty();
        let dir = if from_cwd { cwd } else { Path::new(dir) };
        let candidate = dir.join(program);
        let meta = std::fs::metadata(&candidate).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some((candidate, from_cwd))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::direct::run_one_shot;

    use std::io::Write;

    const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

    fn spec(script: &str) -> ProcessSpec {
        ProcessSpec {
            program: PathBuf::from("bash"),
            args: vec!["-c".to_owned(), script.to_owned()],
            cwd: std::env::temp_dir(),
            env: Arc::new(HookEnv::new(vec![("PATH".to_owned(), PATH.to_owned())])),
            stdin: Bytes::new(),
            timeout: Duration::from_secs(30),
            max_data_bytes: None,
        }
    }

    async fn run(spec: ProcessSpec) -> HookRun {
        let limits = ProcessLimits {
            kill_grace: Duration::from_secs(1),
            ..ProcessLimits::default()
        };
        run_process(spec, &limits, &CancellationToken::new()).await
    }

    /// Runs `script` with `stdin` and checks the outcome and the exact captured streams.
    async fn check(script: &str, stdin: &str, expected: (HookOutcome, &str, &str)) {
        let mut spec = spec(script);
        spec.stdin = Bytes::copy_from_slice(stdin.as_bytes());
        let result = run(spec).await;
        let (outcome, stdout, stderr) = expected;
        assert_eq!(
            (
                &result.outcome,
                result.stdout.as_str(),
                result.stderr.as_str()
            ),
            (&outcome, stdout, stderr),
            "script: {script}"
        );
    }

    fn exited(code: i32) -> HookOutcome {
        HookOutcome::Exited { code }
    }

    /// The pid a hook printed as the first line of its stdout.
    fn printed_pid(result: &HookRun) -> i32 {
        result
            .stdout
            .lines()
            .next()
            .and_then(|line| line.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pid in stdout: {:?}", result.stdout))
    }

    /// Live (non-zombie) processes whose process group is `group`, from /proc.
    fn live_group_members(group: i32) -> Vec<i32> {
        let mut members = Vec::new();
        for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // Fields after the parenthesised command name: state, ppid, pgrp, ...
            let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.len() > 2 && fields[0] != "Z" && fields[2] == group.to_string() {
                members.push(entry.file_name().to_string_lossy().parse().unwrap_or(-1));
            }
        }
        members
    }

    /// Waits up to a few seconds for every member of the group to be gone: a member that got
    /// `SIGKILL` closes its pipes (which ends the run) a moment before it stops being listed
    /// as running.
    fn group_is_gone_soon(group: i32) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            if live_group_members(group).is_empty() {
                return true;
            }
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether `pid` is still in the process table (alive or a zombie).
    fn pid_exists(pid: i32) -> bool {
        Path::new(&format!("/proc/{pid}")).exists()
    }

    #[tokio::test]
    async fn outcomes_and_streams() {
        let cases: &[(&str, &str, (HookOutcome, &str, &str))] = &[
            ("exit 0", "", (exited(0), "", "")),
            ("echo hi; exit 3", "", (exited(3), "hi\n", "")),
            ("echo oops >&2; exit 1", "", (exited(1), "", "oops\n")),
            ("cat", "payload", (exited(0), "payload", "")),
            (
                "kill -9 $$",
                "",
                (HookOutcome::Signalled { signal: 9 }, "", ""),
            ),
            (
                "kill -TERM $$",
                "",
                (HookOutcome::Signalled { signal: 15 }, "", ""),
            ),
            ("printf 'a\\xffb'", "", (exited(0), "a\u{FFFD}b", "")),
            (
                "echo \"[$FOO][${HOME-unset}]\"",
                "",
                (exited(0), "[][unset]\n", ""),
            ),
        ];
        for (script, stdin, expected) in cases {
            check(script, stdin, expected.clone()).await;
        }
    }

    #[tokio::test]
    async fn missing_command_exits_127() {
        check(
            "nonexistent-cmd-xyz",
            "",
            (
                exited(127),
                "",
                "bash: line 1: nonexistent-cmd-xyz: command not found\n",
            ),
        )
        .await;
    }

    #[tokio::test]
    async fn environment_is_exactly_the_given_one() {
        let mut spec = spec("env | sort");
        spec.env = Arc::new(HookEnv::new(vec![
            ("PATH".to_owned(), PATH.to_owned()),
            ("FOO".to_owned(), "bar baz".to_owned()),
        ]));
        let result = run(spec).await;
        assert_eq!(result.outcome, exited(0));
        // bash adds PWD, SHLVL and `_` itself; nothing comes from the test process.
        let names: Vec<&str> = result
            .stdout
            .lines()
            .filter_map(|line| line.split_once('=').map(|(name, _)| name))
            .filter(|name| !matches!(*name, "PWD" | "SHLVL" | "_"))
            .collect();
        assert_eq!(names, ["FOO", "PATH"], "{}", result.stdout);
        assert!(result.stdout.contains("FOO=bar baz\n"));
    }

    #[tokio::test]
    async fn spawn_failures_say_why() {
        let missing_dir = spec("true");
        let missing_dir = ProcessSpec {
            cwd: PathBuf::from("/nonexistent/hookd-test-dir"),
            ..missing_dir
        };
        let missing_program = ProcessSpec {
            program: PathBuf::from("hookd-no-such-shell"),
            ..spec("true")
        };
        let no_path = ProcessSpec {
            env: Arc::new(HookEnv::new(Vec::new())),
            ..spec("true")
        };
        let cases = [
            (
                missing_dir,
                "Failed to spawn hook: working directory /nonexistent/hookd-test-dir does not exist",
            ),
            (
                missing_program,
                "Failed to spawn hook: hookd-no-such-shell: not found in PATH",
            ),
            (no_path, "Failed to spawn hook: bash: not found in PATH"),
        ];
        for (spec, message) in cases {
            let result = run(spec).await;
            assert_eq!(
                result.outcome,
                HookOutcome::SpawnFailed {
                    message: message.to_owned(),
                    cause: hookd_core::SpawnCause::Hook,
                }
            );
        }
    }

    #[tokio::test]
    async fn a_fast_hook_that_fills_its_pipes_is_read_whole() {
        // More than a pipe holds on both streams: the hook blocks until its pipes are drained,
        // which starts once it has run past the exit-only window.
        let result = run(spec(
            "head -c 300000 /dev/zero | tr '\\0' a; head -c 200000 /dev/zero | tr '\\0' b >&2",
        ))
        .await;
        assert_eq!(result.outcome, exited(0));
        assert_eq!(result.stdout.len(), 300_000);
        assert!(result.stdout.bytes().all(|byte| byte == b'a'));
        assert_eq!(result.stderr.len(), 200_000);
        // And one that exits at once is read after its exit, stdout and stderr both.
        check("printf out; printf err >&2", "", (exited(0), "out", "err")).await;
    }

    #[tokio::test]
    async fn utf8_is_decoded_over_the_whole_buffer() {
        // 65535 ASCII bytes put the two bytes of "é" across the first pipe-sized read.
        let result = run(spec(
            "head -c 65535 /dev/zero | tr '\\0' a; printf '\\xc3\\xa9'",
        ))
        .await;
        assert_eq!(result.outcome, exited(0));
        assert_eq!(result.stdout.len(), 65537);
        assert!(
            result.stdout.ends_with("aé"),
            "{:?}",
            &result.stdout[65530..]
        );
    }

    #[tokio::test]
    async fn timeout_kills_a_hook_that_ignores_sigterm() {
        let mut spec = spec("trap '' TERM; echo $$; sleep 30; echo late");
        spec.timeout = Duration::from_secs(1);
        let result = run(spec).await;
        assert_eq!(result.outcome, HookOutcome::TimedOut { timeout_ms: 1000 });
        assert!(result.duration >= Duration::from_secs(1));
        assert!(result.duration < Duration::from_secs(10), "{result:?}");
        // Output printed before the deadline is kept; the child was reaped.
        let pid = printed_pid(&result);
        assert!(!pid_exists(pid), "hook process {pid} left behind");
        assert!(group_is_gone_soon(pid), "{:?}", live_group_members(pid));
    }

    #[tokio::test]
    async fn grandchild_holding_stdout_is_killed_soon_after_the_hook_exits() {
        // bash exits at once; `sleep` keeps stdout open and ignores SIGTERM. The run ends
        // with bash's exit a short grace later, far before the timeout.
        let mut spec = spec("trap '' TERM; echo $$; sleep 30 & echo hi");
        spec.timeout = Duration::from_secs(20);
        let result = run(spec).await;
        assert_eq!(result.outcome, exited(0));
        assert!(result.duration < Duration::from_secs(5), "{result:?}");
        let pid = printed_pid(&result);
        assert!(result.stdout.ends_with("hi\n"), "{result:?}");
        assert!(group_is_gone_soon(pid), "{:?}", live_group_members(pid));
    }

    #[tokio::test]
    async fn a_deny_printed_beside_a_background_sleep_arrives_promptly() {
        let script = "sleep 30 & echo '{\"decision\":\"deny\",\"reason\":\"no\"}'";
        let mut gate = spec(script);
        gate.timeout = Duration::from_secs(30);
        let result = run(gate).await;
        assert_eq!(result.outcome, exited(0));
        assert!(result.duration < Duration::from_secs(3), "{result:?}");
        assert_eq!(
            result.stdout.trim(),
            "{\"decision\":\"deny\",\"reason\":\"no\"}"
        );
        // What a background process writes within the grace is kept.
        let result = run(spec("(sleep 0.05; echo late) & echo early")).await;
        assert_eq!(result.stdout, "early\nlate\n");
    }

    #[tokio::test]
    async fn process_escaping_the_group_is_not_waited_for() {
        // `setsid` moves the holder out of the group, so no signal of ours reaches it.
        let mut escaping = spec("setsid sh -c 'echo $$; exec sleep 30'");
        escaping.timeout = Duration::from_secs(20);
        let result = run(escaping).await;
        let escaped = printed_pid(&result);
        let _ = nix::sys::signal::kill(Pid::from_raw(escaped), Signal::SIGKILL);
        // `setsid` forked (it led the group) and its parent exited 0: the hook's exit.
        assert_eq!(result.outcome, exited(0));
        assert!(result.duration < Duration::from_secs(5), "{result:?}");
        // A hook that stays alive while the escaped process holds the pipe still times out.
        let mut alive = spec("setsid sh -c 'echo $$; exec sleep 30'; sleep 30");
        alive.timeout = Duration::from_secs(1);
        let result = run(alive).await;
        let escaped = printed_pid(&result);
        let _ = nix::sys::signal::kill(Pid::from_raw(escaped), Signal::SIGKILL);
        assert_eq!(result.outcome, HookOutcome::TimedOut { timeout_ms: 1000 });
        assert!(result.duration < Duration::from_secs(10), "{result:?}");
    }

    #[tokio::test]
    async fn unread_large_stdin_does_not_block() {
        let mut spec = spec("exit 0");
        spec.stdin = Bytes::from(vec![b'x'; 10 * 1024 * 1024]);
        let result = run(spec).await;
        // The 30 s timeout would turn a deadlock into TimedOut.
        assert_eq!(result.outcome, exited(0));
        assert!(result.duration < Duration::from_secs(10), "{result:?}");
    }

    #[tokio::test]
    async fn large_stdin_is_delivered_whole() {
        let mut spec = spec("wc -c");
        spec.stdin = Bytes::from(vec![b'x'; 10 * 1024 * 1024]);
        let result = run(spec).await;
        assert_eq!(result.outcome, exited(0));
        assert_eq!(result.stdout.trim(), "10485760");
    }

    #[tokio::test]
    async fn output_is_capped_with_a_marker() {
        let mib = 1024 * 1024;
        let cases = [
            // 50 MiB on stdout: keep 1 MiB, discard 49 MiB.
            (
                "head -c 52428800 /dev/zero | tr '\\0' y".to_owned(),
                Bytes::new(),
                StreamName::Stdout,
                49 * mib,
            ),
            // Echoing 3 MiB of stdin back needs writing and draining at the same time.
            (
                "cat".to_owned(),
                Bytes::from(vec![b'y'; 3 * mib]),
                StreamName::Stdout,
                2 * mib,
            ),
            (
                "head -c 2097152 /dev/zero | tr '\\0' y >&2".to_owned(),
                Bytes::new(),
                StreamName::Stderr,
                mib,
            ),
        ];
        for (script, stdin, stream, discarded) in cases {
            let mut spec = spec(&script);
            spec.stdin = stdin;
            let result = run(spec).await;
            assert_eq!(
                result.outcome,
                HookOutcome::OutputTooLarge {
                    stream,
                    cap_bytes: mib,
                    code: Some(0)
                },
                "{script}"
            );
            let text = match stream {
                StreamName::Stdout => &result.stdout,
                StreamName::Stderr => &result.stderr,
            };
            let marker = format!(
                "\n[hookd: {} truncated after {mib} bytes; {discarded} more bytes discarded]",
                stream.as_str()
            );
            assert!(text.ends_with(&marker), "{script}: {}", &text[mib..]);
            assert_eq!(text.len(), mib + marker.len());
            assert!(text[..mib].bytes().all(|b| b == b'y'));
        }
    }

    #[tokio::test]
    async fn a_stderr_flood_beside_a_decision_is_cut_and_the_decision_stands() {
        let mib = 1024 * 1024;
        // (script, outcome) — stderr is 3 MiB each time, drained to the end (the hook would
        // block on a full pipe otherwise and be killed at its timeout).
        let cases = [
            (
                "echo '{\"decision\":\"deny\"}'; head -c 3145728 /dev/zero | tr '\\0' e >&2",
                exited(0),
            ),
            (
                "head -c 3145728 /dev/zero | tr '\\0' e >&2; echo '{\"decision\":\"deny\"}'; exit 3",
                exited(3),
            ),
            // Nothing on stdout: stderr is where the output is read from, and it overflowed.
            (
                "head -c 3145728 /dev/zero | tr '\\0' e >&2",
                HookOutcome::OutputTooLarge {
                    stream: StreamName::Stderr,
                    cap_bytes: mib,
                    code: Some(0),
                },
            ),
        ];
        for (script, outcome) in &cases {
            let result = run(spec(script)).await;
            assert_eq!(&result.outcome, outcome, "{script}");
            assert!(result.stderr.starts_with('e') && result.stderr.len() < mib + 200);
            assert!(
                result.stderr.ends_with(
                    "[hookd: stderr truncated after 1048576 bytes; 2097152 more bytes discarded]"
                ),
                "{script}"
            );
        }
        // Through the output rules: the deny is what the hook decided.
        let run = run(spec(cases[0].0)).await;
        let (output, _) = hookd_core::output::parse_output(
            hookd_core::event::HookEventName::BeforeTool,
            &run.stdout,
            &run.stderr,
            0,
        );
        assert_eq!(output, Some(serde_json::json!({"decision": "deny"})));
    }

    #[tokio::test]
    async fn max_memory_limits_what_the_process_may_allocate() {
        // `RLIMIT_DATA` as the process sees it, with and without a limit.
        let mut limited = spec("ulimit -d");
        limited.max_data_bytes = Some(64 * 1024 * 1024);
        let result = run(limited).await;
        assert_eq!(result.outcome, exited(0));
        assert_eq!(result.stdout.trim(), "65536", "ulimit -d reports KiB");
        let result = run(spec("ulimit -d")).await;
        assert_eq!(result.stdout.trim(), "unlimited");
        // A process that allocates past it fails instead of growing.
        let mut hungry = spec("x=$(head -c 100000000 /dev/zero | tr '\\0' x); echo grew");
        hungry.max_data_bytes = Some(32 * 1024 * 1024);
        let result = run(hungry).await;
        assert_ne!(result.outcome, exited(0), "{}", result.stderr);
        assert_ne!(result.stdout.trim(), "grew");
    }

    #[tokio::test]
    async fn output_exactly_at_the_cap_is_not_truncated() {
        let limits = ProcessLimits {
            max_output_bytes: 4,
            ..ProcessLimits::default()
        };
        let cases = [
            ("printf abcd", exited(0), "abcd"),
            (
                "printf abcde",
                HookOutcome::OutputTooLarge {
                    stream: StreamName::Stdout,
                    cap_bytes: 4,
                    code: Some(0),
                },
                "abcd\n[hookd: stdout truncated after 4 bytes; 1 more bytes discarded]",
            ),
        ];
        for (script, outcome, stdout) in cases {
            let result = run_process(spec(script), &limits, &CancellationToken::new()).await;
            assert_eq!((result.outcome, result.stdout.as_str()), (outcome, stdout));
        }
    }

    #[tokio::test]
    async fn cancellation_stops_the_whole_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("ready");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(status.success());

        // The hook reports its pid through the fifo, which also tells us it is running.
        let script = format!(
            "trap '' TERM; sleep 30 & echo $$; echo $$ > '{}'; wait",
            fifo.display()
        );
        let cancel = CancellationToken::new();
        let limits = ProcessLimits {
            kill_grace: Duration::from_secs(1),
            ..ProcessLimits::default()
        };
        let run = run_process(spec(&script), &limits, &cancel);
        let trigger = async {
            let ready = tokio::fs::read_to_string(&fifo).await.expect("read fifo");
            cancel.cancel();
            ready.trim().parse::<i32>().expect("pid")
        };
        let (result, pid) = tokio::join!(run, trigger);
        assert_eq!(result.outcome, HookOutcome::Cancelled);
        assert_eq!(printed_pid(&result), pid);
        assert!(result.duration < Duration::from_secs(10), "{result:?}");
        assert!(!pid_exists(pid), "hook process {pid} left behind");
        assert!(group_is_gone_soon(pid), "{:?}", live_group_members(pid));
    }

    #[tokio::test]
    async fn huge_durations_do_not_overflow() {
        let limits = ProcessLimits {
            kill_grace: Duration::MAX,
            ..ProcessLimits::default()
        };
        let cancel = CancellationToken::new();
        let cases = [
            ("exit 0", Duration::MAX, exited(0)),
            // `sleep` dies of the SIGTERM, so the endless grace period is never waited out.
            (
                "sleep 30",
                Duration::ZERO,
                HookOutcome::TimedOut { timeout_ms: 0 },
            ),
        ];
        for (script, timeout, outcome) in cases {
            let spec = ProcessSpec {
                timeout,
                ..spec(script)
            };
            let result = run_process(spec, &limits, &cancel).await;
            assert_eq!(result.outcome, outcome, "{script}");
        }
    }

    #[tokio::test]
    async fn already_cancelled_runs_nothing() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = run_process(spec("true"), &ProcessLimits::default(), &cancel).await;
        assert_eq!(result.outcome, HookOutcome::Cancelled);
    }

    #[tokio::test]
    async fn background_processes_do_not_outlive_the_hook() {
        // 100 sleepers with their output redirected: they hold none of our pipes, so the run
        // ends as soon as bash exits 0, and then the group is killed.
        let script = "for i in $(seq 100); do sleep 300 >/dev/null 2>&1 & done; echo $$";
        let result = run(spec(script)).await;
        assert_eq!(result.outcome, exited(0));
        assert!(result.duration < Duration::from_secs(10), "{result:?}");
        let group = printed_pid(&result);
        // SIGKILL is delivered at once, but the sleepers are reparented and reaped by init,
        // so /proc is polled, for a bounded time, until none of them is alive.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut left = live_group_members(group);
        while !left.is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            left = live_group_members(group);
        }
        if !left.is_empty() {
            // Clean up before failing, so a failure does not leave 100 sleepers behind.
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
        assert!(left.is_empty(), "{} sleepers outlived the hook", left.len());
    }

    #[tokio::test]
    async fn a_helper_in_its_own_session_survives_the_run() {
        // The documented way out. The `sh` that `setsid` runs holds the hook's pipes until it
        // has started the helper in the new session, so the run cannot end, and the group
        // cannot be killed, before the helper has left it. (`setsid ... &` with its output
        // redirected could still be in the group when the kill comes.)
        let script = "setsid sh -c 'sleep 300 >/dev/null 2>&1 & echo $!'";
        let result = run(spec(script)).await;
        assert_eq!(result.outcome, exited(0));
        let pid = printed_pid(&result);
        let alive = pid_exists(pid);
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        assert!(alive, "the setsid helper {pid} was killed with the hook");
    }

    #[tokio::test]
    async fn finished_children_are_reaped() {
        let result = run(spec("echo $$")).await;
        assert_eq!(result.outcome, exited(0));
        let pid = printed_pid(&result);
        assert!(!pid_exists(pid), "hook process {pid} left as a zombie");
    }

    #[test]
    fn program_lookup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tool = dir.path().join("tool");
        let mut file = std::fs::File::create(&tool).expect("create");
        file.write_all(b"#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::File::create(dir.path().join("plain")).expect("create");

        let dir_str = dir.path().to_str().expect("utf-8 temp dir").to_owned();
        let with_dir = format!("/nonexistent:{dir_str}");
        let via_cwd = ":/nonexistent";
        let root = Path::new("/");
        let cache = ProgramCache::new();
        // (program, PATH if set, cwd, expected path and whether it came from the cache)
        type Found<'a> = Option<(&'a Path, bool)>;
        let cases: [(&str, Option<&str>, &Path, Found<'_>); 10] = [
            ("tool", Some(&with_dir), root, Some((&tool, false))),
            ("tool", Some(&with_dir), root, Some((&tool, true))),
            ("plain", Some(&dir_str), root, None),
            ("tool", Some("/nonexistent"), root, None),
            ("tool", None, root, None),
            ("./x", None, root, Some((Path::new("./x"), false))),
            ("/bin/sh", None, root, Some((Path::new("/bin/sh"), false))),
            ("", Some(&dir_str), root, None),
            // An empty PATH entry searches the hook's working directory, and is not remembered.
            ("tool", Some(via_cwd), dir.path(), Some((&tool, false))),
            ("tool", Some(via_cwd), dir.path(), Some((&tool, false))),
        ];
        for (program, path_var, cwd, expected) in cases {
            let found = cache.find(Path::new(program), path_var, cwd).ok();
            let found = found
                .as_ref()
                .map(|(path, cached)| (path.as_path(), *cached));
            assert_eq!(found, expected, "{program} in {path_var:?}");
        }
        cache.forget(Path::new("tool"), Some(&with_dir));
        let found = cache.find(Path::new("tool"), Some(&with_dir), root).ok();
        assert_eq!(found, Some((tool, false)));
    }

    #[tokio::test]
    async fn a_remembered_program_that_vanished_is_looked_up_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = dir.path().join("first");
        let second = dir.path().join("second");
        for bin in [&first, &second] {
            std::fs::create_dir(bin).expect("mkdir");
            std::os::unix::fs::symlink("/bin/sh", bin.join("hookd-test-sh")).expect("symlink");
        }
        let path_var = format!("{}:{}:{PATH}", first.display(), second.display());
        let spec = ProcessSpec {
            program: PathBuf::from("hookd-test-sh"),
            env: Arc::new(HookEnv::new(vec![("PATH".to_owned(), path_var)])),
            ..spec("echo ok")
        };
        assert_eq!(run(spec.clone()).await.outcome, exited(0));
        std::fs::remove_file(first.join("hookd-test-sh")).expect("rm");
        let result = run(spec).await;
        assert_eq!(
            (result.outcome, result.stdout.as_str()),
            (exited(0), "ok\n")
        );
    }

    /// Runs `line` through bash (as written) and as a one-shot hook (started without bash where
    /// it can be), and returns both runs' outcome, stdout and stderr.
    async fn both_ways(
        line: &str,
        vars: &[(&str, &str)],
        cwd: &Path,
    ) -> [(HookOutcome, String, String); 2] {
        let limits = ProcessLimits::default();
        let make = || ProcessSpec {
            cwd: cwd.to_owned(),
            env: Arc::new(HookEnv::new(
                vars.iter()
                    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                    .collect(),
            )),
            stdin: Bytes::from_static(b"{\"x\": 1}\n"),
            ..spec(line)
        };
        let shell = run_process(make(), &limits, &CancellationToken::new()).await;
        let direct = run_one_shot(make(), &limits, &CancellationToken::new()).await;
        [shell, direct].map(|run| (run.outcome, run.stdout, run.stderr))
    }

    /// A hook started without bash sees exactly what it would see under bash: arguments,
    /// environment (`PWD`, `SHLVL`, `_`, `OLDPWD` included; the same variables, compared
    /// sorted: bash reorders them), stdin, exit code and messages, and where it cannot be
    /// started, bash's own message and exit code.
    #[tokio::test]
    async fn one_shot_hooks_started_without_bash_see_what_bash_would_give_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cwd = std::fs::canonicalize(dir.path()).expect("canonical");
        let show = cwd.join("show.sh");
        std::fs::write(
            &show,
            "#!/usr/bin/env bash\nprintf '%s\\n' \"$0\" \"$@\"; env | LC_ALL=C sort; cat; exit 3\n",
        )
        .expect("script");
        let no_shebang = cwd.join("no-shebang");
        std::fs::write(&no_shebang, "echo from a script without a shebang\n").expect("script");
        let not_executable = cwd.join("not-executable");
        std::fs::write(&not_executable, "#!/bin/sh\necho never\n").expect("script");
        for path in [&show, &no_shebang] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let bin = format!("{}:{PATH}", cwd.display());
        let lines = [
            "show.sh 'a b' \"c'd\" e,f --g=h",
            "./show.sh x",
            "no-shebang",
            "./not-executable",
            "no-such-program-here x",
            "cat",
        ];
        let envs: [&[(&str, &str)]; 4] = [
            &[("PATH", &bin)],
            &[
                ("PATH", &bin),
                ("SHLVL", "4"),
                ("OLDPWD", "/"),
                ("PWD", "/"),
            ],
            &[("PATH", &bin), ("OLDPWD", "/no/such/dir"), ("HOME", "/h")],
            &[("PATH", &bin), ("BASH_ENV", "/dev/null")],
        ];
        for line in lines {
            for vars in envs {
                let [shell, direct] = both_ways(line, vars, &cwd).await;
                assert_eq!(direct, shell, "{line:?} {vars:?}");
            }
        }
    }
}
