//! Binding the daemon's Unix socket safely.
//!
//! The socket lives in a directory only its owner can write to and is itself 0600. A missing
//! directory is created with mode 0700. An existing one must already be safe
//! (`hookd_protocol::check_socket_directory`: a real directory, not a symbolic link, owned by
//! the user, writable by nobody else); hookd never changes the mode of a directory it did not
//! create, so a planted symbolic link or a `--socket` in the user's home directory cannot make
//! it `chmod` anything. An unsafe directory is refused with an error that names it and says
//! what to do.
//!
//! Before binding, an existing socket file is probed: if a daemon answers, we refuse to start
//! (two daemons on one path would steal each other's clients); if nothing answers, the file is
//! a leftover of a crashed daemon and is removed. What was bound is remembered by device and
//! inode ([`BoundSocket`]), so that a stopping daemon removes its socket only if the path
//! still is that socket, never one another process (systemd, a second daemon) bound since.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use hookd_protocol::SocketTrustError;
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
    /// The socket directory could not be created.
    #[error("cannot create socket directory {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The directory exists but is not safe: a symbolic link, someone else's, or writable by
    /// other users. hookd does not change it.
    #[error("refusing to listen there: {0}")]
    UnsafeDirectory(#[source] SocketTrustError),
    /// Binding or securing the socket failed.
    #[error("cannot bind {path}: {source}")]
    Bind {
        /// The socket path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// The socket file a daemon bound, identified by device and inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundSocket {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl BoundSocket {
    /// The path the socket was bound at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket file if the path still is the socket this daemon bound; returns
    /// whether it did. Call it after the listener is closed. A path that now holds another
    /// file (a socket systemd bound after this daemon started, a second daemon's) is left
    /// alone: it must have the bound device and inode, and no process may be listening on
    /// the path (an inode number can be reused at once by the next socket created; the
    /// kernel's table of listening sockets tells, without connecting, which would start a
    /// socket-activated service).
    pub fn remove_if_unchanged(&self) -> bool {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta)
                if meta.file_type().is_socket()
                    && meta.dev() == self.dev
                    && meta.ino() == self.ino
                    && !someone_listens_at(&self.path) =>
            {
                std::fs::remove_file(&self.path).is_ok()
            }
            _ => false,
        }
    }
}

/// Whether a listening Unix socket is bound at `path`, from `/proc/net/unix` (whose flags
/// column has `__SO_ACCEPTCON`, 0x10000, for a listening socket). When the table cannot be
/// read, assume someone does: leaving a stale file behind is harmless (the next start removes
/// it), removing a live socket is not.
fn someone_listens_at(path: &Path) -> bool {
    use std::io::Read;
    const MAX_TABLE_BYTES: u64 = 64 * 1024 * 1024;
    let mut table = String::new();
    let read = std::fs::File::open("/proc/net/unix")
        .and_then(|file| file.take(MAX_TABLE_BYTES).read_to_string(&mut table));
    if read.is_err() {
        return true;
    }
    let wanted = path.as_os_str().to_string_lossy();
    table.lines().skip(1).any(|line| {
        let columns: Vec<&str> = line.split_whitespace().collect();
        columns.len() >= 8
            && columns[7..].join(" ") == wanted
            && u32::from_str_radix(columns[3], 16).is_ok_and(|flags| flags & 0x10000 != 0)
    })
}

/// Binds a listening socket at `path` (see [`bind_socket_file`]), forgetting which file it
/// bound.
pub async fn bind_socket(path: &Path) -> Result<UnixListener, BindError> {
    bind_socket_file(path).await.map(|(listener, _)| listener)
}

/// Binds a listening socket at `path`, creating its parent directory with mode 0700 if it is
/// missing (an existing one must be safe already) and setting the socket's mode to 0600.
/// Returns the listener and the bound file, for [`BoundSocket::remove_if_unchanged`] at stop.
///
/// An existing socket that answers a connection means a live daemon: [`BindError::AlreadyRunning`].
/// One that refuses is stale and removed.
pub async fn bind_socket_file(path: &Path) -> Result<(UnixListener, BoundSocket), BindError> {
    prepare_directory(hookd_protocol::socket_directory(path))?;
    let bind_error = |source| BindError::Bind {
        path: path.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if still_answers(path).await {
                return Err(BindError::AlreadyRunning(path.to_owned()));
            }
            std::fs::remove_file(path).map_err(bind_error)?;
        }
        Ok(_) => return Err(BindError::NotASocket(path.to_owned())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(source) => return Err(bind_error(source)),
    }
    let listener = UnixListener::bind(path).map_err(bind_error)?;
    // Identify what we bound before anything else can replace it: the directory is ours and
    // closed to others, so only this user's processes could.
    let meta = std::fs::symlink_metadata(path).map_err(bind_error)?;
    let bound = BoundSocket {
        path: path.to_owned(),
        dev: meta.dev(),
        ino: meta.ino(),
    };
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(bind_error)?;
    }
    Ok((listener, bound))
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

/// Creates `dir` with mode 0700 if it is missing (its missing parents too); an existing `dir`
/// must pass `hookd_protocol::check_socket_directory` and is never changed.
fn prepare_directory(dir: &Path) -> Result<(), BindError> {
    let directory_error = |source| BindError::Directory {
        path: dir.to_owned(),
        source,
    };
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        if std::fs::symlink_metadata(parent).is_err() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(directory_error)?;
        }
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        // Created here: 0700 less the umask, owned by us. Still checked below, like any.
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(directory_error(error)),
    }
    hookd_protocol::check_socket_directory(dir, nix::unistd::getuid().as_raw())
        .map_err(BindError::UnsafeDirectory)
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
    async fn unsafe_directories_are_refused_and_never_changed() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let wide = tmp.path().join("wide");
        std::fs::create_dir(&wide).unwrap();
        std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o777)).unwrap();
        let target = tmp.path().join("victim");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        let planted = tmp.path().join("planted");
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        for (dir, mode_after) in [(&wide, 0o777), (&planted, 0o755)] {
            let error = bind_socket(&dir.join("hookd.sock")).await.unwrap_err();
            assert!(matches!(error, BindError::UnsafeDirectory(_)), "{error}");
            assert!(
                error.to_string().contains(&dir.display().to_string()),
                "{error}"
            );
            let mode = std::fs::metadata(dir).unwrap().mode() & 0o7777;
            assert_eq!(mode, mode_after, "{} was changed", dir.display());
            assert!(!dir.join("hookd.sock").exists());
        }
        // A readable (0755) directory of the user is safe as it is, and stays 0755.
        let _listener = bind_socket(&target.join("hookd.sock")).await.unwrap();
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o7777, 0o755);
    }

    #[tokio::test]
    async fn a_socket_bound_since_by_someone_else_is_not_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hookd.sock");
        let (first, bound) = bind_socket_file(&path).await.unwrap();
        // Another process (systemd after `hookctl service install`) replaces the path.
        drop(first);
        std::fs::remove_file(&path).unwrap();
        let _other = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert!(!bound.remove_if_unchanged());
        assert!(path.exists(), "the other socket must stay");
        // Our own, unchanged, is removed once its listener is closed.
        let other = tmp.path().join("own.sock");
        let (listener, own) = bind_socket_file(&other).await.unwrap();
        assert!(!own.remove_if_unchanged(), "removed while still listening");
        drop(listener);
        assert!(own.remove_if_unchanged());
        assert!(!other.exists());
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
