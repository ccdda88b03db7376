//! The requests of a stream a client opens (`stream_open`, `chunk`, `stream_close`): the
//! plan is made at the open; a stream without hooks is answered by the read loop, a
//! filter-only one filtered in the read loop (or on the blocking pool for a large chunk), one
//! with command hooks by a task of its own (`crate::stream`).

use std::path::Path;
use std::sync::{Arc, PoisonError};

use hookd_core::HookEventName;
use hookd_core::matcher::MatchContext;
use hookd_core::payload::{BaseFields, format_timestamp};
use hookd_protocol::{
    ChunkRequest, ChunkResultMessage, ErrorCode, ProtocolError, ServerMessage, StreamCloseRequest,
    StreamOpenRequest, StreamOpenedMessage,
};
use hookd_runner::fire::{FireRequest, ProcessKeys};
use tokio::sync::mpsc;

use crate::request::context::{
    Connection, MAX_KEPT_FILTER_BODY, empty_event_result, parse_event, unknown_stream,
};
use crate::stats::Stats;
use crate::stream::{
    ChunkRoute, Command, FilterOutcome, FilterStream, Removed, StreamRun, is_filter_plan,
};
use crate::wire::{send, unix_millis_now};

impl Connection {
    /// Answers a `stream_open` request: the plan is computed now and kept for the stream's
    /// life; a stream with hooks gets a task.
    pub(crate) async fn stream_open(&self, request: StreamOpenRequest) {
        let event = match parse_event(&request.id, &request.event) {
            Ok(event) => event,
            Err(error) => return send(&self.sink, &error.to_server_message()).await,
        };
        if event != HookEventName::AfterModel {
            let error = ProtocolError::new(
                ErrorCode::UnsupportedEvent,
                format!(
                    "{event} cannot be streamed; only AfterModel can (send each {event} as an                      event request)"
                ),
            )
            .with_id(Some(request.id));
            return send(&self.sink, &error.to_server_message()).await;
        }
        let max_streams = self.shared.config.max_inflight_per_connection.max(1);
        if self.streams.len() >= max_streams {
            let error = ProtocolError::new(
                ErrorCode::LimitReached,
                format!(
                    "this connection has {max_streams} open streams already, the most it may                      have (max_inflight_per_connection); close one first"
                ),
            )
            .with_id(Some(request.id));
            return send(&self.sink, &error.to_server_message()).await;
        }
        let Some(token) = self.register(&request.id).await else {
            return;
        };
        let snapshot = self.shared.registries.get(Path::new(&request.cwd)).await;
        let plan = snapshot.registry.plan(event, &MatchContext::default());
        let opened = ServerMessage::StreamOpened(StreamOpenedMessage {
            id: request.id.clone(),
            hooks: plan.as_ref().map_or(0, |plan| plan.hooks.len() as u64),
            generation: snapshot.generation,
        });
        // Sent before the stream can answer anything.
        send(&self.sink, &opened).await;
        let Some(plan) = plan else {
            self.streams.insert_plain(request.id);
            return;
        };
        let env = self.hook_env(request.env.as_ref());
        let plans_dir = request.plans_dir.clone().unwrap_or_else(|| {
            self.shared
                .engine
                .default_plans_dir(&snapshot.project_id, &request.session_id)
        });
        // The request is the same for every chunk: serialised once for the hooks' payloads.
        let serialized = request
            .input
            .get("llm_request")
            .and_then(|value| serde_json::to_string(value).ok())
            .map(|json| ("llm_request", Arc::new(json)))
            .into_iter()
            .collect();
        let state_token = self.shared.state.token(&request.session_id, &request.cwd);
        let fire = FireRequest {
            event,
            input: request.input,
            base: BaseFields {
                session_id: request.session_id,
                transcript_path: request.transcript_path,
                cwd: request.cwd.clone(),
                timestamp: format_timestamp(unix_millis_now()),
            },
            project_dir: request.cwd,
            plans_dir,
            env,
            env_redaction: Arc::clone(snapshot.registry.env_redaction()),
            serialized,
            process_keys: ProcessKeys::default(),
            class: hookd_runner::shares::RunClass::Foreground,
            state_token,
            host: "",
        };
        if is_filter_plan(&plan) {
            let filters = FilterStream::new(
                fire,
                &plan,
                snapshot.generation,
                Arc::clone(self.client.entry()),
            );
            self.streams.insert_filtered(request.id, filters);
            return;
        }
        // At most the in-flight cap of chunks can be queued (each holds a slot), plus the
        // close: the queue never fills.
        let capacity = self.shared.config.max_inflight_per_connection.max(1) + 1;
        let (queue, commands) = mpsc::channel(capacity);
        let run = StreamRun {
            client: Arc::clone(self.client.entry()),
            engine: Arc::clone(&self.shared.engine),
            sink: Arc::clone(&self.sink),
            inflight: Arc::clone(&self.inflight),
            id: request.id.clone(),
            token,
            gone: self.cancel.clone(),
            generation: snapshot.generation,
            output_budget: Arc::clone(&self.output_budget),
            fire,
            plan,
        };
        self.streams.insert_hooked(request.id, queue);
        self.runs.spawn(run.serve(commands));
    }

