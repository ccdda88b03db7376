//! AfterModel stream sessions, and watching which events have hooks.
//!
//! A [`Stream`] sends the chunks of one model response; the daemon computed the plan once when
//! the stream opened and holds `llm_request`, so each chunk carries only its `llm_response`.
//! Chunks may be pipelined: [`Stream::send_chunk`] returns as soon as the chunk is queued, and
//! results come back strictly one per chunk, in order, from [`Stream::next_result`]. At most
//! [`STREAM_WINDOW`] chunks are in flight; past that, `send_chunk` first takes a result off
//! the wire and keeps it for `next_result`, so a caller that sends everything before reading
//! anything never deadlocks and never makes the connection buffer without bound.

use std::collections::VecDeque;

use hookd_protocol::{
    ChunkRequest, ChunkResultMessage, ClientMessage, HookedEventsMessage, RequestId, ServerMessage,
    StreamCloseRequest, StreamOpenRequest, WireEnv, encode,
};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};

use crate::Client;
use crate::connection::Route;
use crate::error::{ClientError, Result};

/// How many chunks of one stream may be in flight (sent, result not yet received) before
/// [`Stream::send_chunk`] waits for a result.
pub const STREAM_WINDOW: usize = 256;

/// An AfterModel stream to open. The client assigns the stream's id.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRequest {
    /// The absolute directory the agent runs in; also the project directory.
    pub cwd: String,
    /// The agent's session id.
    pub session_id: String,
    /// The path of the agent's transcript.
    pub transcript_path: String,
    /// The environment for this stream's hooks, overriding the connection's.
    pub env: Option<WireEnv>,
    /// The agent's plans directory.
    pub plans_dir: Option<String>,
    /// What every chunk's hooks receive besides the chunk: `llm_request` and any other input
    /// field. Sent once.
    pub input: Map<String, Value>,
}

impl StreamRequest {
    /// A stream for `cwd` with an empty input and no session, transcript, environment or plans
    /// dir.
    pub fn new(cwd: impl Into<String>) -> Self {
        StreamRequest {
            cwd: cwd.into(),
            session_id: String::new(),
            transcript_path: String::new(),
            env: None,
            plans_dir: None,
            input: Map::new(),
        }
    }

    /// The same stream with this `llm_request` in its input.
    pub fn with_llm_request(mut self, llm_request: Value) -> Self {
        self.input.insert("llm_request".to_owned(), llm_request);
        self
    }

    fn into_wire(self, id: RequestId) -> StreamOpenRequest {
        StreamOpenRequest {
            id,
            event: "AfterModel".to_owned(),
            cwd: self.cwd,
            session_id: self.session_id,
            transcript_path: self.transcript_path,
            env: self.env,
            plans_dir: self.plans_dir,
            input: self.input,
        }
    }
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEnd {
    /// The results that had not been read with [`Stream::next_result`], in order.
    pub results: Vec<ChunkResultMessage>,
    /// How many chunks the daemon answered.
    pub chunks: u64,
    /// The text the stream's filters held back; emit it after the last chunk.
    pub flush: String,
}

/// An open AfterModel stream. Dropping it before it is closed cancels it on the daemon (best
/// effort).
#[derive(Debug)]
pub struct Stream {
    client: Client,
    id: RequestId,
    answers: mpsc::Receiver<ServerMessage>,
    hooks: u64,
    generation: u64,
    next_seq: u64,
    /// Chunks sent whose result has not been taken off the channel yet.
    unreceived: usize,
    /// Results taken off the channel but not returned yet.
    ready: VecDeque<ChunkResultMessage>,
    /// The daemon's `stream_closed`, if it ended the stream by itself (cancel, shutdown).
    closed: Option<hookd_protocol::StreamClosedMessage>,
    /// The stream failed, or was closed: nothing more can be sent.
    finished: bool,
}

impl Client {
    /// Opens an AfterModel stream and waits for the daemon's `stream_opened`.
    ///
    /// The daemon computes the stream's plan now, from the project's settings as they are, and
    /// keeps it for the stream's life.
    pub async fn open_stream(&self, request: StreamRequest) -> Result<Stream> {
        let id = self.next_id();
        let body = encode(&ClientMessage::StreamOpen(request.into_wire(id.clone())));
        // Room for every result of a full window, the close and an error: the connection's
        // reader never waits for this stream.
        let (sender, mut answers) = mpsc::channel(STREAM_WINDOW + 2);
        self.register(id.clone(), Route::Stream(sender))?;
        if let Err(error) = self.send(body).await {
            self.abandon(&id, false);
            return Err(error);
        }
        let opened = match answers.recv().await {
            Some(ServerMessage::StreamOpened(opened)) => opened,
            Some(other) => return Err(crate::unexpected_or_server_error("stream_open", other)),
            None => return Err(ClientError::Disconnected),
        };
        Ok(Stream {
            client: self.clone(),
            id,
            answers,
            hooks: opened.hooks,
            generation: opened.generation,
            next_seq: 0,
            unreceived: 0,
            ready: VecDeque::new(),
            closed: None,
            finished: false,
        })
    }

