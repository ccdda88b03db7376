//! State shared by every connection of one daemon.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::background::Background;
use crate::config::ServerConfig;
use crate::engine::Engine;
use crate::httpguard::HttpCounters;
use crate::httproots::SessionRoots;
use crate::io::FrameBudget;
use crate::registries::Registries;
use crate::relayed::RelayedSeries;
use crate::state::SessionState;
use crate::stats::Stats;

/// Everything connections share. Built once by [`crate::run`] (or by the one-shot engine).
///
/// Only the accept loop and the connection's own code (`crate::connection`,
/// `crate::request`) see it; the modules before them get the narrow handle
/// they need: [`Engine`] to run and record hooks, [`Registries`] to read and edit settings,
/// [`Background`] to run work apart from any answer.
pub(crate) struct Shared {
    /// The daemon's configuration.
    pub(crate) config: ServerConfig,
    /// Registries per project dir (and the lock that serializes settings edits).
    pub(crate) registries: Arc<Registries>,
    /// How hooks are run and their runs recorded.
    pub(crate) engine: Arc<Engine>,
    /// Counters for `status` (the engine counts into the same ones).
    pub(crate) stats: Arc<Stats>,
    /// The daemon's environment as hooks get it when a client sends none.
    pub(crate) daemon_env: Arc<Vec<(String, String)>>,
    /// When the daemon started.
    pub(crate) started: Instant,
    /// Cancelled when the daemon should stop accepting and reading (graceful stop begins).
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when in-flight runs must be killed (the graceful stop's deadline passed).
    pub(crate) hard_stop: CancellationToken,
    /// The daemon-wide bound on partly received frames.
    pub(crate) frame_budget: Arc<FrameBudget>,
    /// The relayed AfterModel responses in progress (`crate::relayed`).
    pub(crate) relayed: Arc<RelayedSeries>,
    /// Async hooks and detached events running outside any answer (`crate::background`).
    pub(crate) background: Arc<Background>,
    /// Session state (`crate::state`), opened on first use.
    pub(crate) state: Arc<SessionState>,
    /// This daemon's socket path, given to hooks as `HOOKD_SOCKET` ([`Shared::set_hook_socket`]).
    pub(crate) hook_socket: Option<String>,
    /// Sessions' project roots and environments from their relayed events, for the events
    /// they send over HTTP (`crate::httproots`).
    pub(crate) session_roots: Arc<SessionRoots>,
    /// The HTTP listener's address and counters, when it is on.
    pub(crate) http: Option<(SocketAddr, Arc<HttpCounters>)>,
}

impl Shared {
    /// Builds the shared state for `config`; `shutdown` is the caller's stop signal, `audit`
    /// the started audit log, if any; `plan_only` makes every hook answer that message
    /// instead of running (see [`Engine::new`]).
    pub(crate) fn new(
        config: ServerConfig,
        shutdown: CancellationToken,
        audit: Option<AuditLog>,
        plan_only: Option<Arc<str>>,
    ) -> Shared {
        let mut daemon_env: Vec<(String, String)> = config
            .env
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        daemon_env.sort();
        let stats = Arc::new(Stats::default());
        let state = Arc::new(SessionState::new(
            config.state_store.clone(),
            config.state_limits,
            config.state_expiry_interval,
            config.state_token_key.clone(),
        ));
        let engine = Engine::new(
            &config,
            audit,
            Arc::clone(&stats),
            Arc::clone(&state),
            plan_only,
        );
        Shared {
            registries: Arc::new(Registries::new(&config)),
            engine: Arc::new(engine),
            stats,
            daemon_env: Arc::new(daemon_env),
            started: Instant::now(),
            shutdown,
            hard_stop: CancellationToken::new(),
            frame_budget: Arc::new(FrameBudget::new(config.max_pending_frame_bytes)),
            relayed: Default::default(),
            background: Arc::new(Background::new(config.max_background_runs)),
            state,
            hook_socket: None,
            session_roots: Arc::new(SessionRoots::default()),
            http: None,
            config,
        }
    }

    /// Gives every hook `HOOKD_SOCKET=<socket>` (so `hookctl state` reaches this daemon),
    /// whether its environment is a client's or the daemon's own.
    pub(crate) fn set_hook_socket(&mut self, socket: Option<String>) {
        if let Some(socket) = &socket {
            let env = Arc::make_mut(&mut self.daemon_env);
            env.retain(|(name, _)| name != hookd_protocol::SOCKET_ENV_VAR);
            env.push((hookd_protocol::SOCKET_ENV_VAR.to_owned(), socket.clone()));
            env.sort();
        }
        self.hook_socket = socket;
    }
}
