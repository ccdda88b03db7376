//! Replacing a file atomically, the one way hookd and hookctl write the files people and
//! other programs read (settings and hooks files, install manifests, the one-shot engine's
//! record): readers see the old file or the new one, never a part, and a crash right after
//! the call returns loses neither.
//!
//! The bytes go to a new temporary file in the same directory (so the rename cannot cross a
//! file system), which is fsynced, renamed over the path, and then the directory is fsynced,
//! which is what makes the rename itself durable. The temporary file is created exclusively
//! (`O_EXCL`: a symbolic link planted at its name is not followed) and removed again when any
//! step fails. [`AtomicWrite`] says what the callers differ in: the permissions of the new
//! file, whether an existing file's are kept, whether a symbolic link at the path is followed
//! (the link stays, its target is replaced) and the mode of directories created for it.
//!
//! It lives here, with the reading of those files, because the daemon and hookctl both depend
//! on this crate; it does blocking `std::fs` I/O only (an async caller runs it on a blocking
//! thread).

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Tells apart the temporary files of concurrent writes in one process (other processes
/// differ by their id).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How [`AtomicWrite::write`] replaces a file. The default: a new file gets `0o666` less the
/// umask, an existing file's permissions are not kept, a symbolic link at the path is
/// replaced by the file, and missing directories are created with `0o777` less the umask.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtomicWrite {
    mode: Option<u32>,
    keep_mode: bool,
    follow_symlink: bool,
    dir_mode: Option<u32>,
}

impl AtomicWrite {
    /// The default options (see [`AtomicWrite`]).
    pub fn new() -> AtomicWrite {
        AtomicWrite::default()
    }

    /// The new file's permission bits, set exactly (the umask does not apply). With
    /// [`AtomicWrite::keep_mode`], only for a file that did not exist.
    pub fn mode(mut self, mode: u32) -> AtomicWrite {
        self.mode = Some(mode & 0o7777);
        self
    }

    /// Keeps the permission bits of the file being replaced.
    pub fn keep_mode(mut self) -> AtomicWrite {
        self.keep_mode = true;
        self
    }

    /// When the path is a symbolic link, replaces the file it points to (resolved to its
    /// final target), so the link stays a link.
    pub fn follow_symlink(mut self) -> AtomicWrite {
        self.follow_symlink = true;
        self
    }

    /// The permission bits of the directories created for the file (the umask applies).
    pub fn dir_mode(mut self, mode: u32) -> AtomicWrite {
        self.dir_mode = Some(mode & 0o7777);
        self
    }

    /// Replaces `path`'s contents with `bytes` atomically and durably, creating its missing
    /// directories.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let target = self.target(path)?;
        let dir = match target.parent() {
            Some(dir) if dir.as_os_str().is_empty() => Path::new("."),
            Some(dir) => dir,
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} names no file in a directory", path.display()),
                ));
            }
        };
        let mut builder = DirBuilder::new();
        builder.recursive(true);
        if let Some(mode) = self.dir_mode {
            builder.mode(mode);
        }
        builder.create(dir)?;
        let kept = if self.keep_mode {
            std::fs::metadata(&target)
                .ok()
                .map(|metadata| metadata.permissions().mode() & 0o7777)
        } else {
            None
        };
        let mode = kept.or(self.mode);
        let (temp, mut file) = create_temp(dir, &target, mode)?;
        let written = (|| {
            file.write_all(bytes)?;
            if let Some(mode) = mode {
                // The open's mode went through the umask; the file must have exactly these.
                file.set_permissions(Permissions::from_mode(mode))?;
            }
            file.sync_all()?;
            drop(file);
            std::fs::rename(&temp, &target)
        })();
        if let Err(err) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(err);
        }
        File::open(dir)?.sync_all()
    }

    /// The file to replace: `path`, or with [`AtomicWrite::follow_symlink`] the final target
    /// of a symbolic link at it.
    fn target(&self, path: &Path) -> io::Result<PathBuf> {
        if self.follow_symlink
            && std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_symlink())
        {
            return std::fs::canonicalize(path);
        }
        Ok(path.to_owned())
    }
}

/// Creates the temporary file beside `target` exclusively. A file left at the same name by a
/// crashed process that had the same id is removed and the creation tried once more.
fn create_temp(dir: &Path, target: &Path, mode: Option<u32>) -> io::Result<(PathBuf, File)> {
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(
        ".{name}.hookd-{}-{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let open = || {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        if let Some(mode) = mode {
            options.mode(mode);
        }
        options.open(&temp)
    };
    let file = match open() {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(&temp)?;
            open()?
        }
        other => other?,
    };
    Ok((temp, file))
}

/// Replaces `path`'s contents with `bytes` atomically and durably with the default options
/// ([`AtomicWrite`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    AtomicWrite::new().write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_the_contents_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names_in(dir.path()), ["settings.json"]);
    }

    #[test]
    fn creates_missing_directories_with_their_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/record.json");
        AtomicWrite::new()
            .mode(0o600)
            .dir_mode(0o700)
            .write(&path, b"{}")
            .unwrap();
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(mode_of(&dir.path().join("a/b")), 0o700);
        assert_eq!(mode_of(&dir.path().join("a")), 0o700);
    }

    #[test]
    fn the_mode_is_set_or_kept_as_asked() {
        // (existing file's mode, options, expected mode)
        let cases: [(Option<u32>, AtomicWrite, u32); 4] = [
            (Some(0o640), AtomicWrite::new().mode(0o600), 0o600),
            (
                Some(0o640),
                AtomicWrite::new().keep_mode().mode(0o644),
                0o640,
            ),
            (None, AtomicWrite::new().keep_mode().mode(0o644), 0o644),
            (Some(0o755), AtomicWrite::new().keep_mode(), 0o755),
        ];
        for (existing, options, expected) in cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f");
            if let Some(mode) = existing {
                std::fs::write(&path, "old").unwrap();
                std::fs::set_permissions(&path, Permissions::from_mode(mode)).unwrap();
            }
            options.write(&path, b"new").unwrap();
            assert_eq!(mode_of(&path), expected, "{existing:?} {options:?}");
        }
    }

    #[test]
    fn a_symbolic_link_is_followed_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link.json");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();

        AtomicWrite::new()
            .follow_symlink()
            .write(&link, b"through")
            .unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"through");

        AtomicWrite::new().write(&link, b"over").unwrap();
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&link).unwrap(), b"over");
        assert_eq!(std::fs::read(&real).unwrap(), b"through");
    }

    #[test]
    fn a_stale_temporary_file_or_link_at_the_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        // The next temporary name this process will use.
        let next = TEMP_COUNTER.load(Ordering::Relaxed);
        for n in next..next + 4 {
            let name = format!(".f.hookd-{}-{n}.tmp", std::process::id());
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
        }
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "x").unwrap();
        // Renaming a file over a non-empty directory fails.
        assert!(write_atomic(&path, b"new").is_err());
        assert!(path.is_dir());
        assert_eq!(names_in(dir.path()), ["d"]);
    }
}
