//! `hookctl doctor`: checks what can keep hooks from running as configured, and says how to
//! fix each problem.
//!
//! Each check gives one or more findings: `ok`, a `problem` (something is wrong: the exit code
//! is 1) or a `note` (worth knowing, nothing to fix). Every problem carries its fix. The checks:
//!
//! - `socket`: the socket's directory and file are safe to use (ours, not writable by others,
//!   not a link) and, when the systemd units are installed, the socket is the one they listen
//!   on;
//! - `daemon`: a daemon answers there, and which binary and version it is;
//! - `service`: the systemd units' state matches what is listening;
//! - `wiring`: each installed host's relay entries are in step with hookd's hooks and run a
//!   relay that exists, of this hookctl's version;
//! - `hooks`: hooks that would run twice (the same command for the same event and matcher in
//!   two places) or not at all (hooks turned off);
//! - `trust`: untrusted project hooks, which do not run under `--project-hooks require`;
//! - `breaker`: hooks the circuit breaker has paused (only when there are some);
//! - `settings`: problems the daemon found reading the settings files;
//! - `system-files`: system settings files refused as insecure;
//! - `managed`: the administrator's managed hooks file: loaded (and how many hooks), refused
//!   (a problem, with the reason), and what of the user's it outranks (notes);
//! - `copilot-policy`: Copilot CLI's policy folder (`/etc/github-copilot/policy.d/`, read
//!   only): its hooks, files Copilot CLI would skip (problems), and `disableAllHooks` or
//!   `allowManagedHooksOnly`, which keep Copilot CLI from running hookd's relay entries (a
//!   problem when they are installed; `crate::copilot_policy`);
//! - `telemetry`: the OpenTelemetry export, when on: records dropped or exports failing;
//! - `fallback`: moved guards while no daemon runs, relay entries that would skip them, and
//!   the fallbacks the relay took in the last day (its log; `doctor_fallback.rs`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use hookd_client::{Client, ConnectOptions};
use hookd_protocol::{ListResponse, Severity, StatusResponse};
use serde::Serialize;
use serde_json::Value;

#[path = "doctor_fallback.rs"]
mod fallback;

/// Arguments of `hookctl doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The project dir whose hooks and wiring to check [default: the current dir].
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Print the findings as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// How a finding counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The check passed.
    Ok,
    /// Something is wrong; `fix` says what to do.
    Problem,
    /// Worth knowing; nothing to fix.
    Note,
}

/// One finding of one check.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The check (`socket`, `daemon`, `service`, `wiring`, `hooks`, `trust`, `settings`,
    /// `system-files`).
    pub check: &'static str,
    /// How it counts.
    pub status: Status,
    /// What was found.
    pub message: String,
    /// What to do about a problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    fn ok(check: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            check,
            status: Status::Ok,
            message: message.into(),
            fix: None,
        }
    }

    fn note(check: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            check,
            status: Status::Note,
            message: message.into(),
            fix: None,
        }
    }

    fn problem(check: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            check,
            status: Status::Problem,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
}

/// What `doctor` found, in check order.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The socket checked.
    pub socket: String,
    /// The project dir checked.
    pub project: String,
    /// Every finding.
    pub findings: Vec<Finding>,
    /// How many findings are problems.
    pub problems: usize,
}

impl Report {
    /// The report as text: one line per finding, problems followed by their fix.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for finding in &self.findings {
            let mark = match finding.status {
                Status::Ok => "ok     ",
                Status::Problem => "PROBLEM",
                Status::Note => "note   ",
            };
            let _ = writeln!(out, "{mark} {:<12} {}", finding.check, finding.message);
            if let Some(fix) = &finding.fix {
                let _ = writeln!(out, "        {:<12} fix: {fix}", "");
            }
        }
        match self.problems {
            0 => out.push_str("No problems found.\n"),
            1 => out.push_str("1 problem found.\n"),
            n => {
                let _ = writeln!(out, "{n} problems found.");
            }
        }
        out
    }
}

