//! The hookd daemon as a library.
//!
//! [`run`] serves clients on a listening Unix socket until its cancellation token fires; the
//! `hookd` binary and the end-to-end tests call the same function. [`bind_socket`] binds a
//! socket the way the daemon must (private directory, 0600 socket, refusing to start over a
//! live daemon, replacing a stale socket file).
//!
//! The accept loop is here (connection semaphore, peer-uid check, graceful stop);
//! [`serve_one`] serves one connection in a process of its own with the same code: the engine
//! the relay falls back on when no daemon answers.
//!
//! The crate is six rooms, one folder each; a module imports only from the rooms before its
//! own, and from the modules listed before it in its own room (a test reads the sources and
//! holds every module to this order, so no import circle can form):
//!
//! 1. `base`: configuration, socket and frame I/O, each connection's bounds, counters,
//!    latest runs, last good files, session state.
//! 2. `record`: the audit log, the `stats` counters, the log lines of runs, and the one
//!    `Recorder` every finished run goes through.
//! 3. `settings`: registries per project dir, editing settings files, project-hook trust,
//!    the watcher that triggers rebuilds.
//! 4. `reply`: writing to a client, results fitted into a frame, engine types as wire types.
//! 5. `run`: the `Engine` handle runs hold, streams, relayed AfterModel responses,
//!    background work, the run of one event.
//! 6. `serve`: the daemon's shared state, one module per request kind (`request`), the
//!    connection's read loop, the one-shot engine.
//!
//! Modules below `serve` never see the daemon's shared state: each gets the narrow handle it
//! needs (`Engine`, `Registries`, `Background`, `Recorder`).

mod base;
mod record;
mod reply;
mod run;
mod serve;
mod settings;

// Every module is also reachable by its own name (`crate::config`, `crate::request`, ...),
// so a path says what a thing is without spelling its room.
use base::{
    config, control, httpguard, httproots, io, lastgood, lastrun, limits, memory, peeruid, socket,
    state, stats,
};
use record::{audit, otlphttp, recorder, runstats, story, telemetry};
use reply::{convert, httpanswer, results, wire};
use run::{background, engine, eventrun, relayed, stream};
use serve::{connection, http, oneshot, request, shared};
use settings::{manage, registries, trust, watcher};

use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use audit::AuditError;
pub use config::{
    AuditConfig, DEFAULT_BACKGROUND_GRACE, DEFAULT_MAX_BACKGROUND_RUNS, ExportFields, ServerConfig,
    TelemetrySettings,
};
pub use control::{Control, Lifecycle};
pub use hookd_core::breaker::BreakerSettings;
pub use hookd_runner::spawn::{OpenFilesLimit, raise_open_files_limit};
pub use hookd_state::Limits as StateLimits;
pub use hookd_state::token::{TOKEN_ENV_VAR as STATE_TOKEN_ENV_VAR, TokenKey as StateTokenKey};
pub use http::{HttpListenError, HttpListener};
pub use oneshot::{
    EngineOptions, OneShotError, RecordError, block_on_deep, oneshot_main, serve_one,
};
pub use socket::{BindError, BoundSocket, bind_socket, bind_socket_file};
pub use state::{EXPIRY_BATCH, EXPIRY_INTERVAL, default_store_path, state_dir};

use shared::Shared;

/// A fatal error of the daemon (as opposed to the errors of one request or one connection,
/// which are answered or logged and never end the daemon).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The connection semaphore was closed, which only happens if the daemon is torn down.
    #[error("the connection limiter was closed")]
    LimiterClosed,
    /// The audit log the configuration asks for could not be started.
    #[error(transparent)]
    Audit(#[from] AuditError),
}

/// Serves clients on `listener` until `cancel` fires, then stops gracefully.
///
/// A graceful stop closes the listener at once, answers what connections had sent before
/// the stop (requests already received, a pending hello included), lets every in-flight run
/// finish for up to [`ServerConfig::shutdown_grace`], then kills the hooks still running
/// (their whole process groups); background runs (async hooks, detached events) get
/// [`ServerConfig::background_grace`] from the stop's start before theirs are killed and the
/// runs recorded as cut short; then it returns `Ok(())`. Requests sent after the stop began are
/// refused with `shutting_down` (nothing of theirs ran: a client may retry them).
pub async fn run(
    listener: UnixListener,
    config: ServerConfig,
    cancel: CancellationToken,
) -> Result<(), ServerError> {
    run_with_http(listener, None, config, cancel).await
}

