//! What running an event's hooks needs, and nothing else: the narrow handle the runs of
//! events (`crate::eventrun`), of streams (`crate::stream`) and of background work
//! (`crate::background`) hold instead of the whole daemon.
//!
//! The daemon builds one [`Engine`] at start (`crate::shared`); every run shares it.

use std::path::PathBuf;
use std::sync::Arc;

use hookd_core::policy::FailurePolicy;
use hookd_runner::fire::RunnerConfig;
use hookd_runner::process::ProcessLimits;
use hookd_runner::shares::{ShareLimits, SlotShares};
use tokio::sync::Semaphore;

use crate::audit::AuditLog;
use crate::config::ServerConfig;
use crate::recorder::Recorder;
use crate::state::SessionState;
use crate::stats::Stats;

/// How hooks are run and their runs recorded, shared by every run of one daemon.
pub(crate) struct Engine {
    /// How hooks are run, including the daemon-wide hook semaphore.
    pub(crate) runner: RunnerConfig,
    /// Where finished runs are recorded (audit, log, `stats`, `list`).
    pub(crate) recorder: Recorder,
    /// The counters of `status` (hooks pending, events served).
    pub(crate) stats: Arc<Stats>,
    /// Session state, for the state token each run's hooks get.
    pub(crate) state: Arc<SessionState>,
    /// The directory Gemini CLI's `~/.gemini` lives in, for the default plans directory.
    pub(crate) gemini_home: PathBuf,
    /// What a failed hook means when its settings do not say.
    pub(crate) default_on_failure: FailurePolicy,
    /// The cap on each hook's captured stdout and stderr.
    pub(crate) max_output_bytes: usize,
    /// The largest frame a client reads: results are fitted into it.
    pub(crate) max_frame_bytes: usize,
}

impl Engine {
    /// The engine for `config`, recording to `audit` when there is one; `plan_only`, when
    /// set, answers every hook with that message instead of running it (the one-shot engine's
    /// dry run).
    pub(crate) fn new(
        config: &ServerConfig,
        audit: Option<AuditLog>,
        stats: Arc<Stats>,
        state: Arc<SessionState>,
        plan_only: Option<Arc<str>>,
    ) -> Engine {
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
            plan_only,
        };
        Engine {
            runner,
            recorder: Recorder::new(audit),
            stats,
            state,
            gemini_home: config.gemini_home(),
            default_on_failure: config.default_on_failure,
            max_output_bytes: config.max_output_bytes,
            max_frame_bytes: config.max_frame_bytes,
        }
    }

    /// The default plans directory of a session of the project Gemini CLI knows as
    /// `project_id`.
    pub(crate) fn default_plans_dir(&self, project_id: &str, session_id: &str) -> String {
        hookd_core::env::default_plans_dir(
            &self.gemini_home.display().to_string(),
            project_id,
            session_id,
        )
    }
}
