//! `hookctl service install|uninstall|status`: hookd as a systemd user service.
//!
//! `install` writes `hookd.socket` and `hookd.service` (the texts in the repository's
//! `systemd/` directory, embedded at build time) to the user's unit directory,
//! `$XDG_CONFIG_HOME/systemd/user/` or `~/.config/systemd/user/`, with `ExecStart=` set to the
//! absolute path of the installed `hookd`. Then it runs `systemctl --user daemon-reload` and
//! `systemctl --user enable --now hookd.socket`. With `--http` it also writes and enables
//! `hookd-http.socket`, hookd's loopback HTTP listener (on `--http-port`, default 47411); a
//! later `install` without `--http` keeps an HTTP socket unit already there. Where
//! `systemctl --user` cannot run (no user
//! bus, e.g. over ssh without a login session, or no systemd at all) the files are still
//! written and the exact commands to run are printed instead.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use clap::Subcommand;

/// The socket unit, as shipped.
pub const SOCKET_UNIT: &str = include_str!("../../../systemd/hookd.socket");
/// The service unit, as shipped; its `ExecStart=` line is replaced on install.
pub const SERVICE_UNIT: &str = include_str!("../../../systemd/hookd.service");
/// The socket unit's file name.
pub const SOCKET_NAME: &str = "hookd.socket";
/// The HTTP socket unit, as shipped (port 47411); its `ListenStream=` is set on install.
pub const HTTP_SOCKET_UNIT: &str = include_str!("../../../systemd/hookd-http.socket");
/// The HTTP socket unit's file name.
pub const HTTP_SOCKET_NAME: &str = "hookd-http.socket";
/// The service unit's file name.
pub const SERVICE_NAME: &str = "hookd.service";

/// The systemctl invocations that install the units, in order (each after `systemctl --user`);
/// `http`: the HTTP socket unit is installed too.
fn install_commands(http: bool) -> Vec<Vec<&'static str>> {
    let mut enable = vec!["enable", "--now", SOCKET_NAME];
    if http {
        enable.push(HTTP_SOCKET_NAME);
    }
    vec![
        vec!["daemon-reload"],
        enable,
        // A daemon already running from an older install picks up the new binary (and a new
        // HTTP socket); with the sockets held by systemd, no client notices the restart. A
        // no-op when nothing runs.
        vec!["try-restart", SERVICE_NAME],
    ]
}

/// The systemctl invocations that remove the units, in order; `http`: the HTTP socket unit
/// is installed (`systemctl disable` refuses a unit that is not).
fn uninstall_commands(http: bool) -> Vec<Vec<&'static str>> {
    let mut disable = vec!["disable", "--now", SOCKET_NAME];
    if http {
        disable.push(HTTP_SOCKET_NAME);
    }
    disable.push(SERVICE_NAME);
    vec![disable, vec!["daemon-reload"]]
}

/// Arguments of `hookctl service`.
#[derive(Debug, clap::Args)]
pub struct ServiceArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ServiceAction,
}

/// The `hookctl service` subcommands.
#[derive(Debug, Subcommand)]
pub enum ServiceAction {
    /// Write hookd.socket and hookd.service to the systemd user directory, reload systemd and
    /// enable the socket (the first connection then starts hookd).
    Install(InstallArgs),
    /// Disable and stop the units, and remove them.
    Uninstall(UninstallArgs),
    /// Show the installed units and what systemd says about them.
    Status,
}

/// Arguments of `hookctl service install`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The hookd binary the service runs [default: `hookd` next to this hookctl].
    #[arg(long, value_name = "PATH")]
    pub hookd: Option<PathBuf>,
    /// Only write the unit files; print the systemctl commands instead of running them.
    #[arg(long)]
    pub no_systemctl: bool,
    /// Also install and enable hookd-http.socket, hookd's loopback HTTP listener (for
    /// `hookctl install --host claude|copilot --transport http`).
    #[arg(long)]
    pub http: bool,
    /// The loopback port of hookd-http.socket [default: 47411].
    #[arg(long, value_name = "N", requires = "http")]
    pub http_port: Option<u16>,
}

/// Arguments of `hookctl service uninstall`.
#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// Only remove the unit files; print the systemctl commands instead of running them.
    #[arg(long)]
    pub no_systemctl: bool,
}

/// Where the units go and how systemctl is found; [`ServiceEnv::from_process`] in real use,
/// built directly by tests.
#[derive(Debug, Clone)]
pub struct ServiceEnv {
    /// The systemd user unit directory.
    pub unit_dir: PathBuf,
    /// `PATH` for finding `systemctl`; `None` keeps the process's.
    pub path: Option<OsString>,
    /// The directory relative `--hookd` paths are resolved against.
    pub cwd: PathBuf,
    /// The socket the units listen on (`$XDG_RUNTIME_DIR/hookd/hookd.sock`), to notice a
    /// daemon already running there; `None` when `XDG_RUNTIME_DIR` is not set.
    pub socket: Option<PathBuf>,
}

