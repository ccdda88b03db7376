//! An async client for hookd, and a small blocking one ([`blocking`]) for callers that
//! cannot afford a runtime.
//!
//! [`Client::connect`] opens the daemon's Unix socket and does the `hello` handshake. After
//! that, any number of tasks may send requests through the same [`Client`] (it is cheap to
//! clone): each request gets a fresh id, and a background reader routes every answer to its
//! request, so answers may arrive in any order. Every channel is bounded.
//!
//! When the connection is lost, every pending request fails with
//! [`ClientError::Disconnected`]. Dropping the last clone of a `Client` closes the connection.
//!
//! AfterModel chunks go through a [`Stream`] ([`Client::open_stream`]): the plan and the
//! `llm_request` are settled once, chunks are pipelined, results come back one per chunk in
//! order. [`Client::hooked_events`] and [`Client::watch_hooked_events`] tell which events have
//! hooks at all, so an agent can skip sending the others.
//!
//! ```no_run
//! # async fn example(client: hookd_client::Client) -> hookd_client::Result<()> {
//! use hookd_client::StreamRequest;
//! use serde_json::json;
//!
//! let mut events = client.watch_hooked_events("/srv/proj").await?;
//! if events.is_hooked("AfterModel") {
//!     let request = StreamRequest::new("/srv/proj").with_llm_request(json!({"model": "m"}));
//!     let mut stream = client.open_stream(request).await?;
//!     for text in ["Hello, ", "world"] {
//!         let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [text]}}]});
//!         stream.send_chunk(chunk.as_object().cloned().unwrap_or_default()).await?;
//!     }
//!     while let Some(result) = stream.next_result().await? {
//!         println!("chunk {}: {:?}", result.seq, result.content);
//!     }
//!     let end = stream.close().await?;
//!     print!("{}", end.flush);
//! }
//! # Ok(())
//! # }
//! ```

pub mod blocking;
mod connection;
mod error;
mod event;
mod stream;
mod subscription;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hookd_protocol::{
    CancelRequest, ClientHello, ClientMessage, DisableAllRequest, DisableRequest, EnableAllRequest,
    EnableRequest, Frame, FrameCodec, ListRequest, ListResponse, PROTOCOL_VERSION, PingRequest,
    ReloadRequest, RequestId, ServerHello, ServerMessage, StatusRequest, StatusResponse,
    SubscribeRequest, TrustListRequest, TrustPreviewRequest, TrustRequest, UntrustRequest, encode,
    parse_server_message,
};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedReadHalf;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::codec::{FramedRead, FramedWrite};

pub use error::{ClientError, Result};
pub use event::{EventRequest, EventResponse, EventStream, EventStreamItem};
pub use hookd_protocol::{ChunkResultMessage, HookedEventsMessage};
pub use hookd_protocol::{EditedMessage, RegistryChangedMessage, RegistryStatus, Scope};
pub use hookd_protocol::{
    TrustListMessage, TrustPreviewMessage, TrustedHook, TrustedProject, TrustedScript,
};
pub use hookd_protocol::{default_socket_path, resolve_socket_path};
pub use stream::{HookedEventsWatch, STREAM_WINDOW, Stream, StreamEnd, StreamRequest};
pub use subscription::Subscription;

use connection::{Pending, Route};

/// How many frames may wait for the writer task before senders wait.
const OUTGOING_CAPACITY: usize = 64;

/// How many answers of one streaming event may wait for its consumer.
const STREAM_CAPACITY: usize = 32;

/// How many registry changes may wait for a subscription's consumer before newer ones are
/// dropped.
const SUBSCRIPTION_CAPACITY: usize = 64;

/// How to connect.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectOptions {
    /// The client's name and version for the daemon's logs, such as `hookctl/0.1.0`.
    pub client_name: String,
    /// The environment hooks of this connection run with, unless a request carries its own;
    /// `None` lets them run with the daemon's.
    pub env: Option<hookd_protocol::WireEnv>,
    /// How long to wait for the daemon's `hello`.
    pub handshake_timeout: Duration,
}

