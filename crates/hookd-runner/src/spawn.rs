//! Starting a hook process and watching it: the daemon's own `vfork`-style spawn.
//!
//! A hook is on the critical path of an agent's every tool call, so starting it costs what the
//! kernel needs and little more. The standard library's `Command` (through glibc's
//! `posix_spawn`) rebuilds the environment in a map and then as C strings on every spawn, and
//! its child resets every one of the 64 signal dispositions one `sigaction` read and one write
//! at a time while the daemon waits; tokio then finds the child's exit with `pidfd_open`.
//! Here instead:
//!
//! - the environment is built once per session and hook as C strings ([`HookEnv`], cached by
//!   the runner) and handed to `execve` as it is;
//! - the child is created with `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)`: it borrows the
//!   daemon's memory until its `execve` (the daemon's calling thread waits meanwhile, exactly
//!   as with `vfork`), and the kernel hands back a pidfd for its exit with the same call;
//! - the child resets the dispositions of signals 1–31 to their defaults without reading them
//!   first (as Node's libuv does for the processes Gemini CLI spawns, so a hook sees the same
//!   signal state under both), joins a new process group, moves its pipe ends to 0, 1 and 2,
//!   changes directory, unblocks every signal and executes the program;
//! - the daemon's ends of the pipes are made non-blocking and only the pidfd is registered with
//!   tokio; the caller registers the pipes when it has to wait on them ([`register_reader`],
//!   [`async_stdin`]): a short hook is read only once it has exited (see `process`).
//!
//! The child runs on a stack of its own (one per daemon thread, reused) and only makes system
//! calls: it allocates nothing and takes no lock, so other threads of the daemon holding a lock
//! cannot block it. All signals are blocked in the calling thread from just before the clone
//! until the child has executed (or failed), so no signal handler of the daemon can run on the
//! child's borrowed memory before its dispositions are reset. A failure in the child (a missing
//! directory, a program that cannot be executed) is written into memory the daemon reads after
//! the clone returns, and the child exits with 127.
//!
//! On kernels without `CLONE_PIDFD` (before 5.2) the child is cloned without it and the pidfd is
//! opened with `pidfd_open`; without that either (before 5.3) a blocking thread waits for the
//! child. The exit status is collected with `waitpid` once the pidfd is readable, so no zombie
//! is left; a [`HookChild`] dropped before its process was reaped hands it to a background
//! reaper.

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::hash::{Hash, Hasher};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU8, Ordering};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// The size of the stack the child runs on until its `execve`. The child's code makes a few
/// dozen system calls through libc's thin wrappers and needs a few hundred bytes of it.
const CHILD_STACK_BYTES: usize = 64 * 1024;

/// The complete environment of a hook process, with the C strings `execve` takes built once.
///
/// The runner keeps these per session and hook, so a hook started a thousand times builds its
/// environment once. Two environments are equal when their variables are; the hash is computed
/// once, from the variables.
pub struct HookEnv {
    vars: Vec<(String, String)>,
    /// `NAME=value` for every variable, or `None` when a name or value holds a NUL byte (which
    /// no environment can carry: spawning with it fails).
    entries: Option<Vec<CString>>,
    hash: u64,
}

impl HookEnv {
    /// The environment made of exactly `vars`, in order.
    pub fn new(vars: Vec<(String, String)>) -> HookEnv {
        let entries = vars
            .iter()
            .map(|(name, value)| {
                let mut entry = Vec::with_capacity(name.len() + value.len() + 2);
                entry.extend_from_slice(name.as_bytes());
                entry.push(b'=');
                entry.extend_from_slice(value.as_bytes());
                CString::new(entry).ok()
            })
            .collect();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        vars.hash(&mut hasher);
        HookEnv {
            hash: hasher.finish(),
            vars,
            entries,
        }
    }

    /// The variables, in order.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The value of the last variable called `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .rev()
            .find(|(existing, _)| existing == name)
            .map(|(_, value)| value.as_str())
    }
}

impl PartialEq for HookEnv {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.vars == other.vars
    }
}

impl Eq for HookEnv {}

impl Hash for HookEnv {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl std::fmt::Debug for HookEnv {
    // The names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.vars.iter().map(|(name, _)| name))
            .finish()
    }
}

