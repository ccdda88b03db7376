//! The run of one event with hooks that a client waits for: from the plan to the answer.
//!
//! [`Run::execute`] builds the firing from the request, runs the plan (for a relayed
//! AfterModel chunk, its response's filters first, `crate::relayed`), forwards each hook's
//! record when the client asked for them, sends the aggregate as one frame fitted to the
//! frame limit (`crate::results`), then records the run (`crate::recorder`) while the client
//! reads it. The request handler that starts it is `crate::request::event`.

use std::sync::Arc;

use hookd_core::HookEventName;
use hookd_core::HookResult;
use hookd_core::aggregate::Aggregate;
use hookd_core::dialect::Dialect;
use hookd_core::sanitize::EnvRedaction;
use hookd_protocol::{EventRequest, HookRecord, RequestId, ServerMessage};
use hookd_runner::fire::run_plan;
use hookd_runner::shares::RunClass;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::convert;
use crate::engine::Engine;
use crate::recorder::FinishedRun;
use crate::relayed::{RelayedSeries, Series, SeriesKey};
use crate::results;
use crate::runstats::ClientEntry;
use crate::stats::Stats;
use crate::story::RunContext;
use crate::wire::{Env, Inflight, Sink, send, send_frame};

/// A relayed AfterModel chunk's place in its response (`crate::relayed`).
pub(crate) struct RelayedChunk {
    pub(crate) key: SeriesKey,
    pub(crate) series: Arc<tokio::sync::Mutex<Series>>,
    /// Whether it is the response's last chunk.
    pub(crate) last: bool,
}

/// One event run with hooks to execute, owned by its task.
pub(crate) struct Run {
    /// How hooks are run and the run recorded.
    pub(crate) engine: Arc<Engine>,
    /// The relayed AfterModel responses in progress.
    pub(crate) relayed: Arc<RelayedSeries>,
    pub(crate) sink: Sink,
    pub(crate) inflight: Inflight,
    pub(crate) token: CancellationToken,
    pub(crate) event: HookEventName,
    /// When the request was read.
    pub(crate) started: std::time::Instant,
    /// The client's counters.
    pub(crate) client: Arc<ClientEntry>,
    /// The host whose relay sent the event: Claude Code's events merge by its rules.
    pub(crate) relayed_by: Option<Dialect>,
    /// Set for a relayed AfterModel chunk.
    pub(crate) series: Option<RelayedChunk>,
    pub(crate) env: Env,
    /// The project's redaction settings for `env`.
    pub(crate) env_redaction: Arc<EnvRedaction>,
    pub(crate) generation: u64,
    /// Gemini CLI's id of the project, for the default plans directory.
    pub(crate) project_id: String,
    /// This run's share of the connection's output budget, given back when it is done.
    pub(crate) _output_permit: tokio::sync::OwnedSemaphorePermit,
}

