//! `hookd --oneshot` for the end-to-end tests: the engine the relay runs when no daemon
//! answers, with the configuration of its own environment as the test daemon's
//! (`hookd_server::oneshot_main`, the function `hookd --oneshot` calls). Its arguments are the
//! ones the relay passes: `--oneshot --socket PATH [--plan-only]`.

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let socket = args
        .iter()
        .position(|arg| arg == "--socket")
        .and_then(|index| args.get(index + 1))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(hookd_protocol::default_socket_path);
    let plan_only = args.iter().any(|arg| arg == "--plan-only");
    let config = hookd_server::ServerConfig::from_process_env();
    match hookd_server::oneshot_main(config, &socket, plan_only) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("e2e-engine: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