/// What to start: everything is already in the form the kernel takes.
pub(crate) struct Launch<'a> {
    /// The executable's path.
    pub(crate) path: &'a CStr,
    /// `argv`, `argv[0]` included.
    pub(crate) argv: &'a [CString],
    /// The environment.
    pub(crate) env: &'a HookEnv,
    /// The working directory.
    pub(crate) cwd: &'a CStr,
    /// The most private writable memory the process may map (`RLIMIT_DATA`), if limited.
    pub(crate) max_data_bytes: Option<u64>,
}

/// The soft and hard `RLIMIT_NOFILE` the daemon started with, when it raised its own soft
/// limit ([`raise_open_files_limit`]): hooks get the original soft limit back, so a program
/// that still uses `select()` or closes every possible descriptor at start behaves as it would
/// when started by the agent CLI. `u64::MAX` until raised.
static ORIGINAL_NOFILE_SOFT: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(u64::MAX);

/// The daemon's open-files limits before and after [`raise_open_files_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFilesLimit {
    /// The soft limit the process started with.
    pub before: u64,
    /// The soft limit now (the hard limit, when raising it worked).
    pub after: u64,
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit, so that the daemon does not
/// run out of descriptors at the common default of 1024 (each connection holds one, each
/// running hook three more). Hooks started afterwards get the original soft limit back.
/// Call it once, at start, before any hook runs.
pub fn raise_open_files_limit() -> io::Result<OpenFilesLimit> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft >= hard {
        return Ok(OpenFilesLimit {
            before: soft,
            after: soft,
        });
    }
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    ORIGINAL_NOFILE_SOFT.store(soft, Ordering::Relaxed);
    Ok(OpenFilesLimit {
        before: soft,
        after: hard,
    })
}

/// Why a spawn failed.
#[derive(Debug)]
pub(crate) enum SpawnError {
    /// The working directory could not be entered.
    Chdir(io::Error),
    /// The program could not be executed.
    Exec(io::Error),
    /// Anything else: pipes, the clone itself, NUL bytes in the arguments or environment.
    Other(io::Error),
}

impl SpawnError {
    /// The underlying error.
    pub(crate) fn io(&self) -> &io::Error {
        match self {
            SpawnError::Chdir(error) | SpawnError::Exec(error) | SpawnError::Other(error) => error,
        }
    }
}

/// A started hook process: its pid, its pipes (the daemon's ends) and its exit.
pub(crate) struct HookChild {
    pid: Pid,
    /// `None` once the exit status has been collected.
    exit: Option<ExitWatch>,
    status: Option<ExitStatus>,
    /// The write end of the process's stdin, non-blocking and not registered with tokio.
    pub(crate) stdin: Option<OwnedFd>,
    /// The read end of the process's stdout, non-blocking and not registered with tokio.
    pub(crate) stdout: Option<OwnedFd>,
    /// The read end of the process's stderr, non-blocking and not registered with tokio.
    pub(crate) stderr: Option<OwnedFd>,
}

impl std::fmt::Debug for HookChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookChild")
            .field("pid", &self.pid)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// How the exit of a child is noticed.
enum ExitWatch {
    /// A pidfd registered with tokio: readable once the process has exited.
    Pidfd(AsyncFd<OwnedFd>),
    /// A blocking thread waiting in `waitpid` (kernels without pidfds).
    Thread(oneshot::Receiver<io::Result<ExitStatus>>),
}

impl HookChild {
    /// The process id (also its process group's), while it has not been reaped.
    pub(crate) fn id(&self) -> Option<u32> {
        if self.status.is_some() {
            return None;
        }
        u32::try_from(self.pid.as_raw()).ok()
    }

    /// The exit status if the process has exited (it is reaped then), without waiting.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let found = match &mut self.exit {
            Some(ExitWatch::Pidfd(_)) => reap(self.pid, WaitPidFlag::WNOHANG)?,
            Some(ExitWatch::Thread(receiver)) => match receiver.try_recv() {
                Ok(result) => Some(result?),
                Err(oneshot::error::TryRecvError::Empty) => None,
                Err(oneshot::error::TryRecvError::Closed) => return Err(lost_child()),
            },
            None => return Err(lost_child()),
        };
        if let Some(status) = found {
            self.collected(status);
        }
        Ok(found)
    }

    /// Waits for the process to exit and reaps it. Cancel-safe: dropping the future loses
    /// nothing, and calling it again after the exit returns the same status.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            match &mut self.exit {
                Some(ExitWatch::Pidfd(pidfd)) => {
                    let mut ready = pidfd.readable().await?;
                    match reap(self.pid, WaitPidFlag::WNOHANG)? {
                        Some(status) => {
                            self.collected(status);
                        }
                        // Readable before the exit is not supposed to happen; wait again.
                        None => ready.clear_ready(),
                    }
                }
                Some(ExitWatch::Thread(receiver)) => {
                    let status = receiver.await.map_err(|_| lost_child())??;
                    self.collected(status);
                }
                None => return Err(lost_child()),
            }
        }
    }

    fn collected(&mut self, status: ExitStatus) {
        self.status = Some(status);
        // Deregistering and closing the pidfd can wait until the run's answer is out.
        if let Some(watch) = self.exit.take() {
            defer(Deferred::Watch(watch));
        }
    }
}

