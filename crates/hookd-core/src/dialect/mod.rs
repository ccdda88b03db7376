//! Host dialects: the language each agent CLI speaks to its hooks, behind one interface.
//!
//! hookd's own model is Gemini CLI's: its events (`BeforeTool`, `AfterAgent`, ...), its tool
//! names (`run_shell_command`, ...) and its output fields (`decision`,
//! `hookSpecificOutput.tool_input`, ...). Every other host speaks of the same things in other
//! words (Claude Code's `PreToolUse`, `Bash`, `hookSpecificOutput.permissionDecision`). A host
//! is one [`HostDialect`]: one module that knows
//!
//! - its **events** and the hookd event each is fired as, its default timeout and the unit of
//!   its `timeout` key, and the variable it puts the project root in;
//! - the **relay path**: its stdin object as a hookd event ([`HostDialect::relay_input`]), the
//!   daemon's aggregate as its answer ([`HostDialect::relay_answer`]), how it merges several
//!   hooks' answers ([`HostDialect::aggregate`]) and de-duplicates them, and which of hookd's
//!   layer files it runs itself ([`HostDialect::runs_layer`]);
//! - **hooks written in it** (`"dialect": "<name>"` on a hook entry): the payload such a hook
//!   reads and what its exit code and output mean;
//! - its **settings files**: where they are, how its `hooks` object reads as hookd's
//!   ([`HostDialect::convert_settings`]), the relay entry `hookctl install` writes, and what a
//!   user must do for running sessions to see a change.
//!
//! [`Dialect`] is a cheap, comparable handle on one of them; [`Dialect::ALL`] is the registry,
//! one line per host. Nothing outside a host's own module names a host: the daemon, the relay
//! and `hookctl install` ask the handle. [`is_relay_command`] recognises the relay's own wiring
//! in a settings file, so that the registry never runs it as a hook (no recursion). Every
//! mapping is listed in `docs/dialects.md`.

pub mod claude;
pub mod codex;
pub mod condition;
pub mod gemini;
mod relay;
mod types;
pub mod wiring;

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::aggregate::{Aggregate, aggregate};
use crate::command::CommandVars;
use crate::env::HostVariables;
use crate::event::HookEventName;
use crate::exec::KeyProblem;
use crate::model::{HookConfig, HookEntry, LayerFile, Source};
use crate::result::{HookResult, HookRun};
use crate::sanitize::EnvRedaction;

pub use claude::{
    BlockStyle, CLAUDE_EVENTS, ConvertOptions, aggregate_claude, answer_for_claude,
    answer_for_claude_input, claude_block_style, claude_event_to_gemini, claude_hook_applies,
    claude_hook_result, claude_input_to_gemini, claude_matcher_matches, claude_matcher_to_gemini,
    claude_matcher_verbatim, claude_notification_type_to_gemini, claude_plain_stdout_field,
    claude_specific_fields, claude_tool_input_to_gemini, claude_tool_to_gemini,
    claude_tools_for_gemini, convert_claude_hooks, convert_claude_settings, effective_claude_event,
    gemini_event_to_claude, gemini_notification_type_to_claude, gemini_payload_to_claude,
    gemini_tool_input_to_claude, gemini_tool_to_claude, is_valid_claude_matcher,
};
pub use gemini::answer_for_gemini;
pub use relay::{
    FALLBACK_EXEC_SCRIPT, RELAY_PROGRAM, SHARED_RELAY_PREFIX, fallback_command, fallback_original,
    is_hookd_wiring, is_relay_command, is_shared_relay_command, shared_relay_command,
};
pub use types::{Conversion, ConversionProblem, DialectError, ProblemKind, Purpose};

/// What the relay prints and exits with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostAnswer {
    /// Standard output (JSON and a newline, or nothing).
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The exit code.
    pub exit_code: i32,
}

/// One event a host relayed, in both languages.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayInput {
    /// The event as the host names it (`PreToolUse`).
    pub host_event: String,
    /// The hookd event it is fired as (`BeforeTool`).
    pub event: HookEventName,
    /// The hookd payload: the host's object with hookd's names (base fields included).
    pub input: Map<String, Value>,
    /// The object the host sent, with its `hook_event_name` set to [`Self::host_event`];
    /// empty when the relay answers without having read it (the daemon is unreachable).
    pub host_input: Map<String, Value>,
}

/// Which settings files: the user's or one project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The user's settings (every project).
    User,
    /// One project's settings.
    Project,
}

