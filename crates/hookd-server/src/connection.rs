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
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::relayed::{Series, SeriesKey, is_last_chunk};
use bytes::Bytes;
use futures_util::FutureExt;
use hookd_core::HookResult;
use hookd_core::dialect::Dialect;
use hookd_core::matcher::MatchContext;
use hookd_core::payload::{BaseFields, format_timestamp};
use hookd_core::sanitize::EnvRedaction;
use hookd_core::{HookEventName, MatcherKind};
use hookd_protocol::fast::{IdRef, ScannedEvent, ScannedRequest};
use hookd_protocol::{
    CancelRequest, ChunkRequest, ChunkResultMessage, ClientMessage, ErrorCode, EventRequest,
    EventResult, Frame, HookRecord, HookedEventsRequest, ListRequest, PongMessage, ProtocolError,
    RequestId, ServerHello, ServerMessage, StreamCloseRequest, StreamClosedMessage,
    StreamOpenRequest, StreamOpenedMessage, SubscribeRequest, WireEnv,
};
use hookd_runner::fire::{FireRequest, ProcessKeys, run_plan};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::convert;
use crate::io::{FrameReader, FrameWriter};
use crate::limits::InflightLimit;
use crate::manage::Manager;
use crate::results;
use crate::runstats::{ClientEntry, ClientHandle};
use crate::shared::Shared;
use crate::stats::Stats;
use crate::story::RunContext;
use crate::stream::{
    ChunkRoute, Command, FilterOutcome, FilterStream, Removed, StreamRun, Streams, is_filter_plan,
};

/// The write side of a connection, shared by the connection task and its runs.
pub(crate) type Sink = Arc<FrameWriter>;

/// Cancellation tokens of a connection's in-flight requests (event runs, subscriptions,
/// streams), by request id.
pub(crate) type Inflight = Arc<Mutex<HashMap<RequestId, CancellationToken>>>;

/// The environment hooks run with, as `(name, value)` pairs.
type Env = Arc<Vec<(String, String)>>;

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
        let client = shared.run_stats.connect(&client_name);
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

/// Converts a client-sent environment to the runner's form, with `HOOKD_SOCKET` naming this
/// daemon's socket (`crate::state`: `hookctl state` in a hook finds the daemon that ran it).
fn wire_env(mut env: WireEnv, shared: &Shared) -> Env {
    if let Some(socket) = &shared.hook_socket {
        env.insert(hookd_protocol::SOCKET_ENV_VAR.to_owned(), socket.clone());
    }
    Arc::new(env.into_iter().collect())
}

/// Encodes and writes one message (with whatever the read loop queued before it). A failed
/// write means the client is gone; the read side notices and ends the connection, so the
/// error is only logged.
pub(crate) async fn send(sink: &Sink, message: &ServerMessage) {
    let frame = hookd_protocol::encode(message);
    if let Err(err) = sink.send(frame).await {
        tracing::debug!(%err, "cannot write to client");
    }
}

/// The state of an established connection.
struct Connection {
    shared: Arc<Shared>,
    /// The client's counters (by the name it gave in its hello).
    client: ClientHandle,
    sink: Sink,
    /// The environment hooks of this connection run with unless a request brings its own.
    env: Env,
    /// Cancellation tokens of this connection's in-flight requests, by request id.
    inflight: Inflight,
    /// The ids among them that are subscriptions (`subscribe`, `hooked_events` with
    /// `subscribe`): a `cancel` frees such an id at once, as its `cancelled` is the last
    /// answer the subscription gets. Only the read loop uses it.
    subscriptions: Mutex<HashSet<RequestId>>,
    /// The connection's run tasks.
    runs: TaskTracker,
    /// Cancelled when the client disconnects or the daemon stops for good.
    cancel: CancellationToken,
    /// The connection's output budget, in KiB: each event run holds its worst-case captured
    /// output from before it starts until its result is written. When a client stops reading,
    /// finished runs cannot give theirs back, the budget runs out, and the connection stops
    /// reading requests: one connection can never pin more than this.
    output_budget: Arc<tokio::sync::Semaphore>,
    /// The cap on in-flight event runs and queued stream chunks: at the cap, no frame is read
    /// until one of them ends. It also caps the number of open streams.
    limit: InflightLimit,
    /// The open streams.
    streams: Streams,
    /// A match context whose strings are reused by the allocation-free path (both are always
    /// `Some`; an empty string matches like an absent field).
    match_scratch: Mutex<MatchContext>,
    /// The buffer the `chunk_result` bodies of filter-only streams are written into, kept
    /// between chunks (up to [`MAX_KEPT_FILTER_BODY`]).
    filter_body: Mutex<Vec<u8>>,
}