impl Drop for HookChild {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        match self.exit.take() {
            Some(ExitWatch::Pidfd(pidfd)) => {
                if let Ok(Some(_)) = reap(self.pid, WaitPidFlag::WNOHANG) {
                    return;
                }
                reap_later(self.pid, pidfd);
            }
            // The thread reaps it whoever listens.
            Some(ExitWatch::Thread(_)) | None => {}
        }
    }
}

/// Reaps a process that outlived its `HookChild` (it has normally had `SIGKILL` already): in a
/// task of the current runtime, or in a thread of its own when there is none.
fn reap_later(pid: Pid, pidfd: AsyncFd<OwnedFd>) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(async move {
                let _ = pidfd.readable().await;
                let _ = reap(pid, WaitPidFlag::empty());
            });
        }
        Err(_) => {
            drop(pidfd);
            std::thread::spawn(move || reap(pid, WaitPidFlag::empty()));
        }
    }
}

/// `waitpid(pid, flags)`: the exit status if the process exited (it is reaped), `None` if it
/// has not (with `WNOHANG`).
fn reap(pid: Pid, flags: WaitPidFlag) -> io::Result<Option<ExitStatus>> {
    loop {
        return match waitpid(pid, Some(flags)) {
            Ok(WaitStatus::Exited(_, code)) => Ok(Some(ExitStatus::from_raw((code & 0xff) << 8))),
            Ok(WaitStatus::Signaled(_, signal, core)) => Ok(Some(ExitStatus::from_raw(
                signal as i32 | if core { 0x80 } else { 0 },
            ))),
            Ok(WaitStatus::StillAlive) => Ok(None),
            // Stops and continues are not reported without WUNTRACED/WCONTINUED.
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(errno) => Err(io::Error::from(errno)),
        };
    }
}

fn lost_child() -> io::Error {
    io::Error::other("lost track of the hook process")
}

/// Makes sure the daemon's exited children wait to be collected, once per process.
static CHILD_SIGNAL: std::sync::Once = std::sync::Once::new();

/// A process that ignores `SIGCHLD` (or set `SA_NOCLDWAIT`) has its children reaped by the
/// kernel, leaving no exit status to read; a daemon started by a parent that ignores it
/// inherits that. Hooks' exit codes are decisions, so the default disposition is restored
/// (it discards the signal just the same).
fn reap_own_children() {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    // SAFETY: installing the default disposition runs no code of ours in a signal context.
    let previous = unsafe { sigaction(Signal::SIGCHLD, &default) };
    if let Ok(previous) = previous {
        let kept = match previous.handler() {
            SigHandler::Handler(_) | SigHandler::SigAction(_) => true,
            SigHandler::SigDfl | SigHandler::SigIgn => false,
        };
        if kept {
            // Someone handles SIGCHLD (a library of the embedding program): leave it to them.
            // SAFETY: as above; this puts back what was there.
            let _ = unsafe { sigaction(Signal::SIGCHLD, &previous) };
        }
    }
}

/// Whether this kernel refused `CLONE_PIDFD` (0: not known yet, 1: it works, 2: refused).
static CLONE_PIDFD_SUPPORT: AtomicU8 = AtomicU8::new(0);

