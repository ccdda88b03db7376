//! Project-hook trust (decision D8): which project hooks the user has reviewed, by content.
//!
//! Gemini CLI fingerprints a project hook by `"<name>:<command>"` and only warns, once, when a
//! fingerprint is new (spec §1.8). hookd keeps that as the `warn` policy and adds `require`,
//! under which an untrusted project hook is not run at all. Either way the fingerprint (the
//! [`TrustKey`]) also covers the *contents* of the script files the command runs, so editing a
//! trusted script makes its hook untrusted again: a repository cannot swap a reviewed script
//! for another behind an unchanged command line.
//!
//! Which files a command runs is read from the command line itself ([`script_paths`]): the
//! command is expanded as the runner would expand it (`$GEMINI_PROJECT_DIR` and friends), cut
//! into simple commands at `;`, `&&`, `||`, `|`, `&` and newlines, and of each simple command
//! the program word is taken when it is a path (`./hook.sh`, `.gemini/hooks/guard.py`), or,
//! when the program is a known interpreter (`bash`, `sh`, `node`, `python3`, `ruby`, `perl`,
//! `deno run`, `bun`, `npx tsx`, ...), its script argument. Only files under the project
//! directory count: a script elsewhere belongs to the user, not to the repository. A word the
//! shell would expand in a way hookd cannot know (`$OTHER`, `$(...)`, `~`) names no file.
//!
//! This module is pure: the loader reads the files and passes their contents' digests in
//! ([`ScriptFile`]); the trust store is parsed from and rendered to text here
//! ([`TrustStore`]) and written by the daemon.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::command::{CommandVars, expand_command, shell_quote};
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

/// One script file of a trust key: where it is and what it contained.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScriptDigest {
    /// The file, relative to the project directory, with `/` separators.
    pub path: String,
    /// The SHA-256 of its contents, as 64 lower-case hex digits.
    pub sha256: String,
}

/// What trusting a project hook means: this name, this command line, these script contents.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrustKey {
    /// The hook's `name` (`""` when it has none), as in Gemini CLI's fingerprint.
    pub name: String,
    /// The hook's `command` as loaded (`""` when it has none).
    pub command: String,
    /// The project files the command runs, in command order, each once.
    pub scripts: Vec<ScriptDigest>,
}

impl TrustKey {
    /// Gemini CLI's part of the key, `"<name>:<command>"`.
    pub fn name_command(&self) -> String {
        format!("{}:{}", self.name, self.command)
    }

    /// Whether `other` is the same hook (name and command) with other script contents.
    fn same_hook(&self, other: &TrustKey) -> bool {
        self.name == other.name && self.command == other.command
    }

    /// The key as one JSON object of the store and the wire:
    /// `{"name", "command", "scripts": [{"path", "sha256"}]}`.
    pub fn to_json(&self) -> Value {
        let scripts: Vec<Value> = self
            .scripts
            .iter()
            .map(|script| {
                let mut object = Map::new();
                object.insert("path".to_owned(), Value::from(script.path.clone()));
                object.insert("sha256".to_owned(), Value::from(script.sha256.clone()));
                Value::Object(object)
            })
            .collect();
        let mut object = Map::new();
        object.insert("name".to_owned(), Value::from(self.name.clone()));
        object.insert("command".to_owned(), Value::from(self.command.clone()));
        object.insert("scripts".to_owned(), Value::Array(scripts));
        Value::Object(object)
    }

