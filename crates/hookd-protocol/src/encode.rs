//! Turning messages into frame bodies, and frame bodies from the daemon into messages.

use bytes::Bytes;
use serde::Serialize;

use crate::request::ClientMessage;
use crate::response::ServerMessage;

/// A message that can be written as a frame body: [`ClientMessage`] or [`ServerMessage`].
pub trait WireMessage: Serialize + sealed::Sealed {}

impl WireMessage for ClientMessage {}
impl WireMessage for ServerMessage {}

mod sealed {
    /// Keeps [`super::WireMessage`] to this crate's two message enums, whose serialization
    /// cannot fail.
    pub trait Sealed {}
    impl Sealed for super::ClientMessage {}
    impl Sealed for super::ServerMessage {}
}

/// A body sent in place of a message whose serialization failed. It cannot happen for the
/// sealed message types (all map keys are strings and `serde_json` writes non-finite floats
/// as `null`), but a library must not panic, and the peer learns that something went wrong.
const ENCODE_FAILURE: &[u8] =
    br#"{"type":"error","id":null,"code":"internal","message":"a message could not be encoded"}"#;

/// Serializes a message as one compact JSON object: the body of one frame (without the
/// length prefix, which [`crate::FrameCodec`] adds).
pub fn encode<M: WireMessage>(message: &M) -> Bytes {
    match serde_json::to_vec(message) {
        Ok(body) => Bytes::from(body),
        Err(_) => Bytes::from_static(ENCODE_FAILURE),
    }
}

/// Serializes a message as [`encode`] does when its body is at most `max_bytes` long;
/// otherwise gives the body's length without having built it.
///
/// The length is counted first, so a body that fits is written into a buffer of exactly its
/// size, and one that does not never takes memory: for messages that may be very large.
pub fn encode_within<M: WireMessage>(message: &M, max_bytes: usize) -> Result<Bytes, usize> {
    let mut counter = Counter(0);
    if serde_json::to_writer(&mut counter, message).is_err() {
        return Ok(Bytes::from_static(ENCODE_FAILURE));
    }
    let len = counter.0;
    if len > max_bytes {
        return Err(len);
    }
    let mut body = Vec::with_capacity(len);
    match serde_json::to_writer(&mut body, message) {
        Ok(()) => Ok(Bytes::from(body)),
        Err(_) => Ok(Bytes::from_static(ENCODE_FAILURE)),
    }
}

/// A writer that only counts the bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Parses a frame body sent by the daemon.
///
/// Clients need no classification of the daemon's mistakes, so this is plain `serde_json`.
pub fn parse_server_message(body: &[u8]) -> Result<ServerMessage, serde_json::Error> {
    serde_json::from_slice(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::PingRequest;

    #[test]
    fn encode_within_gives_the_encoded_body_when_it_fits_and_its_length_when_not() {
        let messages = [
            ClientMessage::Ping(PingRequest { id: 1.into() }),
            ClientMessage::Ping(PingRequest {
                id: "a \"quoted\" id \u{1F600} \u{0}".into(),
            }),
        ];
        for message in &messages {
            let body = encode(message);
            assert_eq!(encode_within(message, usize::MAX), Ok(body.clone()));
            assert_eq!(encode_within(message, body.len()), Ok(body.clone()));
            assert_eq!(encode_within(message, body.len() - 1), Err(body.len()));
            assert_eq!(encode_within(message, 0), Err(body.len()));
        }
    }
}
