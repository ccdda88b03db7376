//! `hookctl install` and `hookctl uninstall`: hand an agent CLI's hooks to hookd, and back.
//!
//! `install --host gemini|claude --scope user|project`:
//!
//! 1. reads the host's settings file of that scope (Gemini CLI: `~/.gemini/settings.json` or
//!    `<project>/.gemini/settings.json`; Claude Code: `~/.claude/settings.json` or
//!    `<project>/.claude/settings.json`), JSON with comments;
//! 2. moves its hooks into hookd's own hooks file of the same scope
//!    (`$XDG_CONFIG_HOME/hookd/hooks.json` or `<project>/.hookd/hooks.json`), appending each
//!    event's definitions to what is there (Claude Code's hooks are converted first, and keep
//!    Claude's language with `"dialect": "claude"`);
//! 3. replaces the host's `hooks` with one `hookctl relay` entry per event of that host, which
//!    matches every firing and waits long enough for the slowest hooks it relays.
//!
//! Every changed file is shown as a unified diff first; `--dry-run` stops there, and without a
//! terminal `--yes` is needed to go on. Files are written atomically (temporary file, fsync,
//! rename), and the host file's text outside its `hooks` member is kept as it was, comments
//! included.
//!
//! Before anything is written, the original bytes of every file about to change are saved
//! under `$XDG_STATE_HOME/hookd/install/` (else `~/.local/state/hookd/install/`), with a
//! manifest holding each file's SHA-256 after the install. `uninstall` restores the last
//! install's files byte for byte (a file that did not exist is removed again), and refuses,
//! naming the file, when one was changed since, unless `--force`. Installing again changes
//! nothing once everything is in place; if hooks were added to the host file since, it moves
//! them as a new install, which `uninstall` undoes first.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hookd_core::HookEventName;
use hookd_core::dialect;
use hookd_core::jsonc;
use hookd_runner::loader::{LayerPaths, LoaderEnv};
use serde_json::{Map, Value, json};

/// The name every relay entry carries (Gemini CLI shows and disables hooks by name).
pub const RELAY_NAME: &str = "hookd-relay";

/// The host's default hook timeout, in milliseconds (60 s for both hosts).
const HOST_DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// What a relay entry waits on top of the hooks' own timeouts: connecting, spawning and
/// answering.
const RELAY_MARGIN_MS: u64 = 10_000;

/// The agent CLI whose hooks are handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Host {
    /// Gemini CLI.
    Gemini,
    /// Claude Code.
    Claude,
}

impl Host {
    fn as_str(self) -> &'static str {
        match self {
            Host::Gemini => "gemini",
            Host::Claude => "claude",
        }
    }
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
}

/// Arguments of `hookctl install`.
#[derive(Debug, Clone, clap::Args)]
pub struct InstallArgs {
    /// The agent CLI whose hooks hookd takes over.
    #[arg(long, value_enum)]
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
    #[arg(long, value_enum)]
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
    /// Restore even files that changed since the install (those changes are lost).
    #[arg(long)]
    pub force: bool,
}

/// Runs `hookctl install` and prints its report.
pub fn run_install(args: &InstallArgs) -> ExitCode {
    finish(install(
        args,
        &Locations::from_process(),
        &mut Prompt::Terminal,
    ))
}

/// Runs `hookctl uninstall` and prints its report.
pub fn run_uninstall(args: &UninstallArgs) -> ExitCode {
    finish(uninstall(args, &Locations::from_process()))
}

