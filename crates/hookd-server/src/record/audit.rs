//! The audit log: one JSON line per event run that had hooks to run, rotated by size.
//!
//! A line says when the event fired, which event, session and project directory, what each
//! hook decided (its name, layer, decision, exit code, duration, outcome and failure kind) and
//! what the run decided in the end (`decision`, `continue`, `success`). The hooks' stdin
//! payload is left out unless the daemon was told to include it, because it holds prompts,
//! tool inputs and model text.
//!
//! Lines are written by a dedicated thread fed by a queue bounded both in lines and in bytes
//! (a line with a 1 MiB stdin counts as 1 MiB). A run only formats its line and offers it to
//! the queue; when either bound would be passed (the disk is slower than the events) the line
//! is dropped and counted, with a warning once per episode, so the audit log can never hold up
//! a hook decision nor make the daemon grow. One line larger than the byte bound is still
//! taken when the queue is empty. Write errors are counted and warned about the same way; the
//! writer reopens the file on the next line.
//!
//! Before each batch the writer compares the file it holds with what the path names now (by
//! device and inode, one `stat`): a log that was deleted, or moved away by an outside rotation
//! tool, is reopened (created afresh at the path), so lines never go to a file nobody can see.
//! A write that fails half-way (a full disk) is cut back to the last whole line with
//! `ftruncate`; if even that fails, the next write starts on a new line. Either way no line is
//! ever glued to a torn one, and `lines_written` counts only whole lines that reached the
//! file.
//!
//! A graceful stop ([`AuditLog::close`]) gives the writer at most [`CLOSE_TIMEOUT`] to write
//! what is queued. The writer may be stuck in a `write` that never returns (a FIFO whose
//! reader stopped reading, a hung network filesystem), so the stop never waits on the thread
//! itself, nor on anything a stuck thread could hold: at the deadline the lines not yet
//! written are counted as dropped, a `warn` line says how many were lost, and the thread is
//! left behind (it ends with the process).
//!
//! Rotation: before a line would take the file past its size limit, `<path>.<keep>` is
//! removed, `<path>.<n>` becomes `<path>.<n+1>`, `<path>` becomes `<path>.1`, and a new
//! `<path>` is started. Every file is created with mode 0600, and an existing file found more
//! open is narrowed to it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use hookd_core::aggregate::Aggregate;
use hookd_core::payload::build_payload;
use hookd_core::{HookEventName, HookResult};
use hookd_runner::fire::FireRequest;
use serde_json::{Map, Value};

use crate::config::AuditConfig;

/// The most bytes one write gathers from the queue: lines that arrive together are written
/// with one system call, without letting a backlog grow one buffer without bound.
const BATCH_BYTES: usize = 256 * 1024;

/// How long a stopping daemon waits for the writer to finish the queued lines; past it they
/// are counted as lost and the stop goes on.
pub(crate) const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the audit log could not be started.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The log file could not be opened (or created) for appending.
    #[error("cannot open the audit log {path}: {error}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// The writer thread could not be started.
    #[error("cannot start the audit log writer: {0}")]
    Thread(io::Error),
}

/// What one event run did, as the audit line records it.
pub(crate) struct RunRecord<'a> {
    /// When the event fired, as the hooks' payload says it (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
    pub(crate) time: &'a str,
    /// The event.
    pub(crate) event: HookEventName,
    /// The agent's session id.
    pub(crate) session_id: &'a str,
    /// The project directory (the request's `cwd`).
    pub(crate) cwd: &'a str,
    /// The event's own input fields, for the tool name.
    pub(crate) input: &'a Map<String, Value>,
    /// The registry generation the run used.
    pub(crate) generation: u64,
    /// Every hook's record, in plan order.
    pub(crate) results: &'a [HookResult],
    /// The merged result.
    pub(crate) aggregate: &'a Aggregate,
    /// The stdin payload the plan's hooks were given (the first hook's, for a sequential
    /// chain), when the log includes it.
    pub(crate) stdin: Option<Map<String, Value>>,
    /// For a run outside the answer (`crate::background`): `async`, `detached`, `dropped`
    /// or `cut_short`.
    pub(crate) background: Option<&'static str>,
}

/// Records one event run in the daemon's audit log, when it keeps one: `fire` is the request
/// the hooks ran for, `results` their records in plan order, `aggregate` the merged result.
pub(crate) fn record_run(
    audit: Option<&AuditLog>,
    fire: &FireRequest,
    generation: u64,
    results: &[HookResult],
    aggregate: &Aggregate,
    background: Option<&'static str>,
) {
    let Some(audit) = audit else {
        return;
    };
    let stdin = audit
        .include_stdin
        .then(|| build_payload(fire.event, &fire.base, &fire.input));
    audit.record(&RunRecord {
        time: &fire.base.timestamp,
        event: fire.event,
        session_id: &fire.base.session_id,
        cwd: &fire.base.cwd,
        input: &fire.input,
        generation,
        results,
        aggregate,
        stdin,
        background,
    });
}

/// The audit log's state for `status`.
pub(crate) fn status(audit: &AuditLog) -> hookd_protocol::AuditStatus {
    let counters = audit.counters();
    hookd_protocol::AuditStatus {
        path: audit.path().display().to_string(),
        lines_written: counters.written.load(Ordering::Relaxed),
        lines_dropped: counters.dropped.load(Ordering::Relaxed),
        write_errors: counters.failed.load(Ordering::Relaxed),
    }
}

