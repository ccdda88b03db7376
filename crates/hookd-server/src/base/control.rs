//! The daemon's control surface: how the outside asks for a reload, and how the daemon reports
//! its lifecycle to a service manager.
//!
//! [`Control`] is a cheap handle the embedder keeps (the `hookd` binary turns SIGHUP into
//! [`Control::request_reload`]). [`Lifecycle`] is implemented by the embedder to hear about
//! readiness, reloads, shutdown and watchdog ticks (the `hookd` binary forwards them to
//! systemd's notify socket); the daemon calls it from the tasks whose progress the events
//! prove, so a wedged accept loop stops the watchdog pings.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// A handle to a running daemon's control requests. Clones share the same daemon.
#[derive(Clone, Default)]
pub struct Control {
    reload: Arc<Notify>,
}

impl Control {
    /// A new handle, not yet attached to a daemon (attach it through
    /// [`crate::ServerConfig::control`]).
    pub fn new() -> Control {
        Control::default()
    }

    /// Asks the daemon to re-read every settings layer and rebuild every registry. Requests
    /// made while a reload is running are merged into one more reload after it.
    pub fn request_reload(&self) {
        self.reload.notify_one();
    }

    /// Resolves when a reload was requested.
    pub(crate) async fn reload_requested(&self) {
        self.reload.notified().await;
    }
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Control").finish_non_exhaustive()
    }
}

/// What a service manager wants to hear from the daemon. Every method has a no-op default.
pub trait Lifecycle: Send + Sync {
    /// The registry is loaded and the listener is accepting; `status` is a one-line summary.
    fn ready(&self, status: &str) {
        let _ = status;
    }

    /// A reload begins (a `ready` follows when it is done).
    fn reloading(&self) {}

    /// The daemon begins a graceful stop.
    fn stopping(&self) {}

    /// The daemon is alive and its accept loop is making progress.
    fn watchdog(&self) {}

    /// How often [`Lifecycle::watchdog`] should be called; `None` disables the pings.
    fn watchdog_interval(&self) -> Option<Duration> {
        None
    }

    /// A new one-line status summary.
    fn status(&self, status: &str) {
        let _ = status;
    }
}
