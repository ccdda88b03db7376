//! Host dialects: the language each agent CLI speaks to its hooks, behind one interface.
//!
//! hookd's own model is Gemini CLI's: its events (`BeforeTool`, `AfterAgent`, ...), its tool
//! names (`run_shell_command`, ...) and its output fields (`decision`,
//! `hookSpecificOutput.tool_input`, ...). Every other host speaks of the same things in other
//! words (Claude Code's `PreToolUse`, `Bash`, `hookSpecificOutput.permissionDecision`). A host
//! is one [`Host`]: one module that knows, in three parts by who asks ([`host`]),
//!
//! - **what the daemon runs** ([`HostRun`]): hooks written in it (`"dialect": "<name>"` on a
//!   hook entry: the payload such a hook reads, what its exit code and output mean, its
//!   default timeout, environment, shell and command line), and for the events it relays how
//!   it merges several hooks' answers, de-duplicates them, and which of hookd's layer files it
//!   runs itself;
//! - **the relay's translation** ([`HostRelay`]): its events and the hookd event each is
//!   fired as, its stdin object as a hookd event, the daemon's aggregate as its answer, and the
//!   variable it puts the project root in;
//! - **its files** ([`HostFiles`]): where its settings are, how its `hooks` object reads as
//!   hookd's, the relay entry `hookctl install` writes, and what a user must do for running
//!   sessions to see a change.
//!
//! [`Dialect`] is a cheap, comparable handle on one of them, handing out each part
//! ([`Dialect::run`], [`Dialect::relay`], [`Dialect::files`]); [`Dialect::ALL`] is the
//! registry, one line per host. The daemon, the relay and `hookctl install` ask the handle for
//! the part they use. [`is_relay_command`] recognises the relay's own wiring in a settings
//! file, so that the registry never runs it as a hook (no recursion). Every mapping is listed
//! in `docs/dialects.md`.

pub mod claude;
pub mod codex;
pub mod condition;
pub mod copilot;
pub mod gemini;
pub mod host;
mod relay;
mod types;
pub mod wiring;

use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::command::CommandVars;
use crate::env::HostVariables;
use crate::event::{HookEventName, HostEvent, UnknownEvent};
use crate::exec::KeyProblem;
use crate::model::{HookConfig, LayerFile};
use crate::sanitize::EnvRedaction;

pub use claude::{
    BlockStyle, CLAUDE_EVENTS, ConvertOptions, aggregate_claude, answer_for_claude,
    answer_for_claude_input, claude_block_style, claude_event_to_gemini, claude_hook_applies,
    claude_hook_result, claude_input_to_gemini, claude_matcher, claude_matcher_matches,
    claude_matcher_to_gemini, claude_matcher_verbatim, claude_notification_type_to_gemini,
    claude_only_matcher, claude_plain_stdout_field, claude_specific_fields,
    claude_tool_input_to_gemini, claude_tool_to_gemini, claude_tools_for_gemini,
    convert_claude_hooks, convert_claude_settings, effective_claude_event, gemini_event_to_claude,
    gemini_notification_type_to_claude, gemini_payload_to_claude, gemini_tool_input_to_claude,
    gemini_tool_to_claude, is_valid_claude_matcher,
};
pub use gemini::answer_for_gemini;
pub use host::{Host, HostFiles, HostRelay, HostRun};
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

/// The `systemMessage` of an answer: the hooks' own (`given`, when not empty), then each of
/// hookd's errors as `hookd: ERROR`, one per line; `None` when there is neither.
pub fn system_message(given: Option<&str>, errors: &[String]) -> Option<String> {
    let mut messages: Vec<String> = given
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
    messages.extend(errors.iter().map(|error| format!("hookd: {error}")));
    (!messages.is_empty()).then(|| messages.join("\n"))
}

