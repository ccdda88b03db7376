//! Work that runs outside the answer: async hooks (`"async": true`) and detached events
//! (`"detach": true`, what a relay sends for `SessionEnd`).
//!
//! A background run is one event's hooks that no client waits for: the async hooks of any
//! event (the rest of the plan answers the client), or the whole plan of a detached event
//! (the client got an empty result at once). It runs under the daemon's own token, never the
//! connection's, so a client that disconnects (a host that killed its relay) does not stop
//! it; each hook is still bounded by its timeout and takes a slot of the daemon-wide hook
//! semaphore like any other.
//!
//! Bounded: at most [`crate::ServerConfig::max_background_runs`] background runs are in
//! flight, at most half of them for one project (so a project's own settings cannot crowd
//! out other projects' SessionEnd work). A run that would take either count past its bound is
//! not started: its hooks are recorded as refused (log `warn`, an audit line with `"background": "dropped"`, the `dropped` counter of
//! `status` and `stats`), never queued without bound.
//!
//! A graceful stop ([`Background::drain`]) waits for the runs in flight up to
//! [`crate::ServerConfig::background_grace`] from the stop's start, then kills their hooks
//! (whole process groups); each run cut short is logged (`warn`) and audited with
//! `"background": "cut_short"`, its killed hooks with outcome `cancelled`.
//!
//! Every finished background run goes through [`crate::recorder::Recorder`], like a run a
//! client waited for: its log line, its audit line (with its `background` kind) and its
//! counters in `stats`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hookd_core::dialect::Dialect;
use hookd_core::sanitize::EnvRedaction;
use hookd_core::{HookEventName, HookOutcome, HookResult, HookRun, Plan};
use hookd_protocol::{BackgroundStatus, EventRequest};
use hookd_runner::fire::{FireRequest, run_plan};
use hookd_runner::shares::RunClass;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::engine::Engine;
use crate::recorder::FinishedRun;
use crate::runstats::ClientEntry;
use crate::stats::Stats;
use crate::story::RunContext;

/// Why a run is in the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The async hooks of an event whose other hooks answered the client.
    Async,
    /// A detached event: all of its hooks.
    Detached,
}

impl Kind {
    /// The audit line's `background` value.
    fn as_str(self) -> &'static str {
        match self {
            Kind::Async => "async",
            Kind::Detached => "detached",
        }
    }
}

/// One background run to start: the event and everything its hooks need.
pub(crate) struct Job {
    /// Why it runs in the background.
    pub(crate) kind: Kind,
    /// The event request (its `input` and base fields are what the hooks see).
    pub(crate) request: EventRequest,
    /// The event.
    pub(crate) event: HookEventName,
    /// The hooks to run.
    pub(crate) plan: Plan,
    /// The client that sent the event.
    pub(crate) client: Arc<ClientEntry>,
    /// The host whose relay sent it.
    pub(crate) relayed_by: Option<Dialect>,
    /// The hooks' environment.
    pub(crate) env: Arc<Vec<(String, String)>>,
    /// The project's redaction settings for `env`.
    pub(crate) env_redaction: Arc<EnvRedaction>,
    /// The registry generation the plan came from.
    pub(crate) generation: u64,
    /// Gemini CLI's id of the project, for the default plans directory.
    pub(crate) project_id: String,
}

/// The daemon's background runs: their bound, their tasks and their counters.
pub(crate) struct Background {
    slots: Arc<Semaphore>,
    max: usize,
    /// The runs in flight per project, none of which may hold more than
    /// [`Background::project_share`] slots: a project's own settings cannot take every slot
    /// and have other projects' background work (their SessionEnd hooks) dropped. Holds only
    /// projects with a run in flight, so at most `max` entries.
    per_project: Arc<std::sync::Mutex<HashMap<String, usize>>>,
    tasks: TaskTracker,
    /// Cancelled when a graceful stop's grace for background work has run out.
    cut: CancellationToken,
    started: AtomicU64,
    finished: AtomicU64,
    dropped: AtomicU64,
    cut_short: AtomicU64,
}

impl Background {
    /// No background run yet; at most `max` at once (0 counts as 1).
    pub(crate) fn new(max: usize) -> Background {
        let max = max.max(1);
        Background {
            slots: Arc::new(Semaphore::new(max)),
            max,
            per_project: Arc::default(),
            tasks: TaskTracker::new(),
            cut: CancellationToken::new(),
            started: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            cut_short: AtomicU64::new(0),
        }
    }

