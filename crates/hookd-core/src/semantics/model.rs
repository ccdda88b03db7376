//! The hook model: where a hook came from, what it is, and its three identities (spec §1.4–§1.6).

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::exec::{ExecMode, parse_drop_fields, parse_exec_mode, parse_max_memory};
use crate::failure::{FailurePolicy, parse_on_failure};

/// The layer a hook was defined in (hookd's real layers: real labels, not Gemini CLI's blanket `project`).
///
/// The derived order is the precedence order used for planning: the managed file first, then
/// project, extensions last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// An administrator's hooks file (`/etc/hookd/hooks.json` or `HOOKD_MANAGED_HOOKS`),
    /// loaded only when root owns it and every directory above it: its hooks come first and
    /// no other layer can disable, reorder or override them (`crate::registry`).
    Managed,
    /// `<project dir>/.gemini/settings.json`.
    Project,
    /// `~/.gemini/settings.json` (honouring `GEMINI_CLI_HOME`).
    User,
    /// The system override file (`/etc/gemini-cli/settings.json` or
    /// `GEMINI_CLI_SYSTEM_SETTINGS_PATH`).
    System,
    /// The system defaults file (`system-defaults.json` or `GEMINI_CLI_SYSTEM_DEFAULTS_PATH`).
    SystemDefaults,
    /// An extension's `hooks/hooks.json`.
    Extension,
}

impl Source {
    /// The label shown to users and sent on the wire.
    pub fn label(self) -> &'static str {
        match self {
            Source::Managed => "managed",
            Source::Project => "project",
            Source::User => "user",
            Source::System => "system",
            Source::SystemDefaults => "system-defaults",
            Source::Extension => "extension",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Whose settings file a layer is, which decides which host CLI also reads it and runs its
/// hooks itself (`crate::relayed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LayerFile {
    /// Gemini CLI's settings files and extensions (the layers of `Source`).
    #[default]
    Gemini,
    /// hookd's own hooks files (`~/.config/hookd/hooks.json`, `<project>/.hookd/hooks.json`),
    /// which no host reads.
    Hookd,
    /// A host's own settings files read as layers (Claude Code's, with `hookd
    /// --claude-settings`), named by the host's dialect name (`"claude"`). Which files they
    /// are, and how their hooks read as hookd's, is the host's (`dialect::HostFiles`).
    Host(&'static str),
}

impl LayerFile {
    /// The label used in messages.
    pub fn label(self) -> &'static str {
        match self {
            LayerFile::Gemini => "gemini",
            LayerFile::Hookd => "hookd",
            LayerFile::Host(name) => name,
        }
    }
}

/// The `type` of a hook config entry (spec §1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookType {
    /// `"command"`: a shell command line.
    Command,
    /// `"plugin"`: behaves exactly like `command`.
    Plugin,
    /// `"runtime"`: a programmatic hook; from a file it has no function and always fails.
    Runtime,
    /// `"builtin"`: a filter that runs inside hookd, with no process (hookd's own type; see
    /// `crate::redact` for the `redact` filter).
    Builtin,
    /// `"policy"`: a Rego policy (its `policy` file and optional `data` files) evaluated by
    /// hookd's own evaluator, started once and kept as a persistent worker (hookd's own
    /// type; docs/policies.md). Its `command` is set to a description of its files, which
    /// names it in messages and trust records and is never run.
    Policy,
}

impl HookType {
    /// Parses the `type` string; anything else is invalid.
    pub fn parse(s: &str) -> Option<HookType> {
        match s {
            "command" => Some(HookType::Command),
            "plugin" => Some(HookType::Plugin),
            "runtime" => Some(HookType::Runtime),
            "builtin" => Some(HookType::Builtin),
            "policy" => Some(HookType::Policy),
            _ => None,
        }
    }

    /// The `type` string as written in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            HookType::Command => "command",
            HookType::Plugin => "plugin",
            HookType::Runtime => "runtime",
            HookType::Builtin => "builtin",
            HookType::Policy => "policy",
        }
    }
}

