//! One client connection: the handshake, then requests until the client goes away.
//!
//! The connection's task reads frames and answers everything that needs no hook process
//! (pings, status, listings, events that match no hook, errors) itself, so the common case
//! costs one read, one parse and one write. Events with a plan run in their own tasks; all
//! writers share the connection's [`FrameWriter`], which sends whole frames one at a time, so
//! frames never interleave. The socket I/O itself is in [`crate::io`].
//!
//! A client that disconnects cancels its runs (their process groups are killed). A daemon
//! that is stopping stops reading, lets the runs finish, then closes.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hookd_core::HookEventName;
use hookd_core::payload::{BaseFields, format_timestamp};
use hookd_protocol::{
    CancelRequest, ClientMessage, ErrorCode, EventRequest, Frame, ListRequest, PongMessage,
    ProtocolError, RequestId, ServerHello, ServerMessage, SubscribeRequest, WireEnv,
};
use hookd_runner::fire::{FireRequest, run_plan};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::convert;
use crate::io::{FrameReader, FrameWriter};
use crate::limits::InflightLimit;
use crate::manage::Manager;
use crate::shared::Shared;
use crate::stats::Stats;

/// The write side of a connection, shared by the connection task and its runs.
type Sink = Arc<FrameWriter>;

/// The environment hooks run with, as `(name, value)` pairs.
type Env = Arc<Vec<(String, String)>>;

/// Serves one accepted connection to the end.
pub(crate) async fn serve(stream: UnixStream, shared: Arc<Shared>) {
    Stats::add(&shared.stats.connections, 1);
    let (mut reader, writer) = crate::io::split(stream, shared.config.max_hello_frame_bytes);
    let sink: Sink = Arc::new(writer);

    if let Some(env) = handshake(&mut reader, &sink, &shared).await {
        reader.set_max_frame_bytes(shared.config.max_frame_bytes);
        let connection = Connection {
            cancel: shared.hard_stop.child_token(),
            shared: Arc::clone(&shared),
            sink,
            env,
            inflight: Arc::new(std::sync::Mutex::new(HashMap::new())),
            runs: TaskTracker::new(),
            output_budget: Arc::new(tokio::sync::Semaphore::new(OUTPUT_BUDGET_KIB as usize)),
            limit: InflightLimit::new(shared.config.max_inflight_per_connection),
        };
        connection.read_requests(&mut reader).await;
    }
    Stats::sub(&shared.stats.connections, 1);
}

