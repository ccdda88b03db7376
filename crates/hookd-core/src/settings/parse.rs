//! One settings file, parsed and validated into what the registry needs (spec §1.1, §1.4,
//! §1.5).
//!
//! A settings file is JSON with comments ([`crate::jsonc`]). After parsing, every string value
//! is passed through the load-time environment expansion ([`crate::envexpand`]), exactly as
//! Gemini CLI does before anything else reads the file, except the strings of a hook written
//! in the dialect of a host that does not expand its settings (`"dialect": "claude"` or
//! `"codex"`: [`crate::dialect::HostRun::expands_settings_strings`]), which are read as
//! their host reads them. Then we extract:
//!
//! - `hooks`: per event, the hook definitions, validated entry by entry (§1.4);
//! - `hooksConfig.enabled`, `hooksConfig.disabled`, `hooksConfig.notifications` (§1.5);
//! - `security.folderTrust.enabled`, which the loader needs to decide folder trust;
//! - `security.environmentVariableRedaction.{enabled,allowed,blocked}` (§4.3), which decide
//!   what of the base environment hooks get ([`crate::sanitize`]).
//!
//! Validation mirrors Gemini CLI: the legacy keys `enabled`, `disabled` and `notifications`
//! inside `hooks` are skipped silently; any other unknown event key is skipped with the warning
//! `Invalid hook event name: "<key>" from <source> config. Skipping.`; a value that is not an
//! array is wrapped into a one-element array (Gemini CLI's merge does this for the eleven known
//! events, whose schema default is an array); definitions that are not objects or have no
//! `hooks` array are discarded, and so are invalid entries, each with a warning, while their
//! valid siblings are kept.
//!
//! A file whose text is not JSON, or whose top level is not an object, yields one error
//! [`Diagnostic`] naming the file and nothing else: the file is skipped entirely, and the other
//! layers are unaffected. Where Gemini CLI would crash or behave erratically on a value of the
//! wrong type (a numeric `matcher`, a string `hooksConfig`), we ignore the value with a warning
//! instead; the module tests list each case.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::envexpand;
use crate::event::HookEventName;
use crate::jsonc;
use crate::model::{HookConfig, HookType, Source};

/// How serious a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Something was skipped entirely, such as a whole file.
    Error,
    /// Part of a file was ignored; the rest is used.
    Warning,
    /// Worth knowing, but nothing is wrong with the configuration.
    Info,
}

impl Severity {
    /// The lower-case label (`error`, `warning`, `info`).
    pub fn label(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A problem (or notable fact) found while loading configuration.
///
/// Displayed as `<path>:<line>:<col>: <key>: <message>`, leaving out the parts that are
/// unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// The file concerned, if any.
    pub path: Option<PathBuf>,
    /// The key path at fault, like `hooks.BeforeTool[0].hooks[1].command`.
    pub key: Option<String>,
    /// The 1-based line, for syntax errors.
    pub line: Option<usize>,
    /// The 1-based byte column, for syntax errors.
    pub column: Option<usize>,
    /// What happened, as a sentence.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic with only a severity and a message.
    pub fn new(severity: Severity, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            path: None,
            key: None,
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// An error diagnostic.
    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, message)
    }

    /// A warning diagnostic.
    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, message)
    }

    /// An informational diagnostic.
    pub fn info(message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Info, message)
    }

    /// Sets the file.
    pub fn with_path(mut self, path: impl Into<PathBuf>) -> Diagnostic {
        self.path = Some(path.into());
        self
    }

    /// Sets the key path.
    pub fn with_key(mut self, key: impl Into<String>) -> Diagnostic {
        self.key = Some(key.into());
        self
    }

    /// Sets the line and column.
    pub fn with_position(mut self, line: usize, column: usize) -> Diagnostic {
        self.line = Some(line);
        self.column = Some(column);
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}", path.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
            f.write_str(": ")?;
        }
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// One validated hook definition (a `hooks.<Event>[i]` group).
#[derive(Debug, Clone, PartialEq)]
pub struct HookDefinition {
    /// The raw `matcher` string, if it was a string.
    pub matcher: Option<String>,
    /// Whether the definition said `sequential: true` (exactly `true`).
    pub sequential: bool,
    /// The valid hook config entries, in file order.
    pub hooks: Vec<HookConfig>,
}

/// The definitions a file gives for one event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventHooks {
    /// The event.
    pub event: HookEventName,
    /// Its definitions, in file order.
    pub definitions: Vec<HookDefinition>,
}

/// The `hooksConfig` keys a file sets; `None` where the file does not set one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HooksConfig {
    /// `hooksConfig.enabled`, the master switch.
    pub enabled: Option<bool>,
    /// `hooksConfig.disabled`, display names of hooks to register as disabled.
    pub disabled: Option<Vec<String>>,
    /// `hooksConfig.notifications`, the TUI's "Executing Hook(s)" indicator.
    pub notifications: Option<bool>,
}

/// The `security.environmentVariableRedaction` keys a file sets; `None` where the file does
/// not set one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvRedactionSettings {
    /// `enabled`.
    pub enabled: Option<bool>,
    /// `allowed`: names always passed to hooks.
    pub allowed: Option<Vec<String>>,
    /// `blocked`: names never passed to hooks.
    pub blocked: Option<Vec<String>>,
}

/// What one settings file contributes.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsLayer {
    /// The layer the file belongs to.
    pub source: Source,
    /// The file.
    pub path: PathBuf,
    /// Valid hook definitions per event, events in file order.
    pub hooks: Vec<EventHooks>,
    /// The file's `hooksConfig` values.
    pub hooks_config: HooksConfig,
    /// `security.folderTrust.enabled`, if the file sets it.
    pub folder_trust_enabled: Option<bool>,
    /// The file's `security.environmentVariableRedaction` values.
    pub env_redaction: EnvRedactionSettings,
    /// The file's `hooks` object after expansion, unvalidated, as Gemini CLI hands the
    /// workspace's to its project-hook trust check (§1.8).
    pub raw_hooks: Option<Map<String, Value>>,
}

impl SettingsLayer {
    /// The number of valid hook entries across all events.
    pub fn hook_count(&self) -> usize {
        self.hooks
            .iter()
            .flat_map(|event| &event.definitions)
            .map(|definition| definition.hooks.len())
            .sum()
    }
}