/// What locates a host's user settings: the home directory and the environment.
pub struct HomeEnv<'a> {
    /// The user's home directory.
    pub home: &'a Path,
    /// The value of an environment variable (`CLAUDE_CONFIG_DIR`, ...).
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

/// One agent CLI's hook language. See the module documentation; implemented once per host and
/// registered in [`Dialect::ALL`].
pub trait HostDialect: Send + Sync + 'static {
    /// The spelling in settings (`"dialect"`), on the wire (`relayed_by`) and on the command
    /// line (`--dialect`, `--host`): `gemini`, `claude`, ...
    fn name(&self) -> &'static str;

    /// The product's name in messages: `Gemini CLI`, `Claude Code`, ...
    fn product(&self) -> &'static str;

    /// The host's events hookd can run, in the host's spelling and order: what the relay
    /// accepts and what `hookctl install` may wire.
    fn events(&self) -> Vec<&'static str>;

    /// The hookd event a host event is fired as; `None` for an event hookd cannot run.
    fn event_to_hookd(&self, host_event: &str) -> Option<HookEventName>;

    /// The timeout of a hook of this dialect that sets none, in milliseconds: the host's own
    /// default, so a hook written for a host is given the time that host would give it.
    fn default_timeout_ms(&self) -> u64;

    /// Milliseconds per unit of the host's `timeout` key (1000 where it counts seconds).
    fn timeout_unit_ms(&self) -> u64 {
        1000
    }

    /// The environment variable in which the host gives its hooks the project root, if any.
    /// The relay prefers it to the payload's `cwd`, which a `cd` in the shell tool moves.
    fn project_dir_var(&self) -> Option<&'static str>;

    /// Whether, lacking [`Self::project_dir_var`], the host starts its hooks in the session's
    /// project directory, so that the relay's own working directory is the project (Codex
    /// CLI, whose payload `cwd` follows the shell tool's `workdir`). Default: no.
    fn project_dir_is_hook_cwd(&self) -> bool {
        false
    }

    /// The variables the host sets for each of its hooks on top of its own environment, in
    /// its order, from the firing's values. A hook of this dialect gets exactly these (and
    /// hookd's `HOOKD_*`), never another host's ([`Dialect::hook_environment`]). Default:
    /// none (Codex CLI hands its hooks its environment as it is).
    fn hook_variables<'a>(&self, _vars: &CommandVars<'a>) -> Vec<(&'static str, &'a str)> {
        Vec::new()
    }

    /// The command line the host's shell is given for a hook's `command`: the host's own
    /// textual rewrite, if it makes one (Gemini CLI replaces `$GEMINI_PROJECT_DIR` and four
    /// more with quoted values). Default: the command as written.
    fn hook_command<'c>(&self, command: &'c str, _vars: &CommandVars<'_>) -> Cow<'c, str> {
        Cow::Borrowed(command)
    }

    /// The shell that runs a hook's command line as `<shell> -c LINE`, when it is not bash
    /// (Claude Code starts its hooks with Node's `shell: true`: `/bin/sh`); `None`: bash, as
    /// Gemini CLI and Codex CLI run them. A different shell is a different language (`[[`,
    /// `$'...'`) and sets different variables (`SHLVL`, `_`).
    fn hook_shell(&self) -> Option<&'static str> {
        None
    }

    /// Whether the host expands `$NAME`, `${NAME}` and `${NAME:-default}` in the strings of
    /// its settings files when it loads them (Gemini CLI does); a hook of a dialect that does
    /// not is read from hookd's files as written. Default: no.
    fn expands_settings_strings(&self) -> bool {
        false
    }

    /// Whether the host itself runs the hooks of a layer (`source`, `file`): such hooks are
    /// skipped for the events it relays, or they would run twice.
    fn runs_layer(&self, source: Source, file: LayerFile) -> bool;

    /// Whether, for the events it relays, hooks with the same command line run once whatever
    /// their names (Claude Code's rule); otherwise Gemini CLI's `name:command` identity applies.
    fn dedups_by_command(&self) -> bool {
        false
    }

    /// The host's stdin object for `host_event` as a hookd event.
    fn relay_input(
        &self,
        host_event: &str,
        host_input: Map<String, Value>,
    ) -> Result<RelayInput, DialectError>;

    /// The relay's answer to the host: what it prints and exits with so that the host decides
    /// what hookd's hooks decided (`final_output` is the daemon's aggregate; `errors` the
    /// hooks' errors). Also used for the relay's own decisions (the daemon unreachable).
    fn relay_answer(
        &self,
        event: &RelayInput,
        final_output: Option<&Value>,
        errors: &[String],
    ) -> HostAnswer;

    /// Merges the hooks hookd ran for an event this host relayed. Default: Gemini CLI's rules.
    fn aggregate(
        &self,
        event: HookEventName,
        results: &[HookResult],
        input: &Map<String, Value>,
    ) -> Aggregate {
        aggregate(event, results, input)
    }

    /// The payload a hook written in this dialect reads, from the hookd payload of a firing;
    /// `None`: the hookd payload as it is.
    fn hook_payload(
        &self,
        _event: HookEventName,
        _payload: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        None
    }

    /// What a run of a hook written in this dialect means, in hookd's output fields; `input`
    /// is the hookd payload of the firing. No failure policy is applied here.
    fn hook_result(
        &self,
        entry: &HookEntry,
        run: HookRun,
        _input: &Map<String, Value>,
    ) -> HookResult {
        crate::output::hook_result(entry, run)
    }

    /// Whether a hook written in this dialect takes part in a firing (where hookd's events are
    /// coarser than the host's: Claude Code's `Stop` and `SubagentStop` are both `AfterAgent`).
    fn hook_applies(
        &self,
        _config: &HookConfig,
        _event: HookEventName,
        _payload: &Map<String, Value>,
    ) -> bool {
        true
    }

    /// The host's settings object (its `hooks` member) as hookd's hooks; `None` when the host's
    /// hooks are hookd's own shape already.
    fn convert_settings(&self, _settings: &Value, _purpose: Purpose) -> Option<Conversion> {
        None
    }

    /// The matcher of the relay entry for `event`, covering every hook hookd has for it
    /// (`matchers`: their hookd matchers, `None` for a hook that matches every firing);
    /// `None`: the entry relays every firing, which is always safe.
    fn relay_matcher(&self, _event: HookEventName, _matchers: &[Option<String>]) -> Option<String> {
        None
    }

    /// The handler object `hookctl install` writes into the host's settings to relay
    /// `host_event` by running `command`, waiting at most `timeout_ms`.
    fn relay_handler(&self, host_event: &str, command: &str, timeout_ms: u64) -> Value;

    /// The host's user settings file, which `hookctl install --scope user` edits.
    fn user_settings_file(&self, env: &HomeEnv<'_>) -> PathBuf;

    /// A project's settings file, which `hookctl install --scope project` edits.
    fn project_settings_file(&self, project: &Path) -> PathBuf;

    /// What a user must do for running sessions to see changed relay entries.
    fn pickup_note(&self) -> &'static str;

    /// Why the host would not load its settings text as it is (a host that drops a whole file
    /// for one malformed entry); `hookctl install` refuses to edit a file with any, since the
    /// relay entries it adds would be dropped with the rest. Default: none.
    fn settings_problems(&self, _settings_text: &str) -> Vec<String> {
        Vec::new()
    }

    /// Other files the host must see changed before it runs the hooks of `settings_file` (a
    /// trust record, say), found with the caller's environment `env` (the core reads none).
    /// Default: none.
    fn companion_files(&self, _settings_file: &Path, _env: &HomeEnv<'_>) -> Vec<PathBuf> {
        Vec::new()
    }

    /// The new text of the companion file `companion` (`current`: its text now, `None`: it does
    /// not exist) once `settings_file` holds `settings_text`; `Ok(None)`: no change. Called by
    /// `install`, `sync` and `uninstall` after every edit of the settings file.
    fn companion_text(
        &self,
        _settings_file: &Path,
        _settings_text: &str,
        _companion: &Path,
        _current: Option<&str>,
    ) -> Result<Option<String>, String> {
        Ok(None)
    }

    /// Why the host would not run the relay entries of `settings_file` as they are (a stale
    /// trust record, say), given its text and its companions' texts: one line each, for
    /// `hookctl doctor` and `hookctl list`. Default: none.
    fn wiring_problems(
        &self,
        _settings_file: &Path,
        _settings_text: &str,
        _companions: &[(PathBuf, Option<String>)],
    ) -> Vec<String> {
        Vec::new()
    }
}

