//! The floor: a raw Unix-socket ping-pong between two processes.
//!
//! The server side is this binary re-executed as `hookd-bench echo-server` (see
//! [`serve`]); it answers every frame with a fixed frame, using plain blocking std sockets
//! and no parsing, so a round trip costs only what the kernel charges: two writes, two
//! reads and two wake-ups. The client side is [`PingPong`]. Frames have the sizes of a
//! no-hook event request and its response, so the comparison with the daemon is like for
//! like.
//!
//! [`serve_tokio`] is the same server written the way the daemon is: a tokio runtime, the
//! protocol's [`FrameCodec`] on each half of the split stream, the write half behind an
//! async mutex. It answers without parsing, so it is the floor of any tokio daemon built
//! like hookd; what the daemon costs beyond it is hookd's own work.

use std::io::{self, BufRead, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hookd_client::blocking::FrameReader;
use hookd_protocol::FrameCodec;
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::daemon::RuntimeFlavor;
use crate::frame::frame;

/// A JSON object of exactly `len` bytes (at least 8), so the reply looks like a message.
pub fn filler_body(len: usize) -> Vec<u8> {
    let mut body = b"{\"p\":\"".to_vec();
    body.resize(len.saturating_sub(2).max(body.len()), b'x');
    body.extend_from_slice(b"\"}");
    body
}

/// Runs the echo server on `socket` until stdin closes (the parent's signal to stop).
///
/// Prints `ready` on stdout once the socket listens, so the parent waits without polling.
/// Each connection gets its own thread and is answered frame by frame with a reply body of
/// `reply_bytes` bytes.
pub fn serve(socket: &Path, reply_bytes: usize) -> anyhow::Result<()> {
    let listener = UnixListener::bind(socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    let reply = frame(&filler_body(reply_bytes))?;
    announce_ready()?;
    std::thread::spawn(exit_when_stdin_closes);
    for stream in listener.incoming() {
        let stream = stream.context("accept failed")?;
        let reply = reply.clone();
        std::thread::spawn(move || {
            // A client that goes away ends its connection; that is not an error here.
            let _ = answer_frames(stream, &reply);
        });
    }
    Ok(())
}

/// Runs the tokio echo server on `socket` until stdin closes; prints `ready` like [`serve`].
pub fn serve_tokio(socket: &Path, reply_bytes: usize, flavor: RuntimeFlavor) -> anyhow::Result<()> {
    let runtime = flavor
        .builder()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let reply = Bytes::from(filler_body(reply_bytes));
    runtime.block_on(async move {
        let listener = tokio::net::UnixListener::bind(socket)
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        announce_ready()?;
        std::thread::spawn(exit_when_stdin_closes);
        loop {
            let (stream, _) = listener.accept().await.context("accept failed")?;
            tokio::spawn(answer_frames_async(stream, reply.clone()));
        }
    })
}

/// The tokio server's connection task: the daemon's framing, no parsing.
async fn answer_frames_async(stream: tokio::net::UnixStream, reply: Bytes) {
    let (read, write) = stream.into_split();
    let mut reader = FramedRead::new(read, FrameCodec::new());
    let writer = Arc::new(tokio::sync::Mutex::new(FramedWrite::new(
        write,
        FrameCodec::new(),
    )));
    while let Some(Ok(_frame)) = reader.next().await {
        if writer.lock().await.send(reply.clone()).await.is_err() {
            return;
        }
    }
}

/// Answers every frame on `stream` with `reply` until the peer closes.
fn answer_frames(mut stream: UnixStream, reply: &[u8]) -> io::Result<()> {
    let mut reader = crate::frame::reader();
    loop {
        reader.read_frame(&mut stream)?;
        stream.write_all(reply)?;
    }
}

/// Tells the parent that the socket is listening.
pub fn announce_ready() -> anyhow::Result<()> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "ready").context("cannot write to stdout")?;
    stdout.flush().context("cannot write to stdout")
}

/// Blocks until stdin reaches end-of-file, then ends the process.
///
/// The parent holds the write end of our stdin, so this fires when the parent stops us and
/// also when it dies without cleaning up: a helper never outlives the benchmark. The accept
/// loop is blocked in the kernel and has nothing to clean up, so exiting is the simplest
/// way to stop it.
fn exit_when_stdin_closes() {
    wait_for_stdin_eof();
    std::process::exit(0);
}

/// Reads and discards stdin until end-of-file (or an error, which means the same here).
pub fn wait_for_stdin_eof() {
    let mut stdin = io::stdin().lock();
    loop {
        match stdin.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(bytes) => {
                let len = bytes.len();
                stdin.consume(len);
            }
        }
    }
}

/// The client side of the ping-pong.
#[derive(Debug)]
pub struct PingPong {
    stream: UnixStream,
    reader: FrameReader,
    request: Vec<u8>,
    reply_bytes: usize,
}

impl PingPong {
    /// Connects to the echo server; every round trip sends `request_body` framed.
    pub fn connect(socket: &Path, request_body: &[u8], reply_bytes: usize) -> anyhow::Result<Self> {
        let stream = UnixStream::connect(socket)
            .with_context(|| format!("cannot connect to {}", socket.display()))?;
        Ok(PingPong {
            stream,
            reader: crate::frame::reader(),
            request: frame(request_body)?,
            reply_bytes,
        })
    }

    /// Sends the request and waits for the reply.
    pub fn round_trip(&mut self) -> anyhow::Result<()> {
        self.stream
            .write_all(&self.request)
            .context("echo server write")?;
        let reply = self
            .reader
            .read_frame(&mut self.stream)
            .context("echo server read")?;
        anyhow::ensure!(
            reply.len() == self.reply_bytes,
            "the echo server answered {} bytes instead of {}",
            reply.len(),
            self.reply_bytes
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_bodies_are_json_of_the_asked_length() {
        for len in [8, 9, 100, 131, 4096] {
            let body = filler_body(len);
            assert_eq!(body.len(), len);
            serde_json::from_slice::<serde_json::Value>(&body).unwrap();
        }
    }
}
