//! `hookctl install`, `hookctl uninstall` and `hookctl sync`: hand an agent CLI's hooks to
//! hookd, keep the CLI's relay entries in step with hookd's hooks, and give everything back.
//!
//! `install --host HOST --scope user|project`:
//!
//! 1. reads the host's settings file of that scope (Gemini CLI: `~/.gemini/settings.json` or
//!    `<project>/.gemini/settings.json`; Claude Code: `~/.claude/settings.json` or
//!    `<project>/.claude/settings.json`), JSON with comments;
//! 2. moves its hooks into hookd's own hooks file of the same scope
//!    (`$XDG_CONFIG_HOME/hookd/hooks.json` or `<project>/.hookd/hooks.json`), appending each
//!    event's definitions to what is there (Claude Code's hooks are converted first, and keep
//!    Claude's language with `"dialect": "claude"`), and records each moved definition, with
//!    the host it came from, in the install manifest;
//! 3. replaces the host's `hooks` with relay entries ([`wiring`]): one `hookctl relay` entry
//!    for each event hookd has hooks for (in hookd's files as they are after the move), with a
//!    matcher covering those hooks' matchers on tool events, and a timeout covering the
//!    slowest run of them under each hook's own default (Claude Code's hooks wait 600 s, Gemini
//!    CLI's 60 s).
//!
//! Every changed file is shown as a unified diff first; `--dry-run` stops there, and without a
//! terminal `--yes` is needed to go on. Files are written atomically (temporary file, fsync,
//! rename), and the host file's text outside its `hooks` member is kept as it was, comments
//! included. Installing again is how hooks added to the host file since are moved, and how the
//! relay entries catch up with hookd's hooks; once everything is in place it changes nothing.
//! `sync` redoes step 3 for every recorded install, without moving anything.
//!
//! The manifest (`$XDG_STATE_HOME/hookd/install/<host>-<scope>[-<project digest>]/`, else under
//! `~/.local/state`) keeps each changed file's bytes from before the first install and the
//! SHA-256 of what hookctl last wrote. `uninstall` gives back exactly what this host's
//! installs moved: when nothing was touched since, every file is restored byte for byte;
//! otherwise it edits: every relay entry leaves the host file, the recorded definitions go back
//! to it and leave hookd's file, and everything else (hooks added to either file since, the
//! other host's hooks in a shared hookd file) stays where it is. A moved Claude Code hook that
//! was edited in hookd's file since cannot be converted back: uninstall refuses and names the
//! command that finishes it (`--force` leaves the edited hook in hookd's file).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hookd_core::dialect;
use hookd_core::jsonc;
use hookd_core::settings::SettingsLayer;
use hookd_core::{HookEventName, Source};
use hookd_settings::loader::{LayerPaths, LoaderEnv};
use serde_json::{Map, Value, json};

/// The name Gemini CLI's relay entries carry (it shows and disables hooks by name).
pub use hookd_core::dialect::gemini::RELAY_NAME;

/// The relay's own binary, installed next to `hookctl`: `hookctl relay` without the rest of
/// `hookctl`, so it starts faster.
pub const RELAY_BINARY: &str = "hookd-relay";

/// The command that installs a statically linked `hookd-relay` from a checkout of hookd (the
/// dynamic loader is about a third of a dynamically linked relay's start-up). `--target` keeps
/// the flag off the build's proc-macro crates, which cannot be linked statically.
pub const STATIC_RELAY_BUILD: &str = "RUSTFLAGS='-C target-feature=+crt-static' cargo install \
     --locked --path crates/hookctl --bin hookd-relay --target \
     \"$(rustc -vV | sed -n 's/^host: //p')\"";

/// What a relay entry waits on top of its hooks' timeouts: the relay's retries while the
/// daemon restarts, connecting, spawning and answering.
const RELAY_MARGIN_MS: u64 = 10_000;

/// The agent CLI whose hooks are handed over: one of the registered host dialects.
pub use hookd_core::dialect::Dialect as Host;

/// A registered host's name, for clap: its possible values are the registry's names.
fn host_name() -> impl clap::builder::TypedValueParser<Value = Host> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Host::ALL.iter().map(|host| host.name()))
        .map(|name| Host::parse(&name).unwrap_or_default())
}

/// Which settings files: the user's or one project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InstallScope {
    /// The user's settings (every project).
    User,
    /// One project's settings (`--cwd`, else the current directory).
    Project,
}

impl InstallScope {
    fn as_str(self) -> &'static str {
        match self {
            InstallScope::User => "user",
            InstallScope::Project => "project",
        }
    }

    fn parse(text: &str) -> Option<InstallScope> {
        match text {
            "user" => Some(InstallScope::User),
            "project" => Some(InstallScope::Project),
            _ => None,
        }
    }
}

