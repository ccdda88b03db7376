//! Project-hook trust: which project hooks the user has reviewed, by content.
//!
//! Gemini CLI fingerprints a project hook by `"<name>:<command>"` and only warns, once, when a
//! fingerprint is new (spec §1.8). hookd keeps that as the `warn` policy and adds `require`,
//! under which an untrusted project hook is not run at all. Either way the fingerprint (the
//! [`TrustKey`]) also covers the hook's other settings that change what runs
//! ([`covered_settings`]: its `env`, ...) and the *contents* of the project files it runs or
//! may load, so editing any of them makes the hook untrusted again: a repository cannot swap
//! reviewed code behind an unchanged command line. What cannot be verified is part of the key
//! too ([`TrustKey::uncovered`]); such a key is only trusted explicitly (`--anyway`).
//!
//! Which files count is read from the command line and the hook's `env` ([`coverage`]): the
//! command is expanded as the runner would expand it (`$GEMINI_PROJECT_DIR` and friends), cut
//! into simple commands at `;`, `&&`, `||`, `|`, `&` and newlines, and of each simple command,
//! after assignments, `env` and wrappers (`timeout 5`, `nice`, `nohup`, ...), the program word
//! is taken when it is a path (`./hook.sh`), or, when the program is a known interpreter
//! (`bash`, `sh`, `node`, `python3`, `ruby`, `perl`, `deno run`, `bun`, `npx tsx`, ...), its
//! script argument ([`Entry`]), with the directory it imports from as a tree. Inline shell
//! code (`bash -c '...'`) and `source`/`.` are followed; interpreter preloads (`node -r`),
//! `python3 -m`/`-c` (the working directory's tree), code files named on the line and the
//! paths the `env` names (`BASH_ENV`, `PATH`, `PYTHONPATH`, ...) are covered as well. Only
//! paths under the project directory count: anything elsewhere belongs to the user. A program,
//! script or sourced file the shell would only know at run time (`$OTHER`, `$(...)`) is a
//! [`Gap`]. [`script_coverage`] reads a shell script's own text the same way.
//!
//! This module is pure: `hookd_settings::verify` reads the files and the loader passes their
//! digests in ([`CoveredFiles`], [`ScriptFile`]); the trust store is parsed from and rendered to text here
//! ([`TrustStore`]) and written by the daemon.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::command::{CommandVars, LineChars, ShellWord, expand_command, shell_quote};
use crate::model::HookConfig;

/// What the daemon does with a project hook that is not trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProjectHookPolicy {
    /// Run it, and say once that it is untrusted (Gemini CLI's behaviour).
    #[default]
    Warn,
    /// Do not run it; its record says which hook was skipped and how to trust it.
    Require,
}

impl ProjectHookPolicy {
    /// `"warn"` or `"require"`, as written on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectHookPolicy::Warn => "warn",
            ProjectHookPolicy::Require => "require",
        }
    }
}

impl fmt::Display for ProjectHookPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProjectHookPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<ProjectHookPolicy, String> {
        match text {
            "warn" => Ok(ProjectHookPolicy::Warn),
            "require" => Ok(ProjectHookPolicy::Require),
            other => Err(format!("expected \"warn\" or \"require\", not {other:?}")),
        }
    }
}

use crate::hooktrust::canonical_json;
pub use crate::hooktrust::{HookTrust, ScriptDigest, TrustGap, TrustKey};

/// One script file a project hook's command runs, as the loader found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptFile {
    /// The absolute path ([`script_paths`] gives it).
    pub path: PathBuf,
    /// The SHA-256 of its contents, or `None` when it is not a regular file that could be
    /// read (a missing file is still listed, so a watcher sees it appear).
    pub sha256: Option<String>,
}

/// What the registry needs to mark project hooks trusted or untrusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookTrustInput {
    /// The trust store's keys for this project directory.
    pub trusted: Vec<TrustKey>,
    /// The script files the project layer's commands run, as read from disk.
    pub scripts: Vec<ScriptFile>,
    /// What each project hook's fingerprint covers, as the loader read it; a hook without
    /// an entry here is keyed by the files of [`script_paths`] found in `scripts`.
    pub hooks: Vec<CoveredFiles>,
}

/// What the fingerprint of one command and environment covers, as read from disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoveredFiles {
    /// The hook's command.
    pub command: String,
    /// The hook's `env`.
    pub env: Vec<(String, String)>,
    /// Every covered file that exists, with its contents' digest, ordered by path.
    pub scripts: Vec<ScriptDigest>,
    /// What cannot be covered ([`Gap::text`]).
    pub uncovered: Vec<String>,
}

impl HookTrustInput {
    /// The trust state of a hook of the project layer.
    pub fn trust_for(&self, config: &HookConfig, project_dir: &Path) -> HookTrust {
        if !config.runs_process() {
            return HookTrust::NotRequired;
        }
        let key = self.key_for(config, project_dir);
        if self.trusted.contains(&key) {
            return HookTrust::Trusted { key };
        }
        let same = self.trusted.iter().find(|trusted| trusted.same_hook(&key));
        let gap = if !key.uncovered.is_empty() {
            TrustGap::Uncovered
        } else if let Some(same) = same {
            if same.settings == key.settings {
                TrustGap::ScriptChanged {
                    script: changed_script(&same.scripts, &key.scripts),
                }
            } else {
                TrustGap::SettingsChanged
            }
        } else {
            TrustGap::New
        };
        HookTrust::Untrusted { key, gap }
    }

    /// The key of a hook: its name, command and the digests of the script files that exist.
    pub fn key_for(&self, config: &HookConfig, project_dir: &Path) -> TrustKey {
        let command = config.command.clone().unwrap_or_default();
        let settings = covered_settings(config);
        let name = config.name.clone().unwrap_or_default();
        if let Some(covered) = self
            .hooks
            .iter()
            .find(|covered| covered.command == command && covered.env == config.env)
        {
            return TrustKey {
                name,
                command,
                settings,
                scripts: covered.scripts.clone(),
                uncovered: covered.uncovered.clone(),
            };
        }
        let scripts = script_paths(&command, project_dir)
            .into_iter()
            .filter_map(|path| {
                let file = self.scripts.iter().find(|file| file.path == path)?;
                Some(ScriptDigest {
                    path: relative_path(&path, project_dir)?,
                    sha256: file.sha256.clone()?,
                })
            })
            .collect();
        TrustKey {
            name,
            command,
            settings,
            scripts,
            uncovered: Vec::new(),
        }
    }
}

/// The SHA-256 of `bytes` as 64 lower-case hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The command line `hookctl` trusts a project's hooks with.
pub fn trust_command(project_dir: &str) -> String {
    let quoted = shell_quote(project_dir);
    format!("hookctl trust --cwd {quoted}")
}

/// The command line that trusts a project's hooks although part of what they run cannot
/// be verified.
pub fn trust_anyway_command(project_dir: &str) -> String {
    format!("{} --anyway", trust_command(project_dir))
}

/// The refusal of a project hook under `require` whose run-time files cannot all be verified
/// and that the user has not trusted anyway.
pub fn uncovered_message(display_name: &str, key: &TrustKey, project_dir: &str) -> String {
    format!(
        "project hook \"{display_name}\" was not run: what it runs cannot all be verified ({}) \
         (project_hooks = require); review it, then run `{}`",
        key.uncovered.join("; "),
        trust_anyway_command(project_dir)
    )
}

/// The refusal of an untrusted project hook under `require`, for its record's error.
pub fn refusal_message(display_name: &str, gap: &TrustGap, project_dir: &str) -> String {
    format!(
        "project hook \"{display_name}\" was not run: {} (project_hooks = require); review it, \
         then run `{}`",
        gap_text(gap),
        trust_command(project_dir)
    )
}

/// The refusal of a trusted project hook whose file changed after the registry was built.
pub fn changed_script_message(display_name: &str, script: &str, project_dir: &str) -> String {
    format!(
        "project hook \"{display_name}\" was not run: its script {script} changed since it was \
         trusted (project_hooks = require); review it, then run `{}`",
        trust_command(project_dir)
    )
}

