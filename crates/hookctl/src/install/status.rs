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
