//! The audit log's writer thread: it takes lines from the queue in batches, appends them
//! (a write cut short is cut back to its last whole line), rotates the files by size, and
//! reopens a log that was deleted or moved away. Every file is created with mode 0600.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};

/// The most bytes one write gathers from the queue: lines that arrive together are written
/// with one system call, without letting a backlog grow one buffer without bound.
const BATCH_BYTES: usize = 256 * 1024;

/// What the writer thread is sent.
pub(crate) enum Message {
    /// A line to write (without its newline).
    Line(String),
    /// Write everything before this, then tell the sender (tests wait for lines this way).
    #[cfg(test)]
    Flush(std::sync::mpsc::SyncSender<()>),
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
    pub(crate) accepted: AtomicU64,
}

/// Creates the log's directory (and its parents) with mode 0700 when it does not exist: what
/// hooks decided is nobody else's business. An existing directory is left as it is.
pub(crate) fn create_log_dir(path: &Path) -> io::Result<()> {
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
pub(crate) fn open_log(path: &Path) -> io::Result<File> {
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
pub(crate) fn file_identity(file: &File) -> Option<(u64, u64)> {
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
pub(crate) struct Writer {
    pub(crate) path: PathBuf,
    pub(crate) max_bytes: u64,
    pub(crate) keep: usize,
    /// The current file, or `None` after a failure until the next line reopens it.
    pub(crate) file: Option<File>,
    /// The current file's size.
    pub(crate) size: u64,
    pub(crate) counters: Arc<AuditCounters>,
    /// Set while writes fail, so the warning is logged once per episode.
    pub(crate) failing: bool,
    /// The bytes queued for this writer (shared with [`super::AuditLog`]), given back as lines are
    /// taken from the queue.
    pub(crate) queued_bytes: Arc<AtomicU64>,
    /// The device and inode of `file`, to notice when the path names another file.
    pub(crate) identity: Option<(u64, u64)>,
    /// The file ends in a line cut off by a failed write: the next write starts a new line.
    pub(crate) torn: bool,
    /// Set when the daemon stops: end once the queue is empty (see [`super::AuditLog::close`]).
    pub(crate) stopping: Arc<AtomicBool>,
}

impl Writer {
    /// Writes lines as they come, a batch at a time, until told to stop or every sender is
    /// gone.
    pub(crate) fn run(&mut self, receiver: &Receiver<Message>) {
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
    use super::*;

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
