//! An established connection's state, shared by the handlers of its requests
//! (`crate::request`): where answers go, the requests in flight and their tokens, the
//! connection's bounds (in-flight cap, output budget), its open streams, and the helpers
//! every handler uses (registering a request id, the errors they answer with).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use hookd_core::HookEventName;
use hookd_core::dialect::Dialect;
use hookd_core::matcher::MatchContext;
use hookd_protocol::fast::IdRef;
use hookd_protocol::{
    ErrorCode, EventResult, ProtocolError, RequestId, ServerMessage, StreamClosedMessage, WireEnv,
};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::limits::InflightLimit;
use crate::runstats::ClientHandle;
use crate::shared::Shared;
use crate::stream::Streams;
use crate::wire::{Env, Inflight, Sink, send};

/// Converts a client-sent environment to the runner's form, with `HOOKD_SOCKET` naming this
/// daemon's socket (`crate::state`: `hookctl state` in a hook finds the daemon that ran it).
pub(crate) fn wire_env(mut env: WireEnv, shared: &Shared) -> Env {
    if let Some(socket) = &shared.hook_socket {
        env.insert(hookd_protocol::SOCKET_ENV_VAR.to_owned(), socket.clone());
    }
    Arc::new(env.into_iter().collect())
}

/// The state of an established connection.
pub(crate) struct Connection {
    pub(crate) shared: Arc<Shared>,
    /// The client's counters (by the name it gave in its hello).
    pub(crate) client: ClientHandle,
    pub(crate) sink: Sink,
    /// The environment hooks of this connection run with unless a request brings its own.
    pub(crate) env: Env,
    /// Cancellation tokens of this connection's in-flight requests, by request id.
    pub(crate) inflight: Inflight,
    /// The ids among them that are subscriptions (`subscribe`, `hooked_events` with
    /// `subscribe`): a `cancel` frees such an id at once, as its `cancelled` is the last
    /// answer the subscription gets. Only the read loop uses it.
    pub(crate) subscriptions: Mutex<HashSet<RequestId>>,
    /// The connection's run tasks.
    pub(crate) runs: TaskTracker,
    /// Cancelled when the client disconnects or the daemon stops for good.
    pub(crate) cancel: CancellationToken,
    /// The connection's output budget, in KiB: each event run holds its worst-case captured
    /// output from before it starts until its result is written. When a client stops reading,
    /// finished runs cannot give theirs back, the budget runs out, and the connection stops
    /// reading requests: one connection can never pin more than this.
    pub(crate) output_budget: Arc<tokio::sync::Semaphore>,
    /// The cap on in-flight event runs and queued stream chunks: at the cap, no frame is read
    /// until one of them ends. It also caps the number of open streams.
    pub(crate) limit: InflightLimit,
    /// The open streams.
    pub(crate) streams: Streams,
    /// A match context whose strings are reused by the allocation-free path (both are always
    /// `Some`; an empty string matches like an absent field).
    pub(crate) match_scratch: Mutex<MatchContext>,
    /// The buffer the `chunk_result` bodies of filter-only streams are written into, kept
    /// between chunks (up to [`MAX_KEPT_FILTER_BODY`]).
    pub(crate) filter_body: Mutex<Vec<u8>>,
}

impl Connection {
    /// The environment a request's hooks run with: the one it sent, else the connection's.
    pub(crate) fn hook_env(&self, env: Option<&WireEnv>) -> Env {
        match env {
            Some(env) => wire_env(env.clone(), &self.shared),
            None => Arc::clone(&self.env),
        }
    }

    /// Registers an in-flight request's cancellation token, or answers `duplicate_id`.
    pub(crate) async fn register(&self, id: &RequestId) -> Option<CancellationToken> {
        let parent = self.cancel.clone();
        self.register_under(id, &parent).await
    }

    /// [`Connection::register`] with a token that `parent` cancels: the connection's own
    /// (its runs stop when the client goes), or the daemon's hard stop for a run that must
    /// outlive its client. A `cancel` request stops either.
    pub(crate) async fn register_under(
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
    pub(crate) fn add_subscription(&self, id: &RequestId) {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone());
    }

    /// Forgets that an id was a subscription's: one that ended by itself (the daemon
    /// stopping) leaves its mark behind, and a new request may now use the id.
    pub(crate) fn forget_subscription(&self, id: &RequestId) {
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
    pub(crate) fn is_inflight(&self, id: IdRef<'_>) -> bool {
        let inflight = self.inflight.lock().unwrap_or_else(PoisonError::into_inner);
        !inflight.is_empty() && inflight.keys().any(|key| key.as_id_ref() == id)
    }

    /// Ends a stream the read loop answers (already out of the table) with `stream_closed`.
    pub(crate) async fn close_stream(&self, id: RequestId, chunks: u64, flush: String) {
        self.inflight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        let closed = ServerMessage::StreamClosed(StreamClosedMessage { id, chunks, flush });
        send(&self.sink, &closed).await;
    }
}

/// The `duplicate_id` error for a request that reuses the id of an in-flight request.
pub(crate) fn duplicate_id(id: RequestId) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::DuplicateId,
        format!("request id {id} is already in flight on this connection"),
    )
    .with_id(Some(id))
}

/// The event named in a request, or its `unknown_event` error.
pub(crate) fn parse_event(id: &RequestId, name: &str) -> Result<HookEventName, ProtocolError> {
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
pub(crate) fn parse_relayed_by(
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
pub(crate) fn unknown_stream(id: RequestId) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::UnknownId,
        format!("no stream with id {id} is open on this connection"),
    )
    .with_id(Some(id))
}

/// The aggregate of no hooks.
pub(crate) fn empty_event_result() -> EventResult {
    EventResult {
        success: true,
        final_output: None,
        all_outputs: Vec::new(),
        errors: Vec::new(),
        total_duration_ms: 0.0,
        hooks: Vec::new(),
    }
}

/// The largest buffer a connection keeps for filter-only streams' results between chunks: a
/// larger one (a result near the frame limit) is freed once sent.
pub(crate) const MAX_KEPT_FILTER_BODY: usize = 64 * 1024;
