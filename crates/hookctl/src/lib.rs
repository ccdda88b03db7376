//! The `hookctl` command line: talk to a running hookd.
//!
//! Most subcommands connect to the daemon's socket (`--socket`, else `HOOKD_SOCKET`, else the
//! default path), send one request and print the answer. Results go to stdout; when the
//! daemon cannot be reached or rejects the request, the reason goes to stderr (each cause
//! once, with a hint to run `hookctl doctor` when the daemon was not reached) and the exit
//! code is non-zero. `enable`, `disable` and `trust --list` edit or read the files themselves
//! when no daemon runs (module `offline`); `completions` and `man` need none; `doctor` checks
//! everything it can with or without one ([`doctor`]); `emit` exits 2 on a deny and `replay`
//! 1 when a decision differs ([`replay`]). `validate` prints its report on stdout
//! and exits 1 when the file has errors or warnings.
//! `migrate --from-claude` needs no daemon either: it converts the project's Claude Code
//! hooks into its `.gemini/settings.json` ([`migrate`]).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use hookd_client::{Client, ConnectOptions, EventRequest};
use hookd_protocol::{ListResponse, StatusResponse};
use serde_json::{Map, Value};

/// Reads a settings file, which a cloned repository may have put there, the way the daemon
/// does (`hookd_settings::configfile`): at most 4 MiB, opened without blocking, and only if it
/// is a regular file, so a FIFO, `/dev/zero` or a huge file fails at once with an error that
/// names the path. `Ok(None)` when it does not exist.
pub(crate) fn read_settings_file(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    hookd_settings::configfile::read_config_file(path)
        .with_context(|| format!("cannot read {}", path.display()))
}

/// [`read_settings_file`] as text (invalid UTF-8 replaced), empty when the file is absent or
/// cannot be read: for the checks that treat an unreadable file as one without hooks.
pub(crate) fn read_settings_text_or_empty(path: &Path) -> String {
    match hookd_settings::configfile::read_config_file(path) {
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        Ok(None) | Err(_) => String::new(),
    }
}

pub mod background;
pub mod copilot_policy;
pub mod doctor;
pub mod elf;
pub mod install;
pub mod manage;
pub mod migrate;
mod offline;
pub mod policy;
pub mod relay;
pub mod replay;
pub mod service;
pub mod state;
pub mod stats;
pub mod trust;

