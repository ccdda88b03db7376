//! `hookd`: the hook daemon. Parses arguments, sets up logging, takes the listening socket
//! from systemd or binds its own, turns SIGTERM/SIGINT into a graceful stop and SIGHUP into a
//! reload, reports its lifecycle to systemd, and hands everything to [`hookd_server::run`].

mod activation;
mod logging;
mod notify;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use hookd_core::policy::FailurePolicy;
use hookd_core::trust::ProjectHookPolicy;
use tokio_util::sync::CancellationToken;

/// Runs the hooks of agent CLIs for many clients over a Unix socket.
#[derive(Debug, Parser)]
#[command(name = "hookd", version)]
struct Args {
    /// Socket path [default: $HOOKD_SOCKET, else $XDG_RUNTIME_DIR/hookd/hookd.sock, else
    /// /tmp/hookd-<uid>/hookd.sock].
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Log level or filter (tracing `EnvFilter` syntax: `debug`, `hookd::run=info,warn`, ...)
    /// [default: $RUST_LOG, else info].
    #[arg(long)]
    log_level: Option<String>,
    /// Maximum number of hook processes running at once; more queue [default: 16 per core,
    /// at least 32, at most 256].
    #[arg(long)]
    max_hooks: Option<usize>,
    /// Maximum number of client connections served at once [default: 1024].
    #[arg(long)]
    max_connections: Option<usize>,
    /// Cap on each hook's captured stdout and stderr, in bytes [default: 1048576].
    #[arg(long)]
    max_output_bytes: Option<usize>,
    /// Largest request frame accepted, in bytes [default: 67108864].
    #[arg(long)]
    max_frame_bytes: Option<usize>,
    /// Largest first frame (the hello) accepted from a new connection, in bytes [default:
    /// 1048576].
    #[arg(long)]
    max_hello_frame_bytes: Option<usize>,
    /// Bytes of partly received frames (over 64 KiB each) held across all connections; a frame
    /// beyond it is skipped and refused with limit_reached [default: 268435456].
    #[arg(long)]
    max_pending_frame_bytes: Option<usize>,
    /// Memory the cached projects' compiled redact filters may take together, in MiB; past it
    /// the least recently used projects are dropped from the cache and compiled again when
    /// next used [default: 256].
    #[arg(long)]
    compiled_budget_mib: Option<usize>,
    /// Event runs in flight on one connection before hookd stops reading its requests until
    /// one finishes [default: 1024].
    #[arg(long)]
    max_inflight_per_connection: Option<usize>,
    /// Milliseconds a new connection has to send its hello [default: 10000].
    #[arg(long)]
    handshake_timeout_ms: Option<u64>,
    /// Milliseconds between SIGTERM and SIGKILL for a timed-out hook [default: 2000].
    #[arg(long)]
    kill_grace_ms: Option<u64>,
    /// Milliseconds a graceful stop waits for in-flight runs before killing them [default:
    /// 10000].
    #[arg(long)]
    shutdown_grace_ms: Option<u64>,
    /// Background runs (async hooks, detached events such as a relayed SessionEnd) in flight
    /// at once; a run past it is not started and is logged and audited as dropped
    /// [default: 64].
    #[arg(long, value_name = "N")]
    max_background: Option<usize>,
    /// Milliseconds a graceful stop lets background runs finish, from the stop's start,
    /// before killing their hooks and recording the runs as cut short [default: 20000].
    #[arg(long, value_name = "MS")]
    background_grace_ms: Option<u64>,
    /// Failed runs in a row after which the circuit breaker pauses a hook (it then decides
    /// as its failure would, without being run); 0 turns the breaker off [default: 5].
    #[arg(long, value_name = "N")]
    breaker_threshold: Option<u32>,
    /// Milliseconds a hook stays paused before one trial run; each failed trial doubles it
    /// up to --breaker-max-backoff-ms [default: 30000].
    #[arg(long, value_name = "MS")]
    breaker_backoff_ms: Option<u64>,
    /// The longest pause of a failing hook, in milliseconds [default: 600000].
    #[arg(long, value_name = "MS")]
    breaker_max_backoff_ms: Option<u64>,
    /// What a failing hook (crash, timeout, spawn error, no decision) decides when its
    /// settings entry has no `on_failure` key: allow (Gemini CLI's behaviour), deny or ask
    /// [default: allow].
    #[arg(long, value_name = "allow|deny|ask")]
    on_failure: Option<FailurePolicy>,
    /// What a project hook the user has not trusted (`hookctl trust`) does: warn (run it and
    /// say so once, Gemini CLI's behaviour) or require (do not run it; its result names it and
    /// the command that trusts it). User, system and extension hooks are never gated.
    #[arg(long, value_name = "warn|require", default_value_t = ProjectHookPolicy::Warn)]
    project_hooks: ProjectHookPolicy,
    /// Also read Claude Code's settings files (~/.claude/settings.json,
    /// <project>/.claude/settings.json and settings.local.json) as settings layers: their
    /// hooks run, in Claude's language, for the matching Gemini events. Off by default.
    #[arg(long)]
    claude_settings: bool,
    /// Also read GitHub Copilot CLI's hook files as settings layers: every *.json of
    /// ~/.copilot/hooks/ ($COPILOT_HOME/hooks/) and of <project>/.github/hooks/ in a project
    /// Copilot trusts, but hookd.json (hookctl install's own): their hooks run, in Copilot's
    /// language, for the matching events of the other hosts. Off by default.
    #[arg(long)]
    copilot_settings: bool,
    /// Send a span per event, metrics and a log record per decision to this OpenTelemetry
    /// collector (its OTLP/HTTP base URL, e.g. http://127.0.0.1:4318), as
    /// OTEL_EXPORTER_OTLP_ENDPOINT does; the OTEL_* variables apply too and
    /// OTEL_SDK_DISABLED=true turns export off. Off by default (docs/fleet.md).
    #[arg(long, value_name = "URL")]
    otel_endpoint: Option<String>,
    /// Sensitive fields to export too, off by default: any of tool_input, command, output
    /// (comma-separated); each passes the redact filter's default patterns first.
    #[arg(long, value_name = "FIELDS", value_parser = parse_export_fields)]
    otel_include: Option<hookd_server::ExportFields>,
    /// Worker threads for the daemon's own work. 1 (the default) runs everything on one
    /// thread, which answers fastest: no request is handed between threads. Hook processes
    /// run in parallel either way; settings files are read and large requests parsed on a
    /// separate blocking pool.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Write an audit log: one JSON line per event run that had hooks to run (each hook's
    /// decision, exit code, duration and failure, and the final decision). Its directory is
    /// created (mode 0700) when missing. Off by default.
    #[arg(long, value_name = "PATH")]
    audit_log: Option<PathBuf>,
    /// Rotate the audit log before it would exceed this many bytes.
    #[arg(long, value_name = "N", default_value_t = hookd_server::AuditConfig::DEFAULT_MAX_BYTES, requires = "audit_log")]
    audit_max_bytes: u64,
    /// Rotated audit logs kept (PATH.1 newest ... PATH.N oldest); 0 keeps none.
    #[arg(long, value_name = "N", default_value_t = hookd_server::AuditConfig::DEFAULT_KEEP, requires = "audit_log")]
    audit_keep: usize,
    /// Include the stdin payload hooks were given in each audit line (prompts, tool inputs
    /// and model text: off by default).
    #[arg(long, requires = "audit_log")]
    audit_stdin: bool,
    /// Audit lines that may wait for the disk; more are dropped and counted in status, never
    /// waited for.
    #[arg(long, value_name = "N", default_value_t = hookd_server::AuditConfig::DEFAULT_QUEUE_LINES, requires = "audit_log")]
    audit_queue_lines: usize,
    /// Audit log: the most bytes of lines waiting for the disk; past it, lines are dropped and
    /// counted (one line bigger than this still gets in when nothing waits).
    #[arg(long, value_name = "BYTES", default_value_t = hookd_server::AuditConfig::DEFAULT_QUEUE_BYTES, requires = "audit_log")]
    audit_queue_bytes: usize,
    /// Also serve hosts' HTTP hooks (Claude Code's `"type": "http"`) on this loopback address,
    /// e.g. 127.0.0.1:47411 or [::1]:47411 (port 0: any free port, logged at start). Refused
    /// for an address that is not loopback. Off by default; under systemd, the socket of
    /// hookd-http.socket instead.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// The HTTP listener's secret file, created (0600, 256 random bits) when missing
    /// [default: $XDG_CONFIG_HOME/hookd/http.secret, else ~/.config/hookd/http.secret].
    #[arg(long, value_name = "PATH")]
    http_secret_file: Option<PathBuf>,
    /// Most HTTP connections held at once; past it a new connection closes the one idle the
    /// longest [default: 1024].
    #[arg(long, value_name = "N")]
    http_max_connections: Option<usize>,
    /// Answer the one connection on stdin (a connected Unix socket) with the daemon's engine,
    /// then exit: what hookd-relay runs when no daemon answers. It reads the settings files
    /// and trust records itself, with the options the daemon of --socket last started with.
    #[arg(long)]
    oneshot: bool,
    /// With --oneshot: run no hook; each decides by its failure policy (what hookd-relay asks
    /// for when a daemon has the event but has not answered in time).
    #[arg(long, requires = "oneshot")]
    plan_only: bool,
    /// Print this man page (roff) and exit.
    #[arg(long, hide = true)]
    man: bool,
}