/// The output budget of one connection, in KiB (64 MiB).
pub(crate) const OUTPUT_BUDGET_KIB: u32 = 64 * 1024;

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
        match message {
            ClientMessage::Hello(_) => {
                let error = ProtocolError::new(
                    ErrorCode::BadRequest,
                    "hello was already exchanged on this connection",
                );
                send(&self.sink, &error.to_server_message()).await;
            }
            ClientMessage::Event(request) => self.event(request).await,
            ClientMessage::Cancel(request) => self.cancel_run(request).await,
            ClientMessage::List(request) => self.list(request).await,
            ClientMessage::Status(request) => {
                let status = convert::status(&self.shared, request.id).await;
                send(&self.sink, &ServerMessage::Status(status)).await;
            }
            ClientMessage::Ping(request) => {
                send(
                    &self.sink,
                    &ServerMessage::Pong(PongMessage { id: request.id }),
                )
                .await;
            }
            ClientMessage::Subscribe(request) => self.subscribe(request).await,
            ClientMessage::Reload(request) => {
                self.shared.registries.reload_all().await;
                crate::background::resume_paused_hooks(&self.shared);
                let registries = self
                    .shared
                    .registries
                    .snapshots()
                    .await
                    .iter()
                    .map(|snapshot| convert::registry_status(snapshot))
                    .collect();
                let reply = ServerMessage::Reloaded(hookd_protocol::ReloadedMessage {
                    id: request.id,
                    registries,
                });
                send(&self.sink, &reply).await;
            }
            ClientMessage::Enable(request) => {
                let manager = Manager::new(&self.shared, Path::new(&request.cwd));
                let outcome = manager.enable(&request.name).await;
                self.answer_edit(request.id, outcome).await;
            }
            ClientMessage::Disable(request) => {
                let manager = Manager::new(&self.shared, Path::new(&request.cwd));
                let outcome = manager.disable(&request.name, request.scope).await;
                self.answer_edit(request.id, outcome).await;
            }
            ClientMessage::EnableAll(request) => {
                let manager = Manager::new(&self.shared, Path::new(&request.cwd));
                let outcome = manager.enable_all().await;
                self.answer_edit(request.id, outcome).await;
            }
            ClientMessage::DisableAll(request) => {
                let manager = Manager::new(&self.shared, Path::new(&request.cwd));
                let outcome = manager.disable_all(request.scope).await;
                self.answer_edit(request.id, outcome).await;
            }
            ClientMessage::TrustPreview(request) => {
                let reply = crate::trust::answer_preview(&self.shared, request).await;
                send(&self.sink, &reply).await;
            }
            ClientMessage::Trust(request) => {
                let reply = crate::trust::answer_trust(&self.shared, request).await;
                send(&self.sink, &reply).await;
            }
            ClientMessage::Untrust(request) => {
                let reply = crate::trust::answer_untrust(&self.shared, request).await;
                send(&self.sink, &reply).await;
            }
            ClientMessage::TrustList(request) => {
                let reply = crate::trust::answer_list(&self.shared, request).await;
                send(&self.sink, &reply).await;
            }
            ClientMessage::StreamOpen(request) => self.stream_open(request).await,
            ClientMessage::Chunk(request) => self.chunk(request).await,
            ClientMessage::StreamClose(request) => self.stream_close(request).await,
            ClientMessage::HookedEvents(request) => self.hooked_events(request).await,
            ClientMessage::State(request) => {
                let reply = self.shared.state.answer(request).await;
                send(&self.sink, &reply).await;
            }
            ClientMessage::Stats(request) => {
                let mut stats = self.shared.run_stats.response(
                    request.id,
                    self.shared.started.elapsed().as_millis() as u64,
                    Stats::get(&self.shared.stats.events_served),
                );
                stats.background = Some(self.shared.background.status());
                stats.breaker = Some(convert::breaker_status(&self.shared.runner.breakers));
                let reply = ServerMessage::Stats(stats);
                send(&self.sink, &reply).await;
            }
        }
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

    /// Answers a `stream_open` request: the plan is computed now and kept for the stream's
    /// life; a stream with hooks gets a task.
    async fn stream_open(&self, request: StreamOpenRequest) {
        let event = match parse_event(&request.id, &request.event) {
            Ok(event) => event,
            Err(error) => return send(&self.sink, &error.to_server_message()).await,
        };
        if event != HookEventName::AfterModel {
            let error = ProtocolError::new(
                ErrorCode::UnsupportedEvent,
                format!(
                    "{event} cannot be streamed; only AfterModel can (send each {event} as an                      event request)"
                ),
            )
            .with_id(Some(request.id));
            return send(&self.sink, &error.to_server_message()).await;
        }
        let max_streams = self.shared.config.max_inflight_per_connection.max(1);
        if self.streams.len() >= max_streams {
            let error = ProtocolError::new(
                ErrorCode::LimitReached,
                format!(
                    "this connection has {max_streams} open streams already, the most it may                      have (max_inflight_per_connection); close one first"
                ),
            )
            .with_id(Some(request.id));
            return send(&self.sink, &error.to_server_message()).await;
        }
        let Some(token) = self.register(&request.id).await else {
            return;
        };
        let snapshot = self.shared.registries.get(Path::new(&request.cwd)).await;
        let plan = snapshot.registry.plan(event, &MatchContext::default());
        let opened = ServerMessage::StreamOpened(StreamOpenedMessage {
            id: request.id.clone(),
            hooks: plan.as_ref().map_or(0, |plan| plan.hooks.len() as u64),
            generation: snapshot.generation,
        });
        // Sent before the stream can answer anything.
        send(&self.sink, &opened).await;
        let Some(plan) = plan else {
            self.streams.insert_plain(request.id);
            return;
        };
        let env = match &request.env {
            Some(env) => wire_env(env.clone(), &self.shared),
            None => Arc::clone(&self.env),
        };
        let plans_dir = request.plans_dir.clone().unwrap_or_else(|| {
            hookd_core::env::default_plans_dir(
                &self.shared.registries.gemini_home().display().to_string(),
                &snapshot.project_id,
                &request.session_id,
            )
        });
        // The request is the same for every chunk: serialised once for the hooks' payloads.
        let serialized = request
            .input
            .get("llm_request")
            .and_then(|value| serde_json::to_string(value).ok())
            .map(|json| ("llm_request", Arc::new(json)))
            .into_iter()
            .collect();
        let state_token = self.shared.state.token(&request.session_id, &request.cwd);
        let fire = FireRequest {
            event,
            input: request.input,
            base: BaseFields {
                session_id: request.session_id,
                transcript_path: request.transcript_path,
                cwd: request.cwd.clone(),
                timestamp: format_timestamp(unix_millis_now()),
            },
            project_dir: request.cwd,
            plans_dir,
            env,
            env_redaction: Arc::clone(snapshot.registry.env_redaction()),
            serialized,
            process_keys: ProcessKeys::default(),
            class: hookd_runner::shares::RunClass::Foreground,
            state_token,
        };
        if is_filter_plan(&plan) {
            let filters = FilterStream::new(
                fire,
                &plan,
                snapshot.generation,
                Arc::clone(self.client.entry()),
            );
            self.streams.insert_filtered(request.id, filters);
            return;
        }
        // At most the in-flight cap of chunks can be queued (each holds a slot), plus the
        // close: the queue never fills.
        let capacity = self.shared.config.max_inflight_per_connection.max(1) + 1;
        let (queue, commands) = mpsc::channel(capacity);
        let run = StreamRun {
            client: Arc::clone(self.client.entry()),
            shared: Arc::clone(&self.shared),
            sink: Arc::clone(&self.sink),
            inflight: Arc::clone(&self.inflight),
            id: request.id.clone(),
            token,
            gone: self.cancel.clone(),
            generation: snapshot.generation,
            output_budget: Arc::clone(&self.output_budget),
            fire,
            plan,
        };
        self.streams.insert_hooked(request.id, queue);
        self.runs.spawn(run.serve(commands));
    }

    /// Answers a `chunk` that the allocation-free path did not: a chunk of a stream with
    /// hooks is queued for its task, holding an in-flight slot until it is answered.
    async fn chunk(&self, request: ChunkRequest) {
        match self.streams.route_chunk(request.id.as_id_ref()) {
            ChunkRoute::Plain => {
                Stats::add(&self.shared.stats.events_served, 1);
                self.client.entry().count_event();
                let reply = ServerMessage::ChunkResult(ChunkResultMessage {
                    id: request.id,
                    seq: request.seq,
                    content: None,
                    result: empty_event_result(),
                });
                send(&self.sink, &reply).await;
            }
            ChunkRoute::Filtered => {
                // The body is written into a buffer the connection keeps, not one allocated
                // per chunk: it is copied into the queue anyway.
                let mut body = std::mem::take(
                    &mut *self
                        .filter_body
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner),
                );
                let ChunkRequest {
                    id,
                    seq,
                    llm_response,
                } = request;
                let outcome =
                    self.streams
                        .filter_chunk(&self.shared, (&id, seq), llm_response, &mut body);
                match outcome {
                    // Queued like the no-hook answers: the read loop flushes before it waits.
                    FilterOutcome::Answered => self.sink.queue_frame(&body).await,
                    FilterOutcome::TooLarge(llm_response) => {
                        let request = ChunkRequest {
                            id,
                            seq,
                            llm_response,
                        };
                        self.filter_large_chunk(request).await;
                    }
                    FilterOutcome::NotFiltered => {}
                }
                if body.capacity() <= MAX_KEPT_FILTER_BODY {
                    *self
                        .filter_body
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = body;
                }
            }
            ChunkRoute::Hooked => {
                let command = Command::Chunk {
                    seq: request.seq,
                    llm_response: request.llm_response,
                    slot: self.limit.enter(),
                };
                if self.streams.queue(&request.id, command).is_err() {
                    let error = ProtocolError::new(
                        ErrorCode::Internal,
                        format!("stream {} could not take the chunk", request.id),
                    )
                    .with_id(Some(request.id));
                    send(&self.sink, &error.to_server_message()).await;
                }
            }
            ChunkRoute::Unknown => {
                let error = unknown_stream(request.id);
                send(&self.sink, &error.to_server_message()).await;
            }
        }
    }

    /// Answers a chunk of a filter-only stream too large for the read loop to filter
    /// itself: the stream is taken out of the table, its filters run on the blocking pool
    /// ([`FilterStream::chunk_bounded`]) while this read loop waits (the daemon's other
    /// connections do not), and it is put back once the chunk is answered.
    async fn filter_large_chunk(&self, request: ChunkRequest) {
        let Some(Removed::Filtered(mut stream)) = self.streams.remove(&request.id) else {
            // Only a filter-only stream is routed here, and only this loop changes the table.
            let error = unknown_stream(request.id);
            return send(&self.sink, &error.to_server_message()).await;
        };
        let body = tokio::select! {
            body = stream.chunk_bounded(
                &self.shared,
                (&request.id, request.seq),
                request.llm_response,
            ) => body,
            // The client is gone: nothing more can be answered.
            () = self.cancel.cancelled() => return,
        };
        self.streams.insert_filtered_boxed(request.id, stream);
        self.sink.queue_frame(&body).await;
    }

    /// Answers a `stream_close`: at once for a stream without hooks, else by its task once
    /// its queued chunks are answered.
    async fn stream_close(&self, request: StreamCloseRequest) {
        match self.streams.remove(&request.id).map(Removed::into_answered) {
            Some(Ok((chunks, flush))) => self.close_stream(request.id, chunks, flush).await,
            Some(Err(queue)) => {
                // The queue has room for the close (see `stream_open`); were it gone, the task
                // would close the stream anyway when the queue is dropped here.
                let _ = queue.try_send(Command::Close);
            }
            None => {
                let error = unknown_stream(request.id);
                send(&self.sink, &error.to_server_message()).await;
            }
        }
    }

    /// Ends a stream the read loop answers (already out of the table) with `stream_closed`.
    async fn close_stream(&self, id: RequestId, chunks: u64, flush: String) {
        self.inflight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        let closed = ServerMessage::StreamClosed(StreamClosedMessage { id, chunks, flush });
        send(&self.sink, &closed).await;
    }

    /// Answers a `hooked_events` request; with `subscribe`, sends the answer again after each
    /// swap of the project's registry until the request is cancelled, the client goes or the
    /// daemon stops.
    async fn hooked_events(&self, request: HookedEventsRequest) {
        let dir = PathBuf::from(&request.cwd);
        if !request.subscribe {
            let snapshot = self.shared.registries.get(&dir).await;
            let reply = convert::hooked_events(request.id, request.cwd, &snapshot);
            return send(&self.sink, &reply).await;
        }
        let Some(token) = self.register(&request.id).await else {
            return;
        };
        self.add_subscription(&request.id);
        // Subscribed before the first answer, so no change after it can be missed.
        let mut changes = self.shared.registries.subscribe();
        let snapshot = self.shared.registries.get(&dir).await;
        let reply = convert::hooked_events(request.id.clone(), request.cwd.clone(), &snapshot);
        send(&self.sink, &reply).await;
        let shared = Arc::clone(&self.shared);
        let sink = Arc::clone(&self.sink);
        let inflight = Arc::clone(&self.inflight);
        let id = request.id;
        let cwd = request.cwd;
        self.runs.spawn(async move {
            let cancelled = loop {
                let change = tokio::select! {
                    _ = token.cancelled() => break true,
                    _ = shared.shutdown.cancelled() => break false,
                    change = changes.recv() => change,
                };
                let snapshot = match change {
                    Ok(change) if change.snapshot.project_dir == dir => {
                        Arc::clone(&change.snapshot)
                    }
                    Ok(_) => continue,
                    // Every answer is the whole state: after missing some, the current one
                    // is all the client needs.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        shared.registries.get(&dir).await
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break false,
                };
                let reply = convert::hooked_events(id.clone(), cwd.clone(), &snapshot);
                send(&sink, &reply).await;
            };
            // A cancelled subscription's id was freed by the cancel (or its connection is
            // gone); the id may be in use by a newer request already.
            if !cancelled {
                inflight
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
            }
        });
    }

    /// Answers an `event` request: at once when no hook matches, else from a run task.
    async fn event(&self, request: EventRequest) {
        let event = match parse_event(&request.id, &request.event) {
            Ok(event) => event,
            Err(error) => return send(&self.sink, &error.to_server_message()).await,
        };
        if event == HookEventName::SessionEnd {
            self.shared.state.session_ended(&request.session_id);
        }
        let relayed_by = match parse_relayed_by(&request.id, request.relayed_by.as_deref()) {
            Ok(host) => host,
            Err(error) => return send(&self.sink, &error.to_server_message()).await,
        };
        // `parse_client_message` has already refused a `cwd` or `project_dir` that is not
        // absolute. The host's project root, when it sent one, names the project: a shell
        // tool's `cd` moves `cwd`, never the project.
        let project_dir = request.project_dir.as_deref().unwrap_or(&request.cwd);
        let snapshot = self.shared.registries.get(Path::new(project_dir)).await;
        Stats::add(&self.shared.stats.events_served, 1);
        self.client.entry().count_event();
        if let Some(host) = relayed_by {
            self.shared.run_stats.count_relayed(host);
        }
        // Async hooks, and every hook of a detached event, run in the background
        // (`crate::background`); the rest of the plan, if any, answers the client.
        let (plan, background) =
            match snapshot
                .registry
                .plan_relayed(event, &request.input, relayed_by)
            {
                Some(plan) => crate::background::split(plan, request.detach),
                None => (None, None),
            };
        let backgrounded = background.is_some();
        if let Some((kind, background)) = background {
            let env = match &request.env {
                Some(env) => wire_env(env.clone(), &self.shared),
                None => Arc::clone(&self.env),
            };
            let job = crate::background::Job {
                kind,
                request: request.clone(),
                event,
                plan: background,
                client: Arc::clone(self.client.entry()),
                relayed_by,
                env,
                env_redaction: Arc::clone(snapshot.registry.env_redaction()),
                generation: snapshot.generation,
                project_id: snapshot.project_id.clone(),
            };
            crate::background::Background::start(&self.shared, job);
        }
        let Some(plan) = plan else {
            if backgrounded {
                // Logged by the background run when it ends.
                let message = convert::empty_result(request.id, snapshot.generation);
                send(&self.sink, &message).await;
                return;
            }
            tracing::debug!(
                client = &*self.client.entry().name,
                event = event.as_str(),
                tool = request
                    .input
                    .get("tool_name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("-"),
                relayed_by = relayed_by.map_or("-", Dialect::as_str),
                "event matched no hook"
            );
            let message = convert::empty_result(request.id, snapshot.generation);
            send(&self.sink, &message).await;
            return;
        };

        // Stdout and stderr of every hook at their caps: what this run may hold at worst.
        let worst_kib = (plan.hooks.len() * 2 * self.shared.config.max_output_bytes)
            .div_ceil(1024)
            .clamp(1, OUTPUT_BUDGET_KIB as usize);
        let Ok(output_permit) = Arc::clone(&self.output_budget)
            .acquire_many_owned(u32::try_from(worst_kib).unwrap_or(OUTPUT_BUDGET_KIB))
            .await
        else {
            return;
        };
        // A SessionEnd run is not stopped by its client going away: the host kills its
        // relay after a second or two, and the work must still be done (`crate::background`).
        let parent = if event == HookEventName::SessionEnd {
            &self.shared.hard_stop
        } else {
            &self.cancel
        };
        let Some(token) = self.register_under(&request.id, parent).await else {
            return;
        };

        let env = match &request.env {
            Some(env) => wire_env(env.clone(), &self.shared),
            None => Arc::clone(&self.env),
        };
        // A relayed AfterModel chunk continues its response's series (`crate::relayed`).
        let series = (relayed_by.is_some() && event == HookEventName::AfterModel).then(|| {
            let key = SeriesKey::new(
                project_dir,
                &request.session_id,
                request.input.get("llm_request"),
            );
            let series = self.shared.relayed.series(&key, std::time::Instant::now());
            let last = is_last_chunk(request.input.get("llm_response"));
            RelayedChunk { key, series, last }
        });
        let run = Run {
            started: std::time::Instant::now(),
            client: Arc::clone(self.client.entry()),
            relayed_by,
            shared: Arc::clone(&self.shared),
            sink: Arc::clone(&self.sink),
            inflight: Arc::clone(&self.inflight),
            token,
            event,
            series,
            env,
            env_redaction: Arc::clone(snapshot.registry.env_redaction()),
            generation: snapshot.generation,
            project_id: snapshot.project_id.clone(),
            _output_permit: output_permit,
        };
        let slot = self.limit.enter();
        self.runs.spawn(async move {
            run.execute(request, plan).await;
            drop(slot);
        });
    }

    /// Answers a management request with `edited`, or with `edit_failed` when no file could
    /// be edited.
    async fn answer_edit(
        &self,
        id: RequestId,
        outcome: Result<crate::manage::Outcome, crate::manage::ManageError>,
    ) {
        let reply = match outcome {
            Ok(outcome) => {
                tracing::info!("{}", outcome.message);
                convert::edited(id, outcome)
            }
            Err(err) => ProtocolError::new(ErrorCode::EditFailed, err.to_string())
                .with_id(Some(id))
                .to_server_message(),
        };
        send(&self.sink, &reply).await;
    }

    /// Registers an in-flight request's cancellation token, or answers `duplicate_id`.
    async fn register(&self, id: &RequestId) -> Option<CancellationToken> {
        let parent = self.cancel.clone();
        self.register_under(id, &parent).await
    }

    /// [`Connection::register`] with a token that `parent` cancels: the connection's own
    /// (its runs stop when the client goes), or the daemon's hard stop for a run that must
    /// outlive its client. A `cancel` request stops either.
    async fn register_under(
        &self,
        id: &RequestId,
        parent: &CancellationToken,
    ) -> Option<CancellationToken> {
        let token = {
            let mut inflight = self
                .inflight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if inflight.contains_key(id) {
                None
            } else {
                self.forget_subscription(id);
                let token = parent.child_token();
                inflight.insert(id.clone(), token.clone());
                Some(token)
            }
        };
        if token.is_none() {
            send(&self.sink, &duplicate_id(id.clone()).to_server_message()).await;
        }
        token
    }

    /// Marks an in-flight id as a subscription's (see [`Connection::subscriptions`]).
    fn add_subscription(&self, id: &RequestId) {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone());
    }

    /// Forgets that an id was a subscription's: one that ended by itself (the daemon
    /// stopping) leaves its mark behind, and a new request may now use the id.
    fn forget_subscription(&self, id: &RequestId) {
        let mut subscriptions = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !subscriptions.is_empty() {
            subscriptions.remove(id);
        }
    }

    /// Whether a request with this id is in flight on the connection (an event run, a
    /// subscription or a stream). Allocates nothing: the table is searched by comparison,
    /// and it is almost always empty or tiny (an agent keeps one `hooked_events`
    /// subscription open per project).
    fn is_inflight(&self, id: IdRef<'_>) -> bool {
        let inflight = self.inflight.lock().unwrap_or_else(PoisonError::into_inner);
        !inflight.is_empty() && inflight.keys().any(|key| key.as_id_ref() == id)
    }

    /// Answers a `subscribe` request, then sends a `registry_changed` frame per swapped
    /// registry until the subscription is cancelled, the client goes or the daemon stops.
    ///
    /// Announcements come from a bounded broadcast channel: a client that does not read
    /// makes only its own subscription fall behind, losing the oldest frames (counted in the
    /// next frame's `missed`), and never slows the daemon.
    async fn subscribe(&self, request: SubscribeRequest) {
        let Some(token) = self.register(&request.id).await else {
            return;
        };
        self.add_subscription(&request.id);
        // Subscribed before the acknowledgement, so no change after it can be missed.
        let mut changes = self.shared.registries.subscribe();
        // The daemon watches the files of the projects it has loaded: a directory no event
        // has named yet is loaded now, so that its files are watched and its changes are
        // reported from the acknowledgement on.
        if let Some(cwd) = &request.cwd {
            self.shared.registries.get(Path::new(cwd)).await;
        }
        let ack = ServerMessage::Subscribed(hookd_protocol::SubscribedMessage {
            id: request.id.clone(),
            cwd: request.cwd.clone(),
        });
        send(&self.sink, &ack).await;
        let sink = Arc::clone(&self.sink);
        let inflight = Arc::clone(&self.inflight);
        let shutdown = self.shared.shutdown.clone();
        let filter = request.cwd.map(std::path::PathBuf::from);
        let id = request.id;
        self.runs.spawn(async move {
            let mut missed = 0u64;
            let cancelled = loop {
                let change = tokio::select! {
                    _ = token.cancelled() => break true,
                    _ = shutdown.cancelled() => break false,
                    change = changes.recv() => change,
                };
                match change {
                    Ok(change) => {
                        if filter
                            .as_ref()
                            .is_some_and(|dir| *dir != change.snapshot.project_dir)
                        {
                            continue;
                        }
                        let frame = convert::registry_changed(id.clone(), &change, missed);
                        missed = 0;
                        send(&sink, &frame).await;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(lost)) => {
                        missed = missed.saturating_add(lost);
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break false,
                }
            };
            // As for `hooked_events`: a cancel has freed the id already.
            if !cancelled {
                inflight
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&id);
            }
        });
    }

    /// Answers a `cancel` request. A cancelled stream answers what it has queued (its hooks'
    /// runs stopped) and ends with `stream_closed`.
    async fn cancel_run(&self, request: CancelRequest) {
        match self
            .streams
            .remove(&request.target)
            .map(Removed::into_answered)
        {
            Some(Ok((chunks, flush))) => {
                let reply = ServerMessage::Cancelled(hookd_protocol::CancelledMessage {
                    id: request.id,
                    target: request.target.clone(),
                });
                send(&self.sink, &reply).await;
                return self.close_stream(request.target, chunks, flush).await;
            }
            // Dropping the queue lets the task end after what is queued; the token below
            // stops the running hooks.
            Some(Err(queue)) => drop(queue),
            None => {}
        }
        let is_subscription = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&request.target);
        let token = {
            let mut inflight = self
                .inflight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if is_subscription {
                // A subscription gets no answer after `cancelled`: its id is free now.
                inflight.remove(&request.target)
            } else {
                inflight.get(&request.target).cloned()
            }
        };
        let reply = match token {
            Some(token) => {
                token.cancel();
                ServerMessage::Cancelled(hookd_protocol::CancelledMessage {
                    id: request.id,
                    target: request.target,
                })
            }
            None => ProtocolError::new(
                ErrorCode::UnknownId,
                format!(
                    "no event request, subscription or stream with id {} is in flight on this \
                     connection",
                    request.target
                ),
            )
            .with_id(Some(request.id))
            .to_server_message(),
        };
        send(&self.sink, &reply).await;
    }

    /// Answers a `list` request with the registry of the given project dir.
    async fn list(&self, request: ListRequest) {
        let snapshot = self.shared.registries.get(Path::new(&request.cwd)).await;
        let message = convert::list(
            request.id,
            request.cwd,
            &snapshot,
            &self.shared.last_runs,
            &self.shared.runner.breakers,
        );
        send(&self.sink, &ServerMessage::List(message)).await;
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

/// The `duplicate_id` error for a request that reuses the id of an in-flight request.
fn duplicate_id(id: RequestId) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::DuplicateId,
        format!("request id {id} is already in flight on this connection"),
    )
    .with_id(Some(id))
}