/// Formats one audit line (without its newline).
///
/// Keys, in order: `time`, `event`, `session_id`, `cwd`, `tool_name` (tool events only),
/// `generation`, `hooks` (each `name`, `source`, `decision`, `exit_code`, `duration_ms`,
/// `outcome`, `failure`, `success`), `decision`, `continue`, `success`, `background` for a
/// run no client waited for (`crate::background`), then `stdin` when included. A hook's `decision` is the string `decision` of its output (after its failure
/// policy), else `null`; the run's `decision` and `continue` are those of the merged output,
/// `null` where it has none.
pub(crate) fn format_line(record: &RunRecord<'_>) -> String {
    let mut line = Map::new();
    line.insert("time".into(), record.time.into());
    line.insert("event".into(), record.event.as_str().into());
    line.insert("session_id".into(), record.session_id.into());
    line.insert("cwd".into(), record.cwd.into());
    if let Some(tool) = record.input.get("tool_name").and_then(Value::as_str) {
        line.insert("tool_name".into(), tool.into());
    }
    line.insert("generation".into(), record.generation.into());
    let hooks = record.results.iter().map(hook_entry).collect();
    line.insert("hooks".into(), Value::Array(hooks));
    let final_output = record.aggregate.final_output.as_ref();
    line.insert("decision".into(), field(final_output, "decision"));
    line.insert("continue".into(), field(final_output, "continue"));
    line.insert("success".into(), record.aggregate.success.into());
    if let Some(background) = record.background {
        line.insert("background".into(), background.into());
    }
    if let Some(stdin) = &record.stdin {
        line.insert("stdin".into(), Value::Object(stdin.clone()));
    }
    Value::Object(line).to_string()
}

/// One hook's part of an audit line.
fn hook_entry(result: &HookResult) -> Value {
    let mut hook = Map::new();
    hook.insert("name".into(), result.name.as_str().into());
    hook.insert("source".into(), result.source.label().into());
    let decision = result
        .output
        .as_ref()
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str);
    hook.insert("decision".into(), decision.into());
    hook.insert("exit_code".into(), result.exit_code.into());
    // Microsecond precision is plenty, and keeps lines short.
    let duration_ms = (result.duration.as_secs_f64() * 1_000_000.0).round() / 1000.0;
    hook.insert("duration_ms".into(), duration_ms.into());
    hook.insert("outcome".into(), result.outcome.kind().into());
    hook.insert(
        "failure".into(),
        result.failure.map(|kind| kind.as_str()).into(),
    );
    hook.insert("success".into(), result.success.into());
    Value::Object(hook)
}

/// A top-level field of the merged output, or `null`.
fn field(output: Option<&Value>, key: &str) -> Value {
    output
        .and_then(|output| output.get(key))
        .cloned()
        .unwrap_or(Value::Null)
}

/// What the writer thread is sent.
enum Message {
    /// A line to write (without its newline).
    Line(String),
    /// Write everything before this, then tell the sender (tests wait for lines this way).
    #[cfg(test)]
    Flush(SyncSender<()>),
    /// Write everything before this, then stop.
    Stop,
}

/// Counters of the audit log, for `status`.
#[derive(Debug, Default)]
pub(crate) struct AuditCounters {
    /// Lines written to the file.
    pub(crate) written: AtomicU64,
    /// Lines dropped because the queue was full (or the writer had stopped).
    pub(crate) dropped: AtomicU64,
    /// Lines lost to write errors.
    pub(crate) failed: AtomicU64,
    /// Lines taken into the queue (each ends up written, failed, or lost at a stop).
    accepted: AtomicU64,
}

/// The running audit log: the queue's sending end and the writer thread.
pub(crate) struct AuditLog {
    /// The log file, for `status` and messages.
    path: PathBuf,
    /// Whether lines carry the hooks' stdin.
    include_stdin: bool,
    /// The queue to the writer.
    sender: SyncSender<Message>,
    /// What happened to the lines so far.
    counters: Arc<AuditCounters>,
    /// Set while lines are being dropped, so the warning is logged once per episode.
    dropping: AtomicBool,
    /// The bytes of the lines queued and not yet taken by the writer.
    queued_bytes: Arc<AtomicU64>,
    /// The most bytes the queue holds (see the module documentation).
    queue_bytes: u64,
    /// The writer thread, until [`AuditLog::close`] waits for it (or leaves it behind).
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Set by [`AuditLog::close`]: the writer ends once the queue is empty.
    stopping: Arc<AtomicBool>,
    /// Told by the writer when it has ended, for [`AuditLog::close`] to wait on without
    /// blocking a thread of its own.
    ended: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

impl AuditLog {
    /// Opens (or creates) the log file and starts the writer thread.
    ///
    /// # Errors
    ///
    /// The file cannot be opened for appending, or the thread cannot be started: a daemon
    /// told to keep an audit log should not start without one.
    pub(crate) fn start(config: &AuditConfig) -> Result<AuditLog, AuditError> {
        create_log_dir(&config.path).map_err(|error| AuditError::Open {
            path: config.path.clone(),
            error,
        })?;
        let file = open_log(&config.path).map_err(|error| AuditError::Open {
            path: config.path.clone(),
            error,
        })?;
        let (sender, receiver) = sync_channel(config.queue_lines.max(1));
        let counters = Arc::new(AuditCounters::default());
        let queued_bytes = Arc::new(AtomicU64::new(0));
        let identity = file_identity(&file);
        let stopping = Arc::new(AtomicBool::new(false));
        let (ended_sender, ended) = tokio::sync::oneshot::channel();
        let mut writer = Writer {
            stopping: Arc::clone(&stopping),
            queued_bytes: Arc::clone(&queued_bytes),
            identity,
            torn: false,
            path: config.path.clone(),
            max_bytes: config.max_bytes,
            keep: config.keep,
            size: file.metadata().map_or(0, |metadata| metadata.len()),
            file: Some(file),
            counters: Arc::clone(&counters),
            failing: false,
        };
        let thread = std::thread::Builder::new()
            .name("hookd-audit".into())
            .spawn(move || {
                writer.run(&receiver);
                let _ = ended_sender.send(());
            })
            .map_err(AuditError::Thread)?;
        Ok(AuditLog {
            path: config.path.clone(),
            include_stdin: config.include_stdin,
            sender,
            counters,
            dropping: AtomicBool::new(false),
            queued_bytes,
            queue_bytes: config.queue_bytes.max(1) as u64,
            writer: Mutex::new(Some(thread)),
            stopping,
            ended: Mutex::new(Some(ended)),
        })
    }

