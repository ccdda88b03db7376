//! State shared by every connection of one daemon.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use hookd_runner::fire::RunnerConfig;
use hookd_runner::process::ProcessLimits;
use hookd_runner::shares::{ShareLimits, SlotShares};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::config::ServerConfig;
use crate::io::FrameBudget;
use crate::lastrun::LastRuns;
use crate::registries::Registries;
use crate::stats::Stats;

/// Everything connections share. Built once by [`crate::run`].
pub(crate) struct Shared {
    /// The daemon's configuration.
    pub(crate) config: ServerConfig,
    /// Registries per project dir.
    pub(crate) registries: Registries,
    /// How hooks are run, including the daemon-wide hook semaphore.
    pub(crate) runner: RunnerConfig,
    /// Counters for `status`.
    pub(crate) stats: Stats,
    /// What ran since start, for `stats`.
    pub(crate) run_stats: crate::runstats::RunStats,
    /// The latest run of each hook, for `list`.
    pub(crate) last_runs: LastRuns,
    /// Serializes edits of settings files.
    pub(crate) edit_lock: tokio::sync::Mutex<()>,
    /// The daemon's environment as hooks get it when a client sends none.
    pub(crate) daemon_env: Arc<Vec<(String, String)>>,
    /// When the daemon started.
    pub(crate) started: Instant,
    /// Cancelled when the daemon should stop accepting and reading (graceful stop begins).
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when in-flight runs must be killed (the graceful stop's deadline passed).
    pub(crate) hard_stop: CancellationToken,
    /// The audit log, when the configuration asks for one.
    pub(crate) audit: Option<AuditLog>,
    /// The daemon-wide bound on partly received frames.
    pub(crate) frame_budget: Arc<FrameBudget>,
    /// The relayed AfterModel responses in progress (`crate::relayed`).
    pub(crate) relayed: crate::relayed::RelayedSeries,
    /// Async hooks and detached events running outside any answer (`crate::background`).
    pub(crate) background: crate::background::Background,
    /// Session state (`crate::state`), opened on first use.
    pub(crate) state: Arc<crate::state::SessionState>,
    /// This daemon's socket path, given to hooks as `HOOKD_SOCKET` ([`Shared::set_hook_socket`]).
    pub(crate) hook_socket: Option<String>,
}

impl Shared {
    /// Builds the shared state for `config`; `shutdown` is the caller's stop signal, `audit`
    /// the started audit log, if any.
    pub(crate) fn new(
        config: ServerConfig,
        shutdown: CancellationToken,
        audit: Option<AuditLog>,
    ) -> Shared {
        let mut daemon_env: Vec<(String, String)> = config
            .env
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        daemon_env.sort();
        let runner = RunnerConfig {
            limits: ProcessLimits {
                max_output_bytes: config.max_output_bytes,
                kill_grace: config.kill_grace,
            },
            shell: config.shell.clone(),
            hook_slots: Arc::new(Semaphore::new(config.max_hooks.max(1))),
            default_on_failure: config.default_on_failure,
            project_hooks: config.project_hooks,
            trust_warnings: Default::default(),
            workers: Default::default(),
            prewarm: Default::default(),
            envs: Default::default(),
            breakers: Arc::new(hookd_runner::breakers::Breakers::new(config.breaker)),
            shares: Arc::new(SlotShares::new(ShareLimits::for_slots(config.max_hooks))),
            plan_only: None,
        };
        Shared {
            registries: Registries::new(&config),
            runner,
            stats: Stats::default(),
            run_stats: Default::default(),
            last_runs: LastRuns::default(),
            edit_lock: tokio::sync::Mutex::new(()),
            daemon_env: Arc::new(daemon_env),
            started: Instant::now(),
            shutdown,
            hard_stop: CancellationToken::new(),
            audit,
            frame_budget: Arc::new(FrameBudget::new(config.max_pending_frame_bytes)),
            relayed: Default::default(),
            background: crate::background::Background::new(config.max_background_runs),
            state: Arc::new(crate::state::SessionState::new(
                config.state_store.clone(),
                config.state_limits,
                config.state_expiry_interval,
                config.state_token_key.clone(),
            )),
            hook_socket: None,
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

/// The directory `~` stands for in Gemini CLI's paths: `GEMINI_CLI_HOME`, else the home dir.
pub(crate) fn gemini_home(config: &ServerConfig) -> PathBuf {
    config
        .env
        .get("GEMINI_CLI_HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| config.home.clone())
}