/// The warning an untrusted project hook's first run carries under `warn`.
pub fn warning_message(display_name: &str, gap: &TrustGap, project_dir: &str) -> String {
    format!(
        "project hook \"{display_name}\" ran, but {} (project_hooks = warn); review it, then run \
         `{}`",
        gap_text(gap),
        trust_command(project_dir)
    )
}

fn gap_text(gap: &TrustGap) -> String {
    match gap {
        TrustGap::New => "it is not trusted".to_owned(),
        TrustGap::ScriptChanged { script } => {
            format!("its script {script} changed since it was trusted")
        }
        TrustGap::SettingsChanged => {
            "its settings (env, ...) changed since it was trusted".to_owned()
        }
        TrustGap::Uncovered => "what it runs cannot all be verified".to_owned(),
    }
}

/// The first script of `trusted` whose digest is not in `now` (else the first of `now` not in
/// `trusted`): the file a refusal of a changed script names.
pub fn changed_script(trusted: &[ScriptDigest], now: &[ScriptDigest]) -> String {
    let changed = trusted
        .iter()
        .find(|script| !now.contains(script))
        .or_else(|| now.iter().find(|script| !trusted.contains(script)));
    match changed {
        Some(script) => script.path.clone(),
        None => "(what it runs)".to_owned(),
    }
}

/// How a file a command runs is started; it decides how the runner can run it from the
/// bytes it verified (see [`Entry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// Run by its path as a program: its `#!` line decides (a binary has none).
    Program,
    /// Given to a shell (`bash s.sh`, `. lib.sh`).
    Shell,
    /// Given to Python (`python3 g.py`).
    Python,
    /// Given to another interpreter (`node`, `ruby`, ...).
    Other,
}

/// A project file a command runs: a program run by path or an interpreter's script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The absolute path.
    pub path: PathBuf,
    /// How it is started.
    pub kind: EntryKind,
    /// The byte range of its word in [`Coverage::expanded`], when the runner may replace the
    /// word to run verified bytes instead: only on the hook's own line (not inside
    /// `bash -c '...'` or a script) and not after `--`.
    pub span: Option<(usize, usize)>,
}

/// Something a command runs that the fingerprint cannot cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// What it is, for the user: `a file sourced by .gemini/hooks/g.sh is computed at run time`.
    pub text: String,
    /// A file that, when it is covered anyway, closes the gap: the usual target of a computed
    /// `source` (`source "$(dirname "$0")/lib.sh"` names `lib.sh` next to the script).
    pub unless_covered: Option<PathBuf>,
}

/// What the fingerprint of one hook must cover, read from its command line and environment.
///
/// Paths are absolute and inside the project directory; everything outside it belongs to the
/// user and is covered by the command line alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    /// The command line after `$GEMINI_PROJECT_DIR`-style expansion, as the shell gets it.
    pub expanded: String,
    /// The files the command runs, in command order, each once.
    pub entries: Vec<Entry>,
    /// Other project paths the command or its environment names (`node -r ./pre.js`,
    /// `BASH_ENV`, a `PATH` entry): a file is covered as it is, a directory as a tree.
    pub paths: Vec<PathBuf>,
    /// Directories whose every file is covered: where an interpreter imports from (the
    /// directory of each script, the working directory for `python3 -m`).
    pub trees: Vec<PathBuf>,
    /// Directories where Node.js would look for `node_modules`: one that exists there cannot
    /// be covered.
    pub node_dirs: Vec<PathBuf>,
    /// What cannot be covered.
    pub gaps: Vec<Gap>,
}

impl Coverage {
    fn add_entry(&mut self, path: PathBuf, kind: EntryKind, span: Option<(usize, usize)>) {
        if !self.entries.iter().any(|entry| entry.path == path) {
            self.entries.push(Entry { path, kind, span });
        }
    }

    fn add_path(&mut self, path: PathBuf) {
        if !self.paths.contains(&path) {
            self.paths.push(path);
        }
    }

    fn add_tree(&mut self, dir: PathBuf) {
        if !self.trees.contains(&dir) {
            self.trees.push(dir);
        }
    }

    fn add_gap(&mut self, text: String, unless_covered: Option<PathBuf>) {
        let gap = Gap {
            text,
            unless_covered,
        };
        if !self.gaps.contains(&gap) {
            self.gaps.push(gap);
        }
    }
}

/// The script files under `project_dir` that `command` runs, as absolute paths, in command
/// order, each once (see the module documentation for the rules).
pub fn script_paths(command: &str, project_dir: &Path) -> Vec<PathBuf> {
    let project_text = normalize(project_dir).to_string_lossy().into_owned();
    let vars = CommandVars {
        project_dir: &project_text,
        plans_dir: "",
        session_id: "",
    };
    coverage(command, &[], &vars)
        .entries
        .into_iter()
        .map(|entry| entry.path)
        .collect()
}

/// What the fingerprint of a hook running `command` with `env` must cover, with the command
/// expanded for `vars` (whose `project_dir` is the project directory).
pub fn coverage(command: &str, env: &[(String, String)], vars: &CommandVars<'_>) -> Coverage {
    let project = normalize(Path::new(vars.project_dir));
    let project_text = project.to_string_lossy().into_owned();
    let expanded = expand_command(command, vars);
    let mut cov = Coverage::default();
    let context = Context {
        project: &project,
        project_text: &project_text,
        rewritable: true,
        script: None,
    };
    analyze_line(&expanded, &context, &mut cov, 0);
    for (name, value) in env {
        env_paths(name, value, &context, &mut cov);
    }
    cov.expanded = expanded;
    cov
}

/// What a script file itself runs when a shell reads it: the files it sources (`.`,
/// `source`) and the project programs and scripts its commands start, as for a hook's line.
/// `script` is the script's absolute path; the shell's working directory is the project.
pub fn script_coverage(text: &str, script: &Path, project_dir: &Path) -> Coverage {
    let project = normalize(project_dir);
    let project_text = project.to_string_lossy().into_owned();
    let mut cov = Coverage::default();
    let context = Context {
        project: &project,
        project_text: &project_text,
        rewritable: false,
        script: Some(script),
    };
    analyze_line(text, &context, &mut cov, 1);
    cov
}

/// The interpreter a `#!` line names: `Shell`, `Python`, `Other`, or `None` without one.
pub fn shebang_kind(first_line: &[u8]) -> Option<(EntryKind, Vec<String>)> {
    let line = first_line.strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line);
    let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    let (program, args) = words.split_first()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    let interpreter_name = if name == "env" {
        args.iter()
            .find(|arg| !arg.starts_with('-'))
            .map(|arg| arg.as_str())?
    } else {
        name
    };
    let kind = match interpreter(interpreter_name) {
        Some(found) if std::ptr::eq(found, &SHELL) => EntryKind::Shell,
        Some(found) if std::ptr::eq(found, &PYTHON) => EntryKind::Python,
        _ => EntryKind::Other,
    };
    Some((kind, words))
}

/// Where the analysis is: the project, and whether word spans may be rewritten.
struct Context<'a> {
    project: &'a Path,
    project_text: &'a str,
    rewritable: bool,
    /// The script being read, when reading one (for messages and `$0`-relative sources).
    script: Option<&'a Path>,
}

impl Context<'_> {
    /// `word` as a path inside the project (relative words are relative to the project,
    /// the hook's working directory); `None` when it is the project itself or outside it.
    fn project_path(&self, word: &str) -> Option<PathBuf> {
        let path = normalize(&self.project.join(word));
        (path != self.project && path.starts_with(self.project)).then_some(path)
    }

    fn where_(&self) -> String {
        match self.script {
            Some(script) => format!(
                "{} ",
                relative_path(script, self.project).unwrap_or_else(|| script.display().to_string())
            ),
            None => String::new(),
        }
    }
}

