//! The daemon under test, run as `hookd-bench daemon` in its own process.
//!
//! It does what the `hookd` binary does: a tokio runtime (the flavor the benchmark is asked
//! for: current-thread by default, as `hookd` runs), [`hookd_server::bind_socket`], then [`hookd_server::run`] with a
//! [`hookd_server::ServerConfig`] built from an environment, and `info` logging to stderr
//! (the parent sends that to a file). The environment is built from the arguments only, so
//! the machine's own Gemini CLI settings cannot leak in.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::echo::{announce_ready, wait_for_stdin_eof};

/// Which tokio runtime the daemon runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RuntimeFlavor {
    /// The multi-threaded runtime, as `hookd --threads N` (N > 1) uses.
    MultiThread,
    /// The single-threaded runtime, as the `hookd` binary uses by default.
    CurrentThread,
}

impl RuntimeFlavor {
    /// A runtime builder of this flavor.
    pub fn builder(self) -> tokio::runtime::Builder {
        match self {
            RuntimeFlavor::MultiThread => tokio::runtime::Builder::new_multi_thread(),
            RuntimeFlavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        }
    }

    /// The flag value that selects this flavor.
    pub fn as_arg(self) -> &'static str {
        match self {
            RuntimeFlavor::MultiThread => "multi-thread",
            RuntimeFlavor::CurrentThread => "current-thread",
        }
    }
}

/// Where the daemon child listens and which files it reads.
#[derive(Debug, Clone, clap::Args)]
pub struct DaemonArgs {
    /// The socket to listen on.
    pub socket: PathBuf,
    /// The daemon's `HOME`.
    #[arg(long)]
    pub home: PathBuf,
    /// Where the daemon looks for the system settings (a file that need not exist).
    #[arg(long)]
    pub system_settings: PathBuf,
    /// Where the daemon looks for the system defaults (a file that need not exist).
    #[arg(long)]
    pub system_defaults: PathBuf,
    /// The tokio runtime flavor.
    #[arg(long, value_enum, default_value = "current-thread")]
    pub runtime: RuntimeFlavor,
    /// Export telemetry to this OTLP/HTTP collector, as `hookd --otel-endpoint` does.
    #[arg(long)]
    pub otel_endpoint: Option<String>,
}

/// The arguments that start the daemon helper on `socket` with `home` as its `HOME`, and the
/// system layers pointing at files (in `dir`) that do not exist, so the machine's own system
/// settings stay out.
pub fn helper_args(socket: &Path, home: &Path, dir: &Path, runtime: &str) -> Vec<OsString> {
    vec![
        "daemon".into(),
        socket.into(),
        "--home".into(),
        home.into(),
        "--system-settings".into(),
        dir.join("etc-settings.json").into(),
        "--system-defaults".into(),
        dir.join("etc-system-defaults.json").into(),
        "--runtime".into(),
        runtime.into(),
    ]
}

/// Runs the daemon until stdin closes, then stops it gracefully.
pub fn serve(args: DaemonArgs) -> anyhow::Result<()> {
    init_logging();
    let mut config = hookd_server::ServerConfig::new(daemon_env(&args));
    config.telemetry.endpoint = args.otel_endpoint.clone();
    let runtime = args
        .runtime
        .builder()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = hookd_server::bind_socket(&args.socket)
            .await
            .with_context(|| format!("cannot listen on {}", args.socket.display()))?;
        let cancel = CancellationToken::new();
        // A plain thread, not a blocking task: the runtime must not wait for it at exit.
        std::thread::spawn({
            let cancel = cancel.clone();
            move || {
                wait_for_stdin_eof();
                cancel.cancel();
            }
        });
        announce_ready()?;
        hookd_server::run(listener, config, cancel)
            .await
            .context("the daemon stopped with an error")
    })
}

/// The daemon's environment: a private home, system layers pointing at files that do not
/// exist, and the benchmark's `PATH` so that hooks find `bash` and `true`.
fn daemon_env(args: &DaemonArgs) -> HashMap<String, String> {
    let mut env = HashMap::new();
    env.insert("HOME".to_owned(), args.home.display().to_string());
    env.insert(
        "PATH".to_owned(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
    );
    env.insert(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_owned(),
        args.system_settings.display().to_string(),
    );
    env.insert(
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH".to_owned(),
        args.system_defaults.display().to_string(),
    );
    env
}

/// Logs at `info` to stderr, like `hookd` does by default.
fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_writer(std::io::stderr)
        .init();
}