    /// The log file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What happened to the lines so far.
    pub(crate) fn counters(&self) -> &AuditCounters {
        &self.counters
    }

    /// Queues the line for `record`. Never blocks: a full queue drops the line, counts it,
    /// and warns once until lines get through again.
    pub(crate) fn record(&self, record: &RunRecord<'_>) {
        self.offer(format_line(record));
    }

    /// Queues one formatted line (see [`AuditLog::record`]).
    fn offer(&self, line: String) {
        if self.stopping.load(Ordering::Relaxed) {
            // After the stop's deadline nothing more reaches the file: counted, not queued.
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let size = line.len() as u64 + 1;
        // Reserve the line's bytes first; the writer gives them back when it takes the line.
        let reserved = self
            .queued_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued == 0 || queued.saturating_add(size) <= self.queue_bytes)
                    .then(|| queued.saturating_add(size))
            })
            .is_ok();
        let sent = if reserved {
            let sent = self.sender.try_send(Message::Line(line));
            if sent.is_err() {
                self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
            }
            sent.map_err(|_| ())
        } else {
            Err(())
        };
        match sent {
            Ok(()) => {
                self.counters.accepted.fetch_add(1, Ordering::Relaxed);
                if self.dropping.swap(false, Ordering::Relaxed) {
                    tracing::info!(
                        path = %self.path.display(),
                        dropped_total = self.counters.dropped.load(Ordering::Relaxed),
                        "audit log lines are being written again"
                    );
                }
            }
            Err(()) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                if !self.dropping.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        path = %self.path.display(),
                        "the audit log's queue is full (its disk is slower than the events); \
                         dropping lines until it drains, counted in status"
                    );
                }
            }
        }
    }

    /// Waits until every line queued before this call is written (or failed).
    #[cfg(test)]
    fn flush_blocking(&self) {
        let (done, wait) = sync_channel(1);
        if self.sender.send(Message::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }

    /// Writes the queued lines and stops the writer, for the end of a graceful stop; returns
    /// within [`CLOSE_TIMEOUT`] whatever the destination does. Lines offered afterwards, and
    /// lines still unwritten at the deadline, are dropped and counted.
    pub(crate) async fn close(&self) {
        self.close_within(CLOSE_TIMEOUT).await;
    }

    /// [`AuditLog::close`] with its deadline.
    async fn close_within(&self, deadline: Duration) {
        let thread = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let ended = self
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let (Some(thread), Some(ended)) = (thread, ended) else {
            return;
        };
        // The flag first: a writer that finds the queue empty after it ends instead of
        // waiting for more. The `Stop` wakes a writer already waiting; when the queue is full
        // the writer is busy and sees the flag once it has emptied the queue.
        self.stopping.store(true, Ordering::SeqCst);
        let _ = self.sender.try_send(Message::Stop);
        match tokio::time::timeout(deadline, ended).await {
            Ok(Ok(())) => {
                if thread.join().is_err() {
                    tracing::error!("the audit log writer failed");
                }
            }
            Ok(Err(_)) => tracing::error!("the audit log writer failed"),
            Err(_) => {
                // The thread is stuck in a write; it is left behind, and what it has not
                // written by now is lost.
                let counters = &self.counters;
                let done = counters.written.load(Ordering::Relaxed)
                    + counters.failed.load(Ordering::Relaxed);
                let lost = counters
                    .accepted
                    .load(Ordering::Relaxed)
                    .saturating_sub(done);
                counters.dropped.fetch_add(lost, Ordering::Relaxed);
                tracing::warn!(
                    path = %self.path.display(),
                    lost,
                    deadline_ms = deadline.as_millis() as u64,
                    "the audit log writer did not finish in time (its destination does not \
                     take writes); {lost} audit lines lost"
                );
            }
        }
    }
}

/// Creates the log's directory (and its parents) with mode 0700 when it does not exist: what
/// hooks decided is nobody else's business. An existing directory is left as it is.
fn create_log_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir),
        _ => Ok(()),
    }
}