impl ConnectOptions {
    /// Options with this client name, no environment and the default handshake timeout.
    pub fn new(client_name: impl Into<String>) -> Self {
        ConnectOptions {
            client_name: client_name.into(),
            env: None,
            handshake_timeout: hookd_protocol::DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}

impl Default for ConnectOptions {
    /// Names the client `hookd-client/<version>`.
    fn default() -> Self {
        ConnectOptions::new(concat!("hookd-client/", env!("CARGO_PKG_VERSION")))
    }
}

/// A connection to the daemon. Clones share the connection.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

/// The state every clone shares.
struct Shared {
    /// Frames for the writer task.
    outgoing: mpsc::Sender<Bytes>,
    /// Requests waiting for answers.
    pending: Pending,
    /// The next request id; ids are never reused on a connection.
    next_id: AtomicU64,
    /// The daemon's handshake answer.
    server: ServerHello,
    /// The largest frame the daemon accepts.
    max_frame_bytes: usize,
    /// The reader task, stopped when the last clone goes.
    reader: JoinHandle<()>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The writer stops by itself once `outgoing` is dropped, after flushing what is
        // queued; the reader would wait for the daemon forever, so it is stopped here.
        self.reader.abort();
        self.pending.close();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.shared.server)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to the daemon's socket at `path` and does the handshake.
    ///
    /// Before anything is sent, the socket is checked as `docs/protocol.md` requires: its
    /// directory and the socket itself belong to this user and nobody else can write to the
    /// directory (no symbolic links), and the process listening on it runs as this user
    /// (`SO_PEERCRED`). A socket that fails is [`ClientError::UntrustedSocket`]: nothing, not
    /// even the `hello` with its environment, reaches it.
    ///
    /// Must be called within a tokio runtime: it starts the connection's tasks.
    pub async fn connect(path: impl AsRef<Path>, options: ConnectOptions) -> Result<Client> {
        let path = path.as_ref();
        let connect_error = |source| ClientError::Connect {
            path: path.to_path_buf(),
            source,
        };
        match hookd_protocol::verify_socket_path(path) {
            Ok(()) => {}
            // A missing socket is the usual "no daemon": reported as the connect error it is.
            Err(hookd_protocol::SocketTrustError::Missing { .. }) => {
                return Err(connect_error(std::io::Error::from(
                    std::io::ErrorKind::NotFound,
                )));
            }
            Err(error) => return Err(ClientError::UntrustedSocket(error)),
        }
        let stream = UnixStream::connect(path).await.map_err(connect_error)?;
        hookd_protocol::verify_peer(&stream).map_err(ClientError::UntrustedSocket)?;
        let (read_half, write_half) = stream.into_split();
        let mut reader = FramedRead::new(read_half, FrameCodec::new());
        let mut writer = FramedWrite::new(write_half, FrameCodec::new());

        let hello = ClientMessage::Hello(ClientHello::new(options.client_name, options.env));
        writer.send(encode(&hello)).await?;
        let server = tokio::time::timeout(options.handshake_timeout, read_hello(&mut reader))
            .await
            .map_err(|_| ClientError::HandshakeTimeout {
                timeout: options.handshake_timeout,
            })??;

        // The daemon's limit applies both ways from now on; the codec clamps it to what the
        // length prefix can express.
        let max_frame_bytes = usize::try_from(server.max_frame_bytes).unwrap_or(usize::MAX);
        reader.decoder_mut().set_max_frame_bytes(max_frame_bytes);
        writer.encoder_mut().set_max_frame_bytes(max_frame_bytes);
        let max_frame_bytes = writer.encoder().max_frame_bytes();

        let pending = Pending::default();
        let (outgoing, queued) = mpsc::channel(OUTGOING_CAPACITY);
        tokio::spawn(connection::write_loop(writer, queued, pending.clone()));
        let reader = tokio::spawn(connection::read_loop(reader, pending.clone()));
        Ok(Client {
            shared: Arc::new(Shared {
                outgoing,
                pending,
                next_id: AtomicU64::new(1),
                server,
                max_frame_bytes,
                reader,
            }),
        })
    }

    /// The daemon's handshake answer (version, pid, frame limit).
    pub fn server_hello(&self) -> &ServerHello {
        &self.shared.server
    }

    /// Fires an event and waits for its aggregate result.
    ///
    /// Dropping the returned future before it completes cancels the event on the daemon
    /// (best effort).
    pub async fn event(&self, request: EventRequest) -> Result<EventResponse> {
        let id = self.next_id();
        let message = ClientMessage::Event(request.into_wire(id.clone(), false));
        match self.request(id, message, true).await? {
            ServerMessage::Result(message) => Ok(EventResponse {
                result: message.result,
                generation: message.generation,
            }),
            other => Err(unexpected_or_server_error("event", other)),
        }
    }

    /// Fires an event asking for each hook's result as it finishes.
    ///
    /// Returns once the request is sent; read the answers from the stream.
    pub async fn event_streaming(&self, request: EventRequest) -> Result<EventStream> {
        let id = self.next_id();
        let body = encode(&ClientMessage::Event(request.into_wire(id.clone(), true)));
        let (sender, answers) = mpsc::channel(STREAM_CAPACITY);
        // Registered before sending, so that no answer can arrive before its route.
        self.register(id.clone(), Route::Stream(sender))?;
        if let Err(error) = self.send(body).await {
            self.abandon(&id, false);
            return Err(error);
        }
        // From here the stream owns the registration: dropping it early cancels the event.
        Ok(EventStream::new(self.clone(), id, answers))
    }

    /// Cancels an in-flight event of this connection and waits for the acknowledgement.
    ///
    /// The event's own answer still arrives, with its hooks marked cancelled. An id the daemon
    /// does not know (finished, or never sent) fails with the `unknown_id` server error.
    pub async fn cancel(&self, target: &RequestId) -> Result<()> {
        let id = self.next_id();
        let message = ClientMessage::Cancel(CancelRequest {
            id: id.clone(),
            target: target.clone(),
        });
        match self.request(id, message, false).await? {
            ServerMessage::Cancelled(_) => Ok(()),
            other => Err(unexpected_or_server_error("cancel", other)),
        }
    }

    /// Lists the hooks configured for the project directory `cwd` (absolute).
    pub async fn list(&self, cwd: impl Into<String>) -> Result<ListResponse> {
        let id = self.next_id();
        let message = ClientMessage::List(ListRequest {
            id: id.clone(),
            cwd: cwd.into(),
        });
        match self.request(id, message, false).await? {
            ServerMessage::List(response) => Ok(response),
            other => Err(unexpected_or_server_error("list", other)),
        }
    }

    /// Asks for the daemon's state.
    pub async fn status(&self) -> Result<StatusResponse> {
        let id = self.next_id();
        let message = ClientMessage::Status(StatusRequest { id: id.clone() });
        match self.request(id, message, false).await? {
            ServerMessage::Status(response) => Ok(response),
            other => Err(unexpected_or_server_error("status", other)),
        }
    }

    /// Asks for the daemon's run counters since start (per hook, event, client and relaying
    /// host).
    pub async fn stats(&self) -> Result<hookd_protocol::StatsResponse> {
        let id = self.next_id();
        let message = ClientMessage::Stats(hookd_protocol::StatsRequest { id: id.clone() });
        match self.request(id, message, false).await? {
            ServerMessage::Stats(response) => Ok(response),
            other => Err(unexpected_or_server_error("stats", other)),
        }
    }

    /// One session-state call (`get`, `set`, `delete`, `list`; `docs/state.md`): `key` for
    /// all but `list`, `value` for `set`. A bound or a bad key is a server error
    /// (`limit_reached`, `bad_request`). Without a token, as here, only `get` and `list` are
    /// allowed; writes need [`Client::state_with_token`].
    pub async fn state(
        &self,
        op: hookd_protocol::StateOp,
        session_id: &str,
        key: Option<&str>,
        value: Option<&str>,
    ) -> Result<hookd_protocol::StateResponse> {
        self.state_with_token(op, session_id, key, value, None)
            .await
    }

    /// [`Client::state`] with the state token a hook got in `HOOKD_STATE_TOKEN`, which
    /// `set` and `delete` need: the daemon allows them on the token's own session only.
    pub async fn state_with_token(
        &self,
        op: hookd_protocol::StateOp,
        session_id: &str,
        key: Option<&str>,
        value: Option<&str>,
        token: Option<&str>,
    ) -> Result<hookd_protocol::StateResponse> {
        let id = self.next_id();
        let message = ClientMessage::State(hookd_protocol::StateRequest {
            id: id.clone(),
            op,
            session_id: session_id.to_owned(),
            key: key.map(str::to_owned),
            value: value.map(str::to_owned),
            token: token.map(str::to_owned),
        });
        match self.request(id, message, false).await? {
            ServerMessage::State(response) => Ok(response),
            other => Err(unexpected_or_server_error("state", other)),
        }
    }

    /// Checks that the daemon answers.
    pub async fn ping(&self) -> Result<()> {
        let id = self.next_id();
        let message = ClientMessage::Ping(PingRequest { id: id.clone() });
        match self.request(id, message, false).await? {
            ServerMessage::Pong(_) => Ok(()),
            other => Err(unexpected_or_server_error("ping", other)),
        }
    }

    /// Subscribes to registry changes, of one project directory (`cwd`, absolute) or of
    /// every loaded project, and waits for the daemon's acknowledgement.
    ///
    /// Changes wait in a bounded buffer; when the consumer falls behind, newer changes are
    /// dropped rather than holding up the connection (the daemon likewise drops the oldest
    /// and counts them in `missed`). Dropping the subscription cancels it on the daemon.
    pub async fn subscribe(&self, cwd: Option<String>) -> Result<Subscription> {
        let id = self.next_id();
        let body = encode(&ClientMessage::Subscribe(SubscribeRequest {
            id: id.clone(),
            cwd,
        }));
        let (sender, answers) = mpsc::channel(SUBSCRIPTION_CAPACITY);
        self.register(id.clone(), Route::Lossy(sender))?;
        if let Err(error) = self.send(body).await {
            self.abandon(&id, false);
            return Err(error);
        }
        // From here the subscription owns the registration: dropping it cancels.
        Subscription::new(self.clone(), id, answers)
            .acknowledged()
            .await
    }

    /// Asks the daemon to re-read every settings layer and rebuild every registry; returns
    /// the registries once rebuilt.
    pub async fn reload(&self) -> Result<Vec<RegistryStatus>> {
        let id = self.next_id();
        let message = ClientMessage::Reload(ReloadRequest { id: id.clone() });
        match self.request(id, message, false).await? {
            ServerMessage::Reloaded(reloaded) => Ok(reloaded.registries),
            other => Err(unexpected_or_server_error("reload", other)),
        }
    }

    /// Enables the hook `name`: removes it from the disabled lists of the user settings and
    /// of the project settings of `cwd`.
    pub async fn enable(
        &self,
        cwd: impl Into<String>,
        name: impl Into<String>,
    ) -> Result<EditedMessage> {
        let id = self.next_id();
        let message = ClientMessage::Enable(EnableRequest {
            id: id.clone(),
            cwd: cwd.into(),
            name: name.into(),
        });
        self.edit("enable", id, message).await
    }

    /// Disables the hook `name` by adding it to the disabled list of `scope` (the user
    /// settings, or the project settings of `cwd`).
    pub async fn disable(
        &self,
        cwd: impl Into<String>,
        name: impl Into<String>,
        scope: Scope,
    ) -> Result<EditedMessage> {
        let id = self.next_id();
        let message = ClientMessage::Disable(DisableRequest {
            id: id.clone(),
            cwd: cwd.into(),
            name: name.into(),
            scope,
        });
        self.edit("disable", id, message).await
    }

    /// Enables every hook: empties the disabled lists of the user and project settings.
    pub async fn enable_all(&self, cwd: impl Into<String>) -> Result<EditedMessage> {
        let id = self.next_id();
        let message = ClientMessage::EnableAll(EnableAllRequest {
            id: id.clone(),
            cwd: cwd.into(),
        });
        self.edit("enable_all", id, message).await
    }

    /// Disables every hook configured for `cwd`, in `scope`.
    pub async fn disable_all(&self, cwd: impl Into<String>, scope: Scope) -> Result<EditedMessage> {
        let id = self.next_id();
        let message = ClientMessage::DisableAll(DisableAllRequest {
            id: id.clone(),
            cwd: cwd.into(),
            scope,
        });
        self.edit("disable_all", id, message).await
    }

    /// Asks which project hooks of `cwd` are not trusted: what [`Client::trust`] would trust
    /// (hookd's project-hook trust).
    pub async fn trust_preview(&self, cwd: impl Into<String>) -> Result<TrustPreviewMessage> {
        let id = self.next_id();
        let message = ClientMessage::TrustPreview(TrustPreviewRequest {
            id: id.clone(),
            cwd: cwd.into(),
        });
        match self.request(id, message, false).await? {
            ServerMessage::TrustPreview(preview) => Ok(preview),
            other => Err(unexpected_or_server_error("trust_preview", other)),
        }
    }

    /// Trusts `hooks` of `cwd`, normally a preview's `untrusted` list as shown to the user;
    /// the daemon stores only those still current.
    pub async fn trust(
        &self,
        cwd: impl Into<String>,
        hooks: Vec<TrustedHook>,
    ) -> Result<EditedMessage> {
        self.trust_request(cwd.into(), hooks, false).await
    }

    /// [`Client::trust`] that also trusts hooks whose run-time files cannot all be
    /// verified (their `uncovered` is not empty), which `trust` skips.
    pub async fn trust_anyway(
        &self,
        cwd: impl Into<String>,
        hooks: Vec<TrustedHook>,
    ) -> Result<EditedMessage> {
        self.trust_request(cwd.into(), hooks, true).await
    }

    async fn trust_request(
        &self,
        cwd: String,
        hooks: Vec<TrustedHook>,
        anyway: bool,
    ) -> Result<EditedMessage> {
        let id = self.next_id();
        let message = ClientMessage::Trust(TrustRequest {
            id: id.clone(),
            cwd,
            hooks,
            anyway,
        });
        self.edit("trust", id, message).await
    }

    /// Forgets every trusted hook of `cwd`.
    pub async fn untrust(&self, cwd: impl Into<String>) -> Result<EditedMessage> {
        let id = self.next_id();
        let message = ClientMessage::Untrust(UntrustRequest {
            id: id.clone(),
            cwd: cwd.into(),
        });
        self.edit("untrust", id, message).await
    }

    /// The trusted hooks of every project, or of `cwd` only.
    pub async fn trust_list(&self, cwd: Option<String>) -> Result<TrustListMessage> {
        let id = self.next_id();
        let message = ClientMessage::TrustList(TrustListRequest {
            id: id.clone(),
            cwd,
        });
        match self.request(id, message, false).await? {
            ServerMessage::TrustList(listing) => Ok(listing),
            other => Err(unexpected_or_server_error("trust_list", other)),
        }
    }

    async fn edit(
        &self,
        request: &'static str,
        id: RequestId,
        message: ClientMessage,
    ) -> Result<EditedMessage> {
        match self.request(id, message, false).await? {
            ServerMessage::Edited(edited) => Ok(edited),
            other => Err(unexpected_or_server_error(request, other)),
        }
    }

    /// A copy of every frame the daemon sends from now on, whatever request it answers (up to
    /// `capacity` unread; more are dropped). With [`Client::send_raw`], for tests and tools
    /// that speak the protocol frame by frame over this client's connection.
    pub fn tap(&self, capacity: usize) -> mpsc::Receiver<ServerMessage> {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        self.shared.pending.set_tap(sender);
        receiver
    }

    /// Sends `message` as it is, ids included: nothing is checked, nothing waits for its
    /// answer (see [`Client::tap`]). An id this client also uses for its own requests gets
    /// its answers routed there too.
    pub async fn send_raw(&self, message: &serde_json::Value) -> Result<()> {
        self.send(Bytes::from(message.to_string().into_bytes()))
            .await
    }

    fn next_id(&self) -> RequestId {
        RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a request answered by one message and waits for it. An `error` answer is
    /// returned as is, for the caller to turn into [`ClientError::Server`].
    async fn request(
        &self,
        id: RequestId,
        message: ClientMessage,
        cancel_on_drop: bool,
    ) -> Result<ServerMessage> {
        let body = encode(&message);
        let (sender, answer) = oneshot::channel();
        self.register(id.clone(), Route::Once(sender))?;
        // Nothing to cancel on the daemon until the request is sent.
        let mut guard = AbandonOnDrop {
            client: self,
            id: &id,
            cancel: false,
            armed: true,
        };
        self.send(body).await?;
        guard.cancel = cancel_on_drop;
        let answer = answer.await.map_err(|_| ClientError::Disconnected);
        guard.armed = false;
        answer
    }

    fn register(&self, id: RequestId, route: Route) -> Result<()> {
        if self.shared.pending.register(id, route) {
            Ok(())
        } else {
            Err(ClientError::Disconnected)
        }
    }

    /// Queues a frame for the writer, refusing what the daemon would reject as too large.
    async fn send(&self, body: Bytes) -> Result<()> {
        if body.len() > self.shared.max_frame_bytes {
            return Err(ClientError::RequestTooLarge {
                len: body.len(),
                max: self.shared.max_frame_bytes,
            });
        }
        self.shared
            .outgoing
            .send(body)
            .await
            .map_err(|_| ClientError::Disconnected)
    }

    /// Forgets a request nobody waits for any more, and if `cancel`, asks the daemon to
    /// cancel it. Runs in `Drop`, so it cannot wait: a full queue skips the cancel, and the
    /// daemon's answers to both requests are dropped on arrival as unroutable.
    pub(crate) fn abandon(&self, id: &RequestId, cancel: bool) {
        self.shared.pending.remove(id);
        if cancel {
            let message = ClientMessage::Cancel(CancelRequest {
                id: self.next_id(),
                target: id.clone(),
            });
            let _ = self.shared.outgoing.try_send(encode(&message));
        }
    }
}

/// Abandons a request if its future is dropped before the answer arrives.
pub(crate) struct AbandonOnDrop<'a> {
    client: &'a Client,
    id: &'a RequestId,
    cancel: bool,
    armed: bool,
}

impl Drop for AbandonOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.client.abandon(self.id, self.cancel);
        }
    }
}

