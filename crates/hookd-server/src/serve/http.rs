//! The loopback HTTP listener: hosts whose hooks can POST their input JSON to a URL (Claude
//! Code's and Copilot CLI's `"type": "http"` hooks) reach the daemon without starting a
//! process per call.
//!
//! An HTTP request is a relayed event, nothing else: the head is checked before the body is
//! read (`crate::httpguard`: secret, `Origin`, `Host`, method, path, declared size), the body
//! is read within a deadline, translated with the host's dialect exactly as
//! `hookd-relay --dialect <host>` translates its stdin, and sent as an `event` request over a
//! connection of the daemon's own protocol that this module holds in-process (a Unix socket
//! pair served by `crate::connection`). So the event runs the same engine path with the same
//! limits, logs, audit lines and stats as a relay's; the relay's answer for the host
//! (`relay_answer`) becomes the response's JSON (`crate::httpanswer`).
//!
//! The project root comes from the session's relayed `SessionStart` (Copilot CLI's
//! `sessionStart`), else, for Claude Code, from the transcript path (`crate::httproots`);
//! never from the payload's `cwd`, which the model moves in Claude Code and which in Copilot
//! CLI is the folder the session started in, not its repository's root. A Copilot CLI session
//! the daemon has no root for is answered 503 (Copilot denies a `preToolUse` it gets no answer
//! for).
//!
//! Connections are bounded: a connection with no request in progress is closed after
//! [`FIRST_REQUEST_TIMEOUT`] if it never sent a whole request, after [`IDLE_TIMEOUT`] between
//! requests; at [`crate::config::ServerConfig::http_max_connections`] a new connection closes
//! an idle one, first those that never had a request served (a connection without the secret
//! is never busy and never served), so idle connections cannot lock out the user's own
//! requests, nor push the user's keep-alive connections out. A request's body must arrive
//! within [`BODY_TIMEOUT`].

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use hookd_core::HookEventName;
use hookd_core::dialect::{Dialect, DialectError, RelayInput};
use hookd_protocol::{
    ClientHello, ClientMessage, EventRequest, EventResult, Frame, FrameCodec, ServerMessage,
};
use hookd_settings::httpsecret::HttpSecret;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Map, Value};
use tokio::net::{TcpListener, TcpSocket, TcpStream, UnixStream};
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::httpanswer::http_body;
use crate::httpguard::{Head, HttpCounters, Refusal, admit};
use crate::httproots::{SessionRoot, root_from_transcript};
use crate::peeruid::{PeerOwner, peer_owner};
use crate::shared::Shared;

/// How long a new connection may take to send its first whole request head.
pub(crate) const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection may stay open between requests (keep-alive).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The whole answer to another user's connection, written once without waiting.
const PEER_REFUSED: &[u8] = b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\
Content-Length: 39\r\nConnection: close\r\n\r\nconnections of another user are refused";

/// How long a request's body may take to arrive once its head is accepted.
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of a request head hyper buffers (larger heads are refused with 431).
pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;

/// The accept queue's length asked for when hookd binds the listener itself.
const LISTEN_BACKLOG: u32 = 4096;

/// A bound loopback TCP listener and the secret its requests must carry.
pub struct HttpListener {
    listener: TcpListener,
    address: SocketAddr,
    secret: HttpSecret,
}

/// Why an HTTP listener cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HttpListenError {
    /// The address is not a loopback address: other machines must never reach hookd.
    #[error("{0} is not a loopback address (use 127.0.0.1 or [::1])")]
    NotLoopback(SocketAddr),
    /// Binding or adopting the socket failed.
    #[error("cannot listen on {address}: {source}")]
    Io {
        /// The address.
        address: String,
        /// What the system said.
        source: std::io::Error,
    },
}

impl HttpListener {
    /// Binds `address`, which must be a loopback address (port 0 picks a free port).
    pub async fn bind(address: SocketAddr, secret: HttpSecret) -> Result<Self, HttpListenError> {
        if !address.ip().is_loopback() {
            return Err(HttpListenError::NotLoopback(address));
        }
        let io = |source| HttpListenError::Io {
            address: address.to_string(),
            source,
        };
        let socket = if address.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(io)?;
        // A restarted daemon must get its port back at once: the connections the previous
        // one closed (keep-alive connections it ends at a stop) leave TIME_WAIT entries on
        // it for a minute. This lets the bind past them only; a second listener on the same
        // port is still refused.
        socket.set_reuseaddr(true).map_err(io)?;
        socket.bind(address).map_err(io)?;
        // A long accept queue (the kernel caps it at `net.core.somaxconn`), as systemd's
        // socket units have: a burst of connections from another local user must not
        // overflow it, or the user's own connection attempt is dropped and retried a second
        // later.
        let listener = socket.listen(LISTEN_BACKLOG).map_err(io)?;
        Self::adopt(listener, secret)
    }