/// Reads the hook's `dialect` key.
pub fn parse_dialect(raw: &Map<String, Value>) -> (Dialect, Option<KeyProblem>) {
    match raw.get("dialect") {
        None | Some(Value::Null) => (Dialect::GEMINI, None),
        Some(Value::String(text)) => match Dialect::parse(text) {
            Some(dialect) => (dialect, None),
            None => (
                Dialect::GEMINI,
                Some(KeyProblem {
                    key: "dialect",
                    message: format!(
                        "dialect must be one of {}, not {text:?}; gemini applies",
                        Dialect::names()
                    ),
                }),
            ),
        },
        Some(other) => (
            Dialect::GEMINI,
            Some(KeyProblem {
                key: "dialect",
                message: format!(
                    "dialect must be a string, not {}; gemini applies",
                    crate::json::json_type(other)
                ),
            }),
        ),
    }
}

/// What a hook's dialect decides about it, defined here so that the hook model needs no
/// knowledge of the hosts.
impl HookConfig {
    /// The language the hook speaks (its `dialect` key; Gemini CLI's by default).
    pub fn dialect(&self) -> Dialect {
        parse_dialect(&self.raw).0
    }

    /// The effective timeout in milliseconds: the entry's own, else its dialect's default
    /// (60 s for Gemini CLI's, 600 s for Claude Code's; [`HostDialect::default_timeout_ms`]).
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
            .unwrap_or_else(|| self.dialect().default_timeout_ms())
    }
}

