//! Binding the daemon's Unix socket safely.
//!
//! The socket lives in a directory only its owner can enter (0700) and is itself 0600. Before
//! binding, an existing socket file is probed: if a daemon answers, we refuse to start (two
//! daemons on one path would steal each other's clients); if nothing answers, the file is a
//! leftover of a crashed daemon and is removed.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::{UnixListener, UnixStream};

/// Why the socket could not be bound. All of these are fatal for the daemon.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Another daemon accepted a connection on the path.
    #[error("another hookd is already listening on {0}")]
    AlreadyRunning(PathBuf),
    /// The path exists and is not a socket: we will not delete a user's file.
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    /// The socket directory could not be created or secured.
    #[error("cannot prepare socket directory {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The directory exists but belongs to someone else or is open to others.
    #[error("socket directory {path} is not private to this user (mode {mode:o}, owner {owner})")]
    UnsafeDirectory {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Its owner's uid.
        owner: u32,
    },
    /// Binding or securing the socket failed.
    #[error("cannot bind {path}: {source}")]
    Bind {
        /// The socket path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// Binds a listening socket at `path`, creating its parent directory with mode 0700 and
/// setting the socket's mode to 0600.
///
/// An existing socket that answers a connection means a live daemon: [`BindError::AlreadyRunning`].
/// One that refuses is stale and removed.
pub async fn bind_socket(path: &Path) -> Result<UnixListener, BindError> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        prepare_directory(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if still_answers(path).await {
                return Err(BindError::AlreadyRunning(path.to_owned()));
            }
            std::fs::remove_file(path).map_err(|source| BindError::Bind {
                path: path.to_owned(),
                source,
            })?;
        }
        Ok(_) => return Err(BindError::NotASocket(path.to_owned())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(BindError::Bind {
                path: path.to_owned(),
                source,
            });
        }
    }
    let listener = UnixListener::bind(path).map_err(|source| BindError::Bind {
        path: path.to_owned(),
        source,
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        BindError::Bind {
            path: path.to_owned(),
            source,
        }
    })?;
    Ok(listener)
}

/// Whether a daemon listens on `path`: it must accept a connection three times over 100 ms.
///
/// One accepted connection is not proof: a listener its daemon just closed lives on for a
/// moment in any child process that was being spawned at that instant (between its clone and
/// its exec, the child holds every descriptor of the parent). A live daemon keeps answering.
async fn still_answers(path: &Path) -> bool {
    for attempt in 0..3 {
        if attempt > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        if UnixStream::connect(path).await.is_err() {
            return false;
        }
    }
    true
}

/// Creates `dir` (0700) if missing; if it exists, insists it is ours and closed to others.
fn prepare_directory(dir: &Path) -> Result<(), BindError> {
    use std::os::unix::fs::MetadataExt;

    let created = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    if let Err(source) = created {
        return Err(BindError::Directory {
            path: dir.to_owned(),
            source,
        });
    }
    let meta = std::fs::metadata(dir).map_err(|source| BindError::Directory {
        path: dir.to_owned(),
        source,
    })?;
    let uid = nix::unistd::getuid().as_raw();
    let mode = meta.mode() & 0o7777;
    if meta.uid() != uid {
        return Err(BindError::UnsafeDirectory {
            path: dir.to_owned(),
            mode,
            owner: meta.uid(),
        });
    }
    if mode & 0o077 != 0 {
        // A directory we own but left open (e.g. created by hand): tighten it rather than
        // refuse, since the socket's own 0600 mode already protects it.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(
            |source| BindError::Directory {
                path: dir.to_owned(),
                source,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[tokio::test]
    async fn creates_private_directory_and_socket() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run/hookd/hookd.sock");
        let _listener = bind_socket(&path).await.unwrap();
        let dir_mode = std::fs::metadata(path.parent().unwrap()).unwrap().mode() & 0o777;
        let sock_mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(sock_mode, 0o600);
    }

    #[tokio::test]
    async fn refuses_when_a_daemon_answers_and_replaces_a_stale_socket() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hookd.sock");
        let live = bind_socket(&path).await.unwrap();
        assert!(matches!(
            bind_socket(&path).await,
            Err(BindError::AlreadyRunning(_))
        ));
        // Dropping the listener leaves the socket file behind, like a crashed daemon.
        drop(live);
        assert!(path.exists());
        let _again = bind_socket(&path).await.unwrap();
    }

    #[tokio::test]
    async fn refuses_to_replace_a_regular_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hookd.sock");
        std::fs::write(&path, "not a socket").unwrap();
        assert!(matches!(
            bind_socket(&path).await,
            Err(BindError::NotASocket(_))
        ));
    }
}