    /// The events with at least one enabled hook for the project directory `cwd` (absolute).
    /// An event not listed has no hook: an agent may skip sending it.
    pub async fn hooked_events(&self, cwd: impl Into<String>) -> Result<HookedEventsMessage> {
        let id = self.next_id();
        let message = ClientMessage::HookedEvents(hookd_protocol::HookedEventsRequest {
            id: id.clone(),
            cwd: cwd.into(),
            subscribe: false,
        });
        match self.request(id, message, false).await? {
            ServerMessage::HookedEvents(answer) => Ok(answer),
            other => Err(crate::unexpected_or_server_error("hooked_events", other)),
        }
    }

    /// Watches which events have hooks for `cwd`: waits for the current answer, then the
    /// watch holds the newest one, updated whenever the project's registry changes.
    ///
    /// Dropping the watch cancels it on the daemon (best effort).
    pub async fn watch_hooked_events(&self, cwd: impl Into<String>) -> Result<HookedEventsWatch> {
        let id = self.next_id();
        let body = encode(&ClientMessage::HookedEvents(
            hookd_protocol::HookedEventsRequest {
                id: id.clone(),
                cwd: cwd.into(),
                subscribe: true,
            },
        ));
        let (sender, mut latest) = watch::channel(None);
        self.register(id.clone(), Route::Latest(sender))?;
        if let Err(error) = self.send(body).await {
            self.abandon(&id, false);
            return Err(error);
        }
        // The first answer, or the error that ends the watch. Dropped while waiting, the
        // watch is cancelled.
        let guard = crate::AbandonOnDrop {
            client: self,
            id: &id,
            cancel: true,
            armed: true,
        };
        let first = match latest.wait_for(Option::is_some).await {
            Ok(first) => first.clone(),
            Err(_) => None,
        };
        latest.mark_unchanged();
        match first {
            Some(ServerMessage::HookedEvents(current)) => {
                let mut guard = guard;
                guard.armed = false;
                Ok(HookedEventsWatch {
                    client: self.clone(),
                    id: id.clone(),
                    current,
                    latest,
                    finished: false,
                })
            }
            // An error ended the route already; nothing to cancel.
            Some(other) => {
                let mut guard = guard;
                guard.cancel = false;
                Err(crate::unexpected_or_server_error("hooked_events", other))
            }
            None => {
                let mut guard = guard;
                guard.cancel = false;
                Err(ClientError::Disconnected)
            }
        }
    }
}

impl Stream {
    /// The stream's id, for [`Client::cancel`].
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// How many hooks run on each chunk; `0`: every chunk comes back at once, unchanged.
    pub fn hooks(&self) -> u64 {
        self.hooks
    }

    /// The generation of the registry the stream's plan came from.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// How many chunks have been sent whose result [`Stream::next_result`] has not returned.
    pub fn in_flight(&self) -> usize {
        self.unreceived + self.ready.len()
    }

    /// Sends the next chunk and returns its `seq` (0, 1, 2, ... in sending order). Returns
    /// once the chunk is queued for the socket; its result comes from
    /// [`Stream::next_result`]. With [`STREAM_WINDOW`] chunks in flight, it first waits for
    /// a result.
    pub async fn send_chunk(&mut self, llm_response: Map<String, Value>) -> Result<u64> {
        if self.finished {
            return Err(ClientError::StreamEnded);
        }
        while self.unreceived >= STREAM_WINDOW {
            let result = self.receive().await?;
            self.ready.push_back(result);
        }
        let seq = self.next_seq;
        let body = encode(&ClientMessage::Chunk(ChunkRequest {
            id: self.id.clone(),
            seq,
            llm_response,
        }));
        self.client.send(body).await?;
        self.next_seq += 1;
        self.unreceived += 1;
        Ok(seq)
    }