/// How deep `bash -c '...'` and sourced scripts are followed.
const MAX_DEPTH: usize = 3;

fn analyze_line(line: &str, context: &Context<'_>, cov: &mut Coverage, depth: usize) {
    let mut dollar = |chars: &mut LineChars<'_>, word: &mut Option<String>, unknown: &mut bool| {
        expand_dollar(chars, word, unknown, context.project_text);
    };
    for words in crate::command::split_commands(line, &mut dollar) {
        analyze_command(&words, context, cov, depth);
    }
}

/// Whether a known word names code by its extension (a script, a module, a library, a
/// `jq` program): such a word anywhere on a hook's line is covered, whatever reads it. Other
/// paths (a log, a config file) are data and are not.
fn names_code(word: &str) -> bool {
    const EXTENSIONS: [&str; 22] = [
        ".sh", ".bash", ".zsh", ".py", ".pyc", ".pth", ".js", ".mjs", ".cjs", ".ts", ".mts",
        ".cts", ".tsx", ".jsx", ".node", ".rb", ".pl", ".pm", ".php", ".lua", ".jq", ".so",
    ];
    let word = word.split_once('=').map_or(word, |(_, value)| value);
    EXTENSIONS.iter().any(|ext| word.ends_with(ext))
}

/// Whether a known word looks like a path: it has a `/`, or names code.
fn looks_like_path(word: &str) -> bool {
    let word = word.split_once('=').map_or(word, |(_, value)| value);
    word.contains('/') || names_code(word)
}

/// Wrappers that run the rest of their words as a command, with their options that take a
/// separate value and how many positional words they take first (`timeout 5`).
const WRAPPERS: [(&str, &[&str], usize); 9] = [
    ("timeout", &["-s", "--signal", "-k", "--kill-after"], 1),
    ("nice", &["-n", "--adjustment"], 0),
    ("nohup", &[], 0),
    ("setsid", &[], 0),
    ("stdbuf", &["-i", "-o", "-e"], 0),
    ("ionice", &["-c", "-n", "-p", "-P", "-u"], 0),
    ("time", &["-f", "-o"], 0),
    ("chronic", &[], 0),
    (
        "xargs",
        &["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"],
        0,
    ),
];

fn analyze_command(words: &[ShellWord], context: &Context<'_>, cov: &mut Coverage, depth: usize) {
    // Every project file of code named anywhere on the hook's line is covered, whatever
    // reads it. Inside a script, only what it sources and starts counts: the files it
    // writes (logs, marks) must not change its key.
    for word in words
        .iter()
        .filter(|word| !word.unknown && context.script.is_none())
    {
        if names_code(&word.text) {
            let text = word
                .text
                .split_once('=')
                .map_or(word.text.as_str(), |(_, v)| v);
            if let Some(path) = context.project_path(text) {
                cov.add_path(path);
            }
        }
    }
    let mut rest = words;
    // Assignments, prefix words, `env` and wrappers in front of the program.
    loop {
        let Some((first, tail)) = rest.split_first() else {
            return;
        };
        if first.unknown {
            break;
        }
        let text = first.text.as_str();
        let name = text.rsplit('/').next().unwrap_or(text);
        let is_assignment = text
            .split_once('=')
            .is_some_and(|(name, _)| is_identifier(name));
        if is_assignment || PREFIX_WORDS.contains(&text) {
            rest = tail;
        } else if name == "env" {
            rest = skip_options(tail, &["-u", "--unset", "-C", "--chdir", "-S"], 0);
        } else if let Some((_, with_value, positional)) =
            WRAPPERS.iter().find(|(wrapper, _, _)| *wrapper == name)
        {
            rest = skip_options(tail, with_value, *positional);
        } else {
            break;
        }
    }
    let Some((program, args)) = rest.split_first() else {
        return;
    };
    if program.unknown {
        cov.add_gap(
            format!("{}runs a program named at run time", context.where_()),
            None,
        );
        return;
    }
    let mut program_text = program.text.as_str();
    let mut args = args;
    if program_text == "." || program_text == "source" {
        match args.first() {
            Some(word) if !word.unknown => {
                if let Some(path) = context.project_path(&word.text) {
                    cov.add_entry(path, EntryKind::Shell, None);
                }
            }
            Some(word) => {
                let hint = context
                    .script
                    .and_then(Path::parent)
                    .zip(word.text.rsplit('/').next().filter(|name| !name.is_empty()))
                    .map(|(dir, name)| dir.join(name));
                cov.add_gap(
                    format!("{}sources a file named at run time", context.where_()),
                    hint,
                );
            }
            None => {}
        }
        return;
    }
    let name = program_text.rsplit('/').next().unwrap_or(program_text);
    if RUNNERS.contains(&name) {
        // `npx [options] <program> ...`: the program must be an interpreter, anything else
        // is a package, not a project file.
        let after = skip_options(args, &[], 0);
        let Some((runner_program, runner_args)) = after.split_first() else {
            return;
        };
        if runner_program.unknown || interpreter(&runner_program.text).is_none() {
            return;
        }
        program_text = runner_program.text.as_str();
        args = runner_args;
    }
    let span = |word: &ShellWord| context.rewritable.then_some(word.span);
    let Some(found) = interpreter(program_text) else {
        // The shell looks a word without a slash up in PATH, never in the project.
        if program_text.contains('/')
            && let Some(path) = context.project_path(program_text)
        {
            if let Some(dir) = path.parent() {
                cov.add_tree(dir.to_owned());
            }
            cov.add_entry(path, EntryKind::Program, span(program));
        }
        return;
    };
    let call = interpreter_call(found, args);
    for preload in &call.preloads {
        match preload {
            Some(text) if looks_like_path(text) => {
                if let Some(path) = context.project_path(text) {
                    cov.add_path(path);
                }
            }
            // A package name: resolved from `node_modules` (see `node_dirs`).
            Some(_) => {}
            None => cov.add_gap(
                format!("{}preloads a file named at run time", context.where_()),
                None,
            ),
        }
    }
    let kind = if std::ptr::eq(found, &SHELL) {
        EntryKind::Shell
    } else if std::ptr::eq(found, &PYTHON) {
        EntryKind::Python
    } else {
        EntryKind::Other
    };
    let is_node = std::ptr::eq(found, &NODE) || std::ptr::eq(found, &BUN);
    match call.invocation {
        Invocation::Script(index) => {
            let word = &args[index];
            if word.unknown {
                cov.add_gap(
                    format!("{}runs a script named at run time", context.where_()),
                    None,
                );
                return;
            }
            let Some(path) = context.project_path(&word.text) else {
                return;
            };
            let dir = path.parent().map(Path::to_owned);
            if let Some(dir) = dir.clone()
                && !call.isolated
            {
                cov.add_tree(dir);
            }
            if is_node && let Some(dir) = dir {
                node_lookup(&dir, context.project, cov);
            }
            let span = if call.after_dashes { None } else { span(word) };
            cov.add_entry(path, kind, span);
        }
        Invocation::Inline(Some(index)) if kind == EntryKind::Shell => {
            let word = &args[index];
            if word.unknown {
                cov.add_gap(
                    format!("{}runs shell code made at run time", context.where_()),
                    None,
                );
            } else if depth < MAX_DEPTH {
                let inner = Context {
                    rewritable: false,
                    ..*context
                };
                analyze_line(&word.text, &inner, cov, depth + 1);
            } else {
                cov.add_gap(
                    format!("{}nests `sh -c` too deeply to follow", context.where_()),
                    None,
                );
            }
        }
        Invocation::Inline(_) | Invocation::Module => {
            // Inline code is on the command line; what it imports comes from the working
            // directory (Python puts it first on `sys.path` for `-c` and `-m`, Node.js
            // resolves `require` and packages from it).
            if kind == EntryKind::Python && !call.isolated {
                cov.add_tree(context.project.to_owned());
            }
            if is_node {
                node_lookup(context.project, context.project, cov);
            }
        }
        Invocation::Nothing => {}
    }
}

