//! Event requests and their answers, whole or streamed hook by hook.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::Stream;
use hookd_protocol::{
    EventRequest as WireEventRequest, EventResult, HookRecord, RequestId, ServerMessage, WireEnv,
};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::Client;
use crate::error::{ClientError, Result};

/// An event to fire. The client assigns the request id.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRequest {
    /// The event's name, such as `BeforeTool`.
    pub event: String,
    /// The event-specific input fields (`tool_name`, `tool_input`, `prompt`, ...).
    pub input: Map<String, Value>,
    /// The absolute directory the agent runs in; also the project directory.
    pub cwd: String,
    /// The agent's session id.
    pub session_id: String,
    /// The path of the agent's transcript.
    pub transcript_path: String,
    /// The environment for this request's hooks, overriding the connection's.
    pub env: Option<WireEnv>,
    /// The agent's plans directory.
    pub plans_dir: Option<String>,
    /// The project's root when it is not `cwd` (the wire request's `project_dir`).
    pub project_dir: Option<String>,
    /// Answer at once and run the hooks in the background (the wire request's `detach`).
    pub detach: bool,
}

impl EventRequest {
    /// An event with an empty input and no session, transcript, environment or plans dir.
    pub fn new(event: impl Into<String>, cwd: impl Into<String>) -> Self {
        EventRequest {
            event: event.into(),
            input: Map::new(),
            cwd: cwd.into(),
            session_id: String::new(),
            transcript_path: String::new(),
            env: None,
            plans_dir: None,
            project_dir: None,
            detach: false,
        }
    }

    /// The same event with this input.
    pub fn with_input(mut self, input: Map<String, Value>) -> Self {
        self.input = input;
        self
    }

    /// The wire request for this event under `id`.
    pub(crate) fn into_wire(self, id: RequestId, stream_hooks: bool) -> WireEventRequest {
        WireEventRequest {
            id,
            event: self.event,
            input: self.input,
            cwd: self.cwd,
            session_id: self.session_id,
            transcript_path: self.transcript_path,
            env: self.env,
            stream_hooks,
            plans_dir: self.plans_dir,
            project_dir: self.project_dir,
            relayed_by: None,
            detach: self.detach,
        }
    }
}

/// The answer to an event: the aggregate result and the registry generation it ran against.
#[derive(Debug, Clone, PartialEq)]
pub struct EventResponse {
    /// The aggregate, as an agent consumes it.
    pub result: EventResult,
    /// The generation of the project's hook registry the event ran against.
    pub generation: u64,
}

/// One item of an [`EventStream`].
#[derive(Debug, Clone, PartialEq)]
pub enum EventStreamItem {
    /// A hook finished. Hooks arrive in completion order.
    Hook {
        /// The hook's position in the plan (and in the result's `hooks`).
        index: u64,
        /// What it did.
        hook: HookRecord,
    },
    /// The aggregate; always the last item.
    Result(EventResponse),
}

/// The answers to a streaming event: each hook as it finishes, then the result.
///
/// Also a [`Stream`]. After the result, an error, or a lost connection, it yields nothing
/// more. Dropping it before the result cancels the event on the daemon (best effort).
/// Hook results wait in a small bounded buffer: a stream that is not read holds up the
/// connection's other answers.
#[derive(Debug)]
pub struct EventStream {
    client: Client,
    id: RequestId,
    answers: mpsc::Receiver<ServerMessage>,
    finished: bool,
}

impl EventStream {
    pub(crate) fn new(
        client: Client,
        id: RequestId,
        answers: mpsc::Receiver<ServerMessage>,
    ) -> Self {
        EventStream {
            client,
            id,
            answers,
            finished: false,
        }
    }

    /// The event request's id, for [`Client::cancel`].
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The next item, or `None` once the stream has ended.
    pub async fn recv(&mut self) -> Option<Result<EventStreamItem>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// Skips the remaining hook results and returns the aggregate.
    pub async fn finish(mut self) -> Result<EventResponse> {
        loop {
            match self.recv().await {
                Some(Ok(EventStreamItem::Result(response))) => return Ok(response),
                Some(Ok(EventStreamItem::Hook { .. })) => {}
                Some(Err(error)) => return Err(error),
                // Only reachable if `finish` follows an item that ended the stream.
                None => return Err(ClientError::Disconnected),
            }
        }
    }
}

impl Stream for EventStream {
    type Item = Result<EventStreamItem>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(None);
        }
        let message = ready!(this.answers.poll_recv(cx));
        let item = match message {
            Some(ServerMessage::HookResult(message)) => {
                return Poll::Ready(Some(Ok(EventStreamItem::Hook {
                    index: message.index,
                    hook: message.hook,
                })));
            }
            Some(ServerMessage::Result(message)) => Ok(EventStreamItem::Result(EventResponse {
                result: message.result,
                generation: message.generation,
            })),
            Some(other) => Err(crate::unexpected_or_server_error("event", other)),
            None => Err(ClientError::Disconnected),
        };
        this.finished = true;
        Poll::Ready(Some(item))
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        if !self.finished {
            self.client.abandon(&self.id, true);
        }
    }
}
