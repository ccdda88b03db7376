//! Reading a policy's files safely ([`read_capped`]): a regular file only (a FIFO or a
//! device such as `/dev/zero` put in its place is refused before a byte is read, and opening
//! never blocks), at most a given size, with its SHA-256 and the version it was read at
//! ([`FileVersion`], to notice a later save).

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Opening or reading failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Not a regular file (a directory, a FIFO, a device, a socket).
    #[error("{path}: not a regular file")]
    NotRegular {
        /// The file.
        path: PathBuf,
    },
    /// Larger than allowed.
    #[error("{path}: larger than {max} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The most bytes allowed.
        max: u64,
    },
}

/// What identifies one version of a file: where it is and its inode, size and change time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileVersion {
    path: PathBuf,
    stamp: Option<(u64, u64, u64, i64, i64)>,
}

impl FileVersion {
    /// The version of `path` now (`None` inside when it cannot be looked at).
    pub fn now(path: &Path) -> FileVersion {
        let stamp = std::fs::metadata(path).ok().map(|meta| {
            (
                meta.dev(),
                meta.ino(),
                meta.size(),
                meta.mtime_nsec()
                    .wrapping_add(meta.mtime().wrapping_mul(1_000_000_000)),
                meta.ctime_nsec()
                    .wrapping_add(meta.ctime().wrapping_mul(1_000_000_000)),
            )
        });
        FileVersion {
            path: path.to_owned(),
            stamp,
        }
    }

    /// Whether the file is not this version any more.
    pub fn changed(&self) -> bool {
        FileVersion::now(&self.path) != *self
    }
}

/// A file's contents as read.
#[derive(Debug, Clone)]
pub struct ReadFile {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Their SHA-256, as 64 lower-case hex digits.
    pub sha256: String,
    /// The version that was read.
    pub version: FileVersion,
}

/// Reads `path` if it is a regular file of at most `max` bytes.
pub fn read_capped(path: &Path, max: u64) -> Result<ReadFile, FileError> {
    let io = |source| FileError::Io {
        path: path.to_owned(),
        source,
    };
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: path.to_owned(),
        });
    }
    if meta.len() > max {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            max,
        });
    }
    let version = FileVersion::now(path);
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte more than allowed tells a file that grew since it was looked at.
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            max,
        });
    }
    let sha256 = hex(&Sha256::digest(&bytes));
    Ok(ReadFile {
        bytes,
        sha256,
        version,
    })
}

/// SHA-256 of `bytes` as hex (the digest `hookctl trust` records).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(digest.len() * 2);
    for byte in digest {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.rego");
        std::fs::write(&file, b"package p\n").unwrap();
        let read = read_capped(&file, 100).unwrap();
        assert_eq!(read.bytes, b"package p\n");
        assert_eq!(read.sha256, sha256_hex(b"package p\n"));
        assert!(matches!(
            read_capped(&file, 5),
            Err(FileError::TooLarge { max: 5, .. })
        ));
        assert!(matches!(
            read_capped(dir.path(), 100),
            Err(FileError::NotRegular { .. })
        ));
        // A device that never ends, and a FIFO with no writer: refused at once.
        assert!(matches!(
            read_capped(Path::new("/dev/zero"), 100),
            Err(FileError::NotRegular { .. })
        ));
        let fifo = dir.path().join("fifo.rego");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(matches!(
            read_capped(&fifo, 100),
            Err(FileError::NotRegular { .. })
        ));
        assert!(matches!(
            read_capped(&dir.path().join("missing"), 100),
            Err(FileError::Io { .. })
        ));
    }

    #[test]
    fn a_save_is_a_new_version() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.rego");
        std::fs::write(&file, b"one").unwrap();
        let version = FileVersion::now(&file);
        assert!(!version.changed());
        // Replaced by a rename, as editors save.
        let next = dir.path().join("next");
        std::fs::write(&next, b"two").unwrap();
        std::fs::rename(&next, &file).unwrap();
        assert!(version.changed());
    }
}