/// The version this hookctl is.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Runs every check for the daemon at `socket` and the project `project`.
pub async fn diagnose(socket: &Path, project: &Path) -> Report {
    let mut findings = Vec::new();
    let socket_safe = check_socket(socket, &mut findings);
    let mut daemon = None;
    if socket_safe {
        daemon = check_daemon(socket, &mut findings).await;
    }
    check_service(socket, daemon.is_some(), &mut findings);
    check_wiring(project, &mut findings);
    fallback::check_fallback(
        &crate::install::installed_relays(&crate::install::Locations::from_process(), project),
        daemon.is_some(),
        &mut findings,
    );
    check_shared_files(project, &mut findings);
    check_copilot_policy(project, &mut findings);
    match &daemon {
        Some((client, status)) => match client.list(project.display().to_string()).await {
            Ok(listing) => {
                check_hooks(&listing, &mut findings);
                check_trust(&listing, status, &mut findings);
                check_paused(&listing, &mut findings);
                check_policies(&listing, &mut findings);
                check_settings(&listing, status, &mut findings);
                check_telemetry(status, &mut findings);
            }
            Err(err) => findings.push(Finding::problem(
                "hooks",
                format!(
                    "the daemon could not list the hooks of {}: {err}",
                    project.display()
                ),
                "see the daemon's log (`journalctl --user -u hookd` under systemd)",
            )),
        },
        None => findings.push(Finding::note(
            "hooks",
            "hooks, trust and settings not checked: no daemon to ask",
        )),
    }
    let problems = findings
        .iter()
        .filter(|finding| finding.status == Status::Problem)
        .count();
    Report {
        socket: socket.display().to_string(),
        project: project.display().to_string(),
        findings,
        problems,
    }
}

/// The socket path the systemd units listen on, when `XDG_RUNTIME_DIR` is set.
fn unit_socket() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("hookd/hookd.sock"))
}

