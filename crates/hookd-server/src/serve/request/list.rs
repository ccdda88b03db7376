//! The `list` request: the hooks of a project's registry, each with its latest run and
//! whether the circuit breaker paused it.

use std::path::Path;

use hookd_protocol::{ListRequest, ServerMessage};
use hookd_runner::breakers::Breakers;

use crate::convert;
use crate::lastrun::LastRuns;
use crate::registries::Registries;

/// Answers a `list` request with the registry of the given project dir.
pub(crate) async fn answer(
    registries: &Registries,
    last_runs: &LastRuns,
    breakers: &Breakers,
    request: ListRequest,
) -> ServerMessage {
    let snapshot = registries.get(Path::new(&request.cwd)).await;
    let message = convert::list(request.id, request.cwd, &snapshot, last_runs, breakers);
    ServerMessage::List(message)
}