fn finish(result: anyhow::Result<String>) -> ExitCode {
    match result {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("hookctl: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Where the files are, from the environment.
#[derive(Debug, Clone)]
pub struct Locations {
    env: LoaderEnv,
    paths: LayerPaths,
    state_dir: PathBuf,
    current_dir: Option<PathBuf>,
    relay_program: String,
}

impl Locations {
    /// The locations of this process: its environment, home, current directory and
    /// executable.
    pub fn from_process() -> Locations {
        let env = LoaderEnv::from_process().unwrap_or_default();
        let program = std::env::current_exe()
            .ok()
            .and_then(|exe| std::fs::canonicalize(&exe).ok().or(Some(exe)))
            .map_or_else(|| "hookctl".to_owned(), |exe| exe.display().to_string());
        Locations::new(env, std::env::current_dir().ok(), program)
    }

    /// Locations for an explicit environment, current directory and relay program.
    pub fn new(env: LoaderEnv, current_dir: Option<PathBuf>, relay_program: String) -> Locations {
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
            relay_program,
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
        let (host_file, hookd_file) = match (&project, host) {
            (None, Host::Gemini) => (self.paths.user.clone(), self.paths.hookd_user.clone()),
            (None, Host::Claude) => (
                self.paths.claude_user.clone(),
                self.paths.hookd_user.clone(),
            ),
            (Some(dir), Host::Gemini) => (
                LayerPaths::project_settings(dir),
                LayerPaths::hookd_project(dir),
            ),
            (Some(dir), Host::Claude) => {
                let [settings, _local] = LayerPaths::claude_project(dir);
                (settings, LayerPaths::hookd_project(dir))
            }
        };
        let mut key = format!("{}-{}", host.as_str(), scope.as_str());
        if let Some(dir) = &project {
            let digest = hookd_core::trust::sha256_hex(dir.display().to_string().as_bytes());
            key.push('-');
            key.push_str(&digest[..16]);
        }
        Ok(Target {
            host,
            scope,
            project,
            host_file,
            hookd_file,
            backup_dir: self.state_dir.join(key),
        })
    }

    /// The environment the paths were resolved with.
    pub fn env(&self) -> &LoaderEnv {
        &self.env
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
            Some(dir) => format!(
                "{} hooks of project {}",
                host_label(self.host),
                dir.display()
            ),
            None => format!("{} user hooks", host_label(self.host)),
        }
    }
}

fn host_label(host: Host) -> &'static str {
    match host {
        Host::Gemini => "Gemini CLI",
        Host::Claude => "Claude Code",
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
}

/// `hookctl install`: returns the report to print.
pub fn install(
    args: &InstallArgs,
    locations: &Locations,
    prompt: &mut Prompt<'_>,
) -> anyhow::Result<String> {
    let target = locations.files(args.host, args.scope, args.cwd.as_deref())?;
    let host_before = read_file(&target.host_file)?;
    let hookd_before = read_file(&target.hookd_file)?;
    let host_text = text_of(&target.host_file, host_before.as_deref())?;
    let hookd_text = text_of(&target.hookd_file, hookd_before.as_deref())?;
    let host_root = parse_object(&target.host_file, &host_text)?;
    let hookd_root = parse_object(&target.hookd_file, &hookd_text)?;

    let mut report = String::new();
    let split = split_hooks(args.host, &host_root);
    for problem in &split.problems {
        let _ = writeln!(report, "warning: {}: {problem}", target.host_file.display());
    }
    let moved = &split.moved;
    let mut merged_hooks = hookd_root
        .get("hooks")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let moved_count = append_hooks(&mut merged_hooks, moved);
    let relay_timeout_ms = relay_timeout_ms(&merged_hooks);
    let mut relay_hooks = relay_entries(args.host, &locations.relay_program, relay_timeout_ms);
    let kept_count = keep_in_host(&mut relay_hooks, split.kept);
    if kept_count > 0 {
        let _ = writeln!(
            report,
            "note: {kept_count} hook definition(s) hookd cannot run stay in {}, run by {} itself.",
            target.host_file.display(),
            host_label(args.host)
        );
    }

    let new_hookd_text = if moved_count == 0 {
        hookd_text.clone()
    } else {
        set_member(&hookd_text, "hooks", &Value::Object(merged_hooks))
            .with_context(|| format!("cannot edit {}", target.hookd_file.display()))?
    };
    let new_host_text = if host_root.get("hooks") == Some(&relay_hooks) {
        host_text.clone()
    } else {
        set_member(&host_text, "hooks", &relay_hooks)
            .with_context(|| format!("cannot edit {}", target.host_file.display()))?
    };

    let mut changes = Vec::new();
    for (path, before, after) in [
        (&target.hookd_file, hookd_before, new_hookd_text),
        (&target.host_file, host_before, new_host_text),
    ] {
        // An absent file that would stay empty is not a change.
        let unchanged = match &before {
            Some(bytes) => *bytes == after.as_bytes(),
            None => after.is_empty(),
        };
        if !unchanged {
            changes.push(Change {
                path: path.clone(),
                before,
                after: after.into_bytes(),
            });
        }
    }
    if changes.is_empty() {
        let _ = writeln!(
            report,
            "hookd already runs the {}: nothing to change.",
            target.describe()
        );
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
        "{moved_count} hook definition(s) move to {}; {} relays {} event(s) to hookd \
         (timeout {}).",
        target.hookd_file.display(),
        target.host_file.display(),
        relay_event_names(args.host).len(),
        match args.host {
            Host::Gemini => format!("{relay_timeout_ms} ms"),
            Host::Claude => format!("{} s", relay_timeout_ms.div_ceil(1000)),
        }
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

    let mut manifest = Manifest::load(&target.backup_dir)?;
    let mut record = InstallRecord::default();
    if manifest.installs.is_empty() {
        manifest.created_dirs = missing_dirs(&target.backup_dir.join(MANIFEST));
    }
    std::fs::create_dir_all(&target.backup_dir)
        .with_context(|| format!("cannot create {}", target.backup_dir.display()))?;
    for change in &changes {
        let original = match &change.before {
            Some(bytes) => {
                let name = format!("{}-{}.orig", manifest.installs.len(), record.files.len());
                write_atomic(&target.backup_dir.join(&name), bytes, Some(0o600))?;
                Some(name)
            }
            None => None,
        };
        let mode = change.before.as_ref().and_then(|_| file_mode(&change.path));
        record.files.push(BackedUpFile {
            path: change.path.clone(),
            original,
            mode,
            installed_sha256: hookd_core::trust::sha256_hex(&change.after),
            created_dirs: missing_dirs(&change.path),
        });
    }
    manifest.host = target.host.as_str().to_owned();
    manifest.scope = target.scope.as_str().to_owned();
    manifest.project = target.project.as_ref().map(|dir| dir.display().to_string());
    manifest.installs.push(record);
    manifest.save(&target.backup_dir)?;

    for change in &changes {
        let mode = file_mode(&change.path);
        write_atomic(&change.path, &change.after, mode)?;
    }
    let _ = writeln!(
        report,
        "Installed: hookd now runs the {} (originals saved in {}; `hookctl uninstall --host {} \
         --scope {}` restores them).",
        target.describe(),
        target.backup_dir.display(),
        target.host.as_str(),
        target.scope.as_str()
    );
    Ok(report)
}

/// `hookctl uninstall`: returns the report to print.
pub fn uninstall(args: &UninstallArgs, locations: &Locations) -> anyhow::Result<String> {
    let target = locations.files(args.host, args.scope, args.cwd.as_deref())?;
    let mut manifest = Manifest::load(&target.backup_dir)?;
    let Some(record) = manifest.installs.last().cloned() else {
        return Ok(format!(
            "hookd is not installed for the {}: nothing to undo.\n",
            target.describe()
        ));
    };
    let mut changed = Vec::new();
    let mut current = Vec::new();
    for file in &record.files {
        let bytes = read_file(&file.path)?;
        let matches = bytes
            .as_deref()
            .is_some_and(|bytes| hookd_core::trust::sha256_hex(bytes) == file.installed_sha256);
        if !matches {
            changed.push(file.path.display().to_string());
        }
        current.push(bytes);
    }
    if !changed.is_empty() && !args.force {
        bail!(
            "{} changed since `hookctl install`; uninstall would lose those changes. Restore \
             anyway with --force",
            changed.join(" and ")
        );
    }
    let mut report = String::new();
    let mut originals = Vec::new();
    for (file, bytes) in record.files.iter().zip(&current) {
        let original = match &file.original {
            Some(name) => {
                let path = target.backup_dir.join(name);
                Some(std::fs::read(&path).with_context(|| {
                    format!("cannot read the saved original {}", path.display())
                })?)
            }
            None => None,
        };
        match &original {
            Some(after) => report.push_str(&unified_diff(&file.path, bytes.as_deref(), after)),
            None => {
                let _ = writeln!(report, "remove {}", file.path.display());
            }
        }
        originals.push(original);
    }
    if args.dry_run {
        report.push_str("Dry run: nothing was restored.\n");
        return Ok(report);
    }
    for (file, original) in record.files.iter().zip(&originals) {
        match original {
            Some(bytes) => write_atomic(&file.path, bytes, file.mode)?,
            None => match std::fs::remove_file(&file.path) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(err)
                        .with_context(|| format!("cannot remove {}", file.path.display()));
                }
            },
        }
        // Directories the install created go again when nothing else lives in them.
        for dir in &file.created_dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }
    manifest.installs.pop();
    for file in &record.files {
        if let Some(name) = &file.original {
            let _ = std::fs::remove_file(target.backup_dir.join(name));
        }
    }
    if manifest.installs.is_empty() {
        let _ = std::fs::remove_file(target.backup_dir.join(MANIFEST));
        let _ = std::fs::remove_dir(&target.backup_dir);
        for dir in &manifest.created_dirs {
            let _ = std::fs::remove_dir(dir);
        }
    } else {
        manifest.save(&target.backup_dir)?;
    }
    let _ = writeln!(
        report,
        "Uninstalled: the {} are back as they were before `hookctl install`.",
        target.describe()
    );
    if !manifest.installs.is_empty() {
        let _ = writeln!(
            report,
            "An earlier install is still recorded; run uninstall again to undo it too."
        );
    }
    Ok(report)
}

/// How the host's hooks divide: what hookd takes over (a Gemini `hooks` object), what stays
/// in the host file because hookd cannot run it (host event → definitions), and the
/// conversion's problems.
#[derive(Debug, Default)]
struct Split {
    moved: Map<String, Value>,
    kept: Map<String, Value>,
    problems: Vec<String>,
}

/// Divides the host file's hooks (relay entries are neither moved nor kept: install writes
/// them anew). Claude Code hooks that are not `command` hooks (`prompt`, `agent`, ...) and
/// hooks of Claude events Gemini CLI has no counterpart for stay where they are, run by
/// Claude Code itself; the rest are converted.
fn split_hooks(host: Host, root: &Map<String, Value>) -> Split {
    let hooks = root
        .get("hooks")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut split = Split::default();
    let mut movable = Map::new();
    for (event, definitions) in hooks {
        let Value::Array(definitions) = definitions else {
            if host == Host::Claude {
                split.kept.insert(event, definitions);
            } else {
                movable.insert(event, definitions);
            }
            continue;
        };
        if host == Host::Claude && dialect::claude_event_to_gemini(&event).is_none() {
            split.kept.insert(event, Value::Array(definitions));
            continue;
        }
        let mut moving = Vec::new();
        let mut staying = Vec::new();
        for definition in definitions {
            let (moves, stays) = divide_definition(host, definition);
            moving.extend(moves);
            staying.extend(stays);
        }
        if !moving.is_empty() {
            movable.insert(event.clone(), Value::Array(moving));
        }
        if !staying.is_empty() {
            split.kept.insert(event, Value::Array(staying));
        }
    }
    match host {
        Host::Gemini => split.moved = movable,
        Host::Claude => {
            let mut settings = Map::new();
            settings.insert("hooks".to_owned(), Value::Object(movable));
            let conversion =
                dialect::convert_claude_settings(&Value::Object(settings), dialect::Purpose::Layer);
            split.problems = conversion
                .problems
                .iter()
                .map(ToString::to_string)
                .collect();
            split.moved = conversion.hooks;
        }
    }
    split
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
        let command = hook.get("command").and_then(Value::as_str);
        if command.is_some_and(dialect::is_relay_command) {
            continue;
        }
        let runs_command = hook.get("type").and_then(Value::as_str) == Some("command");
        if host == Host::Claude && !runs_command {
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

/// Appends each event's definitions to `into` (an identical definition already there is not
/// added twice); returns how many were added.
fn append_hooks(into: &mut Map<String, Value>, moved: &Map<String, Value>) -> usize {
    let mut added = 0;
    for (event, definitions) in moved {
        let Value::Array(definitions) = definitions else {
            continue;
        };
        let slot = into
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            *slot = Value::Array(Vec::new());
        }
        if let Value::Array(existing) = slot {
            for definition in definitions {
                if !existing.contains(definition) {
                    existing.push(definition.clone());
                    added += 1;
                }
            }
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

/// How long a relay entry lets the host wait, in milliseconds: the largest total of the hook
/// timeouts of one event (its hooks may run one after another), at least the host's default,
/// plus a margin.
fn relay_timeout_ms(hooks: &Map<String, Value>) -> u64 {
    let mut longest = HOST_DEFAULT_TIMEOUT_MS;
    for definitions in hooks.values() {
        let total: u64 = definitions
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|definition| definition.get("hooks")?.as_array())
            .flatten()
            .map(|hook| {
                hook.get("timeout")
                    .and_then(Value::as_f64)
                    .filter(|ms| ms.is_finite() && *ms > 0.0)
                    .map_or(hookd_core::DEFAULT_TIMEOUT_MS, |ms| ms.ceil() as u64)
            })
            .fold(0u64, u64::saturating_add);
        longest = longest.max(total);
    }
    longest.saturating_add(RELAY_MARGIN_MS)
}

/// The host's event names, in its settings' order.
fn relay_event_names(host: Host) -> Vec<&'static str> {
    match host {
        Host::Gemini => HookEventName::ALL
            .iter()
            .map(|event| event.as_str())
            .collect(),
        Host::Claude => dialect::CLAUDE_EVENTS.to_vec(),
    }
}

/// The host's new `hooks`: one relay entry per event.
fn relay_entries(host: Host, program: &str, timeout_ms: u64) -> Value {
    let program = hookd_core::command::shell_quote(program);
    let mut hooks = Map::new();
    for event in relay_event_names(host) {
        let definition = match host {
            Host::Gemini => json!({"hooks": [{
                "type": "command",
                "name": RELAY_NAME,
                "command": format!("{program} relay {event}"),
                "timeout": timeout_ms,
            }]}),
            Host::Claude => {
                let mut definition = Map::new();
                if matches!(event, "PreToolUse" | "PostToolUse") {
                    definition.insert("matcher".to_owned(), Value::from("*"));
                }
                definition.insert(
                    "hooks".to_owned(),
                    json!([{
                        "type": "command",
                        "command": format!("{program} relay {event} --dialect claude"),
                        "timeout": timeout_ms.div_ceil(1000),
                    }]),
                );
                Value::Object(definition)
            }
        };
        hooks.insert(event.to_owned(), Value::Array(vec![definition]));
    }
    Value::Object(hooks)
}

/// Reads a file; `None` when it does not exist.
fn read_file(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
    }
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

/// What installs of one host and scope changed, newest last.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Manifest {
    #[serde(default)]
    host: String,
    #[serde(default)]
    scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    project: Option<String>,
    #[serde(default)]
    installs: Vec<InstallRecord>,
    /// The state directories the first install created, deepest first: removed with the
    /// last uninstall when nothing else is in them.
    #[serde(default)]
    created_dirs: Vec<PathBuf>,
}

/// The files one install changed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct InstallRecord {
    files: Vec<BackedUpFile>,
}

/// One changed file: where its original bytes are and what the install wrote.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct BackedUpFile {
    path: PathBuf,
    /// The saved original's file name in the backup directory; `None`: it did not exist.
    original: Option<String>,
    /// The original's permission bits.
    #[serde(default)]
    mode: Option<u32>,
    /// SHA-256 of the bytes the install wrote.
    installed_sha256: String,
    /// Directories the install created for it, deepest first.
    #[serde(default)]
    created_dirs: Vec<PathBuf>,
}