/// The outcome of parsing one settings file.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSettings {
    /// The layer, or `None` when the file was skipped because of an error.
    pub layer: Option<SettingsLayer>,
    /// Everything worth reporting, errors and warnings, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

/// The load-time expansion of the `hooks` member: every string, as Gemini CLI does, but a
/// hook entry whose dialect's host does not expand its settings is left as written (a Claude
/// Code hook that prints `'$HOME'` prints it literally under hookd too). The dialect is read
/// from the entry as written.
fn expand_hooks(hooks: &mut Value, env: &dyn Fn(&str) -> Option<String>) {
    let Value::Object(events) = hooks else {
        envexpand::expand_value(hooks, env);
        return;
    };
    for (_, definitions) in events.iter_mut() {
        let Value::Array(definitions) = definitions else {
            envexpand::expand_value(definitions, env);
            continue;
        };
        for definition in definitions.iter_mut() {
            let Value::Object(definition) = definition else {
                envexpand::expand_value(definition, env);
                continue;
            };
            for (key, member) in definition.iter_mut() {
                match (key.as_str(), member) {
                    ("hooks", Value::Array(entries)) => {
                        for entry in entries.iter_mut() {
                            let expands = match entry {
                                Value::Object(raw) => crate::dialect::parse_dialect(raw)
                                    .0
                                    .run()
                                    .expands_settings_strings(),
                                _ => true,
                            };
                            if expands {
                                envexpand::expand_value(entry, env);
                            }
                        }
                    }
                    (_, member) => envexpand::expand_value(member, env),
                }
            }
        }
    }
}

/// Keys inside `hooks` that older versions used for `hooksConfig`; skipped without a word.
const LEGACY_HOOKS_KEYS: [&str; 3] = ["enabled", "disabled", "notifications"];

/// Parses the text of the settings file at `path`, belonging to layer `source`.
///
/// `env` resolves variables for the load-time expansion of string values.
pub fn parse_settings(
    source: Source,
    path: &Path,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> ParsedSettings {
    let mut diagnostics = Vec::new();
    let mut root = match jsonc::parse(text) {
        Ok(Value::Object(root)) => root,
        Ok(_) => {
            diagnostics.push(
                Diagnostic::error("settings file must contain a JSON object; file ignored")
                    .with_path(path),
            );
            return ParsedSettings {
                layer: None,
                diagnostics,
            };
        }
        Err(err) => {
            diagnostics.push(
                Diagnostic::error(format!("invalid JSON: {}; file ignored", err.message))
                    .with_path(path)
                    .with_position(err.line, err.column),
            );
            return ParsedSettings {
                layer: None,
                diagnostics,
            };
        }
    };
    for (key, value) in root.iter_mut() {
        if key == "hooks" {
            expand_hooks(value, env);
        } else {
            envexpand::expand_value(value, env);
        }
    }

    let mut hooks = Vec::new();
    let mut raw_hooks = None;
    match root.get("hooks") {
        None => {}
        Some(Value::Object(map)) => {
            hooks = parse_hooks_object(map, source, path, &mut diagnostics);
            raw_hooks = Some(map.clone());
        }
        Some(_) => diagnostics.push(
            Diagnostic::warning("`hooks` must be an object; the file's hooks are ignored")
                .with_path(path)
                .with_key("hooks"),
        ),
    }

    let hooks_config = parse_hooks_config(root.get("hooksConfig"), path, &mut diagnostics);
    let folder_trust_enabled = parse_folder_trust(&root, path, &mut diagnostics);
    let env_redaction = parse_env_redaction(&root, path, &mut diagnostics);

    ParsedSettings {
        layer: Some(SettingsLayer {
            source,
            path: path.to_owned(),
            hooks,
            hooks_config,
            folder_trust_enabled,
            env_redaction,
            raw_hooks,
        }),
        diagnostics,
    }
}

/// Validates a `hooks` object (of a settings file or an extension's `hooks.json`).
///
/// Settings files wrap a non-array event value into a one-element array, as Gemini CLI's
/// settings merge does; extension hooks are not merged, so a non-array value there is skipped
/// with a warning.
pub(crate) fn parse_hooks_object(
    hooks: &Map<String, Value>,
    source: Source,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<EventHooks> {
    let mut events = Vec::new();
    for (key, value) in hooks {
        if LEGACY_HOOKS_KEYS.contains(&key.as_str()) {
            continue;
        }
        let key_path = format!("hooks.{key}");
        let Ok(event) = key.parse::<HookEventName>() else {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "Invalid hook event name: \"{key}\" from {source} config. Skipping."
                ))
                .with_path(path)
                .with_key(key_path),
            );
            continue;
        };
        let wrapped;
        let definitions: &[Value] = match value {
            Value::Array(items) => items,
            _ if source == Source::Extension => {
                diagnostics.push(
                    Diagnostic::warning(format!(
                        "Hook definitions for event \"{key}\" from {source} config is not an \
                         array. Skipping."
                    ))
                    .with_path(path)
                    .with_key(key_path),
                );
                continue;
            }
            other => {
                wrapped = [other.clone()];
                &wrapped
            }
        };
        let mut valid = Vec::new();
        for (index, definition) in definitions.iter().enumerate() {
            let definition_path = format!("{key_path}[{index}]");
            if let Some(definition) = parse_definition(
                definition,
                event,
                source,
                path,
                &definition_path,
                diagnostics,
            ) {
                valid.push(definition);
            }
        }
        events.push(EventHooks {
            event,
            definitions: valid,
        });
    }
    events
}