/// Starts `launch` in a new process group with three new pipes as its stdin, stdout and stderr.
/// Must be called from within a tokio runtime (the pipes and the pidfd are registered with it).
pub(crate) fn spawn(launch: &Launch<'_>) -> Result<HookChild, SpawnError> {
    let other = SpawnError::Other;
    CHILD_SIGNAL.call_once(reap_own_children);
    let env_entries = launch.env.entries.as_ref().ok_or_else(|| {
        other(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an environment variable contains a NUL byte",
        ))
    })?;
    let PipeSet {
        stdin: (stdin_read, stdin_write),
        stdout: (stdout_read, stdout_write),
        stderr: (stderr_read, stderr_write),
    } = take_pipe_set().map_err(other)?;

    let argv = null_terminated(launch.argv.iter().map(|arg| arg.as_ptr()));
    let envp = null_terminated(env_entries.iter().map(|entry| entry.as_ptr()));
    let mut args = ChildArgs {
        path: launch.path.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: launch.cwd.as_ptr(),
        fds: [
            stdin_read.as_raw_fd(),
            stdout_write.as_raw_fd(),
            stderr_write.as_raw_fd(),
        ],
        error: 0,
        stage: Stage::None as c_int,
        nofile_soft: ORIGINAL_NOFILE_SOFT.load(Ordering::Relaxed),
        data_limit: launch.max_data_bytes.unwrap_or(u64::MAX),
    };

    let (pid, pidfd) = clone_child(&mut args).map_err(other)?;
    // The child has executed its program or exited: its ends of the pipes are its own now.
    drop((stdin_read, stdout_write, stderr_write));
    // SAFETY: the child wrote these before it executed or exited, and it has done so: a
    // CLONE_VFORK clone returns only then.
    let (error, stage) = unsafe {
        (
            std::ptr::read_volatile(&args.error),
            std::ptr::read_volatile(&args.stage),
        )
    };
    if error != 0 {
        // The child has exited with 127; collect it.
        drop(pidfd);
        let _ = reap(pid, WaitPidFlag::empty());
        let error = io::Error::from_raw_os_error(error);
        return Err(if stage == Stage::Chdir as c_int {
            SpawnError::Chdir(error)
        } else if stage == Stage::Exec as c_int {
            SpawnError::Exec(error)
        } else {
            SpawnError::Other(error)
        });
    }

    // From here on the process is running; whatever fails must not leave it unwatched.
    let mut child = HookChild {
        pid,
        exit: None,
        status: None,
        stdin: None,
        stdout: None,
        stderr: None,
    };
    match watch_exit(pid, pidfd) {
        Ok(watch) => child.exit = Some(watch),
        Err(error) => {
            // Without a way to see it exit, the process must not run: it is killed (its group
            // is its own already) and collected here.
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = reap(pid, WaitPidFlag::empty());
            child.status = Some(ExitStatus::from_raw(libc::SIGKILL));
            return Err(other(error));
        }
    }
    child.stdin = Some(stdin_write);
    child.stdout = Some(stdout_read);
    child.stderr = Some(stderr_read);
    Ok(child)
}

/// How the exit of the new child `pid` is watched: through `pidfd`, else a pidfd opened now,
/// else a thread blocked in `waitpid`.
fn watch_exit(pid: Pid, pidfd: Option<OwnedFd>) -> io::Result<ExitWatch> {
    let pidfd = match pidfd {
        Some(pidfd) => Some(pidfd),
        None => pidfd_open(pid)?,
    };
    match pidfd {
        Some(pidfd) => {
            // SAFETY: the `OwnedFd` keeps its descriptor open, unchanged, for as long as the
            // `AsyncFd` owns it.
            let registered = unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) };
            Ok(ExitWatch::Pidfd(
                registered.map_err(|error| error.into_parts().1)?,
            ))
        }
        None => {
            let (sender, receiver) = oneshot::channel();
            std::thread::Builder::new()
                .name("hookd-reaper".to_owned())
                .spawn(move || {
                    let status = reap(pid, WaitPidFlag::empty()).and_then(|status| {
                        status.ok_or_else(|| io::Error::other("waitpid returned no status"))
                    });
                    let _ = sender.send(status);
                })?;
            Ok(ExitWatch::Thread(receiver))
        }
    }
}

/// `pidfd_open(pid)`, or `None` on a kernel without it.
fn pidfd_open(pid: Pid) -> io::Result<Option<OwnedFd>> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        let error = io::Error::last_os_error();
        return match error.raw_os_error() {
            Some(libc::ENOSYS) => Ok(None),
            _ => Err(error),
        };
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("pidfd out of range"))?;
    // SAFETY: the kernel just returned this descriptor, and nothing else owns it.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// A pipe whose ends are both close-on-exec: `(read, write)`.
fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(OFlag::O_CLOEXEC)?)
}

/// The three pipes of one hook process, each `(read end, write end)`: the child's ends are
/// above 2 and blocking, the daemon's ends non-blocking.
struct PipeSet {
    stdin: (OwnedFd, OwnedFd),
    stdout: (OwnedFd, OwnedFd),
    stderr: (OwnedFd, OwnedFd),
}

