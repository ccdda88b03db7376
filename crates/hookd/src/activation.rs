//! Socket activation: taking the listening sockets a service manager passed in.
//!
//! systemd (and its test tool `systemd-socket-activate`) opens the sockets itself, starts
//! hookd on the first connection, and passes them from file descriptor 3 on with
//! `LISTEN_FDS=<n>`, `LISTEN_PID=<hookd's pid>` and `LISTEN_FDNAMES=<name:name...>`. The
//! sockets then outlive every hookd process: connections made while the daemon is stopped or
//! restarting wait in their backlog.
//!
//! Two sockets are told apart by name: the one named `http` (`FileDescriptorName=http` in
//! `hookd-http.socket`) is the loopback HTTP listener; the first other one is the Unix socket
//! (its name is its unit's, `hookd.socket`, or whatever a test tool gives it).
//!
//! Two small crates do the fd work, because the workspace forbids `unsafe`:
//! `sd_notify::listen_fds_with_names` checks `LISTEN_PID` against our pid exactly as
//! `sd_listen_fds(3)` does and marks every passed descriptor close-on-exec (so no hook
//! inherits one), and `listenfd` checks that each descriptor really is a socket of the
//! expected kind and turns it into a listener.

use std::net::TcpListener;
use std::os::unix::net::UnixListener;

/// The `FileDescriptorName` of the HTTP listener's socket unit.
pub const HTTP_FD_NAME: &str = "http";

/// Why a socket passed by the service manager cannot be used. Fatal: a daemon that was
/// socket-activated must not quietly bind a socket of its own instead.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    /// The Unix descriptor is not a listening Unix stream socket.
    #[error("the socket passed by the service manager is not a Unix stream socket: {0}")]
    NotAUnixStreamSocket(std::io::Error),
    /// The descriptor named `http` is not a listening TCP socket.
    #[error("the socket named \"http\" passed by the service manager is not a TCP socket: {0}")]
    NotATcpSocket(std::io::Error),
    /// `LISTEN_FDS` counted a descriptor that `listenfd` did not find.
    #[error("the service manager announced a socket but none was passed")]
    Missing,
    /// The socket could not be switched to non-blocking mode for the async runtime.
    #[error("cannot make the passed socket non-blocking: {0}")]
    NonBlocking(std::io::Error),
}

/// The sockets a service manager passed, with what the daemon should say about them.
#[derive(Debug, Default)]
pub struct Activated {
    /// The listening Unix socket, non-blocking and close-on-exec, when one was passed.
    pub listener: Option<UnixListener>,
    /// The loopback HTTP listener (the descriptor named `http`), when one was passed.
    pub http: Option<TcpListener>,
    /// How many more descriptors were passed; hookd serves none of them.
    pub ignored: usize,
}

/// Which passed descriptor (by index from 3) is which: the Unix socket, the HTTP socket,
/// and how many are left over.
pub fn assign(names: &[String]) -> (Option<usize>, Option<usize>, usize) {
    let http = names.iter().position(|name| name == HTTP_FD_NAME);
    let unix = names.iter().position(|name| name != HTTP_FD_NAME);
    let used = usize::from(http.is_some()) + usize::from(unix.is_some());
    (unix, http, names.len() - used)
}

/// Takes the listening sockets passed by a service manager, if this process was started with
/// any (`LISTEN_PID` is our pid and `LISTEN_FDS` is at least 1); `None` means bind as usual.
///
/// Must be called before any thread is started: `listenfd` removes `LISTEN_PID` and
/// `LISTEN_FDS` from the process environment, which is only sound while a single thread runs.
pub fn take_listener() -> Result<Option<Activated>, ActivationError> {
    let names: Vec<String> = match sd_notify::listen_fds_with_names() {
        Ok(fds) => fds.map(|(_fd, name)| name).collect(),
        Err(err) => {
            // Malformed variables do not come from systemd; whoever set them did not pass a
            // socket we could trust, so hookd binds its own.
            tracing::warn!(%err, "ignoring malformed LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES");
            Vec::new()
        }
    };
    if names.is_empty() {
        return Ok(None);
    }
    let (unix, http, ignored) = assign(&names);
    let mut fds = listenfd::ListenFd::from_env();
    let listener = match unix {
        Some(index) => {
            let listener = fds
                .take_unix_listener(index)
                .map_err(ActivationError::NotAUnixStreamSocket)?
                .ok_or(ActivationError::Missing)?;
            // The service manager hands sockets over in blocking mode; tokio needs them
            // non-blocking.
            listener
                .set_nonblocking(true)
                .map_err(ActivationError::NonBlocking)?;
            Some(listener)
        }
        None => None,
    };
    let http = match http {
        Some(index) => {
            let listener = fds
                .take_tcp_listener(index)
                .map_err(ActivationError::NotATcpSocket)?
                .ok_or(ActivationError::Missing)?;
            listener
                .set_nonblocking(true)
                .map_err(ActivationError::NonBlocking)?;
            Some(listener)
        }
        None => None,
    };
    Ok(Some(Activated {
        listener,
        http,
        ignored,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_are_told_apart_by_name() {
        let names = |list: &[&str]| {
            list.iter()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>()
        };
        for (given, expected) in [
            (names(&["hookd.socket"]), (Some(0), None, 0)),
            (names(&["hookd.socket", "http"]), (Some(0), Some(1), 0)),
            (names(&["http", "hookd.socket"]), (Some(1), Some(0), 0)),
            (names(&["http"]), (None, Some(0), 0)),
            (names(&["unknown", "unknown"]), (Some(0), None, 1)),
            (names(&["a", "http", "b"]), (Some(0), Some(1), 1)),
        ] {
            assert_eq!(assign(&given), expected, "{given:?}");
        }
    }
}
