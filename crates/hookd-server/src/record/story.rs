//! What the daemon tells about each event run that had hooks: the log lines, the audit line
//! and the counters behind `stats`, all recorded from one place ([`crate::recorder::Recorder`]).
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
//!   (`crate::connection`, `crate::request::event`);
//! - a stream a client opened (`stream_open`) gets one `info` line when it ends
//!   ([`StreamStory`]): its chunks, each hook's decisions and summed duration, the final
//!   decisions. Its chunks are logged one by one only at `debug`: a model response is a hundred
//!   chunks or more, and a line per chunk would flood the log and cost the daemon more than
//!   filtering the chunk does.

use std::fmt::Write;
use std::time::Duration;

use hookd_core::HookResult;
use hookd_core::aggregate::Aggregate;
use hookd_core::dialect::Dialect;
use hookd_runner::fire::FireRequest;
use serde_json::Value;

use crate::runstats::{ClientEntry, final_decision, hook_decision};

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

/// The most distinct decisions a stream's line tells apart per hook (and for the stream);
/// later ones are counted under `other`, so a stream's tally stays bounded whatever its hooks
/// answer.
const MAX_STREAM_DECISIONS: usize = 8;

/// How many times each decision was taken, in the order first seen (at most
/// [`MAX_STREAM_DECISIONS`] kept apart).
#[derive(Debug, Default)]
struct Tally(Vec<(String, u64)>);

impl Tally {
    /// Counts one `decision`; allocates only for a decision not seen before.
    fn add(&mut self, decision: &str) {
        if let Some((_, count)) = self.0.iter_mut().find(|(seen, _)| seen == decision) {
            *count += 1;
            return;
        }
        if self.0.len() < MAX_STREAM_DECISIONS - 1 {
            self.0.push((decision.to_owned(), 1));
            return;
        }
        match self.0.iter_mut().find(|(seen, _)| seen == "other") {
            Some((_, count)) => *count += 1,
            None => self.0.push(("other".to_owned(), 1)),
        }
    }

    /// `ok` when every count is of one decision, else `deny*2,ok*98`-like, in first-seen order.
    fn write(&self, out: &mut String) {
        if let [(decision, _)] = self.0.as_slice() {
            out.push_str(decision);
            return;
        }
        for (index, (decision, count)) in self.0.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            let _ = write!(out, "{decision}*{count}");
        }
    }
}

/// One hook of a stream: its decisions over the chunks and its summed duration.
#[derive(Debug)]
struct HookTally {
    name: String,
    decisions: Tally,
    duration: Duration,
}

/// What a stream a client opened did, chunk by chunk, for its one `info` line (target
/// `hookd::run`, `stream ran hooks`), written when the stream ends (closed, its connection
/// gone or the daemon stopping): when this is dropped. Bounded: one entry per hook of the
/// plan, at most [`MAX_STREAM_DECISIONS`] decisions each.
#[derive(Debug)]
pub(crate) struct StreamStory {
    client: std::sync::Arc<str>,
    event: &'static str,
    project: String,
    hooks: Vec<HookTally>,
    /// Records beyond the plan's hooks (none in practice), counted so the line says so.
    unplanned: u64,
    decisions: Tally,
    chunks: u64,
    failed_chunks: u64,
    total: Duration,
}

