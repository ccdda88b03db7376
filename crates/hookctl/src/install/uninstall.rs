//! `hookctl uninstall`: gives back what this host's installs moved. Untouched files are
//! restored byte for byte; otherwise the relay entries leave the host file, the recorded
//! definitions go back to it and leave hookd's file ([`give_back`]), and everything else stays.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::{Context, bail};
use hookd_core::jsonc;
use serde_json::{Map, Value};

use super::args::UninstallArgs;
use super::companions::companion_changes;
use super::diff::unified_diff;
use super::files::{Change, file_mode, parse_object, read_file, set_member, text_of, write_atomic};
use super::guarded::is_wiring_hook;
use super::locations::{Locations, Target};
use super::manifest::{MANIFEST, Manifest};
use super::split::push_definition;
use super::wiring::relayed_events;

/// What a hook can be recognised by after an edit: its name, else its command.
pub(super) fn hook_handles(hook: &Value) -> Vec<String> {
    let text = |key: &str| hook.get(key).and_then(Value::as_str).unwrap_or("");
    let mut handles = Vec::new();
    if !text("name").is_empty() {
        handles.push(format!("name:{}", text("name")));
    }
    if !text("command").is_empty() {
        handles.push(format!("command:{}", text("command")));
    }
    handles
}

/// `hookctl uninstall`: returns the report to print.
pub fn uninstall(args: &UninstallArgs, locations: &Locations) -> anyhow::Result<String> {
    let target = locations.files(args.host, args.scope, args.cwd.as_deref())?;
    let manifest = Manifest::load(&target.backup_dir)?;
    let host_before = read_file(&target.host_file)?;
    let hookd_before = read_file(&target.hookd_file)?;
    let host_text = text_of(&target.host_file, host_before.as_deref())?;
    let hookd_text = text_of(&target.hookd_file, hookd_before.as_deref())?;
    let host_root = parse_object(&target.host_file, &host_text)?;
    let hookd_root = parse_object(&target.hookd_file, &hookd_text)?;
    if !manifest.is_recorded() && relayed_events(&host_root).is_empty() {
        return Ok(format!(
            "hookd is not installed for the {}: nothing to undo.\n",
            target.describe()
        ));
    }
    let mut report = String::new();

    // Nothing touched since hookctl last wrote: the originals, byte for byte.
    let untouched = manifest.is_recorded()
        && !manifest.later_moves
        && manifest.files.iter().all(|file| {
            read_file(&file.path)
                .ok()
                .flatten()
                .as_deref()
                .map(hookd_core::trust::sha256_hex)
                == Some(file.written_sha256.clone())
        });
    let mut changes: Vec<Change> = Vec::new();
    if untouched {
        for file in &manifest.files {
            let before = read_file(&file.path)?;
            let original = match &file.original {
                Some(name) => Some(std::fs::read(target.backup_dir.join(name)).with_context(
                    || {
                        format!(
                            "cannot read the saved original {}",
                            target.backup_dir.join(name).display()
                        )
                    },
                )?),
                None => None,
            };
            changes.push(Change {
                path: file.path.clone(),
                before,
                remove: original.is_none(),
                after: original.unwrap_or_default(),
            });
        }
    } else {
        let plan = give_back(&target, &manifest, &host_root, &hookd_root);
        if !plan.edited_moved.is_empty() && !args.force {
            let product = target.host.product();
            bail!(
                "{} moved {product} hook(s) were edited in {} since the install ({}); hookctl \
                 cannot turn an edited hook back into {product}'s form. Either undo the edit, \
                 or move it back by hand and delete it there, or keep it in hookd's file: `{} \
                 --force`",
                plan.edited_moved.len(),
                target.hookd_file.display(),
                plan.edited_moved.join(", "),
                target.command("uninstall")
            );
        }
        for name in &plan.edited_moved {
            let _ = writeln!(
                report,
                "note: {name} was edited in {} since the install and stays there.",
                target.hookd_file.display()
            );
        }
        for name in &plan.gone {
            let _ = writeln!(
                report,
                "note: {name} is no longer in {}, so it is not put back.",
                target.hookd_file.display()
            );
        }
        let new_host = if plan.host_hooks.is_empty() && !host_root.contains_key("hooks") {
            host_text.clone()
        } else {
            set_member(&host_text, "hooks", &Value::Object(plan.host_hooks.clone()))
                .with_context(|| format!("cannot edit {}", target.host_file.display()))?
        };
        let new_hookd = set_member(
            &hookd_text,
            "hooks",
            &Value::Object(plan.hookd_hooks.clone()),
        )
        .with_context(|| format!("cannot edit {}", target.hookd_file.display()))?;
        let companions = companion_changes(&target, &new_host)?;
        for (path, before, after) in [
            (&target.host_file, host_before, new_host),
            (&target.hookd_file, hookd_before, new_hookd),
        ] {
            // A file the install created that holds nothing else any more goes again.
            let created = manifest
                .files
                .iter()
                .any(|file| file.path == *path && file.original.is_none());
            let remove = created && holds_nothing(&after);
            let unchanged = match &before {
                Some(bytes) => *bytes == after.as_bytes() && !remove,
                None => remove || after.is_empty(),
            };
            if !unchanged {
                changes.push(Change {
                    path: path.clone(),
                    before,
                    after: after.into_bytes(),
                    remove,
                });
            }
        }
        changes.extend(companions);
    }
    for change in &changes {
        if change.remove {
            let _ = writeln!(report, "remove {}", change.path.display());
        } else {
            report.push_str(&unified_diff(
                &change.path,
                change.before.as_deref(),
                &change.after,
            ));
        }
    }
    if args.dry_run {
        report.push_str("Dry run: nothing was restored.\n");
        return Ok(report);
    }
    for change in &changes {
        let recorded = manifest.files.iter().find(|file| file.path == change.path);
        if change.remove {
            match std::fs::remove_file(&change.path) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(err)
                        .with_context(|| format!("cannot remove {}", change.path.display()));
                }
            }
            // Directories the install created go again when nothing else lives in them.
            for dir in recorded.into_iter().flat_map(|file| &file.created_dirs) {
                let _ = std::fs::remove_dir(dir);
            }
        } else {
            let mode = recorded
                .and_then(|file| file.mode)
                .or_else(|| file_mode(&change.path));
            write_atomic(&change.path, &change.after, mode)?;
        }
    }
    for file in &manifest.files {
        if let Some(name) = &file.original {
            let _ = std::fs::remove_file(target.backup_dir.join(name));
        }
    }
    let _ = std::fs::remove_file(target.backup_dir.join(MANIFEST));
    let _ = std::fs::remove_dir(&target.backup_dir);
    for dir in &manifest.created_dirs {
        let _ = std::fs::remove_dir(dir);
    }
    let _ = writeln!(
        report,
        "Uninstalled: {} has no relay entry left and runs its own hooks again{}. {}",
        target.host_file.display(),
        if untouched {
            " (every file is back as it was before `hookctl install`)"
        } else {
            ""
        },
        target.host.files().pickup_note()
    );
    Ok(report)
}