    /// Adopts a listening socket a service manager passed (non-blocking already); refused
    /// unless it is bound to a loopback address.
    pub fn from_std(
        listener: std::net::TcpListener,
        secret: HttpSecret,
    ) -> Result<Self, HttpListenError> {
        let io = |source| HttpListenError::Io {
            address: "the socket passed by the service manager".to_owned(),
            source,
        };
        listener.set_nonblocking(true).map_err(io)?;
        Self::adopt(TcpListener::from_std(listener).map_err(io)?, secret)
    }

    fn adopt(listener: TcpListener, secret: HttpSecret) -> Result<Self, HttpListenError> {
        let address = listener
            .local_addr()
            .map_err(|source| HttpListenError::Io {
                address: "the listener".to_owned(),
                source,
            })?;
        if !address.ip().is_loopback() {
            return Err(HttpListenError::NotLoopback(address));
        }
        Ok(HttpListener {
            listener,
            address,
            secret,
        })
    }

    /// The address it listens on (with the port the system picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }
}

/// One open connection as the accept loop sees it, for closing the longest idle one.
struct Slot {
    /// Set while a request (head accepted) is being answered.
    busy: Arc<AtomicBool>,
    /// Milliseconds since the listener started when the connection last became idle.
    idle_since: Arc<AtomicU64>,
    /// Requests whose head the connection has had accepted (a connection that was refused
    /// is closed, so one still open with requests served belongs to someone with the secret).
    served: Arc<AtomicU64>,
    /// Cancelled to close the connection.
    close: CancellationToken,
}

/// The open connections, by the order they were accepted.
#[derive(Default)]
struct Slots {
    open: Mutex<BTreeMap<u64, Slot>>,
}

impl Slots {
    /// Closes one idle connection: the one idle the longest among those that never had a
    /// request served (anyone's), else among the rest (the user's keep-alive connections);
    /// `false` when every one is busy.
    fn evict_one(&self) -> bool {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let idlest = open
            .values()
            .filter(|slot| !slot.busy.load(Ordering::Relaxed) && !slot.close.is_cancelled())
            .min_by_key(|slot| {
                (
                    slot.served.load(Ordering::Relaxed) > 0,
                    slot.idle_since.load(Ordering::Relaxed),
                )
            });
        match idlest {
            Some(slot) => {
                slot.close.cancel();
                true
            }
            None => false,
        }
    }

    fn len(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|slot| !slot.close.is_cancelled())
            .count()
    }
}

/// What every connection's requests share.
struct Listening {
    shared: Arc<Shared>,
    secret: HttpSecret,
    port: u16,
    counters: Arc<HttpCounters>,
    started: Instant,
    /// Runs the in-process protocol connections, so a graceful stop waits for them.
    tracker: TaskTracker,
}

