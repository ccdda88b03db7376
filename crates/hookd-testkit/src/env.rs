//! The hermetic environment of a child process under test: the variables through which the
//! machine's own configuration (the developer's `~/.config`, a running hookd's socket, the
//! CLIs' own homes, hookd's knobs in the runner's shell) would otherwise leak into a test.

use std::path::Path;
use std::process::Command;

/// The host's variables a test child must not inherit: where the CLIs and hookd look for
/// their files, and hookd's own knobs from the test runner's environment.
pub const HOST_VARS: &[&str] = &[
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "GEMINI_CLI_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "HOOKD_SOCKET",
    "HOOKD_RELAY_RETRY_MS",
    "HOOKD_RELAY_UNREACHABLE",
    "HOOKD_RELAY_DEADLINE_MS",
];

/// A [`Command`] made hermetic, in a builder chain.
pub trait Hermetic {
    /// Gives the command the home `home` and removes [`HOST_VARS`]; a test sets what it needs
    /// of those after this call (the last setting of a variable wins).
    fn hermetic(&mut self, home: impl AsRef<Path>) -> &mut Self;
}

impl Hermetic for Command {
    fn hermetic(&mut self, home: impl AsRef<Path>) -> &mut Self {
        self.env("HOME", home.as_ref());
        for var in HOST_VARS {
            self.env_remove(var);
        }
        self
    }
}