/// Talk to a running hookd.
#[derive(Debug, Parser)]
#[command(name = "hookctl", version)]
pub struct Cli {
    /// The daemon's socket [default: $HOOKD_SOCKET, else $XDG_RUNTIME_DIR/hookd/hookd.sock,
    /// else /tmp/hookd-<uid>/hookd.sock].
    #[arg(long, global = true)]
    pub socket: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fire one event and print the daemon's answer: a summary on a terminal, else (or with
    /// --json) one JSON object. Exits 0 when the event was answered, 2 when its final
    /// decision is `deny` or `block`, 1 on an error.
    Emit(EmitArgs),
    /// Show the hooks registered for a project dir, like Gemini CLI's `/hooks panel`.
    List(ListArgs),
    /// Show the daemon's status.
    Status(StatusArgs),
    /// Check that the daemon answers.
    Ping,
    /// Show what the daemon ran since it started: per hook (runs, failures by kind, timeouts,
    /// p50/p99 duration, last error), per event, per client and per relaying host.
    Stats(stats::StatsArgs),
    /// Run recorded events (an audit log written with `hookd --audit-stdin`, or hook payloads
    /// as JSON lines) against the current settings, and show where the decision differs from
    /// the recorded one. Hooks really run; nothing goes to any agent. Exits 1 when a decision
    /// differs, 2 on an error.
    Replay(replay::ReplayArgs),
    /// Print a shell completion script: `hookctl completions bash > ~/.local/share/bash-completion/completions/hookctl`
    /// (zsh: a file `_hookctl` on `$fpath`; fish: `~/.config/fish/completions/hookctl.fish`).
    Completions(CompletionsArgs),
    /// Print hookctl's man page (roff), or with --out DIR write hookctl.1 and one page per
    /// subcommand (hookctl-emit.1, ...) there. `hookd --man` prints hookd's.
    Man(ManArgs),
    /// Check the daemon, its socket and service, each agent CLI's relay wiring, the hooks
    /// (doubled or never run), trust and the settings files; says how to fix each problem and
    /// exits 1 when there is one.
    Doctor(doctor::DoctorArgs),
    /// Install, remove or inspect hookd as a systemd user service.
    Service(service::ServiceArgs),
    /// Enable a hook: remove its name from the disabled lists of the user settings and the
    /// project settings.
    Enable(manage::EnableArgs),
    /// Disable a hook: add its name to the disabled list of the user settings (or, with
    /// --project, of that project's settings).
    Disable(manage::DisableArgs),
    /// Enable every hook: empty the `hooksConfig.disabled` lists of the user settings and of
    /// the project's settings (--project, else the current dir). Hooks disabled by the system
    /// settings stay disabled (hookd does not edit those), and nothing changes while
    /// `hooksConfig.enabled` is false. Needs a running daemon.
    EnableAll(manage::AllArgs),
    /// Disable every hook of a project: add all their names to the disabled list of the user
    /// settings (or, with --project, of that project's settings).
    DisableAll(manage::AllArgs),
    /// Re-read every settings file and rebuild every registry now.
    Reload,
    /// Print each registry change as one JSON line as the daemon announces it.
    Watch(manage::WatchArgs),
    /// Check a settings file (or an extension's hooks/hooks.json) without loading it; exits 1
    /// when it has errors. Needs no daemon.
    Validate(manage::ValidateArgs),
    /// Trust a project's hooks (under `hookd --project-hooks require` untrusted ones do not
    /// run; under `warn` they run with a warning): shows each untrusted project hook's name,
    /// command, script and SHA-256, asks, then trusts exactly those; --list shows what is
    /// trusted.
    Trust(trust::TrustArgs),
    /// Forget a project's trusted hooks.
    Untrust(trust::UntrustArgs),
    /// Evaluate and test policy hooks' Rego files (docs/policies.md). Needs no daemon.
    Policy(policy::PolicyArgs),
    /// Turn the project's Claude Code hooks into Gemini CLI hooks in .gemini/settings.json
    /// (--from-claude); lists every entry that could not be converted. Needs no daemon.
    Migrate(migrate::MigrateArgs),
    /// Stand in for an agent CLI's command hook: read the event's JSON from stdin, let hookd
    /// run the hooks, answer as the CLI's hooks do (stdout, stderr, exit code).
    Relay(relay::RelayCommand),
    /// A hook's own session state, kept by the daemon: get, set, delete or list keys of the
    /// session the hook runs for (docs/state.md). Exit 1 (printing nothing) when a key is
    /// not set.
    State(state::StateCommand),
    /// Hand an agent CLI's hooks to hookd: move them into hookd's hooks file and put one
    /// `hookctl relay` entry per event into the CLI's settings (shows the changes first).
    Install(install::InstallArgs),
    /// Undo `hookctl install`: the moved hooks go back to the agent CLI's settings and every
    /// relay entry leaves them (byte for byte when nothing was touched since).
    Uninstall(install::UninstallArgs),
    /// Bring the relay entries of every installed agent CLI in step with hookd's hooks (after
    /// hooks were added to or removed from hookd's hooks files).
    Sync(install::SyncArgs),
}