/// Validates one hook definition; `None` when it is discarded.
fn parse_definition(
    value: &Value,
    event: HookEventName,
    source: Source,
    path: &Path,
    key_path: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<HookDefinition> {
    let Some(Value::Array(entries)) = value.as_object().and_then(|d| d.get("hooks")) else {
        diagnostics.push(
            Diagnostic::warning(format!(
                "Discarding invalid hook definition for {event} from {source} config: expected \
                 an object with a \"hooks\" array"
            ))
            .with_path(path)
            .with_key(key_path),
        );
        return None;
    };
    let definition = value.as_object()?;
    let matcher = match definition.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(matcher)) => Some(matcher.clone()),
        Some(other) => {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "matcher must be a string, not {}; the definition matches every firing",
                    json_type(other)
                ))
                .with_path(path)
                .with_key(format!("{key_path}.matcher")),
            );
            None
        }
    };
    let sequential = definition.get("sequential") == Some(&Value::Bool(true));
    let mut hooks = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let entry_path = format!("{key_path}.hooks[{index}]");
        if let Some(config) = parse_entry(entry, event, source, path, &entry_path, diagnostics) {
            hooks.push(config);
        }
    }
    Some(HookDefinition {
        matcher,
        sequential,
        hooks,
    })
}

/// Validates one hook config entry; `None` when it is discarded.
fn parse_entry(
    value: &Value,
    event: HookEventName,
    source: Source,
    path: &Path,
    key_path: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<HookConfig> {
    let warn = |diagnostics: &mut Vec<Diagnostic>, key: String, message: String| {
        diagnostics.push(Diagnostic::warning(message).with_path(path).with_key(key));
    };
    let Value::Object(raw) = value else {
        warn(
            diagnostics,
            key_path.to_owned(),
            format!(
                "Discarding invalid hook configuration for {event} from {source} config: \
                 expected an object, not {}",
                json_type(value)
            ),
        );
        return None;
    };

    let type_value = raw.get("type");
    let Some(hook_type) = type_value.and_then(Value::as_str).and_then(HookType::parse) else {
        let shown = type_value.map_or_else(|| "missing".to_owned(), Value::to_string);
        warn(
            diagnostics,
            format!("{key_path}.type"),
            format!(
                "Discarding hook for {event} from {source} config: invalid type {shown}; \
                 expected \"command\", \"plugin\", \"runtime\", \"builtin\" or \"policy\""
            ),
        );
        return None;
    };

    let mut optional_string = |field: &str| match raw.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            warn(
                diagnostics,
                format!("{key_path}.{field}"),
                format!(
                    "{field} must be a string, not {}; ignored",
                    json_type(other)
                ),
            );
            None
        }
    };
    let command = optional_string("command");
    let name = optional_string("name");
    let description = optional_string("description");

    match hook_type {
        HookType::Command if command.as_deref().is_none_or(str::is_empty) => {
            warn(
                diagnostics,
                format!("{key_path}.command"),
                format!(
                    "Discarding command hook for {event} from {source} config: missing command"
                ),
            );
            return None;
        }
        HookType::Runtime if name.as_deref().is_none_or(str::is_empty) => {
            warn(
                diagnostics,
                format!("{key_path}.name"),
                format!("Discarding runtime hook for {event} from {source} config: missing name"),
            );
            return None;
        }
        // A built-in filter (`crate::redact`) runs inside hookd on model output, so it is
        // only valid under AfterModel, and its settings must compile.
        HookType::Builtin => {
            if event != HookEventName::AfterModel {
                warn(
                    diagnostics,
                    format!("{key_path}.type"),
                    format!(
                        "Discarding builtin hook for {event} from {source} config: built-in \
                         filters run only under AfterModel"
                    ),
                );
                return None;
            }
            if let Err(error) = crate::redact::Redactor::from_raw(raw) {
                warn(
                    diagnostics,
                    format!("{key_path}.{}", error.key),
                    format!(
                        "Discarding builtin hook for {event} from {source} config: {}",
                        error.message
                    ),
                );
                return None;
            }
            if command.is_some() {
                warn(
                    diagnostics,
                    format!("{key_path}.command"),
                    "a builtin hook runs no command; ignored".to_owned(),
                );
            }
        }
        // A policy hook names its Rego file, and optionally JSON data files.
        HookType::Policy => {
            if let Err(message) = policy_keys(raw) {
                warn(
                    diagnostics,
                    key_path.to_owned(),
                    format!("Discarding policy hook for {event} from {source} config: {message}"),
                );
                return None;
            }
            if command.is_some() {
                warn(
                    diagnostics,
                    format!("{key_path}.command"),
                    "a policy hook runs hookd's evaluator, not a command; ignored".to_owned(),
                );
            }
        }
        _ => {}
    }

    let timeout_ms = match raw.get("timeout") {
        None | Some(Value::Null) => None,
        Some(Value::Number(number)) => Some(timeout_from_number(number)),
        Some(other) => {
            warn(
                diagnostics,
                format!("{key_path}.timeout"),
                format!(
                    "timeout must be a number of milliseconds, not {}; the default applies",
                    json_type(other)
                ),
            );
            None
        }
    };

    let mut env = Vec::new();
    match raw.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(vars)) => {
            for (var, value) in vars {
                match value {
                    Value::String(value) => env.push((var.clone(), value.clone())),
                    other => warn(
                        diagnostics,
                        format!("{key_path}.env.{var}"),
                        format!(
                            "environment values must be strings, not {}; ignored",
                            json_type(other)
                        ),
                    ),
                }
            }
        }
        Some(other) => warn(
            diagnostics,
            format!("{key_path}.env"),
            format!(
                "env must be an object of strings, not {}; ignored",
                json_type(other)
            ),
        ),
    }

    // The value itself is read from `raw` when the hook runs; here it is only validated.
    if let Err(error) = crate::policy::parse_on_failure(raw.get("on_failure")) {
        warn(
            diagnostics,
            format!("{key_path}.on_failure"),
            format!("on_failure: {error}; the daemon's default applies"),
        );
    }
    // `if`: a condition on the tool call (`crate::dialect::condition`); one that cannot be read is
    // ignored, so the hook runs on every matching event rather than never.
    if let Some(value) = raw.get("if") {
        if let Err(error) = crate::dialect::condition::Condition::parse(value) {
            warn(
                diagnostics,
                format!("{key_path}.if"),
                format!("{error}; the hook runs on every matching event"),
            );
        }
    }
    // hookd's execution keys (`crate::exec`): only hooks with a process to run.
    if matches!(
        hook_type,
        HookType::Command | HookType::Plugin | HookType::Policy
    ) {
        let (_, problems) = crate::exec::parse_exec_mode(raw);
        for problem in problems {
            warn(
                diagnostics,
                format!("{key_path}.{}", problem.key),
                problem.message,
            );
        }
    }
    if let (_, Some(problem)) = crate::exec::parse_drop_fields(raw) {
        warn(
            diagnostics,
            format!("{key_path}.{}", problem.key),
            problem.message,
        );
    }
    match crate::exec::parse_async(raw) {
        (_, Some(problem)) => warn(
            diagnostics,
            format!("{key_path}.{}", problem.key),
            problem.message,
        ),
        // An async hook takes no part in the decision: a failure policy cannot decide either.
        (true, None) if raw.contains_key("on_failure") => warn(
            diagnostics,
            format!("{key_path}.on_failure"),
            "on_failure has no effect on an async hook, which takes no part in the decision"
                .to_owned(),
        ),
        _ => {}
    }
    if let (_, Some(problem)) = crate::dialect::parse_dialect(raw) {
        warn(
            diagnostics,
            format!("{key_path}.{}", problem.key),
            problem.message,
        );
    }

    Some(HookConfig {
        hook_type,
        command,
        name,
        description,
        timeout_ms,
        env,
        raw: raw.clone(),
    })
    .map(|config| match hook_type {
        HookType::Policy => policy_config(config),
        _ => config,
    })
}