/// A handle on one registered host dialect: `Copy`, compared and hashed by name.
#[derive(Clone, Copy)]
pub struct Dialect(&'static dyn HostDialect);

impl Dialect {
    /// Gemini CLI (hookd's own model).
    pub const GEMINI: Dialect = Dialect(&gemini::Gemini);
    /// Claude Code.
    pub const CLAUDE: Dialect = Dialect(&claude::Claude);
    /// OpenAI Codex CLI.
    pub const CODEX: Dialect = Dialect(&codex::Codex);

    /// Every host hookd speaks, one line each: adding a host is a module and a line here.
    pub const ALL: &'static [Dialect] = &[Dialect::GEMINI, Dialect::CLAUDE, Dialect::CODEX];

    /// The dialect named `name` (its [`HostDialect::name`]).
    pub fn parse(name: &str) -> Option<Dialect> {
        Dialect::ALL
            .iter()
            .copied()
            .find(|dialect| dialect.name() == name)
    }

    /// The spelling in settings and on the wire.
    pub fn as_str(self) -> &'static str {
        self.0.name()
    }

    /// Every name, for messages (`gemini, claude`).
    pub fn names() -> String {
        Dialect::ALL
            .iter()
            .map(|dialect| dialect.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether this is hookd's own language (Gemini CLI's), which needs no translation.
    pub fn is_native(self) -> bool {
        self == Dialect::GEMINI
    }

    /// The host dialect itself.
    pub fn host(self) -> &'static dyn HostDialect {
        self.0
    }

    /// The environment of a hook written in this dialect: `base` (the client's environment,
    /// for a relayed event the relaying host's hook environment) less what `redaction` removes
    /// and less every variable another registered host sets for its hooks that this one does
    /// not, then this host's [`HostDialect::hook_variables`], then the hook's own `hook_env`.
    pub fn hook_environment(
        self,
        base: &[(String, String)],
        redaction: &EnvRedaction,
        vars: &CommandVars<'_>,
        hook_env: &[(String, String)],
    ) -> Vec<(String, String)> {
        let set = self.hook_variables(vars);
        let foreign = self.foreign_variables();
        let host = HostVariables {
            set: &set,
            foreign: &foreign,
        };
        crate::env::hook_environment(base, redaction, &host, hook_env)
    }

    /// The names other registered hosts set for their hooks and this one does not.
    pub fn foreign_variables(self) -> Vec<&'static str> {
        let names = |dialect: Dialect| {
            dialect
                .hook_variables(&CommandVars {
                    project_dir: "",
                    plans_dir: "",
                    session_id: "",
                })
                .into_iter()
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
        };
        let own = names(self);
        let mut foreign: Vec<&'static str> = Vec::new();
        for other in Dialect::ALL {
            for name in names(*other) {
                if !own.contains(&name) && !foreign.contains(&name) {
                    foreign.push(name);
                }
            }
        }
        foreign
    }
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect::GEMINI
    }
}

impl Deref for Dialect {
    type Target = dyn HostDialect;

    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl PartialEq for Dialect {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

impl Eq for Dialect {}

impl Hash for Dialect {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name().hash(state);
    }
}

impl fmt::Debug for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dialect({})", self.0.name())
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_dialect_parses_its_own_name_only() {
        for dialect in Dialect::ALL {
            assert_eq!(Dialect::parse(dialect.name()), Some(*dialect));
            assert_eq!(Dialect::parse(&dialect.name().to_uppercase()), None);
            assert!(!dialect.events().is_empty(), "{dialect}");
            for event in dialect.events() {
                assert!(dialect.event_to_hookd(event).is_some(), "{dialect} {event}");
            }
        }
        assert_eq!(Dialect::parse(""), None);
        let mut names: Vec<_> = Dialect::ALL.iter().map(|d| d.name()).collect();
        names.dedup();
        assert_eq!(names.len(), Dialect::ALL.len(), "names are unique");
    }

