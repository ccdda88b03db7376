//! The hookd daemon as a library.
//!
//! [`run`] serves clients on a listening Unix socket until its cancellation token fires; the
//! `hookd` binary and the end-to-end tests call the same function. [`bind_socket`] binds a
//! socket the way the daemon must (private directory, 0600 socket, refusing to start over a
//! live daemon, replacing a stale socket file).
//!
//! Roles: the accept loop here (connection semaphore, peer-uid check, graceful stop),
//! [`connection`] (one per client: handshake, requests, run tasks), `registries` (registries
//! per project dir, built on first use and cached), `convert` (engine types to wire types).

mod config;
mod connection;
mod convert;
mod registries;
mod shared;
mod socket;
mod stats;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::ServerConfig;
pub use socket::{BindError, bind_socket};

use shared::Shared;

/// A fatal error of the daemon (as opposed to the errors of one request or one connection,
/// which are answered or logged and never end the daemon).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The connection semaphore was closed, which only happens if the daemon is torn down.
    #[error("the connection limiter was closed")]
    LimiterClosed,
}

/// Serves clients on `listener` until `cancel` fires, then stops gracefully.
///
/// A graceful stop stops accepting, lets every in-flight run finish for up to
/// [`ServerConfig::shutdown_grace`], then kills the hooks still running (their whole process
/// groups) and returns `Ok(())`.
pub async fn run(
    listener: UnixListener,
    config: ServerConfig,
    cancel: CancellationToken,
) -> Result<(), ServerError> {
    let shared = Arc::new(Shared::new(config, cancel.clone()));
    shared.registries.preload().await;
    let connection_slots = Arc::new(Semaphore::new(shared.config.max_connections.max(1)));
    let connections = TaskTracker::new();
    let uid = nix::unistd::getuid().as_raw();

    loop {
        // Take the permit before accepting: excess clients wait in the socket's backlog.
        let permit = tokio::select! {
            _ = cancel.cancelled() => break,
            permit = Arc::clone(&connection_slots).acquire_owned() => {
                permit.map_err(|_| ServerError::LimiterClosed)?
            }
        };
        let stream = tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _addr)) => stream,
                Err(err) => {
                    // Typically EMFILE: back off instead of spinning, never give up.
                    tracing::warn!(%err, "accept failed; retrying shortly");
                    tokio::select! {
                        _ = cancel.cancelled() => break,
                        _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                    }
                }
            },
        };
        match stream.peer_cred() {
            Ok(cred) if cred.uid() == uid => {}
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

    drop(listener);
    connections.close();
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
    tracing::info!("stopped");
    Ok(())
}