    /// Reads a key written by [`TrustKey::to_json`]; `None` when it has another shape.
    pub fn from_json(value: &Value) -> Option<TrustKey> {
        let object = value.as_object()?;
        let text = |object: &Map<String, Value>, key: &str| -> Option<String> {
            object.get(key)?.as_str().map(str::to_owned)
        };
        let scripts = match object.get("scripts") {
            None => Vec::new(),
            Some(Value::Array(scripts)) => scripts
                .iter()
                .map(|script| {
                    let script = script.as_object()?;
                    let sha256 = text(script, "sha256")?;
                    is_sha256_hex(&sha256).then_some(ScriptDigest {
                        path: text(script, "path")?,
                        sha256,
                    })
                })
                .collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        Some(TrustKey {
            name: text(object, "name")?,
            command: text(object, "command")?,
            scripts,
        })
    }
}

/// Whether `text` is a SHA-256 as [`sha256_hex`] writes it.
fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why a project hook is not trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustGap {
    /// Nothing with its name and command was ever trusted for the project.
    New,
    /// Its name and command were trusted, but with other script contents.
    ScriptChanged,
}

/// Whether a registered hook needs trust, and whether it has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookTrust {
    /// Not a project hook that runs a command: user, system, system-defaults and extension
    /// hooks are the user's own choice and never gated.
    NotRequired,
    /// A project hook whose key is in the trust store.
    Trusted {
        /// Its key, with the script digests it was trusted with.
        key: TrustKey,
    },
    /// A project hook whose key is not in the trust store.
    Untrusted {
        /// Its key as it is now.
        key: TrustKey,
        /// Why it is not trusted.
        gap: TrustGap,
    },
}

impl HookTrust {
    /// Whether the hook is a project hook that is not trusted.
    pub fn is_untrusted(&self) -> bool {
        matches!(self, HookTrust::Untrusted { .. })
    }

    /// The key, for project hooks that need trust.
    pub fn key(&self) -> Option<&TrustKey> {
        match self {
            HookTrust::NotRequired => None,
            HookTrust::Trusted { key } | HookTrust::Untrusted { key, .. } => Some(key),
        }
    }
}

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
}

impl HookTrustInput {
    /// The trust state of a hook of the project layer.
    pub fn trust_for(&self, config: &HookConfig, project_dir: &Path) -> HookTrust {
        if !config.runs_command() {
            return HookTrust::NotRequired;
        }
        let key = self.key_for(config, project_dir);
        if self.trusted.contains(&key) {
            return HookTrust::Trusted { key };
        }
        let gap = if self.trusted.iter().any(|trusted| trusted.same_hook(&key)) {
            TrustGap::ScriptChanged
        } else {
            TrustGap::New
        };
        HookTrust::Untrusted { key, gap }
    }