/// Whether a settings text is empty, or an object with nothing but an empty `hooks`.
pub(super) fn holds_nothing(text: &str) -> bool {
    match jsonc::parse(text) {
        Ok(Value::Object(root)) => root
            .iter()
            .all(|(key, value)| key == "hooks" && value.as_object().is_some_and(Map::is_empty)),
        _ => jsonc::strip_comments(text).trim().is_empty(),
    }
}

/// What uninstall gives back, worked out from the manifest and the files as they are now.
#[derive(Debug, Default)]
pub(super) struct GiveBack {
    /// The host file's new `hooks`: what is there minus every relay entry, plus the moved
    /// definitions.
    pub(super) host_hooks: Map<String, Value>,
    /// hookd's file's new `hooks`: what is there minus what this host's installs added.
    pub(super) hookd_hooks: Map<String, Value>,
    /// Moved hooks of the host edited in hookd's file since (they stay there).
    pub(super) edited_moved: Vec<String>,
    /// Moved hooks no longer in hookd's file (removed by the user: not put back).
    pub(super) gone: Vec<String>,
}

pub(super) fn give_back(
    target: &Target,
    manifest: &Manifest,
    host_root: &Map<String, Value>,
    hookd_root: &Map<String, Value>,
) -> GiveBack {
    let mut plan = GiveBack {
        host_hooks: without_relay_entries(host_root.get("hooks")),
        hookd_hooks: hookd_root
            .get("hooks")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        ..GiveBack::default()
    };
    for record in &manifest.moved {
        // The definitions this install added to hookd's file, as they are there now.
        let mut present = 0usize;
        let mut edited: Vec<(String, Value)> = Vec::new();
        for (event, definition) in &record.added {
            if take_definition(&mut plan.hookd_hooks, event, |found| found == definition) {
                present += 1;
                continue;
            }
            // Edited: a definition of the same event with one of its hooks (the same name,
            // or the same command).
            let identities: BTreeSet<String> = definition
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(hook_handles)
                .collect();
            let same_hook = |found: &Value| {
                found
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .flat_map(hook_handles)
                    .any(|handle| identities.contains(&handle))
            };
            // Failing that (an unnamed hook whose command was edited), one with the same
            // matcher and as many hooks.
            let hook_count =
                |value: &Value| value.get("hooks").and_then(Value::as_array).map(Vec::len);
            let same_shape = |found: &Value| {
                definition.get("matcher").is_some()
                    && found.get("matcher") == definition.get("matcher")
                    && hook_count(found) == hook_count(definition)
            };
            let mut taken = None;
            let position = match plan.hookd_hooks.get(event) {
                Some(Value::Array(list)) => list
                    .iter()
                    .position(same_hook)
                    .or_else(|| list.iter().position(same_shape)),
                _ => None,
            };
            if let (Some(index), Some(Value::Array(list))) =
                (position, plan.hookd_hooks.get_mut(event))
            {
                taken = Some(list[index].clone());
                if target.host.is_native() {
                    list.remove(index);
                }
            }
            match taken {
                Some(found) => edited.push((event.clone(), found)),
                None => plan.gone.push(describe_definition(event, definition)),
            }
        }
        if edited.is_empty() {
            // Back as it was in the host file, unless the user removed all of it from
            // hookd's file (an identical definition hookd's file already had counts as
            // present: it stays there and the host gets its own back).
            if present > 0 || record.added.is_empty() {
                push_definition(
                    &mut plan.host_hooks,
                    &record.host_event,
                    record.host_definition.clone(),
                );
            }
            continue;
        }
        if target.host.is_native() {
            // The host reads hookd's format: the edited version goes back as it is now.
            for (event, definition) in edited {
                push_definition(&mut plan.host_hooks, &event, definition);
            }
        } else {
            // The edited version stays in hookd's file (with --force), and the host gets its
            // own definition back.
            for (event, definition) in &edited {
                plan.edited_moved
                    .push(describe_definition(event, definition));
            }
            push_definition(
                &mut plan.host_hooks,
                &record.host_event,
                record.host_definition.clone(),
            );
        }
    }
    prune_empty(&mut plan.hookd_hooks);
    prune_empty(&mut plan.host_hooks);
    plan
}