impl ServiceEnv {
    /// The environment of this process.
    pub fn from_process() -> anyhow::Result<ServiceEnv> {
        let unit_dir = unit_dir(
            std::env::var_os("XDG_CONFIG_HOME").as_deref(),
            std::env::var_os("HOME").as_deref(),
        )?;
        let cwd = std::env::current_dir().context("cannot determine the current directory")?;
        let socket = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("hookd/hookd.sock"));
        Ok(ServiceEnv {
            unit_dir,
            path: None,
            cwd,
            socket,
        })
    }
}

/// The systemd user unit directory: `$XDG_CONFIG_HOME/systemd/user` when `XDG_CONFIG_HOME` is
/// an absolute path (the XDG specification says to ignore a relative one), else
/// `$HOME/.config/systemd/user`.
pub fn unit_dir(xdg_config_home: Option<&OsStr>, home: Option<&OsStr>) -> anyhow::Result<PathBuf> {
    if let Some(config) = xdg_config_home.map(Path::new).filter(|p| p.is_absolute()) {
        return Ok(config.join("systemd/user"));
    }
    match home.map(Path::new).filter(|p| p.is_absolute()) {
        Some(home) => Ok(home.join(".config/systemd/user")),
        None => bail!(
            "neither XDG_CONFIG_HOME nor HOME is an absolute path; cannot find the systemd user directory"
        ),
    }
}

/// Runs `hookctl service` in this process's environment and returns what to print.
pub fn run(args: ServiceArgs) -> anyhow::Result<String> {
    execute(args, &ServiceEnv::from_process()?)
}

/// Runs `hookctl service` in `env` and returns what to print.
pub fn execute(args: ServiceArgs, env: &ServiceEnv) -> anyhow::Result<String> {
    match args.action {
        ServiceAction::Install(args) => {
            let hookd = match args.hookd {
                Some(path) => env.cwd.join(path),
                None => default_hookd()?,
            };
            let http = args
                .http
                .then(|| args.http_port.unwrap_or(hookd_protocol::http::DEFAULT_PORT));
            install(env, &hookd, !args.no_systemctl, http)
        }
        ServiceAction::Uninstall(args) => uninstall(env, !args.no_systemctl),
        ServiceAction::Status => Ok(status(env)),
    }
}

/// `hookd` next to the running `hookctl` (where `cargo install` and release archives put it).
fn default_hookd() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the running hookctl binary")?;
    let dir = exe
        .parent()
        .context("the running hookctl binary has no directory")?;
    Ok(dir.join("hookd"))
}

/// Writes the units with `ExecStart=` pointing at `hookd` (and, with `http`, the HTTP socket
/// unit on that port), then enables them (when `use_systemctl`) or says how to.
pub fn install(
    env: &ServiceEnv,
    hookd: &Path,
    use_systemctl: bool,
    http: Option<u16>,
) -> anyhow::Result<String> {
    check_executable(hookd)?;
    if let Some((socket, pid)) = hand_started_daemon(env, use_systemctl) {
        bail!(
            "a hookd (pid {pid}) started by hand already answers on {}: stop it first (`kill \
             {pid}`), then run `hookctl service install` again. Installed now, the units' socket \
             would be removed by that daemon when it stops, and every event after that would \
             find no hookd",
            socket.display()
        );
    }
    let service = render_service(SERVICE_UNIT, hookd)?;
    std::fs::create_dir_all(&env.unit_dir)
        .with_context(|| format!("cannot create {}", env.unit_dir.display()))?;
    let http_unit = http.map(render_http_socket).transpose()?;
    let mut out = String::new();
    let mut units = vec![(SOCKET_NAME, SOCKET_UNIT), (SERVICE_NAME, service.as_str())];
    if let Some(unit) = &http_unit {
        units.push((HTTP_SOCKET_NAME, unit.as_str()));
    }
    for (name, text) in units {
        let path = env.unit_dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        let _ = writeln!(out, "wrote {}", path.display());
    }
    let http_path = env.unit_dir.join(HTTP_SOCKET_NAME);
    let kept_http = http.is_none() && http_path.exists();
    if kept_http {
        let _ = writeln!(
            out,
            "kept {} (hookd's HTTP listener, installed before)",
            http_path.display()
        );
    }
    let _ = writeln!(out, "hookd binary: {}", hookd.display());
    let commands = install_commands(http.is_some() || kept_http);
    if !use_systemctl {
        out.push_str("To enable the service, run:\n");
        push_commands(&mut out, &commands);
        return Ok(out);
    }
    if run_commands(env, &commands, &mut out)? {
        out.push_str("hookd starts on the first connection to its socket ($XDG_RUNTIME_DIR/hookd/hookd.sock).\n");
        if let Some(port) = http {
            let _ = writeln!(
                out,
                "hookd's HTTP listener: 127.0.0.1:{port} (`hookctl install --host claude \
                 --transport http --port {port}` wires Claude Code to it, `--host copilot` \
                 Copilot CLI)."
            );
        }
    }
    Ok(out)
}

