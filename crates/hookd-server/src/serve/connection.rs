//! One client connection: the handshake, then requests until the client goes away.
//!
//! The connection's task reads frames and answers everything that needs no hook process
//! (pings, status, listings, events that match no hook, chunks of streams without hooks,
//! errors) itself, so the common case costs one read, one parse and one write. Events with a
//! plan run in their own tasks, streams with hooks in theirs ([`crate::stream`]); all writers
//! share the connection's [`FrameWriter`], which sends whole frames one at a time, so frames
//! never interleave. The socket I/O itself is in [`crate::io`].
//!
//! The two requests an agent sends most, an `event` no hook matches and a `chunk` of a stream
//! without hooks, take an allocation-free path: the frame is scanned in place
//! (`hookd_protocol::fast`), the registry found in the cache without allocating, and the
//! answer written into the writer's reused buffer, queued there while the client's next
//! request is already buffered and flushed before the loop waits for more.
//!
//! A client that disconnects cancels its runs (their process groups are killed), except a
//! `SessionEnd` run, which its host's relay is killed in the middle of by design: that one
//! finishes (async hooks and detached events run apart from any connection:
//! `crate::background`). A daemon that is stopping stops reading, lets the runs finish, then
//! closes.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures_util::FutureExt;
use hookd_core::matcher::MatchContext;
use hookd_core::{HookEventName, MatcherKind};
use hookd_protocol::fast::{ScannedEvent, ScannedRequest};
use hookd_protocol::{
    ClientMessage, ErrorCode, Frame, ProtocolError, RequestId, ServerHello, ServerMessage,
};
use tokio::net::UnixStream;
use tokio_util::task::TaskTracker;

use crate::io::FrameReader;
use crate::limits::InflightLimit;
use crate::limits::OUTPUT_BUDGET_KIB;
use crate::request::Connection;
use crate::request::context::{duplicate_id, wire_env};
use crate::shared::Shared;
use crate::stats::Stats;
use crate::stream::{ChunkRoute, Streams};
use crate::wire::{Env, Sink, send};

/// Serves one accepted connection to the end.
pub(crate) async fn serve(stream: UnixStream, shared: Arc<Shared>) {
    Stats::add(&shared.stats.connections, 1);
    let (mut reader, writer) = crate::io::split(
        stream,
        shared.config.max_hello_frame_bytes,
        Arc::clone(&shared.frame_budget),
    );
    let sink: Sink = Arc::new(writer);

    if let Some((env, client_name)) = handshake(&mut reader, &sink, &shared).await {
        reader.set_max_frame_bytes(shared.config.max_frame_bytes);
        let client = shared.engine.recorder.run_stats.connect(&client_name);
        tracing::debug!(client = %client_name, "client connected");
        let connection = Connection {
            client,
            cancel: shared.hard_stop.child_token(),
            shared: Arc::clone(&shared),
            sink,
            env,
            inflight: Arc::new(Mutex::new(HashMap::new())),
            subscriptions: Mutex::new(HashSet::new()),
            runs: TaskTracker::new(),
            output_budget: Arc::new(tokio::sync::Semaphore::new(OUTPUT_BUDGET_KIB as usize)),
            limit: InflightLimit::new(shared.config.max_inflight_per_connection),
            streams: Streams::default(),
            filter_body: Mutex::new(Vec::new()),
            match_scratch: Mutex::new(MatchContext {
                tool_name: Some(String::new()),
                trigger: Some(String::new()),
            }),
        };
        connection.read_requests(&mut reader).await;
    }
    Stats::sub(&shared.stats.connections, 1);
}

/// Waits for the client's `hello`; answers it and returns the connection's hook environment
/// and the client's name, or answers with an error and returns `None` (the connection then closes).
///
/// A first frame that is not a request at all keeps its own code (`bad_json`, `unknown_type`,
/// ...); a valid request other than `hello` gets `handshake_required`. Either way the
/// connection closes, as `docs/protocol.md` says.
/// The error for a frame refused because partial frames of all connections already hold the
/// daemon-wide budget (`max_pending_frame_bytes`).
fn frame_budget_spent(declared: u64, shared: &Shared) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::LimitReached,
        format!(
            "a frame declared {declared} bytes, but {} of the daemon's {} bytes for frames still \
             arriving are in use; its body was skipped, send it again later",
            shared.frame_budget.used(),
            shared.frame_budget.limit()
        ),
    )
}