/// Arguments of `hookctl emit`.
#[derive(Debug, clap::Args)]
pub struct EmitArgs {
    /// The event name (BeforeTool, AfterTool, BeforeAgent, AfterAgent, BeforeModel,
    /// AfterModel, BeforeToolSelection, SessionStart, SessionEnd, PreCompress, Notification).
    pub event: String,
    /// The event's own fields (tool_name, tool_input, prompt, ...) as a JSON object: inline
    /// (an argument starting with `{`), a file's path, or `-` to read stdin [default: {}].
    #[arg(long, value_name = "JSON|FILE|-")]
    pub input: Option<String>,
    /// Print the daemon's answer as one JSON object even on a terminal (it always is when
    /// stdout is not a terminal): `success`, `final_output`, `all_outputs`, `errors`,
    /// `total_duration_ms` (the hooks' durations added up, not the wall time: hooks of one
    /// event run in parallel) and `hooks`.
    #[arg(long)]
    pub json: bool,
    /// The session's working directory (also the project dir) [default: the current dir].
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// The session id passed to hooks.
    #[arg(long, default_value = "")]
    pub session: String,
    /// The transcript path passed to hooks.
    #[arg(long, default_value = "")]
    pub transcript: String,
}

/// Arguments of `hookctl completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

/// Arguments of `hookctl man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write the pages into this directory instead of printing hookctl's.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Arguments of `hookctl list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The project dir whose registry to show [default: the current dir].
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Print the daemon's answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `hookctl status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print the daemon's answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The whole `hookctl` program, as its binary (and any test binary standing in for it) runs
/// it: `hookctl relay` is read by hand, without building clap's parser (it runs once per hook
/// event); everything else goes through [`Cli`] to [`run`].
pub fn main_entry() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(relay) = relay::RelayArgs::from_args(&args) {
        return relay::run(&relay);
    }
    run(<Cli as clap::Parser>::parse())
}