/// Arguments of `hookctl install`.
#[derive(Debug, Clone, clap::Args)]
pub struct InstallArgs {
    /// The agent CLI whose hooks hookd takes over.
    #[arg(long, value_parser = host_name())]
    pub host: Host,
    /// The user's settings or one project's.
    #[arg(long, value_enum, default_value_t = InstallScope::User)]
    pub scope: InstallScope,
    /// The project dir (with --scope project) [default: the current dir].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Show the changes and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Apply the changes without asking. Required when stdin is not a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Arguments of `hookctl uninstall`.
#[derive(Debug, Clone, clap::Args)]
pub struct UninstallArgs {
    /// The agent CLI given to install.
    #[arg(long, value_parser = host_name())]
    pub host: Host,
    /// The scope given to install.
    #[arg(long, value_enum, default_value_t = InstallScope::User)]
    pub scope: InstallScope,
    /// The project dir (with --scope project) [default: the current dir].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Show what would be restored and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Finish even where a moved Claude Code hook was edited in hookd's file since: the
    /// edited hook stays in hookd's file.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `hookctl sync`.
#[derive(Debug, Clone, clap::Args)]
pub struct SyncArgs {
    /// Show the changes and stop.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs `hookctl install` and prints its report.
pub fn run_install(args: &InstallArgs, socket: Option<&Path>) -> ExitCode {
    let result = install(
        args,
        socket,
        &Locations::from_process(),
        &mut Prompt::Terminal,
    );
    finish(result, (!args.dry_run).then_some(socket))
}

/// Runs `hookctl uninstall` and prints its report.
pub fn run_uninstall(args: &UninstallArgs, socket: Option<&Path>) -> ExitCode {
    let result = uninstall(args, &Locations::from_process());
    finish(result, (!args.dry_run).then_some(socket))
}

/// Runs `hookctl sync` and prints its report.
pub fn run_sync(args: &SyncArgs, socket: Option<&Path>) -> ExitCode {
    let result = sync(args, &Locations::from_process());
    finish(result, (!args.dry_run).then_some(socket))
}

/// Prints the report; when files may have changed (`reload` is `Some`, with the `--socket`
/// given, if any), asks a running daemon to read its hooks files now.
fn finish(result: anyhow::Result<String>, reload: Option<Option<&Path>>) -> ExitCode {
    match result {
        Ok(report) => {
            print!("{report}");
            if let Some(socket) = reload {
                let socket =
                    socket.map_or_else(hookd_protocol::default_socket_path, Path::to_owned);
                print!("{}", reload_daemon(&socket));
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("hookctl: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// How long `install`, `uninstall` and `sync` wait for a running daemon's reload.
const RELOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Asks the daemon at `socket`, if one runs, to read its settings files again at once, and
/// says what happened in one line.
///
/// A daemon notices changed files by itself, but a hooks file in a directory that did not
/// exist before (`~/.config/hookd/` on a first install) only within a couple of seconds: the
/// first events after an install would find the hooks neither in the host (moved out) nor in
/// hookd (not read yet). The reload closes that gap.
pub fn reload_daemon(socket: &Path) -> String {
    if hookd_protocol::verify_socket_path(socket).is_err() {
        return format!(
            "hookd is not running at {} (it reads the hooks files when it starts).\n",
            socket.display()
        );
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => return format!("warning: cannot ask hookd to reload: {err}\n"),
    };
    let reloaded = runtime.block_on(async {
        tokio::time::timeout(RELOAD_TIMEOUT, async {
            let options = hookd_client::ConnectOptions {
                client_name: format!("hookctl/{}", env!("CARGO_PKG_VERSION")),
                ..hookd_client::ConnectOptions::default()
            };
            let client = hookd_client::Client::connect(socket, options).await?;
            client.reload().await
        })
        .await
    });
    match reloaded {
        Ok(Ok(_)) => "hookd has read its hooks files again.\n".to_owned(),
        Ok(Err(err)) => format!(
            "warning: hookd at {} did not reload ({err}); it reads changed files within a few \
             seconds, or run `hookctl reload`.\n",
            socket.display()
        ),
        Err(_) => format!(
            "warning: hookd at {} did not answer the reload within {} s; run `hookctl reload`.\n",
            socket.display(),
            RELOAD_TIMEOUT.as_secs()
        ),
    }
}

/// Where the files are, from the environment.
#[derive(Debug, Clone)]
pub struct Locations {
    env: LoaderEnv,
    paths: LayerPaths,
    state_dir: PathBuf,
    current_dir: Option<PathBuf>,
    exe: String,
}

impl Locations {
    /// The locations of this process: its environment, home, current directory and
    /// executable.
    pub fn from_process() -> Locations {
        let env = LoaderEnv::from_process().unwrap_or_default();
        let exe = std::env::current_exe()
            .ok()
            .and_then(|exe| std::fs::canonicalize(&exe).ok().or(Some(exe)))
            .map_or_else(|| "hookctl".to_owned(), |exe| exe.display().to_string());
        Locations::new(env, std::env::current_dir().ok(), exe)
    }

    /// Locations for an explicit environment, current directory and `hookctl` executable.
    pub fn new(env: LoaderEnv, current_dir: Option<PathBuf>, exe: String) -> Locations {
        let state_home = env
            .var("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .unwrap_or_else(|| env.home_dir.join(".local/state"));
        Locations {
            paths: LayerPaths::resolve(&env),
            state_dir: state_home.join("hookd").join("install"),
            env,
            current_dir,
            exe,
        }
    }

    fn project_dir(&self, cwd: Option<&Path>) -> anyhow::Result<PathBuf> {
        let current = self
            .current_dir
            .clone()
            .context("cannot determine the current directory")?;
        let dir = match cwd {
            Some(dir) if dir.is_absolute() => dir.to_owned(),
            Some(dir) => current.join(dir),
            None => current,
        };
        Ok(std::fs::canonicalize(&dir).unwrap_or(dir))
    }

    /// The host's settings file, hookd's hooks file, and the project dir (project scope).
    fn files(&self, host: Host, scope: InstallScope, cwd: Option<&Path>) -> anyhow::Result<Target> {
        let project = match scope {
            InstallScope::User => None,
            InstallScope::Project => Some(self.project_dir(cwd)?),
        };
        Ok(self.target(host, project))
    }

    fn target(&self, host: Host, project: Option<PathBuf>) -> Target {
        let (host_file, hookd_file) = match &project {
            None => {
                let var = |name: &str| self.env.var(name).map(str::to_owned);
                let env = dialect::HomeEnv {
                    home: &self.env.home_dir,
                    var: &var,
                };
                (host.user_settings_file(&env), self.paths.hookd_user.clone())
            }
            Some(dir) => (
                host.project_settings_file(dir),
                LayerPaths::hookd_project(dir),
            ),
        };
        let scope = if project.is_some() {
            InstallScope::Project
        } else {
            InstallScope::User
        };
        let mut key = format!("{}-{}", host.as_str(), scope.as_str());
        if let Some(dir) = &project {
            let digest = hookd_core::trust::sha256_hex(dir.display().to_string().as_bytes());
            key.push('-');
            key.push_str(&digest[..16]);
        }
        Target {
            host,
            scope,
            project,
            host_file,
            hookd_file,
            backup_dir: self.state_dir.join(key),
        }
    }

    /// The environment the paths were resolved with.
    pub fn env(&self) -> &LoaderEnv {
        &self.env
    }

    /// The `hookd-relay` found first on `PATH`, if any.
    fn relay_found_on_path(&self) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.env.var("PATH")?;
        std::env::split_paths(path)
            .map(|dir| dir.join(RELAY_BINARY))
            .find(|relay| {
                std::fs::metadata(relay).is_ok_and(|metadata| {
                    metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
                })
            })
    }

    /// Whether `hookd-relay` is found on `PATH`.
    fn relay_on_path(&self) -> bool {
        self.relay_found_on_path().is_some()
    }

    /// The `hookd-relay` binary relay entries written now would run, when there is one:
    /// the one on `PATH`, else the one next to this executable.
    fn relay_binary(&self) -> Option<PathBuf> {
        self.relay_found_on_path().or_else(|| {
            Path::new(&self.exe)
                .parent()
                .map(|dir| dir.join(RELAY_BINARY))
                .filter(|relay| relay.is_file())
        })
    }

    /// What relay entries run, before the event: `hookd-relay` from `PATH` when one is there
    /// (the same command in user and project files, so a host that reads both runs it once)
    /// and always in project files (they are shared with people whose binaries live
    /// elsewhere); else the `hookd-relay` next to this executable by its absolute path, else
    /// this executable's `relay`.
    fn relay_program(&self, scope: InstallScope) -> String {
        if scope == InstallScope::Project || self.relay_on_path() {
            return RELAY_BINARY.to_owned();
        }
        let exe = Path::new(&self.exe);
        match exe.parent().map(|dir| dir.join(RELAY_BINARY)) {
            Some(relay) if relay.is_file() => {
                hookd_core::command::shell_quote(&relay.display().to_string())
            }
            _ => format!("{} relay", hookd_core::command::shell_quote(&self.exe)),
        }
    }

    /// Every recorded install: the targets of the manifests in the state directory.
    fn installed(&self) -> anyhow::Result<Vec<(Target, Manifest)>> {
        let mut found = Vec::new();
        let entries = match std::fs::read_dir(&self.state_dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(found),
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("cannot read {}", self.state_dir.display()));
            }
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .collect();
        dirs.sort();
        for dir in dirs {
            if !dir.join(MANIFEST).exists() {
                continue;
            }
            let manifest = Manifest::load(&dir)?;
            let (Some(host), Some(_)) = (
                Host::parse(&manifest.host),
                InstallScope::parse(&manifest.scope),
            ) else {
                continue;
            };
            let target = self.target(host, manifest.project.as_ref().map(PathBuf::from));
            found.push((target, manifest));
        }
        Ok(found)
    }
}

/// The files one install touches.
#[derive(Debug, Clone)]
struct Target {
    host: Host,
    scope: InstallScope,
    project: Option<PathBuf>,
    host_file: PathBuf,
    hookd_file: PathBuf,
    backup_dir: PathBuf,
}

impl Target {
    fn describe(&self) -> String {
        match &self.project {
            Some(dir) => format!("{} hooks of project {}", self.host.product(), dir.display()),
            None => format!("{} user hooks", self.host.product()),
        }
    }

    /// The command that runs `verb` (install, uninstall) for this target again.
    fn command(&self, verb: &str) -> String {
        let mut command = format!("hookctl {verb} --host {}", self.host.as_str());
        if let Some(dir) = &self.project {
            let _ = write!(
                command,
                " --scope project --cwd {}",
                hookd_core::command::shell_quote(&dir.display().to_string())
            );
        }
        command
    }
}

/// How to ask before writing.
pub enum Prompt<'a> {
    /// Ask on the terminal; without one, `--yes` is required.
    Terminal,
    /// Answer with this function (tests).
    Answer(&'a mut dyn FnMut(&str) -> bool),
}

/// One file's change.
struct Change {
    path: PathBuf,
    before: Option<Vec<u8>>,
    after: Vec<u8>,
    /// The file goes (uninstall: it did not exist before the install).
    remove: bool,
}

/// Adds the change of `path` from `before` to `after` unless they are the same (an absent
/// file that would stay empty is no change).
fn push_change(changes: &mut Vec<Change>, path: &Path, before: Option<Vec<u8>>, after: String) {
    let unchanged = match &before {
        Some(bytes) => *bytes == after.as_bytes(),
        None => after.is_empty(),
    };
    if !unchanged {
        changes.push(Change {
            path: path.to_owned(),
            before,
            after: after.into_bytes(),
            remove: false,
        });
    }
}

/// `hookctl install`: returns the report to print.
pub fn install(
    args: &InstallArgs,
    socket: Option<&Path>,
    locations: &Locations,
    prompt: &mut Prompt<'_>,
) -> anyhow::Result<String> {
    let target = locations.files(args.host, args.scope, args.cwd.as_deref())?;
    let mut manifest = Manifest::load(&target.backup_dir)?;
    let host_before = read_file(&target.host_file)?;
    let hookd_before = read_file(&target.hookd_file)?;
    let host_text = text_of(&target.host_file, host_before.as_deref())?;
    let hookd_text = text_of(&target.hookd_file, hookd_before.as_deref())?;
    let host_root = parse_object(&target.host_file, &host_text)?;
    let hookd_root = parse_object(&target.hookd_file, &hookd_text)?;

    refuse_problems(&target, &host_text)?;
    let mut report = String::new();
    let split = split_hooks(args.host, &host_root);
    for problem in &split.problems {
        let _ = writeln!(report, "warning: {}: {problem}", target.host_file.display());
    }
    let mut merged_hooks = hookd_root
        .get("hooks")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut moved_records = Vec::new();
    for mut record in split.moved {
        let added = append_hooks(&mut merged_hooks, &record.hookd);
        // Definitions hookd's file already had stay there when this one goes back.
        record.added = added;
        moved_records.push(record);
    }
    let moved_count = moved_records.len();
    let new_hookd_text = if moved_records.iter().all(|record| record.added.is_empty()) {
        hookd_text.clone()
    } else {
        set_member(&hookd_text, "hooks", &Value::Object(merged_hooks))
            .with_context(|| format!("cannot edit {}", target.hookd_file.display()))?
    };

    let socket = socket
        .map(|socket| socket.display().to_string())
        .or_else(|| manifest.socket.clone());
    let all_moved: Vec<MovedDefinition> = manifest
        .moved
        .iter()
        .chain(&moved_records)
        .cloned()
        .collect();
    let (new_host_text, wiring) = rewire(
        &target,
        locations,
        &host_text,
        &host_root,
        Kept {
            definitions: split.kept,
            moved: &all_moved,
        },
        &new_hookd_text,
        socket.as_deref(),
        &mut report,
    )?;

    let mut changes = Vec::new();
    push_change(
        &mut changes,
        &target.hookd_file,
        hookd_before,
        new_hookd_text,
    );
    let companions = companion_changes(&target, &new_host_text)?;
    push_change(&mut changes, &target.host_file, host_before, new_host_text);
    changes.extend(companions);
    let trust = trust_moved(&target, locations, &changes, &moved_records, &mut report)?;
    if let Some((path, before, after)) = trust {
        push_change(&mut changes, &path, before, after);
    }
    if changes.is_empty() {
        if manifest.is_recorded() {
            let _ = writeln!(
                report,
                "hookd already runs the {}: nothing to change.",
                target.describe()
            );
        } else {
            let _ = writeln!(
                report,
                "Nothing to install: {} has no hooks to move and hookd has none for {} to \
                 relay. Add hooks to {}, then run `{}` again.",
                target.host_file.display(),
                target.host.product(),
                target.hookd_file.display(),
                target.command("install")
            );
        }
        return Ok(report);
    }

    for change in &changes {
        report.push_str(&unified_diff(
            &change.path,
            change.before.as_deref(),
            &change.after,
        ));
    }
    let _ = writeln!(
        report,
        "{moved_count} hook definition(s) move to {}; {} relays {} to hookd.",
        target.hookd_file.display(),
        target.host_file.display(),
        describe_wiring(&wiring),
    );
    if args.dry_run {
        report.push_str("Dry run: nothing was written.\n");
        return Ok(report);
    }
    if !args.yes {
        let go = match prompt {
            Prompt::Answer(answer) => answer(&report),
            Prompt::Terminal => {
                if !std::io::stdin().is_terminal() {
                    print!("{report}");
                    bail!("not a terminal to ask on: add --yes to apply these changes");
                }
                crate::ask_yes_no(&report, "Apply these changes?")?
            }
        };
        if !go {
            bail!("nothing was changed");
        }
        report.clear();
    }

    if !manifest.is_recorded() {
        manifest.created_dirs = missing_dirs(&target.backup_dir.join(MANIFEST));
    }
    std::fs::create_dir_all(&target.backup_dir)
        .with_context(|| format!("cannot create {}", target.backup_dir.display()))?;
    manifest.host = target.host.as_str().to_owned();
    manifest.scope = target.scope.as_str().to_owned();
    manifest.project = target.project.as_ref().map(|dir| dir.display().to_string());
    manifest.socket = socket;
    if manifest.is_recorded() && moved_count > 0 {
        manifest.later_moves = true;
    }
    manifest.record_changes(&target.backup_dir, &changes)?;
    manifest.moved.extend(moved_records);
    manifest.save(&target.backup_dir)?;

    for change in &changes {
        let mode = file_mode(&change.path);
        write_atomic(&change.path, &change.after, mode)?;
    }
    let _ = writeln!(
        report,
        "Installed: hookd now runs the {} (`{}` gives them back). {}",
        target.describe(),
        target.command("uninstall"),
        target.host.pickup_note()
    );
    Ok(report)
}

/// What stays in the host file beside the relay entries.
struct Kept<'a> {
    /// Definitions hookd cannot run (host event → definitions).
    definitions: Map<String, Value>,
    /// Every definition the installs of this target moved: in a project's shared file each
    /// keeps a guarded copy ([`fallback_copies`]).
    moved: &'a [MovedDefinition],
}

/// The host file's text with fresh relay entries (for the hooks hookd's files have once
/// `hookd_text` is this target's hookd file), then, for a project, the guarded copies of the
/// moved hooks, then the `kept` definitions, and the wiring it holds.
#[allow(clippy::too_many_arguments)]
fn rewire(
    target: &Target,
    locations: &Locations,
    host_text: &str,
    host_root: &Map<String, Value>,
    kept: Kept<'_>,
    hookd_text: &str,
    socket: Option<&str>,
    report: &mut String,
) -> anyhow::Result<(String, Vec<WireEntry>)> {
    let layers = relayed_layers(target, locations, hookd_text);
    let wiring = wiring(target.host, &layers);
    let program = locations.relay_program(target.scope);
    if target.scope == InstallScope::Project && !locations.relay_on_path() {
        let _ = writeln!(
            report,
            "warning: hookd-relay is not on PATH; the relay entries in {} run `hookd-relay` \
             from PATH (they are shared with the project), and until it is there the CLI runs \
             its own copies of the moved hooks instead of hookd: add {} to PATH.",
            target.host_file.display(),
            Path::new(&locations.exe).parent().map_or_else(
                || "its directory".to_owned(),
                |dir| dir.display().to_string()
            )
        );
    }
    if !wiring.is_empty()
        && let Some(relay) = locations.relay_binary()
        && crate::elf::is_dynamically_linked(&relay) == Some(true)
    {
        let _ = writeln!(
            report,
            "note: {} is dynamically linked; a static build starts about 0.3 ms faster on \
             every relayed event: {STATIC_RELAY_BUILD}",
            relay.display()
        );
    }
    // The relay from PATH is written in the form that says nothing where it is not there,
    // in a user file too: a CLI that reads a user and a project file runs identical commands
    // once, so the two entries must be the same text.
    let from_path = program == RELAY_BINARY;
    let mut relay_hooks = relay_entries(target.host, &program, socket, &wiring, from_path);
    if target.scope == InstallScope::Project {
        keep_in_host(&mut relay_hooks, fallback_copies(kept.moved, hookd_text));
    }
    let kept_count = keep_in_host(&mut relay_hooks, kept.definitions);
    if kept_count > 0 {
        let _ = writeln!(
            report,
            "note: {kept_count} hook definition(s) hookd cannot run stay in {}, run by {} itself.",
            target.host_file.display(),
            target.host.product()
        );
    }
    let text = if host_root.get("hooks") == Some(&relay_hooks)
        || (host_root.get("hooks").is_none() && relay_hooks == json!({}))
    {
        host_text.to_owned()
    } else {
        set_member(host_text, "hooks", &relay_hooks)
            .with_context(|| format!("cannot edit {}", target.host_file.display()))?
    };
    Ok((text, wiring))
}

/// "N event(s) (BeforeTool on run_shell_command, timeout 70 s; ...)".
fn describe_wiring(wiring: &[WireEntry]) -> String {
    if wiring.is_empty() {
        return "no event (hookd has no hooks for it yet)".to_owned();
    }
    let parts: Vec<String> = wiring
        .iter()
        .map(|entry| {
            let mut text = entry.event.clone();
            if let Some(matcher) = &entry.matcher {
                let _ = write!(text, " on {matcher}");
            }
            let _ = write!(text, ", timeout {} s", entry.timeout_ms.div_ceil(1000));
            text
        })
        .collect();
    format!("{} event(s) ({})", wiring.len(), parts.join("; "))
}

/// A file's path, its bytes before (`None`: absent) and its new text.
type FileEdit = (PathBuf, Option<Vec<u8>>, String);

/// Under `--project-hooks require`, moved project hooks would stop running until trusted:
/// moving them is the user's own action, so install trusts exactly what it moved (their name,
/// command and the scripts they run as they are now). Returns the trust store's change.
fn trust_moved(
    target: &Target,
    locations: &Locations,
    changes: &[Change],
    moved: &[MovedDefinition],
    report: &mut String,
) -> anyhow::Result<Option<FileEdit>> {
    let Some(project) = &target.project else {
        return Ok(None);
    };
    let hookd_text = match changes
        .iter()
        .find(|change| change.path == target.hookd_file)
    {
        Some(change) => String::from_utf8_lossy(&change.after).into_owned(),
        None => return Ok(None),
    };
    let moved_keys: BTreeSet<String> = moved
        .iter()
        .flat_map(|record| &record.added)
        .filter_map(|(_, definition)| definition.get("hooks")?.as_array())
        .flatten()
        .map(hook_identity)
        .collect();
    if moved_keys.is_empty() {
        return Ok(None);
    }
    let layer = parse_layer(Source::Project, &target.hookd_file, &hookd_text, locations);
    let mut keys = Vec::new();
    for config in layer
        .iter()
        .flat_map(|layer| &layer.hooks)
        .flat_map(|event| &event.definitions)
        .flat_map(|definition| &definition.hooks)
        .filter(|config| config.runs_command())
    {
        if !moved_keys.contains(&config_identity(config)) {
            continue;
        }
        // The key the daemon computes for this hook: its command, its settings and every
        // file its fingerprint covers, read as the loader reads them.
        let command = config.command.clone().unwrap_or_default();
        let project_text = project.display().to_string();
        let vars = hookd_core::command::CommandVars {
            project_dir: &project_text,
            plans_dir: "",
            session_id: "",
        };
        let collected = hookd_settings::verify::collect(&command, &config.env, &vars);
        let input = hookd_core::trust::HookTrustInput {
            trusted: Vec::new(),
            scripts: collected.files,
            hooks: vec![hookd_core::trust::CoveredFiles {
                command,
                env: config.env.clone(),
                scripts: collected.digests,
                uncovered: collected.uncovered,
            }],
        };
        let key = input.key_for(config, project);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let path = locations.paths.trusted_hooks.clone();
    let before = read_file(&path)?;
    let text = text_of(&path, before.as_deref())?;
    let mut store = match hookd_core::trust::TrustStore::parse(&text) {
        Ok(store) => store,
        Err(err) => {
            let _ = writeln!(
                report,
                "warning: {} is damaged ({err}); the moved project hooks are not trusted. \
                 Fix it, then run `hookctl trust --cwd {}`.",
                path.display(),
                hookd_core::command::shell_quote(&project.display().to_string())
            );
            return Ok(None);
        }
    };
    if store.trust(&project.display().to_string(), &keys) == 0 {
        return Ok(None);
    }
    let _ = writeln!(
        report,
        "note: the {} moved project hook(s) are trusted for `--project-hooks require` (you \
         moved them yourself); `hookctl untrust --cwd {}` takes that back.",
        keys.len(),
        hookd_core::command::shell_quote(&project.display().to_string())
    );
    Ok(Some((path, before, store.to_text())))
}

/// A hook object's identity for matching it across files: its name and command.
fn hook_identity(hook: &Value) -> String {
    let text = |key: &str| hook.get(key).and_then(Value::as_str).unwrap_or("");
    format!("{}:{}", text("name"), text("command"))
}

/// What a hook can be recognised by after an edit: its name, else its command.
fn hook_handles(hook: &Value) -> Vec<String> {
    let text = |key: &str| hook.get(key).and_then(Value::as_str).unwrap_or("");
    let mut handles = Vec::new();
    if !text("name").is_empty() {
        handles.push(format!("name:{}", text("name")));
    }
    if !text("command").is_empty() {
        handles.push(format!("command:{}", text("command")));
    }
    handles
}

/// [`hook_identity`] of a parsed hook.
fn config_identity(config: &hookd_core::HookConfig) -> String {
    format!(
        "{}:{}",
        config.name.as_deref().unwrap_or(""),
        config.command.as_deref().unwrap_or("")
    )
}

/// Parses a settings text as the daemon does; `None` when it does not parse.
fn parse_layer(
    source: Source,
    path: &Path,
    text: &str,
    locations: &Locations,
) -> Option<SettingsLayer> {
    if jsonc::strip_comments(text).trim().is_empty() {
        return None;
    }
    let env = |name: &str| locations.env.var(name).map(str::to_owned);
    hookd_core::settings::parse_settings(source, path, text, &env).layer
}

/// The settings layers whose hooks the daemon runs for events this target's host relays:
/// hookd's own files (user, and the project's for a project install; `hookd_text` stands in
/// for the target's own hookd file), and for Claude Code also Gemini CLI's files, which the
/// daemon reads and Claude Code does not.
fn relayed_layers(target: &Target, locations: &Locations, hookd_text: &str) -> Vec<SettingsLayer> {
    let mut files: Vec<(Source, PathBuf)> =
        vec![(Source::User, locations.paths.hookd_user.clone())];
    if let Some(project) = &target.project {
        files.push((Source::Project, LayerPaths::hookd_project(project)));
    }
    // Gemini CLI's files, which the daemon reads, when the host does not run them itself.
    if !target
        .host
        .runs_layer(Source::User, hookd_core::LayerFile::Gemini)
    {
        files.push((
            Source::SystemDefaults,
            locations.paths.system_defaults.clone(),
        ));
        files.push((Source::System, locations.paths.system.clone()));
        files.push((Source::User, locations.paths.user.clone()));
        if let Some(project) = &target.project {
            files.push((Source::Project, LayerPaths::project_settings(project)));
        }
    }
    files
        .into_iter()
        .filter_map(|(source, path)| {
            let text = if path == target.hookd_file {
                hookd_text.to_owned()
            } else {
                match crate::read_settings_file(&path) {
                    Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                    Ok(None) | Err(_) => return None,
                }
            };
            parse_layer(source, &path, &text, locations)
        })
        .collect()
}

/// One relay entry: the host's event, its matcher (tool events) and timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireEntry {
    /// The event as the host names it.
    pub event: String,
    /// The matcher, in the host's terms; `None`: every firing.
    pub matcher: Option<String>,
    /// How long the host lets the relay run, in milliseconds.
    pub timeout_ms: u64,
}

/// The relay entries a host needs for the hooks of `layers`: one per host event whose Gemini
/// event has a hook (relay entries in those files are not hooks), in the host's event order.
/// On tool events the matcher covers every hook's matcher (Gemini CLI: their alternation;
/// Claude Code: the Claude names of the tools they name), or matches everything when one hook
/// does or a matcher cannot be expressed. The timeout is the sum of the event's hook
/// timeouts (they may run one after another), each hook without `timeout` counting its own
/// host's default (Claude-dialect hooks 600 s, others 60 s), plus a margin.
pub fn wiring(host: Host, layers: &[SettingsLayer]) -> Vec<WireEntry> {
    let mut per_event: Vec<(HookEventName, Vec<Option<String>>, u64)> = Vec::new();
    for event_hooks in layers.iter().flat_map(|layer| &layer.hooks) {
        for definition in &event_hooks.definitions {
            for config in &definition.hooks {
                if config
                    .command
                    .as_deref()
                    .is_some_and(dialect::is_hookd_wiring)
                {
                    continue;
                }
                let timeout = config
                    .timeout_ms
                    .unwrap_or_else(|| config.dialect().default_timeout_ms());
                let slot = match per_event
                    .iter()
                    .position(|(event, _, _)| *event == event_hooks.event)
                {
                    Some(index) => &mut per_event[index],
                    None => {
                        per_event.push((event_hooks.event, Vec::new(), 0));
                        let last = per_event.len() - 1;
                        &mut per_event[last]
                    }
                };
                let matcher = definition
                    .matcher
                    .as_deref()
                    .map(str::trim)
                    .filter(|matcher| !matcher.is_empty() && *matcher != "*")
                    .map(str::to_owned);
                if !slot.1.contains(&matcher) {
                    slot.1.push(matcher);
                }
                slot.2 = slot.2.saturating_add(timeout);
            }
        }
    }
    let mut entries = Vec::new();
    for event in host.events() {
        let Some((gemini, matchers, total)) = host
            .event_to_hookd(event)
            .and_then(|gemini| per_event.iter().find(|(event, _, _)| *event == gemini))
        else {
            continue;
        };
        let matcher = host.relay_matcher(*gemini, matchers);
        entries.push(WireEntry {
            event: event.to_owned(),
            matcher,
            timeout_ms: total.saturating_add(RELAY_MARGIN_MS),
        });
    }
    entries
}

/// `hookctl sync`: rewrites the relay entries of every recorded install to match hookd's
/// hooks as they are now (nothing is moved); returns the report.
pub fn sync(args: &SyncArgs, locations: &Locations) -> anyhow::Result<String> {
    let installed = locations.installed()?;
    let mut report = String::new();
    if installed.is_empty() {
        report.push_str("Nothing is installed: nothing to sync.\n");
        return Ok(report);
    }
    for (target, mut manifest) in installed {
        let host_before = read_file(&target.host_file)?;
        let host_text = text_of(&target.host_file, host_before.as_deref())?;
        let host_root = parse_object(&target.host_file, &host_text)?;
        // An unreadable hookd file stops the sync rather than unwire its hooks.
        let hookd_text = read_file(&target.hookd_file)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        refuse_problems(&target, &host_text)?;
        let kept = split_hooks(target.host, &host_root).kept_and_unmoved();
        let (new_text, wiring) = rewire(
            &target,
            locations,
            &host_text,
            &host_root,
            Kept {
                definitions: kept,
                moved: &manifest.moved,
            },
            &hookd_text,
            manifest.socket.as_deref(),
            &mut report,
        )?;
        let companions = companion_changes(&target, &new_text)?;
        let mut changes = Vec::new();
        push_change(&mut changes, &target.host_file, host_before, new_text);
        changes.extend(companions);
        if changes.is_empty() {
            let _ = writeln!(report, "{}: in step.", target.describe());
            continue;
        }
        for change in &changes {
            report.push_str(&unified_diff(
                &change.path,
                change.before.as_deref(),
                &change.after,
            ));
        }
        let _ = writeln!(
            report,
            "{}: {} now relays {}.",
            target.describe(),
            target.host_file.display(),
            describe_wiring(&wiring)
        );
        if args.dry_run {
            continue;
        }
        manifest.record_changes(&target.backup_dir, &changes)?;
        manifest.save(&target.backup_dir)?;
        for change in &changes {
            write_atomic(&change.path, &change.after, file_mode(&change.path))?;
        }
        let _ = writeln!(report, "{}", target.host.pickup_note());
    }
    if args.dry_run {
        report.push_str("Dry run: nothing was written.\n");
    }
    Ok(report)
}

/// How a host's wiring compares with hookd's hooks, for `hookctl list`: one line per recorded
/// install that applies to `project` (user installs, and project installs of `project`) whose
/// relay entries are not what hookd's hooks need, with the command that fixes it.
pub fn stale_wiring(locations: &Locations, project: &Path) -> Vec<String> {
    let Ok(installed) = locations.installed() else {
        return Vec::new();
    };
    let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_owned());
    let mut lines = Vec::new();
    for (target, _) in installed {
        if target.project.as_ref().is_some_and(|dir| *dir != project) {
            continue;
        }
        for problem in host_wiring_problems(&target) {
            lines.push(format!(
                "{}: {problem}: run `hookctl sync`, then restart the CLI's sessions",
                target.describe()
            ));
        }
        let host_text = crate::read_settings_text_or_empty(&target.host_file);
        let Ok(host_root) = parse_object(&target.host_file, &host_text) else {
            continue;
        };
        let hookd_text = crate::read_settings_text_or_empty(&target.hookd_file);
        let needed: Vec<WireEntry> = wiring(
            target.host,
            &relayed_layers(&target, locations, &hookd_text),
        );
        let present = relayed_events(&host_root);
        let missing: Vec<&str> = needed
            .iter()
            .map(|entry| entry.event.as_str())
            .filter(|event| !present.iter().any(|(present, _)| present == event))
            .collect();
        let idle: Vec<&str> = present
            .iter()
            .map(|(event, _)| event.as_str())
            .filter(|event| !needed.iter().any(|entry| entry.event == *event))
            .collect();
        let differs = needed.iter().any(|entry| {
            present.iter().any(|(event, matcher)| {
                *event == entry.event && *matcher != entry.matcher.clone().filter(|m| m != "*")
            })
        });
        if missing.is_empty() && idle.is_empty() && !differs {
            // A user install does not relay a project's own hooks: say so when this project's
            // hookd file has hooks on events the user entries do not relay.
            if target.project.is_none() {
                let project_target = locations.target(target.host, Some(project.clone()));
                let project_text = crate::read_settings_text_or_empty(&project_target.hookd_file);
                let project_needs = wiring(
                    target.host,
                    &relayed_layers(&project_target, locations, &project_text),
                );
                let unrelayed: Vec<&str> = project_needs
                    .iter()
                    .map(|entry| entry.event.as_str())
                    .filter(|event| !present.iter().any(|(present, _)| present == event))
                    .collect();
                if !unrelayed.is_empty() {
                    lines.push(format!(
                        "{}: this project's hooks on {} are not relayed; run `{}`",
                        target.describe(),
                        unrelayed.join(", "),
                        project_target.command("install")
                    ));
                }
            }
            continue;
        }
        let mut problems = Vec::new();
        if !missing.is_empty() {
            problems.push(format!(
                "hooks but no relay entry on {}",
                missing.join(", ")
            ));
        }
        if !idle.is_empty() {
            problems.push(format!("relay entries with no hook on {}", idle.join(", ")));
        }
        if differs {
            problems.push("relay matchers that do not match the hooks'".to_owned());
        }
        lines.push(format!(
            "{} are stale ({}): run `hookctl sync`, then restart the CLI's sessions",
            target.describe(),
            problems.join("; ")
        ));
    }
    lines
}

/// The host events that have a relay entry in a settings object, with the entry's matcher
/// (`None` for none or `*`).
fn relayed_events(root: &Map<String, Value>) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let Some(hooks) = root.get("hooks").and_then(Value::as_object) else {
        return found;
    };
    for (event, definitions) in hooks {
        for definition in definitions.as_array().into_iter().flatten() {
            let relays = definition
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|hook| {
                    hook.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(dialect::is_relay_command)
                });
            if relays {
                let matcher = definition
                    .get("matcher")
                    .and_then(Value::as_str)
                    .filter(|matcher| !matcher.is_empty() && *matcher != "*")
                    .map(str::to_owned);
                found.push((event.clone(), matcher));
            }
        }
    }
    found
}

/// `hookctl uninstall`: returns the report to print.
pub fn uninstall(args: &UninstallArgs, locations: &Locations) -> anyhow::Result<String> {
    let target = locations.files(args.host, args.scope, args.cwd.as_deref())?;
    let manifest = Manifest::load(&target.backup_dir)?;
    let host_before = read_file(&target.host_file)?;
    let hookd_before = read_file(&target.hookd_file)?;
    let host_text = text_of(&target.host_file, host_before.as_deref())?;
    let hookd_text = text_of(&target.hookd_file, hookd_before.as_deref())?;
    let host_root = parse_object(&target.host_file, &host_text)?;
    let hookd_root = parse_object(&target.hookd_file, &hookd_text)?;
    if !manifest.is_recorded() && relayed_events(&host_root).is_empty() {
        return Ok(format!(
            "hookd is not installed for the {}: nothing to undo.\n",
            target.describe()
        ));
    }
    let mut report = String::new();

    // Nothing touched since hookctl last wrote: the originals, byte for byte.
    let untouched = manifest.is_recorded()
        && !manifest.later_moves
        && manifest.files.iter().all(|file| {
            read_file(&file.path)
                .ok()
                .flatten()
                .as_deref()
                .map(hookd_core::trust::sha256_hex)
                == Some(file.written_sha256.clone())
        });
    let mut changes: Vec<Change> = Vec::new();
    if untouched {
        for file in &manifest.files {
            let before = read_file(&file.path)?;
            let original = match &file.original {
                Some(name) => Some(std::fs::read(target.backup_dir.join(name)).with_context(
                    || {
                        format!(
                            "cannot read the saved original {}",
                            target.backup_dir.join(name).display()
                        )
                    },
                )?),
                None => None,
            };
            changes.push(Change {
                path: file.path.clone(),
                before,
                remove: original.is_none(),
                after: original.unwrap_or_default(),
            });
        }
    } else {
        let plan = give_back(&target, &manifest, &host_root, &hookd_root);
        if !plan.edited_claude.is_empty() && !args.force {
            bail!(
                "{} moved Claude Code hook(s) were edited in {} since the install ({}); hookctl \
                 cannot turn an edited hook back into Claude Code's form. Either undo the edit, \
                 or move it back by hand and delete it there, or keep it in hookd's file: `{} \
                 --force`",
                plan.edited_claude.len(),
                target.hookd_file.display(),
                plan.edited_claude.join(", "),
                target.command("uninstall")
            );
        }
        for name in &plan.edited_claude {
            let _ = writeln!(
                report,
                "note: {name} was edited in {} since the install and stays there.",
                target.hookd_file.display()
            );
        }
        for name in &plan.gone {
            let _ = writeln!(
                report,
                "note: {name} is no longer in {}, so it is not put back.",
                target.hookd_file.display()
            );
        }
        let new_host = if plan.host_hooks.is_empty() && !host_root.contains_key("hooks") {
            host_text.clone()
        } else {
            set_member(&host_text, "hooks", &Value::Object(plan.host_hooks.clone()))
                .with_context(|| format!("cannot edit {}", target.host_file.display()))?
        };
        let new_hookd = set_member(
            &hookd_text,
            "hooks",
            &Value::Object(plan.hookd_hooks.clone()),
        )
        .with_context(|| format!("cannot edit {}", target.hookd_file.display()))?;
        let companions = companion_changes(&target, &new_host)?;
        for (path, before, after) in [
            (&target.host_file, host_before, new_host),
            (&target.hookd_file, hookd_before, new_hookd),
        ] {
            // A file the install created that holds nothing else any more goes again.
            let created = manifest
                .files
                .iter()
                .any(|file| file.path == *path && file.original.is_none());
            let remove = created && holds_nothing(&after);
            let unchanged = match &before {
                Some(bytes) => *bytes == after.as_bytes() && !remove,
                None => remove || after.is_empty(),
            };
            if !unchanged {
                changes.push(Change {
                    path: path.clone(),
                    before,
                    after: after.into_bytes(),
                    remove,
                });
            }
        }
        changes.extend(companions);
    }
    for change in &changes {
        if change.remove {
            let _ = writeln!(report, "remove {}", change.path.display());
        } else {
            report.push_str(&unified_diff(
                &change.path,
                change.before.as_deref(),
                &change.after,
            ));
        }
    }
    if args.dry_run {
        report.push_str("Dry run: nothing was restored.\n");
        return Ok(report);
    }
    for change in &changes {
        let recorded = manifest.files.iter().find(|file| file.path == change.path);
        if change.remove {
            match std::fs::remove_file(&change.path) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(err)
                        .with_context(|| format!("cannot remove {}", change.path.display()));
                }
            }
            // Directories the install created go again when nothing else lives in them.
            for dir in recorded.into_iter().flat_map(|file| &file.created_dirs) {
                let _ = std::fs::remove_dir(dir);
            }
        } else {
            let mode = recorded
                .and_then(|file| file.mode)
                .or_else(|| file_mode(&change.path));
            write_atomic(&change.path, &change.after, mode)?;
        }
    }
    for file in &manifest.files {
        if let Some(name) = &file.original {
            let _ = std::fs::remove_file(target.backup_dir.join(name));
        }
    }
    let _ = std::fs::remove_file(target.backup_dir.join(MANIFEST));
    let _ = std::fs::remove_dir(&target.backup_dir);
    for dir in &manifest.created_dirs {
        let _ = std::fs::remove_dir(dir);
    }
    let _ = writeln!(
        report,
        "Uninstalled: {} has no relay entry left and runs its own hooks again{}. {}",
        target.host_file.display(),
        if untouched {
            " (every file is back as it was before `hookctl install`)"
        } else {
            ""
        },
        target.host.pickup_note()
    );
    Ok(report)
}

/// Refuses to edit a host settings file the host would not load (it would drop the relay
/// entries with the rest).
fn refuse_problems(target: &Target, host_text: &str) -> anyhow::Result<()> {
    let problems = target.host.settings_problems(host_text);
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "{} would not load {} as it is, so relay entries written there would not run: {}. Fix \
         the file first; nothing was changed.",
        target.host.product(),
        target.host_file.display(),
        problems.join("; ")
    )
}