/// Notes every directory from `dir` up to the project where Node.js looks for packages.
fn node_lookup(dir: &Path, project: &Path, cov: &mut Coverage) {
    let mut dir = Some(dir);
    while let Some(current) = dir {
        if !current.starts_with(project) {
            break;
        }
        if !cov.node_dirs.iter().any(|known| known == current) {
            cov.node_dirs.push(current.to_owned());
        }
        dir = current.parent();
    }
}

/// The project paths an environment variable of the hook names: any part of its value
/// (split at `:`, `;`, `,`, `=` and whitespace) that looks like a path, and the whole value
/// of the variables that name one file (`BASH_ENV`, `ENV`, `PYTHONSTARTUP`, `LD_PRELOAD`).
fn env_paths(name: &str, value: &str, context: &Context<'_>, cov: &mut Coverage) {
    // The shell expands `BASH_ENV`, and hookd puts the project directory variables in the
    // environment, so they are read as the project here.
    let mut text = value.to_owned();
    for var in PROJECT_DIR_VARS {
        text = text
            .replace(&format!("${{{var}}}"), context.project_text)
            .replace(&format!("${var}"), context.project_text);
    }
    let single_file = matches!(name, "BASH_ENV" | "ENV" | "PYTHONSTARTUP" | "LD_PRELOAD");
    let is_search_path = matches!(
        name,
        "PATH" | "PYTHONPATH" | "NODE_PATH" | "PERL5LIB" | "RUBYLIB" | "LD_LIBRARY_PATH"
    );
    for part in text.split([':', ';', ',', '=', ' ', '\t', '\n']) {
        if part.is_empty() {
            continue;
        }
        if part.contains('$') || part.contains('`') {
            if single_file || is_search_path {
                cov.add_gap(
                    format!("its environment variable {name} names a path made at run time"),
                    None,
                );
            }
            continue;
        }
        if (single_file || is_search_path || names_code(part) || part == ".")
            && let Some(path) = context
                .project_path(part)
                .or_else(|| (part == "." || part == "./").then(|| context.project.to_owned()))
        {
            cov.add_path(path);
        }
    }
}

/// The words after a wrapper's options and `positional` leading words.
fn skip_options<'w>(
    mut rest: &'w [ShellWord],
    with_value: &[&str],
    positional: usize,
) -> &'w [ShellWord] {
    while let Some((option, tail)) = rest.split_first() {
        if option.unknown || !option.text.starts_with('-') || option.text == "-" {
            break;
        }
        rest = tail;
        if option.text == "--" {
            break;
        }
        if with_value.contains(&option.text.as_str()) && !rest.is_empty() {
            rest = &rest[1..];
        }
    }
    let mut positional = positional;
    while positional > 0 && !rest.is_empty() {
        rest = &rest[1..];
        positional -= 1;
    }
    rest
}

fn push(word: &mut Option<String>, c: char) {
    word.get_or_insert_with(String::new).push(c);
}

/// The variables whose value is the project directory in a hook's environment.
const PROJECT_DIR_VARS: [&str; 3] = ["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR", "GEMINI_CWD"];

/// Expands a `$` in a word: the project directory variables become the directory; anything
/// else makes the word unknowable.
fn expand_dollar(
    chars: &mut LineChars<'_>,
    word: &mut Option<String>,
    unknown: &mut bool,
    project_dir: &str,
) {
    let mut name = String::new();
    if chars.peek().is_some_and(|(_, c)| *c == '{') {
        chars.next();
        for (_, next) in chars.by_ref() {
            if next == '}' {
                break;
            }
            name.push(next);
        }
    } else {
        while let Some((_, next)) = chars.peek().copied() {
            if next.is_ascii_alphanumeric() || next == '_' {
                name.push(next);
                chars.next();
            } else {
                break;
            }
        }
        if name.is_empty() {
            // `$(`: a command substitution; a lone `$` is literal, as in the shell.
            if chars.peek().is_some_and(|(_, c)| *c == '(') {
                *unknown = true;
            }
            push(word, '$');
            return;
        }
    }
    if PROJECT_DIR_VARS.contains(&name.as_str()) {
        word.get_or_insert_with(String::new).push_str(project_dir);
    } else {
        *unknown = true;
        word.get_or_insert_with(String::new);
    }
}

/// Reserved words and prefixes that may start a simple command without being its program.
const PREFIX_WORDS: [&str; 15] = [
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "exec", "command",
    "nohup", "builtin", "time",
];

/// How one interpreter takes its script.
struct Interpreter {
    /// Options that take inline code: with one of them there is no script file.
    inline: &'static [&'static str],
    /// Options that name a module to run instead of a script (`python3 -m`).
    module: &'static [&'static str],
    /// Options whose value is a file or package loaded before the script (`node -r`).
    preload: &'static [&'static str],
    /// Options followed by a separate value word.
    with_value: &'static [&'static str],
    /// Option letters that keep the script's directory and the working directory off the
    /// import path (`python3 -I`, `-P`).
    isolating: &'static [char],
    /// A subcommand that comes before the script (`deno run`, `bun run`).
    subcommand: Option<&'static str>,
    /// Whether short options may be bundled (`bash -ec`): an inline option letter anywhere
    /// in a bundle counts.
    bundled: bool,
}

const SHELL: Interpreter = Interpreter {
    inline: &["-c"],
    module: &[],
    preload: &["--rcfile", "--init-file"],
    with_value: &["-o", "+o", "-O", "+O"],
    isolating: &[],
    subcommand: None,
    bundled: true,
};

const NODE: Interpreter = Interpreter {
    inline: &["-e", "--eval", "-p", "--print"],
    module: &[],
    preload: &[
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--env-file",
    ],
    with_value: &["--conditions", "-C"],
    isolating: &[],
    subcommand: None,
    bundled: false,
};

const PYTHON: Interpreter = Interpreter {
    inline: &["-c"],
    module: &["-m"],
    preload: &[],
    with_value: &["-W", "-X", "--check-hash-based-pycs"],
    isolating: &['I', 'P'],
    subcommand: None,
    bundled: true,
};

const RUBY_PERL: Interpreter = Interpreter {
    inline: &["-e", "-E"],
    module: &[],
    preload: &["-r", "-I"],
    with_value: &[],
    isolating: &[],
    subcommand: None,
    bundled: false,
};

const PHP: Interpreter = Interpreter {
    inline: &["-r"],
    module: &[],
    preload: &["-c"],
    with_value: &["-d"],
    isolating: &[],
    subcommand: None,
    bundled: false,
};

const LUA: Interpreter = Interpreter {
    inline: &["-e"],
    module: &[],
    preload: &["-l"],
    with_value: &[],
    isolating: &[],
    subcommand: None,
    bundled: false,
};

const DENO: Interpreter = Interpreter {
    inline: &["eval"],
    module: &[],
    preload: &["--config", "-c", "--import-map", "--preload"],
    with_value: &[],
    isolating: &[],
    subcommand: Some("run"),
    bundled: false,
};

const BUN: Interpreter = Interpreter {
    inline: &["-e", "--eval", "-p", "--print"],
    module: &[],
    preload: &["-r", "--preload"],
    with_value: &["--cwd"],
    isolating: &[],
    subcommand: Some("run"),
    bundled: false,
};

/// The interpreter a program word names, by its file name.
fn interpreter(program: &str) -> Option<&'static Interpreter> {
    let name = program.rsplit('/').next().unwrap_or(program);
    let versioned = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
    };
    Some(match name {
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "fish" => &SHELL,
        "node" | "nodejs" | "tsx" | "ts-node" => &NODE,
        "ruby" | "perl" => &RUBY_PERL,
        "php" => &PHP,
        "lua" | "luajit" => &LUA,
        "deno" => &DENO,
        "bun" => &BUN,
        _ if versioned("python") || versioned("pypy") => &PYTHON,
        _ => return None,
    })
}

/// Package runners whose next word is the program to run (`npx tsx hook.ts`).
const RUNNERS: [&str; 3] = ["npx", "bunx", "pnpx"];