/// Runs one `hookctl` invocation and returns its exit code.
pub fn run(cli: Cli) -> ExitCode {
    // Neither needs a runtime; the relay must not pay for one.
    match &cli.command {
        Command::Relay(command) => return relay::run(&command.to_args(cli.socket.clone())),
        Command::Install(args) => return install::run_install(args, cli.socket.as_deref()),
        Command::Uninstall(args) => return install::run_uninstall(args, cli.socket.as_deref()),
        Command::Sync(args) => return install::run_sync(args, cli.socket.as_deref()),
        Command::State(command) => return state::run(command, cli.socket.as_deref()),
        Command::Policy(args) => return policy::run(args),
        _ => {}
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("hookctl: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    if let Command::Replay(args) = &cli.command {
        let socket = cli
            .socket
            .clone()
            .unwrap_or_else(hookd_protocol::default_socket_path);
        return runtime.block_on(replay::run(&socket, args));
    }
    if let Command::Doctor(args) = &cli.command {
        let socket = cli
            .socket
            .clone()
            .unwrap_or_else(hookd_protocol::default_socket_path);
        let project = match absolute_cwd(args.cwd.clone()) {
            Ok(project) => project,
            Err(err) => {
                eprintln!("hookctl: {err:#}");
                return ExitCode::FAILURE;
            }
        };
        let report = runtime.block_on(doctor::diagnose(&socket, &project));
        if args.json {
            match to_json_line(&report) {
                Ok(line) => print!("{line}"),
                Err(err) => {
                    eprintln!("hookctl: {err:#}");
                    return ExitCode::FAILURE;
                }
            }
        } else {
            print!("{}", report.render());
        }
        return if report.problems == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    match runtime.block_on(execute(cli)) {
        Ok(output) => {
            print!("{output}");
            ExitCode::SUCCESS
        }
        Err(err) if err.downcast_ref::<Denied>().is_some() => ExitCode::from(2),
        Err(err) => match err.downcast_ref::<manage::Reported>() {
            Some(reported) => {
                print!("{}", reported.report);
                ExitCode::FAILURE
            }
            None => {
                eprintln!("hookctl: {}", error_text(&err));
                ExitCode::FAILURE
            }
        },
    }
}

/// An error as one line that names each cause once (a cause whose text is already said is
/// left out), then, when the daemon could not be reached, a hint on how to find out why.
pub fn error_text(err: &anyhow::Error) -> String {
    use hookd_client::ClientError;
    let mut parts: Vec<String> = Vec::new();
    let mut unreachable = false;
    for cause in err.chain() {
        let client_error = cause.downcast_ref::<ClientError>();
        let message = match client_error {
            Some(ClientError::Connect { source, .. }) => {
                unreachable = true;
                match source.kind() {
                    std::io::ErrorKind::NotFound => "no socket there".to_owned(),
                    std::io::ErrorKind::ConnectionRefused => {
                        "nothing listens there (the socket file of a daemon that stopped)"
                            .to_owned()
                    }
                    _ => source.to_string(),
                }
            }
            Some(ClientError::UntrustedSocket(_) | ClientError::HandshakeTimeout { .. }) => {
                unreachable = true;
                cause.to_string()
            }
            _ => cause.to_string(),
        };
        if !parts.iter().any(|part| part.contains(&message)) {
            parts.push(message);
        }
        // The connect error's own cause is said above, in words.
        if matches!(client_error, Some(ClientError::Connect { .. })) {
            break;
        }
    }
    let mut text = parts.join(": ");
    if unreachable {
        text.push_str(
            "\nhint: is hookd running? `hookctl doctor` checks the daemon, its socket and service",
        );
    }
    text
}

/// Runs the subcommand and returns what to print on stdout.
pub async fn execute(cli: Cli) -> anyhow::Result<String> {
    let socket = cli
        .socket
        .clone()
        .unwrap_or_else(hookd_protocol::default_socket_path);
    match cli.command {
        Command::Emit(args) => emit(&socket, args).await,
        Command::List(args) => {
            let cwd = absolute_cwd(args.cwd)?;
            let client = connect(&socket, false).await?;
            let listing = client
                .list(cwd.display().to_string())
                .await
                .context("list failed")?;
            if args.json {
                Ok(to_json_line(&listing)?)
            } else {
                let mut text = render_list(&listing);
                text.push_str(&render_wiring(&cwd));
                Ok(text)
            }
        }
        Command::Status(args) => {
            let client = connect(&socket, false).await?;
            let status = client.status().await.context("status failed")?;
            if args.json {
                Ok(to_json_line(&status)?)
            } else {
                Ok(render_status(&status))
            }
        }
        Command::Service(args) => service::run(args),
        Command::Completions(args) => {
            use clap::CommandFactory;
            let mut out = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "hookctl", &mut out);
            String::from_utf8(out).context("the completion script is not UTF-8")
        }
        Command::Man(args) => man_pages(args.out.as_deref()),
        Command::Stats(args) => stats::run(&socket, &args).await,
        Command::Validate(args) => manage::validate(args),
        Command::Enable(args) => match connect(&socket, false).await {
            Ok(client) => manage::enable(&client, args).await,
            Err(err) if offline::daemon_not_running(&err) => {
                offline::enable(&args.name, &manage::project_dir(args.project)?)
            }
            Err(err) => Err(err),
        },
        Command::Disable(args) => match connect(&socket, false).await {
            Ok(client) => manage::disable(&client, args).await,
            Err(err) if offline::daemon_not_running(&err) => {
                let project_scope = args.project.is_some();
                offline::disable(
                    &args.name,
                    &manage::project_dir(args.project)?,
                    project_scope,
                )
            }
            Err(err) => Err(err),
        },
        Command::EnableAll(args) => manage::enable_all(&connect(&socket, false).await?, args).await,
        Command::DisableAll(args) => {
            manage::disable_all(&connect(&socket, false).await?, args).await
        }
        Command::Reload => manage::reload(&connect(&socket, false).await?).await,
        Command::Watch(args) => manage::watch(&connect(&socket, false).await?, args).await,
        Command::Trust(args) => match connect(&socket, false).await {
            Ok(client) => trust::trust(&client, args).await,
            Err(err) if args.list && offline::daemon_not_running(&err) => {
                let cwd = args
                    .cwd
                    .map(|dir| manage::project_dir(Some(dir)))
                    .transpose()?;
                offline::trust_list(cwd.as_deref())
            }
            Err(err) => Err(err),
        },
        Command::Untrust(args) => trust::untrust(&connect(&socket, false).await?, args).await,
        Command::Migrate(args) => migrate::run(args),
        Command::Relay(_)
        | Command::Policy(_)
        | Command::State(_)
        | Command::Install(_)
        | Command::Uninstall(_)
        | Command::Sync(_)
        | Command::Doctor(_)
        | Command::Replay(_) => {
            bail!("this subcommand runs outside execute (hookctl::run)")
        }
        Command::Ping => {
            let client = connect(&socket, false).await?;
            let started = std::time::Instant::now();
            client.ping().await.context("ping failed")?;
            Ok(format!(
                "pong from {} in {} µs\n",
                socket.display(),
                started.elapsed().as_micros()
            ))
        }
    }
}

/// Connects and says hello; `send_env` passes this process's environment for hooks to use.
pub(crate) async fn connect(socket: &Path, send_env: bool) -> anyhow::Result<Client> {
    let env = send_env.then(|| {
        std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect()
    });
    let options = ConnectOptions {
        client_name: format!("hookctl/{}", env!("CARGO_PKG_VERSION")),
        env,
        ..ConnectOptions::default()
    };
    Client::connect(socket, options)
        .await
        .with_context(|| format!("cannot reach hookd at {}", socket.display()))
}

/// `hookctl emit`.
async fn emit(socket: &Path, args: EmitArgs) -> anyhow::Result<String> {
    let input = read_input(args.input.as_deref())?;
    let cwd = absolute_cwd(args.cwd)?;
    // Hooks run with the caller's environment, as they would inside the agent CLI.
    let client = connect(socket, true).await?;
    let event = args.event.clone();
    let mut request = EventRequest::new(args.event, cwd.display().to_string());
    request.input = input;
    request.session_id = args.session;
    request.transcript_path = args.transcript;
    let response = client
        .event(request)
        .await
        .context("the daemon rejected the event")?;
    let text = if args.json || !std::io::stdout().is_terminal() {
        to_json_line(&response.result)?
    } else {
        render_emit(&event, &response.result)
    };
    if is_denial(&response.result) {
        // Printed here: the exit code says deny, which is not an error.
        print!("{text}");
        return Err(Denied.into());
    }
    Ok(text)
}

/// The final decision of an `emit` was `deny` or `block`: exit code 2, the answer printed.
#[derive(Debug, thiserror::Error)]
#[error("the event was denied")]
pub struct Denied;

/// Whether the final decision denies (`deny` or `block`).
fn is_denial(result: &hookd_protocol::EventResult) -> bool {
    result
        .final_output
        .as_ref()
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str)
        .is_some_and(|decision| matches!(decision, "deny" | "block"))
}

