//! What `hookctl list` and `hookctl doctor` say about recorded installs: relay entries that are
//! stale against hookd's hooks ([`stale_wiring`]), and the relay commands each install wrote
//! ([`installed_relays`]).

use std::path::{Path, PathBuf};

use hookd_core::dialect;
use serde_json::Value;

use super::companions::host_wiring_problems;
use super::files::parse_object;
use super::locations::Locations;
use super::wiring::{WireEntry, relayed_events, relayed_layers, wiring};

/// How a host's wiring compares with hookd's hooks, for `hookctl list`: one line per recorded
/// install that applies to `project` (user installs, and project installs of `project`) whose
/// relay entries are not what hookd's hooks need, with the command that fixes it.
pub fn stale_wiring(locations: &Locations, project: &Path) -> Vec<String> {
    let Ok(installed) = locations.installed() else {
        return Vec::new();
    };
    let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_owned());
    let mut lines = Vec::new();
    for (target, manifest) in installed {
        if target.project.as_ref().is_some_and(|dir| *dir != project) {
            continue;
        }
        if let Some(port) = manifest.http_port {
            let events = manifest.http_events.unwrap_or_default();
            lines.extend(http_problems(locations, &target, port, events));
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

/// How long `list` and `doctor` wait for hookd's HTTP listener to accept a connection.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// What is wrong with an HTTP install (`--transport http` on `port`), one line each with the
/// command that fixes it: entries not what hookd's hooks need now (hooks added or removed,
/// a hook that can block added where the entry lets Claude Code go on when hookd is down), a
/// secret the entries send that is not the secret file's (hookd refuses every request: 401),
/// a secret file or settings file others can read, nothing listening on the port.
fn http_problems(
    locations: &Locations,
    target: &super::locations::Target,
    port: u16,
    events: super::args::HttpEvents,
) -> Vec<String> {
    let mut lines = Vec::new();
    let describe = target.describe();
    let secret_path = locations.http_secret_path();
    let secret = match hookd_settings::httpsecret::load(&secret_path) {
        Ok(secret) => Some(secret.as_str().to_owned()),
        Err(err) => {
            lines.push(format!(
                "{describe}: hookd's HTTP secret {} cannot be used ({err}): run `hookctl sync` \
                 (it creates a missing one), then restart the CLI's sessions",
                secret_path.display()
            ));
            None
        }
    };
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(metadata) = std::fs::metadata(&target.host_file)
            && metadata.permissions().mode() & 0o077 != 0
        {
            lines.push(format!(
                "{describe}: {} holds hookd's HTTP secret but others may read it: `chmod 600 {}`",
                target.host_file.display(),
                target.host_file.display()
            ));
        }
    }
    let host_text = crate::read_settings_text_or_empty(&target.host_file);
    let host_root = parse_object(&target.host_file, &host_text).unwrap_or_default();
    let hookd_text = crate::read_settings_text_or_empty(&target.hookd_file);
    let needed = wiring(target.host, &relayed_layers(target, locations, &hookd_text));
    let planned = super::http::plan(target.host, &needed, events);
    let present = relayed_events(&host_root);
    let missing: Vec<&str> = planned
        .iter()
        .map(|planned| planned.entry.event.as_str())
        .filter(|event| !present.iter().any(|(present, _)| present == event))
        .collect();
    let mut stale_secret = false;
    let mut differs = false;
    for planned in &planned {
        let hooks: Vec<&Value> = host_root
            .get("hooks")
            .and_then(|hooks| hooks.get(&planned.entry.event))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|definition| definition.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter(|hook| super::guarded::is_wiring_hook(hook))
            .collect();
        if hooks.is_empty() {
            continue;
        }
        match planned.kind {
            super::http::EntryKind::Http { .. } => {
                let Some(hook) = hooks.iter().find(|hook| super::http::is_http_wiring(hook)) else {
                    differs = true;
                    continue;
                };
                let sent = super::http::entry_secret(hook).unwrap_or_default();
                if secret.as_deref().is_some_and(|secret| secret != sent) {
                    stale_secret = true;
                }
                let expected = super::http::http_handler(target.host, port, sent, planned);
                differs |= **hook != expected;
                let matcher = present
                    .iter()
                    .find(|(event, _)| *event == planned.entry.event)
                    .and_then(|(_, matcher)| matcher.clone());
                differs |= matcher != planned.entry.matcher.clone().filter(|m| m != "*");
            }
            super::http::EntryKind::Relay => {
                differs |= hooks.iter().any(|hook| super::http::is_http_wiring(hook));
                let matcher = present
                    .iter()
                    .find(|(event, _)| *event == planned.entry.event)
                    .and_then(|(_, matcher)| matcher.clone());
                differs |= matcher != planned.entry.matcher.clone().filter(|m| m != "*");
            }
        }
    }
    let idle: Vec<&str> = present
        .iter()
        .map(|(event, _)| event.as_str())
        .filter(|event| !planned.iter().any(|planned| planned.entry.event == *event))
        .collect();
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!("no entry on {}", missing.join(", ")));
    }
    if !idle.is_empty() {
        problems.push(format!(
            "entries hookd does not need on {}",
            idle.join(", ")
        ));
    }
    if differs {
        problems.push(
            "entries that are not what hookd's hooks need now (kind, timeout or onFailure)"
                .to_owned(),
        );
    }
    if stale_secret {
        problems.push(format!(
            "a secret that is not the one in {} (hookd answers 401)",
            secret_path.display()
        ));
    }
    if !problems.is_empty() {
        lines.push(format!(
            "{describe} are stale ({}): run `hookctl sync`, then restart the CLI's sessions",
            problems.join("; ")
        ));
    }
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    if std::net::TcpStream::connect_timeout(&address, CONNECT_TIMEOUT).is_err() {
        let what = if target.host == super::Host::COPILOT {
            "so the hooks of its HTTP entries are skipped"
        } else {
            "so Claude Code blocks the events whose entries have onFailure block"
        };
        lines.push(format!(
            "{describe}: nothing listens on {address}, {what}: `hookctl service install --http \
             --http-port {port}` (docs/operating.md, HTTP hooks), or start hookd with `--http \
             {address}`"
        ));
    }
    lines
}