/// A relayed AfterModel chunk's place in its response (`crate::relayed`).
struct RelayedChunk {
    key: SeriesKey,
    series: Arc<tokio::sync::Mutex<Series>>,
    /// Whether it is the response's last chunk.
    last: bool,
}

/// One event run with hooks to execute, owned by its task.
struct Run {
    shared: Arc<Shared>,
    sink: Sink,
    inflight: Inflight,
    token: CancellationToken,
    event: HookEventName,
    /// When the request was read.
    started: std::time::Instant,
    /// The client's counters.
    client: Arc<ClientEntry>,
    /// The host whose relay sent the event: Claude Code's events merge by its rules.
    relayed_by: Option<Dialect>,
    /// Set for a relayed AfterModel chunk.
    series: Option<RelayedChunk>,
    env: Env,
    /// The project's redaction settings for `env`.
    env_redaction: Arc<EnvRedaction>,
    generation: u64,
    /// Gemini CLI's id of the project, for the default plans directory.
    project_id: String,
    /// This run's share of the connection's output budget, given back when it is done.
    _output_permit: tokio::sync::OwnedSemaphorePermit,
}

impl Run {
    /// Runs the plan, streams per-hook records when asked, and sends the aggregate.
    async fn execute(mut self, mut request: EventRequest, mut plan: hookd_core::Plan) {
        let hook_count = plan.hooks.len();
        Stats::add(&self.shared.stats.hooks_pending, hook_count as u64);
        let plans_dir = request.plans_dir.take().unwrap_or_else(|| {
            hookd_core::env::default_plans_dir(
                &self.shared.registries.gemini_home().display().to_string(),
                &self.project_id,
                &request.session_id,
            )
        });
        // The request's fields move into the firing (the aggregate reads the input from it).
        let project_dir = request
            .project_dir
            .take()
            .unwrap_or_else(|| request.cwd.clone());
        let state_token = self.shared.state.token(&request.session_id, &project_dir);
        let mut fire = FireRequest {
            event: self.event,
            input: std::mem::take(&mut request.input),
            base: BaseFields {
                session_id: std::mem::take(&mut request.session_id),
                transcript_path: std::mem::take(&mut request.transcript_path),
                cwd: std::mem::take(&mut request.cwd),
                timestamp: format_timestamp(unix_millis_now()),
            },
            project_dir,
            plans_dir,
            env: Arc::clone(&self.env),
            env_redaction: Arc::clone(&self.env_redaction),
            serialized: Vec::new(),
            process_keys: ProcessKeys::default(),
            class: hookd_runner::shares::RunClass::Foreground,
            state_token,
        };

        // Exactly one record per hook goes through this channel, so a capacity of the plan's
        // length means the runner's callback never has to wait or drop. Only a client that
        // asked for per-hook frames gets one.
        let (records_tx, records_rx) = if request.stream_hooks {
            let (sender, receiver) = mpsc::channel(hook_count.max(1));
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        let stats = Arc::clone(&self.shared);
        let on_result = move |index: usize, result: &hookd_core::HookResult| {
            Stats::sub(&stats.stats.hooks_pending, 1);
            if let Some(records) = &records_tx {
                let _ = records.try_send((index, convert::hook_record(result)));
            }
        };
        // A relayed AfterModel chunk: the series' filters run first, with their state across
        // the response's chunks; the rest of the plan runs on what they left.
        let relayed = self.series.take();
        let mut series = match &relayed {
            Some(chunk) => Some(Arc::clone(&chunk.series).lock_owned().await),
            None => None,
        };
        let filtered = match (series.as_mut(), relayed.as_ref()) {
            (Some(series), Some(chunk)) => Some(
                series
                    .filter_chunk(
                        &plan,
                        self.generation,
                        &mut fire.input,
                        chunk.last,
                        self.shared.config.default_on_failure,
                    )
                    .await,
            ),
            _ => None,
        };
        let commands = match &filtered {
            Some(filtered) => {
                for (index, result) in filtered.results.iter().enumerate() {
                    on_result(index, result);
                }
                // Recorded in the order they ran: the filters, then the rest.
                let mut hooks = filtered.filters.clone();
                hooks.extend(filtered.commands.iter().flat_map(|plan| plan.hooks.clone()));
                plan.hooks = hooks;
                filtered.commands.clone()
            }
            None => Some(plan.clone()),
        };
        let offset = filtered
            .as_ref()
            .map_or(0, |filtered| filtered.results.len());
        let run = async {
            let mut results = filtered
                .as_ref()
                .map(|filtered| filtered.results.clone())
                .unwrap_or_default();
            if let Some(commands) = &commands {
                let mut shifted = |index: usize, result: &HookResult| {
                    on_result(offset + index, result);
                };
                let ran = run_plan(
                    commands,
                    &fire,
                    &self.shared.runner,
                    &self.token,
                    &mut shifted,
                )
                .await;
                results.extend(ran);
            }
            drop(on_result);
            results
        };
        let forward = async {
            let Some(mut records) = records_rx else {
                return;
            };
            while let Some((index, hook)) = records.recv().await {
                let message = ServerMessage::HookResult(hookd_protocol::HookResultMessage {
                    id: request.id.clone(),
                    index: index as u64,
                    hook,
                });
                send(&self.sink, &message).await;
            }
        };
        let (results, ()) = tokio::join!(run, forward);

        let aggregate = match self.relayed_by {
            Some(host) => host.aggregate(self.event, &results, &fire.input),
            None => hookd_core::aggregate::aggregate(self.event, &results, &fire.input),
        };
        if let (Some(series), Some(filtered), Some(chunk)) = (&mut series, &filtered, &relayed) {
            series.emitted(filtered, &aggregate);
            if chunk.last {
                self.shared.relayed.end(&chunk.key);
            } else {
                self.shared
                    .relayed
                    .touch(&chunk.key, std::time::Instant::now());
            }
        }
        drop(series);
        let max_frame_bytes = self.shared.config.max_frame_bytes;
        let body = results::result_body(
            &request.id,
            &aggregate,
            &results,
            self.generation,
            max_frame_bytes,
        );
        let frame = results::fitted(body, max_frame_bytes, || {
            convert::result(request.id.clone(), &aggregate, &results, self.generation)
        });
        self.inflight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&request.id);
        send_frame(&self.sink, frame).await;
        // The bookkeeping is done while the client reads the answer.
        let context = RunContext {
            client: &self.client,
            relayed_by: self.relayed_by,
            wall: Some(self.started.elapsed()),
            background: None,
        };
        crate::story::finished_run(
            &self.shared,
            &context,
            &fire,
            self.generation,
            &results,
            &aggregate,
        );
        self.shared.last_runs.record(&plan.hooks, &results);
        hookd_runner::spawn::settle();
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

/// Overwrites a reused string with `value`, keeping its capacity.
fn reuse(slot: &mut Option<String>, value: &str) {
    let text = slot.get_or_insert_with(String::new);
    text.clear();
    text.push_str(value);
}

/// The event named in a request, or its `unknown_event` error.
fn parse_event(id: &RequestId, name: &str) -> Result<HookEventName, ProtocolError> {
    name.parse::<HookEventName>().map_err(|_| {
        ProtocolError::new(
            ErrorCode::UnknownEvent,
            format!(
                "unknown event {name:?}; expected one of {}",
                HookEventName::ALL.map(HookEventName::as_str).join(", ")
            ),
        )
        .with_id(Some(id.clone()))
    })
}

/// The host that relayed an event (its `relayed_by`), or the `bad_request` error for a host
/// hookd does not know.
fn parse_relayed_by(
    id: &RequestId,
    relayed_by: Option<&str>,
) -> Result<Option<Dialect>, ProtocolError> {
    let Some(name) = relayed_by else {
        return Ok(None);
    };
    Dialect::parse(name).map(Some).ok_or_else(|| {
        ProtocolError::new(
            ErrorCode::BadRequest,
            format!(
                "relayed_by must be one of {}, not {name:?}",
                Dialect::names()
            ),
        )
        .with_id(Some(id.clone()))
    })
}

/// The `unknown_id` error for a chunk or close of a stream that is not open.
fn unknown_stream(id: RequestId) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::UnknownId,
        format!("no stream with id {id} is open on this connection"),
    )
    .with_id(Some(id))
}

/// The aggregate of no hooks.
fn empty_event_result() -> EventResult {
    EventResult {
        success: true,
        final_output: None,
        all_outputs: Vec::new(),
        errors: Vec::new(),
        total_duration_ms: 0.0,
        hooks: Vec::new(),
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

/// The largest buffer a connection keeps for filter-only streams' results between chunks: a
/// larger one (a result near the frame limit) is freed once sent.
const MAX_KEPT_FILTER_BODY: usize = 64 * 1024;

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

/// Milliseconds since the Unix epoch, for the payload's `timestamp`.
pub(crate) fn unix_millis_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}
