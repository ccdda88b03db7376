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
//!
//! By role: [`chunk`] is the work on one chunk that both kinds of streams share (the
//! filters, the `chunk_result`, what a stream keeps between chunks), [`filter`] the
//! filter-only stream the read loop answers, [`hooked`] the task of a stream with command
//! hooks, and this module the connection's table of open streams.

pub(crate) mod chunk;
pub(crate) mod filter;
pub(crate) mod hooked;

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};

use hookd_protocol::RequestId;
use hookd_protocol::fast::IdRef;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::engine::Engine;

pub(crate) use crate::stream::chunk::{StreamState, replacement_text, run_filters_bounded};
pub(crate) use crate::stream::filter::{FilterOutcome, FilterStream, is_filter_plan};
pub(crate) use crate::stream::hooked::{Command, StreamRun};

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
}
