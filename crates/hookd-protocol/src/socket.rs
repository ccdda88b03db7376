//! Where the daemon's socket lives, resolved the same way by the daemon and its clients, and
//! the checks both make before trusting it.
//!
//! The default path falls back to `/tmp/hookd-<uid>/`, a place any local user can create
//! first. So before a client sends anything (its `hello` carries its environment, an event
//! carries tool inputs), it checks three things: the socket's directory is a real directory
//! (not a symbolic link) that belongs to the user and that nobody else can write to; the socket
//! is a real socket (not a symbolic link) that belongs to the user; and, once connected, the
//! process that listens on it runs as the user ([`check_peer`], `SO_PEERCRED`). The daemon
//! checks the directory the same way before it binds. The peer check is what makes a fake
//! daemon harmless; the path checks make the failure early and clear.
//!
//! Root is not trusted as a peer: the daemon only serves its own user, so a hookd running as
//! root for someone else is not a setup that can work, and accepting it would only widen what
//! a client trusts. (Root can read the user's files anyway; nothing here defends against it.)

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The environment variable that names the socket explicitly.
pub const SOCKET_ENV_VAR: &str = "HOOKD_SOCKET";

/// The directory holding the socket, under the runtime directory (or `/tmp` as `hookd-<uid>`).
pub const SOCKET_DIR_NAME: &str = "hookd";

/// The socket's file name.
pub const SOCKET_FILE_NAME: &str = "hookd.sock";

/// Resolves the socket path from an environment lookup and the user's id.
///
/// In order: `$HOOKD_SOCKET` if set and non-empty (used as given); else
/// `$XDG_RUNTIME_DIR/hookd/hookd.sock` if that variable is an absolute path (the XDG spec
/// says to ignore a relative one); else `/tmp/hookd-<uid>/hookd.sock`. The lookup is a
/// parameter so that callers with their own environment (and tests) need not touch the
/// process's.
pub fn resolve_socket_path(env: impl Fn(&str) -> Option<OsString>, uid: u32) -> PathBuf {
    if let Some(explicit) = env(SOCKET_ENV_VAR).filter(|value| !value.is_empty()) {
        return PathBuf::from(explicit);
    }
    let runtime_dir = env("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute());
    match runtime_dir {
        Some(dir) => dir.join(SOCKET_DIR_NAME).join(SOCKET_FILE_NAME),
        None => Path::new("/tmp")
            .join(format!("{SOCKET_DIR_NAME}-{uid}"))
            .join(SOCKET_FILE_NAME),
    }
}

/// The socket path for this process: [`resolve_socket_path`] with the process environment
/// and real user id.
pub fn default_socket_path() -> PathBuf {
    resolve_socket_path(
        |name| std::env::var_os(name),
        nix::unistd::getuid().as_raw(),
    )
}

/// What to do about a socket path that is not safe, appended to the errors about it.
const SQUAT_HINT: &str = "remove it if it is yours, or choose another place for the socket \
     (set XDG_RUNTIME_DIR, or HOOKD_SOCKET / --socket to a path in a directory only you can \
     write to)";

/// Why a socket path, or the process behind it, is not one this user may talk to.
#[derive(Debug, thiserror::Error)]
pub enum SocketTrustError {
    /// The socket, or its directory, does not exist (no daemon has bound it).
    #[error("no socket at {path} (is hookd running?)")]
    Missing {
        /// The path that does not exist.
        path: PathBuf,
    },
    /// The path could not be examined.
    #[error("cannot examine {path}: {source}")]
    Inspect {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The socket's directory is a symbolic link (someone may have planted it).
    #[error("the socket directory {path} is a symbolic link; {SQUAT_HINT}")]
    DirectoryIsSymlink {
        /// The directory.
        path: PathBuf,
    },
    /// The socket's "directory" is something else.
    #[error("{path} is not a directory; {SQUAT_HINT}")]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The socket's directory belongs to another user.
    #[error(
        "the socket directory {path} belongs to uid {owner}, not to you (uid {uid}); {SQUAT_HINT}"
    )]
    DirectoryNotOwned {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The user's own id.
        uid: u32,
    },
    /// Other users can create or replace files in the socket's directory.
    #[error(
        "the socket directory {path} can be written by other users (mode {mode:o}); {SQUAT_HINT}"
    )]
    DirectoryWritable {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The socket path is a symbolic link.
    #[error("{path} is a symbolic link, not a socket; {SQUAT_HINT}")]
    SocketIsSymlink {
        /// The path.
        path: PathBuf,
    },
    /// The socket path is not a socket.
    #[error("{path} is not a socket; {SQUAT_HINT}")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// The socket belongs to another user.
    #[error("the socket {path} belongs to uid {owner}, not to you (uid {uid}); {SQUAT_HINT}")]
    SocketNotOwned {
        /// The socket.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The user's own id.
        uid: u32,
    },
    /// The process listening on the socket runs as another user: it is not the user's hookd.
    #[error(
        "the process listening on the socket runs as uid {peer}, not as you (uid {uid}); \
         nothing was sent to it"
    )]
    PeerNotOwned {
        /// The listener's user id.
        peer: u32,
        /// The user's own id.
        uid: u32,
    },
    /// The listener's credentials could not be read, so it cannot be trusted.
    #[error("cannot read the credentials of the process listening on the socket: {0}")]
    PeerUnknown(#[source] io::Error),
}