/// The default timeout of a policy hook: an evaluation takes microseconds, and one that runs
/// away must not hold its event long.
pub const POLICY_DEFAULT_TIMEOUT_MS: u64 = 2_000;
/// The default memory limit of a policy hook's evaluator, in MiB.
pub const POLICY_DEFAULT_MAX_MEMORY_MB: u64 = 512;

/// Checks a policy hook's `policy` and `data` keys.
fn policy_keys(raw: &Map<String, Value>) -> Result<(), String> {
    match raw.get("policy") {
        Some(Value::String(policy)) if !policy.is_empty() => {}
        Some(other) => {
            return Err(format!(
                "policy must be the path of a .rego file, not {}",
                json_type(other)
            ));
        }
        None => return Err("missing policy (the path of a .rego file)".to_owned()),
    }
    match raw.get("data") {
        None | Some(Value::Null) | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(list)) if list.iter().all(Value::is_string) => Ok(()),
        Some(other) => Err(format!(
            "data must be a path or a list of paths of JSON files, not {}",
            json_type(other)
        )),
    }
}

/// A policy hook's config as the engine runs it: its `command` describes its files (for
/// messages, de-duplication and trust records; never run), and it runs as a persistent
/// worker with [`POLICY_DEFAULT_TIMEOUT_MS`] and [`POLICY_DEFAULT_MAX_MEMORY_MB`] unless it
/// says otherwise.
fn policy_config(mut config: HookConfig) -> HookConfig {
    if let Some((policy, data)) = config.policy_files() {
        let mut described = format!("policy {policy}");
        for file in data {
            described.push_str(" data ");
            described.push_str(&file);
        }
        config.command = Some(described);
    }
    config
        .raw
        .insert("mode".to_owned(), Value::from("persistent"));
    config
        .raw
        .entry("max_memory_mb")
        .or_insert(Value::from(POLICY_DEFAULT_MAX_MEMORY_MB));
    config.timeout_ms = config.timeout_ms.or(Some(POLICY_DEFAULT_TIMEOUT_MS));
    config
}

/// Converts a JSON number of milliseconds: fractions are cut off and negative values become 0.
fn timeout_from_number(number: &serde_json::Number) -> u64 {
    if let Some(ms) = number.as_u64() {
        return ms;
    }
    match number.as_f64() {
        // `as` saturates, which is what we want for absurdly large values.
        Some(ms) if ms.is_finite() && ms > 0.0 => ms.trunc() as u64,
        _ => 0,
    }
}

/// Reads `hooksConfig`.
fn parse_hooks_config(
    value: Option<&Value>,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> HooksConfig {
    let mut config = HooksConfig::default();
    let map = match value {
        None => return config,
        Some(Value::Object(map)) => map,
        Some(other) => {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "hooksConfig must be an object, not {}; ignored",
                    json_type(other)
                ))
                .with_path(path)
                .with_key("hooksConfig"),
            );
            return config;
        }
    };
    let mut boolean = |field: &str| {
        optional_bool(
            map.get(field),
            &format!("hooksConfig.{field}"),
            path,
            diagnostics,
        )
    };
    config.enabled = boolean("enabled");
    config.notifications = boolean("notifications");
    config.disabled = match map.get("disabled") {
        // Gemini CLI's merge wraps a lone string into a list.
        Some(Value::String(name)) => Some(vec![name.clone()]),
        other => optional_names(
            other,
            "hooksConfig.disabled",
            ("hook names", "disabled hook names"),
            path,
            diagnostics,
        ),
    };
    config
}

/// An optional boolean setting at `key`: a value of another type is ignored with a warning
/// naming the key.
fn optional_bool(
    value: Option<&Value>,
    key: &str,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<bool> {
    match value? {
        Value::Bool(flag) => Some(*flag),
        other => {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "must be true or false, not {}; ignored",
                    json_type(other)
                ))
                .with_path(path)
                .with_key(key),
            );
            None
        }
    }
}

/// An optional list of names at `key`: a value that is not a list is ignored, and so is an
/// item that is not a string, each with a warning naming its key. `(list, items)` name the
/// names in the two messages (`hook names`, `disabled hook names`).
fn optional_names(
    value: Option<&Value>,
    key: &str,
    (list, items): (&str, &str),
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Vec<String>> {
    match value? {
        Value::Array(values) => {
            let mut names = Vec::new();
            for (index, item) in values.iter().enumerate() {
                match item {
                    Value::String(name) => names.push(name.clone()),
                    other => diagnostics.push(
                        Diagnostic::warning(format!(
                            "{items} must be strings, not {}; ignored",
                            json_type(other)
                        ))
                        .with_path(path)
                        .with_key(format!("{key}[{index}]")),
                    ),
                }
            }
            Some(names)
        }
        other => {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "must be a list of {list}, not {}; ignored",
                    json_type(other)
                ))
                .with_path(path)
                .with_key(key),
            );
            None
        }
    }
}