/// The systemd user unit directory, when it can be found.
fn unit_dir() -> Option<PathBuf> {
    crate::service::unit_dir(
        std::env::var_os("XDG_CONFIG_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
    .ok()
}

/// Whether hookd's units are installed.
fn units_installed() -> bool {
    unit_dir().is_some_and(|dir| dir.join(crate::service::SOCKET_NAME).is_file())
}

/// `socket`: the socket file and its directory; returns whether a client may use it.
fn check_socket(socket: &Path, findings: &mut Vec<Finding>) -> bool {
    use hookd_protocol::SocketTrustError as E;
    let safe = match hookd_protocol::verify_socket_path(socket) {
        Ok(()) => {
            findings.push(Finding::ok(
                "socket",
                format!(
                    "{} is a socket of yours in a private directory",
                    socket.display()
                ),
            ));
            true
        }
        Err(E::Missing { path }) => {
            findings.push(Finding::problem(
                "socket",
                format!("{} does not exist: no daemon listens there", path.display()),
                "start hookd (`hookd &`, or `hookctl service install` to run it under systemd), \
                 or point hookctl at its socket with --socket or HOOKD_SOCKET",
            ));
            false
        }
        Err(err @ (E::DirectoryWritable { .. } | E::DirectoryNotOwned { .. })) => {
            findings.push(Finding::problem(
                "socket",
                format!("{err}; no client will use it"),
                format!(
                    "stop the daemon, remove {} (or make it yours and `chmod 700` it), and \
                     start hookd again: it creates the directory with mode 0700",
                    hookd_protocol::socket_directory(socket).display()
                ),
            ));
            false
        }
        Err(err @ E::SocketNotOwned { .. }) => {
            findings.push(Finding::problem(
                "socket",
                format!("{err}: another user's daemon holds it"),
                "stop that daemon, remove the socket file, and start your own hookd",
            ));
            false
        }
        Err(err) => {
            findings.push(Finding::problem(
                "socket",
                err.to_string(),
                "remove what is at that path and start hookd again",
            ));
            false
        }
    };
    if let Some(expected) = unit_socket().filter(|_| units_installed())
        && expected != socket
    {
        findings.push(Finding::problem(
            "socket",
            format!(
                "hookctl uses {}, but the installed systemd units listen on {}",
                socket.display(),
                expected.display()
            ),
            "unset HOOKD_SOCKET (or drop --socket) so that clients use the service's socket, \
             or `hookctl service uninstall` if you run hookd yourself",
        ));
    }
    safe
}

/// `daemon`: connects and asks for the status; returns the connection and status.
async fn check_daemon(
    socket: &Path,
    findings: &mut Vec<Finding>,
) -> Option<(Client, StatusResponse)> {
    let options = ConnectOptions {
        client_name: format!("hookctl-doctor/{VERSION}"),
        env: None,
        handshake_timeout: Duration::from_secs(2),
    };
    let connected =
        tokio::time::timeout(Duration::from_secs(3), Client::connect(socket, options)).await;
    let client = match connected {
        Ok(Ok(client)) => client,
        Ok(Err(err)) => {
            findings.push(Finding::problem(
                "daemon",
                format!("no daemon answers at {}: {err}", socket.display()),
                "start hookd (`hookd &`, or `hookctl service install`); a stale socket file \
                 left by a killed daemon is replaced when hookd starts",
            ));
            return None;
        }
        Err(_) => {
            findings.push(Finding::problem(
                "daemon",
                format!(
                    "the daemon at {} did not answer within 3 s",
                    socket.display()
                ),
                "the daemon may be stuck: see its log, then restart it",
            ));
            return None;
        }
    };
    let hello = client.server_hello().clone();
    let binary = std::fs::read_link(format!("/proc/{}/exe", hello.pid)).map_or_else(
        |_| "an unknown binary".to_owned(),
        |path| path.display().to_string(),
    );
    let status = match client.status().await {
        Ok(status) => status,
        Err(err) => {
            findings.push(Finding::problem(
                "daemon",
                format!(
                    "{} (pid {}) does not answer status: {err}",
                    hello.server, hello.pid
                ),
                "restart the daemon",
            ));
            return None;
        }
    };
    if status.version == VERSION {
        findings.push(Finding::ok(
            "daemon",
            format!(
                "hookd {} answers (pid {}, {binary}), up {} s",
                status.version,
                hello.pid,
                status.uptime_ms / 1000
            ),
        ));
    } else {
        findings.push(Finding::problem(
            "daemon",
            format!(
                "hookd {} answers (pid {}, {binary}), but this hookctl is {VERSION}",
                status.version, hello.pid
            ),
            "restart the daemon from the same build as hookctl (`hookctl service install` \
             points the service at a new binary)",
        ));
    }
    Some((client, status))
}

/// `service`: the state of hookd's systemd units against what is listening.
fn check_service(socket: &Path, reachable: bool, findings: &mut Vec<Finding>) {
    if !units_installed() {
        findings.push(Finding::note(
            "service",
            "the systemd units are not installed (`hookctl service install` runs hookd at login)",
        ));
        return;
    }
    let active = |unit: &str| -> Option<bool> {
        let output = Command::new("systemctl")
            .args(["--user", "is-active", unit])
            .output()
            .ok()?;
        let state = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if state.is_empty() {
            return None;
        }
        Some(state == "active")
    };
    match active(crate::service::SOCKET_NAME) {
        None => findings.push(Finding::note(
            "service",
            "the systemd units are installed, but systemctl --user cannot be asked here",
        )),
        Some(true) if reachable => findings.push(Finding::ok(
            "service",
            format!(
                "{} is active and the daemon answers",
                crate::service::SOCKET_NAME
            ),
        )),
        Some(true) => findings.push(Finding::problem(
            "service",
            format!(
                "{} is active, but nothing answers at {}",
                crate::service::SOCKET_NAME,
                socket.display()
            ),
            "`systemctl --user restart hookd.socket`, then `journalctl --user -u hookd` for why \
             the service fails",
        )),
        Some(false) if reachable => findings.push(Finding::problem(
            "service",
            format!(
                "{} is not active, yet a daemon answers: one started by hand holds the socket",
                crate::service::SOCKET_NAME
            ),
            "stop the hand-started daemon and `systemctl --user start hookd.socket`",
        )),
        Some(false) => findings.push(Finding::problem(
            "service",
            format!(
                "{} is installed but not active",
                crate::service::SOCKET_NAME
            ),
            "`systemctl --user enable --now hookd.socket`",
        )),
    }
}

/// The program a relay command runs: the first word, after variable assignments and `exec`,
/// of its first simple command that is one.
fn relay_program(command: &str) -> Option<String> {
    hookd_core::command::simple_commands(command)
        .into_iter()
        .filter(|words| {
            let quoted: Vec<String> = words
                .iter()
                .map(|word| hookd_core::command::shell_quote(word))
                .collect();
            hookd_core::dialect::is_relay_command(&quoted.join(" "))
        })
        .find_map(|words| {
            words.into_iter().find(|word| {
                !word.contains('=') && !matches!(word.as_str(), "exec" | "env" | "command")
            })
        })
}

/// Where `program` is: itself when it has a slash, else the first match on `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    let is_executable = |path: &Path| {
        std::fs::metadata(path)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|path| is_executable(path))
}

/// The version `hookctl --version` (or `hookd-relay --version`) at `path` prints
/// (`hookctl 0.1.0` → `0.1.0`).
fn hookctl_version(path: &Path) -> Option<String> {
    let output = Command::new(path).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace().nth(1).map(str::to_owned)
}