/// Whether a process running as `peer` may be talked to by (or may talk to) a process running
/// as `own`: only the same user. See the module documentation for why root is not accepted.
pub fn peer_uid_allowed(peer: u32, own: u32) -> bool {
    peer == own
}

/// The socket's directory: the parent of `path`, or `.` for a bare file name.
pub fn socket_directory(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Checks that `dir` is a real directory (not a symbolic link), owned by `uid`, that no other
/// user can write to (neither group- nor other-writable).
pub fn check_socket_directory(dir: &Path, uid: u32) -> Result<(), SocketTrustError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| inspect_error(dir, source))?;
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        return Err(SocketTrustError::DirectoryIsSymlink {
            path: dir.to_owned(),
        });
    }
    if !file_type.is_dir() {
        return Err(SocketTrustError::NotADirectory {
            path: dir.to_owned(),
        });
    }
    if meta.uid() != uid {
        return Err(SocketTrustError::DirectoryNotOwned {
            path: dir.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(SocketTrustError::DirectoryWritable {
            path: dir.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Checks the socket at `path` before connecting: its directory passes
/// [`check_socket_directory`], and the path itself is a socket (not a symbolic link) owned by
/// `uid`.
pub fn check_socket_path(path: &Path, uid: u32) -> Result<(), SocketTrustError> {
    check_socket_directory(socket_directory(path), uid)?;
    let meta = std::fs::symlink_metadata(path).map_err(|source| inspect_error(path, source))?;
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        return Err(SocketTrustError::SocketIsSymlink {
            path: path.to_owned(),
        });
    }
    if !file_type.is_socket() {
        return Err(SocketTrustError::NotASocket {
            path: path.to_owned(),
        });
    }
    if meta.uid() != uid {
        return Err(SocketTrustError::SocketNotOwned {
            path: path.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    Ok(())
}

/// Checks, on a connected socket, that the process at the other end runs as `uid`
/// (`SO_PEERCRED`: for a client, the credentials of the process that bound and listened).
pub fn check_peer(socket: impl AsFd, uid: u32) -> Result<(), SocketTrustError> {
    let credentials =
        nix::sys::socket::getsockopt(&socket, nix::sys::socket::sockopt::PeerCredentials)
            .map_err(|errno| SocketTrustError::PeerUnknown(io::Error::from(errno)))?;
    let peer = credentials.uid();
    if !peer_uid_allowed(peer, uid) {
        return Err(SocketTrustError::PeerNotOwned { peer, uid });
    }
    Ok(())
}

/// [`check_socket_path`] for this process's real user id.
pub fn verify_socket_path(path: &Path) -> Result<(), SocketTrustError> {
    check_socket_path(path, nix::unistd::getuid().as_raw())
}

/// [`check_peer`] for this process's real user id.
pub fn verify_peer(socket: impl AsFd) -> Result<(), SocketTrustError> {
    check_peer(socket, nix::unistd::getuid().as_raw())
}

fn inspect_error(path: &Path, source: io::Error) -> SocketTrustError {
    if source.kind() == io::ErrorKind::NotFound {
        SocketTrustError::Missing {
            path: path.to_owned(),
        }
    } else {
        SocketTrustError::Inspect {
            path: path.to_owned(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(env: &[(&str, &str)], uid: u32, expected: &str) {
        let lookup = |name: &str| {
            env.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        };
        assert_eq!(
            resolve_socket_path(lookup, uid),
            PathBuf::from(expected),
            "env: {env:?}"
        );
    }

    #[test]
    fn resolution_order() {
        check(&[], 1000, "/tmp/hookd-1000/hookd.sock");
        check(
            &[("XDG_RUNTIME_DIR", "/run/user/1000")],
            1000,
            "/run/user/1000/hookd/hookd.sock",
        );
        check(
            &[
                ("HOOKD_SOCKET", "/srv/h.sock"),
                ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ],
            1000,
            "/srv/h.sock",
        );
        check(&[("HOOKD_SOCKET", "relative.sock")], 0, "relative.sock");
        check(
            &[("HOOKD_SOCKET", ""), ("XDG_RUNTIME_DIR", "/run/user/7")],
            7,
            "/run/user/7/hookd/hookd.sock",
        );
        check(&[("XDG_RUNTIME_DIR", "")], 7, "/tmp/hookd-7/hookd.sock");
        check(
            &[("XDG_RUNTIME_DIR", "run/user/7")],
            7,
            "/tmp/hookd-7/hookd.sock",
        );
    }

    #[test]
    fn only_the_same_user_is_a_trusted_peer() {
        // (peer uid, own uid, allowed)
        let cases = [
            (1000, 1000, true),
            (0, 0, true),
            (1001, 1000, false),
            (0, 1000, false),
            (1000, 0, false),
            (u32::MAX, 1000, false),
        ];
        for (peer, own, allowed) in cases {
            assert_eq!(
                peer_uid_allowed(peer, own),
                allowed,
                "peer {peer}, own {own}"
            );
        }
    }

    #[test]
    fn a_connected_peer_of_this_user_passes_and_another_uid_does_not() {
        let (left, _right) = std::os::unix::net::UnixStream::pair().unwrap();
        let uid = nix::unistd::getuid().as_raw();
        check_peer(&left, uid).unwrap();
        assert!(matches!(
            check_peer(&left, uid.wrapping_add(1)),
            Err(SocketTrustError::PeerNotOwned { .. })
        ));
    }

    #[test]
    fn unsafe_directories_and_sockets_are_named() {
        use std::os::unix::fs::PermissionsExt;
        let uid = nix::unistd::getuid().as_raw();
        let tmp = tempfile::tempdir().unwrap();
        let private = tmp.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        let readable = tmp.path().join("readable");
        std::fs::create_dir(&readable).unwrap();
        std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o755)).unwrap();
        let group_writable = tmp.path().join("group");
        std::fs::create_dir(&group_writable).unwrap();
        std::fs::set_permissions(&group_writable, std::fs::Permissions::from_mode(0o770)).unwrap();
        let sticky = tmp.path().join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();

        // (directory, uid it must belong to, expected error variant name or "ok")
        let cases: [(&Path, u32, &str); 8] = [
            (&private, uid, "ok"),
            (&readable, uid, "ok"),
            (&group_writable, uid, "DirectoryWritable"),
            (&sticky, uid, "DirectoryWritable"),
            (&link, uid, "DirectoryIsSymlink"),
            (&file, uid, "NotADirectory"),
            (&private, uid.wrapping_add(1), "DirectoryNotOwned"),
            (Path::new("/nonexistent-hookd-dir"), uid, "Missing"),
        ];
        for (dir, owner, expected) in cases {
            let got = match check_socket_directory(dir, owner) {
                Ok(()) => "ok".to_owned(),
                Err(error) => format!("{error:?}"),
            };
            assert!(got.starts_with(expected), "{}: {got}", dir.display());
        }

        // The socket itself.
        let socket = private.join("hookd.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        check_socket_path(&socket, uid).unwrap();
        let socket_link = private.join("link.sock");
        std::os::unix::fs::symlink(&socket, &socket_link).unwrap();
        let not_socket = private.join("plain");
        std::fs::write(&not_socket, "x").unwrap();
        let cases: [(&Path, u32, &str); 5] = [
            (&socket_link, uid, "SocketIsSymlink"),
            (&not_socket, uid, "NotASocket"),
            (&socket, uid.wrapping_add(1), "DirectoryNotOwned"),
            (&private.join("absent.sock"), uid, "Missing"),
            (&link.join("hookd.sock"), uid, "DirectoryIsSymlink"),
        ];
        for (path, owner, expected) in cases {
            let got = match check_socket_path(path, owner) {
                Ok(()) => "ok".to_owned(),
                Err(error) => format!("{error:?}"),
            };
            assert!(got.starts_with(expected), "{}: {got}", path.display());
        }
        let message = check_socket_directory(&group_writable, uid)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains(&group_writable.display().to_string())
                && message.contains("HOOKD_SOCKET"),
            "{message}"
        );
    }
}