    /// The result of the oldest chunk whose result has not been returned yet, waiting for it;
    /// `None` when every chunk sent has been answered.
    pub async fn next_result(&mut self) -> Result<Option<ChunkResultMessage>> {
        if let Some(result) = self.ready.pop_front() {
            return Ok(Some(result));
        }
        if self.unreceived == 0 {
            return Ok(None);
        }
        self.receive().await.map(Some)
    }

    /// Closes the stream: the daemon answers the chunks still in flight, then releases what
    /// the filters held back. Returns the results not read yet and that text.
    pub async fn close(mut self) -> Result<StreamEnd> {
        let mut results: Vec<ChunkResultMessage> = self.ready.drain(..).collect();
        if self.finished {
            // Ended by the daemon (cancelled, or it is stopping): its last word stands.
            return match self.closed.take() {
                Some(closed) => Ok(StreamEnd {
                    results,
                    chunks: closed.chunks,
                    flush: closed.flush,
                }),
                None => Err(ClientError::StreamEnded),
            };
        }
        let body = encode(&ClientMessage::StreamClose(StreamCloseRequest {
            id: self.id.clone(),
        }));
        self.client.send(body).await?;
        loop {
            match self.answers.recv().await {
                Some(ServerMessage::ChunkResult(result)) => {
                    self.unreceived = self.unreceived.saturating_sub(1);
                    results.push(result);
                }
                Some(ServerMessage::StreamClosed(closed)) => {
                    self.finished = true;
                    return Ok(StreamEnd {
                        results,
                        chunks: closed.chunks,
                        flush: closed.flush,
                    });
                }
                Some(other) => {
                    self.finished = true;
                    return Err(crate::unexpected_or_server_error("stream_close", other));
                }
                None => {
                    self.finished = true;
                    return Err(ClientError::Disconnected);
                }
            }
        }
    }

    /// Takes the next result off the channel.
    async fn receive(&mut self) -> Result<ChunkResultMessage> {
        if self.finished {
            return Err(ClientError::StreamEnded);
        }
        match self.answers.recv().await {
            Some(ServerMessage::ChunkResult(result)) => {
                self.unreceived = self.unreceived.saturating_sub(1);
                Ok(result)
            }
            Some(ServerMessage::StreamClosed(closed)) => {
                // The daemon ended the stream (cancelled, or stopping) before these results.
                self.finished = true;
                self.unreceived = 0;
                self.closed = Some(closed);
                Err(ClientError::StreamEnded)
            }
            Some(other) => {
                self.finished = true;
                Err(crate::unexpected_or_server_error("chunk", other))
            }
            None => {
                self.finished = true;
                Err(ClientError::Disconnected)
            }
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if !self.finished {
            self.client.abandon(&self.id, true);
        }
    }
}

/// The events that have hooks for one project, kept current by the daemon.
///
/// Dropping it cancels the watch on the daemon (best effort).
#[derive(Debug)]
pub struct HookedEventsWatch {
    client: Client,
    id: RequestId,
    current: HookedEventsMessage,
    latest: watch::Receiver<Option<ServerMessage>>,
    finished: bool,
}

impl HookedEventsWatch {
    /// The watch's request id, for [`Client::cancel`].
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The newest answer received, without waiting.
    pub fn current(&mut self) -> &HookedEventsMessage {
        if let Some(ServerMessage::HookedEvents(answer)) = &*self.latest.borrow_and_update() {
            self.current = answer.clone();
        }
        &self.current
    }

    /// Whether `event` has at least one hook, by the newest answer.
    pub fn is_hooked(&mut self, event: &str) -> bool {
        self.current().events.iter().any(|name| name == event)
    }

    /// Waits for the next answer (a registry change of the project) and returns it; `None`
    /// once the watch has ended (the connection was lost or the daemon stopped). Answers
    /// that came while nobody waited are skipped: this is always the newest.
    pub async fn changed(&mut self) -> Option<Result<HookedEventsMessage>> {
        if self.finished {
            return None;
        }
        // An error sent as the route's last state is still seen here before the end.
        if self.latest.changed().await.is_err() {
            self.finished = true;
            return None;
        }
        let latest = self.latest.borrow_and_update().clone();
        match latest {
            Some(ServerMessage::HookedEvents(answer)) => {
                self.current = answer.clone();
                Some(Ok(answer))
            }
            Some(other) => {
                self.finished = true;
                Some(Err(crate::unexpected_or_server_error(
                    "hooked_events",
                    other,
                )))
            }
            None => None,
        }
    }
}

impl Drop for HookedEventsWatch {
    fn drop(&mut self) {
        if !self.finished {
            self.client.abandon(&self.id, true);
        }
    }
}