impl Run {
    /// Runs the plan, streams per-hook records when asked, sends the aggregate, then records
    /// the run.
    pub(crate) async fn execute(mut self, mut request: EventRequest, mut plan: hookd_core::Plan) {
        let hook_count = plan.hooks.len();
        Stats::add(&self.engine.stats.hooks_pending, hook_count as u64);
        let mut fire = self.engine.fire_request(
            self.event,
            &self.project_id,
            &mut request,
            &self.env,
            &self.env_redaction,
            RunClass::Foreground,
        );

        // Exactly one record per hook goes through this channel, so a capacity of the plan's
        // length means the runner's callback never has to wait or drop. Only a client that
        // asked for per-hook frames gets one.
        let (records_tx, records_rx) = if request.stream_hooks {
            let (sender, receiver) = mpsc::channel(hook_count.max(1));
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        let stats = Arc::clone(&self.engine.stats);
        let on_result = move |index: usize, result: &HookResult| {
            Stats::sub(&stats.hooks_pending, 1);
            if let Some(records) = &records_tx {
                let _ = records.try_send((index, convert::hook_record(result)));
            }
        };
        // A relayed AfterModel chunk: the series' filters run first, with their state across
        // the response's chunks; the rest of the plan runs on what they left.
        let relayed = self.series.take();
        let mut series = match &relayed {
            Some(chunk) => Some(Arc::clone(&chunk.series).lock_owned().await),
            None => None,
        };
        let filtered = match (series.as_mut(), relayed.as_ref()) {
            (Some(series), Some(chunk)) => Some(
                series
                    .filter_chunk(
                        &plan,
                        self.generation,
                        &mut fire.input,
                        chunk.last,
                        self.engine.default_on_failure,
                    )
                    .await,
            ),
            _ => None,
        };
        let commands = match &filtered {
            Some(filtered) => {
                for (index, result) in filtered.results.iter().enumerate() {
                    on_result(index, result);
                }
                // Recorded in the order they ran: the filters, then the rest.
                let mut hooks = filtered.filters.clone();
                hooks.extend(filtered.commands.iter().flat_map(|plan| plan.hooks.clone()));
                plan.hooks = hooks;
                filtered.commands.clone()
            }
            None => Some(plan.clone()),
        };
        let offset = filtered
            .as_ref()
            .map_or(0, |filtered| filtered.results.len());
        let run = async {
            let mut results = filtered
                .as_ref()
                .map(|filtered| filtered.results.clone())
                .unwrap_or_default();
            if let Some(commands) = &commands {
                let mut shifted = |index: usize, result: &HookResult| {
                    on_result(offset + index, result);
                };
                let ran = run_plan(
                    commands,
                    &fire,
                    &self.engine.runner,
                    &self.token,
                    &mut shifted,
                )
                .await;
                results.extend(ran);
            }
            drop(on_result);
            results
        };
        let forward = forward_records(&self.sink, &request.id, records_rx);
        let (results, ()) = tokio::join!(run, forward);

        let aggregate = match self.relayed_by {
            Some(host) => host.run().aggregate(self.event, &results, &fire.input),
            None => hookd_core::aggregate::aggregate(self.event, &results, &fire.input),
        };
        if let (Some(series), Some(filtered), Some(chunk)) = (&mut series, &filtered, &relayed) {
            series.emitted(filtered, &aggregate);
            if chunk.last {
                self.relayed.end(&chunk.key);
            } else {
                self.relayed.touch(&chunk.key, std::time::Instant::now());
            }
        }
        drop(series);
        self.answer(&request.id, &aggregate, &results).await;
        // The bookkeeping is done while the client reads the answer.
        self.engine.recorder.run(&FinishedRun {
            context: RunContext {
                client: &self.client,
                relayed_by: self.relayed_by,
                wall: Some(self.started.elapsed()),
                background: None,
            },
            fire: &fire,
            generation: self.generation,
            results: &results,
            aggregate: &aggregate,
            latest: (&plan.hooks, &results),
        });
        hookd_runner::spawn::settle();
    }

    /// Sends the `result`, fitted into one frame, and frees the request's id.
    async fn answer(&self, id: &RequestId, aggregate: &Aggregate, results: &[HookResult]) {
        let max_frame_bytes = self.engine.max_frame_bytes;
        let body = results::result_body(id, aggregate, results, self.generation, max_frame_bytes);
        let frame = results::fitted(body, max_frame_bytes, || {
            convert::result(id.clone(), aggregate, results, self.generation)
        });
        self.inflight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id);
        send_frame(&self.sink, frame).await;
    }
}

/// Sends each hook's record as it arrives (`hook_result` frames), for a client that asked for
/// them; returns once every record is sent.
async fn forward_records(
    sink: &Sink,
    id: &RequestId,
    records: Option<mpsc::Receiver<(usize, HookRecord)>>,
) {
    let Some(mut records) = records else {
        return;
    };
    while let Some((index, hook)) = records.recv().await {
        let message = ServerMessage::HookResult(hookd_protocol::HookResultMessage {
            id: id.clone(),
            index: index as u64,
            hook,
        });
        send(sink, &message).await;
    }
}
