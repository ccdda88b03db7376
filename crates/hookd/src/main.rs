//! `hookd`: the hook daemon. Parses arguments, sets up logging, binds the socket, turns
//! SIGTERM/SIGINT into a graceful stop and hands everything to [`hookd_server::run`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

/// Runs the hooks of agent CLIs for many clients over a Unix socket.
#[derive(Debug, Parser)]
#[command(name = "hookd", version)]
struct Args {
    /// Socket path [default: $HOOKD_SOCKET, else $XDG_RUNTIME_DIR/hookd/hookd.sock, else
    /// /tmp/hookd-<uid>/hookd.sock].
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Log level or filter (tracing `EnvFilter` syntax); `RUST_LOG` is used when absent.
    #[arg(long)]
    log_level: Option<String>,
    /// Maximum number of hook processes running at once; more queue.
    #[arg(long)]
    max_hooks: Option<usize>,
    /// Maximum number of client connections served at once.
    #[arg(long)]
    max_connections: Option<usize>,
    /// Cap on each hook's captured stdout and stderr, in bytes.
    #[arg(long)]
    max_output_bytes: Option<usize>,
    /// Largest request frame accepted, in bytes.
    #[arg(long)]
    max_frame_bytes: Option<usize>,
    /// Milliseconds between SIGTERM and SIGKILL for a timed-out hook.
    #[arg(long)]
    kill_grace_ms: Option<u64>,
    /// Milliseconds a graceful stop waits for in-flight runs before killing them.
    #[arg(long)]
    shutdown_grace_ms: Option<u64>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_logging(args.log_level.as_deref());

    let mut config = hookd_server::ServerConfig::from_process_env();
    if let Some(n) = args.max_hooks {
        config.max_hooks = n.max(1);
    }
    if let Some(n) = args.max_connections {
        config.max_connections = n.max(1);
    }
    if let Some(n) = args.max_output_bytes {
        config.max_output_bytes = n;
    }
    if let Some(n) = args.max_frame_bytes {
        config.max_frame_bytes = n;
    }
    if let Some(ms) = args.kill_grace_ms {
        config.kill_grace = Duration::from_millis(ms);
    }
    if let Some(ms) = args.shutdown_grace_ms {
        config.shutdown_grace = Duration::from_millis(ms);
    }
    let socket = match args.socket {
        Some(path) => path,
        None => hookd_protocol::default_socket_path(),
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = hookd_server::bind_socket(&socket)
            .await
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        tracing::info!(socket = %socket.display(), "hookd listening");
        let cancel = CancellationToken::new();
        tokio::spawn(stop_on_signal(cancel.clone()));
        tokio::spawn(reload_on_sighup(config.control.clone()));
        let result = hookd_server::run(listener, config, cancel).await;
        // The socket file would otherwise make the next start probe a dead path.
        let _ = std::fs::remove_file(&socket);
        result.context("hookd stopped with an error")
    })
}

/// Cancels `cancel` on the first SIGTERM or SIGINT.
async fn stop_on_signal(cancel: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop hookd with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = int.recv() => tracing::info!("SIGINT: stopping"),
    }
    cancel.cancel();
}

/// Turns every SIGHUP into a reload of every settings layer.
async fn reload_on_sighup(control: hookd_server::Control) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot install the SIGHUP handler; reload with hookctl instead");
        return;
    };
    while hangup.recv().await.is_some() {
        tracing::info!("SIGHUP: reloading");
        control.request_reload();
    }
}

/// Logs to stderr; `--log-level` wins over `RUST_LOG`, default `info`.
fn init_logging(level: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let filter = match level {
        Some(level) => EnvFilter::new(level),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    };
    // Colours only for a person at a terminal, never in files or the journal.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .init();
}
