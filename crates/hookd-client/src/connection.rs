//! The connection's background tasks and the table that routes answers to their requests.
//!
//! One reader task owns the socket's read half and hands each answer to whoever waits for its
//! id; one writer task owns the write half and sends frames queued on a bounded channel. When
//! the reader sees the connection end, it closes the table, which drops every waiter's sender,
//! so every pending request fails with `Disconnected` instead of hanging.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hookd_protocol::{Frame, FrameCodec, RequestId, ServerMessage, parse_server_message};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, FramedWrite};

/// Where the answers to one request go.
pub(crate) enum Route {
    /// A request answered by exactly one message.
    Once(oneshot::Sender<ServerMessage>),
    /// A streaming event: `hook_result` messages, then the final one.
    Stream(mpsc::Sender<ServerMessage>),
    /// A subscription: messages are dropped when its consumer falls behind, so an unread
    /// subscription never holds up the connection's other answers. Only an `error` ends it.
    Lossy(mpsc::Sender<ServerMessage>),
    /// A watch whose every message is the whole current state (`hooked_events` with
    /// `subscribe`): the latest message replaces the one before, read or not, so an unread
    /// watch holds up nothing and its consumer always sees the newest state. Only an `error`
    /// ends it.
    Latest(tokio::sync::watch::Sender<Option<ServerMessage>>),
}

impl Route {
    /// Whether `message` is the last one this route gets. Subscriptions and watches last until
    /// an `error` (a `cancel` is answered on the cancel's own id); for the others the message
    /// says.
    fn ends_with(&self, message: &ServerMessage) -> bool {
        match self {
            Route::Lossy(_) | Route::Latest(_) => matches!(message, ServerMessage::Error(_)),
            Route::Once(_) | Route::Stream(_) => message.is_final(),
        }
    }
}

/// The requests waiting for answers, shared by the client and the reader task.
#[derive(Default)]
pub(crate) struct PendingTable {
    /// Set once the connection is gone; no request can be registered after that.
    closed: bool,
    routes: HashMap<RequestId, Route>,
    /// Where a copy of every answer goes, when a caller asked ([`crate::Client::tap`]).
    tap: Option<mpsc::Sender<ServerMessage>>,
}

/// The shared handle on the pending table.
#[derive(Clone, Default)]
pub(crate) struct Pending(Arc<Mutex<PendingTable>>);

impl Pending {
    /// Locks the table. A panic while it was held cannot leave it inconsistent (every
    /// operation is a single map update), so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, PendingTable> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request; `false` if the connection is already gone.
    pub(crate) fn register(&self, id: RequestId, route: Route) -> bool {
        let mut table = self.lock();
        if table.closed {
            return false;
        }
        table.routes.insert(id, route);
        true
    }

    /// Sends a copy of every answer from now on to `tap` (replacing an earlier tap).
    pub(crate) fn set_tap(&self, tap: mpsc::Sender<ServerMessage>) {
        self.lock().tap = Some(tap);
    }

    /// Forgets a request whose caller no longer waits.
    pub(crate) fn remove(&self, id: &RequestId) {
        self.lock().routes.remove(id);
    }

    /// Marks the connection gone and drops every route, failing their waiters.
    pub(crate) fn close(&self) {
        let routes = {
            let mut table = self.lock();
            table.closed = true;
            std::mem::take(&mut table.routes)
        };
        // Dropped outside the lock: dropping a sender wakes its receiver's task.
        drop(routes);
    }

    /// Delivers one answer to its request. Unroutable answers (no id, an abandoned request)
    /// are dropped: nobody waits for them.
    async fn deliver(&self, message: ServerMessage) {
        if let Some(tap) = &self.lock().tap {
            // Bounded: a tap that is not read loses frames, never holds up the connection.
            let _ = tap.try_send(message.clone());
        }
        let Some(id) = message.id().cloned() else {
            return;
        };
        let stream = {
            let mut table = self.lock();
            let ends = match table.routes.get(&id) {
                None => return,
                Some(route) => route.ends_with(&message),
            };
            match table.routes.get(&id) {
                None => return,
                // A non-streaming request never asked for hook results; ignore stray ones.
                Some(Route::Once(_)) if !ends => return,
                Some(Route::Stream(sender)) if !ends => sender.clone(),
                Some(Route::Lossy(sender)) if !ends => {
                    // Full: the consumer lags and loses this frame; closed: it is gone.
                    let _ = sender.try_send(message);
                    return;
                }
                Some(Route::Latest(sender)) if !ends => {
                    sender.send_replace(Some(message));
                    return;
                }
                Some(_) => match table.routes.remove(&id) {
                    Some(Route::Once(sender)) => {
                        // The receiver may be gone already; that is its choice.
                        let _ = sender.send(message);
                        return;
                    }
                    Some(Route::Stream(sender)) => sender,
                    Some(Route::Lossy(sender)) => {
                        let _ = sender.try_send(message);
                        return;
                    }
                    Some(Route::Latest(sender)) => {
                        // The error is the last state; dropping the sender ends the watch
                        // once it is read.
                        sender.send_replace(Some(message));
                        return;
                    }
                    None => return,
                },
            }
        };
        // Awaited outside the lock. A full stream channel holds up this connection's reader,
        // which is the backpressure a slow stream consumer must exert.
        let _ = stream.send(message).await;
    }
}

/// Reads answers until the connection ends, then fails whatever is still pending.
pub(crate) async fn read_loop(mut frames: FramedRead<OwnedReadHalf, FrameCodec>, pending: Pending) {
    while let Some(Ok(frame)) = frames.next().await {
        // An oversized frame cannot be routed (its id is unknown), and skipping it would leave
        // its request waiting forever: end the connection, so every pending request fails
        // with `Disconnected` instead. The daemon keeps its frames within the limit it
        // announced, so this only happens with a broken or foreign peer.
        let Frame::Data(body) = frame else {
            break;
        };
        if let Ok(message) = parse_server_message(&body) {
            pending.deliver(message).await;
        }
    }
    pending.close();
}

/// How many queued bytes the writer gathers into one write at most.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// Writes queued frames until every sender is gone or the socket fails. Frames queued while
/// one is written go out together: a pipelining caller gets few large writes, a lone request
/// is written at once.
pub(crate) async fn write_loop(
    mut frames: FramedWrite<OwnedWriteHalf, FrameCodec>,
    mut outgoing: mpsc::Receiver<Bytes>,
    pending: Pending,
) {
    while let Some(body) = outgoing.recv().await {
        let mut written = frames.feed(body).await;
        while written.is_ok() && frames.write_buffer().len() < WRITE_BATCH_BYTES {
            match outgoing.try_recv() {
                Ok(body) => written = frames.feed(body).await,
                Err(_) => break,
            }
        }
        if written.is_err() || frames.flush().await.is_err() {
            // Requests already queued or sent will get no answer the daemon can read.
            pending.close();
            return;
        }
    }
    // Dropping the write half shuts down the sending direction, so the daemon sees the end.
}
