//! The `cancel` request: stops an event run, a subscription or a stream of the connection.

use std::sync::PoisonError;

use hookd_protocol::{CancelRequest, ErrorCode, ProtocolError, ServerMessage};

use crate::request::context::Connection;
use crate::stream::Removed;
use crate::wire::send;

impl Connection {
    /// Answers a `cancel` request. A cancelled stream answers what it has queued (its hooks'
    /// runs stopped) and ends with `stream_closed`.
    pub(crate) async fn cancel_run(&self, request: CancelRequest) {
        match self
            .streams
            .remove(&request.target)
            .map(Removed::into_answered)
        {
            Some(Ok((chunks, flush))) => {
                let reply = ServerMessage::Cancelled(hookd_protocol::CancelledMessage {
                    id: request.id,
                    target: request.target.clone(),
                });
                send(&self.sink, &reply).await;
                return self.close_stream(request.target, chunks, flush).await;
            }
            // Dropping the queue lets the task end after what is queued; the token below
            // stops the running hooks.
            Some(Err(queue)) => drop(queue),
            None => {}
        }
        let is_subscription = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&request.target);
        let token = {
            let mut inflight = self
                .inflight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if is_subscription {
                // A subscription gets no answer after `cancelled`: its id is free now.
                inflight.remove(&request.target)
            } else {
                inflight.get(&request.target).cloned()
            }
        };
        let reply = match token {
            Some(token) => {
                token.cancel();
                ServerMessage::Cancelled(hookd_protocol::CancelledMessage {
                    id: request.id,
                    target: request.target,
                })
            }
            None => ProtocolError::new(
                ErrorCode::UnknownId,
                format!(
                    "no event request, subscription or stream with id {} is in flight on this \
                     connection",
                    request.target
                ),
            )
            .with_id(Some(request.id))
            .to_server_message(),
        };
        send(&self.sink, &reply).await;
    }
}