/// The changes of the host's companion files (a trust record, say) for the settings file's
/// new text.
fn companion_changes(target: &Target, host_text: &str) -> anyhow::Result<Vec<Change>> {
    let mut changes = Vec::new();
    for path in target.host.companion_files(&target.host_file) {
        let before = read_file(&path)?;
        let current = before
            .as_deref()
            .map(|bytes| text_of(&path, Some(bytes)))
            .transpose()?;
        let after = target
            .host
            .companion_text(&target.host_file, host_text, &path, current.as_deref())
            .map_err(|message| anyhow::anyhow!("cannot edit {}: {message}", path.display()))?;
        if let Some(after) = after {
            push_change(&mut changes, &path, before, after);
        }
    }
    Ok(changes)
}

/// Why the host would not run the relay entries of an installed target as they are.
fn host_wiring_problems(target: &Target) -> Vec<String> {
    let text = crate::read_settings_text_or_empty(&target.host_file);
    let companions: Vec<(PathBuf, Option<String>)> = target
        .host
        .companion_files(&target.host_file)
        .into_iter()
        .map(|path| {
            let text = read_file(&path)
                .ok()
                .flatten()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
            (path, text)
        })
        .collect();
    target
        .host
        .wiring_problems(&target.host_file, &text, &companions)
}

