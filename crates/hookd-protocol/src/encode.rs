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

/// Parses a frame body sent by the daemon.
///
/// Clients need no classification of the daemon's mistakes, so this is plain `serde_json`.
pub fn parse_server_message(body: &[u8]) -> Result<ServerMessage, serde_json::Error> {
    serde_json::from_slice(body)
}