/// Starts serving `http` in a task of its own until `shared.shutdown` fires; its connections
/// run on `tracker` (the daemon's connections), so the stop waits for them as for the
/// socket's. Returns the listener's task.
pub(crate) fn start(
    http: HttpListener,
    shared: Arc<Shared>,
    counters: Arc<HttpCounters>,
    tracker: TaskTracker,
) -> tokio::task::JoinHandle<()> {
    let HttpListener {
        listener,
        address,
        secret,
    } = http;
    tracing::info!(address = %address, "hookd listening for HTTP hooks on http://{address}");
    let max = shared.config.http_max_connections.max(1);
    let listening = Arc::new(Listening {
        shared,
        secret,
        port: address.port(),
        counters,
        started: Instant::now(),
        tracker: tracker.clone(),
    });
    let slots = Arc::new(Slots::default());
    let own_uid = nix::unistd::geteuid().as_raw();
    tokio::spawn(async move {
        let mut next_id = 0u64;
        let mut said_unknown = false;
        let stop = listening.shared.shutdown.clone();
        loop {
            let (stream, peer) = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        tracing::warn!(%err, "HTTP accept failed; retrying shortly");
                        tokio::select! {
                            _ = stop.cancelled() => break,
                            _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                        }
                    }
                }
            };
            // Another user's connection is closed before it takes a slot (it could otherwise
            // evict the user's own idle connections) and before a byte of it is read.
            match stream.local_addr().map(|local| peer_owner(local, peer)) {
                Ok(PeerOwner::Uid(uid)) if uid != own_uid => {
                    listening.counters.refuse(Refusal::Peer);
                    tracing::warn!(uid, %peer, "HTTP connection from another user refused");
                    let _ = stream.try_write(PEER_REFUSED);
                    drop(stream);
                    continue;
                }
                Ok(PeerOwner::Uid(_)) => {}
                Ok(PeerOwner::Unknown(why)) => {
                    if !said_unknown {
                        said_unknown = true;
                        tracing::warn!(
                            why,
                            "cannot tell which user owns an HTTP connection; the secret alone \
                             decides who is answered"
                        );
                    }
                }
                Err(err) => {
                    tracing::debug!(%err, "HTTP connection gone before its owner was looked up");
                    continue;
                }
            }
            if slots.len() >= max && !slots.evict_one() {
                // Every connection is answering a request: this one waits for nothing.
                listening.counters.refuse(Refusal::Evicted);
                drop(stream);
                continue;
            }
            let _ = stream.set_nodelay(true);
            next_id += 1;
            let id = next_id;
            let slot = Slot {
                busy: Arc::new(AtomicBool::new(false)),
                idle_since: Arc::new(AtomicU64::new(listening.millis())),
                served: Arc::new(AtomicU64::new(0)),
                // Its own token, not the stop's child: a stop answers the request in progress
                // (`graceful_shutdown`), an eviction closes an idle connection at once.
                close: CancellationToken::new(),
            };
            let connection = Connection {
                listening: Arc::clone(&listening),
                busy: Arc::clone(&slot.busy),
                idle_since: Arc::clone(&slot.idle_since),
                backend: tokio::sync::Mutex::new(None),
                next_request: AtomicU64::new(0),
                served: Arc::clone(&slot.served),
            };
            let close = slot.close.clone();
            slots
                .open
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id, slot);
            let slots = Arc::clone(&slots);
            tracker.spawn(async move {
                serve_connection(stream, Arc::new(connection), close).await;
                slots
                    .open
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
            });
        }
        tracing::debug!("HTTP listener closed");
    })
}

