//! AfterModel stream sessions: one model response, many chunks, one plan.
//!
//! `stream_open` computes the plan once (AfterModel ignores matchers) from the project's
//! registry snapshot, which the stream keeps for its whole life, and keeps the open's input
//! (with `llm_request`), so each `chunk` carries only its `llm_response`.
//!
//! A stream with no hook is only an entry in the connection's [`Streams`] table: its chunks are
//! answered by the connection's read loop itself, on the allocation-free path when the frame
//! allows it. A stream whose hooks are all builtin filters ([`FilterStream`]) is answered by the
//! read loop too: a filter takes well under a microsecond per ordinary chunk (a large one goes
//! to the blocking pool, below), so its answer is queued
//! like a no-hook answer (coalesced for a pipelining client) instead of going through a task. A
//! stream with command hooks gets a task ([`StreamRun`]) that takes its chunks from a
//! bounded queue one after another (a stream has state), while different streams run
//! concurrently. Every queued chunk holds one of the connection's in-flight slots until its
//! `chunk_result` is written, so a connection never has more than its in-flight cap of chunks
//! and event runs waiting, and the queue (sized to that cap) never fills.
//!
//! Per chunk, the builtin filters of the plan run first, in plan order, in this task: the
//! chunk's text goes through each filter's [`StreamRedactor`]. The filtered text is what the
//! command hooks then see, as `content` and inside the `llm_response` they are given, and
//! `full_content` is the text emitted so far plus this chunk's filtered text: hooks never see
//! what a filter removed. A chunk whose text is larger than
//! [`hookd_runner::fire::INLINE_FILTER_BYTES`] (64 KiB) is not filtered on the daemon's
//! threads but on the blocking pool, a few at a time daemon-wide, within each filter's hook
//! timeout ([`run_filters_bounded`]; for a filter-only stream the read loop takes the stream
//! out of the table and waits for it, so only that connection waits). A filter that misses
//! its deadline fails closed: the chunk's text is withheld (replaced by a marker, never
//! passed on unfiltered), the record is a timed-out hook under its `on_failure` (`deny`
//! blocks), and the stream's later text is withheld too. The command hooks run through
//! `hookd_runner::fire::run_plan` as a
//! plan of their own. The records are aggregated in the order they ran (filters, then command
//! hooks, each in plan order), so a command hook's replacement is applied on top of the
//! filters' and wins over it. What a filter holds back at the end of a chunk (the possible
//! start of a secret) is released at `stream_close` as `flush`.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hookd_core::aggregate::Aggregate;
use hookd_core::json::push_escaped;
use hookd_core::output::hook_result;
use hookd_core::payload::{chunk_text, format_timestamp, part_text};
use hookd_core::policy::{FailurePolicy, apply_failure_policy};
use hookd_core::redact::StreamRedactor;
use hookd_core::{
    HookEntry, HookEventName, HookOutcome, HookResult, HookRun, HookType, OutputFormat, Plan,
};
use hookd_protocol::fast::IdRef;
use hookd_protocol::{ChunkResultMessage, RequestId, ServerMessage, StreamClosedMessage};
use hookd_runner::fire::{
    FireRequest, INLINE_FILTER_BYTES, run_filter_blocking, run_plan, withheld_text, withhold_text,
};
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::convert;
use crate::engine::Engine;
use crate::limits::OUTPUT_BUDGET_KIB;
use crate::recorder::FinishedRun;
use crate::results;
use crate::runstats::ClientEntry;
use crate::stats::Stats;
use crate::story::{RunContext, StreamStory};
use crate::wire::{Inflight, Sink, send, send_frame, unix_millis_now};

/// At most this much of the text emitted so far is kept for `full_content`; beyond it the
/// oldest text is dropped (on a character boundary).
pub(crate) const MAX_FULL_CONTENT_BYTES: usize = 8 * 1024 * 1024;

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

/// A stream id as the table's key, hashed and compared as an [`IdRef`] so that the table can
/// be searched with an id borrowed from a frame.
#[derive(Debug, PartialEq, Eq)]
struct StreamKey(RequestId);