/// "BeforeTool hook guard" for messages.
pub(super) fn describe_definition(event: &str, definition: &Value) -> String {
    let names: Vec<String> = definition
        .get("hooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|hook| {
            let text = |key: &str| hook.get(key).and_then(Value::as_str).unwrap_or("");
            if text("name").is_empty() {
                text("command").to_owned()
            } else {
                text("name").to_owned()
            }
        })
        .collect();
    format!("{event} hook {:?}", names.join(", "))
}

/// Removes the first definition of `event` that `matches`; whether there was one.
pub(super) fn take_definition(
    hooks: &mut Map<String, Value>,
    event: &str,
    matches: impl Fn(&Value) -> bool,
) -> bool {
    let Some(Value::Array(list)) = hooks.get_mut(event) else {
        return false;
    };
    match list.iter().position(matches) {
        Some(index) => {
            list.remove(index);
            true
        }
        None => false,
    }
}

/// Drops events whose list became empty.
pub(super) fn prune_empty(hooks: &mut Map<String, Value>) {
    hooks.retain(|_, definitions| definitions.as_array().is_none_or(|list| !list.is_empty()));
}

/// A `hooks` object without relay entries (definitions left with no hook are dropped).
pub(super) fn without_relay_entries(hooks: Option<&Value>) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(hooks) = hooks.and_then(Value::as_object) else {
        return out;
    };
    for (event, definitions) in hooks {
        let Value::Array(definitions) = definitions else {
            out.insert(event.clone(), definitions.clone());
            continue;
        };
        let mut kept = Vec::new();
        for definition in definitions {
            let Some(Value::Array(list)) = definition.get("hooks") else {
                kept.push(definition.clone());
                continue;
            };
            let remaining: Vec<Value> = list
                .iter()
                .filter(|hook| !is_wiring_hook(hook))
                .cloned()
                .collect();
            if remaining.len() == list.len() {
                kept.push(definition.clone());
            } else if !remaining.is_empty() {
                let mut definition = definition.clone();
                definition["hooks"] = Value::Array(remaining);
                kept.push(definition);
            }
        }
        if !kept.is_empty() {
            out.insert(event.clone(), Value::Array(kept));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn uninstall_strips_every_relay_entry_and_nothing_else() {
        let hooks = json!({
            "BeforeTool": [
                {"hooks": [{"type": "command", "command": "hookd-relay BeforeTool"}]},
                {"hooks": [{"type": "command", "command": "/usr/bin/hookctl relay BeforeTool"},
                           {"type": "command", "command": "mine.sh"}]}
            ],
            "AfterTool": [{"hooks": [{"type": "command", "command": "hookd-relay AfterTool"}]}]
        });
        assert_eq!(
            Value::Object(without_relay_entries(Some(&hooks))),
            json!({"BeforeTool": [{"hooks": [{"type": "command", "command": "mine.sh"}]}]})
        );
    }
}