impl Listening {
    fn millis(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// One HTTP connection.
struct Connection {
    listening: Arc<Listening>,
    busy: Arc<AtomicBool>,
    idle_since: Arc<AtomicU64>,
    /// The in-process protocol connection its events go through, opened on first use.
    backend: tokio::sync::Mutex<Option<Framed<UnixStream, FrameCodec>>>,
    next_request: AtomicU64,
    /// Requests whose head was accepted (shared with its [`Slot`]).
    served: Arc<AtomicU64>,
}

/// Marks the connection busy while a request is answered.
struct Busy<'a>(&'a Connection);

impl<'a> Busy<'a> {
    fn enter(connection: &'a Connection) -> Self {
        connection.busy.store(true, Ordering::Relaxed);
        Busy(connection)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0
            .idle_since
            .store(self.0.listening.millis(), Ordering::Relaxed);
        self.0.busy.store(false, Ordering::Relaxed);
    }
}

async fn serve_connection(
    stream: TcpStream,
    connection: Arc<Connection>,
    close: CancellationToken,
) {
    let counters = Arc::clone(&connection.listening.counters);
    counters.connections.fetch_add(1, Ordering::Relaxed);
    let service = {
        let connection = Arc::clone(&connection);
        hyper::service::service_fn(move |request| {
            let connection = Arc::clone(&connection);
            async move { Ok::<_, Infallible>(connection.handle(request).await) }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(FIRST_REQUEST_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(true);
    let served = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(served);
    let mut stopping = false;
    let stop = connection.listening.shared.shutdown.clone();
    loop {
        tokio::select! {
            result = &mut served => {
                if let Err(err) = result {
                    // hyper's own head deadline (the same length as the first-request one
                    // below) can fire first: the same refusal, counted the same way.
                    if err.is_timeout() {
                        counters.refuse(Refusal::Idle);
                    }
                    tracing::debug!(%err, "HTTP connection ended");
                }
                break;
            }
            _ = close.cancelled() => {
                counters.refuse(Refusal::Evicted);
                break;
            }
            _ = stop.cancelled(), if !stopping => {
                // Answers the request in progress, if any, then closes.
                served.as_mut().graceful_shutdown();
                stopping = true;
            }
            // One wake-up per idle deadline (re-armed when a request came and went meanwhile),
            // not a poll: a thousand idle connections cost a thousand timers, no work.
            _ = tokio::time::sleep(connection.until_idle_deadline()) => {
                if connection.until_idle_deadline().is_zero() {
                    counters.refuse(Refusal::Idle);
                    break;
                }
            }
        }
    }
    counters.connections.fetch_sub(1, Ordering::Relaxed);
}

/// A response with `status` and a short text body; the connection closes after it.
fn refusal(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn status_of(refused: Refusal) -> StatusCode {
    StatusCode::from_u16(refused.status()).unwrap_or(StatusCode::BAD_REQUEST)
}

impl Connection {
    /// How long until the connection has been idle too long: after [`FIRST_REQUEST_TIMEOUT`]
    /// without a whole request, after [`IDLE_TIMEOUT`] between requests. While a request is
    /// being answered, a full period (it is looked at again then).
    fn until_idle_deadline(&self) -> Duration {
        let limit = if self.served.load(Ordering::Relaxed) == 0 {
            FIRST_REQUEST_TIMEOUT
        } else {
            IDLE_TIMEOUT
        };
        if self.busy.load(Ordering::Relaxed) {
            return limit;
        }
        let idle = self
            .listening
            .millis()
            .saturating_sub(self.idle_since.load(Ordering::Relaxed));
        limit.saturating_sub(Duration::from_millis(idle))
    }

    /// Answers one request.
    async fn handle(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let _busy = Busy::enter(self);
        self.served.fetch_add(1, Ordering::Relaxed);
        let listening = &self.listening;
        let headers = request.headers();
        // A header sent twice is ambiguous: it is refused as if wrong.
        let one = |name: header::HeaderName| {
            let mut values = headers.get_all(name).iter();
            let first = values.next()?;
            Some(match values.next() {
                Some(_) => &b"\0"[..],
                None => first.as_bytes(),
            })
        };
        let path = request
            .uri()
            .path_and_query()
            .map_or("", |path| path.as_str());
        let head = Head {
            method: request.method().as_str(),
            path,
            host: one(header::HOST),
            origin: one(header::ORIGIN),
            authorization: one(header::AUTHORIZATION),
            content_length: one(header::CONTENT_LENGTH),
        };
        let max_body = listening.shared.config.max_frame_bytes;
        let admitted = match admit(&head, &listening.secret, listening.port, max_body) {
            Ok(admitted) => admitted,
            Err(refused) => return self.refuse(refused, &head),
        };
        let Some(dialect) = Dialect::parse(admitted.host) else {
            return self.refuse(Refusal::Path, &head);
        };
        let host_event = admitted.event.to_owned();
        let length = admitted.length;
        let body = Limited::new(request.into_body(), length);
        let body = match tokio::time::timeout(BODY_TIMEOUT, body.collect()).await {
            Err(_elapsed) => {
                listening.counters.refuse(Refusal::SlowBody);
                return refusal(
                    StatusCode::REQUEST_TIMEOUT,
                    "the body did not arrive in time",
                );
            }
            Ok(Err(err)) => {
                listening.counters.refuse(Refusal::TooLarge);
                return refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("the body could not be read within its declared size: {err}"),
                );
            }
            Ok(Ok(body)) => body.to_bytes(),
        };
        // Without serde_json's recursion limit, as the relay parses its stdin: a model-shaped
        // tool input may nest deeper than 128, and the daemon's threads have the stack for
        // `hookd_protocol::MAX_JSON_DEPTH` levels (deeper is refused).
        let payload = match hookd_protocol::from_slice_deep::<Value>(&body) {
            Ok(Value::Object(payload)) => payload,
            _ => {
                listening.counters.refuse(Refusal::BadBody);
                return refusal(StatusCode::BAD_REQUEST, "the body is not a JSON object");
            }
        };
        if names_its_event(dialect)
            && payload.get("hook_event_name").and_then(Value::as_str) != Some(&host_event)
        {
            listening.counters.refuse(Refusal::BadBody);
            return refusal(
                StatusCode::BAD_REQUEST,
                "the body's hook_event_name is not the event the path names",
            );
        }
        match self.relay(dialect, &host_event, payload).await {
            Ok(json) => {
                listening.counters.requests.fetch_add(1, Ordering::Relaxed);
                let mut response = Response::new(Full::new(Bytes::from(json)));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
            Err(Failure::Refused(refused, text)) => {
                listening.counters.refuse(refused);
                refusal(status_of(refused), &text)
            }
            Err(Failure::Unavailable(text)) => {
                tracing::warn!(
                    host = dialect.as_str(),
                    event = %host_event,
                    "HTTP hook not answered: {text}"
                );
                refusal(StatusCode::SERVICE_UNAVAILABLE, &text)
            }
        }
    }

    fn refuse(&self, refused: Refusal, head: &Head<'_>) -> Response<Full<Bytes>> {
        self.listening.counters.refuse(refused);
        tracing::debug!(
            reason = refused.as_str(),
            method = head.method,
            path = head.path,
            "HTTP request refused"
        );
        let text = match refused {
            Refusal::Secret => "missing or wrong Authorization: Bearer secret",
            Refusal::Origin => "requests with an Origin header are refused",
            Refusal::Host => "the Host header must name a loopback address at this port",
            Refusal::Method => "only POST is served",
            Refusal::Path => "the path must be /v1/hooks/{host}/{Event} of a known host",
            Refusal::TooLarge => "the declared body is larger than the daemon accepts",
            Refusal::NoLength => "a Content-Length header is required",
            _ => "refused",
        };
        let mut response = refusal(status_of(refused), text);
        if refused == Refusal::Method {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        response
    }

    /// Runs the payload as `hookd-relay --dialect <dialect> <host_event>` would send it, and
    /// returns the host's answer as JSON text.
    async fn relay(
        &self,
        dialect: Dialect,
        host_event: &str,
        payload: Map<String, Value>,
    ) -> Result<String, Failure> {
        let relayed =
            dialect
                .relay()
                .relay_input(host_event, payload)
                .map_err(|err| match err {
                    DialectError::UnknownEvent { .. } => Failure::Refused(
                        Refusal::Path,
                        format!("{host_event:?} is not a {} event", dialect.product()),
                    ),
                    other => Failure::Refused(Refusal::BadBody, other.to_string()),
                })?;
        // Read from the translated payload, which names them as every host's relay does
        // (Copilot CLI posts `sessionId`, `transcriptPath`).
        let text = |key: &str| {
            relayed
                .input
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let session_id = text("session_id");
        let transcript_path = text("transcript_path");
        let cwd = text("cwd");
        let roots = &self.listening.shared.session_roots;
        let root = roots.get(dialect.as_str(), &session_id).or_else(|| {
            (dialect == Dialect::CLAUDE)
                .then(|| root_from_transcript(&transcript_path, &cwd))
                .flatten()
                .map(|project_dir| SessionRoot {
                    project_dir,
                    env: None,
                })
        });
        let Some(root) = root else {
            return Err(Failure::Unavailable(unknown_session(dialect, &session_id)));
        };
        let cwd = if std::path::Path::new(&cwd).is_absolute() {
            cwd
        } else {
            root.project_dir.clone()
        };
        let input = relayed.event_input();
        let id = self.next_request.fetch_add(1, Ordering::Relaxed) + 1;
        let mut request = EventRequest::new(id, relayed.event.as_str(), cwd);
        request.input = input;
        request.session_id = session_id;
        request.transcript_path = transcript_path;
        request.env = root.env.as_deref().cloned();
        request.project_dir = Some(root.project_dir);
        request.relayed_by = Some(dialect.as_str().to_owned());
        // As the relay does: the host does not wait for SessionEnd's hooks.
        request.detach = relayed.event == HookEventName::SessionEnd;
        let result = self.exchange(request).await?;
        Ok(answer(dialect, &relayed, &result))
    }

    /// Sends `request` over the connection's in-process protocol connection (opening it
    /// first) and waits for its result.
    async fn exchange(&self, request: EventRequest) -> Result<EventResult, Failure> {
        let mut guard = self.backend.lock().await;
        // Taken out for the exchange: if this request is dropped half way (the HTTP client
        // went away), the connection goes with it and its run is cancelled, as a relay's is
        // when its host kills it; the next request opens a new one.
        let mut backend = match guard.take() {
            Some(backend) => backend,
            None => self.open_backend().await?,
        };
        let id = request.id.clone();
        let frame = hookd_protocol::encode(&ClientMessage::Event(request));
        backend
            .send(frame)
            .await
            .map_err(|err| Failure::Unavailable(format!("the daemon's engine: {err}")))?;
        loop {
            let frame = match backend.next().await {
                Some(Ok(Frame::Data(body))) => body,
                Some(Ok(Frame::TooLarge { .. })) => {
                    return Err(Failure::Unavailable(
                        "the daemon's answer was too large".to_owned(),
                    ));
                }
                Some(Err(err)) => {
                    return Err(Failure::Unavailable(format!("the daemon's engine: {err}")));
                }
                None => {
                    return Err(Failure::Unavailable("the daemon is stopping".to_owned()));
                }
            };
            match hookd_protocol::parse_server_message(&frame) {
                Ok(ServerMessage::Result(result)) if result.id == id => {
                    *guard = Some(backend);
                    return Ok(result.result);
                }
                Ok(ServerMessage::Error(error)) if error.id.as_ref() == Some(&id) => {
                    return Err(Failure::Unavailable(format!(
                        "the daemon refused the event: {}",
                        error.message
                    )));
                }
                Ok(_) => {}
                Err(err) => {
                    return Err(Failure::Unavailable(format!(
                        "the daemon's answer is unreadable: {err}"
                    )));
                }
            }
        }
    }

    /// Opens an in-process protocol connection served by `crate::connection` and says hello.
    async fn open_backend(&self) -> Result<Framed<UnixStream, FrameCodec>, Failure> {
        let shared = &self.listening.shared;
        let (ours, theirs) = UnixStream::pair()
            .map_err(|err| Failure::Unavailable(format!("cannot open a socket pair: {err}")))?;
        let served = Arc::clone(shared);
        self.listening
            .tracker
            .spawn(crate::connection::serve(theirs, served));
        let codec = FrameCodec::with_max_frame_bytes(
            shared
                .config
                .max_frame_bytes
                .max(hookd_protocol::DEFAULT_MAX_FRAME_BYTES),
        );
        let mut backend = Framed::new(ours, codec);
        let hello = ClientMessage::Hello(ClientHello::new(
            format!("hookd-http/{}", env!("CARGO_PKG_VERSION")),
            None,
        ));
        let unavailable =
            |what: String| Failure::Unavailable(format!("the daemon's engine: {what}"));
        backend
            .send(hookd_protocol::encode(&hello))
            .await
            .map_err(|err| unavailable(err.to_string()))?;
        match backend.next().await {
            Some(Ok(Frame::Data(body))) => match hookd_protocol::parse_server_message(&body) {
                Ok(ServerMessage::Hello(_)) => Ok(backend),
                Ok(other) => Err(unavailable(format!("answered the hello with {other:?}"))),
                Err(err) => Err(unavailable(err.to_string())),
            },
            _ => Err(unavailable("closed before its hello".to_owned())),
        }
    }
}

/// Whether a host's payloads name their event (`hook_event_name`), which must then be the
/// event the path names. Copilot CLI's name none: like the relay's argument, the path alone
/// says which event it is.
fn names_its_event(dialect: Dialect) -> bool {
    dialect != Dialect::COPILOT
}

/// Why the project of a session is unknown, and what to do about it. Copilot CLI's payloads
/// carry nothing fixed that names the project (`COPILOT_PROJECT_DIR` is the repository's
/// root, the payload's `cwd` the folder the session started in, no transcript path on tool
/// events): its session is known from its relayed events only (`sessionStart`, or the first
/// relayed event of a session begun before this daemon started); until then it is refused
/// (503), on which Copilot CLI goes on everywhere but `preToolUse`, where it denies.
fn unknown_session(dialect: Dialect, session_id: &str) -> String {
    if dialect == Dialect::CLAUDE {
        format!(
            "the project of session {session_id:?} is unknown (hookd saw no SessionStart of \
             it, and its transcript path names no directory above cwd)"
        )
    } else {
        format!(
            "the project of {} session {session_id:?} is unknown: hookd has seen no relayed \
             event of it (the session began before this daemon started); its next relayed \
             event, or a new session, tells hookd",
            dialect.product()
        )
    }
}

/// Why a request got no decision.
enum Failure {
    /// The request itself is wrong (the status says how).
    Refused(Refusal, String),
    /// The daemon could not decide (503: the host's `onFailure` applies).
    Unavailable(String),
}

/// The host's answer for a result, as JSON text.
fn answer(dialect: Dialect, relayed: &RelayInput, result: &EventResult) -> String {
    let answer =
        dialect
            .relay()
            .relay_answer(relayed, result.final_output.as_ref(), &result.errors);
    http_body(&answer).to_string()
}

#[cfg(test)]
mod tests {
    use super::PEER_REFUSED;

    #[test]
    fn the_answer_to_another_users_connection_is_well_formed() {
        let text = std::str::from_utf8(PEER_REFUSED).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len());
    }
}
