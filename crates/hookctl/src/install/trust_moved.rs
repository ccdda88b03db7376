//! Under `--project-hooks require`, the project hooks an install moved are trusted at once:
//! moving them is the user's own action. This computes the trust store's change.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use hookd_core::Source;
use serde_json::Value;

use super::files::{Change, read_file, text_of};
use super::locations::{Locations, Target};
use super::manifest::MovedDefinition;
use super::wiring::parse_layer;

/// A file's path, its bytes before (`None`: absent) and its new text.
pub(super) type FileEdit = (PathBuf, Option<Vec<u8>>, String);

/// Under `--project-hooks require`, moved project hooks would stop running until trusted:
/// moving them is the user's own action, so install trusts exactly what it moved (their name,
/// command and the scripts they run as they are now). Returns the trust store's change.
pub(super) fn trust_moved(
    target: &Target,
    locations: &Locations,
    changes: &[Change],
    moved: &[MovedDefinition],
    report: &mut String,
) -> anyhow::Result<Option<FileEdit>> {
    let Some(project) = &target.project else {
        return Ok(None);
    };
    let hookd_text = match changes
        .iter()
        .find(|change| change.path == target.hookd_file)
    {
        Some(change) => String::from_utf8_lossy(&change.after).into_owned(),
        None => return Ok(None),
    };
    let moved_keys: BTreeSet<String> = moved
        .iter()
        .flat_map(|record| &record.added)
        .filter_map(|(_, definition)| definition.get("hooks")?.as_array())
        .flatten()
        .map(hook_identity)
        .collect();
    if moved_keys.is_empty() {
        return Ok(None);
    }
    let layer = parse_layer(Source::Project, &target.hookd_file, &hookd_text, locations);
    let mut keys = Vec::new();
    for config in layer
        .iter()
        .flat_map(|layer| &layer.hooks)
        .flat_map(|event| &event.definitions)
        .flat_map(|definition| &definition.hooks)
        .filter(|config| config.runs_command())
    {
        if !moved_keys.contains(&config_identity(config)) {
            continue;
        }
        // The key the daemon computes for this hook: its command, its settings and every
        // file its fingerprint covers, read as the loader reads them.
        let command = config.command.clone().unwrap_or_default();
        let project_text = project.display().to_string();
        let vars = hookd_core::command::CommandVars {
            project_dir: &project_text,
            plans_dir: "",
            session_id: "",
        };
        let collected = hookd_settings::verify::collect(&command, &config.env, &vars);
        let input = hookd_core::trust::HookTrustInput {
            trusted: Vec::new(),
            scripts: collected.files,
            hooks: vec![hookd_core::trust::CoveredFiles {
                command,
                env: config.env.clone(),
                scripts: collected.digests,
                uncovered: collected.uncovered,
            }],
        };
        let key = input.key_for(config, project);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let path = locations.paths.trusted_hooks.clone();
    let before = read_file(&path)?;
    let text = text_of(&path, before.as_deref())?;
    let mut store = match hookd_core::trust::TrustStore::parse(&text) {
        Ok(store) => store,
        Err(err) => {
            let _ = writeln!(
                report,
                "warning: {} is damaged ({err}); the moved project hooks are not trusted. \
                 Fix it, then run `hookctl trust --cwd {}`.",
                path.display(),
                hookd_core::command::shell_quote(&project.display().to_string())
            );
            return Ok(None);
        }
    };
    if store.trust(&project.display().to_string(), &keys) == 0 {
        return Ok(None);
    }
    let _ = writeln!(
        report,
        "note: the {} moved project hook(s) are trusted for `--project-hooks require` (you \
         moved them yourself); `hookctl untrust --cwd {}` takes that back.",
        keys.len(),
        hookd_core::command::shell_quote(&project.display().to_string())
    );
    Ok(Some((path, before, store.to_text())))
}

/// A hook object's identity for matching it across files: its name and command.
pub(super) fn hook_identity(hook: &Value) -> String {
    let text = |key: &str| hook.get(key).and_then(Value::as_str).unwrap_or("");
    format!("{}:{}", text("name"), text("command"))
}

/// [`hook_identity`] of a parsed hook.
pub(super) fn config_identity(config: &hookd_core::HookConfig) -> String {
    format!(
        "{}:{}",
        config.name.as_deref().unwrap_or(""),
        config.command.as_deref().unwrap_or("")
    )
}
