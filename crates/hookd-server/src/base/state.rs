//! Session state (`docs/state.md`): the daemon's side of `state` requests, the SessionEnd
//! mark, and the background expiry.
//!
//! The store (`hookd_state::Store`, one redb file) is opened on first use, or at start when
//! its file exists already, so a daemon whose hooks never use state creates no file. Every
//! call into it runs on the blocking pool: a `set` waits for its fsync there, never on the
//! runtime's thread. A store that cannot be opened (another daemon holds it, the disk is
//! unreadable) answers each request with an `internal` error and is tried again on the next
//! one; it never stops the daemon.
//!
//! Writes (`set`, `delete`) need the state token the daemon puts in every hook's environment
//! (`hookd_state::token`): it must be a token of the session the request names, and its
//! project is the one the write counts against. Reads (`get`, `list`) need none: a process
//! of the user may look at any session's keys, only hooks' writes are confined.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hookd_protocol::{
    ErrorCode, ProtocolError, ServerMessage, StateOp, StateRequest, StateResponse,
};
use hookd_state::token::TokenKey;
use hookd_state::{Limits, StateError, Store};
use tokio_util::sync::CancellationToken;

/// How often the background expiry looks for sessions whose time is up, by default
/// (`ServerConfig::state_expiry_interval`).
pub const EXPIRY_INTERVAL: Duration = Duration::from_secs(60);

/// At most this many sessions are removed by one expiry transaction; a pass that removed
/// this many runs again at once, so a backlog drains without one long transaction.
pub const EXPIRY_BATCH: usize = 64;

/// At most this many state requests use the blocking pool at once, daemon-wide: writes are
/// serialised by the store anyway, and a thousand clients writing at once must not fill the
/// pool that reads settings files. More wait for a permit.
pub const MAX_CONCURRENT_CALLS: usize = 4;

/// The store, opened when first needed.
pub(crate) struct SessionState {
    path: Option<PathBuf>,
    limits: Limits,
    expiry_interval: Duration,
    store: tokio::sync::Mutex<Option<Arc<Store>>>,
    calls: tokio::sync::Semaphore,
    /// The key of the hooks' state tokens; `None` when no random key could be made (every
    /// write is then refused, and said why).
    key: Option<TokenKey>,
}

impl SessionState {
    /// State kept at `path` (`None`: no state directory could be found; every request is
    /// answered with an error).
    pub(crate) fn new(
        path: Option<PathBuf>,
        limits: Limits,
        expiry_interval: Duration,
        key: Option<TokenKey>,
    ) -> SessionState {
        let key = key.or_else(|| match TokenKey::random() {
            Ok(key) => Some(key),
            Err(error) => {
                tracing::error!(%error, "no key for state tokens: hooks cannot write state");
                None
            }
        });
        SessionState {
            key,
            path,
            limits,
            expiry_interval: expiry_interval.max(Duration::from_millis(10)),
            store: tokio::sync::Mutex::new(None),
            calls: tokio::sync::Semaphore::new(MAX_CONCURRENT_CALLS),
        }
    }

    /// The state token of `session` in the project at `project_dir`, for the hooks'
    /// environment (empty when there is no key).
    pub(crate) fn token(&self, session: &str, project_dir: &str) -> String {
        self.key
            .as_ref()
            .map(|key| key.token(session, project_dir))
            .unwrap_or_default()
    }

    /// The open store, opening it now if it is not; `create: false` opens only a file that
    /// exists.
    async fn store(&self, create: bool) -> Result<Option<Arc<Store>>, String> {
        let mut slot = self.store.lock().await;
        if let Some(store) = slot.as_ref() {
            return Ok(Some(Arc::clone(store)));
        }
        let Some(path) = self.path.clone() else {
            return Err(
                "session state has no place to live: neither XDG_STATE_HOME nor HOME is set"
                    .to_owned(),
            );
        };
        let limits = self.limits;
        let opened = tokio::task::spawn_blocking(move || {
            if !create && !path.exists() {
                return Ok(None);
            }
            Store::open(&path, limits).map(Some)
        })
        .await
        .map_err(|join| join.to_string())?
        .map_err(|error| error.to_string())?;
        if let Some(store) = opened {
            let store = Arc::new(store);
            *slot = Some(Arc::clone(&store));
            return Ok(Some(store));
        }
        Ok(None)
    }