/// What an interpreter is asked to run.
enum Invocation {
    /// The script at this index of its arguments.
    Script(usize),
    /// Inline code, at this index when it is a separate word.
    Inline(Option<usize>),
    /// A module found on its import path.
    Module,
    /// Nothing that names a file (`node` alone reads stdin).
    Nothing,
}

/// How an interpreter is called: what it runs and what it loads first.
struct InterpreterCall {
    invocation: Invocation,
    /// The values of preload options; `None` for one named at run time.
    preloads: Vec<Option<String>>,
    /// Whether the import path leaves out the script's and the working directory.
    isolated: bool,
    /// Whether the script came after `--`.
    after_dashes: bool,
}

/// Reads an interpreter's arguments.
fn interpreter_call(interpreter: &Interpreter, args: &[ShellWord]) -> InterpreterCall {
    let mut call = InterpreterCall {
        invocation: Invocation::Nothing,
        preloads: Vec::new(),
        isolated: false,
        after_dashes: false,
    };
    let mut subcommand_seen = interpreter.subcommand.is_none();
    let mut index = 0;
    while index < args.len() {
        let word = &args[index];
        if word.unknown {
            // An option or script named at run time: nothing certain can be said.
            call.invocation = Invocation::Script(index);
            return call;
        }
        let text = word.text.as_str();
        if interpreter.inline.contains(&text) {
            call.invocation = Invocation::Inline((index + 1 < args.len()).then_some(index + 1));
            return call;
        }
        if interpreter.module.contains(&text) {
            call.invocation = Invocation::Module;
            return call;
        }
        if text == "--" {
            if index + 1 < args.len() {
                call.invocation = Invocation::Script(index + 1);
                call.after_dashes = true;
            }
            return call;
        }
        if text.starts_with('-') || text.starts_with('+') {
            let (option, inline_value) = match text.split_once('=') {
                Some((option, value)) => (option, Some(value)),
                None => (text, None),
            };
            if interpreter.bundled && !text.starts_with("--") && text.len() > 2 {
                let letters = &text[1..];
                if letters.chars().any(|c| interpreter.isolating.contains(&c)) {
                    call.isolated = true;
                }
                let bundled_inline = interpreter
                    .inline
                    .iter()
                    .chain(interpreter.module)
                    .filter_map(|inline| inline.strip_prefix('-'))
                    .any(|letter| letters.contains(letter));
                if bundled_inline {
                    call.invocation =
                        if interpreter.module.iter().any(|m| letters.contains(&m[1..])) {
                            Invocation::Module
                        } else {
                            Invocation::Inline((index + 1 < args.len()).then_some(index + 1))
                        };
                    return call;
                }
            } else if text.len() == 2
                && text
                    .chars()
                    .nth(1)
                    .is_some_and(|c| interpreter.isolating.contains(&c))
            {
                call.isolated = true;
            }
            if interpreter.preload.contains(&option) {
                match inline_value {
                    Some(value) => call.preloads.push(Some(value.to_owned())),
                    None => {
                        index += 1;
                        if let Some(value) = args.get(index) {
                            call.preloads
                                .push((!value.unknown).then(|| value.text.clone()));
                        }
                    }
                }
            } else if let Some(attached) = interpreter
                .preload
                .iter()
                .filter(|preload| preload.len() == 2)
                .find_map(|preload| text.strip_prefix(preload))
                .filter(|value| !value.is_empty() && inline_value.is_none())
            {
                // `-r./pre.js`, `-Ilib`.
                call.preloads.push(Some(attached.to_owned()));
            } else if interpreter.with_value.contains(&option) && inline_value.is_none() {
                index += 1;
            }
            index += 1;
            continue;
        }
        if !subcommand_seen && Some(text) == interpreter.subcommand {
            subcommand_seen = true;
            index += 1;
            continue;
        }
        call.invocation = Invocation::Script(index);
        return call;
    }
    call
}

fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `path` relative to `project_dir` with `/` separators; `None` when it is not under it.
pub fn relative_path(path: &Path, project_dir: &Path) -> Option<String> {
    let relative = path.strip_prefix(normalize(project_dir)).ok()?;
    let parts: Vec<String> = relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `path` with `.` and `..` components resolved lexically (symlinks are not followed).
pub fn normalize(path: &Path) -> PathBuf {
    let mut normalized = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normalized.pop();
            }
            other => normalized.push(other.as_os_str()),
        }
    }
    normalized
}

/// The keys of a hook that do not change what runs, and so are left out of its trust key:
/// its name and command (which the key holds on their own), its type, and what only shapes
/// how long it may run and how its answer is read.
const NOT_RUN_KEYS: [&str; 6] = [
    "name",
    "command",
    "type",
    "description",
    "timeout",
    "on_failure",
];

/// Every other key of the hook (`env`, and any key a later version reads, such as `mode` or
/// `drop_fields`) as canonical JSON (object keys sorted at every level), or `""` when it has
/// none: a change to any of them needs the user's trust again.
pub fn covered_settings(config: &HookConfig) -> String {
    let covered: Map<String, Value> = config
        .raw
        .iter()
        .filter(|(key, _)| !NOT_RUN_KEYS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    settings_text(&covered)
}

/// A key's settings object as [`TrustKey::settings`] holds it: canonical JSON, `""` when
/// empty.
pub fn settings_text(settings: &Map<String, Value>) -> String {
    if settings.is_empty() {
        return String::new();
    }
    canonical_json(&Value::Object(settings.clone()))
}

/// The trust store: the keys trusted per project directory.
///
/// On disk it is one JSON object, `{"<absolute project dir>": [<key>, ...]}`, each key as
/// [`TrustKey::to_json`] writes it, pretty-printed with two spaces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustStore {
    projects: BTreeMap<String, Vec<TrustKey>>,
}

/// Why a trust store's text cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustStoreError {
    /// The text is not JSON.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// What the parser said.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The JSON has another shape.
    #[error("{0}")]
    Shape(String),
}

impl TrustStore {
    /// Parses the store's text; an empty (or blank) text is an empty store.
    pub fn parse(text: &str) -> Result<TrustStore, TrustStoreError> {
        if text.trim().is_empty() {
            return Ok(TrustStore::default());
        }
        let root: Value = serde_json::from_str(text).map_err(|err| TrustStoreError::Json {
            message: err.to_string(),
            line: err.line(),
            column: err.column(),
        })?;
        let Value::Object(root) = root else {
            return Err(TrustStoreError::Shape(
                "the trust store must be a JSON object of project directories".to_owned(),
            ));
        };
        let mut store = TrustStore::default();
        for (project, keys) in root {
            let Value::Array(keys) = keys else {
                return Err(TrustStoreError::Shape(format!(
                    "the entry of {project:?} must be an array of trusted hooks"
                )));
            };
            let mut parsed = Vec::with_capacity(keys.len());
            for (index, key) in keys.iter().enumerate() {
                let key = TrustKey::from_json(key).ok_or_else(|| {
                    TrustStoreError::Shape(format!(
                        "trusted hook {index} of {project:?} must be an object with string \
                         \"name\" and \"command\" and \"scripts\" of {{\"path\", \"sha256\"}}"
                    ))
                })?;
                if !parsed.contains(&key) {
                    parsed.push(key);
                }
            }
            store.projects.insert(project, parsed);
        }
        Ok(store)
    }

