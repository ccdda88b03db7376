//! The `reload` request: every settings layer read again, hooks paused by the circuit
//! breaker run again, and the registries' new state in the answer.

use hookd_protocol::{ReloadRequest, ServerMessage};

use crate::background;
use crate::convert;
use crate::engine::Engine;
use crate::registries::Registries;

/// Answers `reload` once every registry is rebuilt.
pub(crate) async fn answer(
    registries: &Registries,
    engine: &Engine,
    request: ReloadRequest,
) -> ServerMessage {
    registries.reload_all().await;
    background::resume_paused_hooks(engine);
    let registries = registries
        .snapshots()
        .await
        .iter()
        .map(|snapshot| convert::registry_status(snapshot))
        .collect();
    ServerMessage::Reloaded(hookd_protocol::ReloadedMessage {
        id: request.id,
        registries,
    })
}