    /// The most background runs one project may have in flight: half the bound (at least
    /// one), so the other half is always there for other projects.
    pub(crate) fn project_share(&self) -> usize {
        (self.max / 2).max(1)
    }

    /// Starts `job` in the background, or records it as dropped when the bound, or its
    /// project's share of it, is reached.
    pub(crate) fn start(self: &Arc<Self>, engine: &Arc<Engine>, job: Job) {
        let background = self;
        let project = job.project_key();
        let Some(share) = ProjectShare::take(
            &background.per_project,
            &project,
            background.project_share(),
        ) else {
            background.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                event = job.event.as_str(),
                hooks = job.plan.hooks.len(),
                project = project.as_str(),
                share = background.project_share(),
                "background run dropped: its project has its share of background runs in flight"
            );
            let message = format!(
                "not run: this project already had {} background runs in flight (half of \
                 max_background_runs)",
                background.project_share()
            );
            record_dropped(engine, job, &message);
            return;
        };
        let Ok(permit) = Arc::clone(&background.slots).try_acquire_owned() else {
            drop(share);
            background.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                event = job.event.as_str(),
                hooks = job.plan.hooks.len(),
                max = background.max,
                "background run dropped: the most background runs are in flight"
            );
            let message = format!(
                "not run: {} background runs were already in flight (max_background_runs)",
                background.max
            );
            record_dropped(engine, job, &message);
            return;
        };
        background.started.fetch_add(1, Ordering::Relaxed);
        let engine = Arc::clone(engine);
        let background = Arc::clone(background);
        self.tasks.spawn(async move {
            execute(&engine, &background, job).await;
            background.finished.fetch_add(1, Ordering::Relaxed);
            drop(permit);
            drop(share);
        });
    }

    /// A graceful stop: waits for the runs in flight until `deadline`, then kills their hooks
    /// and waits at most `kill_bound` more for them to be recorded.
    pub(crate) async fn drain(&self, deadline: Instant, kill_bound: Duration) {
        self.tasks.close();
        if self.tasks.is_empty() {
            return;
        }
        tracing::info!(
            running = self.tasks.len(),
            "stopping: waiting for background runs"
        );
        let deadline = tokio::time::Instant::from_std(deadline);
        if tokio::time::timeout_at(deadline, self.tasks.wait())
            .await
            .is_ok()
        {
            return;
        }
        tracing::warn!(
            running = self.tasks.len(),
            "background runs outlived their grace period; killing their hooks"
        );
        self.cut.cancel();
        if tokio::time::timeout(kill_bound, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some background runs did not end in time; exiting anyway");
        }
    }

    /// The counters for `status` and `stats`.
    pub(crate) fn status(&self) -> BackgroundStatus {
        BackgroundStatus {
            running: (self.max - self.slots.available_permits()) as u64,
            max: self.max as u64,
            started: self.started.load(Ordering::Relaxed),
            finished: self.finished.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            cut_short: self.cut_short.load(Ordering::Relaxed),
        }
    }
}

impl Job {
    /// The project a run counts against: the host's project directory, else the `cwd`.
    fn project_key(&self) -> String {
        self.request
            .project_dir
            .clone()
            .unwrap_or_else(|| self.request.cwd.clone())
    }
}

/// One run's place in its project's share; given back when dropped.
struct ProjectShare {
    counts: Arc<std::sync::Mutex<HashMap<String, usize>>>,
    project: String,
}

impl ProjectShare {
    /// A place for `project` when it has fewer than `share` runs in flight.
    fn take(
        counts: &Arc<std::sync::Mutex<HashMap<String, usize>>>,
        project: &str,
        share: usize,
    ) -> Option<ProjectShare> {
        let mut map = counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = map.entry(project.to_owned()).or_insert(0);
        if *count >= share {
            return None;
        }
        *count += 1;
        Some(ProjectShare {
            counts: Arc::clone(counts),
            project: project.to_owned(),
        })
    }
}

impl Drop for ProjectShare {
    fn drop(&mut self) {
        let mut map = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = map.get_mut(&self.project) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                map.remove(&self.project);
            }
        }
    }
}