/// [`run`], also serving hosts' HTTP hooks on `http` when given (`hookd --http`): each
/// request is a relayed event of the host its path names, run like the socket's events
/// (`docs/protocol.md`, "HTTP hooks"). The listener closes with the socket at a stop; its
/// requests in progress are answered within the same grace.
pub async fn run_with_http(
    listener: UnixListener,
    http: Option<HttpListener>,
    config: ServerConfig,
    cancel: CancellationToken,
) -> Result<(), ServerError> {
    let audit = config
        .audit
        .as_ref()
        .map(audit::AuditLog::start)
        .transpose()?;
    let mut shared = Shared::new(config, cancel.clone(), audit, None);
    shared.set_hook_socket(
        listener
            .local_addr()
            .ok()
            .and_then(|address| address.as_pathname().map(|path| path.display().to_string())),
    );
    let http_counters = Arc::new(httpguard::HttpCounters::default());
    if let Some(http) = &http {
        shared.http = Some((http.local_addr(), Arc::clone(&http_counters)));
    }
    let shared = Arc::new(shared);
    shared.registries.preload().await;
    // The watcher lives as long as the accept loop; its token stops it with the daemon.
    let watcher_stop = CancellationToken::new();
    let watcher = tokio::spawn(watcher::supervise(
        Arc::clone(&shared.registries),
        watcher_stop.clone(),
    ));
    let state_expiry = tokio::spawn(Arc::clone(&shared.state).expire_until(watcher_stop.clone()));
    let connection_slots = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    let mut gauge = limits::ConnectionGauge::new(shared.config.max_connections);
    let connections = TaskTracker::new();
    let http_task = http.map(|http| {
        http::start(
            http,
            Arc::clone(&shared),
            http_counters,
            connections.clone(),
        )
    });
    let uid = nix::unistd::getuid().as_raw();
    let lifecycle = shared.config.lifecycle.clone();
    let control = shared.config.control.clone();
    if let Some(lifecycle) = &lifecycle {
        lifecycle.ready(&shared.registries.summary());
    }
    // The watchdog ticks from the accept loop itself: if the loop wedges, the pings stop.
    let mut watchdog = lifecycle
        .as_ref()
        .and_then(|lifecycle| lifecycle.watchdog_interval())
        .map(|interval| tokio::time::interval(interval.max(Duration::from_millis(10))));

    loop {
        let housekeeping = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            _ = control.reload_requested() => Housekeeping::Reload,
            _ = tick(&mut watchdog) => Housekeeping::Watchdog,
            accepted = accept_one(&listener, &connection_slots, &mut gauge, &cancel) => {
                match accepted? {
                    Accepted::Stream(stream, permit) => Housekeeping::Serve(stream, permit),
                    Accepted::Stop => break,
                    Accepted::Retry => continue,
                }
            }
        };
        let (stream, permit) = match housekeeping {
            Housekeeping::Reload => {
                if let Some(lifecycle) = &lifecycle {
                    lifecycle.reloading();
                }
                tracing::info!("reloading every settings layer");
                shared.registries.reload_all().await;
                background::resume_paused_hooks(&shared.engine);
                if let Some(lifecycle) = &lifecycle {
                    lifecycle.ready(&shared.registries.summary());
                }
                continue;
            }
            Housekeeping::Watchdog => {
                if let Some(lifecycle) = &lifecycle {
                    lifecycle.watchdog();
                }
                continue;
            }
            Housekeeping::Serve(stream, permit) => (stream, permit),
        };
        match stream.peer_cred() {
            Ok(cred) if hookd_protocol::peer_uid_allowed(cred.uid(), uid) => {}
            Ok(cred) => {
                tracing::warn!(
                    peer_uid = cred.uid(),
                    "refused a connection from another user"
                );
                continue;
            }
            Err(err) => {
                tracing::warn!(%err, "cannot read peer credentials; connection refused");
                continue;
            }
        }
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            connection::serve(stream, shared).await;
            drop(permit);
        });
    }

    // No new connection from here on: closed at once, so a client that retries reaches the
    // next daemon (under systemd the socket stays open in systemd and queues connections
    // for it). Connections accepted already are served what they have sent.
    drop(listener);
    if let Some(task) = http_task {
        // It stops on the same signal; awaited so that no connection is accepted after this.
        cancel.cancel();
        if let Err(err) = task.await {
            tracing::error!(%err, "the HTTP listener failed");
        }
    }
    if let Some(lifecycle) = &lifecycle {
        lifecycle.stopping();
    }
    watcher_stop.cancel();
    if let Err(err) = watcher.await {
        tracing::error!(%err, "the settings watcher failed");
    }
    let _ = state_expiry.await;
    connections.close();
    let stop_began = std::time::Instant::now();
    tracing::info!(
        grace_ms = shared.config.shutdown_grace.as_millis() as u64,
        "stopping: waiting for in-flight runs"
    );
    if tokio::time::timeout(shared.config.shutdown_grace, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("in-flight runs outlived the shutdown grace; killing their hooks");
        shared.hard_stop.cancel();
        // Killing takes at most the kill grace; a client that never reads its socket must not
        // hold the daemon up beyond that.
        let bound = shared.config.kill_grace + Duration::from_secs(2);
        if tokio::time::timeout(bound, connections.wait())
            .await
            .is_err()
        {
            tracing::warn!("some connections did not close in time; exiting anyway");
        }
    }
    shared.hard_stop.cancel();
    // Background runs (async hooks, detached events) have their own grace, counted from the
    // stop's start; past it they are killed and recorded as cut short.
    shared
        .background
        .drain(
            stop_began + shared.config.background_grace,
            shared.config.kill_grace + Duration::from_secs(2),
        )
        .await;
    // Persistent workers and pre-warmed spares outlive the runs that used them; stop them
    // (their whole process groups) now that no run needs them.
    let bound = shared.config.kill_grace + Duration::from_secs(2);
    if tokio::time::timeout(bound, shared.engine.runner.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some persistent workers or spares did not stop in time");
    }
    if let Some(audit) = &shared.engine.recorder.audit {
        audit.close().await;
    }
    if let Some(telemetry) = &shared.engine.recorder.telemetry {
        telemetry.close().await;
    }
    shared.state.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// What woke the accept loop besides a stop.