impl HostAnswer {
    /// Exit 0 with `out` as one JSON line, or nothing at all when `out` is empty.
    pub fn json(out: Map<String, Value>) -> HostAnswer {
        HostAnswer {
            stdout: if out.is_empty() {
                String::new()
            } else {
                format!("{}\n", Value::Object(out))
            },
            stderr: String::new(),
            exit_code: 0,
        }
    }
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

/// The payload fields every event has, which an `event` request carries in its own fields
/// (`cwd`, `session_id`, ...) rather than in its `input`.
pub const BASE_FIELDS: [&str; 5] = [
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "timestamp",
];

impl RelayInput {
    /// The event's own fields of the hookd payload (less [`BASE_FIELDS`]), in their order:
    /// an `event` request's `input`, as the relay and the daemon's HTTP listener send it.
    pub fn event_input(&self) -> Map<String, Value> {
        // Kept in order (`Map::remove` would swap the last field into the gap).
        self.input
            .iter()
            .filter(|(key, _)| !BASE_FIELDS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    }
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

/// Which names are events, answered here where the hosts are known, so that the event model
/// needs no knowledge of them: Gemini CLI's eleven, then each registered host's own
/// ([`HostRelay::own_events`]), in registry order (the first host to declare a name has it).
impl HookEventName {
    /// Every event hookd holds: Gemini CLI's eleven, then each host's own.
    pub fn all() -> impl Iterator<Item = HookEventName> {
        HookEventName::ALL.into_iter().chain(
            Dialect::ALL
                .iter()
                .flat_map(|dialect| dialect.relay().own_events())
                .map(|spec| HookEventName::Host(HostEvent::new(spec))),
        )
    }
}

impl FromStr for HookEventName {
    type Err = UnknownEvent;

    /// The event of that exact (case-sensitive) name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HookEventName::all()
            .find(|event| event.as_str() == s)
            .ok_or_else(|| UnknownEvent(s.to_owned()))
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
    /// (60 s for Gemini CLI's, 600 s for Claude Code's; [`HostRun::default_timeout_ms`]).
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
            .unwrap_or_else(|| self.dialect().run().default_timeout_ms())
    }
}

/// A handle on one registered host: `Copy`, compared and hashed by name, handing out the
/// host's three parts.
///
/// The handle holds the host's name only; each part is found by a `match` in its own accessor
/// ([`Self::run`], [`Self::relay`], [`Self::files`]). A program that never asks for a part
/// does not link it: `hookd-relay` uses [`Self::relay`] alone and so carries none of the
/// settings editing (`toml_edit`) or condition matching the other parts pull in.
#[derive(Clone, Copy)]
pub struct Dialect {
    id: HostId,
    name: &'static str,
    product: &'static str,
}

/// The registry: one line per host, `CONST = module::Type;`. It defines the [`Dialect`]
/// constants, [`Dialect::ALL`] and the three part accessors.
macro_rules! hosts {
    ($($(#[$doc:meta])* $konst:ident = $host:path;)+) => {
        /// Which registered host a [`Dialect`] is.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[allow(clippy::upper_case_acronyms)]
        enum HostId {
            $($konst,)+
        }

        impl Dialect {
            $(
                $(#[$doc])*
                pub const $konst: Dialect = Dialect {
                    id: HostId::$konst,
                    name: <$host as Host>::NAME,
                    product: <$host as Host>::PRODUCT,
                };
            )+

            /// Every host hookd speaks, in registry order.
            pub const ALL: &'static [Dialect] = &[$(Dialect::$konst),+];

            /// What the daemon asks of the host: running hooks of its dialect, planning and
            /// merging the events it relays.
            pub fn run(self) -> &'static dyn HostRun {
                match self.id {
                    $(HostId::$konst => &$host,)+
                }
            }

            /// The relay's translation between the host and hookd.
            pub fn relay(self) -> &'static dyn HostRelay {
                match self.id {
                    $(HostId::$konst => &$host,)+
                }
            }

            /// The host's settings files and how `hookctl` wires the relay into them.
            pub fn files(self) -> &'static dyn HostFiles {
                match self.id {
                    $(HostId::$konst => &$host,)+
                }
            }
        }
    };
}

// Adding a host is a module and a line here.
hosts! {
    /// Gemini CLI (hookd's own model).
    GEMINI = gemini::Gemini;
    /// Claude Code.
    CLAUDE = claude::Claude;
    /// OpenAI Codex CLI.
    CODEX = codex::Codex;
    /// GitHub Copilot CLI.
    COPILOT = copilot::Copilot;
}

impl Dialect {
    /// The dialect named `name` (its [`Host::NAME`]).
    pub fn parse(name: &str) -> Option<Dialect> {
        Dialect::ALL
            .iter()
            .copied()
            .find(|dialect| dialect.name() == name)
    }

    /// The spelling in settings (`"dialect"`), on the wire (`relayed_by`) and on the command
    /// line (`--dialect`, `--host`): `gemini`, `claude`, ...
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The spelling in settings and on the wire (the same as [`Self::name`]).
    pub fn as_str(self) -> &'static str {
        self.name
    }

    /// The product's name in messages: `Gemini CLI`, `Claude Code`, ...
    pub fn product(self) -> &'static str {
        self.product
    }