    /// Answers one `state` request.
    pub(crate) async fn answer(&self, request: StateRequest) -> ServerMessage {
        let id = request.id.clone();
        let fail = |code: ErrorCode, message: String| {
            ProtocolError::new(code, message)
                .with_id(Some(id.clone()))
                .to_server_message()
        };
        let needs_key = request.op != StateOp::List;
        if needs_key && request.key.is_none() {
            return fail(
                ErrorCode::MissingField,
                format!("a state {} request needs a `key`", request.op.as_str()),
            );
        }
        if request.op == StateOp::Set && request.value.is_none() {
            return fail(
                ErrorCode::MissingField,
                "a state set request needs a `value`".to_owned(),
            );
        }
        if let Err(error) =
            hookd_state::check_names(&self.limits, &request.session_id, request.key.as_deref())
        {
            return fail(ErrorCode::BadRequest, error.to_string());
        }
        // Writes only with a token of the session they name: a hook writes its own
        // session's keys, counted against its own project.
        let project = match request.op {
            StateOp::Set | StateOp::Delete => {
                let Some(key) = &self.key else {
                    return fail(
                        ErrorCode::Internal,
                        "the daemon has no key for state tokens".to_owned(),
                    );
                };
                match key.verify(request.token.as_deref(), &request.session_id) {
                    Ok(project) => project,
                    Err(error) => {
                        tracing::warn!(
                            op = request.op.as_str(),
                            session_id = request.session_id.as_str(),
                            %error,
                            "a state write was refused"
                        );
                        return fail(ErrorCode::BadRequest, error.to_string());
                    }
                }
            }
            StateOp::Get | StateOp::List => String::new(),
        };
        let store = match self.store(request.op == StateOp::Set).await {
            Ok(store) => store,
            Err(message) => {
                tracing::warn!(%message, "session state is unavailable");
                return fail(ErrorCode::Internal, message);
            }
        };
        let Some(store) = store else {
            // No file yet: nothing was ever stored.
            return ServerMessage::State(StateResponse {
                id,
                found: false,
                value: None,
                keys: (request.op == StateOp::List).then(Vec::new),
            });
        };
        let op = request.op;
        let Ok(_permit) = self.calls.acquire().await else {
            return fail(ErrorCode::ShuttingDown, "the daemon is stopping".to_owned());
        };
        let answered = tokio::task::spawn_blocking(move || apply(&store, &project, request)).await;
        match answered {
            Ok(Ok(mut response)) => {
                response.id = id;
                ServerMessage::State(response)
            }
            Ok(Err(error)) => {
                let code = match &error {
                    StateError::Invalid { .. } => ErrorCode::BadRequest,
                    error if error.is_limit() => ErrorCode::LimitReached,
                    _ => ErrorCode::Internal,
                };
                if code == ErrorCode::Internal {
                    tracing::warn!(%error, op = op.as_str(), "a state request failed");
                }
                fail(code, error.to_string())
            }
            Err(join) => fail(ErrorCode::Internal, join.to_string()),
        }
    }

    /// Marks `session_id` as ended (its keys go after the store's keep-after-end time), in
    /// the background: the SessionEnd event is not held up by it.
    pub(crate) fn session_ended(self: &Arc<Self>, session_id: &str) {
        if session_id.is_empty() {
            return;
        }
        let state = Arc::clone(self);
        let session = session_id.to_owned();
        tokio::spawn(async move {
            let Ok(Some(store)) = state.store(false).await else {
                return;
            };
            let ended =
                tokio::task::spawn_blocking(move || store.session_ended(&session, now_ms())).await;
            if let Ok(Err(error)) = ended {
                tracing::warn!(%error, "cannot mark a session's state as ended");
            }
        });
    }

    /// Removes expired sessions every expiry interval ([`EXPIRY_INTERVAL`] by default) until
    /// `stop`, at most [`EXPIRY_BATCH`] per transaction.
    pub(crate) async fn expire_until(self: Arc<Self>, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(self.expiry_interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let Ok(Some(store)) = self.store(false).await else {
                continue;
            };
            loop {
                let store = Arc::clone(&store);
                let removed =
                    tokio::task::spawn_blocking(move || store.expire(now_ms(), EXPIRY_BATCH)).await;
                match removed {
                    Ok(Ok(removed)) if removed > 0 => {
                        tracing::info!(sessions = removed, "expired session state");
                        if removed < EXPIRY_BATCH || stop.is_cancelled() {
                            break;
                        }
                    }
                    Ok(Ok(_)) => break,
                    Ok(Err(error)) => {
                        tracing::warn!(%error, "session state expiry failed");
                        break;
                    }
                    Err(_) => break,
                }
            }
        }
    }

    /// Closes the store (a daemon stopping): the next daemon can open it at once.
    pub(crate) async fn close(&self) {
        self.store.lock().await.take();
    }
}

/// Runs one request against the store (on the blocking pool); a `set` counts against
/// `project` (the id its token carried).
fn apply(store: &Store, project: &str, request: StateRequest) -> Result<StateResponse, StateError> {
    let session = request.session_id.as_str();
    let key = request.key.as_deref().unwrap_or_default();
    let mut response = StateResponse {
        id: request.id.clone(),
        found: false,
        value: None,
        keys: None,
    };
    match request.op {
        StateOp::Get => {
            response.value = store.get(session, key)?;
            response.found = response.value.is_some();
        }
        StateOp::Set => {
            let value = request.value.as_deref().unwrap_or_default();
            store.set(project, session, key, value, now_ms())?;
            response.found = true;
        }
        StateOp::Delete => response.found = store.delete(session, key, now_ms())?,
        StateOp::List => {
            let keys = store.list(session)?;
            response.found = !keys.is_empty();
            response.keys = Some(keys);
        }
    }
    Ok(response)
}

/// hookd's state directory: `$XDG_STATE_HOME/hookd`, else `$HOME/.local/state/hookd`, the
/// one the relay's log, the session store and the options the one-shot engine reads share;
/// `None` when neither variable is set to an absolute path.
pub fn state_dir(env: &std::collections::HashMap<String, String>) -> Option<PathBuf> {
    let absolute = |name: &str| {
        env.get(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state")))
        .map(|dir| dir.join("hookd"))
}

/// The store's file: `state.redb` in [`state_dir`].
pub fn default_store_path(env: &std::collections::HashMap<String, String>) -> Option<PathBuf> {
    state_dir(env).map(|dir| hookd_state::store_path(&dir))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn hooks_and_the_store_name_the_token_variable_alike() {
        assert_eq!(
            hookd_state::token::TOKEN_ENV_VAR,
            hookd_core::env::STATE_TOKEN_ENV_VAR
        );
    }
}
