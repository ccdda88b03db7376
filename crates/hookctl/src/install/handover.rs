//! `hookctl install`: moves the host's hooks into hookd's file, writes the relay entries in
//! their place, shows every change as a diff, asks, records the manifest, then writes.

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

use super::args::HttpEvents;
use super::args::InstallArgs;
use super::args::Transport;
use super::companions::{companion_changes, refuse_problems};
use super::diff::unified_diff;
use super::files::{
    file_mode, missing_dirs, parse_object, push_change, read_file, set_member, text_of,
    write_atomic,
};
use super::http::REDACTED;
use super::locations::Locations;
use super::locations::Target;
use super::manifest::{MANIFEST, Manifest, MovedDefinition};
use super::split::{append_hooks, split_hooks};
use super::trust_moved::trust_moved;
use super::wiring::{HttpWire, Kept, describe_wiring, rewire};

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
    let http_port = http_port(args, &target, manifest.http_port)?;
    let http_events = match http_port {
        Some(_) => Some(
            args.events
                .or(manifest.http_events)
                .unwrap_or_else(|| HttpEvents::default_for(target.host)),
        ),
        None => None,
    };
    let http = http_port
        .zip(http_events)
        .map(|(port, events)| http_wire(locations, port, events, args.dry_run))
        .transpose()?;
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
        http.as_ref(),
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
    if let Some(http) = &http {
        // The diff shows the entries; the secret stays in the files.
        report = report.replace(&http.secret, REDACTED);
    }
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
    manifest.http_port = http_port;
    manifest.http_events = http_events;
    if manifest.is_recorded() && moved_count > 0 {
        manifest.later_moves = true;
    }
    manifest.record_changes(&target.backup_dir, &changes)?;
    manifest.moved.extend(moved_records);
    manifest.save(&target.backup_dir)?;

    for change in &changes {
        let mode = host_file_mode(&change.path, &target.host_file, http.is_some());
        write_atomic(&change.path, &change.after, mode)?;
    }
    let _ = writeln!(
        report,
        "Installed: hookd now runs the {} (`{}` gives them back). {}",
        target.describe(),
        target.command("uninstall"),
        target.host.files().pickup_note()
    );
    if target.host == super::Host::COPILOT {
        // The administrator's policy may keep Copilot CLI from running what was just written.
        for line in crate::copilot_policy::install_warnings(|name| {
            locations.env.var(name).map(str::to_owned)
        }) {
            let _ = writeln!(report, "warning: {line}.");
        }
    }
    if target.host == super::Host::CLAUDE
        && let Some(project) = &target.project
    {
        for line in super::shared::copilot_on_claude_project(locations, project) {
            let _ = writeln!(report, "note: {line}.");
        }
    }
    Ok(report)
}

/// The port of an HTTP install, `None` for a command install: `--transport`, else what the
/// previous install used. HTTP entries are for Claude Code's and Copilot CLI's user files only:
/// a project's file is shared, and the entries carry the user's secret.
fn http_port(
    args: &InstallArgs,
    target: &Target,
    recorded: Option<u16>,
) -> anyhow::Result<Option<u16>> {
    let http = match args.transport {
        Some(transport) => transport == Transport::Http,
        None => recorded.is_some(),
    };
    if !http {
        if args.port.is_some() {
            bail!("--port is for --transport http");
        }
        if args.events.is_some() {
            bail!("--events is for --transport http");
        }
        return Ok(None);
    }
    if !super::http::has_http(target.host) {
        bail!(
            "--transport http is for Claude Code and Copilot CLI (--host claude, --host \
             copilot): {} runs command hooks only here",
            target.host.product()
        );
    }
    if target.scope != super::InstallScope::User {
        bail!(
            "--transport http needs --scope user: the entries carry your secret for hookd's \
             HTTP listener, and a project's settings file is shared with the project"
        );
    }
    Ok(Some(
        args.port
            .or(recorded)
            .unwrap_or(hookd_protocol::http::DEFAULT_PORT),
    ))
}

/// The port and secret of an HTTP install. The secret file is created when missing (the
/// daemon reads the same file); a dry run creates nothing and shows a placeholder instead.
pub(super) fn http_wire(
    locations: &Locations,
    port: u16,
    events: super::args::HttpEvents,
    dry_run: bool,
) -> anyhow::Result<HttpWire> {
    let path = locations.http_secret_path();
    let secret = if dry_run {
        match hookd_settings::httpsecret::load(&path) {
            Ok(secret) => secret.as_str().to_owned(),
            Err(_) => REDACTED.to_owned(),
        }
    } else {
        hookd_settings::httpsecret::load_or_create(&path)
            .with_context(|| format!("cannot read or create {}", path.display()))?
            .as_str()
            .to_owned()
    };
    Ok(HttpWire {
        port,
        secret,
        events,
    })
}

/// The mode a changed file is written with: its own, except that a host file with HTTP
/// entries (which hold the secret) is the user's alone.
pub(super) fn host_file_mode(path: &Path, host_file: &Path, http: bool) -> Option<u32> {
    if http && path == host_file {
        return Some(0o600);
    }
    file_mode(path)
}