    /// Every name, for messages (`gemini, claude`).
    pub fn names() -> String {
        Dialect::ALL
            .iter()
            .map(|dialect| dialect.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The kind of layer of the host's own settings files read as layers
    /// ([`HostFiles::user_layer_files`]): [`LayerFile::Host`] with the host's name.
    pub fn layer_file(self) -> LayerFile {
        LayerFile::Host(self.name)
    }

    /// The host whose own settings files a layer of kind `file` is; `None` for Gemini CLI's
    /// and hookd's files.
    pub fn of_layer(file: LayerFile) -> Option<Dialect> {
        match file {
            LayerFile::Host(name) => Dialect::parse(name),
            LayerFile::Gemini | LayerFile::Hookd => None,
        }
    }

    /// The hosts whose own settings files hookd can read as layers
    /// ([`HostFiles::has_layer_files`]), in registry order.
    pub fn with_layer_files() -> impl Iterator<Item = Dialect> {
        Dialect::ALL
            .iter()
            .copied()
            .filter(|dialect| dialect.files().has_layer_files())
    }

    /// Whether this is hookd's own language (Gemini CLI's), which needs no translation.
    pub fn is_native(self) -> bool {
        self == Dialect::GEMINI
    }

    /// The environment of a hook written in this dialect: `base` (the client's environment,
    /// for a relayed event the relaying host's hook environment) less what `redaction` removes
    /// and less every variable another registered host sets for its hooks that this one does
    /// not, then this host's [`HostRun::hook_variables`], then the hook's own `hook_env`.
    pub fn hook_environment(
        self,
        base: &[(String, String)],
        redaction: &EnvRedaction,
        vars: &CommandVars<'_>,
        hook_env: &[(String, String)],
    ) -> Vec<(String, String)> {
        let set = self.run().hook_variables(vars);
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
                .run()
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

impl PartialEq for Dialect {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Dialect {}

impl Hash for Dialect {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl fmt::Debug for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dialect({})", self.name)
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;

    #[test]
    fn every_dialect_parses_its_own_name_only() {
        for dialect in Dialect::ALL {
            assert_eq!(Dialect::parse(dialect.name()), Some(*dialect));
            assert_eq!(Dialect::parse(&dialect.name().to_uppercase()), None);
            assert!(!dialect.relay().events().is_empty(), "{dialect}");
            for event in dialect.relay().events() {
                assert!(
                    dialect.relay().event_to_hookd(event).is_some(),
                    "{dialect} {event}"
                );
            }
        }
        assert_eq!(Dialect::parse(""), None);
        let mut names: Vec<_> = Dialect::ALL.iter().map(|d| d.name()).collect();
        names.dedup();
        assert_eq!(names.len(), Dialect::ALL.len(), "names are unique");
    }

    #[test]
    fn names_round_trip_and_are_case_sensitive() {
        for event in HookEventName::ALL {
            assert_eq!(event.as_str().parse::<HookEventName>(), Ok(event));
        }
        assert!("beforetool".parse::<HookEventName>().is_err());
        assert!("BeforeTool ".parse::<HookEventName>().is_err());
        // Claude Code's names of Gemini's events are not hookd's names for them.
        assert!("PreToolUse".parse::<HookEventName>().is_err());
        assert!("Stop".parse::<HookEventName>().is_err());
        // Each host's own events are held as themselves, naming their host.
        for dialect in Dialect::ALL {
            for spec in dialect.relay().own_events() {
                assert_eq!(spec.host, dialect.name(), "{}", spec.name);
                let event = spec.name.parse::<HookEventName>().expect(spec.name);
                assert_eq!(
                    event,
                    HookEventName::Host(crate::event::HostEvent::new(spec))
                );
                assert_eq!(event.host_only().map(|e| e.host()), Some(dialect.name()));
            }
        }
        assert_eq!(Dialect::CLAUDE.relay().own_events().len(), 25);
        assert_eq!(HookEventName::all().count(), 39);
        assert!("permissionrequest".parse::<HookEventName>().is_err());
    }

    #[test]
    fn claude_events_match_on_claude_codes_field() {
        // (event, matcher field, matcher kind)
        let cases = [
            (
                "PermissionRequest",
                Some("tool_name"),
                crate::event::MatcherKind::ToolName,
            ),
            (
                "PostToolUseFailure",
                Some("tool_name"),
                crate::event::MatcherKind::ToolName,
            ),
            (
                "SubagentStart",
                Some("agent_type"),
                crate::event::MatcherKind::ToolName,
            ),
            (
                "ConfigChange",
                Some("source"),
                crate::event::MatcherKind::ToolName,
            ),
            (
                "FileChanged",
                Some("file_path"),
                crate::event::MatcherKind::ToolName,
            ),
            (
                "PreModelSwitch",
                Some("to_model"),
                crate::event::MatcherKind::ToolName,
            ),
            ("TaskCompleted", None, crate::event::MatcherKind::Ignored),
            ("CwdChanged", None, crate::event::MatcherKind::Ignored),
        ];
        for (name, field, kind) in cases {
            let event: HookEventName = name.parse().expect(name);
            assert_eq!(event.matcher_field(), field, "{name}");
            assert_eq!(event.matcher_kind(), kind, "{name}");
            assert_eq!(
                event.merge_strategy(),
                crate::event::MergeStrategy::OrMerge,
                "{name}"
            );
        }
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
            assert_eq!(
                dialect.run().hook_command(line, &vars),
                expected,
                "{dialect}"
            );
            // Only Claude Code runs its hooks with another shell than bash.
            let shell = (dialect == Dialect::CLAUDE).then_some("/bin/sh");
            assert_eq!(dialect.run().hook_shell(), shell, "{dialect}");
            assert_eq!(
                dialect.run().expands_settings_strings(),
                expands,
                "{dialect}"
            );
        }
    }

    #[test]
    fn a_host_whose_files_can_be_layers_names_them_and_only_it_runs_them() {
        use crate::model::Source;
        // (dialect, its files can be layers)
        let cases = [
            (Dialect::GEMINI, false),
            (Dialect::CLAUDE, true),
            (Dialect::CODEX, false),
            (Dialect::COPILOT, true),
        ];
        let no_var = |_: &str| None;
        let home = HomeEnv {
            home: Path::new("/h"),
            var: &no_var,
        };
        for (dialect, layers) in cases {
            let files = dialect.files();
            assert_eq!(files.has_layer_files(), layers, "{dialect}");
            // Fixed files (Claude Code's) or folders of files (Copilot CLI's).
            let user = files.user_layer_files(&home).len() + files.user_layer_folders(&home).len();
            assert_eq!(user > 0, layers, "{dialect}");
            let project = files.project_layer_files(Path::new("/w")).len()
                + files.project_layer_folders(Path::new("/w")).len();
            assert_eq!(project > 0, layers, "{dialect}");
            assert_eq!(Dialect::of_layer(dialect.layer_file()), Some(dialect));
            assert_eq!(dialect.layer_file().label(), dialect.name());
            for other in Dialect::ALL {
                for source in [Source::User, Source::Project] {
                    // The host runs its own files itself; no other host reads them, but for
                    // a repository's Claude Code settings, which Copilot CLI runs too.
                    let runs = other.run().runs_layer(source, dialect.layer_file());
                    let copilot_runs_claude = *other == Dialect::COPILOT
                        && dialect == Dialect::CLAUDE
                        && source == Source::Project;
                    assert_eq!(
                        runs,
                        layers && (*other == dialect || copilot_runs_claude),
                        "{other} {dialect} {source:?}"
                    );
                }
            }
        }
        assert_eq!(
            Dialect::with_layer_files().collect::<Vec<_>>(),
            [Dialect::CLAUDE, Dialect::COPILOT]
        );
        assert_eq!(Dialect::of_layer(LayerFile::Gemini), None);
        assert_eq!(Dialect::of_layer(LayerFile::Hookd), None);
        assert_eq!(Dialect::of_layer(LayerFile::Host("nobody")), None);
    }

    #[test]
    fn claude_code_layer_files_follow_its_config_dir() {
        // (CLAUDE_CONFIG_DIR, user layer file): only an absolute directory counts.
        let cases = [
            (None, "/h/.claude/settings.json"),
            (Some("/c"), "/c/settings.json"),
            (Some("rel"), "/h/.claude/settings.json"),
        ];
        for (dir, expected) in cases {
            let var = move |name: &str| {
                (name == "CLAUDE_CONFIG_DIR")
                    .then_some(dir)
                    .flatten()
                    .map(str::to_owned)
            };
            let env = HomeEnv {
                home: Path::new("/h"),
                var: &var,
            };
            let files = Dialect::CLAUDE.files().user_layer_files(&env);
            assert_eq!(files, [PathBuf::from(expected)], "{dir:?}");
        }
        assert_eq!(
            Dialect::CLAUDE.files().project_layer_files(Path::new("/w")),
            [
                PathBuf::from("/w/.claude/settings.json"),
                PathBuf::from("/w/.claude/settings.local.json"),
            ]
        );
    }

    #[test]
    fn relay_handlers_carry_the_command_and_a_timeout_in_the_host_unit() {
        for dialect in Dialect::ALL {
            let handler = dialect.files().relay_handler("X", "hookd-relay X", 70_000);
            assert_eq!(handler["command"], "hookd-relay X", "{dialect}");
            // `timeout`, or Copilot CLI's `timeoutSec`.
            let timeout = handler.get("timeout").or_else(|| handler.get("timeoutSec"));
            assert_eq!(
                timeout.and_then(Value::as_u64),
                Some(70_000 / dialect.files().timeout_unit_ms()),
                "{dialect}"
            );
        }
    }
}