/// Turns an answer of the wrong type into the error it stands for: a daemon `error` frame
/// becomes [`ClientError::Server`], anything else [`ClientError::UnexpectedResponse`].
pub(crate) fn unexpected_or_server_error(
    request: &'static str,
    answer: ServerMessage,
) -> ClientError {
    match answer {
        ServerMessage::Error(error) => ClientError::Server {
            code: error.code,
            message: error.message,
        },
        other => ClientError::UnexpectedResponse {
            request,
            response: other.type_name(),
        },
    }
}

/// Reads the daemon's answer to `hello`.
async fn read_hello(reader: &mut FramedRead<OwnedReadHalf, FrameCodec>) -> Result<ServerHello> {
    let body = match reader.next().await {
        Some(Ok(Frame::Data(body))) => body,
        Some(Ok(Frame::TooLarge { declared_len })) => {
            return Err(ClientError::Handshake {
                reason: format!("the daemon answered with a frame of {declared_len} bytes"),
            });
        }
        Some(Err(error)) => return Err(error.into()),
        None => {
            return Err(ClientError::Handshake {
                reason: "the daemon closed the connection without answering".to_owned(),
            });
        }
    };
    match parse_server_message(&body) {
        Ok(ServerMessage::Hello(hello)) if hello.protocol == PROTOCOL_VERSION => Ok(hello),
        Ok(ServerMessage::Hello(hello)) => Err(ClientError::UnsupportedVersion {
            server: hello.protocol,
            client: PROTOCOL_VERSION,
        }),
        Ok(ServerMessage::Error(error)) => Err(ClientError::Server {
            code: error.code,
            message: error.message,
        }),
        Ok(other) => Err(ClientError::Handshake {
            reason: format!("the daemon answered with a `{}` message", other.type_name()),
        }),
        Err(error) => Err(ClientError::Handshake {
            reason: format!("the daemon's answer is not a valid message: {error}"),
        }),
    }
}

#[cfg(test)]
mod tests;
