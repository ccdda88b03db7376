//! The requests that follow a registry over time: `subscribe` (a `registry_changed` frame
//! per swapped registry) and `hooked_events` (the hooked events, again after each swap when
//! it subscribes). Each subscription runs in a task of the connection until it is
//! cancelled, its client goes or the daemon stops.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use hookd_protocol::{HookedEventsRequest, ServerMessage, SubscribeRequest};

use crate::convert;
use crate::request::context::Connection;
use crate::wire::send;

impl Connection {
    /// Answers a `hooked_events` request; with `subscribe`, sends the answer again after each
    /// swap of the project's registry until the request is cancelled, the client goes or the
    /// daemon stops.
    pub(crate) async fn hooked_events(&self, request: HookedEventsRequest) {
        let dir = PathBuf::from(&request.cwd);
        if !request.subscribe {
            let snapshot = self.shared.registries.get(&dir).await;
            let reply = convert::hooked_events(request.id, request.cwd, &snapshot);
            return send(&self.sink, &reply).await;
        }
        let Some(token) = self.register(&request.id).await else {
            return;
        };
        self.add_subscription(&request.id);
        // Subscribed before the first answer, so no change after it can be missed.
        let mut changes = self.shared.registries.subscribe();
        let snapshot = self.shared.registries.get(&dir).await;
        let reply = convert::hooked_events(request.id.clone(), request.cwd.clone(), &snapshot);
        send(&self.sink, &reply).await;
        let shared = Arc::clone(&self.shared);
        let sink = Arc::clone(&self.sink);
        let inflight = Arc::clone(&self.inflight);
        let id = request.id;
        let cwd = request.cwd;
        self.runs.spawn(async move {
            let cancelled = loop {
                let change = tokio::select! {
                    _ = token.cancelled() => break true,
                    _ = shared.shutdown.cancelled() => break false,
                    change = changes.recv() => change,
                };
                let snapshot = match change {
                    Ok(change) if change.snapshot.project_dir == dir => {
                        Arc::clone(&change.snapshot)
                    }
                    Ok(_) => continue,
                    // Every answer is the whole state: after missing some, the current one
                    // is all the client needs.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        shared.registries.get(&dir).await
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break false,
                };
                let reply = convert::hooked_events(id.clone(), cwd.clone(), &snapshot);
                send(&sink, &reply).await;
            };
            // A cancelled subscription's id was freed by the cancel (or its connection is
            // gone); the id may be in use by a newer request already.
            if !cancelled {
                inflight
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
            }
        });
    }

    /// Answers a `subscribe` request, then sends a `registry_changed` frame per swapped
    /// registry until the subscription is cancelled, the client goes or the daemon stops.
    ///
    /// Announcements come from a bounded broadcast channel: a client that does not read
    /// makes only its own subscription fall behind, losing the oldest frames (counted in the
    /// next frame's `missed`), and never slows the daemon.
    pub(crate) async fn subscribe(&self, request: SubscribeRequest) {
        let Some(token) = self.register(&request.id).await else {
            return;
        };
        self.add_subscription(&request.id);
        // Subscribed before the acknowledgement, so no change after it can be missed.
        let mut changes = self.shared.registries.subscribe();
        // The daemon watches the files of the projects it has loaded: a directory no event
        // has named yet is loaded now, so that its files are watched and its changes are
        // reported from the acknowledgement on.
        if let Some(cwd) = &request.cwd {
            self.shared.registries.get(Path::new(cwd)).await;
        }
        let ack = ServerMessage::Subscribed(hookd_protocol::SubscribedMessage {
            id: request.id.clone(),
            cwd: request.cwd.clone(),
        });
        send(&self.sink, &ack).await;
        let sink = Arc::clone(&self.sink);
        let inflight = Arc::clone(&self.inflight);
        let shutdown = self.shared.shutdown.clone();
        let filter = request.cwd.map(std::path::PathBuf::from);
        let id = request.id;
        self.runs.spawn(async move {
            let mut missed = 0u64;
            let cancelled = loop {
                let change = tokio::select! {
                    _ = token.cancelled() => break true,
                    _ = shutdown.cancelled() => break false,
                    change = changes.recv() => change,
                };
                match change {
                    Ok(change) => {
                        if filter
                            .as_ref()
                            .is_some_and(|dir| *dir != change.snapshot.project_dir)
                        {
                            continue;
                        }
                        let frame = convert::registry_changed(id.clone(), &change, missed);
                        missed = 0;
                        send(&sink, &frame).await;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(lost)) => {
                        missed = missed.saturating_add(lost);
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break false,
                }
            };
            // As for `hooked_events`: a cancel has freed the id already.
            if !cancelled {
                inflight
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&id);
            }
        });
    }
}
