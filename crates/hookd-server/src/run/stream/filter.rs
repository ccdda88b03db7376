//! A stream whose hooks are all builtin filters: answered by the connection's read loop
//! itself, with no task of its own.

use std::sync::Arc;

use hookd_core::payload::chunk_text;
use hookd_core::{HookType, Plan};
use hookd_protocol::RequestId;
use hookd_runner::fire::{FireRequest, INLINE_FILTER_BYTES};
use serde_json::{Map, Value};

use crate::engine::Engine;
use crate::recorder::FinishedRun;
use crate::runstats::ClientEntry;
use crate::stats::Stats;
use crate::story::{RunContext, StreamStory};
use crate::stream::chunk::{
    Filtered, StreamState, chunk_result, run_filters_bounded, run_filters_on,
};

/// What [`super::Streams::filter_chunk`] did with a chunk.
pub(crate) enum FilterOutcome {
    /// Filtered; its `chunk_result` body is written.
    Answered,
    /// Its text is larger than [`INLINE_FILTER_BYTES`]: given back, nothing done, for
    /// [`FilterStream::chunk_bounded`].
    TooLarge(Map<String, Value>),
    /// The stream is not a filter-only stream (any more).
    NotFiltered,
}

/// A stream whose hooks are all builtin filters, run by the connection's read loop.
pub(crate) struct FilterStream {
    /// The open's input and base fields; each chunk sets its own fields in it.
    fire: FireRequest,
    state: StreamState,
    /// The generation of the registry snapshot the plan came from.
    generation: u64,
    /// Chunks answered.
    chunks: u64,
    /// Hooks in the plan.
    hooks: usize,
    /// The client's counters.
    client: Arc<ClientEntry>,
    /// What the stream did, for its log line when it ends.
    story: StreamStory,
}

impl FilterStream {
    /// The stream of `plan`, whose hooks are all builtin filters (see [`is_filter_plan`]),
    /// opened by `client`.
    pub(crate) fn new(
        fire: FireRequest,
        plan: &Plan,
        generation: u64,
        client: Arc<ClientEntry>,
    ) -> FilterStream {
        let state = StreamState::new(plan);
        let story = StreamStory::new(&client, &fire, state.record_names());
        FilterStream {
            client,
            fire,
            state,
            generation,
            chunks: 0,
            hooks: plan.hooks.len(),
            story,
        }
    }

    /// Runs one chunk through the filters and writes its `chunk_result` frame body into
    /// `body`; a chunk too large for the read loop is given back untouched.
    pub(crate) fn chunk(
        &mut self,
        engine: &Engine,
        (id, seq): (&RequestId, u64),
        llm_response: Map<String, Value>,
        body: &mut Vec<u8>,
    ) -> FilterOutcome {
        let response = Value::Object(llm_response);
        let original = chunk_text(&response);
        if original.len() > INLINE_FILTER_BYTES {
            let Value::Object(llm_response) = response else {
                return FilterOutcome::NotFiltered;
            };
            return FilterOutcome::TooLarge(llm_response);
        }
        Stats::add(&engine.stats.events_served, 1);
        Stats::add(&engine.stats.chunks_filtered, 1);
        self.chunks += 1;
        let filtered = run_filters_on(
            &mut self.state,
            &mut self.fire.input,
            (response, original),
            (self.hooks, false),
            engine.default_on_failure,
        );
        self.answer(engine, (id, seq), filtered, body);
        FilterOutcome::Answered
    }

    /// Runs one chunk whose text is larger than [`INLINE_FILTER_BYTES`] through the filters,
    /// on the blocking pool (see [`run_filters_bounded`]), and returns its `chunk_result`
    /// frame body. The read loop takes the stream out of the table while it waits, so the
    /// connection's later frames wait too and the chunks stay in order.
    pub(crate) async fn chunk_bounded(
        &mut self,
        engine: &Engine,
        (id, seq): (&RequestId, u64),
        llm_response: Map<String, Value>,
    ) -> Vec<u8> {
        Stats::add(&engine.stats.events_served, 1);
        Stats::add(&engine.stats.chunks_filtered, 1);
        self.chunks += 1;
        let filtered = run_filters_bounded(
            &mut self.state,
            &mut self.fire.input,
            llm_response,
            (self.hooks, false),
            engine.default_on_failure,
        )
        .await;
        let mut body = Vec::new();
        self.answer(engine, (id, seq), filtered, &mut body);
        body
    }

    /// Aggregates a filtered chunk, writes its `chunk_result` frame body into `body` and
    /// audits it.
    pub(crate) fn answer(
        &mut self,
        engine: &Engine,
        (id, seq): (&RequestId, u64),
        filtered: Filtered,
        body: &mut Vec<u8>,
    ) {
        let aggregate = chunk_result(
            engine,
            &self.fire.input,
            &mut self.state,
            (id, seq),
            &filtered,
            body,
        );
        engine.recorder.chunk(
            &FinishedRun {
                context: RunContext {
                    client: &self.client,
                    relayed_by: None,
                    wall: None,
                    background: None,
                },
                fire: &self.fire,
                generation: self.generation,
                results: &filtered.results,
                aggregate: &aggregate,
                latest: (&[], &[]),
            },
            &mut self.story,
        );
    }

    /// Ends the stream: how many chunks it answered, and what its filters held back.
    pub(crate) fn close(mut self) -> (u64, String) {
        (self.chunks, self.state.flush())
    }
}

/// Whether every hook of `plan` is a builtin filter with a compiled filter, so that its
/// chunks can be answered by the read loop.
pub(crate) fn is_filter_plan(plan: &Plan) -> bool {
    plan.hooks
        .iter()
        .all(|entry| entry.config.hook_type == HookType::Builtin && entry.builtin.is_some())
}