/// Opens the log for appending, creating it with mode 0600, and narrows an existing file's
/// mode to 0600 (a file with looser permissions would leak what hooks decided).
fn open_log(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let mode = file.metadata()?.permissions().mode() & 0o777;
    if mode != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// The device and inode of an open file, or `None` when they cannot be read.
fn file_identity(file: &File) -> Option<(u64, u64)> {
    file.metadata().ok().map(|meta| (meta.dev(), meta.ino()))
}

/// The file the log is appended to: a real file, or a fake in tests.
trait LogFile: Write {
    /// Cuts the file back to `len` bytes.
    fn truncate_to(&mut self, len: u64) -> io::Result<()>;
}

impl LogFile for File {
    fn truncate_to(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }
}

/// What appending a batch did.
#[derive(Debug, PartialEq, Eq)]
struct Appended {
    /// Whole lines that reached the file and stay there.
    lines: u64,
    /// The file's size afterwards.
    size: u64,
    /// Why the rest did not, if it did not.
    error: Option<io::ErrorKind>,
}

/// Appends `bytes` (whole lines) to `file`, whose size is `size`. When `torn` is set, the file
/// ends in a cut-off line: a newline goes first. A write that fails half-way is cut back to
/// `size`; if the cut fails too, the whole lines that got in count and `torn` is set, so the
/// next append starts on a new line.
fn append_lines(file: &mut impl LogFile, size: u64, bytes: &[u8], torn: &mut bool) -> Appended {
    let mut size = size;
    if *torn {
        match file.write(b"\n") {
            Ok(1) => {
                *torn = false;
                size += 1;
            }
            Ok(_) => {
                return Appended {
                    lines: 0,
                    size,
                    error: Some(io::ErrorKind::WriteZero),
                };
            }
            Err(error) => {
                return Appended {
                    lines: 0,
                    size,
                    error: Some(error.kind()),
                };
            }
        }
    }
    let mut written = 0;
    let mut failure = None;
    while written < bytes.len() {
        match file.write(&bytes[written..]) {
            Ok(0) => {
                failure = Some(io::ErrorKind::WriteZero);
                break;
            }
            Ok(n) => written += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                failure = Some(error.kind());
                break;
            }
        }
    }
    let Some(error) = failure else {
        return Appended {
            lines: bytes.iter().filter(|&&b| b == b'\n').count() as u64,
            size: size + bytes.len() as u64,
            error: None,
        };
    };
    if written == 0 || file.truncate_to(size).is_ok() {
        return Appended {
            lines: 0,
            size,
            error: Some(error),
        };
    }
    let kept = &bytes[..written];
    *torn = kept.last() != Some(&b'\n');
    Appended {
        lines: kept.iter().filter(|&&b| b == b'\n').count() as u64,
        size: size + written as u64,
        error: Some(error),
    }
}