    #[test]
    fn dialects() {
        // (entry, dialect, problem?)
        let cases = [
            (json!({}), Dialect::GEMINI, false),
            (json!({"dialect": null}), Dialect::GEMINI, false),
            (json!({"dialect": "gemini"}), Dialect::GEMINI, false),
            (json!({"dialect": "claude"}), Dialect::CLAUDE, false),
            (json!({"dialect": "Claude"}), Dialect::GEMINI, true),
            (json!({"dialect": 2}), Dialect::GEMINI, true),
        ];
        for (entry, expected, problem) in cases {
            let (dialect, found) = parse_dialect(entry.as_object().expect("object"));
            assert_eq!(dialect, expected, "{entry}");
            assert_eq!(found.is_some(), problem, "{entry}: {found:?}");
        }
        assert_eq!(Dialect::CLAUDE.to_string(), "claude");
        assert_eq!(Dialect::parse("gemini"), Some(Dialect::GEMINI));
    }

    #[test]
    fn each_host_gives_its_hooks_its_own_variables_and_none_of_another() {
        let vars = CommandVars {
            project_dir: "/w",
            plans_dir: "/p",
            session_id: "s",
        };
        let own = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>()
        };
        // What a relayed event's base may hold: every host's variables, and the user's.
        let base = own(&[
            ("HOME", "/h"),
            ("GEMINI_PROJECT_DIR", "/relay"),
            ("GEMINI_PLANS_DIR", "/relay/p"),
            ("GEMINI_CWD", "/relay"),
            ("GEMINI_SESSION_ID", "r"),
            ("CLAUDE_PROJECT_DIR", "/relay"),
        ]);
        // (dialect, expected environment): Gemini CLI's five (its runner, 0.61), Claude
        // Code's project variable, nothing for Codex CLI.
        let cases = [
            (
                Dialect::GEMINI,
                own(&[
                    ("HOME", "/h"),
                    ("GEMINI_PROJECT_DIR", "/w"),
                    ("GEMINI_PLANS_DIR", "/p"),
                    ("GEMINI_CWD", "/w"),
                    ("GEMINI_SESSION_ID", "s"),
                    ("CLAUDE_PROJECT_DIR", "/w"),
                ]),
            ),
            (
                Dialect::CLAUDE,
                own(&[("HOME", "/h"), ("CLAUDE_PROJECT_DIR", "/w")]),
            ),
            (Dialect::CODEX, own(&[("HOME", "/h")])),
        ];
        for (dialect, expected) in cases {
            let env = dialect.hook_environment(
                &base,
                &EnvRedaction::default(),
                &vars,
                &own(&[("X", "1")]),
            );
            let mut expected = expected;
            expected.push(("X".to_owned(), "1".to_owned()));
            assert_eq!(env, expected, "{dialect}");
        }
    }

    #[test]
    fn only_gemini_rewrites_command_lines_and_expands_settings_strings() {
        let vars = CommandVars {
            project_dir: "/my project",
            plans_dir: "/p",
            session_id: "s",
        };
        let line = "echo '$CLAUDE_PROJECT_DIR' $GEMINI_PROJECT_DIR";
        // (dialect, command line given to the shell, expands settings strings)
        let cases = [
            (Dialect::GEMINI, "echo ''/my project'' '/my project'", true),
            (Dialect::CLAUDE, line, false),
            (Dialect::CODEX, line, false),
        ];
        for (dialect, expected, expands) in cases {
            assert_eq!(dialect.hook_command(line, &vars), expected, "{dialect}");
            // Only Claude Code runs its hooks with another shell than bash.
            let shell = (dialect == Dialect::CLAUDE).then_some("/bin/sh");
            assert_eq!(dialect.hook_shell(), shell, "{dialect}");
            assert_eq!(dialect.expands_settings_strings(), expands, "{dialect}");
        }
    }

    #[test]
    fn relay_handlers_carry_the_command_and_a_timeout_in_the_host_unit() {
        for dialect in Dialect::ALL {
            let handler = dialect.relay_handler("X", "hookd-relay X", 70_000);
            assert_eq!(handler["command"], "hookd-relay X", "{dialect}");
            assert_eq!(
                handler["timeout"].as_u64(),
                Some(70_000 / dialect.timeout_unit_ms()),
                "{dialect}"
            );
        }
    }
}
