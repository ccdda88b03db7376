//! What running an event's hooks needs, and nothing else: the narrow handle the runs of
//! events (`crate::eventrun`), of streams (`crate::stream`) and of background work
//! (`crate::background`) hold instead of the whole daemon.
//!
//! The daemon builds one [`Engine`] at start (`crate::shared`); every run shares it.

use std::path::PathBuf;
use std::sync::Arc;

use hookd_core::HookEventName;
use hookd_core::dialect::Dialect;
use hookd_core::payload::{BaseFields, format_timestamp};
use hookd_core::policy::FailurePolicy;
use hookd_core::sanitize::EnvRedaction;
use hookd_protocol::EventRequest;
use hookd_runner::fire::{FireRequest, ProcessKeys, RunnerConfig};
use hookd_runner::process::ProcessLimits;
use hookd_runner::shares::{RunClass, ShareLimits, SlotShares};
use tokio::sync::Semaphore;

use crate::audit::AuditLog;
use crate::config::ServerConfig;
use crate::recorder::Recorder;
use crate::state::SessionState;
use crate::stats::Stats;
use crate::wire::unix_millis_now;

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
            policy_program: config.policy_program.clone(),
        };
        let mut recorder = Recorder::new(audit);
        // The one-shot engine (`plan_only`, or a process serving one relay) lives for one
        // event: export is the daemon's.
        if runner.plan_only.is_none() && !config.telemetry.disabled {
            let breakers = Arc::clone(&runner.breakers);
            let counters = Arc::clone(&stats);
            let gauges = crate::telemetry::Gauges {
                breaker_pauses: Arc::new(move || breakers.pauses()),
                chunks_filtered: Arc::new(move || Stats::get(&counters.chunks_filtered)),
            };
            match crate::telemetry::Telemetry::start(&config.env, &config.telemetry, gauges) {
                Ok(telemetry) => recorder.telemetry = telemetry,
                Err(err) => {
                    tracing::error!(target: "hookd::telemetry", %err, "telemetry export not started")
                }
            }
        }
        Engine {
            runner,
            recorder,
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

    /// The firing of `request`'s `event` for the project Gemini CLI knows as `project_id`,
    /// with the hooks' environment `env` (redacted in records by `env_redaction`), in the
    /// share `class`: a run the client waits for and a background run build it the same way.
    /// The request's fields move into it (the aggregate reads the input from it); a missing
    /// plans directory is the session's default, a missing project directory the `cwd`.
    pub(crate) fn fire_request(
        &self,
        event: HookEventName,
        project_id: &str,
        request: &mut EventRequest,
        env: &Arc<Vec<(String, String)>>,
        env_redaction: &Arc<EnvRedaction>,
        class: RunClass,
    ) -> FireRequest {
        let plans_dir = request
            .plans_dir
            .take()
            .unwrap_or_else(|| self.default_plans_dir(project_id, &request.session_id));
        let project_dir = request
            .project_dir
            .take()
            .unwrap_or_else(|| request.cwd.clone());
        let state_token = self.state.token(&request.session_id, &project_dir);
        FireRequest {
            event,
            input: std::mem::take(&mut request.input),
            base: BaseFields {
                session_id: std::mem::take(&mut request.session_id),
                transcript_path: std::mem::take(&mut request.transcript_path),
                cwd: std::mem::take(&mut request.cwd),
                timestamp: format_timestamp(unix_millis_now()),
            },
            project_dir,
            plans_dir,
            env: Arc::clone(env),
            env_redaction: Arc::clone(env_redaction),
            serialized: Vec::new(),
            process_keys: ProcessKeys::default(),
            class,
            state_token,
            host: request
                .relayed_by
                .as_deref()
                .and_then(Dialect::parse)
                .map_or("", Dialect::name),
        }
    }
}
