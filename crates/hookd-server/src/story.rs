//! What the daemon tells about each event run that had hooks: the log lines, the audit line
//! and the counters behind `stats`, all from one place ([`finished_run`]).
//!
//! Log lines (targets `hookd::run` and `hookd::hook`, so `--log-level hookd::run=info` picks
//! them alone):
//!
//! - one `info` line per run: the client's name, the event, the tool (tool events), the host
//!   that relayed it, the project, each hook as `name=decision/duration`, the final decision
//!   and the run's wall time;
//! - one `warn` line per hook that failed, timed out (its process group was killed), was
//!   killed by a signal hookd did not send, or was refused (an untrusted project hook under
//!   `require`); trust warnings are logged by the runner when it decides them;
//! - events that match no hook get a `debug` line where they are answered
//!   (`crate::connection`).

use std::fmt::Write;
use std::time::Duration;

use hookd_core::HookResult;
use hookd_core::aggregate::Aggregate;
use hookd_core::dialect::Dialect;
use hookd_runner::fire::FireRequest;
use serde_json::Value;

use crate::runstats::ClientEntry;
use crate::shared::Shared;

/// Who asked for a run and how long it took, beside what [`FireRequest`] says.
pub(crate) struct RunContext<'a> {
    /// The client (by the name it gave in its hello).
    pub(crate) client: &'a ClientEntry,
    /// The host whose relay sent the event, if one did.
    pub(crate) relayed_by: Option<Dialect>,
    /// The run's wall time, from the request to the aggregate; `None` for stream chunks, whose
    /// hooks' summed durations are logged instead.
    pub(crate) wall: Option<Duration>,
    /// For a run outside the answer (`crate::background`): `async`, `detached`, `dropped`
    /// or `cut_short`; `None` for a run the client waited for.
    pub(crate) background: Option<&'static str>,
}

/// Records one finished event run: the audit line, the log lines and the counters.
pub(crate) fn finished_run(
    shared: &Shared,
    context: &RunContext<'_>,
    fire: &FireRequest,
    generation: u64,
    results: &[HookResult],
    aggregate: &Aggregate,
) {
    crate::audit::record_run(
        shared,
        fire,
        generation,
        results,
        aggregate,
        context.background,
    );
    let total = context.wall.unwrap_or(aggregate.total_duration);
    shared
        .run_stats
        .record(context, fire.event, results, aggregate, total);
    log_run(context, fire, results, aggregate, total);
}

/// A hook's decision as the log shows it: the `decision` of its output, else `ok` or the
/// failure kind (`timed_out`, `refused`, ...).
pub(crate) fn hook_decision(result: &HookResult) -> &str {
    let decision = result
        .output
        .as_ref()
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str);
    match (decision, result.failure) {
        (Some(decision), _) => decision,
        (None, Some(failure)) => failure.as_str(),
        (None, None) if result.success => "ok",
        (None, None) => result.outcome.kind(),
    }
}

/// The run's final decision as the log and `stats` show it: the merged output's `decision`,
/// `stop` when it says `continue: false`, else `none`.
pub(crate) fn final_decision(aggregate: &Aggregate) -> &str {
    let output = aggregate.final_output.as_ref();
    if let Some(decision) = output
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str)
    {
        return decision;
    }
    if output.and_then(|output| output.get("continue")) == Some(&Value::Bool(false)) {
        return "stop";
    }
    "none"
}

/// Milliseconds with one decimal, for log lines.
fn millis(duration: Duration) -> String {
    format!("{:.1}ms", duration.as_secs_f64() * 1000.0)
}

/// Writes the run's `info` line and a `warn` line per failed hook.
fn log_run(
    context: &RunContext<'_>,
    fire: &FireRequest,
    results: &[HookResult],
    aggregate: &Aggregate,
    total: Duration,
) {
    let tool = fire
        .input
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or("-");
    let relayed_by = context.relayed_by.map_or("-", Dialect::as_str);
    for result in results {
        let Some(failure) = result.failure else {
            continue;
        };
        tracing::warn!(
            target: "hookd::hook",
            client = &*context.client.name,
            event = fire.event.as_str(),
            tool,
            hook = result.name.as_str(),
            source = result.source.label(),
            failure = failure.as_str(),
            outcome = result.outcome.kind(),
            exit_code = result.exit_code.map_or_else(|| "-".to_owned(), |code| code.to_string()),
            duration = %millis(result.duration),
            error = result.error.as_deref().unwrap_or("-"),
            "hook failed"
        );
    }
    if !tracing::enabled!(target: "hookd::run", tracing::Level::INFO) {
        return;
    }
    let mut hooks = String::new();
    for result in results {
        if !hooks.is_empty() {
            hooks.push(' ');
        }
        let _ = write!(
            hooks,
            "{}={}/{}",
            result.name,
            hook_decision(result),
            millis(result.duration)
        );
    }
    tracing::info!(
        target: "hookd::run",
        client = &*context.client.name,
        event = fire.event.as_str(),
        tool,
        relayed_by,
        project = fire.project_dir.as_str(),
        hooks = hooks.as_str(),
        decision = final_decision(aggregate),
        success = aggregate.success,
        total = %millis(total),
        background = context.background.unwrap_or("-"),
        "event ran hooks"
    );
}