impl PipeSet {
    fn new() -> io::Result<PipeSet> {
        let (stdin_read, stdin_write) = pipe_pair()?;
        let (stdout_read, stdout_write) = pipe_pair()?;
        let (stderr_read, stderr_write) = pipe_pair()?;
        // The child moves its ends to 0, 1 and 2; none of them may already be one of those.
        let stdin_read = above_stdio(stdin_read)?;
        let stdout_write = above_stdio(stdout_write)?;
        let stderr_write = above_stdio(stderr_write)?;
        set_nonblocking(&stdin_write)?;
        set_nonblocking(&stdout_read)?;
        set_nonblocking(&stderr_read)?;
        Ok(PipeSet {
            stdin: (stdin_read, stdin_write),
            stdout: (stdout_read, stdout_write),
            stderr: (stderr_read, stderr_write),
        })
    }
}

/// Something a finished run no longer needs whose release can wait until its answer is out:
/// deregistering and closing costs system calls on the way to the answer otherwise.
// The variants are only held, to be dropped by `settle`.
#[allow(dead_code)]
enum Deferred {
    Watch(ExitWatch),
    Reader(pipe::Receiver),
    Fd(OwnedFd),
}

/// At most this many deferred releases wait; more are released at once.
const MAX_DEFERRED: usize = 64;

thread_local! {
    /// Pipes made ahead of time for this thread's next spawn (see [`settle`]).
    static SPARE_PIPES: RefCell<Option<PipeSet>> = const { RefCell::new(None) };
    /// Releases waiting for [`settle`].
    static DEFERRED: RefCell<Vec<Deferred>> = const { RefCell::new(Vec::new()) };
}

/// The pipes for a spawn: the spare set made ahead of time, else new ones.
fn take_pipe_set() -> io::Result<PipeSet> {
    match SPARE_PIPES.with(|spare| spare.borrow_mut().take()) {
        Some(set) => Ok(set),
        None => PipeSet::new(),
    }
}

fn defer(item: Deferred) {
    let overflow = DEFERRED.with(|deferred| {
        let mut deferred = deferred.borrow_mut();
        deferred.push(item);
        (deferred.len() > MAX_DEFERRED).then(|| std::mem::take(&mut *deferred))
    });
    drop(overflow);
}

/// Releases an output pipe end of a finished run later (see [`settle`]).
pub(crate) fn defer_close(fd: OwnedFd) {
    defer(Deferred::Fd(fd));
}

/// Deregisters and closes an output pipe of a finished run later (see [`settle`]).
pub(crate) fn defer_reader(reader: pipe::Receiver) {
    defer(Deferred::Reader(reader));
}

/// Does the work that spawning left for a quieter moment, on this thread: releases what
/// finished runs no longer need, and makes the pipes of the next spawn. The server calls it
/// right after it has sent an answer, while the client reads it; a thread that never calls it
/// only releases later and spawns with new pipes.
pub fn settle() {
    let deferred = DEFERRED.with(|deferred| std::mem::take(&mut *deferred.borrow_mut()));
    drop(deferred);
    SPARE_PIPES.with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.is_none() {
            // Failing here (out of descriptors) only means the next spawn tries again.
            *spare = PipeSet::new().ok();
        }
    });
}

/// `fd` itself if it is above 2, else a close-on-exec duplicate that is (the original is
/// closed), so that the child's `dup2` onto 0, 1 and 2 never overwrites another of its pipes.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(fcntl(&fd, FcntlArg::F_DUPFD_CLOEXEC(3)).map(|raw| {
        // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
        unsafe { OwnedFd::from_raw_fd(raw) }
    })?)
}

/// Makes the daemon's end of a pipe non-blocking. Pipes are created with no status flags, so
/// setting `O_NONBLOCK` alone needs no read of the current flags.
fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
    Ok(())
}

/// The pointers of `items` followed by a null pointer, as `execve` takes `argv` and `envp`.
fn null_terminated<'a>(items: impl Iterator<Item = *const c_char> + 'a) -> Vec<*const c_char> {
    let mut pointers: Vec<*const c_char> = items.collect();
    pointers.push(std::ptr::null());
    pointers
}

/// Which step of the child failed.
#[repr(i32)]
#[derive(Clone, Copy)]
enum Stage {
    None = 0,
    Setup = 1,
    Chdir = 2,
    Exec = 3,
}