/// Anything that can be seen as an [`IdRef`]: the table's keys and borrowed ids.
trait IdKey {
    fn id_ref(&self) -> IdRef<'_>;
}

impl IdKey for StreamKey {
    fn id_ref(&self) -> IdRef<'_> {
        self.0.as_id_ref()
    }
}

impl IdKey for IdRef<'_> {
    fn id_ref(&self) -> IdRef<'_> {
        *self
    }
}

impl Hash for StreamKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id_ref().hash(state);
    }
}

impl<'a> Borrow<dyn IdKey + 'a> for StreamKey {
    fn borrow(&self) -> &(dyn IdKey + 'a) {
        self
    }
}

impl Hash for dyn IdKey + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id_ref().hash(state);
    }
}

impl PartialEq for dyn IdKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.id_ref() == other.id_ref()
    }
}

impl Eq for dyn IdKey + '_ {}

/// One open stream in the table.
enum Entry {
    /// No hook: the read loop answers, counting the chunks.
    Plain { chunks: u64 },
    /// Builtin filters only: the read loop runs them and answers.
    Filtered(Box<FilterStream>),
    /// A task runs the chunks; this is its queue.
    Hooked { queue: mpsc::Sender<Command> },
}

/// Where a chunk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkRoute {
    /// A stream without hooks: answered at once (and counted).
    Plain,
    /// A stream of builtin filters: run and answered by the read loop.
    Filtered,
    /// A stream with command hooks: to its task.
    Hooked,
    /// No such stream is open.
    Unknown,
}

/// What [`Streams::filter_chunk`] did with a chunk.
pub(crate) enum FilterOutcome {
    /// Filtered; its `chunk_result` body is written.
    Answered,
    /// Its text is larger than [`INLINE_FILTER_BYTES`]: given back, nothing done, for
    /// [`FilterStream::chunk_bounded`].
    TooLarge(Map<String, Value>),
    /// The stream is not a filter-only stream (any more).
    NotFiltered,
}

/// A stream taken out of the table.
pub(crate) enum Removed {
    /// A stream without hooks and how many chunks it answered.
    Plain { chunks: u64 },
    /// A stream of builtin filters, to be closed with what they hold back.
    Filtered(Box<FilterStream>),
    /// A stream with hooks: its queue (dropping it lets the task end after what is queued).
    Hooked { queue: mpsc::Sender<Command> },
}

/// The open streams of one connection. Only the connection's read loop changes it.
#[derive(Default)]
pub(crate) struct Streams {
    map: Mutex<HashMap<StreamKey, Entry>>,
}

impl Streams {
    fn lock(&self) -> MutexGuard<'_, HashMap<StreamKey, Entry>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many streams are open.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Adds a stream without hooks.
    pub(crate) fn insert_plain(&self, id: RequestId) {
        self.lock()
            .insert(StreamKey(id), Entry::Plain { chunks: 0 });
    }

    /// Adds a stream whose task reads `queue`.
    pub(crate) fn insert_hooked(&self, id: RequestId, queue: mpsc::Sender<Command>) {
        self.lock().insert(StreamKey(id), Entry::Hooked { queue });
    }

    /// Adds a stream of builtin filters, which the read loop runs.
    pub(crate) fn insert_filtered(&self, id: RequestId, stream: FilterStream) {
        self.lock()
            .insert(StreamKey(id), Entry::Filtered(Box::new(stream)));
    }

    /// Puts back a filter-only stream taken out with [`Streams::remove`].
    pub(crate) fn insert_filtered_boxed(&self, id: RequestId, stream: Box<FilterStream>) {
        self.lock().insert(StreamKey(id), Entry::Filtered(stream));
    }

    /// Runs a chunk of the filter-only stream `id` and writes its `chunk_result` frame body
    /// into `body`. A chunk whose text is larger than [`INLINE_FILTER_BYTES`] is given back
    /// untouched, for the blocking pool (the size is learned from the text the filters need
    /// anyway, so an ordinary chunk pays for no separate look).
    pub(crate) fn filter_chunk(
        &self,
        engine: &Engine,
        (id, seq): (&RequestId, u64),
        llm_response: Map<String, Value>,
        body: &mut Vec<u8>,
    ) -> FilterOutcome {
        let mut map = self.lock();
        match map.get_mut(&id.as_id_ref() as &dyn IdKey) {
            Some(Entry::Filtered(stream)) => stream.chunk(engine, (id, seq), llm_response, body),
            _ => FilterOutcome::NotFiltered,
        }
    }