/// An `emit` answer for a person: the final decision and reason, then each hook.
pub fn render_emit(event: &str, result: &hookd_protocol::EventResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let output = result.final_output.as_ref();
    let field = |key: &str| {
        output
            .and_then(|output| output.get(key))
            .and_then(Value::as_str)
    };
    let decision = match field("decision") {
        Some(decision) => decision.to_owned(),
        None if output.and_then(|o| o.get("continue")) == Some(&Value::Bool(false)) => {
            "stop".to_owned()
        }
        None if result.hooks.is_empty() => "no hook ran".to_owned(),
        None => "no decision (the call goes ahead)".to_owned(),
    };
    let _ = write!(out, "{event}: {decision}");
    if let Some(reason) = field("reason").or_else(|| field("stopReason")) {
        let _ = write!(out, ": {reason}");
    }
    out.push('\n');
    for hook in &result.hooks {
        let said = hook
            .output
            .as_ref()
            .and_then(|output| output.get("decision"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| hook.failure.clone())
            .unwrap_or_else(|| "ok".to_owned());
        let _ = writeln!(
            out,
            "  {} ({}): {said}, {:.1} ms",
            hook.name, hook.source, hook.duration_ms
        );
        if let Some(error) = &hook.error {
            let _ = writeln!(out, "    error: {error}");
        }
        if let Some(warning) = &hook.warning {
            let _ = writeln!(out, "    warning: {warning}");
        }
    }
    if !result.hooks.is_empty() {
        let _ = writeln!(
            out,
            "hooks' time added up: {:.1} ms (--json for the whole answer)",
            result.total_duration_ms
        );
    }
    out
}

/// Reads the `--input` object from a file, from stdin (`-`), or nothing (`{}`).
fn read_input(input: Option<&str>) -> anyhow::Result<Map<String, Value>> {
    let text = match input {
        None => return Ok(Map::new()),
        Some(inline) if inline.trim_start().starts_with('{') => inline.to_owned(),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the event input from stdin")?;
            text
        }
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the event input from {path}"))?,
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(&text).context("the event input is not valid JSON")? {
        Value::Object(map) => Ok(map),
        other => bail!(
            "the event input must be a JSON object, not {}",
            hookd_core::settings::json_type(&other)
        ),
    }
}

/// hookctl's man page, or (with `out`) every page written into `out`.
fn man_pages(out: Option<&Path>) -> anyhow::Result<String> {
    use clap::CommandFactory;
    let command = Cli::command();
    let render = |command: clap::Command| -> anyhow::Result<Vec<u8>> {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .context("cannot render the man page")?;
        Ok(page)
    };
    let Some(dir) = out else {
        return String::from_utf8(render(command)?).context("the man page is not UTF-8");
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    let mut pages = vec![("hookctl".to_owned(), command.clone())];
    for sub in command.get_subcommands() {
        let name = format!("hookctl-{}", sub.get_name());
        // clap names a command with a `&'static str` (or its `string` feature, not used here).
        let page = sub
            .clone()
            .bin_name(name.clone())
            .display_name(name.clone());
        pages.push((name, page));
    }
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, render(page)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(format!("wrote {}\n", written.join(", ")))
}

/// `--cwd` made absolute, or the current directory.
pub(crate) fn absolute_cwd(cwd: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let current = std::env::current_dir().context("cannot determine the current directory")?;
    Ok(match cwd {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => current.join(dir),
        None => current,
    })
}

/// One JSON object and a newline.
pub(crate) fn to_json_line<T: serde::Serialize>(value: &T) -> anyhow::Result<String> {
    let mut text = serde_json::to_string(value).context("cannot encode the answer")?;
    text.push('\n');
    Ok(text)
}

/// The registry as Gemini CLI's `/hooks panel` shows it, grouped by event in registry order,
/// with the timeout printed in milliseconds (Gemini CLI prints the millisecond number with an
/// `s` suffix; hookd says what it means).
pub fn render_list(listing: &ListResponse) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if !listing.hooks_enabled {
        if listing.hooks.iter().any(|hook| hook.source == "managed") {
            out.push_str(
                "Hooks are disabled (hooksConfig.enabled is false), except the managed ones.\n",
            );
        } else {
            out.push_str("Hooks are disabled (hooksConfig.enabled is false).\n");
        }
    }
    if listing.hooks.is_empty() {
        out.push_str("No hooks configured.\n");
    }
    let mut events: Vec<&str> = Vec::new();
    for hook in &listing.hooks {
        if !events.contains(&hook.event.as_str()) {
            events.push(&hook.event);
        }
    }
    for event in events {
        let _ = writeln!(out, "{event}:");
        for hook in listing.hooks.iter().filter(|hook| hook.event == event) {
            let state = if hook.enabled { "enabled" } else { "disabled" };
            let _ = writeln!(out, "  {} [{state}]", hook.name);
            if let Some(description) = &hook.description {
                let _ = writeln!(out, "    {description}");
            }
            let mut source = hook.source.clone();
            if let Some(extension) = &hook.extension {
                source = format!("{source} {extension}");
            }
            match &hook.path {
                Some(path) => {
                    let _ = writeln!(out, "    Source: {source} ({path})");
                }
                None => {
                    let _ = writeln!(out, "    Source: {source}");
                }
            }
            if hook.hook_type == "policy" {
                // A policy's command describes its files (`policy P data D`).
                if let Some(files) = &hook.command {
                    let files = files.strip_prefix("policy ").unwrap_or(files);
                    let _ = writeln!(
                        out,
                        "    Policy: {} (evaluated by hookd)",
                        files.replace(" data ", ", data ")
                    );
                }
            } else if let Some(command) = hook
                .command
                .as_ref()
                .filter(|command| **command != hook.name)
            {
                let _ = writeln!(out, "    Command: {command}");
            }
            if let Some(matcher) = &hook.matcher {
                let _ = writeln!(out, "    Matcher: {matcher}");
            }
            if hook.sequential {
                out.push_str("    Sequential\n");
            }
            let _ = writeln!(out, "    Timeout: {} ms", hook.timeout_ms);
            if hook.source == "managed" {
                out.push_str(
                    "    Managed: set by the administrator; no setting disables, reorders or \
                     overrides it\n",
                );
            }
            if let Some(managed) = &hook.outranked_by {
                let _ = writeln!(
                    out,
                    "    Outranked by the managed hooks file {managed}: its copy runs in this \
                     one's place"
                );
            }
            if hook.untrusted {
                out.push_str("    Untrusted: review it, then `hookctl trust` to trust it\n");
            }
            if hook.is_async {
                out.push_str("    Async: runs in the background, outside the decision\n");
            }
            if let Some(paused) = &hook.paused {
                let _ = writeln!(
                    out,
                    "    Paused by the circuit breaker: {}",
                    background::paused(paused)
                );
            }
            if let Some(run) = &hook.last_run {
                let result = if run.success { "ok" } else { "failed" };
                let _ = write!(
                    out,
                    "    Last run: {result} in {:.1} ms ({})",
                    run.duration_ms, run.outcome
                );
                match &run.error {
                    Some(error) => {
                        let _ = writeln!(out, ": {error}");
                    }
                    None => out.push('\n'),
                }
            }
        }
    }
    if !listing.diagnostics.is_empty() {
        out.push_str("Problems:\n");
        for diagnostic in &listing.diagnostics {
            let _ = writeln!(out, "  {}", render_diagnostic(diagnostic));
        }
    }
    out
}

/// The installed agent CLIs' wiring that is out of step with hookd's hooks, and recent relay
/// warnings (the relay never shows them to the CLI), for `hookctl list`.
fn render_wiring(cwd: &Path) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let locations = install::Locations::from_process();
    let transports = install::http_transports(&locations, cwd);
    if !transports.is_empty() {
        out.push_str("Transport:\n");
        for line in transports {
            let _ = writeln!(out, "  {line}");
        }
    }
    let stale = install::stale_wiring(&locations, cwd);
    if !stale.is_empty() {
        out.push_str("Relay wiring:\n");
        for line in stale {
            let _ = writeln!(out, "  {line}");
        }
    }
    if let Some(log) = relay::state_dir(|name| std::env::var_os(name))
        .map(|dir| dir.join(relay::LOG_FILE))
        .filter(|log| {
            std::fs::metadata(log)
                .and_then(|metadata| metadata.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age < std::time::Duration::from_secs(24 * 3600))
        })
    {
        let _ = writeln!(
            out,
            "The relay could not reach hookd (or was given a bad event) in the last day: see {}",
            log.display()
        );
    }
    out
}