/// `wiring`: installed hosts' relay entries, and the relay they run.
fn check_wiring(project: &Path, findings: &mut Vec<Finding>) {
    let locations = crate::install::Locations::from_process();
    let installed = crate::install::installed_relays(&locations, project);
    if installed.is_empty() {
        findings.push(Finding::note(
            "wiring",
            format!(
                "no agent CLI is wired to hookd (`hookctl install --host {}`)",
                hookd_core::dialect::Dialect::names().replace(", ", "|")
            ),
        ));
        return;
    }
    for line in crate::install::http_transports(&locations, project) {
        findings.push(Finding::note("wiring", line));
    }
    for line in crate::install::copilot_on_claude_project(&locations, project) {
        findings.push(Finding::note("wiring", line));
    }
    let stale = crate::install::stale_wiring(&locations, project);
    for line in &stale {
        findings.push(Finding::problem(
            "wiring",
            line.clone(),
            "`hookctl sync`, then restart the CLI's sessions",
        ));
    }
    let mut programs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Whether every entry running a program is in the shared form, which answers nothing
    // (rather than failing) where the program is not on PATH.
    let mut all_shared: BTreeMap<String, bool> = BTreeMap::new();
    for install in &installed {
        for command in &install.commands {
            if let Some(program) = relay_program(command) {
                let shared = hookd_core::dialect::is_shared_relay_command(command);
                all_shared
                    .entry(program.clone())
                    .and_modify(|all| *all &= shared)
                    .or_insert(shared);
                programs
                    .entry(program)
                    .or_default()
                    .push(install.host_file.display().to_string());
            }
        }
    }
    let mut wiring_problems = false;
    for (program, files) in &programs {
        let mut files = files.clone();
        files.dedup();
        let Some(path) = find_program(program) else {
            wiring_problems = true;
            let effect = if all_shared.get(program).copied().unwrap_or(false) {
                "the CLI relays nothing and hookd's hooks do not run for it (a project file's \
                 guarded copies run instead)"
            } else {
                "every relayed event fails in the CLI"
            };
            findings.push(Finding::problem(
                "wiring",
                format!(
                    "the relay entries in {} run `{program}`, which is not an executable on PATH: \
                     {effect}",
                    files.join(", ")
                ),
                "install the binaries on PATH (`cargo install --locked --path crates/hookctl`), \
                 then `hookctl sync`",
            ));
            continue;
        };
        // `hookctl` and `hookd-relay` both answer `--version`; another program (a wrapper)
        // is judged by the hookctl next to it.
        let asked = if path
            .file_name()
            .is_some_and(|name| name == "hookctl" || name == crate::install::RELAY_BINARY)
        {
            Some(path.clone())
        } else {
            path.parent()
                .map(|dir| dir.join("hookctl"))
                .filter(|sibling| sibling.is_file())
        };
        if let Some(version) = asked.as_deref().and_then(hookctl_version)
            && version != VERSION
        {
            wiring_problems = true;
            findings.push(Finding::problem(
                "wiring",
                format!(
                    "the relay entries run {} from hookd {version}, but this hookctl is {VERSION}",
                    path.display()
                ),
                "install the same build of hookd, hookctl and hookd-relay \
                 (`cargo install --locked --path crates/hookctl` and `--path crates/hookd`)",
            ));
        }
    }
    if stale.is_empty() && !wiring_problems {
        let described: Vec<&str> = installed
            .iter()
            .map(|install| install.description.as_str())
            .collect();
        findings.push(Finding::ok(
            "wiring",
            format!(
                "relay entries in step with hookd's hooks: {}",
                described.join("; ")
            ),
        ));
    }
}

/// `copilot-policy`: the administrator's Copilot CLI policy folder
/// (`crate::copilot_policy`): its hooks, the files Copilot CLI skips, and switches that keep
/// Copilot CLI from running hookd's relay entries (a problem when they are installed).
fn check_copilot_policy(project: &Path, findings: &mut Vec<Finding>) {
    use crate::copilot_policy::{Level, policy_dir, policy_findings};
    let locations = crate::install::Locations::from_process();
    let wired = crate::install::installed_relays(&locations, project)
        .iter()
        .any(|install| {
            install
                .commands
                .iter()
                .any(|command| command.contains("--dialect copilot"))
        });
    let dir = policy_dir(|name| std::env::var(name).ok());
    for (level, message, fix) in policy_findings(&dir, 0, wired) {
        findings.push(match (level, fix) {
            (Level::Problem, fix) => Finding::problem(
                "copilot-policy",
                message,
                fix.unwrap_or_else(|| "ask the administrator".to_owned()),
            ),
            (Level::Note, _) => Finding::note("copilot-policy", message),
            (Level::Ok, _) => Finding::ok("copilot-policy", message),
        });
    }
}