async fn handshake(
    reader: &mut FrameReader,
    sink: &Sink,
    shared: &Shared,
) -> Option<(Env, String)> {
    let frame = tokio::select! {
        // Accepted before the stop: a client that has sent its hello already (a relay sends
        // it with its event, in one write) is served; one that has not is closed.
        _ = shared.shutdown.cancelled() => {
            reader.take_received(shared.config.max_hello_frame_bytes.saturating_add(4));
            match reader.next_received() {
                Some(frame) => Ok(Some(frame)),
                None => return None,
            }
        }
        frame = tokio::time::timeout(shared.config.handshake_timeout, reader.next()) => frame,
    };
    let error = match frame {
        Err(_elapsed) => {
            tracing::debug!("client sent no hello in time");
            return None;
        }
        Ok(None) => return None,
        Ok(Some(Err(err))) => {
            tracing::debug!(%err, "connection failed before hello");
            return None;
        }
        Ok(Some(Ok(Frame::TooLarge { declared_len }))) => match reader.take_refused() {
            Some(declared) => frame_budget_spent(declared, shared),
            None => {
                ProtocolError::frame_too_large(declared_len, shared.config.max_hello_frame_bytes)
            }
        },
        Ok(Some(Ok(Frame::Data(body)))) => match hookd_protocol::parse_client_message(&body) {
            Ok(ClientMessage::Hello(hello)) => match hello.check_version() {
                Ok(()) => {
                    let reply = ServerMessage::Hello(ServerHello {
                        protocol: hookd_protocol::PROTOCOL_VERSION,
                        server: format!("hookd/{}", env!("CARGO_PKG_VERSION")),
                        pid: std::process::id(),
                        max_frame_bytes: shared.config.max_frame_bytes as u64,
                    });
                    send(sink, &reply).await;
                    let env = match hello.env {
                        Some(env) => wire_env(env, shared),
                        None => Arc::clone(&shared.daemon_env),
                    };
                    return Some((env, hello.client));
                }
                Err(err) => err,
            },
            Ok(other) => ProtocolError::new(
                ErrorCode::HandshakeRequired,
                format!(
                    "the first message must be a hello, not a {} request",
                    other.type_name()
                ),
            )
            .with_id(other.id().cloned()),
            Err(err) => err,
        },
    };
    send(sink, &error.to_server_message()).await;
    None
}