impl StreamStory {
    /// The story of a stream of `fire` opened by `client`, whose plan runs `hooks` (their
    /// display names, in the order their records come).
    pub(crate) fn new<'a>(
        client: &ClientEntry,
        fire: &FireRequest,
        hooks: impl Iterator<Item = &'a str>,
    ) -> StreamStory {
        StreamStory {
            client: std::sync::Arc::clone(&client.name),
            event: fire.event.as_str(),
            project: fire.project_dir.clone(),
            hooks: hooks
                .map(|name| HookTally {
                    name: name.to_owned(),
                    decisions: Tally::default(),
                    duration: Duration::ZERO,
                })
                .collect(),
            unplanned: 0,
            decisions: Tally::default(),
            chunks: 0,
            failed_chunks: 0,
            total: Duration::ZERO,
        }
    }

    /// Adds one chunk's records and aggregate.
    pub(crate) fn add(&mut self, results: &[HookResult], aggregate: &Aggregate) {
        self.chunks += 1;
        self.total += aggregate.total_duration;
        if !aggregate.success {
            self.failed_chunks += 1;
        }
        self.decisions.add(final_decision(aggregate));
        for (index, result) in results.iter().enumerate() {
            match self.hooks.get_mut(index) {
                Some(hook) => {
                    hook.decisions.add(hook_decision(result));
                    hook.duration += result.duration;
                }
                None => self.unplanned += 1,
            }
        }
    }

    /// The `hooks` field of the line: `name=decisions/summed duration` per hook.
    fn hooks_field(&self) -> String {
        let mut hooks = String::new();
        for hook in &self.hooks {
            if !hooks.is_empty() {
                hooks.push(' ');
            }
            let _ = write!(hooks, "{}=", hook.name);
            hook.decisions.write(&mut hooks);
            let _ = write!(hooks, "/{}", millis(hook.duration));
        }
        if self.unplanned > 0 {
            let _ = write!(hooks, " (+{} more records)", self.unplanned);
        }
        hooks
    }
}

impl Drop for StreamStory {
    fn drop(&mut self) {
        if self.chunks == 0 || !tracing::enabled!(target: "hookd::run", tracing::Level::INFO) {
            return;
        }
        let mut decision = String::new();
        self.decisions.write(&mut decision);
        tracing::info!(
            target: "hookd::run",
            client = &*self.client,
            event = self.event,
            project = self.project.as_str(),
            chunks = self.chunks,
            hooks = self.hooks_field().as_str(),
            decision = decision.as_str(),
            failed_chunks = self.failed_chunks,
            total = %millis(self.total),
            "stream ran hooks"
        );
    }
}

/// Milliseconds with one decimal, for log lines.
fn millis(duration: Duration) -> String {
    format!("{:.1}ms", duration.as_secs_f64() * 1000.0)
}

/// Writes the run's `info` line and a `warn` line per failed hook.
pub(crate) fn log_run(
    context: &RunContext<'_>,
    fire: &FireRequest,
    results: &[HookResult],
    aggregate: &Aggregate,
    total: Duration,
) {
    log_failed_hooks(context, fire, results);
    if !tracing::enabled!(target: "hookd::run", tracing::Level::INFO) {
        return;
    }
    tracing::info!(
        target: "hookd::run",
        client = &*context.client.name,
        event = fire.event.as_str(),
        tool = tool_name(fire),
        relayed_by = context.relayed_by.map_or("-", Dialect::as_str),
        project = fire.project_dir.as_str(),
        hooks = hooks_field(results).as_str(),
        decision = final_decision(aggregate),
        success = aggregate.success,
        total = %millis(total),
        background = context.background.unwrap_or("-"),
        "event ran hooks"
    );
}

/// Writes a stream chunk's `debug` line, the fields of [`log_run`]'s plus `chunk`.
pub(crate) fn log_chunk(
    context: &RunContext<'_>,
    fire: &FireRequest,
    results: &[HookResult],
    aggregate: &Aggregate,
    total: Duration,
) {
    tracing::debug!(
        target: "hookd::run",
        client = &*context.client.name,
        event = fire.event.as_str(),
        project = fire.project_dir.as_str(),
        hooks = hooks_field(results).as_str(),
        decision = final_decision(aggregate),
        success = aggregate.success,
        total = %millis(total),
        "stream chunk ran hooks"
    );
}

/// The tool of a tool event, `-` for other events.
fn tool_name(fire: &FireRequest) -> &str {
    fire.input
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or("-")
}

/// The `hooks` field of a run's line: `name=decision/duration` per hook.
fn hooks_field(results: &[HookResult]) -> String {
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
    hooks
}

/// Writes a `warn` line per hook of the run that failed.
pub(crate) fn log_failed_hooks(
    context: &RunContext<'_>,
    fire: &FireRequest,
    results: &[HookResult],
) {
    for result in results {
        let Some(failure) = result.failure else {
            continue;
        };
        tracing::warn!(
            target: "hookd::hook",
            client = &*context.client.name,
            event = fire.event.as_str(),
            tool = tool_name(fire),
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
}