/// The shipped HTTP socket unit listening on loopback `port`.
pub fn render_http_socket(port: u16) -> anyhow::Result<String> {
    let shipped = format!(
        "ListenStream=127.0.0.1:{}",
        hookd_protocol::http::DEFAULT_PORT
    );
    if !HTTP_SOCKET_UNIT.lines().any(|line| line == shipped) {
        bail!("the shipped {HTTP_SOCKET_NAME} has no `{shipped}` line to set the port in");
    }
    Ok(HTTP_SOCKET_UNIT
        .lines()
        .map(|line| {
            if line == shipped {
                format!("ListenStream=127.0.0.1:{port}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect())
}

/// A daemon answering on the units' socket that systemd does not manage (its socket unit
/// is not active, or systemctl cannot say), with its pid.
fn hand_started_daemon(env: &ServiceEnv, use_systemctl: bool) -> Option<(PathBuf, u32)> {
    let socket = env.socket.as_ref()?;
    let pid = daemon_pid(socket)?;
    if use_systemctl && systemctl(env, &["is-active", "--quiet", SOCKET_NAME]).is_ok() {
        return None;
    }
    Some((socket.clone(), pid))
}

/// The pid of the hookd that answers a `hello` on `socket` within a second.
fn daemon_pid(socket: &Path) -> Option<u32> {
    use std::io::Write;
    let timeout = std::time::Duration::from_secs(1);
    let mut stream = std::os::unix::net::UnixStream::connect(socket).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.set_write_timeout(Some(timeout)).ok()?;
    let hello = hookd_protocol::ClientMessage::Hello(hookd_protocol::ClientHello::new(
        format!("hookctl/{}", env!("CARGO_PKG_VERSION")),
        None,
    ));
    let frame = hookd_client::blocking::frame(&hookd_protocol::encode(&hello)).ok()?;
    stream.write_all(&frame).ok()?;
    let mut reader = hookd_client::blocking::FrameReader::new(64 * 1024, 1024);
    let body = reader.read_frame(&mut stream).ok()?;
    match hookd_protocol::parse_server_message(body).ok()? {
        hookd_protocol::ServerMessage::Hello(hello) => Some(hello.pid),
        _ => None,
    }
}

/// Disables the units (when `use_systemctl`) and removes them.
pub fn uninstall(env: &ServiceEnv, use_systemctl: bool) -> anyhow::Result<String> {
    let mut out = String::new();
    let http = env.unit_dir.join(HTTP_SOCKET_NAME).exists();
    let commands = uninstall_commands(http);
    // Disabling needs the unit files, so it comes first; the reload comes after the removal.
    let systemctl_works = use_systemctl
        && match systemctl(env, &commands[0]) {
            Ok(()) => {
                let _ = writeln!(out, "ran: {}", command_line(&commands[0]));
                true
            }
            Err(reason) => {
                let _ = writeln!(out, "systemctl --user is not available ({reason}).");
                false
            }
        };
    // What `systemctl disable` would remove, for when it could not run.
    for socket in [SOCKET_NAME, HTTP_SOCKET_NAME] {
        let wants = env.unit_dir.join("sockets.target.wants").join(socket);
        if std::fs::symlink_metadata(&wants).is_ok_and(|meta| meta.file_type().is_symlink()) {
            std::fs::remove_file(&wants)
                .with_context(|| format!("cannot remove {}", wants.display()))?;
            let _ = writeln!(out, "removed {}", wants.display());
        }
    }
    for name in [SOCKET_NAME, SERVICE_NAME, HTTP_SOCKET_NAME] {
        if name == HTTP_SOCKET_NAME && !http {
            continue;
        }
        let path = env.unit_dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                let _ = writeln!(out, "removed {}", path.display());
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let _ = writeln!(out, "{} was not installed", path.display());
            }
            Err(err) => {
                return Err(err).with_context(|| format!("cannot remove {}", path.display()));
            }
        }
    }
    if systemctl_works {
        let reload = &commands[1];
        systemctl(env, reload)
            .map_err(|reason| anyhow::anyhow!("`{}` failed: {reason}", command_line(reload)))?;
        let _ = writeln!(out, "ran: {}", command_line(reload));
    } else {
        out.push_str("To stop a running hookd and forget the units, run:\n");
        let mut stop = vec!["stop", SOCKET_NAME];
        if http {
            stop.push(HTTP_SOCKET_NAME);
        }
        stop.push(SERVICE_NAME);
        push_commands(&mut out, &[stop, vec!["daemon-reload"]]);
    }
    Ok(out)
}

/// What is installed, whether it matches this hookctl's units, and `systemctl --user status`.
pub fn status(env: &ServiceEnv) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "unit directory: {}", env.unit_dir.display());
    for (name, shipped) in [
        (SOCKET_NAME, SOCKET_UNIT),
        (SERVICE_NAME, SERVICE_UNIT),
        (HTTP_SOCKET_NAME, HTTP_SOCKET_UNIT),
    ] {
        let path = env.unit_dir.join(name);
        let installed = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let optional = if name == HTTP_SOCKET_NAME {
                    " (optional: `hookctl service install --http` adds hookd's HTTP listener)"
                } else {
                    ""
                };
                let _ = writeln!(out, "{name}: not installed{optional}");
                continue;
            }
            Err(err) => {
                let _ = writeln!(out, "{name}: cannot read {}: {err}", path.display());
                continue;
            }
        };
        let current = without_exec_start(&installed) == without_exec_start(shipped);
        let _ = writeln!(
            out,
            "{name}: installed at {}{}",
            path.display(),
            if current {
                ""
            } else {
                " (differs from this hookctl's; `hookctl service install` updates it)"
            }
        );
        for line in installed.lines() {
            if line.starts_with("ExecStart=")
                || (name == HTTP_SOCKET_NAME && line.starts_with("ListenStream="))
            {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    let wants = env.unit_dir.join("sockets.target.wants").join(SOCKET_NAME);
    let enabled = std::fs::symlink_metadata(&wants).is_ok();
    let _ = writeln!(
        out,
        "enabled at login: {}",
        if enabled { "yes" } else { "no" }
    );
    let mut units = vec![SOCKET_NAME, SERVICE_NAME];
    if env.unit_dir.join(HTTP_SOCKET_NAME).exists() {
        units.push(HTTP_SOCKET_NAME);
    }
    let output = systemctl_command(env)
        .args(["status", "--no-pager"])
        .args(&units)
        .output();
    match output {
        // `systemctl status` exits 3 for an inactive unit; its report is still the answer.
        Ok(output) if !output.stdout.is_empty() => {
            out.push('\n');
            out.push_str(&String::from_utf8_lossy(&output.stdout));
        }
        Ok(output) => {
            let _ = writeln!(
                out,
                "systemctl --user status: {}",
                first_line(&output.stderr).unwrap_or("no output")
            );
        }
        Err(err) => {
            let _ = writeln!(out, "systemctl --user is not available ({err})");
        }
    }
    out
}

/// Runs `commands` in order and returns whether they all ran. When the first fails,
/// `systemctl --user` cannot run here: every command is printed for the user instead and the
/// answer is `false`. A later failure is an error (systemd answered, and refused).
fn run_commands(
    env: &ServiceEnv,
    commands: &[Vec<&str>],
    out: &mut String,
) -> anyhow::Result<bool> {
    for (index, args) in commands.iter().enumerate() {
        match systemctl(env, args) {
            Ok(()) => {
                let _ = writeln!(out, "ran: {}", command_line(args));
            }
            Err(reason) if index == 0 => {
                let _ = writeln!(
                    out,
                    "systemctl --user is not available ({reason}). Run these in your login session:"
                );
                push_commands(out, commands);
                return Ok(false);
            }
            Err(reason) => {
                let mut rest = String::new();
                push_commands(&mut rest, &commands[index..]);
                bail!(
                    "`{}` failed: {reason}\n{out}still to run:\n{rest}",
                    command_line(args)
                );
            }
        }
    }
    Ok(true)
}

/// `systemctl --user`, found on the environment's `PATH`.
fn systemctl_command(env: &ServiceEnv) -> Command {
    let mut command = Command::new("systemctl");
    if let Some(path) = &env.path {
        // Setting PATH on the command also makes it the search path for the program itself.
        command.env("PATH", path);
    }
    command.arg("--user");
    command
}

/// Runs one `systemctl --user` command; the error is a one-line reason.
fn systemctl(env: &ServiceEnv, args: &[&str]) -> Result<(), String> {
    let output = systemctl_command(env)
        .args(args)
        .output()
        .map_err(|err| format!("cannot run systemctl: {err}"))?;
    if output.status.success() {
        return Ok(());
    }
    let reason = first_line(&output.stderr)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("systemctl exited with {}", output.status));
    Err(reason)
}

/// The first non-empty line of `bytes`, when it is text.
fn first_line(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes)
        .ok()?
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
}

