//! Socket activation: taking the listening socket a service manager passed in.
//!
//! systemd (and its test tool `systemd-socket-activate`) opens the socket itself, starts hookd
//! on the first connection, and passes the socket as file descriptor 3 with
//! `LISTEN_FDS=1` and `LISTEN_PID=<hookd's pid>`. The socket then outlives every hookd
//! process: connections made while the daemon is stopped or restarting wait in its backlog.
//!
//! Two small crates do the fd work, because the workspace forbids `unsafe`:
//! `sd_notify::listen_fds` checks `LISTEN_PID` against our pid exactly as `sd_listen_fds(3)`
//! does and marks every passed descriptor close-on-exec (so no hook inherits one), and
//! `listenfd` checks that descriptor 3 really is a Unix stream socket and turns it into a
//! listener.

use std::os::unix::net::UnixListener;

/// Why the socket passed by the service manager cannot be used. Fatal: a daemon that was
/// socket-activated must not quietly bind a socket of its own instead.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    /// Descriptor 3 is not a listening Unix stream socket.
    #[error("the socket passed by the service manager is not a Unix stream socket: {0}")]
    NotAUnixStreamSocket(std::io::Error),
    /// `LISTEN_FDS` counted a descriptor that `listenfd` did not find.
    #[error("the service manager announced a socket but none was passed")]
    Missing,
    /// The socket could not be switched to non-blocking mode for the async runtime.
    #[error("cannot make the passed socket non-blocking: {0}")]
    NonBlocking(std::io::Error),
}

/// The socket a service manager passed, with what the daemon should say about it.
#[derive(Debug)]
pub struct Activated {
    /// The listening socket (descriptor 3), non-blocking and close-on-exec.
    pub listener: UnixListener,
    /// How many more descriptors were passed; hookd serves only the first.
    pub ignored: usize,
}

/// Takes the listening socket passed by a service manager, if this process was started with
/// one (`LISTEN_PID` is our pid and `LISTEN_FDS` is at least 1); `None` means bind as usual.
///
/// Must be called before any thread is started: `listenfd` removes `LISTEN_PID` and
/// `LISTEN_FDS` from the process environment, which is only sound while a single thread runs.
pub fn take_listener() -> Result<Option<Activated>, ActivationError> {
    let count = match sd_notify::listen_fds() {
        Ok(fds) => fds.len(),
        Err(err) => {
            // Malformed variables do not come from systemd; whoever set them did not pass a
            // socket we could trust, so hookd binds its own.
            tracing::warn!(%err, "ignoring malformed LISTEN_PID/LISTEN_FDS");
            0
        }
    };
    if count == 0 {
        return Ok(None);
    }
    let listener = listenfd::ListenFd::from_env()
        .take_unix_listener(0)
        .map_err(ActivationError::NotAUnixStreamSocket)?
        .ok_or(ActivationError::Missing)?;
    // The service manager hands the socket over in blocking mode; tokio needs it non-blocking.
    listener
        .set_nonblocking(true)
        .map_err(ActivationError::NonBlocking)?;
    Ok(Some(Activated {
        listener,
        ignored: count - 1,
    }))
}