impl Connection {
    /// Reads and answers requests until the client disconnects or the daemon stops.
    async fn read_requests(&self, reader: &mut FrameReader) {
        // One wait for the stop, registered once rather than once per request.
        let mut stopping = std::pin::pin!(self.shared.shutdown.cancelled());
        let disconnected = loop {
            // Answers queued by the allocation-free path go out before the loop waits: for
            // the client's next request, or for an in-flight slot.
            let must_wait = !reader.frame_buffered() || self.limit.ready().now_or_never().is_none();
            if must_wait && let Err(err) = self.sink.flush().await {
                tracing::debug!(%err, "cannot write to client");
            }
            let frame = tokio::select! {
                biased;
                () = &mut stopping => break false,
                frame = async {
                    self.limit.ready().await;
                    reader.next().await
                } => frame,
            };
            match frame {
                None => break true,
                Some(Err(err)) => {
                    tracing::debug!(%err, "connection closed");
                    break true;
                }
                Some(Ok(Frame::TooLarge { declared_len })) => {
                    let error = match reader.take_refused() {
                        Some(declared) => frame_budget_spent(declared, &self.shared),
                        None => ProtocolError::frame_too_large(
                            declared_len,
                            self.shared.config.max_frame_bytes,
                        ),
                    };
                    send(&self.sink, &error.to_server_message()).await;
                }
                Some(Ok(Frame::Data(body))) => {
                    if !self.handle_frame(body).await {
                        break true;
                    }
                }
            }
        };
        if disconnected {
            // The client is gone: nobody will read the results, so stop the hooks.
            self.cancel.cancel();
            // Dropping the streams' queues lets their tasks end.
            drop(self.streams.drain());
            self.runs.close();
            self.runs.wait().await;
            return;
        }
        // The daemon is stopping. What the client sent before the stop (the frames the
        // socket has received) is answered as usual; in-flight runs finish and send their
        // results; anything the client sends from now on is refused with `shutting_down`.
        // Open streams answer the chunks they have and end with `stream_closed`.
        if !self.serve_received(reader).await {
            self.cancel.cancel();
            drop(self.streams.drain());
            self.runs.close();
            self.runs.wait().await;
            return;
        }
        if let Err(err) = self.sink.flush().await {
            tracing::debug!(%err, "cannot write to client");
        }
        for (id, removed) in self.streams.drain() {
            // A stream with a task answers what it has and closes itself.
            if let Ok((chunks, flush)) = removed.into_answered() {
                self.close_stream(id, chunks, flush).await;
            }
        }
        self.runs.close();
        loop {
            tokio::select! {
                () = self.runs.wait() => break,
                frame = reader.next() => match frame {
                    Some(Ok(Frame::Data(body))) => {
                        let id = hookd_protocol::parse_client_message(&body)
                            .ok()
                            .and_then(|message| message.id().cloned());
                        let error = ProtocolError::new(
                            ErrorCode::ShuttingDown,
                            "hookd is stopping and accepts no new requests",
                        )
                        .with_id(id);
                        send(&self.sink, &error.to_server_message()).await;
                    }
                    Some(Ok(Frame::TooLarge { .. })) => {}
                    None | Some(Err(_)) => {
                        self.cancel.cancel();
                        self.runs.wait().await;
                        break;
                    }
                },
            }
        }
    }