/// The line `doctor` prints for a Copilot CLI HTTP install: Copilot skips the entries without
/// a word unless it is started with `COPILOT_HOOK_ALLOW_LOCALHOST=1`. hookd cannot see the
/// environment each copilot is started with (a shell's profile, a terminal's, an editor's), so
/// the line always states the requirement, and says what the shell `doctor` runs in has.
pub(super) fn copilot_localhost_line(
    describe: &str,
    var: impl Fn(&str) -> Option<String>,
) -> String {
    let name = super::http::COPILOT_LOCALHOST_VAR;
    let here = match var(name).as_deref() {
        Some("1") => format!("this shell has {name}=1"),
        Some(other) => format!("this shell has {name}={other:?}, which Copilot reads as unset"),
        None => format!("this shell does not set {name}"),
    };
    format!(
        "{describe}: Copilot CLI runs the HTTP entries only when started with {name}=1 and skips \
         them without a word otherwise ({here}; events whose hooks can block are command relays \
         either way): `export {name}=1` where copilot is started"
    )
}

/// One line per recorded HTTP install that applies to `project`, for `hookctl list` and
/// `doctor`: which transport, and the listener's address; for Copilot CLI also what its
/// entries need in copilot's environment ([`copilot_localhost_line`]).
pub fn http_transports(locations: &Locations, project: &Path) -> Vec<String> {
    let Ok(installed) = locations.installed() else {
        return Vec::new();
    };
    let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_owned());
    installed
        .into_iter()
        .filter(|(target, _)| target.project.as_ref().is_none_or(|dir| *dir == project))
        .filter_map(|(target, manifest)| {
            manifest.http_port.map(|port| {
                let events = match manifest.http_events.unwrap_or_default() {
                    super::args::HttpEvents::All => "every common event",
                    super::args::HttpEvents::Hooked => "the events hookd has hooks for",
                };
                let mut lines = vec![format!(
                    "{}: HTTP to 127.0.0.1:{port} for {events} ({})",
                    target.describe(),
                    super::http::relayed_instead(target.host)
                )];
                if target.host == super::Host::COPILOT {
                    lines.push(copilot_localhost_line(&target.describe(), |name| {
                        locations.env.var(name).map(str::to_owned)
                    }));
                }
                lines
            })
        })
        .flatten()
        .collect()
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
