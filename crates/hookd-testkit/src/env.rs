//! The hermetic environment of a child process under test: the variables through which the
//! machine's own configuration (the developer's `~/.config`, a running hookd's socket, the
//! CLIs' own homes) would otherwise leak into a test.

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
    "HOOKD_SOCKET",
];

/// Gives `command` the home `home` and removes [`HOST_VARS`]; a test sets what it needs of
/// those afterwards (a later `env` wins).
pub fn hermetic<'a>(command: &'a mut Command, home: &Path) -> &'a mut Command {
    command.env("HOME", home);
    for var in HOST_VARS {
        command.env_remove(var);
    }
    command
}