/// `systemctl --user <args>` as the user would type it.
fn command_line(args: &[&str]) -> String {
    format!("systemctl --user {}", args.join(" "))
}

/// Appends each command on its own indented line.
fn push_commands(out: &mut String, commands: &[Vec<&str>]) {
    for args in commands {
        let _ = writeln!(out, "  {}", command_line(args));
    }
}

/// Fails unless `path` is an absolute path to an executable file.
fn check_executable(path: &Path) -> anyhow::Result<()> {
    if !path.is_absolute() {
        bail!("the hookd path must be absolute, not {}", path.display());
    }
    let meta = std::fs::metadata(path).with_context(|| {
        format!(
            "no hookd binary at {}; pass its path with --hookd",
            path.display()
        )
    })?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        bail!("{} is not an executable file", path.display());
    }
    Ok(())
}

/// The service unit with its `ExecStart=` line running `hookd`.
pub fn render_service(unit: &str, hookd: &Path) -> anyhow::Result<String> {
    let exec = quote_exec_path(hookd)?;
    let mut replaced = 0;
    let mut out = String::with_capacity(unit.len() + exec.len());
    for line in unit.lines() {
        if line.starts_with("ExecStart=") {
            replaced += 1;
            out.push_str("ExecStart=");
            out.push_str(&exec);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    if replaced != 1 {
        bail!("the service unit must have exactly one ExecStart= line, found {replaced}");
    }
    Ok(out)
}

/// The unit text with its `ExecStart=` line blanked, to compare an installed unit with the
/// shipped one.
fn without_exec_start(unit: &str) -> Vec<&str> {
    unit.lines()
        .map(|line| {
            if line.starts_with("ExecStart=") {
                "ExecStart="
            } else if line.starts_with("ListenStream=127.0.0.1:") {
                // The HTTP socket's port is the user's choice.
                "ListenStream=127.0.0.1:"
            } else {
                line
            }
        })
        .collect()
}

/// Quotes `path` as the program of a systemd command line (`systemd.service(5)`, "Command
/// lines"): `%` is a specifier and `$` a variable reference, so both are doubled; a path with
/// blanks, quotes or backslashes is double-quoted with C-style escapes. Control characters
/// (a newline would end the setting) and non-UTF-8 paths are refused.
pub fn quote_exec_path(path: &Path) -> anyhow::Result<String> {
    let Some(text) = path.to_str() else {
        bail!("{} is not valid UTF-8", path.display());
    };
    if text.chars().any(char::is_control) {
        bail!("{text:?} contains a control character");
    }
    let escaped = text.replace('%', "%%").replace('$', "$$");
    let needs_quotes = escaped
        .chars()
        .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | ';'));
    if !needs_quotes {
        return Ok(escaped);
    }
    let mut quoted = String::with_capacity(escaped.len() + 2);
    quoted.push('"');
    for c in escaped.chars() {
        if matches!(c, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    Ok(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_dir_follows_xdg_then_home() {
        fn check(xdg: Option<&str>, home: Option<&str>, expected: Option<&str>) {
            let actual = unit_dir(xdg.map(OsStr::new), home.map(OsStr::new)).ok();
            assert_eq!(
                actual.as_deref(),
                expected.map(Path::new),
                "{xdg:?} {home:?}"
            );
        }
        check(
            Some("/x/config"),
            Some("/home/ada"),
            Some("/x/config/systemd/user"),
        );
        check(
            None,
            Some("/home/ada"),
            Some("/home/ada/.config/systemd/user"),
        );
        check(
            Some(""),
            Some("/home/ada"),
            Some("/home/ada/.config/systemd/user"),
        );
        check(
            Some("rel"),
            Some("/home/ada"),
            Some("/home/ada/.config/systemd/user"),
        );
        check(None, Some("relative"), None);
        check(None, None, None);
    }

    #[test]
    fn exec_paths_are_quoted_for_systemd() {
        fn check(path: &str, expected: Option<&str>) {
            let actual = quote_exec_path(Path::new(path)).ok();
            assert_eq!(actual.as_deref(), expected, "{path:?}");
        }
        check("/usr/local/bin/hookd", Some("/usr/local/bin/hookd"));
        check(
            "/home/ada/.cargo/bin/hookd",
            Some("/home/ada/.cargo/bin/hookd"),
        );
        check("/opt/100%/hookd", Some("/opt/100%%/hookd"));
        check("/opt/$HOME/hookd", Some("/opt/$$HOME/hookd"));
        check("/opt/my tools/hookd", Some("\"/opt/my tools/hookd\""));
        check("/opt/a\"b/hookd", Some("\"/opt/a\\\"b/hookd\""));
        check("/opt/a\\b/hookd", Some("\"/opt/a\\\\b/hookd\""));
        check("/opt/a;b/hookd", Some("\"/opt/a;b/hookd\""));
        check("/opt/a\nb/hookd", None);
    }

    #[test]
    fn the_shipped_service_gets_the_binary_path() {
        let rendered = render_service(SERVICE_UNIT, Path::new("/opt/hookd/bin/hookd")).unwrap();
        let exec: Vec<&str> = rendered
            .lines()
            .filter(|l| l.starts_with("ExecStart="))
            .collect();
        assert_eq!(exec, ["ExecStart=/opt/hookd/bin/hookd"]);
        assert_eq!(
            without_exec_start(&rendered),
            without_exec_start(SERVICE_UNIT)
        );
        assert!(render_service("[Service]\n", Path::new("/h")).is_err());
        assert!(render_service("ExecStart=a\nExecStart=b\n", Path::new("/h")).is_err());
    }

    /// A temp dir with a fake `hookd` and, optionally, a fake `systemctl` on `PATH` that
    /// appends its arguments to `systemctl.log` and fails as told.
    struct Sandbox {
        dir: tempfile::TempDir,
    }

    impl Sandbox {
        fn new(systemctl: Option<&str>) -> Sandbox {
            let dir = tempfile::tempdir().unwrap();
            let bin = dir.path().join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            executable(&dir.path().join("hookd"), "#!/bin/sh\n");
            if let Some(body) = systemctl {
                let log = dir.path().join("systemctl.log");
                executable(
                    &bin.join("systemctl"),
                    &format!("#!/bin/sh\necho \"$@\" >> '{}'\n{body}\n", log.display()),
                );
            }
            Sandbox { dir }
        }

        fn env(&self) -> ServiceEnv {
            ServiceEnv {
                unit_dir: unit_dir(Some(self.dir.path().join("config").as_os_str()), None).unwrap(),
                path: Some(self.dir.path().join("bin").into_os_string()),
                cwd: self.dir.path().to_owned(),
                socket: Some(self.dir.path().join("run/hookd.sock")),
            }
        }

        fn hookd(&self) -> PathBuf {
            self.dir.path().join("hookd")
        }

        fn calls(&self) -> Vec<String> {
            std::fs::read_to_string(self.dir.path().join("systemctl.log"))
                .unwrap_or_default()
                .lines()
                .map(String::from)
                .collect()
        }

        fn unit(&self, name: &str) -> Option<String> {
            std::fs::read_to_string(self.env().unit_dir.join(name)).ok()
        }
    }

    fn executable(path: &Path, body: &str) {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn install_args(hookd: Option<&str>, no_systemctl: bool) -> ServiceArgs {
        ServiceArgs {
            action: ServiceAction::Install(InstallArgs {
                hookd: hookd.map(PathBuf::from),
                no_systemctl,
                http: false,
                http_port: None,
            }),
        }
    }

    /// A daemon on the sandbox's socket that answers one `hello` with `pid`.
    fn fake_daemon(sandbox: &Sandbox, pid: u32) -> std::thread::JoinHandle<()> {
        use std::io::{Read, Write};
        let socket = sandbox.env().socket.unwrap();
        std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        std::thread::spawn(move || {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            let mut prefix = [0u8; 4];
            stream.read_exact(&mut prefix).unwrap();
            let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
            stream.read_exact(&mut body).unwrap();
            let hello = format!(
                r#"{{"type":"hello","protocol":1,"server":"hookd/0","pid":{pid},"max_frame_bytes":1024}}"#
            );
            let mut frame = (hello.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(hello.as_bytes());
            stream.write_all(&frame).unwrap();
        })
    }

    #[test]
    fn install_refuses_while_a_hand_started_daemon_holds_the_socket() {
        // (systemctl's answer to is-active, --no-systemctl, refused?)
        let cases = [
            (
                "case \"$2\" in is-active) exit 3;; esac; exit 0",
                false,
                true,
            ),
            ("exit 0", true, true),
            ("exit 0", false, false),
        ];
        for (systemctl, no_systemctl, refused) in cases {
            let sandbox = Sandbox::new(Some(systemctl));
            let daemon = fake_daemon(&sandbox, 4242);
            let result = execute(install_args(Some("hookd"), no_systemctl), &sandbox.env());
            daemon.join().unwrap();
            match result {
                Err(err) if refused => {
                    let text = format!("{err:#}");
                    assert!(
                        text.contains("pid 4242") && text.contains("kill 4242"),
                        "{text}"
                    );
                    assert_eq!(sandbox.unit(SOCKET_NAME), None);
                }
                Ok(out) if !refused => {
                    // systemd's own socket: a re-install.
                    assert!(out.contains("wrote"), "{out}");
                }
                other => panic!("{systemctl} {no_systemctl}: {other:?}"),
            }
        }
    }

    #[test]
    fn install_writes_the_units_and_enables_the_socket() {
        let sandbox = Sandbox::new(Some("exit 0"));
        let out = execute(install_args(Some("hookd"), false), &sandbox.env()).unwrap();

        assert_eq!(sandbox.unit(SOCKET_NAME).as_deref(), Some(SOCKET_UNIT));
        let service = sandbox.unit(SERVICE_NAME).unwrap();
        let expected = format!("ExecStart={}", sandbox.hookd().display());
        assert!(service.lines().any(|l| l == expected), "{service}");
        assert_eq!(
            sandbox.calls(),
            [
                "--user daemon-reload",
                "--user enable --now hookd.socket",
                "--user try-restart hookd.service"
            ]
        );
        assert!(
            out.contains("ran: systemctl --user enable --now hookd.socket"),
            "{out}"
        );
    }

    #[test]
    fn http_installs_the_listener_socket_on_its_port_keeps_it_and_removes_it() {
        let sandbox = Sandbox::new(Some("exit 0"));
        let args = ServiceArgs {
            action: ServiceAction::Install(InstallArgs {
                hookd: Some(PathBuf::from("hookd")),
                no_systemctl: false,
                http: true,
                http_port: Some(47500),
            }),
        };
        let out = execute(args, &sandbox.env()).unwrap();
        let unit = sandbox.unit(HTTP_SOCKET_NAME).unwrap();
        assert!(
            unit.lines().any(|l| l == "ListenStream=127.0.0.1:47500"),
            "{unit}"
        );
        assert!(!unit.contains("47411"), "{unit}");
        assert!(unit.contains("FileDescriptorName=http"), "{unit}");
        assert_eq!(
            sandbox.calls(),
            [
                "--user daemon-reload",
                "--user enable --now hookd.socket hookd-http.socket",
                "--user try-restart hookd.service"
            ]
        );
        assert!(out.contains("--port 47500"), "{out}");
        // The status shows the port and no difference from the shipped unit.
        let shown = status(&sandbox.env());
        assert!(shown.contains("ListenStream=127.0.0.1:47500"), "{shown}");
        assert!(!shown.contains("differs"), "{shown}");

        // A re-install without --http keeps the listener and keeps it enabled.
        let out = execute(install_args(Some("hookd"), false), &sandbox.env()).unwrap();
        assert!(out.contains("kept"), "{out}");
        assert_eq!(
            sandbox.unit(HTTP_SOCKET_NAME).as_deref(),
            Some(unit.as_str())
        );
        assert!(
            sandbox
                .calls()
                .iter()
                .filter(|call| call.contains("enable"))
                .all(|call| call.contains(HTTP_SOCKET_NAME)),
            "{:?}",
            sandbox.calls()
        );

        // Uninstall disables and removes it with the others.
        execute(
            ServiceArgs {
                action: ServiceAction::Uninstall(UninstallArgs {
                    no_systemctl: false,
                }),
            },
            &sandbox.env(),
        )
        .unwrap();
        assert_eq!(sandbox.unit(HTTP_SOCKET_NAME), None);
        assert!(
            sandbox.calls().contains(
                &"--user disable --now hookd.socket hookd-http.socket hookd.service".to_owned()
            ),
            "{:?}",
            sandbox.calls()
        );
    }

    #[test]
    fn the_shipped_http_socket_listens_on_the_default_port() {
        assert_eq!(
            render_http_socket(hookd_protocol::http::DEFAULT_PORT).unwrap(),
            HTTP_SOCKET_UNIT
        );
    }

    #[test]
    fn without_a_user_bus_install_prints_the_commands() {
        let expected_commands = "  systemctl --user daemon-reload\n  systemctl --user enable --now hookd.socket\n  systemctl --user try-restart hookd.service\n";
        fn check(sandbox: &Sandbox, no_systemctl: bool, expected_calls: &[&str], commands: &str) {
            let hookd = sandbox.hookd().display().to_string();
            let out = execute(install_args(Some(&hookd), no_systemctl), &sandbox.env()).unwrap();
            assert!(out.ends_with(commands), "{out}");
            assert!(sandbox.unit(SOCKET_NAME).is_some());
            assert!(sandbox.unit(SERVICE_NAME).is_some());
            assert_eq!(sandbox.calls(), expected_calls);
        }
        // systemctl runs but cannot reach the user manager.
        let no_bus = Sandbox::new(Some(
            "echo 'Failed to connect to bus: No medium found' >&2; exit 1",
        ));
        check(&no_bus, false, &["--user daemon-reload"], expected_commands);
        // No systemctl at all.
        check(&Sandbox::new(None), false, &[], expected_commands);
        // Asked not to run it.
        check(&Sandbox::new(Some("exit 0")), true, &[], expected_commands);
    }

    #[test]
    fn a_refusal_after_the_reload_is_an_error() {
        let sandbox = Sandbox::new(Some(
            "case \"$2\" in enable) echo 'Unit hookd.socket has a bad setting' >&2; exit 1;; esac",
        ));
        let err = execute(install_args(Some("hookd"), false), &sandbox.env()).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("Unit hookd.socket has a bad setting"),
            "{text}"
        );
        assert!(
            text.contains("systemctl --user try-restart hookd.service"),
            "{text}"
        );
    }

    #[test]
    fn install_refuses_a_missing_or_non_executable_hookd() {
        fn check(sandbox: &Sandbox, hookd: &str) {
            let result = execute(install_args(Some(hookd), false), &sandbox.env());
            assert!(result.is_err(), "{hookd}");
            assert_eq!(sandbox.unit(SERVICE_NAME), None);
            assert!(sandbox.calls().is_empty());
        }
        let sandbox = Sandbox::new(Some("exit 0"));
        std::fs::write(sandbox.dir.path().join("plain"), "").unwrap();
        check(&sandbox, "missing/hookd");
        check(&sandbox, "plain");
        check(&sandbox, "bin");
    }

    #[test]
    fn uninstall_disables_and_removes_the_units() {
        let sandbox = Sandbox::new(Some("exit 0"));
        execute(install_args(Some("hookd"), true), &sandbox.env()).unwrap();
        // What `systemctl enable` leaves behind.
        let wants = sandbox.env().unit_dir.join("sockets.target.wants");
        std::fs::create_dir_all(&wants).unwrap();
        std::os::unix::fs::symlink("../hookd.socket", wants.join(SOCKET_NAME)).unwrap();

        let args = ServiceArgs {
            action: ServiceAction::Uninstall(UninstallArgs {
                no_systemctl: false,
            }),
        };
        execute(args, &sandbox.env()).unwrap();
        assert_eq!(sandbox.unit(SOCKET_NAME), None);
        assert_eq!(sandbox.unit(SERVICE_NAME), None);
        assert!(std::fs::symlink_metadata(wants.join(SOCKET_NAME)).is_err());
        assert_eq!(
            sandbox.calls(),
            [
                "--user disable --now hookd.socket hookd.service",
                "--user daemon-reload"
            ]
        );
    }

    #[test]
    fn uninstall_without_systemctl_removes_the_files_and_prints_the_rest() {
        let sandbox = Sandbox::new(None);
        execute(install_args(Some("hookd"), true), &sandbox.env()).unwrap();
        let args = ServiceArgs {
            action: ServiceAction::Uninstall(UninstallArgs {
                no_systemctl: false,
            }),
        };
        let out = execute(args, &sandbox.env()).unwrap();
        assert_eq!(sandbox.unit(SERVICE_NAME), None);
        assert!(
            out.ends_with(
                "  systemctl --user stop hookd.socket hookd.service\n  systemctl --user daemon-reload\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn status_reports_the_installed_units() {
        let sandbox = Sandbox::new(Some("echo \"● hookd.socket - hookd socket\"; exit 3"));
        let before = status(&sandbox.env());
        assert!(before.contains("hookd.socket: not installed"), "{before}");
        assert!(before.contains("enabled at login: no"), "{before}");

        execute(install_args(Some("hookd"), true), &sandbox.env()).unwrap();
        let after = status(&sandbox.env());
        let service_line = format!(
            "hookd.service: installed at {}\n",
            sandbox.env().unit_dir.join(SERVICE_NAME).display()
        );
        assert!(after.contains(&service_line), "{after}");
        assert!(
            after.contains(&format!("  ExecStart={}", sandbox.hookd().display())),
            "{after}"
        );
        assert!(after.contains("● hookd.socket - hookd socket"), "{after}");
        assert_eq!(
            sandbox.calls().last().map(String::as_str),
            Some("--user status --no-pager hookd.socket hookd.service")
        );

        // An edited unit is reported as differing.
        let path = sandbox.env().unit_dir.join(SOCKET_NAME);
        std::fs::write(&path, "[Socket]\nListenStream=/elsewhere\n").unwrap();
        assert!(status(&sandbox.env()).contains("differs"));
    }
}
