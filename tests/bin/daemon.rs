//! A daemon process for the end-to-end tests that must kill one (`kill -9`): binds
//! `$HOOKD_SOCKET` and serves `hookd_server::run` with the configuration of its own
//! environment, as the `hookd` binary does (on a thread with the stack for deeply nested
//! requests), until SIGTERM.

fn main() -> std::process::ExitCode {
    let Some(socket) = std::env::var_os("HOOKD_SOCKET") else {
        eprintln!("e2e-daemon: HOOKD_SOCKET is not set");
        return std::process::ExitCode::FAILURE;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("e2e-daemon: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let served = hookd_server::block_on_deep(runtime, async move {
        let listener = hookd_server::bind_socket(std::path::Path::new(&socket)).await?;
        let cancel = tokio_util::sync::CancellationToken::new();
        let stop = cancel.clone();
        tokio::spawn(async move {
            if let Ok(mut term) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            {
                term.recv().await;
            }
            stop.cancel();
        });
        let config = hookd_server::ServerConfig::from_process_env();
        hookd_server::run(listener, config, cancel).await?;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    });
    match served.map_err(Into::into).and_then(|served| served) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("e2e-daemon: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
