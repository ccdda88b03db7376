//! The lean client: a blocking std Unix stream speaking the protocol directly.
//!
//! It does the `hello` handshake once, then sends pre-encoded event frames (all with the
//! same id, one at a time) and reads the `result` frame back, doing no JSON work in the
//! timed path. What it measures is therefore the daemon plus the kernel, which is what the
//! raw ping-pong floor is compared with.

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::Path;

use anyhow::Context;
use hookd_client::blocking::FrameReader;
use hookd_protocol::{ClientHello, ClientMessage, ServerMessage, encode, parse_server_message};

use crate::frame::frame;

/// The name the lean client gives in its `hello`.
const CLIENT_NAME: &str = concat!("hookd-bench-lean/", env!("CARGO_PKG_VERSION"));

/// A connection to the daemon after the handshake.
#[derive(Debug)]
pub struct LeanConnection {
    stream: UnixStream,
    reader: FrameReader,
}

impl LeanConnection {
    /// Connects and does the handshake. No environment is sent, so hooks run with the
    /// daemon's own.
    pub fn connect(socket: &Path) -> anyhow::Result<LeanConnection> {
        let stream = UnixStream::connect(socket)
            .with_context(|| format!("cannot connect to {}", socket.display()))?;
        let mut connection = LeanConnection {
            stream,
            reader: crate::frame::reader(),
        };
        let hello = ClientMessage::Hello(ClientHello::new(CLIENT_NAME, None));
        let answer = connection.round_trip(&frame(&encode(&hello))?)?;
        match parse_server_message(answer) {
            Ok(ServerMessage::Hello(_)) => Ok(connection),
            Ok(other) => anyhow::bail!("the daemon answered the hello with {other:?}"),
            Err(error) => anyhow::bail!("the daemon's hello is not readable: {error}"),
        }
    }

    /// Sends one framed request and returns the body of the answer.
    ///
    /// Only for requests answered by exactly one frame (events without streaming, pings).
    pub fn round_trip(&mut self, framed_request: &[u8]) -> anyhow::Result<&[u8]> {
        self.stream
            .write_all(framed_request)
            .context("cannot write to the daemon")?;
        self.reader
            .read_frame(&mut self.stream)
            .context("cannot read from the daemon")
    }
}