enum Housekeeping {
    /// A reload was requested.
    Reload,
    /// The watchdog interval elapsed.
    Watchdog,
    /// A connection was accepted with its permit.
    Serve(tokio::net::UnixStream, tokio::sync::OwnedSemaphorePermit),
}

/// The result of one accept attempt.
enum Accepted {
    /// A connection, with the permit it holds for its lifetime.
    Stream(tokio::net::UnixStream, tokio::sync::OwnedSemaphorePermit),
    /// The daemon is stopping.
    Stop,
    /// Accepting failed (e.g. out of file descriptors); try again.
    Retry,
}

/// Takes a connection permit, then accepts one connection. Excess clients wait in the
/// socket's backlog rather than being accepted and refused; the gauge logs when that starts.
async fn accept_one(
    listener: &UnixListener,
    slots: &Arc<Semaphore>,
    gauge: &mut limits::ConnectionGauge,
    cancel: &CancellationToken,
) -> Result<Accepted, ServerError> {
    let permit = gauge
        .acquire(slots)
        .await
        .map_err(|_| ServerError::LimiterClosed)?;
    match listener.accept().await {
        Ok((stream, _addr)) => Ok(Accepted::Stream(stream, permit)),
        Err(err) => {
            // Typically EMFILE: back off instead of spinning, never give up.
            tracing::warn!(%err, "accept failed; retrying shortly");
            tokio::select! {
                _ = cancel.cancelled() => Ok(Accepted::Stop),
                _ = tokio::time::sleep(Duration::from_millis(100)) => Ok(Accepted::Retry),
            }
        }
    }
}