/// `shared`: relay entries in a project's shared settings files (`.gemini/settings.json`,
/// `.claude/settings.json`, `.codex/hooks.json`, usually committed), which every clone of
/// the project runs, with or without hookd. An entry in the bare form (`hookd-relay EVENT`)
/// is a problem: where `hookd-relay` is not on `PATH` the CLI gets "command not found", a
/// non-blocking error, and the project's hooks, moved into `.hookd/hooks.json`, do not run.
/// The shared form answers nothing there and the guarded copies run the hooks instead: a
/// note says which of the two this machine gets.
fn check_shared_files(project: &Path, findings: &mut Vec<Finding>) {
    let relay_on_path = find_program(crate::install::RELAY_BINARY).is_some();
    for dialect in hookd_core::dialect::Dialect::ALL {
        let file = dialect.files().project_settings_file(project);
        let text = crate::read_settings_text_or_empty(&file);
        let Ok(Value::Object(root)) = hookd_core::jsonc::parse(&text) else {
            continue;
        };
        let commands: Vec<String> = root
            .get("hooks")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|hooks| hooks.values())
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|definition| definition.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter_map(|hook| hook.get("command").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        let relays: Vec<&String> = commands
            .iter()
            .filter(|command| hookd_core::dialect::is_relay_command(command))
            .collect();
        if relays.is_empty() {
            continue;
        }
        let bare = relays
            .iter()
            .filter(|command| !hookd_core::dialect::is_shared_relay_command(command))
            .count();
        let copies = commands
            .iter()
            .filter(|command| hookd_core::dialect::fallback_original(command).is_some())
            .count();
        if bare > 0 {
            findings.push(Finding::problem(
                "shared",
                format!(
                    "{} (shared with the project) has {bare} relay entr{} of the bare form \
                     (`hookd-relay EVENT`): where hookd-relay is not on PATH the CLI gets \
                     \"command not found\" and {} does not run the project's hooks, which \
                     are in {}",
                    file.display(),
                    if bare == 1 { "y" } else { "ies" },
                    dialect.product(),
                    project.join(".hookd/hooks.json").display()
                ),
                format!(
                    "`hookctl install --host {} --scope project --cwd {}` again: the entries then \
                     answer nothing without hookd, and each moved hook keeps a copy {} runs \
                     where hookd is not installed",
                    dialect.name(),
                    project.display(),
                    dialect.product()
                ),
            ));
            continue;
        }
        let here = if relay_on_path {
            "hookd-relay is on PATH here, so hookd runs the hooks and the copies do nothing"
        } else {
            "hookd-relay is not on PATH here, so the relay entries do nothing and the CLI runs \
             the copies itself"
        };
        findings.push(Finding::note(
            "shared",
            format!(
                "{} (shared with the project) has {} relay entr{} for machines with hookd and \
                 {copies} guarded cop{} of the moved hooks for machines without it; {here}",
                file.display(),
                relays.len(),
                if relays.len() == 1 { "y" } else { "ies" },
                if copies == 1 { "y" } else { "ies" },
            ),
        ));
    }
}

/// `hooks`: hooks that would run twice, or not at all.
fn check_hooks(listing: &ListResponse, findings: &mut Vec<Finding>) {
    let managed = listing
        .hooks
        .iter()
        .filter(|hook| hook.source == "managed")
        .count();
    if !listing.hooks_enabled && managed > 0 {
        findings.push(Finding::note(
            "hooks",
            format!(
                "hooksConfig.enabled is false: only the {managed} managed hooks run, which no \
                 setting turns off"
            ),
        ));
        return;
    }
    if !listing.hooks_enabled && !listing.hooks.is_empty() {
        findings.push(Finding::problem(
            "hooks",
            format!(
                "hooksConfig.enabled is false: none of the {} hooks runs",
                listing.hooks.len()
            ),
            "remove `\"enabled\": false` from hooksConfig (in the file `hookctl list` names) \
             if the hooks should run",
        ));
        return;
    }
    let mut seen: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    // A hook a managed copy outranks does not run: the managed finding says so.
    for hook in listing
        .hooks
        .iter()
        .filter(|hook| hook.enabled && hook.outranked_by.is_none())
    {
        let Some(command) = &hook.command else {
            continue;
        };
        let key = (
            hook.event.clone(),
            command.clone(),
            hook.matcher.clone().unwrap_or_default(),
        );
        let place = match &hook.path {
            Some(path) => format!("{} ({path})", hook.source),
            None => hook.source.clone(),
        };
        seen.entry(key).or_default().push(place);
    }
    let mut doubled = false;
    for ((event, command, _), places) in &seen {
        if places.len() < 2 {
            continue;
        }
        doubled = true;
        findings.push(Finding::problem(
            "hooks",
            format!(
                "`{command}` runs {} times on each {event}: it is configured in {}",
                places.len(),
                places.join(" and ")
            ),
            "keep one of them (or `hookctl disable NAME` the others)",
        ));
    }
    let disabled = listing.hooks.iter().filter(|hook| !hook.enabled).count();
    if !doubled {
        findings.push(Finding::ok(
            "hooks",
            format!(
                "{} hooks, none configured twice",
                listing.hooks.len() - disabled
            ),
        ));
    }
    if disabled > 0 {
        findings.push(Finding::note(
            "hooks",
            format!("{disabled} hooks are disabled (`hookctl enable NAME` turns one back on)"),
        ));
    }
}