/// Whether a settings text is empty, or an object with nothing but an empty `hooks`.
fn holds_nothing(text: &str) -> bool {
    match jsonc::parse(text) {
        Ok(Value::Object(root)) => root
            .iter()
            .all(|(key, value)| key == "hooks" && value.as_object().is_some_and(Map::is_empty)),
        _ => jsonc::strip_comments(text).trim().is_empty(),
    }
}

/// What uninstall gives back, worked out from the manifest and the files as they are now.
#[derive(Debug, Default)]
struct GiveBack {
    /// The host file's new `hooks`: what is there minus every relay entry, plus the moved
    /// definitions.
    host_hooks: Map<String, Value>,
    /// hookd's file's new `hooks`: what is there minus what this host's installs added.
    hookd_hooks: Map<String, Value>,
    /// Moved Claude Code hooks edited in hookd's file since (they stay there).
    edited_claude: Vec<String>,
    /// Moved hooks no longer in hookd's file (removed by the user: not put back).
    gone: Vec<String>,
}

fn give_back(
    target: &Target,
    manifest: &Manifest,
    host_root: &Map<String, Value>,
    hookd_root: &Map<String, Value>,
) -> GiveBack {
    let mut plan = GiveBack {
        host_hooks: without_relay_entries(host_root.get("hooks")),
        hookd_hooks: hookd_root
            .get("hooks")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        ..GiveBack::default()
    };
    for record in &manifest.moved {
        // The definitions this install added to hookd's file, as they are there now.
        let mut present = 0usize;
        let mut edited: Vec<(String, Value)> = Vec::new();
        for (event, definition) in &record.added {
            if take_definition(&mut plan.hookd_hooks, event, |found| found == definition) {
                present += 1;
                continue;
            }
            // Edited: a definition of the same event with one of its hooks (the same name,
            // or the same command).
            let identities: BTreeSet<String> = definition
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(hook_handles)
                .collect();
            let same_hook = |found: &Value| {
                found
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .flat_map(hook_handles)
                    .any(|handle| identities.contains(&handle))
            };
            // Failing that (an unnamed hook whose command was edited), one with the same
            // matcher and as many hooks.
            let hook_count =
                |value: &Value| value.get("hooks").and_then(Value::as_array).map(Vec::len);
            let same_shape = |found: &Value| {
                definition.get("matcher").is_some()
                    && found.get("matcher") == definition.get("matcher")
                    && hook_count(found) == hook_count(definition)
            };
            let mut taken = None;
            let position = match plan.hookd_hooks.get(event) {
                Some(Value::Array(list)) => list
                    .iter()
                    .position(same_hook)
                    .or_else(|| list.iter().position(same_shape)),
                _ => None,
            };
            if let (Some(index), Some(Value::Array(list))) =
                (position, plan.hookd_hooks.get_mut(event))
            {
                taken = Some(list[index].clone());
                if target.host.is_native() {
                    list.remove(index);
                }
            }
            match taken {
                Some(found) => edited.push((event.clone(), found)),
                None => plan.gone.push(describe_definition(event, definition)),
            }
        }
        if edited.is_empty() {
            // Back as it was in the host file, unless the user removed all of it from
            // hookd's file (an identical definition hookd's file already had counts as
            // present: it stays there and the host gets its own back).
            if present > 0 || record.added.is_empty() {
                push_definition(
                    &mut plan.host_hooks,
                    &record.host_event,
                    record.host_definition.clone(),
                );
            }
            continue;
        }
        if target.host.is_native() {
            // The host reads hookd's format: the edited version goes back as it is now.
            for (event, definition) in edited {
                push_definition(&mut plan.host_hooks, &event, definition);
            }
        } else {
            // The edited version stays in hookd's file (with --force), and the host gets its
            // own definition back.
            for (event, definition) in &edited {
                plan.edited_claude
                    .push(describe_definition(event, definition));
            }
            push_definition(
                &mut plan.host_hooks,
                &record.host_event,
                record.host_definition.clone(),
            );
        }
    }
    prune_empty(&mut plan.hookd_hooks);
    prune_empty(&mut plan.host_hooks);
    plan
}

