//! The relay entries a host needs: which events hookd has hooks for in the layers the daemon
//! reads ([`wiring`]), the entries written for them ([`relay_entries`]), and a host file's text
//! rewired with them beside the definitions that stay with the host ([`rewire`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hookd_core::dialect;
use hookd_core::jsonc;
use hookd_core::registry::LayerText;
use hookd_core::settings::SettingsLayer;
use hookd_core::{HookEventName, Source};
use hookd_settings::loader::{self, LayerPaths};
use serde_json::{Map, Value, json};

use super::args::InstallScope;
use super::files::set_member;
use super::guarded::fallback_copies;
use super::locations::{Locations, Target};
use super::manifest::MovedDefinition;
use super::{Host, RELAY_BINARY, STATIC_RELAY_BUILD};

/// What a relay entry waits on top of its hooks' timeouts: the relay's retries while the
/// daemon restarts, connecting, spawning and answering.
pub(super) const RELAY_MARGIN_MS: u64 = 10_000;

/// What stays in the host file beside the relay entries.
pub(super) struct Kept<'a> {
    /// Definitions hookd cannot run (host event → definitions).
    pub(super) definitions: Map<String, Value>,
    /// Every definition the installs of this target moved: in a project's shared file each
    /// keeps a guarded copy ([`fallback_copies`]).
    pub(super) moved: &'a [MovedDefinition],
}