    /// Answers a `chunk` that the allocation-free path did not: a chunk of a stream with
    /// hooks is queued for its task, holding an in-flight slot until it is answered.
    pub(crate) async fn chunk(&self, request: ChunkRequest) {
        match self.streams.route_chunk(request.id.as_id_ref()) {
            ChunkRoute::Plain => {
                Stats::add(&self.shared.stats.events_served, 1);
                self.client.entry().count_event();
                let reply = ServerMessage::ChunkResult(ChunkResultMessage {
                    id: request.id,
                    seq: request.seq,
                    content: None,
                    result: empty_event_result(),
                });
                send(&self.sink, &reply).await;
            }
            ChunkRoute::Filtered => {
                // The body is written into a buffer the connection keeps, not one allocated
                // per chunk: it is copied into the queue anyway.
                let mut body = std::mem::take(
                    &mut *self
                        .filter_body
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner),
                );
                let ChunkRequest {
                    id,
                    seq,
                    llm_response,
                } = request;
                let outcome = self.streams.filter_chunk(
                    &self.shared.engine,
                    (&id, seq),
                    llm_response,
                    &mut body,
                );
                match outcome {
                    // Queued like the no-hook answers: the read loop flushes before it waits.
                    FilterOutcome::Answered => self.sink.queue_frame(&body).await,
                    FilterOutcome::TooLarge(llm_response) => {
                        let request = ChunkRequest {
                            id,
                            seq,
                            llm_response,
                        };
                        self.filter_large_chunk(request).await;
                    }
                    FilterOutcome::NotFiltered => {}
                }
                if body.capacity() <= MAX_KEPT_FILTER_BODY {
                    *self
                        .filter_body
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = body;
                }
            }
            ChunkRoute::Hooked => {
                let command = Command::Chunk {
                    seq: request.seq,
                    llm_response: request.llm_response,
                    slot: self.limit.enter(),
                };
                if self.streams.queue(&request.id, command).is_err() {
                    let error = ProtocolError::new(
                        ErrorCode::Internal,
                        format!("stream {} could not take the chunk", request.id),
                    )
                    .with_id(Some(request.id));
                    send(&self.sink, &error.to_server_message()).await;
                }
            }
            ChunkRoute::Unknown => {
                let error = unknown_stream(request.id);
                send(&self.sink, &error.to_server_message()).await;
            }
        }
    }

    /// Answers a chunk of a filter-only stream too large for the read loop to filter
    /// itself: the stream is taken out of the table, its filters run on the blocking pool
    /// ([`FilterStream::chunk_bounded`]) while this read loop waits (the daemon's other
    /// connections do not), and it is put back once the chunk is answered.
    pub(crate) async fn filter_large_chunk(&self, request: ChunkRequest) {
        let Some(Removed::Filtered(mut stream)) = self.streams.remove(&request.id) else {
            // Only a filter-only stream is routed here, and only this loop changes the table.
            let error = unknown_stream(request.id);
            return send(&self.sink, &error.to_server_message()).await;
        };
        let body = tokio::select! {
            body = stream.chunk_bounded(
                &self.shared.engine,
                (&request.id, request.seq),
                request.llm_response,
            ) => body,
            // The client is gone: nothing more can be answered.
            () = self.cancel.cancelled() => return,
        };
        self.streams.insert_filtered_boxed(request.id, stream);
        self.sink.queue_frame(&body).await;
    }

    /// Answers a `stream_close`: at once for a stream without hooks, else by its task once
    /// its queued chunks are answered.
    pub(crate) async fn stream_close(&self, request: StreamCloseRequest) {
        match self.streams.remove(&request.id).map(Removed::into_answered) {
            Some(Ok((chunks, flush))) => self.close_stream(request.id, chunks, flush).await,
            Some(Err(queue)) => {
                // The queue has room for the close (see `stream_open`); were it gone, the task
                // would close the stream anyway when the queue is dropped here.
                let _ = queue.try_send(Command::Close);
            }
            None => {
                let error = unknown_stream(request.id);
                send(&self.sink, &error.to_server_message()).await;
            }
        }
    }
}