impl Manifest {
    fn load(dir: &Path) -> anyhow::Result<Manifest> {
        let path = dir.join(MANIFEST);
        match read_file(&path)? {
            None => Ok(Manifest::default()),
            Some(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is damaged", path.display())),
        }
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

    #[test]
    fn relay_timeouts_cover_the_slowest_event() {
        let cases = [
            (json!({}), 70_000),
            (
                json!({"BeforeTool": [{"hooks": [{"timeout": 5000}, {"timeout": 90_000}]}]}),
                105_000,
            ),
            (
                json!({"AfterTool": [{"hooks": [{}]}, {"hooks": [{"timeout": 1000}]}]}),
                71_000,
            ),
        ];
        for (hooks, expected) in cases {
            let Value::Object(hooks) = hooks else {
                unreachable!()
            };
            assert_eq!(relay_timeout_ms(&hooks), expected, "{hooks:?}");
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
        let split = split_hooks(Host::Claude, &root);
        assert_eq!(
            Value::Object(split.kept.clone()),
            json!({
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this safe?"}]}],
                "PermissionRequest": [{"hooks": [{"type": "command", "command": "perm.sh"}]}]
            })
        );
        let moved = &split.moved["BeforeTool"][0];
        assert_eq!(moved["matcher"], json!("^run_shell_command$"), "{moved}");
        assert_eq!(moved["hooks"][0]["command"], json!("guard.sh"), "{moved}");
        assert_eq!(moved["hooks"][0]["timeout"], json!(5000), "{moved}");
        assert_eq!(moved["hooks"][0]["dialect"], json!("claude"), "{moved}");
        assert_eq!(moved["hooks"].as_array().map(Vec::len), Some(1), "{moved}");

        let mut relay = relay_entries(Host::Claude, "/opt/bin/hookctl", 70_000);
        assert_eq!(keep_in_host(&mut relay, split.kept), 2);
        let pre = &relay["PreToolUse"];
        assert_eq!(pre.as_array().map(Vec::len), Some(2), "{pre}");
        assert_eq!(
            pre[0]["hooks"][0]["command"],
            json!("/opt/bin/hookctl relay PreToolUse --dialect claude")
        );
        assert_eq!(pre[0]["hooks"][0]["timeout"], json!(70));
        assert_eq!(relay["Stop"][0].get("matcher"), None);
        assert!(relay.get("PermissionRequest").is_some());
    }

    #[test]
    fn moving_leaves_relay_entries_behind_and_appends_once() {
        let root = json!({"hooks": {
            "BeforeTool": [
                {"hooks": [{"type": "command", "command": "/usr/bin/hookctl relay BeforeTool", "name": "hookd-relay"}]},
                {"matcher": "x", "hooks": [{"type": "command", "command": "guard.sh"}]}
            ]
        }});
        let Value::Object(root) = root else {
            unreachable!()
        };
        let split = split_hooks(Host::Gemini, &root);
        assert!(split.problems.is_empty());
        assert!(split.kept.is_empty());
        let moved = split.moved;
        assert_eq!(
            Value::Object(moved.clone()),
            json!({"BeforeTool": [{"matcher": "x", "hooks": [{"type": "command", "command": "guard.sh"}]}]})
        );
        let mut into = Map::new();
        assert_eq!(append_hooks(&mut into, &moved), 1);
        assert_eq!(append_hooks(&mut into, &moved), 0);
        assert_eq!(into["BeforeTool"].as_array().map(Vec::len), Some(1));
    }
}