/// The host file's text with fresh relay entries (for the hooks hookd's files have once
/// `hookd_text` is this target's hookd file), then, for a project, the guarded copies of the
/// moved hooks, then the `kept` definitions, and the wiring it holds.
#[allow(clippy::too_many_arguments)]
pub(super) fn rewire(
    target: &Target,
    locations: &Locations,
    host_text: &str,
    host_root: &Map<String, Value>,
    kept: Kept<'_>,
    hookd_text: &str,
    socket: Option<&str>,
    http: Option<&HttpWire>,
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
    let mut relay_hooks = match http {
        None => relay_entries(target.host, &program, socket, &wiring, from_path),
        Some(http) => {
            let planned = super::http::plan(target.host, &wiring, http.events);
            let _ = writeln!(
                report,
                "{}",
                super::http::describe_down(target.host, &planned)
            );
            http_entries(target.host, &program, socket, &planned, from_path, http)
        }
    };
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

/// Where an HTTP install's entries go: the listener's port and the secret they send.
pub(super) struct HttpWire {
    /// The port of hookd's loopback HTTP listener.
    pub(super) port: u16,
    /// The secret (the `Authorization` header's token).
    pub(super) secret: String,
    /// Which events get an entry.
    pub(super) events: super::args::HttpEvents,
}

/// The host's new `hooks` for an HTTP install: an HTTP entry or a relay entry per planned
/// event ([`super::http::plan`]), in the host's event order.
fn http_entries(
    host: Host,
    program: &str,
    socket: Option<&str>,
    planned: &[super::http::Planned],
    from_path: bool,
    http: &HttpWire,
) -> Value {
    let mut hooks = Map::new();
    for planned in planned {
        match planned.kind {
            super::http::EntryKind::Relay => {
                let relay = relay_entries(
                    host,
                    program,
                    socket,
                    std::slice::from_ref(&planned.entry),
                    from_path,
                );
                if let Value::Object(relay) = relay {
                    hooks.extend(relay);
                }
            }
            super::http::EntryKind::Http { .. } => {
                let handler = super::http::http_handler(host, http.port, &http.secret, planned);
                super::http::insert_handler(
                    &mut hooks,
                    &planned.entry.event,
                    planned.entry.matcher.as_deref(),
                    handler,
                );
            }
        }
    }
    Value::Object(hooks)
}

/// "N event(s) (BeforeTool on run_shell_command, timeout 70 s; ...)".
pub(super) fn describe_wiring(wiring: &[WireEntry]) -> String {
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

/// Parses a settings text as the daemon does; `None` when it does not parse.
pub(super) fn parse_layer(
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
/// for the target's own hookd file), for Claude Code also Gemini CLI's files, which the
/// daemon reads and Claude Code does not, and other hosts' own files the daemon reads as
/// layers ([`host_layers`]).
pub(super) fn relayed_layers(
    target: &Target,
    locations: &Locations,
    hookd_text: &str,
) -> Vec<SettingsLayer> {
    let mut files: Vec<(Source, PathBuf)> =
        vec![(Source::User, locations.paths.hookd_user.clone())];
    if let Some(project) = &target.project {
        files.push((Source::Project, LayerPaths::hookd_project(project)));
    }
    // Gemini CLI's files, which the daemon reads, when the host does not run them itself.
    if !target
        .host
        .run()
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
    let mut layers: Vec<SettingsLayer> = files
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
        .collect();
    layers.extend(host_layers(target, locations));
    layers
}

/// The layers of other hosts' own files that the daemon reads (`hookd --copilot-settings`,
/// `--claude-settings`, as its record for the relay's engine says) and the target's host does
/// not run itself: their hooks run in hookd for the events it relays, so they need relay
/// entries too. Read as the daemon reads them (a host's folders listed, a project's files only
/// where that host trusts the project), converted by their host's dialect.
fn host_layers(target: &Target, locations: &Locations) -> Vec<SettingsLayer> {
    let Some(state_dir) = locations.state_dir.parent() else {
        return Vec::new();
    };
    let socket = hookd_protocol::resolve_socket_path(
        |name| locations.env.var(name).map(std::ffi::OsString::from),
        nix::unistd::getuid().as_raw(),
    );
    let record = loader::engine_record_path(state_dir, &socket);
    let Ok(Some(record)) = crate::read_settings_file(&record) else {
        return Vec::new();
    };
    let hosts = loader::recorded_host_layers(&String::from_utf8_lossy(&record));
    let var = |name: &str| locations.env.var(name).map(str::to_owned);
    let home = locations.env.host_env(&var);
    let mut raw: Vec<LayerText> = Vec::new();
    let mut read = |source: Source, host: dialect::Dialect, path: &Path| {
        if let Ok(Some(bytes)) = crate::read_settings_file(path) {
            raw.push(LayerText {
                source,
                file: host.layer_file(),
                path: path.to_owned(),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
    };
    for host in hosts {
        if host == target.host
            || target
                .host
                .run()
                .runs_layer(Source::User, host.layer_file())
        {
            continue;
        }
        let files = host.files();
        for path in files.user_layer_files(&home) {
            read(Source::User, host, &path);
        }
        for folder in files.user_layer_folders(&home) {
            for path in loader::list_layer_folder(host, &folder, None).files {
                read(Source::User, host, &path);
            }
        }
        let Some(project) = &target.project else {
            continue;
        };
        let record = files
            .project_trust_file(&home)
            .and_then(|file| crate::read_settings_file(&file).ok().flatten())
            .and_then(|bytes| jsonc::parse(&String::from_utf8_lossy(&bytes)).ok());
        let real = std::fs::canonicalize(project).unwrap_or_else(|_| project.clone());
        if files.project_trust_file(&home).is_some()
            && !files.trusts_project(&real, record.as_ref())
        {
            continue;
        }
        for path in files.project_layer_files(project) {
            read(Source::Project, host, &path);
        }
        for folder in files.project_layer_folders(project) {
            for path in loader::list_layer_folder(host, &folder, Some(project)).files {
                read(Source::Project, host, &path);
            }
        }
    }
    let (converted, _) = loader::convert_host_layers(&raw);
    converted
        .iter()
        .filter_map(|layer| parse_layer(layer.source, &layer.path, &layer.text, locations))
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
                    .unwrap_or_else(|| config.dialect().run().default_timeout_ms());
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
    for event in host.relay().events() {
        let Some((gemini, matchers, total)) = host
            .relay()
            .event_to_hookd(event)
            .and_then(|gemini| per_event.iter().find(|(event, _, _)| *event == gemini))
        else {
            continue;
        };
        let matcher = host.files().relay_matcher(*gemini, matchers);
        entries.push(WireEntry {
            event: event.to_owned(),
            matcher,
            timeout_ms: total.saturating_add(RELAY_MARGIN_MS),
        });
    }
    entries
}

/// The host events that have a relay entry or hookd's HTTP entry in a settings object, with
/// the entry's matcher
/// (`None` for none or `*`).
pub(super) fn relayed_events(root: &Map<String, Value>) -> Vec<(String, Option<String>)> {
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
                    super::http::is_http_wiring(hook)
                        || hook
                            .get("command")
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

/// Adds the definitions that stay in the host file after the relay entry of their event;
/// returns how many there are.
pub(super) fn keep_in_host(relay_hooks: &mut Value, kept: Map<String, Value>) -> usize {
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

/// The host's new `hooks`: one relay entry per wired event. `--socket` rides along in the
/// command, so the relay asks the daemon the install was made for. With `from_path` (the
/// relay run as `hookd-relay` from `PATH`, always so in a project's shared file) the entry
/// answers nothing where `hookd-relay` is not on `PATH` ([`dialect::shared_relay_command`]).
pub(super) fn relay_entries(
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
        let relay = host
            .files()
            .relay_handler(event, &command, entry.timeout_ms);
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

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
}