/// `trust`: untrusted project hooks.
fn check_trust(listing: &ListResponse, status: &StatusResponse, findings: &mut Vec<Finding>) {
    let untrusted: Vec<&str> = listing
        .hooks
        .iter()
        .filter(|hook| hook.untrusted && hook.enabled)
        .map(|hook| hook.name.as_str())
        .collect();
    if untrusted.is_empty() {
        findings.push(Finding::ok("trust", "no untrusted project hooks"));
        return;
    }
    let names = untrusted.join(", ");
    if status.project_hooks.as_deref() == Some("require") {
        findings.push(Finding::problem(
            "trust",
            format!("untrusted project hooks do not run (hookd --project-hooks require): {names}"),
            format!("review them, then `hookctl trust --cwd {}`", listing.cwd),
        ));
    } else {
        findings.push(Finding::note(
            "trust",
            format!(
                "untrusted project hooks run with a warning (`hookctl trust` to trust them): \
                 {names}"
            ),
        ));
    }
}

/// `breaker`: hooks the circuit breaker has paused (said only when there are some).
fn check_paused(listing: &ListResponse, findings: &mut Vec<Finding>) {
    let paused: Vec<String> = listing
        .hooks
        .iter()
        .filter_map(|hook| {
            let paused = hook.paused.as_ref()?;
            Some(format!(
                "{} ({}, {} failures in a row)",
                hook.name, hook.event, paused.failures
            ))
        })
        .collect();
    if !paused.is_empty() {
        findings.push(Finding::problem(
            "breaker",
            format!(
                "hooks paused by the circuit breaker, deciding as their failure would: {}",
                paused.join(", ")
            ),
            "see why in `hookctl list` (Last run) or the log, fix the hook, then `hookctl reload`",
        ));
    }
}

/// Every policy hook's files are read and compiled as its evaluator would: a policy that does
/// not compile decides with its last good version (or fails by its `on_failure`).
fn check_policies(listing: &ListResponse, findings: &mut Vec<Finding>) {
    let mut checked = 0;
    for hook in listing
        .hooks
        .iter()
        .filter(|hook| hook.hook_type == "policy")
    {
        let Some(files) = hook
            .command
            .as_deref()
            .and_then(|c| c.strip_prefix("policy "))
        else {
            continue;
        };
        let base = hook
            .path
            .as_deref()
            .and_then(|path| Path::new(path).parent())
            .unwrap_or(Path::new("/"));
        let mut paths = files.split(" data ").map(|file| base.join(file));
        let Some(policy) = paths.next() else {
            continue;
        };
        checked += 1;
        let sources = hookd_policy::Sources {
            policy: policy.clone(),
            data: paths.collect(),
        };
        if let Err(err) = hookd_policy::Policy::load(&sources, &[]) {
            findings.push(Finding::problem(
                "policies",
                format!("policy hook {} ({}): {err}", hook.name, hook.event),
                format!(
                    "fix it (`hookctl policy test {}` shows the error); until then its last good \
                     version decides, or, with none, its on_failure",
                    policy.display()
                ),
            ));
        }
    }
    if checked > 0
        && !findings
            .iter()
            .any(|finding| finding.check == "policies" && finding.status == Status::Problem)
    {
        findings.push(Finding::ok(
            "policies",
            format!("{checked} policy hook(s) compile"),
        ));
    }
}

