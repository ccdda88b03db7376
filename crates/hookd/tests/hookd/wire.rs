//! The daemon's frames as the tests write and read them on a plain Unix socket.

use std::io::Read;
use std::os::unix::net::UnixStream;

use serde_json::Value;

/// `message` as one frame of the daemon's protocol (4-byte big-endian length, then JSON).
pub(crate) fn frame(message: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("json");
    let len = u32::try_from(body.len()).expect("small frame");
    let mut frame = len.to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// Reads one frame of the daemon's protocol from `stream` and parses it.
pub(crate) fn receive(stream: &mut UnixStream) -> Value {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).expect("read");
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).expect("read");
    serde_json::from_slice(&body).expect("json")
}