/// What the child reads, and writes back on failure. Shared with the child through `CLONE_VM`.
#[repr(C)]
struct ChildArgs {
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    /// The child's stdin, stdout and stderr, all above 2.
    fds: [RawFd; 3],
    /// The `errno` of the step that failed, or 0.
    error: c_int,
    /// The [`Stage`] that failed.
    stage: c_int,
    /// The soft `RLIMIT_NOFILE` to set in the child, or `u64::MAX` to leave it.
    nofile_soft: u64,
    /// The `RLIMIT_DATA` (soft and hard) to set in the child, or `u64::MAX` to leave it.
    data_limit: u64,
}

thread_local! {
    /// The stack children started from this thread run on until their `execve`. A
    /// `CLONE_VFORK` clone returns only once the child has executed or exited, so one stack
    /// per thread is never used by two children at once.
    static CHILD_STACK: RefCell<Vec<u128>> = const { RefCell::new(Vec::new()) };
}

/// Clones the child that runs [`child_main`] with `args`, and returns its pid and, when the
/// kernel supports `CLONE_PIDFD`, its pidfd. Returns once the child has executed its program or
/// exited.
fn clone_child(args: &mut ChildArgs) -> io::Result<(Pid, Option<OwnedFd>)> {
    CHILD_STACK.with(|stack| {
        let mut stack = stack
            .try_borrow_mut()
            .map_err(|_| io::Error::other("hook spawn re-entered on one thread"))?;
        if stack.is_empty() {
            // u128 elements keep the stack 16-byte aligned, as the x86-64 and AArch64 ABIs
            // require.
            stack.resize(CHILD_STACK_BYTES / size_of::<u128>(), 0);
        }
        let top = stack.as_mut_ptr_range().end.cast::<c_void>();
        let want_pidfd = CLONE_PIDFD_SUPPORT.load(Ordering::Relaxed) != 2;
        let (pid, pidfd) = clone_blocking_signals(args, top, want_pidfd)?;
        match pidfd {
            Some(fd) => {
                CLONE_PIDFD_SUPPORT.store(1, Ordering::Relaxed);
                // SAFETY: the kernel stored a new descriptor for the child here.
                Ok((pid, Some(unsafe { OwnedFd::from_raw_fd(fd) })))
            }
            None => Ok((pid, None)),
        }
    })
}

/// One `clone` with every signal blocked in this thread around it. Retries without
/// `CLONE_PIDFD` when the kernel refuses it.
fn clone_blocking_signals(
    args: &mut ChildArgs,
    stack_top: *mut c_void,
    want_pidfd: bool,
) -> io::Result<(Pid, Option<RawFd>)> {
    let mut want_pidfd = want_pidfd;
    loop {
        let mut pidfd: c_int = -1;
        let mut flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
        if want_pidfd {
            flags |= libc::CLONE_PIDFD;
        }
        // SAFETY: `all` and `previous` are valid signal sets for the calls that fill and read
        // them. `clone` runs `child_main` on `stack_top`, the top of a stack this thread owns
        // and does not use meanwhile (CLONE_VFORK suspends this thread until the child has
        // executed or exited), with `args`, which outlives the child's use of it for the same
        // reason. `pidfd` receives the child's pidfd when CLONE_PIDFD is set.
        let (pid, errno) = unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut previous: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut previous);
            let pid = libc::clone(
                child_main,
                stack_top,
                flags,
                std::ptr::from_mut(args).cast::<c_void>(),
                &mut pidfd as *mut c_int,
            );
            let errno = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            (pid, errno)
        };
        if pid >= 0 {
            return Ok((Pid::from_raw(pid), want_pidfd.then_some(pidfd)));
        }
        if want_pidfd && errno.raw_os_error() == Some(libc::EINVAL) {
            CLONE_PIDFD_SUPPORT.store(2, Ordering::Relaxed);
            want_pidfd = false;
            continue;
        }
        return Err(errno);
    }
}

