//! The one place a finished run is recorded: its audit line, its log lines, its counters in
//! `stats` and its hooks' latest runs for `list`.
//!
//! Every run with hooks ends here, whoever ran it: an event a client waited for
//! (`crate::eventrun`), a background run (`crate::background`) and each chunk of a stream
//! (`crate::stream`). The callers hold a [`Recorder`] and describe the run in a
//! [`FinishedRun`]; what is written where is decided here and in the modules it calls
//! (`crate::audit`, `crate::story`, `crate::runstats`, `crate::lastrun`, and, when export is
//! on, `crate::telemetry`).

use std::sync::Arc;
use std::time::Duration;

use hookd_core::aggregate::Aggregate;
use hookd_core::{HookEntry, HookResult};
use hookd_runner::fire::FireRequest;

use crate::audit::{self, AuditLog};
use crate::lastrun::LastRuns;
use crate::runstats::RunStats;
use crate::story::{self, RunContext, StreamStory};
use crate::telemetry::Telemetry;

/// What records finished runs: the audit log (when the configuration asks for one), the
/// counters behind `stats` and each hook's latest run.
pub(crate) struct Recorder {
    /// The audit log, when the configuration asks for one.
    pub(crate) audit: Option<AuditLog>,
    /// What ran since start, for `stats`.
    pub(crate) run_stats: RunStats,
    /// The latest run of each hook, for `list`.
    pub(crate) last_runs: LastRuns,
    /// The OpenTelemetry export, when it is on.
    pub(crate) telemetry: Option<Telemetry>,
}

/// One finished run (or stream chunk), as the recorder takes it.
pub(crate) struct FinishedRun<'a> {
    /// Who asked for it and how long it took.
    pub(crate) context: RunContext<'a>,
    /// The request the hooks ran for.
    pub(crate) fire: &'a FireRequest,
    /// The registry generation the plan came from.
    pub(crate) generation: u64,
    /// Every hook's record, in the order they ran.
    pub(crate) results: &'a [HookResult],
    /// The merged result.
    pub(crate) aggregate: &'a Aggregate,
    /// The hooks whose latest run `list` shows, with their records (a stream's filters,
    /// which run on every chunk, are not among them).
    pub(crate) latest: (&'a [Arc<HookEntry>], &'a [HookResult]),
}

impl Recorder {
    /// A recorder writing to `audit`, if any, with no run counted yet.
    pub(crate) fn new(audit: Option<AuditLog>) -> Recorder {
        Recorder {
            audit,
            run_stats: RunStats::default(),
            last_runs: LastRuns::default(),
            telemetry: None,
        }
    }

    /// Records one finished event run: the audit line, the `info` line and a `warn` line per
    /// failed hook, the counters and the hooks' latest runs.
    pub(crate) fn run(&self, run: &FinishedRun<'_>) {
        let total = self.count(run);
        self.export(run, total, false);
        story::log_run(&run.context, run.fire, run.results, run.aggregate, total);
    }

    /// Records one finished chunk of a stream a client opened: the audit line, the counters
    /// and latest runs as for any run, a `warn` line per failed hook, and the chunk in the
    /// stream's `story`, whose `info` line comes when the stream ends. The chunk's own `info`
    /// line is written only when `debug` is on for `hookd::run`.
    pub(crate) fn chunk(&self, run: &FinishedRun<'_>, story: &mut StreamStory) {
        let total = self.count(run);
        self.export(run, total, true);
        story.add(run.results, run.aggregate);
        story::log_failed_hooks(&run.context, run.fire, run.results);
        if tracing::enabled!(target: "hookd::run", tracing::Level::DEBUG) {
            story::log_chunk(&run.context, run.fire, run.results, run.aggregate, total);
        }
    }

    /// Hands the run to the OpenTelemetry export, when it is on (never waits).
    fn export(&self, run: &FinishedRun<'_>, total: Duration, chunk: bool) {
        if let Some(telemetry) = &self.telemetry {
            telemetry.record(
                &run.context,
                run.fire,
                run.results,
                run.aggregate,
                run.latest.0,
                total,
                chunk,
            );
        }
    }

    /// The audit line, the counters and the latest runs of one run; returns the run's total
    /// time (its wall time when known, else its hooks' summed durations).
    fn count(&self, run: &FinishedRun<'_>) -> Duration {
        audit::record_run(
            self.audit.as_ref(),
            run.fire,
            run.generation,
            run.results,
            run.aggregate,
            run.context.background,
        );
        let total = run.context.wall.unwrap_or(run.aggregate.total_duration);
        self.run_stats.record(
            run.context.client,
            run.fire.event,
            run.results,
            run.aggregate,
            total,
        );
        let (hooks, results) = run.latest;
        if !hooks.is_empty() {
            self.last_runs.record(hooks, results);
        }
        total
    }
}