/// Runs a job's hooks and records the run; a run killed by the stop is recorded as cut short.
async fn execute(engine: &Engine, background: &Background, mut job: Job) {
    let started = Instant::now();
    let fire = engine.fire_request(
        job.event,
        &job.project_id,
        &mut job.request,
        &job.env,
        &job.env_redaction,
        RunClass::Background,
    );
    let token = background.cut.child_token();
    let hook_count = job.plan.hooks.len() as u64;
    Stats::add(&engine.stats.hooks_pending, hook_count);
    let stats = Arc::clone(&engine.stats);
    let mut on_result = move |_: usize, _: &HookResult| {
        Stats::sub(&stats.hooks_pending, 1);
    };
    let results = run_plan(&job.plan, &fire, &engine.runner, &token, &mut on_result).await;
    let cut_short = token.is_cancelled();
    if cut_short {
        background.cut_short.fetch_add(1, Ordering::Relaxed);
        let killed: Vec<&str> = results
            .iter()
            .filter(|result| matches!(result.outcome, HookOutcome::Cancelled))
            .map(|result| result.name.as_str())
            .collect();
        tracing::warn!(
            event = job.event.as_str(),
            session_id = fire.base.session_id.as_str(),
            hooks = killed.join(" ").as_str(),
            "background run cut short: the daemon stopped before its hooks finished"
        );
    }
    let kind = if cut_short {
        "cut_short"
    } else {
        job.kind.as_str()
    };
    finish(engine, &job, &fire, &results, kind, started.elapsed());
}

/// Records a job that was not started: each hook refused with `message`.
fn record_dropped(engine: &Engine, mut job: Job, message: &str) {
    let fire = engine.fire_request(
        job.event,
        &job.project_id,
        &mut job.request,
        &job.env,
        &job.env_redaction,
        RunClass::Background,
    );
    let results: Vec<HookResult> = job
        .plan
        .hooks
        .iter()
        .map(|entry| {
            let run = HookRun {
                outcome: HookOutcome::Refused {
                    message: message.to_owned(),
                },
                stdout: String::new(),
                stderr: String::new(),
                duration: Duration::ZERO,
            };
            let result = hookd_core::output::hook_result(entry, run);
            let policy = entry
                .config
                .on_failure()
                .unwrap_or(engine.default_on_failure);
            hookd_core::policy::apply_failure_policy(result, policy)
        })
        .collect();
    finish(engine, &job, &fire, &results, "dropped", Duration::ZERO);
}

/// The bookkeeping of a finished (or dropped) background run.
fn finish(
    engine: &Engine,
    job: &Job,
    fire: &FireRequest,
    results: &[HookResult],
    kind: &'static str,
    wall: Duration,
) {
    let aggregate = match job.relayed_by {
        Some(host) => host.run().aggregate(job.event, results, &fire.input),
        None => hookd_core::aggregate::aggregate(job.event, results, &fire.input),
    };
    let context = RunContext {
        client: &job.client,
        relayed_by: job.relayed_by,
        wall: Some(wall),
        background: Some(kind),
    };
    engine.recorder.run(&FinishedRun {
        context,
        fire,
        generation: job.generation,
        results,
        aggregate: &aggregate,
        latest: (&job.plan.hooks, results),
    });
    hookd_runner::spawn::settle();
}

/// Splits a plan into what answers the client and what runs in the background: every hook
/// when `detach`, else the async hooks. Either part is `None` when it has no hook.
pub(crate) fn split(plan: Plan, detach: bool) -> (Option<Plan>, Option<(Kind, Plan)>) {
    if detach {
        return (None, Some((Kind::Detached, plan)));
    }
    if !plan.hooks.iter().any(|entry| entry.config.is_async()) {
        return (Some(plan), None);
    }
    let (background, foreground): (Vec<_>, Vec<_>) = plan
        .hooks
        .into_iter()
        .partition(|entry| entry.config.is_async());
    let part = |hooks: Vec<_>| {
        (!hooks.is_empty()).then(|| Plan {
            event: plan.event,
            hooks,
            sequential: plan.sequential,
        })
    };
    (
        part(foreground),
        part(background).map(|plan| (Kind::Async, plan)),
    )
}

/// A reload (`hookctl reload`, SIGHUP) forgets the circuit breaker's counts and pauses: the
/// user may have fixed what made a hook fail, and the next event tries every hook again.
pub(crate) fn resume_paused_hooks(engine: &Engine) {
    let paused = engine.runner.breakers.reset();
    if paused > 0 {
        tracing::info!(
            paused,
            "reload: hooks paused by the circuit breaker run again"
        );
    }
}
