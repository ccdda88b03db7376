//! A stream with command hooks: a task of its own that takes the stream's chunks from a
//! bounded queue one after another and runs its plan on each.

use std::sync::{Arc, PoisonError};

use hookd_core::payload::format_timestamp;
use hookd_core::{HookResult, Plan};
use hookd_protocol::{RequestId, ServerMessage, StreamClosedMessage};
use hookd_runner::fire::{FireRequest, run_plan};
use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::limits::OUTPUT_BUDGET_KIB;
use crate::recorder::FinishedRun;
use crate::runstats::ClientEntry;
use crate::stats::Stats;
use crate::story::{RunContext, StreamStory};
use crate::stream::chunk::{Answered, StreamState, chunk_result, run_filters_bounded};
use crate::wire::{Inflight, Sink, send, send_frame, unix_millis_now};

/// What the read loop hands a stream's task.
#[derive(Debug)]
pub(crate) enum Command {
    /// A chunk to run, with the in-flight slot it holds until it is answered.
    Chunk {
        seq: u64,
        llm_response: Map<String, Value>,
        slot: Option<OwnedSemaphorePermit>,
    },
    /// `stream_close`: answer `stream_closed` with the filters' held-back text.
    Close,
}

/// A stream with hooks, owned by its task.
pub(crate) struct StreamRun {
    /// The client's counters.
    pub(crate) client: Arc<ClientEntry>,
    /// How hooks are run and the chunks recorded.
    pub(crate) engine: Arc<Engine>,
    pub(crate) sink: Sink,
    pub(crate) inflight: Inflight,
    pub(crate) id: RequestId,
    /// Cancelled by a `cancel` naming the stream, and with the connection.
    pub(crate) token: CancellationToken,
    /// The connection's own token: cancelled when the client is gone (or the daemon's stop
    /// deadline passed), when nothing more can be answered.
    pub(crate) gone: CancellationToken,
    /// The generation of the registry snapshot the plan came from.
    pub(crate) generation: u64,
    /// The connection's output budget (see `connection`).
    pub(crate) output_budget: Arc<Semaphore>,
    /// The open's input and base fields; each chunk sets its own fields in it.
    pub(crate) fire: FireRequest,
    /// The plan, computed at `stream_open`.
    pub(crate) plan: Plan,
}

impl StreamRun {
    /// Answers the stream's chunks in order until it is closed (or its queue is dropped:
    /// cancelled, or the daemon is stopping), then sends `stream_closed`.
    pub(crate) async fn serve(mut self, mut commands: mpsc::Receiver<Command>) {
        let mut state = StreamState::new(&self.plan);
        let mut story = StreamStory::new(&self.client, &self.fire, state.record_names());
        let mut chunks = 0u64;
        while let Some(command) = commands.recv().await {
            if self.gone.is_cancelled() {
                break;
            }
            match command {
                Command::Chunk {
                    seq,
                    llm_response,
                    slot,
                } => {
                    let (frame, answered, budget) = self.chunk(&mut state, seq, llm_response).await;
                    chunks += 1;
                    send_frame(&self.sink, frame).await;
                    drop(budget);
                    drop(slot);
                    // The bookkeeping is done while the client reads the answer.
                    let Answered { results, aggregate } = &answered;
                    // The command hooks' records follow the filters'; only theirs are a hook's
                    // latest run for `list`.
                    let latest = match &state.commands {
                        Some(commands) => (
                            commands.hooks.as_slice(),
                            results.get(state.filters.len()..).unwrap_or_default(),
                        ),
                        None => (&[][..], &[][..]),
                    };
                    self.engine.recorder.chunk(
                        &FinishedRun {
                            context: RunContext {
                                client: &self.client,
                                relayed_by: None,
                                wall: None,
                                background: None,
                            },
                            fire: &self.fire,
                            generation: self.generation,
                            results,
                            aggregate,
                            latest,
                        },
                        &mut story,
                    );
                    hookd_runner::spawn::settle();
                }
                Command::Close => break,
            }
        }
        let flush = state.flush();
        self.inflight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        if self.gone.is_cancelled() {
            return;
        }
        let closed = ServerMessage::StreamClosed(StreamClosedMessage {
            id: self.id.clone(),
            chunks,
            flush,
        });
        send(&self.sink, &closed).await;
    }

    /// Runs one chunk: filters, then command hooks; returns its `chunk_result`, what it was
    /// made of (for the bookkeeping after the send) and the share of the output budget to
    /// give back once it is written.
    pub(crate) async fn chunk(
        &mut self,
        state: &mut StreamState,
        seq: u64,
        llm_response: Map<String, Value>,
    ) -> (bytes::Bytes, Answered, Option<OwnedSemaphorePermit>) {
        Stats::add(&self.engine.stats.events_served, 1);
        let mut filtered = run_filters_bounded(
            state,
            &mut self.fire.input,
            llm_response,
            (self.plan.hooks.len(), false),
            self.engine.default_on_failure,
        )
        .await;

        let mut budget = None;
        if let Some(commands) = &state.commands {
            let input = &mut self.fire.input;
            let text = &filtered.text;
            // Both forms of `full_content` are refilled in place: the value (for payloads
            // built from values) and its JSON (written into Gemini payloads as it is), which
            // the previous chunk's payloads no longer hold.
            match input.get_mut("full_content") {
                Some(Value::String(full_content)) => {
                    full_content.clear();
                    full_content.push_str(&state.emitted);
                    full_content.push_str(text);
                }
                _ => {
                    let mut full_content = String::with_capacity(state.emitted.len() + text.len());
                    full_content.push_str(&state.emitted);
                    full_content.push_str(text);
                    input.insert("full_content".to_owned(), Value::String(full_content));
                }
            }
            let fresh = || {
                let mut json = String::new();
                state.write_full_content_json(&mut json, text);
                Arc::new(json)
            };
            match self
                .fire
                .serialized
                .iter_mut()
                .find(|(key, _)| *key == "full_content")
            {
                Some((_, json)) => match Arc::get_mut(json) {
                    Some(json) => state.write_full_content_json(json, text),
                    None => *json = fresh(),
                },
                None => self.fire.serialized.push(("full_content", fresh())),
            }
            self.fire.base.timestamp = format_timestamp(unix_millis_now());
            let worst_kib = (commands.hooks.len() * 2 * self.engine.max_output_bytes)
                .div_ceil(1024)
                .clamp(1, OUTPUT_BUDGET_KIB as usize);
            let kib = u32::try_from(worst_kib).unwrap_or(OUTPUT_BUDGET_KIB);
            budget = tokio::select! {
                permit = Arc::clone(&self.output_budget).acquire_many_owned(kib) => permit.ok(),
                () = self.gone.cancelled() => None,
            };
            let hook_count = commands.hooks.len();
            Stats::add(&self.engine.stats.hooks_pending, hook_count as u64);
            let stats = Arc::clone(&self.engine.stats);
            let mut on_result = move |_: usize, _: &HookResult| {
                Stats::sub(&stats.hooks_pending, 1);
            };
            let ran = run_plan(
                commands,
                &self.fire,
                &self.engine.runner,
                &self.token,
                &mut on_result,
            )
            .await;
            filtered.results.extend(ran);
        }
        let mut body = Vec::new();
        let aggregate = chunk_result(
            &self.engine,
            &self.fire.input,
            state,
            (&self.id, seq),
            &filtered,
            &mut body,
        );
        let answered = Answered {
            results: filtered.results,
            aggregate,
        };
        (bytes::Bytes::from(body), answered, budget)
    }
}
