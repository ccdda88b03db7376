//! Reading a configuration file that anyone could have put there, without ever blocking or
//! reading without end.
//!
//! Settings files can come from a cloned repository, so a settings path may be a symlink to
//! `/dev/zero`, a FIFO nobody writes to, a directory, a socket, a symlink loop or a file of
//! hundreds of megabytes. [`read_config_file`] opens the path with `O_NONBLOCK` (opening a FIFO
//! never waits for a writer) and `O_NOCTTY`, following symlinks; checks with `fstat` on the
//! opened descriptor (so what is checked is what is read) that it is a regular file; and reads
//! at most [`MAX_CONFIG_FILE_BYTES`], failing when the file is larger, even if it grows while
//! it is read. A path that does not exist is `Ok(None)`: an absent file is not an error.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest configuration file hookd reads: 4 MiB. Settings files are a few kilobytes; a
/// bigger one is refused (and the file's last good version stays).
pub const MAX_CONFIG_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a configuration file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigReadError {
    /// The path is not a regular file (after following symlinks).
    #[error("not a regular file (it is {0}); hookd only reads regular files")]
    NotRegular(&'static str),
    /// The file is larger than the limit.
    #[error("larger than the {limit}-byte limit for configuration files")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// A chain of symlinks that never ends (or is too long).
    #[error("too many levels of symbolic links (a symlink loop?)")]
    SymlinkLoop,
    /// Any other error opening or reading it.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Reads a configuration file of at most [`MAX_CONFIG_FILE_BYTES`]: `Ok(None)` when it does
/// not exist.
pub fn read_config_file(path: &Path) -> Result<Option<Vec<u8>>, ConfigReadError> {
    read_config_file_with_limit(path, MAX_CONFIG_FILE_BYTES)
}

/// [`read_config_file`] with another limit.
pub fn read_config_file_with_limit(
    path: &Path,
    limit: u64,
) -> Result<Option<Vec<u8>>, ConfigReadError> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ConfigReadError::SymlinkLoop);
        }
        // Opening a socket fails with ENXIO.
        Err(err) if err.raw_os_error() == Some(libc::ENXIO) => {
            return Err(ConfigReadError::NotRegular("a socket or a device"));
        }
        Err(err) => return Err(err.into()),
    };
    let metadata = file.metadata()?;
    let file_type = metadata.file_type();
    if !file_type.is_file() {
        return Err(ConfigReadError::NotRegular(if file_type.is_dir() {
            "a directory"
        } else if file_type.is_fifo() {
            "a FIFO"
        } else if file_type.is_char_device() {
            "a character device"
        } else if file_type.is_block_device() {
            "a block device"
        } else if file_type.is_socket() {
            "a socket"
        } else {
            "not a file"
        }));
    }
    if metadata.len() > limit {
        return Err(ConfigReadError::TooLarge { limit });
    }
    read_capped(file, metadata.len(), limit).map(Some)
}

/// Reads at most `limit` bytes; a file that turns out longer (it grew) is refused.
fn read_capped(file: File, expected: u64, limit: u64) -> Result<Vec<u8>, ConfigReadError> {
    let capacity = usize::try_from(expected.min(limit)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ConfigReadError::TooLarge { limit });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;
    use std::time::{Duration, Instant};

    #[test]
    fn only_small_regular_files_are_read() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        std::fs::write(dir.join("good.json"), "{}").unwrap();
        std::fs::write(dir.join("big.json"), vec![b' '; 2000]).unwrap();
        std::os::unix::fs::symlink("good.json", dir.join("link.json")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.json")).unwrap();
        std::os::unix::fs::symlink("/dev/urandom", dir.join("random.json")).unwrap();
        std::os::unix::fs::symlink("loop-b", dir.join("loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", dir.join("loop-b")).unwrap();
        nix::unistd::mkfifo(&dir.join("fifo.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::create_dir(dir.join("dir.json")).unwrap();
        let _listener = UnixListener::bind(dir.join("socket.json")).unwrap();

        // (file, Ok(bytes read) or the error's text)
        let cases: &[(&str, Result<Option<usize>, &str>)] = &[
            ("good.json", Ok(Some(2))),
            ("link.json", Ok(Some(2))),
            ("missing.json", Ok(None)),
            ("good.json/below", Ok(None)),
            ("big.json", Err("larger than the 1000-byte limit")),
            ("zero.json", Err("a character device")),
            ("random.json", Err("a character device")),
            ("loop-a", Err("symlink loop")),
            ("fifo.json", Err("a FIFO")),
            ("dir.json", Err("a directory")),
            ("socket.json", Err("a socket")),
        ];
        for (name, expected) in cases {
            let start = Instant::now();
            let result = read_config_file_with_limit(&dir.join(name), 1000);
            assert!(start.elapsed() < Duration::from_secs(2), "{name} blocked");
            match (result, expected) {
                (Ok(bytes), Ok(len)) => assert_eq!(bytes.map(|b| b.len()), *len, "{name}"),
                (Err(err), Err(text)) => {
                    assert!(err.to_string().contains(text), "{name}: {err}")
                }
                (result, expected) => panic!("{name}: {result:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn a_file_that_grows_past_the_limit_while_read_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("grows.json");
        std::fs::write(&path, "12345").unwrap();
        // The size checked by fstat was 5; the file now has 20 bytes.
        let file = File::open(&path).unwrap();
        std::fs::write(&path, "12345678901234567890").unwrap();
        let err = read_capped(file, 5, 10).unwrap_err();
        assert!(matches!(err, ConfigReadError::TooLarge { limit: 10 }));
    }
}