/// The default hook timeout in milliseconds (spec §4.5); a Claude-dialect hook's is
/// [`crate::dialect::claude::CLAUDE_DEFAULT_TIMEOUT_MS`].
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// One validated hook config entry (the inner `hooks[]` element of a definition).
#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    /// The hook type.
    pub hook_type: HookType,
    /// The command line (required and non-empty for `command`; may be present for `plugin`).
    pub command: Option<String>,
    /// The optional name.
    pub name: Option<String>,
    /// The optional description (display only).
    pub description: Option<String>,
    /// The timeout in milliseconds, if the entry set one.
    pub timeout_ms: Option<u64>,
    /// Extra environment variables for this hook, in definition order.
    pub env: Vec<(String, String)>,
    /// The entry exactly as it was in the file (after expansion/hydration), keys in file order.
    /// Later features read their own keys from here.
    pub raw: Map<String, Value>,
}

impl HookConfig {
    /// The display name (spec §1.6): used for the disabled list, enable/disable, messages.
    ///
    /// Command-like hooks: first non-empty of `name`, `command`, `unknown-command`;
    /// other types: `name`, else `unknown-hook`.
    pub fn display_name(&self) -> &str {
        match self.hook_type {
            HookType::Command | HookType::Plugin | HookType::Policy => non_empty(&self.name)
                .or_else(|| non_empty(&self.command))
                .unwrap_or("unknown-command"),
            HookType::Runtime | HookType::Builtin => {
                non_empty(&self.name).unwrap_or("unknown-hook")
            }
        }
    }

    /// The name the `/hooks panel` shows: `name`, else `command`, else `unknown-hook`.
    pub fn panel_name(&self) -> &str {
        non_empty(&self.name)
            .or_else(|| non_empty(&self.command))
            .unwrap_or("unknown-hook")
    }

    /// The plan de-duplication key `"<name>:<command>"` (command part only for `command` hooks).
    pub fn dedup_key(&self) -> String {
        let name = self.name.as_deref().unwrap_or("");
        let command = match self.hook_type {
            HookType::Command | HookType::Policy => self.command.as_deref().unwrap_or(""),
            _ => "",
        };
        format!("{name}:{command}")
    }

    /// Claude Code's de-duplication key: identical handlers run once, a command hook by its
    /// command string whatever its name. Used for events Claude Code relays, where it is
    /// Claude's rule that applies; other hook types keep [`HookConfig::dedup_key`].
    pub fn claude_dedup_key(&self) -> String {
        match self.hook_type {
            HookType::Command => format!("command:{}", self.command.as_deref().unwrap_or("")),
            _ => self.dedup_key(),
        }
    }

    /// Gemini CLI's project-hook trust fingerprint: the same `"<name>:<command>"` string.
    pub fn trust_key(&self) -> String {
        let name = self.name.as_deref().unwrap_or("");
        let command = self.command.as_deref().unwrap_or("");
        format!("{name}:{command}")
    }

    /// Whether this hook runs a command (`command` and `plugin` types).
    pub fn runs_command(&self) -> bool {
        matches!(self.hook_type, HookType::Command | HookType::Plugin)
    }

    /// Whether this hook runs in a process of its own (command hooks, and policy hooks in
    /// hookd's evaluator): what trust, the breaker and the process limits apply to.
    pub fn runs_process(&self) -> bool {
        matches!(
            self.hook_type,
            HookType::Command | HookType::Plugin | HookType::Policy
        )
    }

    /// A policy hook's files, the policy first, each relative path resolved against the
    /// directory of `settings_file` (the file that defines the hook); `None` for other hooks.
    pub fn policy_sources(&self, settings_file: &std::path::Path) -> Option<Vec<PathBuf>> {
        let (policy, data) = self.policy_files()?;
        let base = settings_file.parent().unwrap_or(std::path::Path::new("/"));
        Some(
            std::iter::once(policy)
                .chain(data)
                .map(|file| base.join(file))
                .collect(),
        )
    }