/// "BeforeTool hook guard" for messages.
fn describe_definition(event: &str, definition: &Value) -> String {
    let names: Vec<String> = definition
        .get("hooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|hook| {
            let text = |key: &str| hook.get(key).and_then(Value::as_str).unwrap_or("");
            if text("name").is_empty() {
                text("command").to_owned()
            } else {
                text("name").to_owned()
            }
        })
        .collect();
    format!("{event} hook {:?}", names.join(", "))
}

/// Removes the first definition of `event` that `matches`; whether there was one.
fn take_definition(
    hooks: &mut Map<String, Value>,
    event: &str,
    matches: impl Fn(&Value) -> bool,
) -> bool {
    let Some(Value::Array(list)) = hooks.get_mut(event) else {
        return false;
    };
    match list.iter().position(matches) {
        Some(index) => {
            list.remove(index);
            true
        }
        None => false,
    }
}

/// Appends a definition to `event`'s list (unless an identical one is there).
fn push_definition(hooks: &mut Map<String, Value>, event: &str, definition: Value) {
    let slot = hooks
        .entry(event.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    if let Value::Array(list) = slot
        && !list.contains(&definition)
    {
        list.push(definition);
    }
}

/// Drops events whose list became empty.
fn prune_empty(hooks: &mut Map<String, Value>) {
    hooks.retain(|_, definitions| definitions.as_array().is_none_or(|list| !list.is_empty()));
}

/// A `hooks` object without relay entries (definitions left with no hook are dropped).
fn without_relay_entries(hooks: Option<&Value>) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(hooks) = hooks.and_then(Value::as_object) else {
        return out;
    };
    for (event, definitions) in hooks {
        let Value::Array(definitions) = definitions else {
            out.insert(event.clone(), definitions.clone());
            continue;
        };
        let mut kept = Vec::new();
        for definition in definitions {
            let Some(Value::Array(list)) = definition.get("hooks") else {
                kept.push(definition.clone());
                continue;
            };
            let remaining: Vec<Value> = list
                .iter()
                .filter(|hook| !is_wiring_hook(hook))
                .cloned()
                .collect();
            if remaining.len() == list.len() {
                kept.push(definition.clone());
            } else if !remaining.is_empty() {
                let mut definition = definition.clone();
                definition["hooks"] = Value::Array(remaining);
                kept.push(definition);
            }
        }
        if !kept.is_empty() {
            out.insert(event.clone(), Value::Array(kept));
        }
    }
    out
}