/// Waits for the client's `hello`; answers it and returns the connection's hook environment,
/// or answers with an error and returns `None` (the connection then closes).
///
/// A first frame that is not a request at all keeps its own code (`bad_json`, `unknown_type`,
/// ...); a valid request other than `hello` gets `handshake_required`. Either way the
/// connection closes, as `docs/protocol.md` says.
async fn handshake(reader: &mut FrameReader, sink: &Sink, shared: &Shared) -> Option<Env> {
    let frame = tokio::select! {
        _ = shared.shutdown.cancelled() => return None,
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
        Ok(Some(Ok(Frame::TooLarge { declared_len }))) => {
            ProtocolError::frame_too_large(declared_len, shared.config.max_hello_frame_bytes)
        }
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
                        Some(env) => wire_env(env),
                        None => Arc::clone(&shared.daemon_env),
                    };
                    return Some(env);
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

/// Converts a client-sent environment to the runner's form.
fn wire_env(env: WireEnv) -> Env {
    Arc::new(env.into_iter().collect())
}

/// Encodes and writes one message. A failed write means the client is gone; the read side
/// notices and ends the connection, so the error is only logged.
async fn send(sink: &Sink, message: &ServerMessage) {
    let frame = hookd_protocol::encode(message);
    if let Err(err) = sink.send(frame).await {
        tracing::debug!(%err, "cannot write to client");
    }
}

/// The state of an established connection.
struct Connection {
    shared: Arc<Shared>,
    sink: Sink,
    /// The environment hooks of this connection run with unless a request brings its own.
    env: Env,
    /// Cancellation tokens of this connection's in-flight event runs, by request id.
    inflight: Arc<std::sync::Mutex<HashMap<RequestId, CancellationToken>>>,
    /// The connection's run tasks.
    runs: TaskTracker,
    /// Cancelled when the client disconnects or the daemon stops for good.
    cancel: CancellationToken,
    /// The connection's output budget, in KiB: each event run holds its worst-case captured
    /// output from before it starts until its result is written. When a client stops reading,
    /// finished runs cannot give theirs back, the budget runs out, and the connection stops
    /// reading requests: one connection can never pin more than this.
    output_budget: Arc<tokio::sync::Semaphore>,
    /// The cap on in-flight event runs: at the cap, no frame is read until a run ends.
    limit: InflightLimit,
}

/// The output budget of one connection, in KiB (64 MiB).
const OUTPUT_BUDGET_KIB: u32 = 64 * 1024;

impl Connection {
    /// Reads and answers requests until the client disconnects or the daemon stops.
    async fn read_requests(&self, reader: &mut FrameReader) {
        // One wait for the stop, registered once rather than once per request.
        let mut stopping = std::pin::pin!(self.shared.shutdown.cancelled());
        let disconnected = loop {
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
                    let error = ProtocolError::frame_too_large(
                        declared_len,
                        self.shared.config.max_frame_bytes,
                    );
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
            self.runs.close();
            self.runs.wait().await;
            return;
        }
        // The daemon is stopping: in-flight runs finish and send their results; anything new
        // the client asks meanwhile is refused with `shutting_down`.
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

    /// Answers one frame. Returns `false` when the connection must close.
    async fn handle_frame(&self, body: Bytes) -> bool {
        let message = match parse_off_thread_if_large(body).await {
            Ok(message) => message,
            Err(err) => {
                send(&self.sink, &err.to_server_message()).await;
                return !err.code.closes_connection();
            }
        };
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
            other @ (ClientMessage::StreamOpen(_)
            | ClientMessage::Chunk(_)
            | ClientMessage::StreamClose(_)
            | ClientMessage::HookedEvents(_)) => {
                let error = ProtocolError::new(
                    ErrorCode::UnknownType,
                    format!("{} is not served yet", other.type_name()),
                )
                .with_id(other.id().cloned());
                send(&self.sink, &error.to_server_message()).await;
            }
        }
        true
    }

    /// Answers an `event` request: at once when no hook matches, else from a run task.
    async fn event(&self, request: EventRequest) {
        let event = match request.event.parse::<HookEventName>() {
            Ok(event) => event,
            Err(_) => {
                let error = ProtocolError::new(
                    ErrorCode::UnknownEvent,
                    format!(
                        "unknown event {:?}; expected one of {}",
                        request.event,
                        HookEventName::ALL.map(HookEventName::as_str).join(", ")
                    ),
                )
                .with_id(Some(request.id));
                send(&self.sink, &error.to_server_message()).await;
                return;
            }
        };
        // `parse_client_message` has already refused a `cwd` that is not absolute.
        let snapshot = self.shared.registries.get(Path::new(&request.cwd)).await;
        Stats::add(&self.shared.stats.events_served, 1);
        let Some(plan) = snapshot.registry.plan_for_input(event, &request.input) else {
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
        let Some(token) = self.register(&request.id).await else {
            return;
        };

        let env = match &request.env {
            Some(env) => wire_env(env.clone()),
            None => Arc::clone(&self.env),
        };
        let run = Run {
            shared: Arc::clone(&self.shared),
            sink: Arc::clone(&self.sink),
            inflight: Arc::clone(&self.inflight),
            token,
            event,
            env,
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
        let token = {
            let mut inflight = self
                .inflight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if inflight.contains_key(id) {
                None
            } else {
                let token = self.cancel.child_token();
                inflight.insert(id.clone(), token.clone());
                Some(token)
            }
        };
        if token.is_none() {
            let error = ProtocolError::new(
                ErrorCode::DuplicateId,
                format!("request id {id} is already in flight on this connection"),
            )
            .with_id(Some(id.clone()));
            send(&self.sink, &error.to_server_message()).await;
        }
        token
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
        // Subscribed before the acknowledgement, so no change after it can be missed.
        let mut changes = self.shared.registries.subscribe();
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
            loop {
                let change = tokio::select! {
                    _ = token.cancelled() => break,
                    _ = shutdown.cancelled() => break,
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
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
            inflight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&id);
        });
    }

    /// Answers a `cancel` request.
    async fn cancel_run(&self, request: CancelRequest) {
        let token = self
            .inflight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&request.target)
            .cloned();
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
                    "no event request with id {} is in flight on this connection",
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
        let message = convert::list(request.id, request.cwd, &snapshot, &self.shared.last_runs);
        send(&self.sink, &ServerMessage::List(message)).await;
    }
}

/// One event run with hooks to execute, owned by its task.
struct Run {
    shared: Arc<Shared>,
    sink: Sink,
    inflight: Arc<std::sync::Mutex<HashMap<RequestId, CancellationToken>>>,
    token: CancellationToken,
    event: HookEventName,
    env: Env,
    generation: u64,
    /// Gemini CLI's id of the project, for the default plans directory.
    project_id: String,
    /// This run's share of the connection's output budget, given back when it is done.
    _output_permit: tokio::sync::OwnedSemaphorePermit,
}

impl Run {
    /// Runs the plan, streams per-hook records when asked, and sends the aggregate.
    async fn execute(self, request: EventRequest, plan: hookd_core::Plan) {
        let hook_count = plan.hooks.len();
        Stats::add(&self.shared.stats.hooks_pending, hook_count as u64);
        let fire = FireRequest {
            event: self.event,
            input: request.input.clone(),
            base: BaseFields {
                session_id: request.session_id.clone(),
                transcript_path: request.transcript_path.clone(),
                cwd: request.cwd.clone(),
                timestamp: format_timestamp(unix_millis_now()),
            },
            project_dir: request.cwd.clone(),
            plans_dir: request.plans_dir.clone().unwrap_or_else(|| {
                hookd_core::env::default_plans_dir(
                    &self.shared.registries.gemini_home().display().to_string(),
                    &self.project_id,
                    &request.session_id,
                )
            }),
            env: Arc::clone(&self.env),
        };

        // Exactly one record per hook goes through this channel, so a capacity of the plan's
        // length means the runner's callback never has to wait or drop.
        let (records_tx, mut records_rx) = mpsc::channel(hook_count.max(1));
        let stream_hooks = request.stream_hooks;
        let stats = Arc::clone(&self.shared);
        let mut on_result = move |index: usize, result: &hookd_core::HookResult| {
            Stats::sub(&stats.stats.hooks_pending, 1);
            if stream_hooks {
                let _ = records_tx.try_send((index, convert::hook_record(result)));
            }
        };
        let run = async {
            let results = run_plan(
                &plan,
                &fire,
                &self.shared.runner,
                &self.token,
                &mut on_result,
            )
            .await;
            drop(on_result);
            results
        };
        let forward = async {
            while let Some((index, hook)) = records_rx.recv().await {
                let message = ServerMessage::HookResult(hookd_protocol::HookResultMessage {
                    id: request.id.clone(),
                    index: index as u64,
                    hook,
                });
                send(&self.sink, &message).await;
            }
        };
        let (results, ()) = tokio::join!(run, forward);

        self.shared.last_runs.record(&plan.hooks, &results);
        let aggregate = hookd_core::aggregate::aggregate(self.event, &results, &request.input);
        crate::audit::record_run(&self.shared, &fire, self.generation, &results, &aggregate);
        let message = convert::result(request.id.clone(), &aggregate, &results, self.generation);
        let message = fit_in_frame(message, self.shared.config.max_frame_bytes);
        self.inflight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&request.id);
        send(&self.sink, &message).await;
    }
}