/// Whether a diagnostic is about a system file refused as insecure.
fn is_refused_system_file(message: &str) -> bool {
    message.contains("settings file not loaded, as Gemini CLI does not load it")
}

/// `settings` and `system-files`: what the daemon found reading the settings.
fn check_settings(listing: &ListResponse, status: &StatusResponse, findings: &mut Vec<Finding>) {
    let mut diagnostics: Vec<&hookd_protocol::Diagnostic> = listing.diagnostics.iter().collect();
    for registry in status.registries.iter().filter(|r| r.cwd == listing.cwd) {
        for diagnostic in &registry.diagnostics {
            if !diagnostics.contains(&diagnostic) {
                diagnostics.push(diagnostic);
            }
        }
    }
    let (managed, diagnostics): (Vec<_>, Vec<_>) = diagnostics
        .into_iter()
        .partition(|diagnostic| diagnostic.message.contains("managed hooks file"));
    check_managed(listing, status, &managed, findings);
    let (system, settings): (Vec<_>, Vec<_>) = diagnostics
        .into_iter()
        .partition(|diagnostic| is_refused_system_file(&diagnostic.message));
    for diagnostic in &system {
        findings.push(Finding::problem(
            "system-files",
            crate::render_diagnostic(diagnostic),
            "make the file owned by root and writable by nobody else \
             (`sudo chown root:root FILE && sudo chmod 644 FILE`), as Gemini CLI requires",
        ));
    }
    if system.is_empty() {
        findings.push(Finding::ok(
            "system-files",
            "no system settings file refused",
        ));
    }
    let mut problems = 0;
    for diagnostic in &settings {
        match diagnostic.severity {
            Severity::Error | Severity::Warning => {
                problems += 1;
                findings.push(Finding::problem(
                    "settings",
                    crate::render_diagnostic(diagnostic),
                    match &diagnostic.path {
                        Some(path) => format!("edit {path}; hookd picks the change up on save"),
                        None => "edit the settings file; hookd picks the change up on save".into(),
                    },
                ));
            }
            Severity::Info => {
                findings.push(Finding::note(
                    "settings",
                    crate::render_diagnostic(diagnostic),
                ));
            }
        }
    }
    if problems == 0 {
        findings.push(Finding::ok(
            "settings",
            "the settings files read without problems",
        ));
    }
}

/// `managed`: the managed hooks file and what it outranks. A refused file is a problem (the
/// administrator's guards are missing); what it outranks of the user's is a note, since that
/// is the administrator's intent, but said, so that nothing is dropped silently.
fn check_managed(
    listing: &ListResponse,
    status: &StatusResponse,
    diagnostics: &[&hookd_protocol::Diagnostic],
    findings: &mut Vec<Finding>,
) {
    let refused = status
        .managed
        .as_ref()
        .filter(|managed| managed.state == "refused");
    if let Some(managed) = refused {
        findings.push(Finding::problem(
            "managed",
            format!(
                "the managed hooks file {} is refused, its hooks do not run: {}",
                managed.path,
                managed.reason.as_deref().unwrap_or("see the daemon's log")
            ),
            "an administrator makes the file and every directory above it owned by root and \
             writable by nobody else (`sudo chown root:root FILE && sudo chmod 644 FILE`)",
        ));
    }
    let count = listing
        .hooks
        .iter()
        .filter(|hook| hook.source == "managed")
        .count();
    if count > 0 {
        let path = status
            .managed
            .as_ref()
            .map_or("the managed hooks file", |managed| managed.path.as_str());
        findings.push(Finding::ok(
            "managed",
            format!(
                "{count} managed hooks from {path}: no user or project setting disables, \
                 reorders or overrides them"
            ),
        ));
    } else if refused.is_none() {
        if let Some(managed) = &status.managed {
            findings.push(Finding::ok(
                "managed",
                format!("no managed hooks ({} is {})", managed.path, managed.state),
            ));
        }
    }
    for diagnostic in diagnostics.iter().filter(|diagnostic| {
        refused.is_none() || !diagnostic.message.contains("managed hooks file refused")
    }) {
        findings.push(Finding::note(
            "managed",
            crate::render_diagnostic(diagnostic),
        ));
    }
}