    /// Where a chunk of stream `id` goes; a chunk of a stream without hooks is counted as
    /// answered. Allocates nothing.
    pub(crate) fn route_chunk(&self, id: IdRef<'_>) -> ChunkRoute {
        let mut map = self.lock();
        match map.get_mut(&id as &dyn IdKey) {
            Some(Entry::Plain { chunks }) => {
                *chunks += 1;
                ChunkRoute::Plain
            }
            Some(Entry::Filtered(_)) => ChunkRoute::Filtered,
            Some(Entry::Hooked { .. }) => ChunkRoute::Hooked,
            None => ChunkRoute::Unknown,
        }
    }

    /// Whether stream `id` runs hooks or filters on its chunks (so they are not answered on
    /// the allocation-free path); with no `id`, whether any open stream does. Counts nothing.
    pub(crate) fn runs_hooks(&self, id: Option<IdRef<'_>>) -> bool {
        let runs = |entry: &Entry| matches!(entry, Entry::Filtered(_) | Entry::Hooked { .. });
        let map = self.lock();
        match id {
            Some(id) => map.get(&id as &dyn IdKey).is_some_and(runs),
            None => map.values().any(runs),
        }
    }

    /// Queues a command for the task of stream `id`; gives it back when the stream has no
    /// task (any more) or its queue is full, which the in-flight cap rules out.
    pub(crate) fn queue(&self, id: &RequestId, command: Command) -> Result<(), Command> {
        let map = self.lock();
        match map.get(&id.as_id_ref() as &dyn IdKey) {
            Some(Entry::Hooked { queue }) => queue.try_send(command).map_err(|err| match err {
                mpsc::error::TrySendError::Full(command)
                | mpsc::error::TrySendError::Closed(command) => command,
            }),
            _ => Err(command),
        }
    }

    /// Takes stream `id` out of the table.
    pub(crate) fn remove(&self, id: &RequestId) -> Option<Removed> {
        let entry = self.lock().remove(&id.as_id_ref() as &dyn IdKey)?;
        Some(removed(entry))
    }

    /// Takes every stream out of the table.
    pub(crate) fn drain(&self) -> Vec<(RequestId, Removed)> {
        self.lock()
            .drain()
            .map(|(key, entry)| (key.0, removed(entry)))
            .collect()
    }
}

impl Removed {
    /// What the read loop closes itself: the chunks answered and the text held back, or the
    /// queue of a stream whose task closes it.
    pub(crate) fn into_answered(self) -> Result<(u64, String), mpsc::Sender<Command>> {
        match self {
            Removed::Plain { chunks } => Ok((chunks, String::new())),
            Removed::Filtered(filters) => Ok(filters.close()),
            Removed::Hooked { queue } => Err(queue),
        }
    }
}

fn removed(entry: Entry) -> Removed {
    match entry {
        Entry::Plain { chunks } => Removed::Plain { chunks },
        Entry::Filtered(stream) => Removed::Filtered(stream),
        Entry::Hooked { queue } => Removed::Hooked { queue },
    }
}

/// One builtin filter of a stream, with its streaming state.
struct Filter {
    entry: Arc<HookEntry>,
    /// `None` once the filter missed its deadline on a chunk (its state is lost with the
    /// abandoned run): from then on the stream's text is withheld, never passed on unfiltered.
    stream: Option<StreamRedactor>,
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

/// The state a stream keeps between chunks.
pub(crate) struct StreamState {
    filters: Vec<Filter>,
    /// The hooks that are not builtin filters, as a plan of their own.
    pub(crate) commands: Option<Plan>,
    /// The text emitted so far (at most `max_emitted` bytes), for `full_content`.
    pub(crate) emitted: String,
    /// The most text kept in `emitted`.
    max_emitted: usize,
    /// `emitted` escaped as the contents of a JSON string, kept alongside it so that a
    /// chunk's `full_content` is not escaped again from its start for every chunk.
    emitted_json: String,
}

impl StreamState {
    /// The state of a stream of `plan` that keeps up to [`MAX_FULL_CONTENT_BYTES`] of text.
    fn new(plan: &Plan) -> StreamState {
        StreamState::with_max_emitted(plan, MAX_FULL_CONTENT_BYTES)
    }