    /// The store as its file's text: pretty JSON and a final newline.
    pub fn to_text(&self) -> String {
        let mut root = Map::new();
        for (project, keys) in &self.projects {
            root.insert(
                project.clone(),
                Value::Array(keys.iter().map(TrustKey::to_json).collect()),
            );
        }
        let mut text = serde_json::to_string_pretty(&Value::Object(root)).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The keys trusted for `project_dir` (as the registry names it).
    pub fn keys(&self, project_dir: &str) -> &[TrustKey] {
        self.projects.get(project_dir).map_or(&[], Vec::as_slice)
    }

    /// Every project with trusted hooks, with its keys, ordered by directory.
    pub fn projects(&self) -> impl Iterator<Item = (&str, &[TrustKey])> {
        self.projects
            .iter()
            .map(|(project, keys)| (project.as_str(), keys.as_slice()))
    }

    /// Trusts `keys` for `project_dir`. A key replaces the trusted key of the same name and
    /// command (so an old version of a script is no longer trusted). Returns how many keys
    /// were not trusted before.
    pub fn trust(&mut self, project_dir: &str, keys: &[TrustKey]) -> usize {
        let trusted = self.projects.entry(project_dir.to_owned()).or_default();
        let mut added = 0;
        for key in keys {
            if trusted.contains(key) {
                continue;
            }
            trusted.retain(|old| !old.same_hook(key));
            trusted.push(key.clone());
            added += 1;
        }
        if trusted.is_empty() {
            self.projects.remove(project_dir);
        }
        added
    }

    /// Forgets every key of `project_dir`; returns how many there were.
    pub fn untrust(&mut self, project_dir: &str) -> usize {
        self.projects
            .remove(project_dir)
            .map_or(0, |keys| keys.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HookType;

    const PROJECT: &str = "/srv/p";

    fn check_scripts(command: &str, expected: &[&str]) {
        let got = script_paths(command, Path::new(PROJECT));
        let expected: Vec<PathBuf> = expected.iter().map(PathBuf::from).collect();
        assert_eq!(got, expected, "{command}");
    }

    #[test]
    fn script_paths_follow_the_first_word_and_interpreters() {
        let cases: &[(&str, &[&str])] = &[
            // The program itself, when it is a path.
            ("./guard.sh", &["/srv/p/guard.sh"]),
            (
                ".gemini/hooks/guard.py --strict",
                &["/srv/p/.gemini/hooks/guard.py"],
            ),
            (
                "$GEMINI_PROJECT_DIR/.gemini/hooks/a.sh",
                &["/srv/p/.gemini/hooks/a.sh"],
            ),
            ("\"$CLAUDE_PROJECT_DIR\"/hooks/a.sh", &["/srv/p/hooks/a.sh"]),
            ("${GEMINI_PROJECT_DIR}/a.sh x", &["/srv/p/a.sh"]),
            ("\"${GEMINI_CWD}/a b.sh\"", &["/srv/p/a b.sh"]),
            ("/srv/p/bin/x", &["/srv/p/bin/x"]),
            ("'./it'\\''s.sh'", &["/srv/p/it's.sh"]),
            // Interpreters and their script argument.
            (
                "bash .gemini/hooks/guard.sh",
                &["/srv/p/.gemini/hooks/guard.sh"],
            ),
            ("sh -e -x ./a.sh arg", &["/srv/p/a.sh"]),
            ("bash -o pipefail a.sh", &["/srv/p/a.sh"]),
            (
                "/usr/bin/python3 -u hooks/check.py",
                &["/srv/p/hooks/check.py"],
            ),
            (
                "python3.12 -W ignore hooks/check.py",
                &["/srv/p/hooks/check.py"],
            ),
            ("node --import tsx hooks/gate.ts", &["/srv/p/hooks/gate.ts"]),
            ("node --require=x hooks/gate.js", &["/srv/p/hooks/gate.js"]),
            (
                "deno run --allow-read hooks/gate.ts",
                &["/srv/p/hooks/gate.ts"],
            ),
            ("bun run hooks/gate.ts", &["/srv/p/hooks/gate.ts"]),
            ("bun hooks/gate.ts", &["/srv/p/hooks/gate.ts"]),
            ("npx -y tsx hooks/gate.ts", &["/srv/p/hooks/gate.ts"]),
            ("ruby -w hooks/r.rb", &["/srv/p/hooks/r.rb"]),
            ("perl hooks/p.pl", &["/srv/p/hooks/p.pl"]),
            ("env FOO=1 python3 x.py", &["/srv/p/x.py"]),
            ("FOO=1 BAR=2 ./a.sh", &["/srv/p/a.sh"]),
            ("exec ./a.sh", &["/srv/p/a.sh"]),
            ("bash -- -a.sh", &["/srv/p/-a.sh"]),
            // Every simple command counts, each file once.
            ("cd \"$GEMINI_PROJECT_DIR\" && ./a.sh", &["/srv/p/a.sh"]),
            ("./a.sh | ./b.sh; ./a.sh", &["/srv/p/a.sh", "/srv/p/b.sh"]),
            ("./a.sh 2>/dev/null >> log.txt < in.txt", &["/srv/p/a.sh"]),
            ("(./a.sh) & ./b.sh", &["/srv/p/a.sh", "/srv/p/b.sh"]),
            ("./a.sh # ./b.sh", &["/srv/p/a.sh"]),
            // Wrappers are looked through; inline shell code is read as a command line.
            ("timeout 5 ./s.sh", &["/srv/p/s.sh"]),
            ("timeout -k 1 5s nice -n 5 ./s.sh", &["/srv/p/s.sh"]),
            ("nohup setsid stdbuf -o L ./s.sh", &["/srv/p/s.sh"]),
            ("env -u X Y=1 ./s.sh", &["/srv/p/s.sh"]),
            ("bash -c './a.sh'", &["/srv/p/a.sh"]),
            ("sh -ec 'bash x.sh'", &["/srv/p/x.sh"]),
            (". ./lib.sh && ./a.sh", &["/srv/p/lib.sh", "/srv/p/a.sh"]),
            ("source lib.sh", &["/srv/p/lib.sh"]),
            // Inline code, PATH lookups and files outside the project name no script.
            ("bash -ec 'echo hi'", &[]),
            ("python3 -c 'print(1)'", &[]),
            ("python3 -m tool", &[]),
            ("node -e 'x()'", &[]),
            ("deno eval 'x'", &[]),
            ("npx eslint .", &[]),
            ("guard.sh", &[]),
            ("jq -r .tool_name", &[]),
            ("echo '{\"decision\":\"allow\"}'", &[]),
            ("/usr/local/bin/guard", &[]),
            ("../outside.sh", &[]),
            ("./a/../../outside.sh", &[]),
            ("$HOME/hooks/a.sh", &[]),
            ("~/hooks/a.sh", &[]),
            ("./hooks/*.sh", &[]),
            ("$(pwd)/a.sh", &[]),
            ("bash $SCRIPT", &[]),
            (".", &[]),
            ("", &[]),
        ];
        for (command, expected) in cases {
            check_scripts(command, expected);
        }
    }

    /// What [`coverage`] finds, relative to the project: entries, other paths, trees, node
    /// directories and how many gaps.
    type Expected<'a> = (
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
        usize,
    );

    /// A command line, the hook's env, and what its coverage is.
    type CoverageCase<'a> = (&'a str, &'a [(&'a str, &'a str)], Expected<'a>);

    fn check_coverage(command: &str, env: &[(&str, &str)], expected: Expected<'_>) {
        let vars = CommandVars {
            project_dir: PROJECT,
            plans_dir: "",
            session_id: "",
        };
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let cov = coverage(command, &env, &vars);
        let rel = |paths: Vec<&PathBuf>| -> Vec<String> {
            paths
                .into_iter()
                .map(|path| relative_path(path, Path::new(PROJECT)).unwrap_or_else(|| ".".into()))
                .collect()
        };
        let got = (
            rel(cov.entries.iter().map(|entry| &entry.path).collect()),
            rel(cov.paths.iter().collect()),
            rel(cov.trees.iter().collect()),
            rel(cov.node_dirs.iter().collect()),
            cov.gaps.len(),
        );
        let (entries, paths, trees, node_dirs, gaps) = expected;
        let want = (
            entries.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            paths.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            trees.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            node_dirs
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>(),
            gaps,
        );
        assert_eq!(got, want, "{command} {env:?}: {:?}", cov.gaps);
    }

    #[test]
    fn coverage_follows_what_the_command_loads() {
        let cases: &[CoverageCase<'_>] = &[
            // A script: itself, named on the line, and its directory's tree.
            ("./s.sh", &[], (&["s.sh"], &["s.sh"], &["."], &[], 0)),
            (
                "bash .gemini/hooks/g.sh",
                &[],
                (
                    &[".gemini/hooks/g.sh"],
                    &[".gemini/hooks/g.sh"],
                    &[".gemini/hooks"],
                    &[],
                    0,
                ),
            ),
            (
                "timeout 5 ./h/s.sh",
                &[],
                (&["h/s.sh"], &["h/s.sh"], &["h"], &[], 0),
            ),
            // Python imports from the script's directory, or the working directory for -m
            // and -c; -I keeps both off the path.
            (
                "python3 h/g.py",
                &[],
                (&["h/g.py"], &["h/g.py"], &["h"], &[], 0),
            ),
            (
                "python3 -I h/g.py",
                &[],
                (&["h/g.py"], &["h/g.py"], &[], &[], 0),
            ),
            ("python3 -m mod", &[], (&[], &[], &["."], &[], 0)),
            ("python3 -c 'import x'", &[], (&[], &[], &["."], &[], 0)),
            ("python3 -Im mod", &[], (&[], &[], &[], &[], 0)),
            // Node.js: preloads named on the line, packages from node_modules.
            (
                "node -r ./pre.js h/x.js",
                &[],
                (&["h/x.js"], &["pre.js", "h/x.js"], &["h"], &["h", "."], 0),
            ),
            (
                "node --import=./pre.mjs h/x.js",
                &[],
                (&["h/x.js"], &["pre.mjs", "h/x.js"], &["h"], &["h", "."], 0),
            ),
            // Any path on the line is covered, whatever reads it.
            (
                "jq -f .gemini/f.jq",
                &[],
                (&[], &[".gemini/f.jq"], &[], &[], 0),
            ),
            // The hook's environment: files and search paths inside the project.
            (
                "echo hi",
                &[("BASH_ENV", "$GEMINI_PROJECT_DIR/x.sh")],
                (&[], &["x.sh"], &[], &[], 0),
            ),
            (
                "echo hi",
                &[("BASH_ENV", "x.sh")],
                (&[], &["x.sh"], &[], &[], 0),
            ),
            (
                "guard",
                &[("PATH", "/srv/p/bin:/usr/bin")],
                (&[], &["bin"], &[], &[], 0),
            ),
            (
                "node x.js",
                &[("NODE_OPTIONS", "-r ./pre.js")],
                (&["x.js"], &["x.js", "pre.js"], &["."], &["."], 0),
            ),
            (
                "echo hi",
                &[("PYTHONPATH", ".")],
                (&[], &["."], &[], &[], 0),
            ),
            ("echo hi", &[("LANG", "C.UTF-8")], (&[], &[], &[], &[], 0)),
            (
                "echo hi",
                &[("BASH_ENV", "$HOME/x")],
                (&[], &[], &[], &[], 1),
            ),
            // What cannot be known is a gap.
            ("$X", &[], (&[], &[], &[], &[], 1)),
            ("bash $SCRIPT", &[], (&[], &[], &[], &[], 1)),
            ("sh -c \"$CODE\"", &[], (&[], &[], &[], &[], 1)),
            ("source \"$LIB\"", &[], (&[], &[], &[], &[], 1)),
            (
                "node -r \"$PRE\" x.js",
                &[],
                (&["x.js"], &["x.js"], &["."], &["."], 1),
            ),
            // Programs from PATH and files outside the project are the user's.
            ("jq -r .tool_name", &[], (&[], &[], &[], &[], 0)),
            ("/usr/bin/guard --x", &[], (&[], &[], &[], &[], 0)),
        ];
        for (command, env, expected) in cases {
            check_coverage(command, env, *expected);
        }
    }

    #[test]
    fn spans_name_the_word_the_runner_may_replace() {
        let vars = CommandVars {
            project_dir: PROJECT,
            plans_dir: "",
            session_id: "",
        };
        let cases: &[(&str, Option<&str>)] = &[
            ("./s.sh a", Some("./s.sh")),
            ("timeout 5 './s.sh' a", Some("'./s.sh'")),
            (
                "cd x && bash -e \"$GEMINI_PROJECT_DIR/g.sh\"",
                Some("\"/srv/p/g.sh\""),
            ),
            ("bash -- g.sh", None),
            ("bash -c './s.sh'", None),
        ];
        for (command, expected) in cases {
            let cov = coverage(command, &[], &vars);
            let got = cov
                .entries
                .first()
                .and_then(|entry| entry.span)
                .map(|(start, end)| &cov.expanded[start..end]);
            assert_eq!(got, *expected, "{command}");
        }
    }

    #[test]
    fn scripts_are_read_for_what_they_source_and_run() {
        let script = Path::new("/srv/p/h/g.sh");
        let text =
            "#!/bin/bash\n. ./lib.sh\nsource \"$(dirname \"$0\")/util.sh\"\npython3 h/x.py\n";
        let cov = script_coverage(text, script, Path::new(PROJECT));
        let entries: Vec<&Path> = cov.entries.iter().map(|e| e.path.as_path()).collect();
        assert_eq!(
            entries,
            [Path::new("/srv/p/lib.sh"), Path::new("/srv/p/h/x.py")]
        );
        assert_eq!(cov.gaps.len(), 1, "{:?}", cov.gaps);
        assert_eq!(
            cov.gaps[0].unless_covered.as_deref(),
            Some(Path::new("/srv/p/h/util.sh"))
        );
        assert!(cov.entries.iter().all(|entry| entry.span.is_none()));
    }

    #[test]
    fn shebangs_name_their_interpreter() {
        let cases: &[(&[u8], Option<EntryKind>)] = &[
            (b"#!/bin/bash -e", Some(EntryKind::Shell)),
            (b"#!/usr/bin/env bash", Some(EntryKind::Shell)),
            (b"#!/usr/bin/env -S python3 -u", Some(EntryKind::Python)),
            (b"#!/usr/bin/python3", Some(EntryKind::Python)),
            (b"#!/usr/bin/env node", Some(EntryKind::Other)),
            (b"\x7fELF", None),
        ];
        for (line, expected) in cases {
            assert_eq!(shebang_kind(line).map(|(kind, _)| kind), *expected);
        }
    }

    #[test]
    fn settings_that_change_what_runs_are_in_the_key() {
        let mut with_env = hook(Some("guard"), "./g.sh");
        let cases: &[(&str, Value, &str)] = &[
            ("timeout", Value::from(5000), ""),
            ("description", Value::from("d"), ""),
            ("on_failure", Value::from("deny"), ""),
            (
                "env",
                serde_json::json!({"PATH": "/p", "BASH_ENV": "/x"}),
                r#"{"env":{"BASH_ENV":"/x","PATH":"/p"}}"#,
            ),
            (
                "args",
                serde_json::json!(["-x"]),
                r#"{"args":["-x"],"env":{"BASH_ENV":"/x","PATH":"/p"}}"#,
            ),
        ];
        for (key, value, expected) in cases {
            with_env.raw.insert((*key).to_owned(), value.clone());
            assert_eq!(covered_settings(&with_env), *expected, "{key}");
        }
        // Another settings value is another key, and says why it is untrusted.
        let trusted = TrustKey {
            name: "guard".into(),
            command: "./g.sh".into(),
            ..TrustKey::default()
        };
        let input = HookTrustInput {
            trusted: vec![trusted.clone()],
            ..HookTrustInput::default()
        };
        let plain = hook(Some("guard"), "./g.sh");
        assert_eq!(
            input.trust_for(&plain, Path::new(PROJECT)),
            HookTrust::Trusted { key: trusted }
        );
        match input.trust_for(&with_env, Path::new(PROJECT)) {
            HookTrust::Untrusted { gap, .. } => assert_eq!(gap, TrustGap::SettingsChanged),
            other => panic!("{other:?}"),
        }
        // Keys round-trip through the store's JSON, settings and gaps included.
        let key = TrustKey {
            name: "n".into(),
            command: "c".into(),
            settings: covered_settings(&with_env),
            scripts: Vec::new(),
            uncovered: vec!["runs a program named at run time".into()],
        };
        assert_eq!(TrustKey::from_json(&key.to_json()), Some(key));
    }

    #[test]
    fn a_project_dir_that_needs_quoting_still_resolves() {
        let project = Path::new("/srv/my project");
        assert_eq!(
            script_paths("$GEMINI_PROJECT_DIR/a.sh", project),
            [PathBuf::from("/srv/my project/a.sh")]
        );
        assert_eq!(
            relative_path(Path::new("/srv/my project/x/a.sh"), project).as_deref(),
            Some("x/a.sh")
        );
        assert_eq!(relative_path(Path::new("/elsewhere/a.sh"), project), None);
    }

    #[test]
    fn sha256_is_lower_case_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    fn hook(name: Option<&str>, command: &str) -> HookConfig {
        HookConfig {
            hook_type: HookType::Command,
            command: Some(command.to_owned()),
            name: name.map(str::to_owned),
            description: None,
            timeout_ms: None,
            env: Vec::new(),
            raw: Map::new(),
        }
    }

    fn key(name: &str, command: &str, scripts: &[(&str, &str)]) -> TrustKey {
        TrustKey {
            name: name.to_owned(),
            command: command.to_owned(),
            scripts: scripts
                .iter()
                .map(|(path, sha256)| ScriptDigest {
                    path: (*path).to_owned(),
                    sha256: sha256_hex(sha256.as_bytes()),
                })
                .collect(),
            ..TrustKey::default()
        }
    }

    #[test]
    fn trust_follows_name_command_and_script_contents() {
        let input = |trusted: Vec<TrustKey>, contents: Option<&str>| HookTrustInput {
            trusted,
            scripts: vec![ScriptFile {
                path: PathBuf::from("/srv/p/g.sh"),
                sha256: contents.map(|c| sha256_hex(c.as_bytes())),
            }],
            hooks: Vec::new(),
        };
        let project = Path::new(PROJECT);
        let guard = hook(Some("guard"), "./g.sh");
        // (trusted keys, script contents now, expected)
        let cases = [
            (
                vec![key("guard", "./g.sh", &[("g.sh", "v1")])],
                Some("v1"),
                HookTrust::Trusted {
                    key: key("guard", "./g.sh", &[("g.sh", "v1")]),
                },
            ),
            (
                vec![key("guard", "./g.sh", &[("g.sh", "v1")])],
                Some("v2"),
                HookTrust::Untrusted {
                    key: key("guard", "./g.sh", &[("g.sh", "v2")]),
                    gap: TrustGap::ScriptChanged {
                        script: "g.sh".to_owned(),
                    },
                },
            ),
            // The script disappeared: the key has no script, which is another key.
            (
                vec![key("guard", "./g.sh", &[("g.sh", "v1")])],
                None,
                HookTrust::Untrusted {
                    key: key("guard", "./g.sh", &[]),
                    gap: TrustGap::ScriptChanged {
                        script: "g.sh".to_owned(),
                    },
                },
            ),
            (
                vec![key("other", "./g.sh", &[("g.sh", "v1")])],
                Some("v1"),
                HookTrust::Untrusted {
                    key: key("guard", "./g.sh", &[("g.sh", "v1")]),
                    gap: TrustGap::New,
                },
            ),
            (
                Vec::new(),
                Some("v1"),
                HookTrust::Untrusted {
                    key: key("guard", "./g.sh", &[("g.sh", "v1")]),
                    gap: TrustGap::New,
                },
            ),
        ];
        for (trusted, contents, expected) in cases {
            assert_eq!(
                input(trusted.clone(), contents).trust_for(&guard, project),
                expected,
                "{trusted:?} {contents:?}"
            );
        }
        let mut runtime = hook(Some("r"), "");
        runtime.hook_type = HookType::Runtime;
        assert_eq!(
            input(Vec::new(), None).trust_for(&runtime, project),
            HookTrust::NotRequired
        );
    }

    #[test]
    fn the_store_round_trips_and_replaces_old_versions() {
        let mut store = TrustStore::default();
        let v1 = key("guard", "./g.sh", &[("g.sh", "v1")]);
        let v2 = key("guard", "./g.sh", &[("g.sh", "v2")]);
        let plain = key("", "echo hi", &[]);
        assert_eq!(store.trust("/p", &[v1.clone(), plain.clone()]), 2);
        assert_eq!(store.trust("/p", std::slice::from_ref(&v1)), 0);
        assert_eq!(store.trust("/p", std::slice::from_ref(&v2)), 1);
        assert_eq!(store.keys("/p"), [plain.clone(), v2.clone()]);
        assert_eq!(store.keys("/q"), []);

        let text = store.to_text();
        assert!(
            text.starts_with("{\n  \"/p\": [\n    {\n      \"name\": \"\",\n"),
            "{text}"
        );
        assert_eq!(TrustStore::parse(&text), Ok(store.clone()));

        assert_eq!(store.untrust("/p"), 2);
        assert_eq!(store.untrust("/p"), 0);
        assert_eq!(store.to_text(), "{}\n");
    }

    fn check_store(text: &str, expected: Result<usize, &str>) {
        let got = TrustStore::parse(text).map(|store| store.projects().count());
        match (got, expected) {
            (Ok(count), Ok(expected)) => assert_eq!(count, expected, "{text}"),
            (Err(err), Err(expected)) => {
                assert!(err.to_string().contains(expected), "{text}: {err}")
            }
            (got, expected) => panic!("{text}: got {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn bad_stores_are_errors() {
        let hash = sha256_hex(b"x");
        check_store("", Ok(0));
        check_store("{}", Ok(0));
        check_store(
            &format!(
                r#"{{"/p": [{{"name": "n", "command": "c", "scripts": [{{"path": "a", "sha256": "{hash}"}}]}}]}}"#
            ),
            Ok(1),
        );
        check_store(r#"{"/p": [{"name": "n", "command": "c"}]}"#, Ok(1));
        check_store("{", Err("invalid JSON at line 1"));
        check_store("[]", Err("must be a JSON object"));
        check_store(r#"{"/p": {}}"#, Err("must be an array"));
        check_store(
            r#"{"/p": [{"name": 1, "command": "c"}]}"#,
            Err("trusted hook 0"),
        );
        check_store(
            r#"{"/p": [{"name": "n", "command": "c", "scripts": [{"path": "a", "sha256": "XYZ"}]}]}"#,
            Err("trusted hook 0"),
        );
    }

    #[test]
    fn messages_name_the_hook_and_the_trust_command() {
        assert_eq!(trust_command("/srv/p"), "hookctl trust --cwd /srv/p");
        assert_eq!(
            trust_command("/srv/my p"),
            "hookctl trust --cwd '/srv/my p'"
        );
        assert_eq!(
            refusal_message("guard", &TrustGap::New, "/srv/p"),
            "project hook \"guard\" was not run: it is not trusted (project_hooks = require); \
             review it, then run `hookctl trust --cwd /srv/p`"
        );
        assert_eq!(
            warning_message(
                "guard",
                &TrustGap::ScriptChanged {
                    script: "g.sh".to_owned()
                },
                "/srv/p"
            ),
            "project hook \"guard\" ran, but its script g.sh changed since it was trusted \
             (project_hooks = warn); review it, then run `hookctl trust --cwd /srv/p`"
        );
        assert!(changed_script_message("guard", "g.sh", "/p").contains("its script g.sh changed"));
    }

    #[test]
    fn policy_parses_its_two_spellings() {
        assert_eq!("warn".parse(), Ok(ProjectHookPolicy::Warn));
        assert_eq!("require".parse(), Ok(ProjectHookPolicy::Require));
        assert!("REQUIRE".parse::<ProjectHookPolicy>().is_err());
        assert_eq!(ProjectHookPolicy::default().to_string(), "warn");
    }
}