/// `telemetry`: the OpenTelemetry export, when it is on.
fn check_telemetry(status: &StatusResponse, findings: &mut Vec<Finding>) {
    let Some(telemetry) = &status.telemetry else {
        return;
    };
    if telemetry.dropped > 0 || telemetry.failed_exports > 0 {
        findings.push(Finding::problem(
            "telemetry",
            format!(
                "exporting to {}: {} records dropped (queue full), {} exports failed{}",
                telemetry.endpoint,
                telemetry.dropped,
                telemetry.failed_exports,
                telemetry
                    .last_error
                    .as_ref()
                    .map(|error| format!(" (last: {error})"))
                    .unwrap_or_default()
            ),
            "check that the collector at the endpoint is up and reachable; decisions are never \
             delayed by it, but what it misses is lost",
        ));
    } else {
        findings.push(Finding::ok(
            "telemetry",
            format!(
                "exporting to {}: {} records, none dropped",
                telemetry.endpoint, telemetry.recorded
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `list` answer with hooks of `sources` and diagnostics `messages`, and a `status`
    /// whose managed file is in `state`.
    fn managed_fixture(
        sources: &[&str],
        messages: &[&str],
        state: &str,
    ) -> (ListResponse, StatusResponse) {
        let hooks: Vec<Value> = sources
            .iter()
            .enumerate()
            .map(|(index, source)| {
                serde_json::json!({"event": "BeforeTool", "name": format!("h{index}"),
                    "enabled": true, "source": source, "sequential": false,
                    "timeout_ms": 1000, "type": "command", "command": "c"})
            })
            .collect();
        let diagnostics: Vec<Value> = messages
            .iter()
            .map(|message| serde_json::json!({"severity": "warning", "message": message}))
            .collect();
        let listing = serde_json::from_value(serde_json::json!({"type": "list", "id": 1,
            "cwd": "/p", "hooks_enabled": true, "generation": 1, "hooks": hooks,
            "diagnostics": diagnostics}))
        .expect("list");
        let status = serde_json::from_value(serde_json::json!({"id": 1, "version": "0",
            "pid": 1, "uptime_ms": 1, "connections": 1, "max_connections": 1,
            "hooks_running": 0, "hooks_queued": 0, "max_hooks": 1,
            "max_inflight_per_connection": 1, "events_served": 0, "registries": [],
            "audit": null, "clients": [],
            "managed": {"path": "/etc/hookd/hooks.json", "state": state,
                "reason": (state == "refused").then_some("/etc/hookd/hooks.json is writable by its group or others")}}))
        .expect("status");
        (listing, status)
    }

    #[test]
    fn the_managed_check_names_refusals_as_problems_and_outranking_as_notes() {
        let outranked = "BeforeTool hook \"x\" is outranked by the managed hooks file /etc/hookd/hooks.json: the managed copy runs in its place (managed hooks cannot be overridden)";
        let refused = "managed hooks file refused, its hooks do not run: writable";
        // (hook sources, diagnostics, managed state, expected managed findings)
        type Case<'a> = (&'a [&'a str], &'a [&'a str], &'a str, &'a [Status]);
        let cases: [Case<'_>; 4] = [
            (&["user"], &[], "absent", &[Status::Ok]),
            (&["managed", "user"], &[], "loaded", &[Status::Ok]),
            (
                &["managed", "user"],
                &[outranked],
                "loaded",
                &[Status::Ok, Status::Note],
            ),
            (&["user"], &[refused], "refused", &[Status::Problem]),
        ];
        for (sources, messages, state, expected) in cases {
            let (listing, status) = managed_fixture(sources, messages, state);
            let mut findings = Vec::new();
            check_settings(&listing, &status, &mut findings);
            let managed: Vec<Status> = findings
                .iter()
                .filter(|finding| finding.check == "managed")
                .map(|finding| finding.status)
                .collect();
            assert_eq!(
                managed, expected,
                "{sources:?} {messages:?} {state}: {findings:#?}"
            );
            // What concerns the managed file is never also a settings problem.
            assert!(
                !findings
                    .iter()
                    .any(|finding| finding.check == "settings" && finding.status == Status::Problem),
                "{findings:#?}"
            );
        }
    }

    #[test]
    fn the_relay_program_is_the_first_word_after_assignments() {
        let cases = [
            ("hookd-relay BeforeTool", Some("hookd-relay")),
            (
                "FOO=1 exec /usr/bin/hookctl relay X",
                Some("/usr/bin/hookctl"),
            ),
            (
                "'/opt/my bin/hookd-relay' X",
                Some("/opt/my bin/hookd-relay"),
            ),
            ("cd /tmp && hookd-relay AfterTool", Some("hookd-relay")),
            ("", None),
        ];
        for (command, expected) in cases {
            assert_eq!(relay_program(command).as_deref(), expected, "{command}");
        }
    }
}