    /// A policy hook's files as written (its `policy` and `data` keys), relative paths as
    /// they are; `None` for other hooks.
    pub fn policy_files(&self) -> Option<(String, Vec<String>)> {
        if self.hook_type != HookType::Policy {
            return None;
        }
        let policy = self.raw.get("policy")?.as_str()?.to_owned();
        let data = match self.raw.get("data") {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Some((policy, data))
    }

    /// The hook's own failure policy (its `on_failure` key, hookd's failure policy); `None` when the key
    /// is absent or invalid, so that the daemon's default applies. Settings parsing reports an
    /// invalid value as a warning.
    pub fn on_failure(&self) -> Option<FailurePolicy> {
        parse_on_failure(self.raw.get("on_failure")).ok().flatten()
    }

    /// How the hook's process is run (its `mode`, `pool`, `idle_timeout` and `prewarm` keys;
    /// see [`crate::exec`]). Invalid keys fall back to their defaults; settings parsing reports
    /// them as warnings.
    pub fn exec_mode(&self) -> ExecMode {
        parse_exec_mode(&self.raw).0
    }

    /// The most private writable memory the hook's process may allocate, in bytes (its
    /// `max_memory_mb` key, enforced as `RLIMIT_DATA`); `None` when unlimited.
    pub fn max_memory_bytes(&self) -> Option<u64> {
        parse_max_memory(&self.raw).0
    }

    /// The payload keys left out of the hook's stdin (its `drop_fields` key; none by default).
    pub fn drop_fields(&self) -> Vec<String> {
        parse_drop_fields(&self.raw).0
    }

    /// Whether the hook runs in the background, outside the event's decision (its `async`
    /// key; only command hooks, which have a process to run, can).
    pub fn is_async(&self) -> bool {
        self.runs_command() && crate::exec::parse_async(&self.raw).0
    }
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

/// Where exactly a hook was defined, for messages and the panel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    /// The file the hook was read from.
    pub path: Option<PathBuf>,
    /// The extension's name, for extension hooks.
    pub extension: Option<String>,
    /// Whose file it is.
    pub file: LayerFile,
}

/// One hook as the registry holds it: the config plus everything about its definition.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEntry {
    /// The event the hook is registered for.
    pub event: crate::event::HookEventName,
    /// The hook config entry.
    pub config: HookConfig,
    /// The layer it came from.
    pub source: Source,
    /// The file (and extension) it came from.
    pub origin: Origin,
    /// The definition's raw `matcher` string, if any.
    pub matcher: Option<String>,
    /// Whether the definition said `sequential: true`.
    pub sequential: bool,
    /// `false` when the display name is in `hooksConfig.disabled`; disabled hooks are listed but
    /// never planned.
    pub enabled: bool,
    /// Whether the hook needs the user's trust to run, and whether it has it (hookd's project-hook trust):
    /// only project hooks that run a command do.
    pub trust: crate::hooktrust::HookTrust,
    /// The compiled filter of a `builtin` hook (compiled once per registry build); `None` for
    /// every other type.
    pub builtin: Option<std::sync::Arc<crate::redact::Redactor>>,
    /// [`HookEntry::identity`], computed on first use; build entries with `Default::default()`.
    pub identity: Memo<String>,
}

impl HookEntry {
    /// The hook's identity across registry rebuilds: its event, layer, file and `name:command`
    /// (what a hook's last run is remembered by). Computed once per entry.
    pub fn identity(&self) -> &str {
        self.identity.0.get_or_init(|| {
            let origin = self
                .origin
                .path
                .as_ref()
                .map(|path| path.display().to_string())
                .unwrap_or_default();
            format!(
                "{}\u{0}{}\u{0}{origin}\u{0}{}",
                self.event.as_str(),
                self.source.label(),
                self.config.dedup_key()
            )
        })
    }
}

/// A value computed once, on first use, that takes no part in comparisons: two entries equal
/// but for whether one of them has computed it yet are equal.
#[derive(Debug, Clone, Default)]
pub struct Memo<T>(std::sync::OnceLock<T>);

