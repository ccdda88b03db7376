//! Reading hookd's hooks and settings from disk, and replacing files atomically.
//!
//! `hookd-core` decides what settings mean and does no I/O; this crate reads them: every
//! configuration file is read as [`configfile`] reads it (bounded in size, never blocking on
//! a FIFO, regular files only); [`sysfile`] checks that a system-wide settings file is safe
//! to load; [`loader`] finds and reads every layer of a host's settings (system, user,
//! project, extensions, a host's own files) and assembles the registry input; [`verify`]
//! reads and hashes what a project hook's trust key covers, and seals the verified bytes of
//! its scripts for the runner to execute. It starts no process: `hookd-runner` does that, and
//! the client `hookctl` links this crate alone. [`atomic`] is how the daemon and `hookctl` write
//! every file people and other programs read (settings and hooks files, install manifests,
//! the one-shot engine's record). [`httpsecret`] is the per-user secret of the loopback HTTP
//! listener, which both the daemon and `hookctl install --transport http` read.

pub mod atomic;
pub mod configfile;
pub mod httpsecret;
pub mod loader;
pub mod sysfile;
pub mod verify;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The modules in their order: a module may import only from the modules before it.
    const LAYERS: [&str; 6] = [
        "atomic",
        "configfile",
        "httpsecret",
        "sysfile",
        "verify",
        "loader",
    ];

    /// Every `crate::` path outside tests and comments in each module leads to an earlier
    /// module (so the modules import no circle), and every module has its place in [`LAYERS`].
    #[test]
    fn modules_import_only_from_earlier_modules() {
        hookd_testkit::imports::check_module_order(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &LAYERS,
            2,
        );
    }
}