/// The child, until its `execve`: runs on its own stack in the daemon's memory, so it only
/// makes system calls and writes nothing but `args.error` and `args.stage`.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed to `clone`; it stays valid and
    // unaliased until this child executes or exits, because the parent thread is suspended
    // until then. Every call below is a thin system-call wrapper that is safe after a
    // `vfork`-style clone: none allocates, takes a lock or touches the parent's signal handlers.
    unsafe {
        let args = &mut *arg.cast::<ChildArgs>();
        let mut default_action: libc::sigaction = std::mem::zeroed();
        default_action.sa_sigaction = libc::SIG_DFL;
        let mut signal = 1;
        while signal < 32 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::sigaction(signal, &default_action, std::ptr::null_mut());
            }
            signal += 1;
        }
        if libc::setpgid(0, 0) != 0 {
            fail(args, Stage::Setup);
        }
        let mut target = 0;
        while target < 3 {
            if libc::dup2(args.fds[target as usize], target) < 0 {
                fail(args, Stage::Setup);
            }
            target += 1;
        }
        if args.nofile_soft != u64::MAX {
            // Back to the soft limit the daemon started with (the hard limit is unchanged, so
            // this cannot fail for a valid value; if it did, the hook keeps the higher one).
            let mut limit: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur = args.nofile_soft as libc::rlim_t;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
        if args.data_limit != u64::MAX {
            let limit = libc::rlimit {
                rlim_cur: args.data_limit as libc::rlim_t,
                rlim_max: args.data_limit as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                fail(args, Stage::Setup);
            }
        }
        if libc::chdir(args.cwd) != 0 {
            fail(args, Stage::Chdir);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(args.path, args.argv, args.envp);
        fail(args, Stage::Exec)
    }
}

/// Records why the child failed and exits it with 127.
///
/// # Safety
///
/// Only for [`child_main`], with its `args`.
unsafe fn fail(args: &mut ChildArgs, stage: Stage) -> ! {
    // SAFETY: see `child_main`; `_exit` ends the child without running anything of the
    // parent's (no atexit handlers, no stdio flushing).
    unsafe {
        std::ptr::write_volatile(&mut args.error, *libc::__errno_location());
        std::ptr::write_volatile(&mut args.stage, stage as c_int);
        libc::_exit(127)
    }
}

/// Writes as much of `bytes` as the pipe takes right now; `Ok(n)` with `n < bytes.len()` when
/// it is full (the rest must wait for the reader).
pub(crate) fn write_now(fd: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<usize> {
    let mut written = 0;
    while written < bytes.len() {
        match nix::unistd::write(fd, &bytes[written..]) {
            Ok(n) => written += n,
            Err(nix::errno::Errno::EAGAIN) => break,
            Err(nix::errno::Errno::EINTR) => {}
            Err(errno) => return Err(io::Error::from(errno)),
        }
    }
    Ok(written)
}

/// A stdin pipe end registered with tokio, to wait until it takes more.
pub(crate) fn async_stdin(fd: OwnedFd) -> io::Result<pipe::Sender> {
    pipe::Sender::from_owned_fd_unchecked(fd)
}

/// An output pipe end registered with tokio, to wait until it has more.
pub(crate) fn register_reader(fd: OwnedFd) -> io::Result<pipe::Receiver> {
    pipe::Receiver::from_owned_fd_unchecked(fd)
}

/// What reading a pipe without waiting found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadNow {
    /// The writers are gone: everything has been read.
    Eof,
    /// Nothing more right now; a writer is still there.
    Empty,
}

/// Reads what `fd` holds right now, handing each piece to `take`; stops at end of file (or a
/// read error, which ends the stream the same way) or when the pipe is empty.
pub(crate) fn read_now(fd: BorrowedFd<'_>, mut take: impl FnMut(&[u8])) -> ReadNow {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match nix::unistd::read(fd, &mut chunk) {
            Ok(0) => return ReadNow::Eof,
            Ok(n) => take(&chunk[..n]),
            Err(nix::errno::Errno::EAGAIN) => return ReadNow::Empty,
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return ReadNow::Eof,
        }
    }
}