impl<T> PartialEq for Memo<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(hook_type: HookType, name: Option<&str>, command: Option<&str>) -> HookConfig {
        HookConfig {
            hook_type,
            command: command.map(str::to_owned),
            name: name.map(str::to_owned),
            description: None,
            timeout_ms: None,
            env: Vec::new(),
            raw: Map::new(),
        }
    }

    #[test]
    fn timeouts_default_to_the_dialects_host() {
        // (dialect key, timeout set, effective)
        let cases = [
            (None, None, 60_000),
            (Some("gemini"), None, 60_000),
            (Some("claude"), None, 600_000),
            (Some("claude"), Some(5_000), 5_000),
            (None, Some(5_000), 5_000),
            // An invalid dialect is Gemini's (settings parsing warns about it).
            (Some("Claude"), None, 60_000),
        ];
        for (dialect, timeout, expected) in cases {
            let mut hook = config(HookType::Command, None, Some("c"));
            hook.timeout_ms = timeout;
            if let Some(dialect) = dialect {
                hook.raw.insert("dialect".to_owned(), Value::from(dialect));
            }
            assert_eq!(hook.timeout_ms(), expected, "{dialect:?} {timeout:?}");
        }
    }

    #[test]
    fn identities_follow_spec_1_6() {
        // (type, name, command, display, panel, dedup)
        let cases = [
            (HookType::Command, Some("n"), Some("c"), "n", "n", "n:c"),
            (HookType::Command, None, Some("c"), "c", "c", ":c"),
            (HookType::Command, Some(""), Some("c"), "c", "c", ":c"),
            (
                HookType::Command,
                None,
                None,
                "unknown-command",
                "unknown-hook",
                ":",
            ),
            (HookType::Plugin, Some("p"), Some("c"), "p", "p", "p:"),
            (HookType::Plugin, None, Some("c"), "c", "c", ":"),
            (
                HookType::Runtime,
                None,
                None,
                "unknown-hook",
                "unknown-hook",
                ":",
            ),
            (HookType::Runtime, Some("r"), None, "r", "r", "r:"),
        ];
        for (hook_type, name, command, display, panel, dedup) in cases {
            let c = config(hook_type, name, command);
            assert_eq!(c.display_name(), display, "{c:?}");
            assert_eq!(c.panel_name(), panel, "{c:?}");
            assert_eq!(c.dedup_key(), dedup, "{c:?}");
        }
    }

    fn entry(
        event: crate::event::HookEventName,
        source: Source,
        path: &str,
        command: &str,
    ) -> HookEntry {
        HookEntry {
            event,
            config: config(HookType::Command, None, Some(command)),
            source,
            origin: Origin {
                path: Some(PathBuf::from(path)),
                extension: None,
                file: LayerFile::Gemini,
            },
            matcher: None,
            sequential: false,
            enabled: true,
            trust: crate::hooktrust::HookTrust::NotRequired,
            builtin: None,
            identity: Memo::default(),
        }
    }

    #[test]
    fn identity_separates_event_layer_file_and_command_and_survives_clones() {
        use crate::event::HookEventName::{AfterTool, BeforeTool};
        let base = entry(BeforeTool, Source::User, "/a/settings.json", "./x.sh");
        let others = [
            entry(AfterTool, Source::User, "/a/settings.json", "./x.sh"),
            entry(BeforeTool, Source::Project, "/a/settings.json", "./x.sh"),
            entry(BeforeTool, Source::User, "/b/settings.json", "./x.sh"),
            entry(BeforeTool, Source::User, "/a/settings.json", "./y.sh"),
        ];
        for other in &others {
            assert_ne!(base.identity(), other.identity(), "{other:?}");
        }
        // Computed once; a clone (or a fresh build of the same definition) has the same one.
        let first = base.identity().as_ptr();
        assert_eq!(base.identity().as_ptr(), first);
        assert_eq!(base.clone().identity(), base.identity());
        let rebuilt = entry(BeforeTool, Source::User, "/a/settings.json", "./x.sh");
        assert_eq!(rebuilt.identity(), base.identity());
        // Whether it was computed takes no part in equality.
        assert_eq!(
            rebuilt,
            entry(BeforeTool, Source::User, "/a/settings.json", "./x.sh")
        );
    }

    #[test]
    fn on_failure_comes_from_the_raw_entry() {
        // (raw `on_failure` value, policy)
        let cases = [
            (None, None),
            (Some(Value::Null), None),
            (Some(Value::from("deny")), Some(FailurePolicy::Deny)),
            (Some(Value::from("ask")), Some(FailurePolicy::Ask)),
            (Some(Value::from("allow")), Some(FailurePolicy::Allow)),
            (Some(Value::from("DENY")), None),
            (Some(Value::from(1)), None),
        ];
        for (value, expected) in cases {
            let mut c = config(HookType::Command, None, Some("c"));
            if let Some(value) = value.clone() {
                c.raw.insert("on_failure".to_owned(), value);
            }
            assert_eq!(c.on_failure(), expected, "{value:?}");
        }
    }

    #[test]
    fn source_order_is_managed_project_user_system_defaults_extension() {
        let mut sources = [
            Source::Extension,
            Source::Managed,
            Source::System,
            Source::User,
            Source::SystemDefaults,
            Source::Project,
        ];
        sources.sort();
        assert_eq!(
            sources,
            [
                Source::Managed,
                Source::Project,
                Source::User,
                Source::System,
                Source::SystemDefaults,
                Source::Extension
            ]
        );
    }
}
