//! `hookctl install`: moves the host's hooks into hookd's file, writes the relay entries in
//! their place, shows every change as a diff, asks, records the manifest, then writes.

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

use super::args::InstallArgs;
use super::companions::{companion_changes, refuse_problems};
use super::diff::unified_diff;
use super::files::{
    file_mode, missing_dirs, parse_object, push_change, read_file, set_member, text_of,
    write_atomic,
};
use super::locations::Locations;
use super::manifest::{MANIFEST, Manifest, MovedDefinition};
use super::split::{append_hooks, split_hooks};
use super::trust_moved::trust_moved;
use super::wiring::{Kept, describe_wiring, rewire};

/// How to ask before writing.
pub enum Prompt<'a> {
    /// Ask on the terminal; without one, `--yes` is required.
    Terminal,
    /// Answer with this function (tests).
    Answer(&'a mut dyn FnMut(&str) -> bool),
}

/// `hookctl install`: returns the report to print.
pub fn install(
    args: &InstallArgs,
    socket: Option<&Path>,
    locations: &Locations,
    prompt: &mut Prompt<'_>,
) -> anyhow::Result<String> {
    let target = locations.files(args.host, args.scope, args.cwd.as_deref())?;
    let mut manifest = Manifest::load(&target.backup_dir)?;
    let host_before = read_file(&target.host_file)?;
    let hookd_before = read_file(&target.hookd_file)?;
    let host_text = text_of(&target.host_file, host_before.as_deref())?;
    let hookd_text = text_of(&target.hookd_file, hookd_before.as_deref())?;
    let host_root = parse_object(&target.host_file, &host_text)?;
    let hookd_root = parse_object(&target.hookd_file, &hookd_text)?;

    refuse_problems(&target, &host_text)?;
    let mut report = String::new();
    let split = split_hooks(args.host, &host_root);
    for problem in &split.problems {
        let _ = writeln!(report, "warning: {}: {problem}", target.host_file.display());
    }
    let mut merged_hooks = hookd_root
        .get("hooks")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut moved_records = Vec::new();
    for mut record in split.moved {
        let added = append_hooks(&mut merged_hooks, &record.hookd);
        // Definitions hookd's file already had stay there when this one goes back.
        record.added = added;
        moved_records.push(record);
    }
    let moved_count = moved_records.len();
    let new_hookd_text = if moved_records.iter().all(|record| record.added.is_empty()) {
        hookd_text.clone()
    } else {
        set_member(&hookd_text, "hooks", &Value::Object(merged_hooks))
            .with_context(|| format!("cannot edit {}", target.hookd_file.display()))?
    };

    let socket = socket
        .map(|socket| socket.display().to_string())
        .or_else(|| manifest.socket.clone());
    let all_moved: Vec<MovedDefinition> = manifest
        .moved
        .iter()
        .chain(&moved_records)
        .cloned()
        .collect();
    let (new_host_text, wiring) = rewire(
        &target,
        locations,
        &host_text,
        &host_root,
        Kept {
            definitions: split.kept,
            moved: &all_moved,
        },
        &new_hookd_text,
        socket.as_deref(),
        &mut report,
    )?;

    let mut changes = Vec::new();
    push_change(
        &mut changes,
        &target.hookd_file,
        hookd_before,
        new_hookd_text,
    );
    let companions = companion_changes(&target, &new_host_text)?;
    push_change(&mut changes, &target.host_file, host_before, new_host_text);
    changes.extend(companions);
    let trust = trust_moved(&target, locations, &changes, &moved_records, &mut report)?;
    if let Some((path, before, after)) = trust {
        push_change(&mut changes, &path, before, after);
    }
    if changes.is_empty() {
        if manifest.is_recorded() {
            let _ = writeln!(
                report,
                "hookd already runs the {}: nothing to change.",
                target.describe()
            );
        } else {
            let _ = writeln!(
                report,
                "Nothing to install: {} has no hooks to move and hookd has none for {} to \
                 relay. Add hooks to {}, then run `{}` again.",
                target.host_file.display(),
                target.host.product(),
                target.hookd_file.display(),
                target.command("install")
            );
        }
        return Ok(report);
    }

    for change in &changes {
        report.push_str(&unified_diff(
            &change.path,
            change.before.as_deref(),
            &change.after,
        ));
    }
    let _ = writeln!(
        report,
        "{moved_count} hook definition(s) move to {}; {} relays {} to hookd.",
        target.hookd_file.display(),
        target.host_file.display(),
        describe_wiring(&wiring),
    );
    if args.dry_run {
        report.push_str("Dry run: nothing was written.\n");
        return Ok(report);
    }
    if !args.yes {
        let go = match prompt {
            Prompt::Answer(answer) => answer(&report),
            Prompt::Terminal => {
                if !std::io::stdin().is_terminal() {
                    print!("{report}");
                    bail!("not a terminal to ask on: add --yes to apply these changes");
                }
                crate::ask_yes_no(&report, "Apply these changes?")?
            }
        };
        if !go {
            bail!("nothing was changed");
        }
        report.clear();
    }

    if !manifest.is_recorded() {
        manifest.created_dirs = missing_dirs(&target.backup_dir.join(MANIFEST));
    }
    std::fs::create_dir_all(&target.backup_dir)
        .with_context(|| format!("cannot create {}", target.backup_dir.display()))?;
    manifest.host = target.host.as_str().to_owned();
    manifest.scope = target.scope.as_str().to_owned();
    manifest.project = target.project.as_ref().map(|dir| dir.display().to_string());
    manifest.socket = socket;
    if manifest.is_recorded() && moved_count > 0 {
        manifest.later_moves = true;
    }
    manifest.record_changes(&target.backup_dir, &changes)?;
    manifest.moved.extend(moved_records);
    manifest.save(&target.backup_dir)?;

    for change in &changes {
        let mode = file_mode(&change.path);
        write_atomic(&change.path, &change.after, mode)?;
    }
    let _ = writeln!(
        report,
        "Installed: hookd now runs the {} (`{}` gives them back). {}",
        target.describe(),
        target.command("uninstall"),
        target.host.files().pickup_note()
    );
    Ok(report)
}
