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
    "COPILOT_HOME",
    "COPILOT_PROJECT_DIR",
    "HOOKD_SOCKET",
    "HOOKD_RELAY_RETRY_MS",
    "HOOKD_RELAY_UNREACHABLE",
    "HOOKD_RELAY_DEADLINE_MS",
    "HOOKD_MANAGED_HOOKS",
    "HOOKD_COPILOT_POLICY_DIR",
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
];

/// A [`Command`] made hermetic, in a builder chain.
pub trait Hermetic {
    /// Gives the command the home `home` and removes [`HOST_VARS`]; a test sets what it needs
    /// of those after this call (the last setting of a variable wins).
    fn hermetic(&mut self, home: impl AsRef<Path>) -> &mut Self;

    /// Stricter than [`Hermetic::hermetic`], for a daemon under test: nothing of the caller's
    /// environment but `PATH`, the home `home`, and Gemini CLI's system settings files and
    /// hookd's managed hooks file under `root/etc` (absent unless the test writes them), so the
    /// machine's own settings never reach it.
    fn isolated(&mut self, home: impl AsRef<Path>, root: impl AsRef<Path>) -> &mut Self;
}

impl Hermetic for Command {
    fn hermetic(&mut self, home: impl AsRef<Path>) -> &mut Self {
        self.env("HOME", home.as_ref());
        for var in HOST_VARS {
            self.env_remove(var);
        }
        self
    }

    fn isolated(&mut self, home: impl AsRef<Path>, root: impl AsRef<Path>) -> &mut Self {
        let etc = root.as_ref().join("etc");
        self.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .hermetic(home)
            .env("GEMINI_CLI_SYSTEM_SETTINGS_PATH", etc.join("settings.json"))
            .env(
                "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
                etc.join("system-defaults.json"),
            )
            .env("HOOKD_MANAGED_HOOKS", etc.join("hookd").join("hooks.json"))
    }
}