/// Borrows the raw descriptor of a stdin end.
pub(crate) fn borrow(fd: &OwnedFd) -> BorrowedFd<'_> {
    fd.as_fd()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    /// What a test spawns, owned: `sh -c <script>` in `/` with a small environment.
    struct Parts {
        path: CString,
        argv: Vec<CString>,
        env: HookEnv,
        cwd: CString,
    }

    impl Parts {
        fn new(script: &str) -> Parts {
            Parts {
                path: CString::new("/bin/sh").expect("path"),
                argv: ["sh", "-c", script]
                    .iter()
                    .map(|arg| CString::new(*arg).expect("arg"))
                    .collect(),
                env: HookEnv::new(vec![
                    ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
                    ("HOOK_TEST".to_owned(), "yes".to_owned()),
                ]),
                cwd: CString::new("/").expect("cwd"),
            }
        }

        fn spawn(&self) -> Result<HookChild, SpawnError> {
            spawn(&Launch {
                path: &self.path,
                argv: &self.argv,
                env: &self.env,
                cwd: &self.cwd,
                max_data_bytes: None,
            })
        }
    }

    async fn read_all(pipe: &mut pipe::Receiver) -> String {
        let mut out = String::new();
        pipe.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn a_child_gets_its_environment_directory_group_and_pipes() {
        let parts = Parts::new(
            "read line; echo \"$line $HOOK_TEST $(pwd)\"; echo err >&2; \
             [ \"$(ps -o pgid= $$ | tr -d ' ')\" = \"$$\" ] && exit 3",
        );
        let mut child = parts.spawn().expect("spawn");
        let stdin = child.stdin.take().expect("stdin");
        assert_eq!(write_now(borrow(&stdin), b"hello\n").expect("write"), 6);
        drop(stdin);
        let mut stdout = register_reader(child.stdout.take().expect("stdout")).expect("register");
        let mut stderr = register_reader(child.stderr.take().expect("stderr")).expect("register");
        assert_eq!(read_all(&mut stdout).await, "hello yes /\n");
        assert_eq!(read_all(&mut stderr).await, "err\n");
        let status = child.wait().await.expect("wait");
        assert_eq!(status.code(), Some(3), "the child leads its own group");
        assert_eq!(child.id(), None);
        // Waiting again returns the same status.
        assert_eq!(child.wait().await.expect("wait").code(), Some(3));
    }

    #[tokio::test]
    async fn failures_name_the_step() {
        let mut parts = Parts::new("true");
        parts.path = CString::new("/nonexistent/program").expect("path");
        match parts.spawn() {
            Err(SpawnError::Exec(error)) => assert_eq!(error.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
        let mut parts = Parts::new("true");
        parts.cwd = CString::new("/nonexistent/dir").expect("dir");
        match parts.spawn() {
            Err(SpawnError::Chdir(error)) => assert_eq!(error.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
        let mut parts = Parts::new("true");
        parts.env = HookEnv::new(vec![("A".to_owned(), "b\0c".to_owned())]);
        assert!(matches!(parts.spawn(), Err(SpawnError::Other(_))));
    }

    #[tokio::test]
    async fn signals_are_reported_and_handlers_reset() {
        let mut child = Parts::new("kill -TERM $$; sleep 5").spawn().expect("spawn");
        let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .expect("exits")
            .expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }

    #[tokio::test]
    async fn a_dropped_child_is_reaped() {
        let mut child = Parts::new("exec sleep 30").spawn().expect("spawn");
        let pid = child.id().expect("running");
        assert!(child.try_wait().expect("try_wait").is_none());
        nix::sys::signal::kill(Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL)
            .expect("kill");
        drop(child);
        // The background reaper collects it: the pid leaves /proc (a zombie would stay).
        let gone = async {
            while std::path::Path::new(&format!("/proc/{pid}")).exists() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), gone)
            .await
            .expect("reaped");
    }

    #[tokio::test]
    async fn settle_makes_the_next_spawns_pipes_and_releases_finished_runs() {
        let spare = || SPARE_PIPES.with(|spare| spare.borrow().is_some());
        let deferred = || DEFERRED.with(|deferred| deferred.borrow().len());
        settle();
        assert!(spare(), "settle makes pipes for the next spawn");
        let parts = Parts::new("echo out");
        let mut child = parts.spawn().expect("spawn with the spare pipes");
        assert!(!spare(), "the spawn took them");
        drop(child.stdin.take());
        let mut stdout = register_reader(child.stdout.take().expect("stdout")).expect("register");
        assert_eq!(read_all(&mut stdout).await, "out\n");
        assert_eq!(child.wait().await.expect("wait").code(), Some(0));
        defer_reader(stdout);
        assert_eq!(deferred(), 2, "the pidfd and the pipe wait for settle");
        settle();
        assert_eq!(deferred(), 0);
        // Without a spare, a spawn makes its own pipes.
        SPARE_PIPES.with(|spare| spare.borrow_mut().take());
        let mut child = parts.spawn().expect("spawn with new pipes");
        assert_eq!(child.wait().await.expect("wait").code(), Some(0));
        settle();
    }

    #[test]
    fn environments_compare_by_their_variables() {
        let a = HookEnv::new(vec![("A".to_owned(), "1".to_owned())]);
        let b = HookEnv::new(vec![("A".to_owned(), "1".to_owned())]);
        let c = HookEnv::new(vec![("A".to_owned(), "2".to_owned())]);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.get("A"), Some("1"));
        assert_eq!(format!("{c:?}"), "[\"A\"]");
    }
}
