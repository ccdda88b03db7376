//! hookd's wire protocol, shared by the daemon and its clients.
//!
//! A connection is a Unix stream socket carrying frames in both directions. Each frame is a
//! 4-byte big-endian length followed by that many bytes of one UTF-8 JSON object
//! ([`FrameCodec`]). The objects are messages tagged by `"type"`: the client sends
//! [`ClientMessage`]s, the daemon answers with [`ServerMessage`]s. The first exchange is the
//! `hello` handshake; after it, requests carry a client-chosen [`RequestId`] that every
//! response echoes, so many requests may be in flight on one connection.
//!
//! The daemon reads client frames with [`parse_client_message`], which classifies every
//! failure into an [`ErrorCode`] for the `error` frame; both sides write with [`encode`].
//! `docs/protocol.md` describes the protocol for implementers in other languages.
//!
//! These are wire types, deliberately independent of the engine's domain types. Beside them
//! lives the one piece of file-system I/O the daemon and its clients share: where the socket
//! is and the checks before trusting it.

mod background;
mod codec;
mod depth;
mod encode;
mod error;
pub mod fast;
pub mod fleet;
pub mod http;
mod id;
mod parse;
mod request;
mod response;
mod socket;
mod state;
mod stats;

pub use background::{BackgroundStatus, BreakerStatus, PausedHook};
pub use codec::{CodecError, Frame, FrameCodec, LENGTH_PREFIX_BYTES};
pub use depth::{
    DEEP_STACK_BYTES, DeepJsonError, MAX_JSON_DEPTH, from_slice_deep, is_recursion_limit,
    json_depth,
};
pub use encode::{WireMessage, encode, encode_within, parse_server_message};
pub use error::{ErrorCode, ProtocolError};
pub use fleet::{ManagedStatus, TelemetryStatus};
pub use id::RequestId;
pub use parse::parse_client_message;
pub use request::{
    CancelRequest, ChunkRequest, ClientHello, ClientMessage, DisableAllRequest, DisableRequest,
    EnableAllRequest, EnableRequest, EventRequest, HookedEventsRequest, ListRequest, PingRequest,
    ReloadRequest, Scope, StatsRequest, StatusRequest, StreamCloseRequest, StreamOpenRequest,
    SubscribeRequest, TrustListRequest, TrustPreviewRequest, TrustRequest, UntrustRequest, WireEnv,
};
pub use response::{
    AuditStatus, CancelledMessage, ChunkResultMessage, ConnectedClient, Diagnostic, EditedMessage,
    ErrorMessage, EventResult, HookRecord, HookResultMessage, HookedEventsMessage, HttpStatus,
    LastRun, ListResponse, ListedHook, Outcome, OutputFormat, PongMessage, RegistryChangedMessage,
    RegistryStatus, ReloadedMessage, ResultMessage, ServerHello, ServerMessage, Severity,
    StatusResponse, StreamClosedMessage, StreamName, StreamOpenedMessage, SubscribedMessage,
    TrustListMessage, TrustPreviewMessage, TrustedHook, TrustedProject, TrustedScript,
};
pub use socket::{
    SOCKET_DIR_NAME, SOCKET_ENV_VAR, SOCKET_FILE_NAME, SocketTrustError, check_peer,
    check_socket_directory, check_socket_path, default_socket_path, peer_uid_allowed,
    resolve_socket_path, socket_directory, verify_peer, verify_socket_path,
};
pub use state::{StateOp, StateRequest, StateResponse};
pub use stats::{ClientStats, EventStats, HookStats, RelayStats, StatsResponse};

/// The protocol version this crate speaks, exchanged in the `hello` handshake.
pub const PROTOCOL_VERSION: u32 = 1;

/// The default largest frame, in bytes (64 MiB), in either direction.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// A suggested smaller limit for a connection's first frame (1 MiB), so that a peer that has
/// not yet identified itself cannot make the daemon buffer a large frame. A `hello` carrying
/// a full environment stays far below it.
pub const DEFAULT_MAX_HELLO_FRAME_BYTES: usize = 1024 * 1024;

/// How long a client gets to send its `hello`, and a client waits for the answer, by default.
pub const DEFAULT_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// The protocol document, whose examples must stay true to the types.
    const PROTOCOL_DOC: &str = include_str!("../../../docs/protocol.md");

    /// Parses one JSON example of the document as a client or a daemon message and checks
    /// that the message says exactly what the example says: a misspelt or missing field in
    /// the document would be dropped or defaulted by parsing, and show up here.
    fn check_example(example: &str) {
        let written: Value = serde_json::from_str(example)
            .unwrap_or_else(|error| panic!("example is not JSON ({error}):\n{example}"));
        let as_client = parse_client_message(example.as_bytes())
            .ok()
            .map(|message| serde_json::to_value(message).unwrap());
        let as_server = parse_server_message(example.as_bytes())
            .ok()
            .map(|message| serde_json::to_value(message).unwrap());
        assert!(
            as_client.as_ref() == Some(&written) || as_server.as_ref() == Some(&written),
            "example does not round-trip:\n{example}\nas client: {as_client:?}\nas server: \
             {as_server:?}"
        );
    }

    #[test]
    fn every_json_example_in_the_protocol_doc_is_a_valid_message() {
        let examples: Vec<&str> = PROTOCOL_DOC
            .split("```json\n")
            .skip(1)
            .filter_map(|rest| rest.split("```").next())
            .collect();
        assert!(
            examples.len() >= 10,
            "found only {} examples",
            examples.len()
        );
        for example in examples {
            check_example(example);
        }
    }

    #[test]
    fn the_framing_example_in_the_protocol_doc_is_right() {
        let body = encode(&ClientMessage::Ping(PingRequest { id: 1.into() }));
        let mut frame = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        let hex: Vec<String> = frame.iter().map(|byte| format!("{byte:02x}")).collect();
        let doc_hex: Vec<&str> = PROTOCOL_DOC
            .split("id\":1}` is 22 bytes")
            .nth(1)
            .and_then(|rest| rest.split("```\n").nth(1))
            .unwrap()
            .lines()
            .flat_map(|line| line.split("   ").next().unwrap().split_whitespace())
            .collect();
        assert_eq!(hex, doc_hex);
    }
}