/// `<path>.<n>`.
fn rotated(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// The writer thread's state.
struct Writer {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    /// The current file, or `None` after a failure until the next line reopens it.
    file: Option<File>,
    /// The current file's size.
    size: u64,
    counters: Arc<AuditCounters>,
    /// Set while writes fail, so the warning is logged once per episode.
    failing: bool,
    /// The bytes queued for this writer (shared with [`AuditLog`]), given back as lines are
    /// taken from the queue.
    queued_bytes: Arc<AtomicU64>,
    /// The device and inode of `file`, to notice when the path names another file.
    identity: Option<(u64, u64)>,
    /// The file ends in a line cut off by a failed write: the next write starts a new line.
    torn: bool,
    /// Set when the daemon stops: end once the queue is empty (see [`AuditLog::close`]).
    stopping: Arc<AtomicBool>,
}

impl Writer {
    /// Writes lines as they come, a batch at a time, until told to stop or every sender is
    /// gone.
    fn run(&mut self, receiver: &Receiver<Message>) {
        let mut batch = String::new();
        let mut lines = 0u64;
        loop {
            let first = if self.stopping.load(Ordering::SeqCst) {
                match receiver.try_recv() {
                    Ok(message) => message,
                    Err(_) => break,
                }
            } else {
                match receiver.recv() {
                    Ok(message) => message,
                    Err(_) => break,
                }
            };
            let mut next = Some(first);
            loop {
                match next.take() {
                    Some(Message::Line(line)) => {
                        self.queued_bytes
                            .fetch_sub(line.len() as u64 + 1, Ordering::AcqRel);
                        if !batch.is_empty()
                            && self.overflows(batch.len() as u64, line.len() as u64 + 1)
                        {
                            // The batch must not straddle a rotation.
                            self.write_batch(&mut batch, &mut lines);
                        }
                        batch.push_str(&line);
                        batch.push('\n');
                        lines += 1;
                    }
                    #[cfg(test)]
                    Some(Message::Flush(done)) => {
                        self.write_batch(&mut batch, &mut lines);
                        let _ = done.send(());
                    }
                    Some(Message::Stop) => {
                        self.write_batch(&mut batch, &mut lines);
                        return;
                    }
                    None => {}
                }
                if batch.len() >= BATCH_BYTES {
                    self.write_batch(&mut batch, &mut lines);
                }
                match receiver.try_recv() {
                    Ok(message) => next = Some(message),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.write_batch(&mut batch, &mut lines);
                        return;
                    }
                }
            }
            self.write_batch(&mut batch, &mut lines);
        }
        self.write_batch(&mut batch, &mut lines);
    }

    /// Whether `extra` more bytes would take the file, with `pending` bytes already headed for
    /// it, past the limit. An empty file takes anything: a line longer than the limit gets a
    /// file of its own rather than being lost.
    fn overflows(&self, pending: u64, extra: u64) -> bool {
        let used = self.size.saturating_add(pending);
        used > 0 && used.saturating_add(extra) > self.max_bytes
    }

    /// Writes the batch (rotating first if it would not fit) and clears it.
    fn write_batch(&mut self, batch: &mut String, lines: &mut u64) {
        if batch.is_empty() {
            return;
        }
        let result = self.try_write(batch.as_bytes());
        match result {
            Ok(()) => {
                self.counters.written.fetch_add(*lines, Ordering::Relaxed);
                if std::mem::take(&mut self.failing) {
                    tracing::info!(path = %self.path.display(), "the audit log is writable again");
                }
            }
            Err((written, err)) => {
                self.counters.written.fetch_add(written, Ordering::Relaxed);
                self.counters
                    .failed
                    .fetch_add(lines.saturating_sub(written), Ordering::Relaxed);
                // Start afresh next time: the file may have been removed or replaced.
                self.file = None;
                if !std::mem::replace(&mut self.failing, true) {
                    tracing::warn!(
                        path = %self.path.display(),
                        %err,
                        "cannot write the audit log; lines are lost until it works again"
                    );
                }
            }
        }
        batch.clear();
        *lines = 0;
    }

    /// Rotates when needed, (re)opens the file when needed (also when the path no longer
    /// names the open file), and appends `bytes`. On failure, says how many of its lines got
    /// into the file whole anyway.
    fn try_write(&mut self, bytes: &[u8]) -> Result<(), (u64, io::Error)> {
        self.reopen_if_replaced();
        if self.overflows(0, bytes.len() as u64) {
            self.rotate().map_err(|error| (0, error))?;
        }
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                let file = open_log(&self.path).map_err(|error| (0, error))?;
                self.size = file.metadata().map_err(|error| (0, error))?.len();
                self.identity = file_identity(&file);
                // A new file starts clean.
                self.torn = false;
                self.file.insert(file)
            }
        };
        let appended = append_lines(file, self.size, bytes, &mut self.torn);
        self.size = appended.size;
        match appended.error {
            None => Ok(()),
            Some(kind) => Err((appended.lines, io::Error::from(kind))),
        }
    }

    /// Drops the open file when the path now names another file or none (deleted, or moved
    /// away by an outside rotation), so that the next write opens the path afresh.
    fn reopen_if_replaced(&mut self) {
        if self.file.is_none() {
            return;
        }
        let now = std::fs::metadata(&self.path)
            .ok()
            .map(|meta| (meta.dev(), meta.ino()));
        if now.is_none() || now != self.identity {
            tracing::info!(
                path = %self.path.display(),
                "the audit log was deleted or moved away; reopening it"
            );
            self.file = None;
        }
    }

    /// Shifts the rotated files up by one, dropping the oldest, and moves the current file to
    /// `<path>.1`; the next write starts a new file.
    fn rotate(&mut self) -> io::Result<()> {
        self.file = None;
        self.identity = None;
        if self.keep == 0 {
            remove_if_present(&self.path)?;
        } else {
            remove_if_present(&rotated(&self.path, self.keep))?;
            for n in (1..self.keep).rev() {
                rename_if_present(&rotated(&self.path, n), &rotated(&self.path, n + 1))?;
            }
            rename_if_present(&self.path, &rotated(&self.path, 1))?;
        }
        self.size = 0;
        Ok(())
    }
}