/// One diagnostic as `severity: path:line:column: key: message`.
pub(crate) fn render_diagnostic(diagnostic: &hookd_protocol::Diagnostic) -> String {
    let severity = match diagnostic.severity {
        hookd_protocol::Severity::Error => "error",
        hookd_protocol::Severity::Warning => "warning",
        hookd_protocol::Severity::Info => "info",
    };
    let mut text = format!("{severity}: ");
    if let Some(path) = &diagnostic.path {
        text.push_str(path);
        if let Some(line) = diagnostic.line {
            text.push_str(&format!(":{line}"));
            if let Some(column) = diagnostic.column {
                text.push_str(&format!(":{column}"));
            }
        }
        text.push_str(": ");
    }
    if let Some(key) = &diagnostic.key {
        text.push_str(key);
        text.push_str(": ");
    }
    text.push_str(&diagnostic.message);
    text
}

/// The daemon's status in a few lines.
pub fn render_status(status: &StatusResponse) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "hookd {} (pid {})", status.version, status.pid);
    let _ = writeln!(out, "uptime: {} s", status.uptime_ms / 1000);
    let _ = writeln!(out, "connections: {}", status.connections);
    let _ = writeln!(
        out,
        "hooks: {} running, {} queued, at most {} at once",
        status.hooks_running, status.hooks_queued, status.max_hooks
    );
    let _ = writeln!(out, "events served: {}", status.events_served);
    out.push_str(&background::render(
        status.background.as_ref(),
        status.breaker.as_ref(),
    ));
    if let Some(http) = &status.http {
        let _ = writeln!(
            out,
            "http: http://{} ({} connections, at most {}; {} requests; {} sessions known)",
            http.address, http.connections, http.max_connections, http.requests, http.sessions
        );
        if !http.refused.is_empty() {
            let refused: Vec<String> = http
                .refused
                .iter()
                .map(|(reason, count)| format!("{reason} {count}"))
                .collect();
            let _ = writeln!(out, "http refused: {}", refused.join(", "));
        }
    }
    if let Some(managed) = &status.managed {
        match &managed.reason {
            Some(reason) => {
                let _ = writeln!(
                    out,
                    "managed hooks: {} {}: {reason}",
                    managed.path, managed.state
                );
            }
            None => {
                let _ = writeln!(out, "managed hooks: {} {}", managed.path, managed.state);
            }
        }
    }
    if let Some(telemetry) = &status.telemetry {
        out.push_str(&render_telemetry(telemetry));
    }
    if !status.clients.is_empty() {
        let clients: Vec<String> = status
            .clients
            .iter()
            .map(|client| format!("{} ({})", client.name, client.connections))
            .collect();
        let _ = writeln!(out, "clients: {}", clients.join(", "));
    }
    for registry in &status.registries {
        let _ = writeln!(
            out,
            "registry {}: generation {}, {} hooks",
            registry.cwd, registry.generation, registry.hooks
        );
        for diagnostic in &registry.diagnostics {
            let _ = writeln!(out, "  {}", render_diagnostic(diagnostic));
        }
    }
    out
}

/// The OpenTelemetry export's line in `status` and `stats`.
pub fn render_telemetry(telemetry: &hookd_protocol::TelemetryStatus) -> String {
    let mut out = format!(
        "telemetry: {} ({}): {} recorded, {} dropped (queue {} of {}), {} spans, {} logs, {} \
         metric exports, {} failed exports\n",
        telemetry.endpoint,
        telemetry.protocol,
        telemetry.recorded,
        telemetry.dropped,
        telemetry.queued,
        telemetry.capacity,
        telemetry.spans_exported,
        telemetry.logs_exported,
        telemetry.metric_exports,
        telemetry.failed_exports,
    );
    if let Some(error) = &telemetry.last_error {
        out.push_str(&format!("telemetry last error: {error}\n"));
    }
    out
}

/// Prints `shown` followed by `question` and ` [y/N] `, and reads the answer from the terminal:
/// `true` only for `y` or `yes` (any case).
pub(crate) fn ask_yes_no(shown: &str, question: &str) -> anyhow::Result<bool> {
    use std::io::{BufRead, Write};
    let mut stdout = std::io::stdout().lock();
    write!(stdout, "{shown}{question} [y/N] ")
        .and_then(|()| stdout.flush())
        .context("cannot write to stdout")?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
