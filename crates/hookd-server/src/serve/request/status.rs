//! The requests that ask how the daemon is: `ping` (alive) and `status` (its bounds, load,
//! registries, clients, audit log, background work, circuit breaker, the managed hooks file and
//! the OpenTelemetry export).

use hookd_protocol as wire;
use hookd_protocol::{PingRequest, PongMessage, RequestId, ServerMessage, StatusRequest};

use crate::audit;
use crate::convert;
use crate::shared::Shared;
use crate::stats::Stats;

/// Answers `ping`.
pub(crate) fn pong(request: PingRequest) -> ServerMessage {
    ServerMessage::Pong(PongMessage { id: request.id })
}

/// Answers `status`.
pub(crate) async fn answer(shared: &Shared, request: StatusRequest) -> ServerMessage {
    ServerMessage::Status(status(shared, request.id).await)
}

/// The `status` response.
pub(crate) async fn status(shared: &Shared, id: RequestId) -> wire::StatusResponse {
    let max_hooks = shared.config.max_hooks as u64;
    let running =
        max_hooks.saturating_sub(shared.engine.runner.hook_slots.available_permits() as u64);
    let pending = Stats::get(&shared.stats.hooks_pending);
    let registries = shared
        .registries
        .snapshots()
        .await
        .iter()
        .map(|snapshot| convert::registry_status(snapshot))
        .collect();
    wire::StatusResponse {
        id,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pid: std::process::id(),
        uptime_ms: shared.started.elapsed().as_millis() as u64,
        connections: Stats::get(&shared.stats.connections),
        max_connections: shared.config.max_connections as u64,
        hooks_running: running,
        hooks_queued: pending.saturating_sub(running),
        max_hooks,
        max_inflight_per_connection: shared.config.max_inflight_per_connection as u64,
        events_served: Stats::get(&shared.stats.events_served),
        registries,
        audit: shared.engine.recorder.audit.as_ref().map(audit::status),
        clients: shared.engine.recorder.run_stats.connected(),
        project_hooks: Some(shared.config.project_hooks.as_str().to_owned()),
        background: Some(shared.background.status()),
        breaker: Some(convert::breaker_status(&shared.engine.runner.breakers)),
        http: shared
            .http
            .as_ref()
            .map(|(address, counters)| wire::HttpStatus {
                address: address.to_string(),
                connections: Stats::get(&counters.connections),
                max_connections: shared.config.http_max_connections as u64,
                requests: Stats::get(&counters.requests),
                sessions: shared.session_roots.len() as u64,
                refused: counters.refused(),
            }),
        managed: Some(Box::new(managed_status(shared))),
        telemetry: shared
            .engine
            .recorder
            .telemetry
            .as_ref()
            .map(|telemetry| Box::new(telemetry.status())),
    }
}

/// The managed hooks file: loaded, absent, or refused with the reason the loader gave.
fn managed_status(shared: &Shared) -> wire::ManagedStatus {
    let path = shared.registries.paths().managed.clone();
    let layers = shared.registries.shared();
    let loaded = layers.as_ref().is_some_and(|layers| {
        layers
            .layers
            .iter()
            .any(|layer| layer.source == hookd_core::Source::Managed)
    });
    let refusal = layers.as_ref().and_then(|layers| {
        layers
            .diagnostics
            .iter()
            .find(|diagnostic| diagnostic.path.as_deref() == Some(path.as_path()))
            .map(|diagnostic| diagnostic.message.clone())
    });
    let (state, reason) = match (loaded, refusal) {
        (true, _) => ("loaded", None),
        (false, Some(reason)) => ("refused", Some(reason)),
        (false, None) => ("absent", None),
    };
    wire::ManagedStatus {
        path: path.display().to_string(),
        state: state.to_owned(),
        reason,
    }
}