    /// The state of a stream of `plan` that keeps up to `max_emitted` bytes of the text
    /// emitted so far for `full_content`.
    pub(crate) fn with_max_emitted(plan: &Plan, max_emitted: usize) -> StreamState {
        let mut filters = Vec::new();
        let mut commands = Vec::new();
        for entry in &plan.hooks {
            match (&entry.config.hook_type, &entry.builtin) {
                (HookType::Builtin, Some(redactor)) => filters.push(Filter {
                    entry: Arc::clone(entry),
                    stream: Some(StreamRedactor::new(Arc::clone(redactor))),
                }),
                // A builtin without a compiled filter is the runner's to refuse.
                _ => commands.push(Arc::clone(entry)),
            }
        }
        let commands = (!commands.is_empty()).then(|| Plan {
            event: plan.event,
            hooks: commands,
            sequential: plan.sequential,
        });
        StreamState {
            filters,
            commands,
            emitted: String::new(),
            max_emitted,
            emitted_json: String::new(),
        }
    }

    /// The display names of the stream's hooks in the order their records come: the
    /// filters, then the command hooks.
    fn record_names(&self) -> impl Iterator<Item = &str> + '_ {
        let commands = self.commands.iter().flat_map(|plan| plan.hooks.iter());
        self.filters
            .iter()
            .map(|filter| &filter.entry)
            .chain(commands)
            .map(|entry| entry.config.display_name())
    }