/// Makes a `result` fit in one frame of at most `max_frame_bytes`.
///
/// A result repeats each hook's captured text (its `stdout`, its output, the merged output),
/// and JSON escaping can multiply it, so a few hooks at their output caps can exceed the
/// frame limit the client reads with. The captured `stdout`/`stderr` of the records are cut
/// shorter and shorter, each cut said in the text; if even that does not fit, the request is
/// answered with an `internal` error saying how large the result was.
fn fit_in_frame(message: ServerMessage, max_frame_bytes: usize) -> ServerMessage {
    let size = hookd_protocol::encode(&message).len();
    if size <= max_frame_bytes {
        return message;
    }
    let ServerMessage::Result(mut result) = message else {
        return message;
    };
    for keep in [64 * 1024, 4 * 1024, 0] {
        for hook in &mut result.result.hooks {
            truncate_text(&mut hook.stdout, keep);
            truncate_text(&mut hook.stderr, keep);
        }
        let candidate = ServerMessage::Result(result.clone());
        if hookd_protocol::encode(&candidate).len() <= max_frame_bytes {
            return candidate;
        }
    }
    ProtocolError::new(
        ErrorCode::Internal,
        format!(
            "the result of this event is {size} bytes, over the {max_frame_bytes}-byte frame \
             limit, even with the hooks' captured output cut; its hooks' outputs are too large"
        ),
    )
    .with_id(Some(result.id))
    .to_server_message()
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
fn unix_millis_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}