/// How the host's hooks divide: what hookd takes over (one record per host definition), what
/// stays in the host file because hookd cannot run it (host event → definitions), and the
/// conversion's problems.
#[derive(Debug, Default)]
struct Split {
    moved: Vec<MovedDefinition>,
    kept: Map<String, Value>,
    problems: Vec<String>,
}

impl Split {
    /// What stays in the host file when nothing is moved (for `sync`): the kept definitions
    /// and the movable ones, as they are.
    fn kept_and_unmoved(self) -> Map<String, Value> {
        let mut kept = self.kept;
        for record in self.moved {
            push_definition(&mut kept, &record.host_event, record.host_definition);
        }
        kept
    }
}

/// Divides the host file's hooks (relay entries are neither moved nor kept: install writes
/// them anew). Claude Code hooks that are not `command` hooks (`prompt`, `agent`, ...) and
/// hooks of Claude events Gemini CLI has no counterpart for stay where they are, run by
/// Claude Code itself; the rest are converted, one definition at a time, so each moved
/// definition is recorded next to what it became.
fn split_hooks(host: Host, root: &Map<String, Value>) -> Split {
    let hooks = root
        .get("hooks")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut split = Split::default();
    for (event, definitions) in hooks {
        let Value::Array(definitions) = definitions else {
            // Not a list: hookd reports it where Gemini CLI would; Claude's stays.
            if host.is_native() {
                split.moved.push(MovedDefinition::new(
                    &event,
                    definitions.clone(),
                    vec![(event.clone(), definitions)],
                ));
            } else {
                split.kept.insert(event, definitions);
            }
            continue;
        };
        if !host.is_native() && host.event_to_hookd(&event).is_none() {
            split.kept.insert(event, Value::Array(definitions));
            continue;
        }
        for definition in definitions {
            let (moves, stays) = divide_definition(host, definition);
            if let Some(stays) = stays {
                split.problems.extend(stays_with_host(host, &event, &stays));
                push_definition(&mut split.kept, &event, stays);
            }
            let Some(moves) = moves else {
                continue;
            };
            let settings = json!({"hooks": {event.clone(): [moves.clone()]}});
            match host.convert_settings(&settings, dialect::Purpose::Layer) {
                None => split.moved.push(MovedDefinition::new(
                    &event,
                    moves.clone(),
                    vec![(event.clone(), moves)],
                )),
                Some(conversion) => {
                    split
                        .problems
                        .extend(conversion.problems.iter().map(ToString::to_string));
                    let mut converted = Vec::new();
                    for (gemini_event, list) in conversion.hooks {
                        for definition in list.as_array().into_iter().flatten() {
                            converted.push((gemini_event.clone(), definition.clone()));
                        }
                    }
                    if converted.is_empty() {
                        // Nothing hookd can run came of it: it stays with Claude Code.
                        push_definition(&mut split.kept, &event, moves);
                    } else {
                        split
                            .moved
                            .push(MovedDefinition::new(&event, moves, converted));
                    }
                }
            }
        }
    }
    split
}

/// One line per hook of a definition that stays in the host's file, saying why hookd cannot
/// run it.
fn stays_with_host(host: Host, event: &str, definition: &Value) -> Vec<String> {
    let hooks = definition.get("hooks").and_then(Value::as_array);
    hooks
        .into_iter()
        .flatten()
        .map(|hook| {
            let kind = hook.get("type").and_then(Value::as_str).unwrap_or("");
            let product = host.product();
            let why = match kind {
                "prompt" => {
                    format!("a prompt hook asks {product}'s model, which hookd cannot reach")
                }
                "agent" => format!("an agent hook runs a subagent inside {product}"),
                "mcp_tool" => {
                    format!("an mcp_tool hook calls an MCP server {product} is connected to")
                }
                "http" => "hookd runs command hooks only, not http hooks".to_owned(),
                _ => "hookd runs command hooks only".to_owned(),
            };
            format!("{event} {kind:?} hook stays in {product}'s settings: {why}")
        })
        .collect()
}

/// One definition's part hookd takes over and the part that stays in the host file; relay
/// entries are in neither.
fn divide_definition(host: Host, definition: Value) -> (Option<Value>, Option<Value>) {
    let Value::Object(definition) = definition else {
        // Not a definition: hookd reports it where Gemini CLI would.
        return (Some(definition), None);
    };
    let Some(Value::Array(hooks)) = definition.get("hooks") else {
        return (Some(Value::Object(definition)), None);
    };
    let mut moving = Vec::new();
    let mut staying = Vec::new();
    for hook in hooks {
        if is_wiring_hook(hook) {
            continue;
        }
        let runs_command = hook.get("type").and_then(Value::as_str) == Some("command");
        if !host.is_native() && !runs_command {
            staying.push(hook.clone());
        } else {
            moving.push(hook.clone());
        }
    }
    let with_hooks = |hooks: Vec<Value>| {
        (!hooks.is_empty()).then(|| {
            let mut part = definition.clone();
            part.insert("hooks".to_owned(), Value::Array(hooks));
            Value::Object(part)
        })
    };
    (with_hooks(moving), with_hooks(staying))
}

/// Appends `definitions` (event, definition) to `into`; returns those added (an identical
/// definition already there is not added twice).
fn append_hooks(
    into: &mut Map<String, Value>,
    definitions: &[(String, Value)],
) -> Vec<(String, Value)> {
    let mut added = Vec::new();
    for (event, definition) in definitions {
        let slot = into
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            *slot = Value::Array(Vec::new());
        }
        if let Value::Array(existing) = slot
            && !existing.contains(definition)
        {
            existing.push(definition.clone());
            added.push((event.clone(), definition.clone()));
        }
    }
    added
}

/// Adds the definitions that stay in the host file after the relay entry of their event;
/// returns how many there are.
fn keep_in_host(relay_hooks: &mut Value, kept: Map<String, Value>) -> usize {
    let Value::Object(relay_hooks) = relay_hooks else {
        return 0;
    };
    let mut count = 0;
    for (event, definitions) in kept {
        match (relay_hooks.get_mut(&event), definitions) {
            (Some(Value::Array(existing)), Value::Array(definitions)) => {
                count += definitions.len();
                existing.extend(definitions);
            }
            (_, definitions) => {
                count += definitions.as_array().map_or(1, Vec::len);
                relay_hooks.insert(event, definitions);
            }
        }
    }
    count
}

/// The guarded copies, for a project's shared host file, of the `moved` definitions whose
/// hooks hookd's file (`hookd_text`) still holds as they were moved: each hook's command runs
/// only where `hookd-relay` is not on `PATH` (a teammate's machine without hookd), so the
/// project's hooks run there as the CLI would run them, and nowhere twice. A moved hook
/// edited or removed in hookd's file since has no copy (the host's form of the edit is not
/// known).
fn fallback_copies(moved: &[MovedDefinition], hookd_text: &str) -> Map<String, Value> {
    let hookd_root: Map<String, Value> = hookd_core::jsonc::parse(hookd_text)
        .ok()
        .and_then(|value| match value {
            Value::Object(root) => Some(root),
            _ => None,
        })
        .unwrap_or_default();
    let hookd_hooks = hookd_root.get("hooks").and_then(Value::as_object);
    let still_there = |event: &str, definition: &Value| {
        hookd_hooks
            .and_then(|hooks| hooks.get(event))
            .and_then(Value::as_array)
            .is_some_and(|list| list.contains(definition))
    };
    let mut copies = Map::new();
    for record in moved {
        if record.hookd.is_empty()
            || !record
                .hookd
                .iter()
                .all(|(event, definition)| still_there(event, definition))
        {
            continue;
        }
        let copy = guarded_definition(&record.host_definition);
        let list = copies
            .entry(record.host_event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list
            && !list.contains(&copy)
        {
            list.push(copy);
        }
    }
    copies
}

/// A host definition whose command hooks run only where `hookd-relay` is not on `PATH`: a
/// shell-form command becomes `command -v hookd-relay >/dev/null 2>&1 || { COMMAND\n}`, an
/// exec-form one (`command` and `args`, Claude Code) `sh -c GUARD COMMAND ARGS...`, which
/// execs the program with its arguments as given. Everything else is kept as it is.
fn guarded_definition(definition: &Value) -> Value {
    let mut copy = definition.clone();
    let Some(Value::Array(hooks)) = copy.get_mut("hooks") else {
        return copy;
    };
    for hook in hooks.iter_mut() {
        let Value::Object(hook) = hook else {
            continue;
        };
        let Some(Value::String(command)) = hook.get("command").cloned() else {
            continue;
        };
        match hook.get("args").cloned() {
            Some(Value::Array(args)) => {
                let mut guarded = vec![
                    Value::from("-c"),
                    Value::from(dialect::FALLBACK_EXEC_SCRIPT),
                    Value::from(command),
                ];
                guarded.extend(args);
                hook.insert("command".to_owned(), Value::from("sh"));
                hook.insert("args".to_owned(), Value::Array(guarded));
            }
            _ => {
                hook.insert(
                    "command".to_owned(),
                    Value::from(dialect::fallback_command(&command)),
                );
            }
        }
    }
    copy
}

/// Whether a hook object of a host file is hookd's own wiring: a relay entry or a guarded
/// copy, in either form ([`guarded_definition`]).
fn is_wiring_hook(hook: &Value) -> bool {
    let command = hook.get("command").and_then(Value::as_str);
    if command.is_some_and(dialect::is_hookd_wiring) {
        return true;
    }
    let args = hook.get("args").and_then(Value::as_array);
    command == Some("sh")
        && args.is_some_and(|args| {
            args.len() >= 3 && args[0] == "-c" && args[1] == dialect::FALLBACK_EXEC_SCRIPT
        })
}

/// The host's new `hooks`: one relay entry per wired event. `--socket` rides along in the
/// command, so the relay asks the daemon the install was made for. With `from_path` (the
/// relay run as `hookd-relay` from `PATH`, always so in a project's shared file) the entry
/// answers nothing where `hookd-relay` is not on `PATH` ([`dialect::shared_relay_command`]).
fn relay_entries(
    host: Host,
    program: &str,
    socket: Option<&str>,
    wiring: &[WireEntry],
    from_path: bool,
) -> Value {
    let socket = socket
        .map(|socket| format!(" --socket {}", hookd_core::command::shell_quote(socket)))
        .unwrap_or_default();
    let mut hooks = Map::new();
    for entry in wiring {
        let event = &entry.event;
        // The hosts differ only in the relay entry itself (its name, the unit of its
        // timeout) and in the dialect the relay is told.
        let dialect = if host.is_native() {
            String::new()
        } else {
            format!(" --dialect {}", host.as_str())
        };
        let mut command = format!("{program} {event}{dialect}{socket}");
        if from_path {
            command = dialect::shared_relay_command(&command);
        }
        let relay = host.relay_handler(event, &command, entry.timeout_ms);
        let mut definition = Map::new();
        if let Some(matcher) = &entry.matcher {
            definition.insert("matcher".to_owned(), Value::from(matcher.clone()));
        }
        definition.insert("hooks".to_owned(), Value::Array(vec![relay]));
        let definition = Value::Object(definition);
        hooks.insert(event.clone(), Value::Array(vec![definition]));
    }
    Value::Object(hooks)
}

/// Reads a settings (or manifest) file, bounded and never blocking
/// ([`crate::read_settings_file`]); `None` when it does not exist.
fn read_file(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    crate::read_settings_file(path)
}

/// The file's text; refuses bytes that are not UTF-8 rather than rewrite them lossily.
fn text_of(path: &Path, bytes: Option<&[u8]>) -> anyhow::Result<String> {
    match bytes {
        None => Ok(String::new()),
        Some(bytes) => String::from_utf8(bytes.to_vec())
            .with_context(|| format!("{} is not UTF-8 text; not editing it", path.display())),
    }
}

/// The top-level object of a settings text (empty for an empty or absent file).
fn parse_object(path: &Path, text: &str) -> anyhow::Result<Map<String, Value>> {
    if jsonc::strip_comments(text).trim().is_empty() {
        return Ok(Map::new());
    }
    match jsonc::parse(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => bail!(
            "{} is not a JSON object; fix it before installing",
            path.display()
        ),
        Err(err) => bail!(
            "{}:{}:{}: invalid JSON ({}); fix it before installing",
            path.display(),
            err.line,
            err.column,
            err.message
        ),
    }
}

/// The text with the top-level member `key` set to `value`, everything else kept.
fn set_member(text: &str, key: &str, value: &Value) -> anyhow::Result<String> {
    Ok(hookd_core::edit::set_member(text, key, value)?.text)
}

/// The file's permission bits, when it exists.
fn file_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .ok()
        .map(|metadata| metadata.permissions().mode() & 0o7777)
}

