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

//!
//! The log is three parts: [`line`] formats a run's line, [`writer`] is the thread that
//! appends, rotates and reopens the files, and this module is the handle runs hold (the
//! bounded queue, its counters, the stop).

pub(crate) mod line;
pub(crate) mod writer;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use hookd_core::HookResult;
use hookd_core::aggregate::Aggregate;
use hookd_core::payload::build_payload;
use hookd_runner::fire::FireRequest;

use crate::audit::line::{RunRecord, format_line};
use crate::audit::writer::{
    AuditCounters, Message, Writer, create_log_dir, file_identity, open_log,
};
use crate::config::AuditConfig;

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

#[cfg(test)]
mod tests {
    use std::fs::OpenOptions;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    use super::*;

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
}