    /// The key of a hook: its name, command and the digests of the script files that exist.
    pub fn key_for(&self, config: &HookConfig, project_dir: &Path) -> TrustKey {
        let command = config.command.clone().unwrap_or_default();
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
            name: config.name.clone().unwrap_or_default(),
            command,
            scripts,
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

/// The refusal of an untrusted project hook under `require`, for its record's error.
pub fn refusal_message(display_name: &str, gap: TrustGap, project_dir: &str) -> String {
    format!(
        "project hook \"{display_name}\" was not run: {} (project_hooks = require); review it, \
         then run `{}`",
        gap_text(gap),
        trust_command(project_dir)
    )
}

/// The refusal of a trusted project hook whose script changed after the registry was built.
pub fn changed_script_message(display_name: &str, script: &str, project_dir: &str) -> String {
    format!(
        "project hook \"{display_name}\" was not run: its script {script} changed since it was \
         trusted (project_hooks = require); review it, then run `{}`",
        trust_command(project_dir)
    )
}

/// The warning an untrusted project hook's first run carries under `warn`.
pub fn warning_message(display_name: &str, gap: TrustGap, project_dir: &str) -> String {
    format!(
        "project hook \"{display_name}\" ran, but {} (project_hooks = warn); review it, then run \
         `{}`",
        gap_text(gap),
        trust_command(project_dir)
    )
}

fn gap_text(gap: TrustGap) -> &'static str {
    match gap {
        TrustGap::New => "it is not trusted",
        TrustGap::ScriptChanged => "its script changed since it was trusted",
    }
}

/// The script files under `project_dir` that `command` runs, as absolute paths, in command
/// order, each once (see the module documentation for the rules).
pub fn script_paths(command: &str, project_dir: &Path) -> Vec<PathBuf> {
    let project = normalize(project_dir);
    let project_text = project.to_string_lossy().into_owned();
    // Expanded exactly as the runner will expand it; the plans dir and session id do not
    // matter for finding files.
    let expanded = expand_command(
        command,
        &CommandVars {
            project_dir: &project_text,
            plans_dir: "",
            session_id: "",
        },
    );
    let mut paths: Vec<PathBuf> = Vec::new();
    for words in simple_commands(&expanded, &project_text) {
        let Some(word) = script_word(&words) else {
            continue;
        };
        let path = normalize(&project.join(&word));
        if path != project && path.starts_with(&project) && !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
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
fn normalize(path: &Path) -> PathBuf {
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

/// A word of a command line: its text after quote removal, or `None` when the shell would
/// expand it in a way that cannot be known here.
type Word = Option<String>;

/// Cuts a command line into simple commands (lists of words), dropping redirections, with the
/// project directory variables expanded ([`crate::command::split_commands`]).
fn simple_commands(line: &str, project_dir: &str) -> Vec<Vec<Word>> {
    let mut dollar = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
                      word: &mut Option<String>,
                      unknown: &mut bool| {
        expand_dollar(chars, word, unknown, project_dir);
    };
    crate::command::split_commands(line, &mut dollar)
        .into_iter()
        .map(|words| {
            words
                .into_iter()
                .map(|word| (!word.unknown).then_some(word.text))
                .collect()
        })
        .collect()
}

fn push(word: &mut Option<String>, c: char) {
    word.get_or_insert_with(String::new).push(c);
}

/// The variables whose value is the project directory in a hook's environment.
const PROJECT_DIR_VARS: [&str; 3] = ["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR", "GEMINI_CWD"];

/// Expands a `$` in a word: the project directory variables become the directory; anything
/// else makes the word unknowable.
fn expand_dollar(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    word: &mut Option<String>,
    unknown: &mut bool,
    project_dir: &str,
) {
    let mut name = String::new();
    if chars.peek() == Some(&'{') {
        chars.next();
        for next in chars.by_ref() {
            if next == '}' {
                break;
            }
            name.push(next);
        }
    } else {
        while let Some(next) = chars.peek().copied() {
            if next.is_ascii_alphanumeric() || next == '_' {
                name.push(next);
                chars.next();
            } else {
                break;
            }
        }
        if name.is_empty() {
            // A lone `$` is literal, as in the shell.
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
const PREFIX_WORDS: [&str; 13] = [
    "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "exec", "command", "nohup",
];

/// How one interpreter takes its script.
struct Interpreter {
    /// Options that take inline code: with one of them there is no script file.
    inline: &'static [&'static str],
    /// Options followed by a separate value word.
    with_value: &'static [&'static str],
    /// A subcommand that comes before the script (`deno run`, `bun run`).
    subcommand: Option<&'static str>,
    /// Whether short options may be bundled (`bash -ec`): an inline option letter anywhere
    /// in a bundle counts.
    bundled: bool,
}

const SHELL: Interpreter = Interpreter {
    inline: &["-c"],
    with_value: &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"],
    subcommand: None,
    bundled: true,
};

const NODE: Interpreter = Interpreter {
    inline: &["-e", "--eval", "-p", "--print"],
    with_value: &[
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--env-file",
        "--conditions",
        "-C",
    ],
    subcommand: None,
    bundled: false,
};

const PYTHON: Interpreter = Interpreter {
    inline: &["-c", "-m"],
    with_value: &["-W", "-X", "--check-hash-based-pycs"],
    subcommand: None,
    bundled: true,
};

const RUBY_PERL: Interpreter = Interpreter {
    inline: &["-e", "-E"],
    with_value: &["-I", "-r"],
    subcommand: None,
    bundled: false,
};

const PHP: Interpreter = Interpreter {
    inline: &["-r"],
    with_value: &["-c", "-d"],
    subcommand: None,
    bundled: false,
};

const LUA: Interpreter = Interpreter {
    inline: &["-e"],
    with_value: &["-l"],
    subcommand: None,
    bundled: false,
};

const DENO: Interpreter = Interpreter {
    inline: &["eval"],
    with_value: &["--config", "-c", "--import-map"],
    subcommand: Some("run"),
    bundled: false,
};

const BUN: Interpreter = Interpreter {
    inline: &["-e", "--eval", "-p", "--print"],
    with_value: &["-r", "--preload", "--cwd"],
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

/// The word of a simple command that names its script file, if any.
fn script_word(words: &[Word]) -> Option<String> {
    let mut rest = words;
    // Assignments, `env` with its options and assignments, and prefix words.
    loop {
        let (first, tail) = rest.split_first()?;
        let first = first.as_deref()?;
        let is_assignment = first
            .split_once('=')
            .is_some_and(|(name, _)| is_identifier(name));
        if is_assignment || PREFIX_WORDS.contains(&first) {
            rest = tail;
        } else if first == "env" || first.ends_with("/env") {
            rest = tail;
            while let Some((Some(option), tail)) = rest.split_first() {
                if !option.starts_with('-') {
                    break;
                }
                rest = tail;
            }
        } else {
            break;
        }
    }
    let (program, mut args) = rest.split_first()?;
    let mut program = program.as_deref()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    if RUNNERS.contains(&name) {
        // `npx [options] <program> ...`: the program must be an interpreter, anything else
        // is a package, not a project file.
        while let Some((Some(option), tail)) = args.split_first() {
            if !option.starts_with('-') {
                break;
            }
            args = tail;
        }
        let (runner_program, runner_args) = args.split_first()?;
        program = runner_program.as_deref()?;
        interpreter(program)?;
        args = runner_args;
    }
    match interpreter(program) {
        Some(interpreter) => interpreter_script(interpreter, args),
        // The shell looks a word without a slash up in PATH, never in the project.
        None => program.contains('/').then(|| program.to_owned()),
    }
}

/// The script argument of an interpreter's arguments, owned.
fn interpreter_script(interpreter: &Interpreter, args: &[Word]) -> Option<String> {
    let mut args = args.iter();
    let mut subcommand_seen = interpreter.subcommand.is_none();
    while let Some(word) = args.next() {
        let word = word.as_deref()?;
        if interpreter.inline.contains(&word) {
            return None;
        }
        if word == "--" {
            return args.next()?.clone();
        }
        if word.starts_with('-') || word.starts_with('+') {
            let option = word.split_once('=').map_or(word, |(option, _)| option);
            if interpreter.bundled
                && word.len() > 2
                && !word.starts_with("--")
                && interpreter
                    .inline
                    .iter()
                    .filter_map(|inline| inline.strip_prefix('-'))
                    .any(|letter| word[1..].contains(letter))
            {
                return None;
            }
            if interpreter.with_value.contains(&option) && !word.contains('=') {
                args.next();
            }
            continue;
        }
        if !subcommand_seen && Some(word) == interpreter.subcommand {
            subcommand_seen = true;
            continue;
        }
        return Some(word.to_owned());
    }
    None
}

fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
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
            // Inline code, PATH lookups and files outside the project name no script.
            ("bash -c './a.sh'", &[]),
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
                    gap: TrustGap::ScriptChanged,
                },
            ),
            // The script disappeared: the key has no script, which is another key.
            (
                vec![key("guard", "./g.sh", &[("g.sh", "v1")])],
                None,
                HookTrust::Untrusted {
                    key: key("guard", "./g.sh", &[]),
                    gap: TrustGap::ScriptChanged,
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
            refusal_message("guard", TrustGap::New, "/srv/p"),
            "project hook \"guard\" was not run: it is not trusted (project_hooks = require); \
             review it, then run `hookctl trust --cwd /srv/p`"
        );
        assert_eq!(
            warning_message("guard", TrustGap::ScriptChanged, "/srv/p"),
            "project hook \"guard\" ran, but its script changed since it was trusted \
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