/// The ancestors of `path` that do not exist yet, deepest first.
fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|dir| !dir.as_os_str().is_empty() && !dir.exists())
        .map(Path::to_owned)
        .collect()
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync,
/// rename, then fsync of the directory. `mode` is the file's permissions (default 0644).
fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.hookctl-{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode.unwrap_or(0o644))
            .open(&temp)?;
        file.write_all(bytes)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode.unwrap_or(0o644)))?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// The manifest's file name in a backup directory.
const MANIFEST: &str = "manifest.json";

/// What the installs of one host and scope changed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Manifest {
    #[serde(default)]
    host: String,
    #[serde(default)]
    scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    project: Option<String>,
    /// The `--socket` the relay entries carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    socket: Option<String>,
    /// Every file hookctl changed, with its bytes from before the first change.
    #[serde(default)]
    files: Vec<BackedUpFile>,
    /// Every host definition moved to hookd's file, oldest first.
    #[serde(default)]
    moved: Vec<MovedDefinition>,
    /// The state directories the first install created, deepest first: removed with the
    /// uninstall when nothing else is in them.
    #[serde(default)]
    created_dirs: Vec<PathBuf>,
    /// Whether an install after the first moved hooks (hooks added to the host file since):
    /// the saved originals then no longer hold every hook, so uninstall never restores them
    /// byte for byte.
    #[serde(default)]
    later_moves: bool,
    /// The layout of an older hookctl (one record per install); refused.
    #[serde(default, skip_serializing)]
    installs: Vec<Value>,
}

/// One changed file: where its original bytes are and what hookctl last wrote.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct BackedUpFile {
    path: PathBuf,
    /// The saved original's file name in the backup directory; `None`: it did not exist.
    original: Option<String>,
    /// The original's permission bits.
    #[serde(default)]
    mode: Option<u32>,
    /// SHA-256 of the bytes hookctl last wrote.
    written_sha256: String,
    /// Directories the install created for it, deepest first.
    #[serde(default)]
    created_dirs: Vec<PathBuf>,
}

/// One definition moved from the host's file: as it was there, and what it became in
/// hookd's file.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct MovedDefinition {
    /// The host's event name.
    host_event: String,
    /// The definition as it was in the host file (its relay entries and the hooks hookd
    /// cannot run left out).
    host_definition: Value,
    /// What it became: (Gemini event, definition) pairs.
    hookd: Vec<(String, Value)>,
    /// The pairs the install added to hookd's file (not those it already had).
    #[serde(default)]
    added: Vec<(String, Value)>,
}

impl MovedDefinition {
    fn new(host_event: &str, host_definition: Value, hookd: Vec<(String, Value)>) -> Self {
        MovedDefinition {
            host_event: host_event.to_owned(),
            host_definition,
            hookd,
            added: Vec::new(),
        }
    }
}

impl Manifest {
    fn load(dir: &Path) -> anyhow::Result<Manifest> {
        let path = dir.join(MANIFEST);
        let manifest: Manifest = match read_file(&path)? {
            None => return Ok(Manifest::default()),
            Some(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is damaged", path.display()))?,
        };
        if !manifest.installs.is_empty() {
            bail!(
                "{} was written by an older hookctl; undo that install with the hookctl that \
                 made it, or restore the files it names by hand and remove it",
                path.display()
            );
        }
        Ok(manifest)
    }

    /// Whether an install is recorded.
    fn is_recorded(&self) -> bool {
        !self.files.is_empty() || !self.moved.is_empty()
    }

    /// Saves the original of each changed file the first time it changes, and what is
    /// written now.
    fn record_changes(&mut self, backup_dir: &Path, changes: &[Change]) -> anyhow::Result<()> {
        std::fs::create_dir_all(backup_dir)
            .with_context(|| format!("cannot create {}", backup_dir.display()))?;
        for change in changes {
            let written_sha256 = hookd_core::trust::sha256_hex(&change.after);
            if let Some(file) = self.files.iter_mut().find(|file| file.path == change.path) {
                file.written_sha256 = written_sha256;
                continue;
            }
            let original = match &change.before {
                Some(bytes) => {
                    let name = format!("{}.orig", self.files.len());
                    write_atomic(&backup_dir.join(&name), bytes, Some(0o600))?;
                    Some(name)
                }
                None => None,
            };
            self.files.push(BackedUpFile {
                path: change.path.clone(),
                original,
                mode: change.before.as_ref().and_then(|_| file_mode(&change.path)),
                written_sha256,
                created_dirs: missing_dirs(&change.path),
            });
        }
        Ok(())
    }

    fn save(&self, dir: &Path) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(self).context("cannot encode the manifest")?;
        text.push('\n');
        write_atomic(&dir.join(MANIFEST), text.as_bytes(), Some(0o600))
    }
}

/// A unified diff of one file, three lines of context per hunk; an absent file is
/// `/dev/null`.
pub fn unified_diff(path: &Path, before: Option<&[u8]>, after: &[u8]) -> String {
    let old_text = before.map(String::from_utf8_lossy).unwrap_or_default();
    let new_text = String::from_utf8_lossy(after);
    let old: Vec<&str> = old_text.split_inclusive('\n').collect();
    let new: Vec<&str> = new_text.split_inclusive('\n').collect();
    let mut out = String::new();
    let old_name = if before.is_some() {
        path.display().to_string()
    } else {
        "/dev/null".to_owned()
    };
    let _ = writeln!(out, "--- {old_name}");
    let _ = writeln!(out, "+++ {}", path.display());
    let ops = diff_lines(&old, &new);
    const CONTEXT: usize = 3;
    let mut index = 0;
    while index < ops.len() {
        // Find the next change.
        let Some(first_change) = (index..ops.len()).find(|&i| !matches!(ops[i], Op::Same(..)))
        else {
            break;
        };
        let start = first_change.saturating_sub(CONTEXT).max(index);
        // Extend the hunk while changes are within 2 * CONTEXT of each other.
        let mut end = first_change;
        let mut last_change = first_change;
        while end < ops.len() {
            if !matches!(ops[end], Op::Same(..)) {
                last_change = end;
            } else if end - last_change > 2 * CONTEXT {
                break;
            }
            end += 1;
        }
        let end = (last_change + CONTEXT + 1).min(ops.len());
        let (old_start, new_start) = ops[start].positions();
        let old_count = ops[start..end]
            .iter()
            .filter(|op| !matches!(op, Op::Insert(..)))
            .count();
        let new_count = ops[start..end]
            .iter()
            .filter(|op| !matches!(op, Op::Delete(..)))
            .count();
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            hunk_range(old_start, old_count),
            hunk_range(new_start, new_count)
        );
        for op in &ops[start..end] {
            let (sign, line) = match op {
                Op::Same(_, _, line) => (' ', *line),
                Op::Delete(_, _, line) => ('-', *line),
                Op::Insert(_, _, line) => ('+', *line),
            };
            out.push(sign);
            out.push_str(line.strip_suffix('\n').unwrap_or(line));
            out.push('\n');
            if !line.ends_with('\n') {
                out.push_str("\\ No newline at end of file\n");
            }
        }
        index = end;
    }
    out
}

/// `start,count` of a hunk header, 1-based (`start-1,0` for an empty range).
fn hunk_range(start: usize, count: usize) -> String {
    if count == 0 {
        format!("{start},0")
    } else {
        format!("{},{count}", start + 1)
    }
}

