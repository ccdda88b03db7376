//! The answer to each kind of request, one module per kind, and [`answer`], which hands a
//! parsed request to its module.
//!
//! Handlers that need the connection (a run, a stream, a subscription, a cancel) are methods
//! of [`Connection`] (`context`); the others take only the handle they need (the registries,
//! the engine, session state) and return their answer.
//!
//! Modules, each importing only from those listed before it: `context`, `event`, `stream`,
//! `subscribe`, `cancel`, `list`, `edit`, `status`, `stats`, `reload`, then this dispatcher.

pub(crate) mod cancel;
pub(crate) mod context;
pub(crate) mod edit;
pub(crate) mod event;
pub(crate) mod list;
pub(crate) mod reload;
pub(crate) mod stats;
pub(crate) mod status;
pub(crate) mod stream;
pub(crate) mod subscribe;

use hookd_protocol::{ClientMessage, ErrorCode, ProtocolError};

pub(crate) use context::Connection;
use edit::EditRequest;

use crate::wire::send;

/// Answers one parsed request on `connection` (the read loop has checked its id already).
pub(crate) async fn answer(connection: &Connection, message: ClientMessage) {
    let shared = &*connection.shared;
    let reply = match message {
        ClientMessage::Hello(_) => ProtocolError::new(
            ErrorCode::BadRequest,
            "hello was already exchanged on this connection",
        )
        .to_server_message(),
        ClientMessage::Event(request) => return connection.event(request).await,
        ClientMessage::Cancel(request) => return connection.cancel_run(request).await,
        ClientMessage::StreamOpen(request) => return connection.stream_open(request).await,
        ClientMessage::Chunk(request) => return connection.chunk(request).await,
        ClientMessage::StreamClose(request) => return connection.stream_close(request).await,
        ClientMessage::Subscribe(request) => return connection.subscribe(request).await,
        ClientMessage::HookedEvents(request) => return connection.hooked_events(request).await,
        ClientMessage::List(request) => {
            let recorder = &shared.engine.recorder;
            let breakers = &shared.engine.runner.breakers;
            list::answer(&shared.registries, &recorder.last_runs, breakers, request).await
        }
        ClientMessage::Status(request) => status::answer(shared, request).await,
        ClientMessage::Ping(request) => status::pong(request),
        ClientMessage::Stats(request) => {
            stats::answer(&shared.engine, &shared.background, shared.started, request)
        }
        ClientMessage::Reload(request) => {
            reload::answer(&shared.registries, &shared.engine, request).await
        }
        ClientMessage::Enable(request) => {
            edit::answer(&shared.registries, EditRequest::Enable(request)).await
        }
        ClientMessage::Disable(request) => {
            edit::answer(&shared.registries, EditRequest::Disable(request)).await
        }
        ClientMessage::EnableAll(request) => {
            edit::answer(&shared.registries, EditRequest::EnableAll(request)).await
        }
        ClientMessage::DisableAll(request) => {
            edit::answer(&shared.registries, EditRequest::DisableAll(request)).await
        }
        ClientMessage::TrustPreview(request) => {
            crate::trust::answer_preview(&shared.registries, request).await
        }
        ClientMessage::Trust(request) => {
            crate::trust::answer_trust(&shared.registries, request).await
        }
        ClientMessage::Untrust(request) => {
            crate::trust::answer_untrust(&shared.registries, request).await
        }
        ClientMessage::TrustList(request) => {
            crate::trust::answer_list(&shared.registries, request).await
        }
        ClientMessage::State(request) => shared.state.answer(request).await,
    };
    send(&connection.sink, &reply).await;
}