/// Reads `security.folderTrust.enabled`.
fn parse_folder_trust(
    root: &Map<String, Value>,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<bool> {
    let value = root
        .get("security")
        .and_then(|security| security.get("folderTrust"))
        .and_then(|folder_trust| folder_trust.get("enabled"));
    optional_bool(value, "security.folderTrust.enabled", path, diagnostics)
}

/// Reads `security.environmentVariableRedaction`: a value of the wrong type is ignored with a
/// warning naming its key (Gemini CLI's schema would reject it), and so is a list item that is
/// not a string.
fn parse_env_redaction(
    root: &Map<String, Value>,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> EnvRedactionSettings {
    const KEY: &str = "security.environmentVariableRedaction";
    let mut settings = EnvRedactionSettings::default();
    let Some(value) = root
        .get("security")
        .and_then(|security| security.get("environmentVariableRedaction"))
    else {
        return settings;
    };
    let Value::Object(map) = value else {
        diagnostics.push(
            Diagnostic::warning(format!(
                "must be an object, not {}; ignored",
                json_type(value)
            ))
            .with_path(path)
            .with_key(KEY),
        );
        return settings;
    };
    settings.enabled = optional_bool(
        map.get("enabled"),
        &format!("{KEY}.enabled"),
        path,
        diagnostics,
    );
    let mut names = |field: &str| {
        optional_names(
            map.get(field),
            &format!("{KEY}.{field}"),
            ("variable names", "variable names"),
            path,
            diagnostics,
        )
    };
    settings.allowed = names("allowed");
    settings.blocked = names("blocked");
    settings
}

pub use crate::json::json_type;

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn test_env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".to_owned()),
            "HOOK" => Some("gate".to_owned()),
            _ => None,
        }
    }

    fn parse(text: &str) -> ParsedSettings {
        parse_settings(Source::User, Path::new("/u/settings.json"), text, &test_env)
    }

    /// A compact rendering of a layer's hooks: `Event: [matcher|seq] name/command, ...`.
    fn summary(layer: &SettingsLayer) -> Vec<String> {
        let mut lines = Vec::new();
        for event in &layer.hooks {
            for definition in &event.definitions {
                let hooks: Vec<String> = definition
                    .hooks
                    .iter()
                    .map(|h| {
                        format!(
                            "{}:{}:{}",
                            h.hook_type.as_str(),
                            h.name.as_deref().unwrap_or(""),
                            h.command.as_deref().unwrap_or("")
                        )
                    })
                    .collect();
                lines.push(format!(
                    "{} [{}{}] {}",
                    event.event,
                    definition.matcher.as_deref().unwrap_or("-"),
                    if definition.sequential { "|seq" } else { "" },
                    hooks.join(", ")
                ));
            }
        }
        lines
    }

    #[test]
    fn policy_hooks_name_their_files_and_run_as_bounded_workers() {
        check(
            r#"{"hooks": {"BeforeTool": [{"hooks": [
                {"type": "policy", "name": "shell", "policy": "p/shell.rego",
                 "data": ["d.json", "e.json"]},
                {"type": "policy", "policy": "/abs/x.rego", "data": "one.json", "timeout": 50,
                 "max_memory_mb": 64, "command": "ignored"},
                {"type": "policy"},
                {"type": "policy", "policy": 3},
                {"type": "policy", "policy": "a.rego", "data": [1]}
            ]}]}}"#,
            &[
                "BeforeTool [-] policy:shell:policy p/shell.rego data d.json data e.json, \
                 policy::policy /abs/x.rego data one.json",
            ],
            &[
                "/u/settings.json: hooks.BeforeTool[0].hooks[1].command: a policy hook runs \
                 hookd's evaluator, not a command; ignored",
                "/u/settings.json: hooks.BeforeTool[0].hooks[2]: Discarding policy hook for \
                 BeforeTool from user config: missing policy (the path of a .rego file)",
                "/u/settings.json: hooks.BeforeTool[0].hooks[3]: Discarding policy hook for \
                 BeforeTool from user config: policy must be the path of a .rego file, not a \
                 number",
                "/u/settings.json: hooks.BeforeTool[0].hooks[4]: Discarding policy hook for \
                 BeforeTool from user config: data must be a path or a list of paths of JSON \
                 files, not an array",
            ],
        );
        let parsed = parse(
            r#"{"hooks": {"BeforeTool": [{"hooks": [
                {"type": "policy", "policy": "p.rego"},
                {"type": "policy", "policy": "q.rego", "timeout": 50, "max_memory_mb": 64}
            ]}]}}"#,
        );
        let layer = parsed.layer.expect("kept");
        let hooks = &layer.hooks[0].definitions[0].hooks;
        // Defaults: a persistent worker, 2 s, 512 MiB; the hook's own keys win.
        assert_eq!(hooks[0].timeout_ms, Some(POLICY_DEFAULT_TIMEOUT_MS));
        assert_eq!(hooks[0].raw["mode"], "persistent");
        assert_eq!(
            hooks[0].max_memory_bytes(),
            Some(POLICY_DEFAULT_MAX_MEMORY_MB * 1024 * 1024)
        );
        assert_eq!(hooks[1].timeout_ms, Some(50));
        assert_eq!(hooks[1].max_memory_bytes(), Some(64 * 1024 * 1024));
        assert_eq!(
            hooks[0].policy_sources(Path::new("/u/settings.json")),
            Some(vec![PathBuf::from("/u/p.rego")])
        );
    }

    /// Checks the hooks summary and the rendered diagnostics of one file.
    fn check(text: &str, expected_hooks: &[&str], expected_diagnostics: &[&str]) {
        let parsed = parse(text);
        let layer = parsed.layer.as_ref();
        let hooks = layer.map(summary).unwrap_or_default();
        assert_eq!(hooks, expected_hooks, "hooks of {text}");
        let diagnostics: Vec<String> = parsed.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(diagnostics, expected_diagnostics, "diagnostics of {text}");
    }

    #[test]
    fn valid_hooks_are_read_in_file_order() {
        check(
            r#"{
              // comments are fine
              "hooks": {
                "BeforeTool": [
                  {"matcher": "write_file|replace", "sequential": true, "hooks": [
                    {"type": "command", "command": "./a.sh", "name": "a", "timeout": 5000},
                    {"type": "plugin", "command": "./p.sh"}
                  ]},
                  {"hooks": [{"type": "runtime", "name": "r"}]}
                ],
                "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "s"}]}]
              }
            }"#,
            &[
                "BeforeTool [write_file|replace|seq] command:a:./a.sh, plugin::./p.sh",
                "BeforeTool [-] runtime:r:",
                "SessionStart [startup] command::s",
            ],
            &[],
        );
    }

    #[test]
    fn legacy_keys_are_skipped_silently_and_unknown_events_warned() {
        check(
            r#"{"hooks": {
                "enabled": true, "disabled": ["x"], "notifications": false,
                "PreToolUse": [{"hooks": [{"type": "command", "command": "c"}]}],
                "beforetool": [],
                "AfterTool": [{"hooks": [{"type": "command", "command": "ok"}]}]
            }}"#,
            &["AfterTool [-] command::ok"],
            &[
                "/u/settings.json: hooks.PreToolUse: Invalid hook event name: \"PreToolUse\" \
                 from user config. Skipping.",
                "/u/settings.json: hooks.beforetool: Invalid hook event name: \"beforetool\" \
                 from user config. Skipping.",
            ],
        );
    }

    #[test]
    fn non_array_event_values_are_wrapped() {
        check(
            r#"{"hooks": {"BeforeTool": {"matcher": "read", "hooks": [{"type": "command", "command": "c"}]}}}"#,
            &["BeforeTool [read] command::c"],
            &[],
        );
        // A wrapped value that is not a definition is then discarded like any other.
        check(
            r#"{"hooks": {"BeforeTool": "c"}}"#,
            &[],
            &[
                "/u/settings.json: hooks.BeforeTool[0]: Discarding invalid hook definition for \
               BeforeTool from user config: expected an object with a \"hooks\" array",
            ],
        );
    }

    #[test]
    fn invalid_definitions_and_entries_are_dropped_and_siblings_kept() {
        check(
            r#"{"hooks": {"AfterAgent": [
                null,
                {"hooks": "not-an-array"},
                {"matcher": 5, "sequential": "true", "hooks": [
                    "string-entry",
                    {"command": "no-type"},
                    {"type": "shell", "command": "bad-type"},
                    {"type": "command"},
                    {"type": "command", "command": ""},
                    {"type": "runtime"},
                    {"type": "command", "command": "kept", "timeout": "5s", "env": {"A": "1", "B": 2}},
                    {"type": "command", "command": "kept2", "name": 7, "env": ["x"], "on_failure": "Deny"},
                    {"type": "command", "command": "kept3", "on_failure": "ask"}
                ]}
            ]}}"#,
            &["AfterAgent [-] command::kept, command::kept2, command::kept3"],
            &[
                "/u/settings.json: hooks.AfterAgent[0]: Discarding invalid hook definition for \
                 AfterAgent from user config: expected an object with a \"hooks\" array",
                "/u/settings.json: hooks.AfterAgent[1]: Discarding invalid hook definition for \
                 AfterAgent from user config: expected an object with a \"hooks\" array",
                "/u/settings.json: hooks.AfterAgent[2].matcher: matcher must be a string, not a \
                 number; the definition matches every firing",
                "/u/settings.json: hooks.AfterAgent[2].hooks[0]: Discarding invalid hook \
                 configuration for AfterAgent from user config: expected an object, not a string",
                "/u/settings.json: hooks.AfterAgent[2].hooks[1].type: Discarding hook for \
                 AfterAgent from user config: invalid type missing; expected \"command\", \
                 \"plugin\", \"runtime\", \"builtin\" or \"policy\"",
                "/u/settings.json: hooks.AfterAgent[2].hooks[2].type: Discarding hook for \
                 AfterAgent from user config: invalid type \"shell\"; expected \"command\", \
                 \"plugin\", \"runtime\", \"builtin\" or \"policy\"",
                "/u/settings.json: hooks.AfterAgent[2].hooks[3].command: Discarding command hook \
                 for AfterAgent from user config: missing command",
                "/u/settings.json: hooks.AfterAgent[2].hooks[4].command: Discarding command hook \
                 for AfterAgent from user config: missing command",
                "/u/settings.json: hooks.AfterAgent[2].hooks[5].name: Discarding runtime hook for \
                 AfterAgent from user config: missing name",
                "/u/settings.json: hooks.AfterAgent[2].hooks[6].timeout: timeout must be a number \
                 of milliseconds, not a string; the default applies",
                "/u/settings.json: hooks.AfterAgent[2].hooks[6].env.B: environment values must be \
                 strings, not a number; ignored",
                "/u/settings.json: hooks.AfterAgent[2].hooks[7].name: name must be a string, not a \
                 number; ignored",
                "/u/settings.json: hooks.AfterAgent[2].hooks[7].env: env must be an object of \
                 strings, not an array; ignored",
                "/u/settings.json: hooks.AfterAgent[2].hooks[7].on_failure: on_failure: expected \
                 \"allow\", \"deny\" or \"ask\", not \"Deny\"; the daemon's default applies",
            ],
        );
    }

    #[test]
    fn builtin_hooks_are_checked_and_discarded_with_the_key_named() {
        check(
            r#"{"hooks": {
                "AfterModel": [{"hooks": [
                    {"type": "builtin", "builtin": "redact", "name": "redact-secrets",
                     "patterns": [{"name": "ticket", "regex": "TCK-[0-9]{6}"},
                                  {"name": "block", "begin": "BEGIN SECRET", "end": "END SECRET"}],
                     "holdback": 512, "replacement": "[{name}]"},
                    {"type": "builtin", "builtin": "redact", "command": "ignored"},
                    {"type": "builtin", "builtin": "scrub"},
                    {"type": "builtin"},
                    {"type": "builtin", "builtin": "redact", "holdback": 8},
                    {"type": "builtin", "builtin": "redact",
                     "patterns": [{"name": "a", "regex": "a"}, {"name": "b", "regex": "(b"}]},
                    {"type": "builtin", "builtin": "redact",
                     "patterns": [{"name": "a", "begin": "a"}]}
                ]}],
                "BeforeTool": [{"hooks": [{"type": "builtin", "builtin": "redact"}]}]
            }}"#,
            &[
                "AfterModel [-] builtin:redact-secrets:, builtin::ignored",
                "BeforeTool [-] ",
            ],
            &[
                "/u/settings.json: hooks.AfterModel[0].hooks[1].command: a builtin hook runs no \
                 command; ignored",
                "/u/settings.json: hooks.AfterModel[0].hooks[2].builtin: Discarding builtin hook \
                 for AfterModel from user config: unknown built-in filter \"scrub\"; the only one \
                 is \"redact\"",
                "/u/settings.json: hooks.AfterModel[0].hooks[3].builtin: Discarding builtin hook \
                 for AfterModel from user config: missing; a builtin hook names its filter, \
                 \"redact\"",
                "/u/settings.json: hooks.AfterModel[0].hooks[4].holdback: Discarding builtin hook \
                 for AfterModel from user config: must be a whole number of bytes from 16 to \
                 65536, not 8",
                "/u/settings.json: hooks.AfterModel[0].hooks[5].patterns[1].regex: Discarding \
                 builtin hook for AfterModel from user config: invalid regex: unclosed group",
                "/u/settings.json: hooks.AfterModel[0].hooks[6].patterns[0].end: Discarding \
                 builtin hook for AfterModel from user config: missing; a block pattern has begin \
                 and end",
                "/u/settings.json: hooks.BeforeTool[0].hooks[0].type: Discarding builtin hook for \
                 BeforeTool from user config: built-in filters run only under AfterModel",
            ],
        );
    }

    #[test]
    fn entry_fields_are_extracted() {
        let parsed = parse(
            r#"{"hooks": {"BeforeTool": [{"hooks": [
                {"type": "command", "command": "$HOME/x.sh", "name": "${HOOK}", "description": "d",
                 "timeout": 1500.7, "env": {"Z": "z", "A": "$HOME"}, "extra": 1},
                {"type": "command", "command": "c", "timeout": -5}
            ]}]}}"#,
        );
        let layer = parsed.layer.expect("layer");
        let hooks = &layer.hooks[0].definitions[0].hooks;
        let first = &hooks[0];
        assert_eq!(first.command.as_deref(), Some("/home/u/x.sh"));
        assert_eq!(first.name.as_deref(), Some("gate"));
        assert_eq!(first.description.as_deref(), Some("d"));
        assert_eq!(first.timeout_ms, Some(1500));
        assert_eq!(
            first.env,
            [
                ("Z".to_owned(), "z".to_owned()),
                ("A".to_owned(), "/home/u".to_owned())
            ]
        );
        assert_eq!(first.raw.get("extra"), Some(&Value::from(1)));
        assert_eq!(first.raw.get("command"), Some(&Value::from("/home/u/x.sh")));
        assert_eq!(hooks[1].timeout_ms, Some(0));
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    }

    #[test]
    fn only_hooks_of_expanding_hosts_are_expanded_at_load_time() {
        // (dialect key, command after loading, env value after loading)
        let cases = [
            (None, "echo '/home/u' /home/u", "/home/u"),
            (Some("gemini"), "echo '/home/u' /home/u", "/home/u"),
            (Some("claude"), "echo '$HOME' ${HOME}", "$HOME"),
            (Some("codex"), "echo '$HOME' ${HOME}", "$HOME"),
            // An unknown dialect is Gemini's (with a warning), so it is expanded.
            (Some("qwen"), "echo '/home/u' /home/u", "/home/u"),
        ];
        for (dialect, command, env) in cases {
            let mut hook = serde_json::json!({
                "type": "command", "command": "echo '$HOME' ${HOME}", "env": {"A": "$HOME"}
            });
            if let Some(dialect) = dialect {
                hook["dialect"] = Value::from(dialect);
            }
            let text = serde_json::json!({"hooks": {"BeforeTool": [
                {"matcher": "$HOOK", "hooks": [hook]}
            ]}})
            .to_string();
            let parsed = parse(&text);
            let layer = parsed.layer.expect("layer");
            let definition = &layer.hooks[0].definitions[0];
            // The definition's own keys are hookd's (Gemini CLI's) and always expanded.
            assert_eq!(definition.matcher.as_deref(), Some("gate"), "{dialect:?}");
            let entry = &definition.hooks[0];
            assert_eq!(entry.command.as_deref(), Some(command), "{dialect:?}");
            assert_eq!(entry.env, [("A".to_owned(), env.to_owned())], "{dialect:?}");
        }
    }

    fn check_hooks_config(text: &str, expected: HooksConfig, diagnostics: usize) {
        let parsed = parse(text);
        let layer = parsed.layer.expect("layer");
        assert_eq!(layer.hooks_config, expected, "{text}");
        assert_eq!(
            parsed.diagnostics.len(),
            diagnostics,
            "{:?}",
            parsed.diagnostics
        );
    }

    #[test]
    fn hooks_config_values() {
        let names = |n: &[&str]| Some(n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        check_hooks_config("{}", HooksConfig::default(), 0);
        check_hooks_config(
            r#"{"hooksConfig": {"enabled": false, "notifications": true, "disabled": ["a", "b"]}}"#,
            HooksConfig {
                enabled: Some(false),
                disabled: names(&["a", "b"]),
                notifications: Some(true),
            },
            0,
        );
        // A string is wrapped; expansion applies to disabled entries.
        check_hooks_config(
            r#"{"hooksConfig": {"disabled": "$HOOK"}}"#,
            HooksConfig {
                disabled: names(&["gate"]),
                ..HooksConfig::default()
            },
            0,
        );
        check_hooks_config(
            r#"{"hooksConfig": {"disabled": ["a", 1, "${HOOK}"], "enabled": "false"}}"#,
            HooksConfig {
                disabled: names(&["a", "gate"]),
                ..HooksConfig::default()
            },
            2,
        );
        check_hooks_config(r#"{"hooksConfig": true}"#, HooksConfig::default(), 1);
        // The legacy `hooks.disabled` is not `hooksConfig.disabled`.
        check_hooks_config(
            r#"{"hooks": {"disabled": ["a"]}}"#,
            HooksConfig::default(),
            0,
        );
    }

    #[test]
    fn folder_trust_setting() {
        let trust = |text: &str| parse(text).layer.and_then(|l| l.folder_trust_enabled);
        assert_eq!(trust("{}"), None);
        assert_eq!(
            trust(r#"{"security": {"folderTrust": {"enabled": true}}}"#),
            Some(true)
        );
        assert_eq!(
            trust(r#"{"security": {"folderTrust": {"enabled": false}}}"#),
            Some(false)
        );
        assert_eq!(
            trust(r#"{"security": {"folderTrust": {"enabled": "yes"}}}"#),
            None
        );
    }

    #[test]
    fn env_redaction_settings() {
        let names = |n: &[&str]| Some(n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        // (text, expected, warnings naming these keys)
        let cases: Vec<(&str, EnvRedactionSettings, Vec<&str>)> = vec![
            ("{}", EnvRedactionSettings::default(), vec![]),
            (
                r#"{"security": {"environmentVariableRedaction": {"enabled": true,
                    "allowed": ["MY_HOME"], "blocked": ["EDITOR", "PAGER"]}}}"#,
                EnvRedactionSettings {
                    enabled: Some(true),
                    allowed: names(&["MY_HOME"]),
                    blocked: names(&["EDITOR", "PAGER"]),
                },
                vec![],
            ),
            (
                r#"{"security": {"environmentVariableRedaction": {"allowed": []}}}"#,
                EnvRedactionSettings {
                    allowed: names(&[]),
                    ..EnvRedactionSettings::default()
                },
                vec![],
            ),
            (
                r#"{"security": {"environmentVariableRedaction": true}}"#,
                EnvRedactionSettings::default(),
                vec!["security.environmentVariableRedaction"],
            ),
            (
                r#"{"security": {"environmentVariableRedaction": {"enabled": "yes",
                    "allowed": "HOME", "blocked": ["A", 1, "B"]}}}"#,
                EnvRedactionSettings {
                    blocked: names(&["A", "B"]),
                    ..EnvRedactionSettings::default()
                },
                vec![
                    "security.environmentVariableRedaction.enabled",
                    "security.environmentVariableRedaction.allowed",
                    "security.environmentVariableRedaction.blocked[1]",
                ],
            ),
        ];
        for (text, expected, keys) in cases {
            let parsed = parse(text);
            assert_eq!(
                parsed.layer.expect("layer").env_redaction,
                expected,
                "{text}"
            );
            let warned: Vec<_> = parsed
                .diagnostics
                .iter()
                .map(|diagnostic| diagnostic.key.as_deref().unwrap_or(""))
                .collect();
            assert_eq!(warned, keys, "{text}");
        }
    }

    #[test]
    fn async_keys_are_checked() {
        // (hook keys beside type and command, warned keys)
        let cases = [
            (r#""async": true"#, vec![]),
            (r#""async": false, "on_failure": "deny""#, vec![]),
            (
                r#""async": "yes""#,
                vec!["hooks.BeforeTool[0].hooks[0].async"],
            ),
            (
                r#""async": true, "on_failure": "deny""#,
                vec!["hooks.BeforeTool[0].hooks[0].on_failure"],
            ),
        ];
        for (keys, expected) in cases {
            let text = format!(
                r#"{{"hooks": {{"BeforeTool": [{{"hooks": [{{"type": "command", "command": "x", {keys}}}]}}]}}}}"#
            );
            let parsed = parse(&text);
            let warned: Vec<_> = parsed
                .diagnostics
                .iter()
                .map(|diagnostic| diagnostic.key.as_deref().unwrap_or(""))
                .collect();
            assert_eq!(warned, expected, "{text}");
        }
    }

    #[test]
    fn broken_files_are_skipped_with_one_error() {
        let cases = [
            (
                "{\n  \"hooks\": {,\n}",
                "/u/settings.json:2:13: invalid JSON: key must be a string; file ignored",
            ),
            (
                "[]",
                "/u/settings.json: settings file must contain a JSON object; file ignored",
            ),
            (
                "",
                "/u/settings.json:1:0: invalid JSON: EOF while parsing a value; file ignored",
            ),
        ];
        for (text, expected) in cases {
            let parsed = parse(text);
            assert!(parsed.layer.is_none(), "{text}");
            let rendered: Vec<String> = parsed.diagnostics.iter().map(|d| d.to_string()).collect();
            assert_eq!(rendered, [expected], "{text}");
            assert_eq!(parsed.diagnostics[0].severity, Severity::Error);
        }
    }

    #[test]
    fn raw_hooks_are_kept_after_expansion() {
        let parsed = parse_settings(
            Source::Project,
            Path::new("/p/.gemini/settings.json"),
            r#"{"hooks": {"Nope": [1], "BeforeTool": [{"hooks": [{"type": "command", "command": "$HOME"}]}]}}"#,
            &test_env,
        );
        let raw = parsed.layer.and_then(|l| l.raw_hooks).expect("raw hooks");
        assert_eq!(raw.get("Nope"), Some(&serde_json::json!([1])));
        assert_eq!(
            raw["BeforeTool"][0]["hooks"][0]["command"],
            Value::from("/home/u")
        );
    }

    #[test]
    fn hooks_that_are_not_an_object_are_ignored() {
        let parsed = parse_settings(
            Source::System,
            Path::new("/s.json"),
            r#"{"hooks": []}"#,
            &no_env,
        );
        assert_eq!(parsed.layer.map(|l| l.hook_count()), Some(0));
        assert_eq!(
            parsed.diagnostics[0].to_string(),
            "/s.json: hooks: `hooks` must be an object; the file's hooks are ignored"
        );
    }

    #[test]
    fn diagnostic_display_leaves_out_unknown_parts() {
        let cases = [
            (Diagnostic::info("m"), "m"),
            (Diagnostic::warning("m").with_key("k"), "k: m"),
            (Diagnostic::error("m").with_path("/f"), "/f: m"),
            (
                Diagnostic::error("m")
                    .with_path("/f")
                    .with_position(3, 7)
                    .with_key("k"),
                "/f:3:7: k: m",
            ),
        ];
        for (diagnostic, expected) in cases {
            assert_eq!(diagnostic.to_string(), expected);
        }
    }
}