/// Removes a file; one that is not there is fine.
fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// Renames a file; one that is not there is fine.
fn rename_if_present(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::rename(from, to) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_log_directory_is_created_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let path = dir.path().join("a/b/audit.log");
        super::create_log_dir(&path).unwrap_or_else(|err| panic!("{err}"));
        for created in [dir.path().join("a"), dir.path().join("a/b")] {
            let mode = std::fs::metadata(&created)
                .unwrap_or_else(|err| panic!("{err}"))
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "{}", created.display());
        }
        // An existing directory is left alone.
        super::create_log_dir(&path).unwrap_or_else(|err| panic!("{err}"));
    }

    use std::time::Duration;

    use hookd_core::policy::FailureKind;
    use hookd_core::{HookOutcome, OutputFormat, Source};
    use serde_json::json;

    use super::*;

    /// A hook record with the fields the audit line reads.
    fn result(
        name: &str,
        output: Option<Value>,
        outcome: HookOutcome,
        failure: Option<FailureKind>,
    ) -> HookResult {
        HookResult {
            name: name.to_owned(),
            source: Source::Project,
            event: HookEventName::BeforeTool,
            success: outcome == HookOutcome::Exited { code: 0 },
            output_format: output.as_ref().map(|_| OutputFormat::Json),
            output,
            stdout: "secret stdout".to_owned(),
            stderr: "secret stderr".to_owned(),
            exit_code: match outcome {
                HookOutcome::Exited { code } => Some(code),
                _ => None,
            },
            duration: Duration::from_micros(12_345),
            error: None,
            outcome,
            failure,
            warning: None,
        }
    }

    /// An aggregate with this merged output.
    fn aggregate(final_output: Option<Value>, success: bool) -> Aggregate {
        Aggregate {
            success,
            final_output,
            all_outputs: Vec::new(),
            errors: Vec::new(),
            total_duration: Duration::ZERO,
        }
    }

    /// Formats a line for `results` and `aggregate` and compares it, parsed, with `expected`.
    fn check_line(
        results: &[HookResult],
        aggregate: &Aggregate,
        stdin: Option<Map<String, Value>>,
        expected: Value,
    ) {
        let input = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
        let record = RunRecord {
            time: "2023-11-14T22:13:20.123Z",
            event: HookEventName::BeforeTool,
            session_id: "s1",
            cwd: "/srv/p",
            input: input.as_object().unwrap(),
            generation: 3,
            results,
            aggregate,
            stdin,
            background: None,
        };
        let line = format_line(&record);
        assert!(!line.contains('\n'), "one line: {line}");
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed, expected);
        // Key order is part of the format: people read these files.
        let keys: Vec<&String> = parsed.as_object().unwrap().keys().collect();
        let expected_keys: Vec<&String> = expected.as_object().unwrap().keys().collect();
        assert_eq!(keys, expected_keys);
    }

    #[test]
    fn lines_record_each_hook_and_the_final_decision_without_stdin() {
        let deny = json!({"decision": "deny", "reason": "no"});
        let results = [
            result(
                "guard",
                Some(deny.clone()),
                HookOutcome::Exited { code: 0 },
                None,
            ),
            result(
                "slow",
                None,
                HookOutcome::TimedOut { timeout_ms: 500 },
                Some(FailureKind::TimedOut),
            ),
        ];
        check_line(
            &results,
            &aggregate(Some(deny), false),
            None,
            json!({
                "time": "2023-11-14T22:13:20.123Z",
                "event": "BeforeTool",
                "session_id": "s1",
                "cwd": "/srv/p",
                "tool_name": "run_shell_command",
                "generation": 3,
                "hooks": [
                    {"name": "guard", "source": "project", "decision": "deny", "exit_code": 0,
                     "duration_ms": 12.345, "outcome": "exited", "failure": null, "success": true},
                    {"name": "slow", "source": "project", "decision": null, "exit_code": null,
                     "duration_ms": 12.345, "outcome": "timed_out", "failure": "timed_out",
                     "success": false},
                ],
                "decision": "deny",
                "continue": null,
                "success": false,
            }),
        );
        // No merged output: decision and continue are null.
        check_line(
            &[result("quiet", None, HookOutcome::Exited { code: 0 }, None)],
            &aggregate(None, true),
            None,
            json!({
                "time": "2023-11-14T22:13:20.123Z", "event": "BeforeTool", "session_id": "s1",
                "cwd": "/srv/p", "tool_name": "run_shell_command", "generation": 3,
                "hooks": [{"name": "quiet", "source": "project", "decision": null, "exit_code": 0,
                           "duration_ms": 12.345, "outcome": "exited", "failure": null,
                           "success": true}],
                "decision": null, "continue": null, "success": true,
            }),
        );
        // A stop: continue false.
        check_line(
            &[],
            &aggregate(Some(json!({"continue": false, "stopReason": "x"})), true),
            None,
            json!({
                "time": "2023-11-14T22:13:20.123Z", "event": "BeforeTool", "session_id": "s1",
                "cwd": "/srv/p", "tool_name": "run_shell_command", "generation": 3,
                "hooks": [], "decision": null, "continue": false, "success": true,
            }),
        );
    }

    #[test]
    fn stdin_is_included_only_when_given() {
        let stdin = json!({"session_id": "s1", "tool_input": {"command": "ls"}});
        check_line(
            &[],
            &aggregate(None, true),
            stdin.as_object().cloned(),
            json!({
                "time": "2023-11-14T22:13:20.123Z", "event": "BeforeTool", "session_id": "s1",
                "cwd": "/srv/p", "tool_name": "run_shell_command", "generation": 3,
                "hooks": [], "decision": null, "continue": null, "success": true,
                "stdin": stdin,
            }),
        );
    }

    /// Starts a log in a temp dir with the given rotation.
    fn log_in(dir: &Path, max_bytes: u64, keep: usize) -> AuditLog {
        let mut config = AuditConfig::new(dir.join("audit.log"));
        config.max_bytes = max_bytes;
        config.keep = keep;
        AuditLog::start(&config).unwrap()
    }

    /// The files of the log in `dir`, by name, with their lines.
    fn files(dir: &Path) -> Vec<(String, Vec<String>)> {
        let mut files: Vec<(String, Vec<String>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let text = std::fs::read_to_string(entry.path()).unwrap();
                (
                    entry.file_name().into_string().unwrap(),
                    text.lines().map(str::to_owned).collect(),
                )
            })
            .collect();
        files.sort();
        files
    }

    /// Writes `lines` one at a time (each flushed) to a log with this rotation and compares
    /// the files that result with `expected`.
    fn check_rotation(max_bytes: u64, keep: usize, lines: &[&str], expected: &[(&str, &[&str])]) {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path(), max_bytes, keep);
        for line in lines {
            log.offer((*line).to_owned());
            log.flush_blocking();
        }
        let expected: Vec<(String, Vec<String>)> = expected
            .iter()
            .map(|(name, lines)| {
                (
                    (*name).to_owned(),
                    lines.iter().map(|line| (*line).to_owned()).collect(),
                )
            })
            .collect();
        assert_eq!(files(dir.path()), expected, "max {max_bytes}, keep {keep}");
        assert_eq!(
            log.counters().written.load(Ordering::Relaxed),
            lines.len() as u64
        );
    }

    #[test]
    fn rotation_by_size_keeps_the_newest_files() {
        // Each line is 4 bytes with its newline; 8 bytes hold two.
        check_rotation(8, 5, &["aaa", "bbb"], &[("audit.log", &["aaa", "bbb"])]);
        check_rotation(
            8,
            5,
            &["aaa", "bbb", "ccc"],
            &[("audit.log", &["ccc"]), ("audit.log.1", &["aaa", "bbb"])],
        );
        check_rotation(
            8,
            2,
            &["a1", "a2", "b1", "b2", "c1", "c2", "d1"],
            &[
                ("audit.log", &["d1"]),
                ("audit.log.1", &["c1", "c2"]),
                ("audit.log.2", &["b1", "b2"]),
            ],
        );
        // keep 0: the file starts afresh, nothing is kept.
        check_rotation(8, 0, &["a1", "a2", "b1"], &[("audit.log", &["b1"])]);
        // A line longer than the limit still gets written, alone in its file.
        check_rotation(
            8,
            1,
            &["a1", "a-very-long-line", "b1"],
            &[
                ("audit.log", &["b1"]),
                ("audit.log.1", &["a-very-long-line"]),
            ],
        );
    }

    #[test]
    fn lines_written_together_do_not_straddle_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path(), 8, 3);
        for line in ["a1", "a2", "b1", "b2", "c1"] {
            log.offer(line.to_owned());
        }
        log.flush_blocking();
        let all: Vec<String> = files(dir.path())
            .into_iter()
            .rev()
            .flat_map(|(_, lines)| lines)
            .collect();
        // Oldest file first: nothing lost, nothing reordered, no file over the limit.
        assert_eq!(all, ["a1", "a2", "b1", "b2", "c1"]);
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            assert!(entry.unwrap().metadata().unwrap().len() <= 8);
        }
    }

    #[test]
    fn files_are_private_even_when_they_existed_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        // 12 bytes hold the old line and one new one.
        let log = log_in(dir.path(), 12, 2);
        for line in ["new1", "new2"] {
            log.offer(line.to_owned());
            log.flush_blocking();
        }
        let files = files(dir.path());
        assert_eq!(
            files,
            [
                ("audit.log".to_owned(), vec!["new2".to_owned()]),
                (
                    "audit.log.1".to_owned(),
                    vec!["old".to_owned(), "new1".to_owned()]
                ),
            ]
        );
        for (name, _) in files {
            let mode = std::fs::metadata(dir.path().join(&name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
    }

    #[test]
    fn a_log_that_cannot_be_opened_is_an_error() {
        // Its directory is a regular file: nothing can be created there.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("not-a-dir"), "").unwrap();
        let config = AuditConfig::new(dir.path().join("not-a-dir/audit.log"));
        let error = AuditLog::start(&config).err().unwrap();
        assert!(error.to_string().contains("not-a-dir/audit.log"), "{error}");
    }

    #[tokio::test]
    async fn a_stop_abandons_a_writer_stuck_in_a_write_and_counts_what_is_lost() {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("audit.fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // Opened, never read: the writer blocks once the pipe's buffer is full.
        let _reader = OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&fifo)
            .unwrap();
        let log = AuditLog::start(&AuditConfig::new(fifo)).unwrap();
        let line = "x".repeat(16 * 1024);
        for _ in 0..64 {
            log.offer(line.clone());
        }
        let started = std::time::Instant::now();
        log.close_within(Duration::from_millis(300)).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let counters = log.counters();
        let written = counters.written.load(Ordering::Relaxed);
        let dropped = counters.dropped.load(Ordering::Relaxed);
        // 1 MiB offered, at most the pipe's buffer (64 KiB by default) taken.
        assert!(written < 64, "{written}");
        assert_eq!(
            written + dropped,
            64,
            "written {written}, dropped {dropped}"
        );
        // Lines offered after the stop are dropped too, never waited for.
        log.offer("late".to_owned());
        assert_eq!(counters.dropped.load(Ordering::Relaxed), dropped + 1);
    }

    #[tokio::test]
    async fn a_stop_writes_what_is_queued_when_the_file_takes_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path(), 1 << 20, 1);
        for n in 0..100 {
            log.offer(format!("line {n}"));
        }
        log.close().await;
        let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
        assert_eq!(text.lines().count(), 100);
        assert_eq!(log.counters().written.load(Ordering::Relaxed), 100);
        assert_eq!(log.counters().dropped.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_full_queue_drops_and_counts_lines_instead_of_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = AuditConfig::new(dir.path().join("audit.log"));
        config.queue_lines = 1;
        let log = AuditLog::start(&config).unwrap();
        // Hold the writer: a flush whose answer nobody takes (a rendezvous channel) blocks it
        // until `release` is dropped. Until then the queue holds one message at most.
        let (held, release) = sync_channel(0);
        log.sender.send(Message::Flush(held)).unwrap();
        for n in 0..100 {
            log.offer(format!("line {n}"));
        }
        let dropped = log.counters().dropped.load(Ordering::Relaxed);
        // The flush itself may still occupy the one slot, or one line got in behind it.
        assert!(dropped >= 99, "dropped {dropped}");
        assert!(log.dropping.load(Ordering::Relaxed));
        drop(release);
        log.flush_blocking();
        let written = log.counters().written.load(Ordering::Relaxed);
        assert_eq!(written + dropped, 100);
        assert_eq!(files(dir.path())[0].1.len() as u64, written);
        // The next line that gets through ends the episode.
        log.offer("again".to_owned());
        assert!(!log.dropping.load(Ordering::Relaxed));
    }

    #[test]
    fn a_removed_log_directory_counts_failures_and_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        let log = log_in(&logs, 1024, 1);
        log.offer("before".to_owned());
        log.flush_blocking();
        // A rotation needs the directory; without it the lines fail and are counted.
        std::fs::remove_dir_all(&logs).unwrap();
        log.offer("x".repeat(2000));
        log.flush_blocking();
        assert_eq!(log.counters().failed.load(Ordering::Relaxed), 1);
        std::fs::create_dir(&logs).unwrap();
        log.offer("after".to_owned());
        log.flush_blocking();
        assert_eq!(
            files(&logs),
            [("audit.log".to_owned(), vec!["after".to_owned()])]
        );
        assert_eq!(log.counters().written.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn the_queue_is_bounded_in_bytes_and_dropped_lines_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = AuditConfig::new(dir.path().join("audit.log"));
        config.queue_bytes = 10_000;
        let log = AuditLog::start(&config).unwrap();
        let (held, release) = sync_channel(0);
        log.sender.send(Message::Flush(held)).unwrap();
        // 100 lines of 1 KiB while the writer is held: at most 10 KB may wait.
        let line = "x".repeat(1023);
        for _ in 0..100 {
            log.offer(line.clone());
        }
        assert!(log.queued_bytes.load(Ordering::Relaxed) <= 10_000);
        let dropped = log.counters().dropped.load(Ordering::Relaxed);
        assert!((90..100).contains(&dropped), "dropped {dropped}");
        drop(release);
        log.flush_blocking();
        let written = log.counters().written.load(Ordering::Relaxed);
        assert_eq!(written + dropped, 100);
        assert_eq!(log.queued_bytes.load(Ordering::Relaxed), 0);
        // One line larger than the whole bound still gets in when nothing waits.
        log.offer("y".repeat(50_000));
        log.flush_blocking();
        assert_eq!(log.counters().written.load(Ordering::Relaxed), written + 1);
    }

    #[test]
    fn a_deleted_or_moved_log_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path(), 1024 * 1024, 1);
        let path = dir.path().join("audit.log");
        log.offer("one".to_owned());
        log.flush_blocking();
        std::fs::remove_file(&path).unwrap();
        log.offer("two".to_owned());
        log.flush_blocking();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        // An outside rotation tool moves it away.
        std::fs::rename(&path, dir.path().join("audit.log.old")).unwrap();
        log.offer("three".to_owned());
        log.flush_blocking();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("audit.log.old")).unwrap(),
            "two\n"
        );
        assert_eq!(log.counters().written.load(Ordering::Relaxed), 3);
        assert_eq!(log.counters().failed.load(Ordering::Relaxed), 0);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    /// A file that takes `room` bytes, then fails as a full disk does; its truncation works
    /// unless `truncate_fails`.
    struct FullDisk {
        bytes: Vec<u8>,
        room: usize,
        truncate_fails: bool,
    }

    impl Write for FullDisk {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.room.saturating_sub(self.bytes.len()));
            if n == 0 {
                return Err(io::Error::from_raw_os_error(libc_enospc()));
            }
            self.bytes.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl LogFile for FullDisk {
        fn truncate_to(&mut self, len: u64) -> io::Result<()> {
            if self.truncate_fails {
                return Err(io::Error::from_raw_os_error(libc_enospc()));
            }
            self.bytes.truncate(len as usize);
            Ok(())
        }
    }

    fn libc_enospc() -> i32 {
        nix::errno::Errno::ENOSPC as i32
    }

    #[test]
    fn a_write_cut_short_never_leaves_a_line_glued_to_a_torn_one() {
        // (room on the disk, truncation fails, lines counted, file afterwards, torn)
        let batch = b"{\"a\":1}\n{\"b\":2}\n";
        let cases: [(usize, bool, u64, &[u8], bool); 4] = [
            (100, false, 2, b"old\n{\"a\":1}\n{\"b\":2}\n", false),
            // Cut in the second line: truncated back to what was there.
            (16, false, 0, b"old\n", false),
            // The truncation fails too: the first line counts, the cut-off one stays torn.
            (16, true, 1, b"old\n{\"a\":1}\n{\"b\"", true),
            // Nothing fits at all.
            (4, true, 0, b"old\n", false),
        ];
        for (room, truncate_fails, lines, after, torn_after) in cases {
            let mut file = FullDisk {
                bytes: b"old\n".to_vec(),
                room,
                truncate_fails,
            };
            let mut torn = false;
            let appended = append_lines(&mut file, 4, batch, &mut torn);
            assert_eq!(appended.lines, lines, "room {room}");
            assert_eq!(file.bytes, after, "room {room}");
            assert_eq!(appended.size, after.len() as u64, "room {room}");
            assert_eq!(torn, torn_after, "room {room}");
            assert_eq!(appended.error.is_some(), room < 20, "room {room}");
            // Once there is room again, the next line starts on a line of its own.
            file.room = usize::MAX;
            let next = append_lines(&mut file, appended.size, b"{\"c\":3}\n", &mut torn);
            assert_eq!(next.lines, 1);
            assert!(file.bytes.ends_with(b"\n{\"c\":3}\n"), "{:?}", file.bytes);
            let text = String::from_utf8(file.bytes).unwrap();
            assert!(
                text.lines().all(|line| line == "old"
                    || line.ends_with('}') && line.starts_with('{')
                    || line == "{\"b\""),
                "{text:?}"
            );
            assert!(!torn);
        }
    }
}