/// Waits for the next watchdog tick, or forever when there is no watchdog.
async fn tick(watchdog: &mut Option<tokio::time::Interval>) {
    match watchdog {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The rooms in their order, each with its modules in their order: a module may import
    /// only the modules listed before it. A module of a folder such as `serve/request/` is
    /// named `request::NAME`; the folder's own module (its `mod.rs`, here the dispatcher)
    /// comes after them.
    const ROOMS: [(&str, &[&str]); 6] = [
        (
            "base",
            &[
                "control",
                "state",
                "config",
                "io",
                "limits",
                "memory",
                "stats",
                "lastrun",
                "lastgood",
                "socket",
                "httpguard",
                "httproots",
                "peeruid",
            ],
        ),
        (
            "record",
            &[
                "audit::line",
                "audit::writer",
                "audit",
                "runstats",
                "story",
                "otlphttp",
                "telemetry",
                "recorder",
            ],
        ),
        ("settings", &["registries", "manage", "trust", "watcher"]),
        ("reply", &["wire", "results", "convert", "httpanswer"]),
        (
            "run",
            &[
                "engine",
                "stream::chunk",
                "stream::filter",
                "stream::hooked",
                "stream",
                "relayed",
                "background",
                "eventrun",
            ],
        ),
        (
            "serve",
            &[
                "shared",
                "request::context",
                "request::event",
                "request::stream",
                "request::subscribe",
                "request::cancel",
                "request::list",
                "request::edit",
                "request::status",
                "request::stats",
                "request::reload",
                "request",
                "connection",
                "http",
                "oneshot",
            ],
        ),
    ];

    /// Every module in order, as `(room, module)`.
    fn order() -> Vec<(&'static str, &'static str)> {
        ROOMS
            .iter()
            .flat_map(|(room, modules)| modules.iter().map(move |module| (*room, *module)))
            .collect()
    }

    /// The module a source file is, from its path under `src/`: `base/config.rs` is
    /// `config`, `serve/request/event.rs` is `request::event`, `serve/request/mod.rs` is
    /// `request`; `None` for the crate root and the rooms' own `mod.rs`.
    fn module_of(relative: &Path) -> Option<String> {
        let parts: Vec<String> = relative
            .with_extension("")
            .iter()
            .map(|part| part.to_string_lossy().into_owned())
            .collect();
        let mut parts = match parts.as_slice() {
            [_lib] => return None,
            [_room, module] if module == "mod" => return None,
            [_room, rest @ ..] => rest.to_vec(),
            [] => return None,
        };
        if parts.last().is_some_and(|last| last == "mod") {
            parts.pop();
        }
        Some(parts.join("::"))
    }

    /// The module a path that starts after `crate::` (or after `super::`, with `parent` the
    /// importing module's parent) leads to: the longest listed module it names. A room's name
    /// is skipped (`crate::base::config` is `config`).
    fn target(path: &[String], parent: Option<&str>, listed: &[&str]) -> Option<String> {
        let mut path: Vec<String> = path.to_vec();
        if path
            .first()
            .is_some_and(|first| ROOMS.iter().any(|(room, _)| room == first))
        {
            path.remove(0);
        }
        if let Some(parent) = parent {
            path.insert(0, parent.to_owned());
        }
        (1..=path.len())
            .rev()
            .map(|len| path[..len].join("::"))
            .find(|name| listed.contains(&name.as_str()))
    }

    /// The paths in `code` after `prefix` (`crate::` or `super::`), each as its segments;
    /// a group (`crate::{a, b::c}`, one level) gives one path per member.
    fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
        let mut found = Vec::new();
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[at + prefix.len()..];
            let mut segments = Vec::new();
            let mut rest = rest;
            loop {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if name.is_empty() {
                    break;
                }
                rest = &rest[name.len()..];
                segments.push(name);
                match rest.strip_prefix("::") {
                    Some(after) => rest = after,
                    None => break,
                }
            }
            if let Some(group) = rest.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                for member in group.split(',') {
                    let mut path = segments.clone();
                    path.extend(
                        member
                            .trim()
                            .split("::")
                            .map(|segment| segment.trim().to_owned())
                            .filter(|segment| !segment.is_empty()),
                    );
                    found.push(path);
                }
            } else {
                found.push(segments);
            }
        }
        found
    }

    fn sources(dir: &Path, into: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("source dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                sources(&path, into);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                into.push(path);
            }
        }
    }

    /// Every `crate::` and `super::` path outside tests and comments leads to a module listed
    /// before the one it is in (or to itself), so the modules, and the rooms they are in,
    /// import no circle. Every source file is a listed module in its room's folder.
    #[test]
    fn modules_import_only_from_earlier_modules() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let order = order();
        let listed: Vec<&str> = order.iter().map(|(_, module)| *module).collect();
        let mut files = Vec::new();
        sources(&src, &mut files);
        let mut seen = Vec::new();
        let mut checked = 0;
        for file in files {
            let relative = file.strip_prefix(&src).expect("under src");
            let Some(module) = module_of(relative) else {
                continue;
            };
            let room = relative.iter().next().and_then(|room| room.to_str());
            let position = order.iter().position(|(listed_room, listed_module)| {
                Some(*listed_room) == room && *listed_module == module
            });
            let Some(position) = position else {
                panic!(
                    "{}: module {module} is not listed in the {} room of ROOMS",
                    relative.display(),
                    room.unwrap_or("?")
                );
            };
            seen.push(module.clone());
            let text = std::fs::read_to_string(&file).expect("source");
            let code = text.split("\n#[cfg(test)]\nmod tests").next().unwrap_or("");
            let code: String = code
                .lines()
                .map(|line| line.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            let parent = module
                .rsplit_once("::")
                .map(|(parent, _)| parent.to_owned());
            let imports = paths_after(&code, "crate::")
                .into_iter()
                .map(|path| (path, None))
                .chain(
                    paths_after(&code, "super::")
                        .into_iter()
                        .map(|path| (path, Some(parent.clone().unwrap_or_default()))),
                );
            for (path, parent) in imports {
                let parent = parent.as_deref().filter(|parent| !parent.is_empty());
                let Some(target) = target(&path, parent, &listed) else {
                    continue;
                };
                let target_position = listed.iter().position(|name| *name == target);
                assert!(
                    target_position <= Some(position),
                    "{}: {module} (room {}) imports {target} (room {}), which comes after it; \
                     a module may import only the modules listed before it in ROOMS",
                    relative.display(),
                    order[position].0,
                    target_position.map_or("?", |at| order[at].0),
                );
                checked += 1;
            }
        }
        for module in &listed {
            assert!(
                seen.iter().any(|name| name == module),
                "{module} is listed in ROOMS but has no source file"
            );
        }
        assert!(checked > 100, "only {checked} imports found");
    }
}
