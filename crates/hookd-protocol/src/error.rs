//! Error codes carried by `error` frames, and the typed error for a frame that is not a valid
//! request.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::id::RequestId;
use crate::response::{ErrorMessage, ServerMessage};

/// Why a request failed. Sent as a snake_case string in the `code` field of `error` frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The frame is not valid UTF-8 JSON.
    BadJson,
    /// The frame is valid JSON but not a valid message (wrong shape or field type).
    BadRequest,
    /// A required field is absent.
    MissingField,
    /// The `type` field names no known message.
    UnknownType,
    /// The `event` field names no known hook event.
    UnknownEvent,
    /// The frame's declared length exceeds the maximum; its body was skipped.
    FrameTooLarge,
    /// The client's `hello` asks for a protocol version the daemon does not speak.
    UnsupportedVersion,
    /// The first frame of a connection was a valid message other than `hello`.
    HandshakeRequired,
    /// A `cancel` names no in-flight request of this connection, or a `chunk` or
    /// `stream_close` no open stream.
    UnknownId,
    /// A request reuses the id of a request of this connection that is still in flight.
    DuplicateId,
    /// The daemon is stopping and accepts no new work.
    ShuttingDown,
    /// The daemon failed in a way that is not the client's fault.
    Internal,
    /// A settings file could not be edited: it is not a JSON object, or it cannot be read or
    /// written. The file is left as it was.
    EditFailed,
    /// The event exists but the request cannot be made with it (only `AfterModel` can be
    /// streamed).
    UnsupportedEvent,
    /// A per-connection limit refuses the request (the number of open streams).
    LimitReached,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 15] = [
        ErrorCode::BadJson,
        ErrorCode::BadRequest,
        ErrorCode::MissingField,
        ErrorCode::UnknownType,
        ErrorCode::UnknownEvent,
        ErrorCode::FrameTooLarge,
        ErrorCode::UnsupportedVersion,
        ErrorCode::HandshakeRequired,
        ErrorCode::UnknownId,
        ErrorCode::DuplicateId,
        ErrorCode::ShuttingDown,
        ErrorCode::Internal,
        ErrorCode::EditFailed,
        ErrorCode::UnsupportedEvent,
        ErrorCode::LimitReached,
    ];

    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadJson => "bad_json",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::UnknownType => "unknown_type",
            ErrorCode::UnknownEvent => "unknown_event",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::UnsupportedVersion => "unsupported_version",
            ErrorCode::HandshakeRequired => "handshake_required",
            ErrorCode::UnknownId => "unknown_id",
            ErrorCode::DuplicateId => "duplicate_id",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::Internal => "internal",
            ErrorCode::EditFailed => "edit_failed",
            ErrorCode::UnsupportedEvent => "unsupported_event",
            ErrorCode::LimitReached => "limit_reached",
        }
    }

    /// Whether the daemon closes the connection after sending an error with this code.
    ///
    /// Only handshake failures close it: every other error is about one frame or one
    /// request, and the connection goes on. (`shutting_down` does not close by itself; the
    /// daemon closes connections as part of stopping.) This is about connections past the
    /// handshake: until a valid `hello` has been answered, any error closes the connection,
    /// since the peer has not shown that it speaks the protocol.
    pub fn closes_connection(self) -> bool {
        matches!(
            self,
            ErrorCode::UnsupportedVersion | ErrorCode::HandshakeRequired
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A frame that could not become a request, classified for its `error` frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ProtocolError {
    /// The classification.
    pub code: ErrorCode,
    /// What exactly is wrong, naming the field or value.
    pub message: String,
    /// The request's id, when the frame had a readable one.
    pub id: Option<RequestId>,
}

impl ProtocolError {
    /// An error without an id.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ProtocolError {
            code,
            message: message.into(),
            id: None,
        }
    }

    /// The same error, about the request with this id.
    pub fn with_id(mut self, id: Option<RequestId>) -> Self {
        self.id = id;
        self
    }

    /// The error for a frame whose declared length exceeds the maximum.
    pub fn frame_too_large(declared_len: u64, max_frame_bytes: usize) -> Self {
        ProtocolError::new(
            ErrorCode::FrameTooLarge,
            format!(
                "a frame declared {declared_len} bytes, more than the maximum of \
                 {max_frame_bytes}; its body was skipped"
            ),
        )
    }

    /// The error frame to send for this error.
    pub fn to_error_message(&self) -> ErrorMessage {
        ErrorMessage {
            id: self.id.clone(),
            code: self.code,
            message: self.message.clone(),
        }
    }

    /// The error frame to send for this error, as a [`ServerMessage`].
    pub fn to_server_message(&self) -> ServerMessage {
        ServerMessage::Error(self.to_error_message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_their_wire_names() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::from(code.as_str()));
            let back: ErrorCode = serde_json::from_value(json).unwrap();
            assert_eq!(back, code);
        }
    }

    #[test]
    fn only_handshake_failures_close_the_connection() {
        let closing: Vec<&str> = ErrorCode::ALL
            .into_iter()
            .filter(|code| code.closes_connection())
            .map(ErrorCode::as_str)
            .collect();
        assert_eq!(closing, ["unsupported_version", "handshake_required"]);
    }
}