fn main() -> std::process::ExitCode {
    // Started by the daemon to evaluate a policy hook: no daemon options apply.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some(hookd_policy::worker::WORKER_FLAG) {
        return policy_worker(&argv[2..]);
    }
    let args = Args::parse();
    if args.man {
        use clap::CommandFactory;
        use std::io::Write;
        let mut page = Vec::new();
        let rendered = clap_mangen::Man::new(Args::command()).render(&mut page);
        let written = rendered.and_then(|()| std::io::stdout().write_all(&page));
        return match written {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("hookd: cannot print the man page: {err}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let outcome = if args.oneshot {
        oneshot(args)
    } else {
        serve(args)
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            // One line per cause, never a backtrace: these are the user's errors (a socket in
            // use, a bad path), whatever RUST_BACKTRACE says.
            eprintln!("hookd: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `hookd --policy-worker ...`: evaluates one policy hook for every event line on stdin
/// (`hookd_policy::worker`); exits 1 with the reason on stderr when the policy cannot decide,
/// so that the hook fails and its failure policy decides.
fn policy_worker(args: &[String]) -> std::process::ExitCode {
    let spec = match hookd_policy::WorkerSpec::from_args(args) {
        Ok(spec) => spec,
        Err(message) => {
            eprintln!("hookd --policy-worker: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    match hookd_policy::serve(&spec, stdin, stdout, std::io::stderr()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("policy {}: {err}", spec.sources.policy.display());
            std::process::ExitCode::FAILURE
        }
    }
}

/// Sets everything up and serves until stopped.
fn serve(args: Args) -> anyhow::Result<()> {
    logging::init(args.log_level.as_deref());
    // First, while this is the only thread: taking the socket edits the process environment.
    let activated = activation::take_listener()?;

    // Each connection holds a descriptor and each running hook three more: at the common soft
    // limit of 1024 a burst of clients would make hooks fail to start. Hooks get the original
    // soft limit back.
    match hookd_server::raise_open_files_limit() {
        Ok(limit) if limit.after > limit.before => {
            tracing::debug!(
                before = limit.before,
                after = limit.after,
                "raised the open-files limit"
            );
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "cannot raise the open-files limit"),
    }

    let mut env = process_env();
    let notifier = notify::SystemdNotifier::from_env(&env, std::process::id());
    notify::remove_service_manager_variables(&mut env);
    let state_dir = hookd_server::state_dir(&env);
    let secret_env = (
        env.get("XDG_CONFIG_HOME").cloned(),
        env.get("HOME").cloned(),
    );
    let mut config = build_config(&args, env);
    if let Some(notifier) = notifier {
        config.lifecycle = Some(Arc::new(notifier));
    }
    let engine_options = hookd_server::EngineOptions::from_config(&config);

    let mut builder = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(args.threads);
        builder
    };
    // Every thread that may hold a request has the stack for deeply nested payloads
    // (`hookd_protocol::MAX_JSON_DEPTH`); it is address space, used only as deep as a
    // request really goes.
    let runtime = builder
        .enable_all()
        .thread_stack_size(hookd_protocol::DEEP_STACK_BYTES)
        .build()
        .context("cannot start the async runtime")?;
    let served = hookd_server::block_on_deep(runtime, async move {
        let signals = Signals::install().context("cannot install signal handlers")?;
        let activated = activated.unwrap_or_default();
        if activated.ignored > 0 {
            tracing::warn!(
                ignored = activated.ignored,
                "systemd passed more sockets than hookd serves (one Unix socket, one named http); \
                 the others are ignored"
            );
        }
        let http = http_listener(&args, activated.http, &secret_env).await?;
        let (listener, bound) = match activated.listener {
            Some(passed) => {
                if args.socket.is_some() {
                    tracing::warn!("--socket is ignored: systemd passed the socket");
                }
                let listener = tokio::net::UnixListener::from_std(passed)
                    .context("cannot use the socket passed by systemd")?;
                let path = listener
                    .local_addr()
                    .ok()
                    .and_then(|addr| addr.as_pathname().map(|path| path.display().to_string()))
                    .unwrap_or_else(|| "(unnamed)".to_owned());
                tracing::info!(socket = %path, "hookd listening on the socket passed by systemd");
                (listener, None)
            }
            None => {
                let socket = args
                    .socket
                    .unwrap_or_else(hookd_protocol::default_socket_path);
                let (listener, bound) = hookd_server::bind_socket_file(&socket)
                    .await
                    .with_context(|| format!("cannot listen on {}", socket.display()))?;
                tracing::info!(socket = %socket.display(), "hookd listening");
                (listener, Some(bound))
            }
        };
        // What the relay's one-shot engine needs to decide as this daemon would, should this
        // daemon not answer (best effort: the daemon serves either way).
        let listening = listener
            .local_addr()
            .ok()
            .and_then(|addr| addr.as_pathname().map(PathBuf::from));
        if let (Some(dir), Some(socket)) = (&state_dir, listening) {
            let path = hookd_server::EngineOptions::record_path(dir, &socket);
            if let Err(err) = engine_options.record(&path) {
                tracing::warn!(%err, path = %path.display(), "cannot record the options for the relay's fallback");
            }
        }
        let cancel = CancellationToken::new();
        signals.spawn(cancel.clone(), config.control.clone());
        let result = hookd_server::run_with_http(listener, http, config, cancel).await;
        // A socket we bound ourselves would make the next start probe a dead path. Only the
        // file we bound is removed: if the path now holds another socket (systemd's, after
        // `hookctl service install`), it is left alone. A socket
        // systemd passed belongs to systemd, which keeps it open for the next start.
        if let Some(bound) = bound {
            if !bound.remove_if_unchanged() {
                tracing::info!(
                    socket = %bound.path().display(),
                    "the socket path no longer holds the socket this daemon bound; left it alone"
                );
            }
        }
        result.context("hookd stopped with an error")
    });
    served.context("cannot start the daemon's thread")?
}

/// The HTTP listener: the socket systemd passed (named `http`), else `--http`'s address
/// bound here, else none. Its secret is read from (or created at) `--http-secret-file` or
/// `<config home>/hookd/http.secret`; a secret file that fails its checks stops the start.
async fn http_listener(
    args: &Args,
    passed: Option<std::net::TcpListener>,
    (xdg_config_home, home): &(Option<String>, Option<String>),
) -> anyhow::Result<Option<hookd_server::HttpListener>> {
    if passed.is_none() && args.http.is_none() {
        return Ok(None);
    }
    let path = match &args.http_secret_file {
        Some(path) => path.clone(),
        None => {
            let config_home = xdg_config_home
                .as_deref()
                .map(PathBuf::from)
                .filter(|dir| dir.is_absolute())
                .or_else(|| {
                    home.as_deref()
                        .map(PathBuf::from)
                        .filter(|dir| dir.is_absolute())
                        .map(|home| home.join(".config"))
                })
                .context(
                    "neither XDG_CONFIG_HOME nor HOME is an absolute path; give --http-secret-file",
                )?;
            hookd_settings::httpsecret::secret_path(&config_home)
        }
    };
    let secret = hookd_settings::httpsecret::load_or_create(&path)
        .with_context(|| format!("cannot use the HTTP secret file {}", path.display()))?;
    let listener = match passed {
        Some(passed) => {
            if args.http.is_some() {
                tracing::warn!("--http is ignored: systemd passed the HTTP socket");
            }
            hookd_server::HttpListener::from_std(passed, secret)
                .context("cannot use the HTTP socket passed by systemd")?
        }
        None => {
            let address = args.http.context("no HTTP address")?;
            hookd_server::HttpListener::bind(address, secret)
                .await
                .with_context(|| format!("cannot serve HTTP hooks on {address}"))?
        }
    };
    Ok(Some(listener))
}

/// The daemon's configuration from its flags and environment (no systemd lifecycle).
fn build_config(args: &Args, env: HashMap<String, String>) -> hookd_server::ServerConfig {
    let mut config = hookd_server::ServerConfig::new(env);
    // Policy hooks are evaluated by this same binary, started as a persistent worker.
    config.policy_program = std::env::current_exe().ok();
    if let Some(n) = args.max_hooks {
        config.max_hooks = n.max(1);
    }
    if let Some(n) = args.http_max_connections {
        config.http_max_connections = n.max(1);
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
    if let Some(n) = args.max_hello_frame_bytes {
        config.max_hello_frame_bytes = n;
    }
    if let Some(n) = args.max_pending_frame_bytes {
        config.max_pending_frame_bytes = n;
    }
    if let Some(mib) = args.compiled_budget_mib {
        config.compiled_budget_bytes = mib.saturating_mul(1024 * 1024);
    }
    if let Some(n) = args.max_inflight_per_connection {
        config.max_inflight_per_connection = n.max(1);
    }
    if let Some(ms) = args.handshake_timeout_ms {
        config.handshake_timeout = Duration::from_millis(ms);
    }
    if let Some(path) = &args.audit_log {
        config.audit = Some(hookd_server::AuditConfig {
            path: path.clone(),
            max_bytes: args.audit_max_bytes,
            keep: args.audit_keep,
            include_stdin: args.audit_stdin,
            queue_lines: args.audit_queue_lines.max(1),
            queue_bytes: args.audit_queue_bytes.max(1),
        });
    }
    if let Some(ms) = args.kill_grace_ms {
        config.kill_grace = Duration::from_millis(ms);
    }
    if let Some(ms) = args.shutdown_grace_ms {
        config.shutdown_grace = Duration::from_millis(ms);
    }
    if let Some(n) = args.max_background {
        config.max_background_runs = n.max(1);
    }
    if let Some(ms) = args.background_grace_ms {
        config.background_grace = Duration::from_millis(ms);
    }
    if let Some(n) = args.breaker_threshold {
        config.breaker.threshold = n;
    }
    if let Some(ms) = args.breaker_backoff_ms {
        config.breaker.backoff = Duration::from_millis(ms.max(1));
    }
    if let Some(ms) = args.breaker_max_backoff_ms {
        config.breaker.max_backoff = Duration::from_millis(ms.max(1));
    }
    if let Some(policy) = args.on_failure {
        config.default_on_failure = policy;
    }
    config.project_hooks = args.project_hooks;
    config.telemetry.endpoint = args.otel_endpoint.clone();
    if let Some(fields) = args.otel_include {
        config.telemetry.fields = fields;
    }
    // `--claude-settings` reads Claude Code's own settings files as layers; which files they
    // are is Claude Code's dialect's (`HostFiles::user_layer_files`).
    // `--copilot-settings` likewise for Copilot CLI's hooks folders (`user_layer_folders`).
    for (on, host) in [
        (args.claude_settings, hookd_core::dialect::Dialect::CLAUDE),
        (args.copilot_settings, hookd_core::dialect::Dialect::COPILOT),
    ] {
        if on {
            config.host_layers.push(host);
        }
    }
    config
}

/// `hookd --oneshot`: serves the connection on stdin with the daemon's engine and returns.
fn oneshot(args: Args) -> anyhow::Result<()> {
    logging::init(args.log_level.as_deref().or(Some("warn")));
    let socket = args
        .socket
        .clone()
        .unwrap_or_else(hookd_protocol::default_socket_path);
    let config = build_config(&args, process_env());
    hookd_server::oneshot_main(config, &socket, args.plan_only)
        .context("the one-shot engine failed")
}

/// The process environment; variables that are not UTF-8 are skipped rather than fatal (the
/// settings files and hooks can only refer to names and values that are text).
fn process_env() -> HashMap<String, String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// The signals hookd handles, installed before the daemon starts serving so that a SIGHUP or
/// SIGTERM arriving early never falls back to the default action (which would kill hookd).
struct Signals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers; must run inside the runtime.
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Turns SIGTERM/SIGINT into a graceful stop (`cancel`) and SIGHUP into reload requests.
    fn spawn(self, cancel: CancellationToken, control: hookd_server::Control) {
        let Signals {
            mut terminate,
            mut interrupt,
            mut hangup,
        } = self;
        tokio::spawn(async move {
            tokio::select! {
                _ = terminate.recv() => tracing::info!("SIGTERM: stopping"),
                _ = interrupt.recv() => tracing::info!("SIGINT: stopping"),
            }
            cancel.cancel();
        });
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                tracing::info!("SIGHUP: reloading");
                control.request_reload();
            }
        });
    }
}

/// `--otel-include`: the field names, or the one not known.
fn parse_export_fields(list: &str) -> Result<hookd_server::ExportFields, String> {
    hookd_server::ExportFields::parse(list)
        .map_err(|name| format!("unknown field {name:?} (known: tool_input, command, output)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookd_core::dialect::Dialect;

    #[test]
    fn claude_settings_reads_claude_code_files_as_layers_and_nothing_else_does() {
        // (arguments, hosts whose own files are layers)
        let cases: [(&[&str], &[Dialect]); 4] = [
            (&["hookd"], &[]),
            (&["hookd", "--claude-settings"], &[Dialect::CLAUDE]),
            (&["hookd", "--copilot-settings"], &[Dialect::COPILOT]),
            (
                &["hookd", "--copilot-settings", "--claude-settings"],
                &[Dialect::CLAUDE, Dialect::COPILOT],
            ),
        ];
        for (argv, expected) in cases {
            let args = Args::try_parse_from(argv).expect("arguments");
            let config = build_config(&args, HashMap::new());
            assert_eq!(config.host_layers, expected, "{argv:?}");
        }
    }
}
