//! The test kit every test of hookd shares (a dev-dependency only, never published).
//!
//! - [`daemon`]: the real daemon ([`hookd_server::run`]) in-process on a socket in a temp dir,
//!   with its own home and project, plus helpers to fire events, watch processes and memory,
//!   and speak the wire protocol raw. Its items are re-exported at the crate root.
//! - [`env`]: the hermetic environment for a child process (`hookd`, `hookctl`, a relay): a
//!   temp `HOME` and none of the host's own configuration directories.
//! - [`process`]: children killed when dropped, readiness by connecting to a socket (never by
//!   sleeping), and [`DaemonProcess`]: the daemon as a process of its own, for the tests of
//!   the `hookd` binary (signals, limits, logs, service managers).
//! - [`imports`]: the import-order guard of crates whose modules are flat files.
//! - Hook script builders: [`write`], [`write_script`], [`Daemon::script`], [`settings`],
//!   [`command_hook`].

pub mod daemon;
pub mod env;
pub mod imports;
pub mod process;

pub use daemon::*;
pub use env::{HOST_VARS, Hermetic};
pub use process::{DaemonProcess, KillOnDrop, wait_for_socket, write_script};
