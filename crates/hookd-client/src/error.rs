//! What can go wrong talking to the daemon.

use std::path::PathBuf;
use std::time::Duration;

use hookd_protocol::{CodecError, ErrorCode};

/// A failed connection or request.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be connected to (no daemon, wrong path, permissions).
    #[error("cannot connect to the hookd socket {path}: {source}")]
    Connect {
        /// The socket path tried.
        path: PathBuf,
        /// Why the connection failed.
        #[source]
        source: std::io::Error,
    },
    /// The socket, its directory or the process listening on it is not this user's own (see
    /// [`Client::connect`](crate::Client::connect)); nothing was sent.
    #[error("refusing to talk to the hookd socket: {0}")]
    UntrustedSocket(#[source] hookd_protocol::SocketTrustError),
    /// The daemon did not answer `hello` in time.
    #[error("hookd did not answer the handshake within {timeout:?}")]
    HandshakeTimeout {
        /// The time allowed.
        timeout: Duration,
    },
    /// The daemon answered `hello` with something that is not a `hello`, or closed.
    #[error("the handshake with hookd failed: {reason}")]
    Handshake {
        /// What happened instead.
        reason: String,
    },
    /// The daemon's `hello` names a protocol version this client does not speak.
    #[error("hookd speaks protocol {server}; this client speaks protocol {client}")]
    UnsupportedVersion {
        /// The daemon's version.
        server: u32,
        /// This client's version.
        client: u32,
    },
    /// The daemon answered with an `error` frame.
    #[error("hookd answered {code}: {message}")]
    Server {
        /// The error's classification.
        code: ErrorCode,
        /// The daemon's description.
        message: String,
    },
    /// The connection closed or broke before the answer arrived.
    #[error("the connection to hookd was lost")]
    Disconnected,
    /// The request is larger than the daemon accepts; it was not sent.
    #[error("the request is {len} bytes, more than hookd's maximum frame of {max} bytes")]
    RequestTooLarge {
        /// The request's encoded length.
        len: usize,
        /// The daemon's maximum.
        max: usize,
    },
    /// The daemon answered with a message of the wrong type for the request.
    #[error("hookd answered a `{request}` request with a `{response}` message")]
    UnexpectedResponse {
        /// The request's type.
        request: &'static str,
        /// The answer's type.
        response: &'static str,
    },
    /// The stream was closed or failed, or the daemon ended it (cancelled, or stopping): no
    /// more chunks can be sent and no more results come.
    #[error("the stream has ended")]
    StreamEnded,
    /// Reading or writing frames failed during the handshake.
    #[error(transparent)]
    Frame(#[from] CodecError),
}

/// The client's result type.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;
