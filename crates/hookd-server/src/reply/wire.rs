//! Writing to a client: the write side of a connection ([`Sink`]) shared by the
//! connection's task and its runs, whole messages and frames sent on it, and results fitted
//! into one frame.
//!
//! A failed write means the client is gone; the connection's read side notices and ends the
//! connection, so write errors here are only logged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hookd_protocol::{ErrorCode, HookRecord, ProtocolError, RequestId, ServerMessage};
use tokio_util::sync::CancellationToken;

use crate::io::FrameWriter;

/// The write side of a connection, shared by the connection task and its runs.
pub(crate) type Sink = Arc<FrameWriter>;

/// Cancellation tokens of a connection's in-flight requests (event runs, subscriptions,
/// streams), by request id.
pub(crate) type Inflight = Arc<Mutex<HashMap<RequestId, CancellationToken>>>;

/// The environment hooks run with, as `(name, value)` pairs.
pub(crate) type Env = Arc<Vec<(String, String)>>;

/// Encodes and writes one message (with whatever the read loop queued before it). A failed
/// write means the client is gone; the read side notices and ends the connection, so the
/// error is only logged.
pub(crate) async fn send(sink: &Sink, message: &ServerMessage) {
    let frame = hookd_protocol::encode(message);
    if let Err(err) = sink.send(frame).await {
        tracing::debug!(%err, "cannot write to client");
    }
}

/// Encodes a `result` or `chunk_result` into one frame of at most `max_frame_bytes`.
///
/// A result repeats each hook's captured text (its `stdout`, its output, the merged output),
/// and JSON escaping can multiply it, so a few hooks at their output caps can exceed the
/// frame limit the client reads with. The captured `stdout`/`stderr` of the records are cut
/// shorter and shorter, each cut said in the text; if even that does not fit, the request is
/// answered with an `internal` error saying how large the result was. Each try is measured
/// before it is written, so no frame over the limit is ever built.
pub(crate) fn encode_fitted(mut message: ServerMessage, max_frame_bytes: usize) -> Bytes {
    let size = match hookd_protocol::encode_within(&message, max_frame_bytes) {
        Ok(frame) => return frame,
        Err(size) => size,
    };
    for keep in [64 * 1024, 4 * 1024, 0] {
        let Some(hooks) = records_mut(&mut message) else {
            // Only results come here; anything else is sent as it is.
            return hookd_protocol::encode(&message);
        };
        for hook in hooks {
            truncate_text(&mut hook.stdout, keep);
            truncate_text(&mut hook.stderr, keep);
        }
        if let Ok(frame) = hookd_protocol::encode_within(&message, max_frame_bytes) {
            return frame;
        }
    }
    let error = ProtocolError::new(
        ErrorCode::Internal,
        format!(
            "the result of this event is {size} bytes, over the {max_frame_bytes}-byte frame \
             limit, even with the hooks' captured output cut; its hooks' outputs are too large"
        ),
    )
    .with_id(message.id().cloned())
    .to_server_message();
    hookd_protocol::encode(&error)
}

/// Writes an already encoded frame; see [`send`].
pub(crate) async fn send_frame(sink: &Sink, frame: Bytes) {
    if let Err(err) = sink.send(frame).await {
        tracing::debug!(%err, "cannot write to client");
    }
}

/// The hook records of a `result` or `chunk_result`.
fn records_mut(message: &mut ServerMessage) -> Option<&mut Vec<HookRecord>> {
    match message {
        ServerMessage::Result(result) => Some(&mut result.result.hooks),
        ServerMessage::ChunkResult(result) => Some(&mut result.result.hooks),
        _ => None,
    }
}

/// Cuts `text` to at most `keep` bytes (on a character boundary) and says so.
fn truncate_text(text: &mut String, keep: usize) {
    if text.len() <= keep {
        return;
    }
    let mut cut = keep;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let dropped = text.len() - cut;
    text.truncate(cut);
    text.push_str(&format!(
        "\n[hookd: {dropped} more bytes cut so the result fits in one frame]"
    ));
}

/// Milliseconds since the Unix epoch, for the payload's `timestamp`.
pub(crate) fn unix_millis_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}