    /// The builtin filters' hook entries, in the order they run.
    pub(crate) fn filter_entries(&self) -> impl Iterator<Item = &Arc<HookEntry>> + '_ {
        self.filters.iter().map(|filter| &filter.entry)
    }

    /// Adds text to what was emitted, dropping the oldest beyond the bound.
    pub(crate) fn push_emitted(&mut self, text: &str) {
        if self.commands.is_none() {
            // Only command hooks read `full_content`.
            return;
        }
        self.emitted.push_str(text);
        if self.emitted.len() > self.max_emitted {
            let mut cut = self.emitted.len() - self.max_emitted;
            while !self.emitted.is_char_boundary(cut) {
                cut += 1;
            }
            self.emitted.drain(..cut);
            // Rare (past 8 MiB of text): escaped afresh.
            self.emitted_json.clear();
            push_escaped(&mut self.emitted_json, &self.emitted);
        } else {
            push_escaped(&mut self.emitted_json, text);
        }
    }

    /// Writes into `json` (replacing what it held) the JSON of `full_content` for a chunk
    /// whose (filtered) text is `text`: what was emitted so far, then `text`.
    fn write_full_content_json(&self, json: &mut String, text: &str) {
        json.clear();
        json.reserve(self.emitted_json.len() + text.len() + 8);
        json.push('"');
        json.push_str(&self.emitted_json);
        push_escaped(json, text);
        json.push('"');
    }

    /// Ends the filters: what each held back, through the filters after it.
    pub(crate) fn flush(&mut self) -> String {
        let mut carry = String::new();
        for filter in &mut self.filters {
            // A filter that missed its deadline withholds what it held.
            let Some(stream) = &mut filter.stream else {
                return String::new();
            };
            let mut out = stream.push(&carry);
            out.push_str(&stream.finish());
            carry = out;
        }
        carry
    }
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
    async fn chunk(
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
    fn chunk(
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
    fn answer(
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

/// A chunk after the filters: its text before and after them, and their records.
pub(crate) struct Filtered {
    pub(crate) original: String,
    pub(crate) text: String,
    pub(crate) results: Vec<HookResult>,
}

/// Runs the filters of `state` on the chunk `llm_response` and puts the chunk, as the filters
/// left it, into `input` (`llm_response` and `content`) for the command hooks and the
/// aggregate. `(hooks, last)`: the plan's length, and whether the chunk ends the text (what
/// the filters hold back then comes out with it). Runs in the calling thread, whatever the
/// chunk's size: callers send chunks larger than [`INLINE_FILTER_BYTES`] to
/// [`run_filters_bounded`]. A filter that missed its deadline on an earlier chunk withholds
/// this one too (see [`Filter::stream`]), as its failure policy says.
pub(crate) fn run_filters(
    state: &mut StreamState,
    input: &mut Map<String, Value>,
    llm_response: Map<String, Value>,
    (hooks, last): (usize, bool),
    default_on_failure: FailurePolicy,
) -> Filtered {
    let response = Value::Object(llm_response);
    let original = chunk_text(&response);
    run_filters_on(
        state,
        input,
        (response, original),
        (hooks, last),
        default_on_failure,
    )
}

/// [`run_filters`] on a chunk whose text (`original`, [`chunk_text`] of `response`) is
/// already known.
fn run_filters_on(
    state: &mut StreamState,
    input: &mut Map<String, Value>,
    (response, original): (Value, String),
    (hooks, last): (usize, bool),
    default_on_failure: FailurePolicy,
) -> Filtered {
    let mut results: Vec<HookResult> = Vec::with_capacity(hooks);
    let mut text = original.clone();
    let mut missed = false;
    for filter in &mut state.filters {
        let started = Instant::now();
        if missed {
            // The text is withheld already: the filters after it have nothing to filter.
            results.push(builtin_record(&filter.entry, None, Duration::ZERO));
            continue;
        }
        let Some(stream) = &mut filter.stream else {
            let (record, withheld) = missed_record(&filter.entry, default_on_failure, started);
            results.push(record);
            text = withheld;
            missed = true;
            continue;
        };
        let filtered = filter_step(stream, &text, last);
        let output = (filtered != text).then(|| filtered.clone());
        results.push(builtin_record(&filter.entry, output, started.elapsed()));
        text = filtered;
    }
    filtered_chunk(input, response, original, text, results)
}

/// [`run_filters`] for a chunk of any size: one whose text is larger than
/// [`INLINE_FILTER_BYTES`] goes through each filter on the blocking pool (at most
/// [`hookd_runner::fire::MAX_BLOCKING_FILTERS`] at once, daemon-wide), within the filter's
/// hook timeout, so that no chunk holds the daemon's threads. A filter that misses its
/// deadline fails closed: its record is a timed-out hook under its failure policy, the chunk's
/// text is replaced by [`hookd_runner::fire::withheld_text`], and the stream's later text is
/// withheld too (the filter's state went with the abandoned run). The filters after a missed
/// one do not run on the chunk (their records say they changed nothing).
pub(crate) async fn run_filters_bounded(
    state: &mut StreamState,
    input: &mut Map<String, Value>,
    llm_response: Map<String, Value>,
    (hooks, last): (usize, bool),
    default_on_failure: FailurePolicy,
) -> Filtered {
    if chunk_text_len(&llm_response) <= INLINE_FILTER_BYTES {
        return run_filters(
            state,
            input,
            llm_response,
            (hooks, last),
            default_on_failure,
        );
    }
    let response = Value::Object(llm_response);
    let original = chunk_text(&response);
    let mut results: Vec<HookResult> = Vec::with_capacity(hooks);
    let mut text = original.clone();
    let mut missed = false;
    for filter in &mut state.filters {
        let started = Instant::now();
        if missed {
            // The text is withheld already: the filters after it have nothing to filter.
            results.push(builtin_record(&filter.entry, None, Duration::ZERO));
            continue;
        }
        let Some(mut stream) = filter.stream.take() else {
            missed = true;
            let (record, withheld) = missed_record(&filter.entry, default_on_failure, started);
            results.push(record);
            text = withheld;
            continue;
        };
        let timeout = Duration::from_millis(filter.entry.config.timeout_ms());
        let unfiltered = std::mem::take(&mut text);
        let ran = run_filter_blocking(timeout, move || {
            let filtered = filter_step(&mut stream, &unfiltered, last);
            (stream, unfiltered, filtered)
        })
        .await;
        match ran {
            Some((stream, unfiltered, filtered)) => {
                filter.stream = Some(stream);
                let output = (filtered != unfiltered).then(|| filtered.clone());
                results.push(builtin_record(&filter.entry, output, started.elapsed()));
                text = filtered;
            }
            None => {
                let (record, withheld) = missed_record(&filter.entry, default_on_failure, started);
                results.push(record);
                text = withheld;
                missed = true;
            }
        }
    }
    filtered_chunk(input, response, original, text, results)
}

/// One filter's step over a chunk's text; with `last`, what it holds back comes out too.
fn filter_step(stream: &mut StreamRedactor, text: &str, last: bool) -> String {
    let mut filtered = stream.push(text);
    if last {
        filtered.push_str(&stream.finish());
    }
    filtered
}

/// Puts the filtered chunk into `input` and returns it with the filters' records.
fn filtered_chunk(
    input: &mut Map<String, Value>,
    mut response: Value,
    original: String,
    text: String,
    results: Vec<HookResult>,
) -> Filtered {
    if text != original {
        if let Value::Object(response) = &mut response {
            hookd_core::aggregate::replace_response_text(response, &text);
        }
    }
    input.insert("llm_response".to_owned(), response);
    input.insert("content".to_owned(), Value::String(text.clone()));
    Filtered {
        original,
        text,
        results,
    }
}

/// The length in bytes of the text [`chunk_text`] would return for `llm_response`, found
/// without building it.
fn chunk_text_len(llm_response: &Map<String, Value>) -> usize {
    if let Some(text) = llm_response.get("text").and_then(Value::as_str) {
        return text.len();
    }
    llm_response
        .get("candidates")
        .and_then(|candidates| candidates.get(0))
        .and_then(|candidate| candidate.get("content"))
        .and_then(|content| content.get("parts"))
        .and_then(Value::as_array)
        .map_or(0, |parts| {
            parts.iter().filter_map(part_text).map(str::len).sum()
        })
}

/// Whether a chunk of a filter-only stream is too large to be filtered by the read loop.
#[cfg(test)]
pub(crate) fn needs_blocking_filter(llm_response: &Map<String, Value>) -> bool {
    chunk_text_len(llm_response) > INLINE_FILTER_BYTES
}

/// The record of a filter that missed its deadline (on this chunk or an earlier one): a
/// timed-out hook under its failure policy, whose output withholds the text; and that text.
fn missed_record(
    entry: &HookEntry,
    default_on_failure: FailurePolicy,
    started: Instant,
) -> (HookResult, String) {
    let timeout_ms = entry.config.timeout_ms();
    let run = HookRun {
        outcome: HookOutcome::TimedOut { timeout_ms },
        stdout: String::new(),
        stderr: String::new(),
        duration: started.elapsed(),
    };
    let policy = entry.config.on_failure().unwrap_or(default_on_failure);
    let mut record = apply_failure_policy(hook_result(entry, run), policy);
    withhold_text(&mut record, timeout_ms);
    (
        record,
        withheld_text(entry.config.display_name(), timeout_ms),
    )
}

/// A chunk's records and their aggregate, kept for the audit log and the last runs.
struct Answered {
    results: Vec<HookResult>,
    aggregate: Aggregate,
}

/// Aggregates a chunk's records (against the firing's `input`), writes its `chunk_result`
/// frame body into `body` (emptied first, its room kept) and returns the aggregate; adds the
/// text the chunk emits to what `full_content` will hold.
fn chunk_result(
    engine: &Engine,
    input: &Map<String, Value>,
    state: &mut StreamState,
    (id, seq): (&RequestId, u64),
    filtered: &Filtered,
    body: &mut Vec<u8>,
) -> Aggregate {
    let Filtered {
        original,
        text,
        results,
    } = filtered;
    let aggregate = hookd_core::aggregate::aggregate(HookEventName::AfterModel, results, input);
    let emitted = replacement_text(&aggregate).unwrap_or_else(|| text.clone());
    state.push_emitted(&emitted);
    let content = (emitted != *original).then_some(emitted);
    let max_frame_bytes = engine.max_frame_bytes;
    let written = results::write_chunk_result_body(
        body,
        id,
        seq,
        content.as_deref(),
        &aggregate,
        results,
        max_frame_bytes,
    );
    if !written {
        // Rare (hooks at their output caps): cut to fit the frame limit.
        let message = ServerMessage::ChunkResult(ChunkResultMessage {
            id: id.clone(),
            seq,
            content,
            result: convert::event_result(&aggregate, results),
        });
        let frame = crate::wire::encode_fitted(message, max_frame_bytes);
        body.clear();
        body.extend_from_slice(&frame);
    }
    aggregate
}

/// The text of the response the aggregate puts in place of the chunk, if it replaces it:
/// `hookSpecificOutput.llm_response` of the merged output, when it is an object.
pub(crate) fn replacement_text(aggregate: &hookd_core::aggregate::Aggregate) -> Option<String> {
    aggregate
        .final_output
        .as_ref()?
        .get("hookSpecificOutput")?
        .get("llm_response")
        .filter(|response| response.is_object())
        .map(chunk_text)
}

/// The record of a builtin filter's run on one chunk: a hook that exited 0, whose output
/// replaces the chunk's text (`{"content": ...}`, hookd's chunk text) when the filter changed it.
fn builtin_record(entry: &HookEntry, filtered: Option<String>, duration: Duration) -> HookResult {
    let output = filtered.map(|content| json!({ "content": content }));
    HookResult {
        name: entry.config.display_name().to_owned(),
        source: entry.source,
        event: HookEventName::AfterModel,
        success: true,
        output_format: output.as_ref().map(|_| OutputFormat::Json),
        output,
        stdout: String::new(),
        stderr: String::new(),
        exit_code: Some(0),
        duration,
        error: None,
        outcome: HookOutcome::Exited { code: 0 },
        failure: None,
        warning: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_finds_streams_by_borrowed_ids() {
        let streams = Streams::default();
        streams.insert_plain(RequestId::Number(7));
        streams.insert_plain(RequestId::from("s"));
        let (queue, _rx) = mpsc::channel(1);
        streams.insert_hooked(RequestId::from("h"), queue);
        // (id, route)
        let cases = [
            (IdRef::Number(7), ChunkRoute::Plain),
            (IdRef::String("7"), ChunkRoute::Unknown),
            (IdRef::String("s"), ChunkRoute::Plain),
            (IdRef::Number(8), ChunkRoute::Unknown),
            (IdRef::String("h"), ChunkRoute::Hooked),
        ];
        for (id, route) in cases {
            assert_eq!(streams.route_chunk(id), route, "{id:?}");
        }
        assert!(matches!(
            streams.remove(&RequestId::Number(7)),
            Some(Removed::Plain { chunks: 1 })
        ));
        assert_eq!(streams.route_chunk(IdRef::Number(7)), ChunkRoute::Unknown);
        assert_eq!(streams.len(), 2);
        // A plain stream has no queue.
        assert!(
            streams
                .queue(&RequestId::from("s"), Command::Close)
                .is_err()
        );
        assert!(streams.queue(&RequestId::from("h"), Command::Close).is_ok());
        // The queue holds one command.
        assert!(
            streams
                .queue(&RequestId::from("h"), Command::Close)
                .is_err()
        );
        assert_eq!(streams.drain().len(), 2);
        assert_eq!(streams.len(), 0);
    }

    /// A plan of one redact filter built from `raw` (its settings), with `timeout_ms`.
    fn filter_plan(raw: Value, timeout_ms: u64) -> Plan {
        let raw = raw.as_object().cloned().unwrap_or_default();
        let redactor = hookd_core::redact::Redactor::from_raw(&raw).expect("the filter");
        let entry = HookEntry {
            event: HookEventName::AfterModel,
            config: hookd_core::HookConfig {
                hook_type: HookType::Builtin,
                command: None,
                name: Some("redact".to_owned()),
                description: None,
                timeout_ms: Some(timeout_ms),
                env: Vec::new(),
                raw,
            },
            source: hookd_core::Source::Project,
            origin: hookd_core::Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: hookd_core::trust::HookTrust::NotRequired,
            builtin: Some(Arc::new(redactor)),
            identity: Default::default(),
        };
        Plan {
            event: HookEventName::AfterModel,
            hooks: vec![Arc::new(entry)],
            sequential: false,
        }
    }

    fn chunk(text: &str) -> Map<String, Value> {
        let response = json!({"candidates": [{"content": {"parts": [text]}}]});
        response.as_object().cloned().unwrap_or_default()
    }

    #[tokio::test]
    async fn large_chunks_are_filtered_off_the_read_loop_and_fail_closed() {
        let secret = format!("ghp_{}", "A1".repeat(20));
        let large = format!("{}{secret} end", "word ".repeat(40 * 1024));
        assert!(needs_blocking_filter(&chunk(&large)));
        assert!(!needs_blocking_filter(&chunk("small")));

        // In time: the secret is redacted, as on the read loop.
        let plan = filter_plan(json!({"builtin": "redact"}), 60_000);
        let mut state = StreamState::new(&plan);
        let mut input = Map::new();
        let filtered = run_filters_bounded(
            &mut state,
            &mut input,
            chunk(&large),
            (1, true),
            FailurePolicy::Allow,
        )
        .await;
        assert!(!filtered.text.contains(&secret));
        assert!(filtered.text.contains("[REDACTED:github-token]"));
        assert!(filtered.results[0].success);

        // Heavy patterns, 4 MiB of text and a 1 ms deadline: the text is withheld, the record
        // is a timed-out hook under its policy, and the stream's later text is withheld too.
        let patterns: Vec<Value> = (0..12)
            .map(|i| json!({"name": format!("p{i}"), "regex": format!(r"(\w+\s?){{3}}x{i}")}))
            .collect();
        // (on_failure, decision)
        let cases = [("allow", None), ("deny", Some(json!("deny")))];
        for (on_failure, decision) in cases {
            let raw = json!({"builtin": "redact", "patterns": patterns, "on_failure": on_failure});
            let plan = filter_plan(raw, 1);
            let mut state = StreamState::new(&plan);
            let huge = format!("{}{secret}", "héllo wörld ab1 x ".repeat(200 * 1024));
            for text in [huge.as_str(), "a small chunk after it"] {
                let mut input = Map::new();
                let filtered = run_filters_bounded(
                    &mut state,
                    &mut input,
                    chunk(text),
                    (1, false),
                    FailurePolicy::Allow,
                )
                .await;
                let withheld = hookd_runner::fire::withheld_text("redact", 1);
                assert_eq!(filtered.text, withheld, "{on_failure}");
                assert_eq!(input.get("content"), Some(&Value::String(withheld.clone())));
                let record = &filtered.results[0];
                assert!(!record.success, "{on_failure}");
                assert!(matches!(
                    record.outcome,
                    HookOutcome::TimedOut { timeout_ms: 1 }
                ));
                let output = record.output.as_ref().expect("an output");
                assert_eq!(output.get("content"), Some(&Value::String(withheld)));
                assert_eq!(output.get("decision").cloned(), decision, "{on_failure}");
            }
            assert_eq!(state.flush(), "", "what the filter held is withheld");
        }
    }

    #[test]
    fn replacement_text_reads_the_merged_llm_response() {
        let aggregate = |output: Option<Value>| hookd_core::aggregate::Aggregate {
            success: true,
            final_output: output,
            all_outputs: Vec::new(),
            errors: Vec::new(),
            total_duration: Duration::ZERO,
        };
        let cases = [
            (None, None),
            (Some(json!({"decision": "allow"})), None),
            (
                Some(json!({"hookSpecificOutput": {"llm_response": null}})),
                None,
            ),
            (
                Some(json!({"hookSpecificOutput": {"llm_response": {"text": "t"}}})),
                Some("t"),
            ),
            (
                Some(json!({"hookSpecificOutput": {"llm_response":
                    {"candidates": [{"content": {"parts": ["a", "b"]}}]}}})),
                Some("ab"),
            ),
        ];
        for (output, expected) in cases {
            assert_eq!(
                replacement_text(&aggregate(output.clone())).as_deref(),
                expected,
                "{output:?}"
            );
        }
    }
}
