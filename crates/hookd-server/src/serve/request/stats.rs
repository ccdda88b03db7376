//! The `stats` request: what ran since the daemon started (`crate::runstats`), with its
//! background work and its circuit breaker.

use std::time::Instant;

use hookd_protocol::{ServerMessage, StatsRequest};

use crate::background::Background;
use crate::convert;
use crate::engine::Engine;
use crate::stats::Stats;

/// Answers `stats`; `started` is when the daemon started.
pub(crate) fn answer(
    engine: &Engine,
    background: &Background,
    started: Instant,
    request: StatsRequest,
) -> ServerMessage {
    let mut stats = engine.recorder.run_stats.response(
        request.id,
        started.elapsed().as_millis() as u64,
        Stats::get(&engine.stats.events_served),
    );
    stats.background = Some(background.status());
    stats.breaker = Some(convert::breaker_status(&engine.runner.breakers));
    stats.telemetry = engine
        .recorder
        .telemetry
        .as_ref()
        .map(|telemetry| Box::new(telemetry.status()));
    ServerMessage::Stats(stats)
}