/// One line of an edit script, with the old and new line indexes it sits at.
#[derive(Debug, Clone, Copy)]
enum Op<'a> {
    Same(usize, usize, &'a str),
    Delete(usize, usize, &'a str),
    Insert(usize, usize, &'a str),
}

impl Op<'_> {
    fn positions(&self) -> (usize, usize) {
        match self {
            Op::Same(old, new, _) | Op::Delete(old, new, _) | Op::Insert(old, new, _) => {
                (*old, *new)
            }
        }
    }
}

/// A shortest edit script by longest common subsequence (settings files are small; beyond a
/// few thousand lines the common prefix and suffix are kept and the middle replaced whole).
fn diff_lines<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Op<'a>> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_mid = &old[prefix..old.len() - suffix];
    let new_mid = &new[prefix..new.len() - suffix];
    let mut ops = Vec::new();
    for (i, line) in old[..prefix].iter().enumerate() {
        ops.push(Op::Same(i, i, line));
    }
    let (n, m) = (old_mid.len(), new_mid.len());
    if n.saturating_mul(m) > 4_000_000 {
        for (i, line) in old_mid.iter().enumerate() {
            ops.push(Op::Delete(prefix + i, prefix, line));
        }
        for (j, line) in new_mid.iter().enumerate() {
            ops.push(Op::Insert(prefix + n, prefix + j, line));
        }
    } else {
        // lcs[i][j]: the LCS length of old_mid[i..] and new_mid[j..].
        let mut lcs = vec![vec![0u32; m + 1]; n + 1];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i][j] = if old_mid[i] == new_mid[j] {
                    lcs[i + 1][j + 1] + 1
                } else {
                    lcs[i + 1][j].max(lcs[i][j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && old_mid[i] == new_mid[j] {
                ops.push(Op::Same(prefix + i, prefix + j, old_mid[i]));
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
                // Deletions before insertions, as `diff -u` prints them.
                ops.push(Op::Delete(prefix + i, prefix + j, old_mid[i]));
                i += 1;
            } else {
                ops.push(Op::Insert(prefix + i, prefix + j, new_mid[j]));
                j += 1;
            }
        }
    }
    for k in 0..suffix {
        let (i, j) = (old.len() - suffix + k, new.len() - suffix + k);
        ops.push(Op::Same(i, j, old[i]));
    }
    ops
}

/// The relay entries of one recorded install, for `hookctl doctor`.
#[derive(Debug, Clone)]
pub struct InstalledRelays {
    /// What was installed ("Gemini CLI user hooks", ...).
    pub description: String,
    /// The host's settings file.
    pub host_file: PathBuf,
    /// The command of each relay entry in it, in file order.
    pub commands: Vec<String>,
}

/// The relay entries of every recorded install that applies to `project` (user installs, and
/// project installs of `project`).
pub fn installed_relays(locations: &Locations, project: &Path) -> Vec<InstalledRelays> {
    let Ok(installed) = locations.installed() else {
        return Vec::new();
    };
    let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_owned());
    let mut found = Vec::new();
    for (target, _) in installed {
        if target.project.as_ref().is_some_and(|dir| *dir != project) {
            continue;
        }
        let text = crate::read_settings_text_or_empty(&target.host_file);
        let root = parse_object(&target.host_file, &text).unwrap_or_default();
        let commands = root
            .get("hooks")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|hooks| hooks.values())
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|definition| definition.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter_map(|hook| hook.get("command").and_then(Value::as_str))
            .filter(|command| dialect::is_relay_command(command))
            .map(str::to_owned)
            .collect();
        found.push(InstalledRelays {
            description: target.describe(),
            host_file: target.host_file.clone(),
            commands,
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_are_unified() {
        // (before, after, expected hunks)
        let cases: [(Option<&str>, &str, &str); 4] = [
            (
                None,
                "{\n}\n",
                "--- /dev/null\n+++ /f\n@@ -0,0 +1,2 @@\n+{\n+}\n",
            ),
            (
                Some("a\nb\nc\n"),
                "a\nB\nc\n",
                "--- /f\n+++ /f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
            ),
            (
                Some("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"),
                "1\n2\n3\n4\n5\n6\n7\n8\n9\nten\n",
                "--- /f\n+++ /f\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+ten\n",
            ),
            (
                Some("x"),
                "x\ny",
                "--- /f\n+++ /f\n@@ -1,1 +1,2 @@\n-x\n\\ No newline at end of file\n+x\n+y\n\\ No newline at end of file\n",
            ),
        ];
        for (before, after, expected) in cases {
            let got = unified_diff(Path::new("/f"), before.map(str::as_bytes), after.as_bytes());
            assert_eq!(got, expected, "{before:?} -> {after:?}");
        }
    }

    fn layer(hooks: Value) -> SettingsLayer {
        let text = json!({ "hooks": hooks }).to_string();
        hookd_core::settings::parse_settings(Source::User, Path::new("/h.json"), &text, &|_| None)
            .layer
            .expect("layer")
    }

    #[test]
    fn wiring_covers_exactly_what_hookd_has_hooks_for() {
        let command = |extra: Value| {
            let mut hook = json!({"type": "command", "command": "x.sh"});
            for (key, value) in extra.as_object().into_iter().flatten() {
                hook[key] = value.clone();
            }
            hook
        };
        // (host, hooks, expected (event, matcher, timeout ms))
        type Case = (Host, Value, Vec<(&'static str, Option<&'static str>, u64)>);
        let cases: Vec<Case> = vec![
            (Host::GEMINI, json!({}), vec![]),
            // Relay entries are not hooks.
            (
                Host::GEMINI,
                json!({"BeforeTool": [{"hooks": [{"type": "command", "command": "hookd-relay BeforeTool"}]}]}),
                vec![],
            ),
            (
                Host::GEMINI,
                json!({
                    "BeforeTool": [
                        {"matcher": "run_shell_command", "hooks": [command(json!({"timeout": 5000}))]},
                        {"matcher": "write_file|replace", "hooks": [command(json!({}))]}
                    ],
                    "SessionStart": [{"matcher": "startup", "hooks": [command(json!({"dialect": "claude"}))]}]
                }),
                vec![
                    (
                        "BeforeTool",
                        Some("(?:run_shell_command)|(?:write_file|replace)"),
                        75_000,
                    ),
                    ("SessionStart", None, 610_000),
                ],
            ),
            // One hook on every tool: the entry sees every tool.
            (
                Host::GEMINI,
                json!({"AfterTool": [{"matcher": "read_file", "hooks": [command(json!({}))]},
                                     {"hooks": [command(json!({"timeout": 1}))]}]}),
                vec![("AfterTool", None, 70_001)],
            ),
            // A matcher Gemini CLI compares as a plain name cannot join an alternation.
            (
                Host::GEMINI,
                json!({"BeforeTool": [{"matcher": "[bad", "hooks": [command(json!({}))]},
                                      {"matcher": "x", "hooks": [command(json!({}))]}]}),
                vec![("BeforeTool", None, 130_000)],
            ),
            // Claude Code: the Claude names of the tools; Stop and SubagentStop are both
            // AfterAgent; no model events.
            (
                Host::CLAUDE,
                json!({
                    "BeforeTool": [
                        {"matcher": "^run_shell_command$", "hooks": [command(json!({"dialect": "claude"}))]},
                        {"matcher": "^(?:replace|write_file)$", "hooks": [command(json!({"timeout": 2000}))]}
                    ],
                    "AfterAgent": [{"hooks": [command(json!({}))]}],
                    "BeforeModel": [{"hooks": [command(json!({}))]}]
                }),
                vec![
                    ("PreToolUse", Some("Bash|Edit|MultiEdit|Write"), 612_000),
                    ("Stop", None, 70_000),
                    ("SubagentStop", None, 70_000),
                ],
            ),
            (
                Host::CLAUDE,
                json!({"AfterTool": [{"matcher": "mcp_.*", "hooks": [command(json!({}))]}]}),
                vec![("PostToolUse", Some("*"), 70_000)],
            ),
            // An unanchored name also matches longer names: every tool is relayed.
            (
                Host::CLAUDE,
                json!({"BeforeTool": [{"matcher": "read", "hooks": [command(json!({}))]}]}),
                vec![("PreToolUse", Some("*"), 70_000)],
            ),
            // Claude Code's own events: wired under their names, tool events with the exact
            // names of converted matchers; Gemini CLI is never wired to them.
            (
                Host::CLAUDE,
                json!({
                    "PermissionRequest": [{"matcher": "^(?:Bash|Write)$", "hooks": [command(json!({"dialect": "claude"}))]}],
                    "PostToolUseFailure": [{"matcher": "Ba.*", "hooks": [command(json!({}))]}],
                    "TaskCompleted": [{"hooks": [command(json!({}))]}]
                }),
                vec![
                    ("PostToolUseFailure", None, 70_000),
                    ("PermissionRequest", Some("Bash|Write"), 610_000),
                    ("TaskCompleted", None, 70_000),
                ],
            ),
            (
                Host::GEMINI,
                json!({"PermissionRequest": [{"hooks": [command(json!({}))]}]}),
                vec![],
            ),
        ];
        for (host, hooks, expected) in cases {
            let got = wiring(host, &[layer(hooks.clone())]);
            let got: Vec<(&str, Option<&str>, u64)> = got
                .iter()
                .map(|entry| {
                    (
                        entry.event.as_str(),
                        entry.matcher.as_deref(),
                        entry.timeout_ms,
                    )
                })
                .collect();
            assert_eq!(got, expected, "{host:?} {hooks}");
        }
    }

    #[test]
    fn claude_hooks_hookd_cannot_run_stay_with_claude() {
        let root = json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "/opt/bin/hookctl relay PreToolUse --dialect claude"},
                {"type": "command", "command": "guard.sh", "timeout": 5},
                {"type": "prompt", "prompt": "Is this safe?"}
            ]}],
            "PermissionRequest": [{"hooks": [{"type": "command", "command": "perm.sh"}]}]
        }});
        let Value::Object(root) = root else {
            unreachable!()
        };
        let split = split_hooks(Host::CLAUDE, &root);
        assert_eq!(
            Value::Object(split.kept.clone()),
            json!({
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this safe?"}]}]
            })
        );
        // Claude Code's own events move too, under their own name.
        assert_eq!(
            split.problems,
            [
                "PreToolUse \"prompt\" hook stays in Claude Code's settings: a prompt hook asks \
              Claude Code's model, which hookd cannot reach"
            ]
        );
        assert_eq!(split.moved.len(), 2);
        assert_eq!(split.moved[1].host_event, "PermissionRequest");
        assert_eq!(split.moved[1].hookd[0].0, "PermissionRequest");
        let record = &split.moved[0];
        assert_eq!(record.host_event, "PreToolUse");
        assert_eq!(
            record.host_definition,
            json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]})
        );
        let (event, moved) = &record.hookd[0];
        assert_eq!(event, "BeforeTool");
        assert_eq!(moved["matcher"], json!("^run_shell_command$"), "{moved}");
        assert_eq!(moved["hooks"][0]["timeout"], json!(5000), "{moved}");
        assert_eq!(moved["hooks"][0]["dialect"], json!("claude"), "{moved}");
    }

    #[test]
    fn uninstall_strips_every_relay_entry_and_nothing_else() {
        let hooks = json!({
            "BeforeTool": [
                {"hooks": [{"type": "command", "command": "hookd-relay BeforeTool"}]},
                {"hooks": [{"type": "command", "command": "/usr/bin/hookctl relay BeforeTool"},
                           {"type": "command", "command": "mine.sh"}]}
            ],
            "AfterTool": [{"hooks": [{"type": "command", "command": "hookd-relay AfterTool"}]}]
        });
        assert_eq!(
            Value::Object(without_relay_entries(Some(&hooks))),
            json!({"BeforeTool": [{"hooks": [{"type": "command", "command": "mine.sh"}]}]})
        );
    }
}
