//! The hookd daemon as a library.
//!
//! [`run`] serves clients on a listening Unix socket until its cancellation token fires; the
//! `hookd` binary and the end-to-end tests call the same function. [`bind_socket`] binds a
//! socket the way the daemon must (private directory, 0600 socket, refusing to start over a
//! live daemon, replacing a stale socket file).
//!
//! Roles: the accept loop here (connection semaphore, peer-uid check, graceful stop),
//! [`connection`] (one per client: handshake, requests, run tasks, subscriptions), `stream`
//! (its AfterModel stream sessions), `io` (its frame reading and writing),
//! `registries` (registries per project dir, built on first use, cached, rebuilt and swapped
//! when their files change), `watcher` (watches the settings files and triggers the
//! rebuilds), `lastgood` (a bad save keeps the last good version of a file in force),
//! `manage` (enable/disable by editing settings files), `trust` (the project-hook trust
//! requests, hookd's project-hook trust), `lastrun` (each hook's latest run),
//! `convert` (engine types to wire types), `audit` (the audit log and its writer thread),
//! `limits` (the connection limit's saturation log, each connection's in-flight cap),
//! `background` (async hooks and detached events, run apart from any connection under their
//! own bound and stop grace). [`serve_one`] serves one connection in a process of its own
//! with the same code: the engine the relay falls back on when no daemon answers.

mod audit;
mod background;
mod config;
mod connection;
mod control;
mod convert;
mod engine;
mod eventrun;
mod io;
mod lastgood;
mod lastrun;
mod limits;
mod manage;
mod memory;
mod oneshot;
mod recorder;
mod registries;
mod relayed;
mod request;
mod results;
mod runstats;
mod shared;
mod socket;
mod state;
mod stats;
mod story;
mod stream;
mod trust;
mod watcher;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use audit::AuditError;
pub use config::{
    AuditConfig, DEFAULT_BACKGROUND_GRACE, DEFAULT_MAX_BACKGROUND_RUNS, ServerConfig,
};
pub use control::{Control, Lifecycle};
pub use hookd_core::breaker::BreakerSettings;
pub use hookd_runner::spawn::{OpenFilesLimit, raise_open_files_limit};
pub use hookd_state::Limits as StateLimits;
pub use hookd_state::token::{TOKEN_ENV_VAR as STATE_TOKEN_ENV_VAR, TokenKey as StateTokenKey};
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