    /// Answers, as usual, the frames the client sent before the daemon began to stop: those
    /// already buffered and those the socket has received (at most a frame limit's worth
    /// more). Returns `false` when the connection must close.
    async fn serve_received(&self, reader: &mut FrameReader) -> bool {
        reader.take_received(self.shared.config.max_frame_bytes.saturating_add(4));
        while let Some(frame) = reader.next_received() {
            match frame {
                Err(err) => {
                    tracing::debug!(%err, "connection closed");
                    return false;
                }
                Ok(Frame::TooLarge { declared_len }) => {
                    let error = ProtocolError::frame_too_large(
                        declared_len,
                        self.shared.config.max_frame_bytes,
                    );
                    send(&self.sink, &error.to_server_message()).await;
                }
                Ok(Frame::Data(body)) => {
                    // The in-flight cap still holds: runs are finishing, so slots come free.
                    self.limit.ready().await;
                    if !self.handle_frame(body).await {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Answers one frame. Returns `false` when the connection must close.
    async fn handle_frame(&self, body: Bytes) -> bool {
        if body.len() <= INLINE_PARSE_LIMIT && self.answer_unhooked(&body).await {
            return true;
        }
        let message = match parse_off_thread_if_large(body).await {
            Ok(message) => message,
            Err(err) => {
                send(&self.sink, &err.to_server_message()).await;
                return !err.code.closes_connection();
            }
        };
        if let Some(id) = duplicate_candidate(&message)
            && self.is_inflight(id.as_id_ref())
        {
            send(&self.sink, &duplicate_id(id.clone()).to_server_message()).await;
            return true;
        }
        crate::request::answer(self, message).await;
        true
    }

    /// Answers an `event` or `chunk` frame for which no hook runs on the allocation-free
    /// path; returns `false` (having done nothing) when the frame needs the full parser or
    /// hooks will run.
    async fn answer_unhooked(&self, body: &[u8]) -> bool {
        // A chunk of a stream with hooks or filters goes to the full parser anyway: a look at
        // its first fields saves scanning all of it (looked for only while such a stream is
        // open, so that unhooked requests pay nothing for it).
        if self.streams.runs_hooks(None)
            && hookd_protocol::fast::peek_chunk_id(body)
                .is_some_and(|id| self.streams.runs_hooks(Some(id)))
        {
            return false;
        }
        match hookd_protocol::fast::scan_request(body) {
            Some(ScannedRequest::Chunk { id, seq }) => {
                if self.streams.route_chunk(id) != ChunkRoute::Plain {
                    return false;
                }
                Stats::add(&self.shared.stats.events_served, 1);
                self.client.entry().count_event();
                self.sink
                    .queue_with(|out| hookd_protocol::fast::write_plain_chunk_result(out, id, seq))
                    .await;
                true
            }
            Some(ScannedRequest::Event(event)) => {
                // A reused id goes to the full path, which answers `duplicate_id`.
                if self.is_inflight(event.id) {
                    return false;
                }
                let Some(generation) = self.unhooked_generation(&event) else {
                    return false;
                };
                tracing::debug!(
                    client = &*self.client.entry().name,
                    event = event.event,
                    tool = event.tool_name.unwrap_or("-"),
                    "event matched no hook"
                );
                Stats::add(&self.shared.stats.events_served, 1);
                self.client.entry().count_event();
                self.sink
                    .queue_with(|out| {
                        hookd_protocol::fast::write_empty_result(out, event.id, generation)
                    })
                    .await;
                true
            }
            None => false,
        }
    }

    /// The generation of the cached registry of a scanned event's project when no hook of it
    /// matches the event; `None` when one does, or the registry is not cached, or the event
    /// is unknown (the full path then answers). Allocates nothing once the match context's
    /// strings have grown to the longest tool name seen.
    fn unhooked_generation(&self, scanned: &ScannedEvent<'_>) -> Option<u64> {
        let event = HookEventName::ALL
            .into_iter()
            .find(|event| event.as_str() == scanned.event)
            // SessionEnd takes the full path, which marks the session's state as ended.
            .filter(|event| *event != HookEventName::SessionEnd)?;
        let snapshot = self.shared.registries.cached(Path::new(scanned.cwd))?;
        let (tool_name, trigger) = match event.matcher_kind() {
            MatcherKind::ToolName => (scanned.tool_name, None),
            MatcherKind::Trigger => (
                None,
                event
                    .trigger_field()
                    .and_then(|field| scanned.input_str(field)),
            ),
            MatcherKind::Ignored => (None, None),
        };
        let mut context = self
            .match_scratch
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        reuse(&mut context.tool_name, tool_name.unwrap_or(""));
        reuse(&mut context.trigger, trigger.unwrap_or(""));
        let planned = snapshot.registry.plan(event, &context).is_some();
        (!planned).then_some(snapshot.generation)
    }
}

/// The id a request must not share with an in-flight request, or `None` for a message that
/// is not a new request: `hello` has no id, and a stream's `chunk` and `stream_close` carry
/// the id of the stream they address.
fn duplicate_candidate(message: &ClientMessage) -> Option<&RequestId> {
    match message {
        ClientMessage::Hello(_) | ClientMessage::Chunk(_) | ClientMessage::StreamClose(_) => None,
        other => other.id(),
    }
}

/// Overwrites a reused string with `value`, keeping its capacity.
fn reuse(slot: &mut Option<String>, value: &str) {
    let text = slot.get_or_insert_with(String::new);
    text.clear();
    text.push_str(value);
}

/// Frames above this size are parsed on the blocking pool, so that one client's 64 MiB
/// request cannot stall every other connection of a single-threaded daemon.
const INLINE_PARSE_LIMIT: usize = 256 * 1024;

/// Parses a request frame, on the blocking pool when it is large.
async fn parse_off_thread_if_large(body: Bytes) -> Result<ClientMessage, ProtocolError> {
    if body.len() <= INLINE_PARSE_LIMIT {
        return hookd_protocol::parse_client_message(&body);
    }
    tokio::task::spawn_blocking(move || hookd_protocol::parse_client_message(&body))
        .await
        .unwrap_or_else(|err| {
            Err(ProtocolError::new(
                ErrorCode::Internal,
                format!("parsing the request failed: {err}"),
            ))
        })
}
