//! `hookctl sync`: rewrites the relay entries of every recorded install to match hookd's hooks
//! as they are now, moving nothing.

use std::fmt::Write as _;

use super::args::SyncArgs;
use super::companions::{companion_changes, refuse_problems};
use super::diff::unified_diff;
use super::files::{parse_object, push_change, read_file, text_of, write_atomic};
use super::handover::{host_file_mode, http_wire};
use super::http::REDACTED;
use super::locations::Locations;
use super::split::split_hooks;
use super::wiring::{Kept, describe_wiring, rewire};

/// `hookctl sync`: rewrites the relay entries of every recorded install to match hookd's
/// hooks as they are now (nothing is moved); returns the report.
pub fn sync(args: &SyncArgs, locations: &Locations) -> anyhow::Result<String> {
    let installed = locations.installed()?;
    let mut report = String::new();
    if installed.is_empty() {
        report.push_str("Nothing is installed: nothing to sync.\n");
        return Ok(report);
    }
    for (target, mut manifest) in installed {
        let host_before = read_file(&target.host_file)?;
        let host_text = text_of(&target.host_file, host_before.as_deref())?;
        let host_root = parse_object(&target.host_file, &host_text)?;
        // An unreadable hookd file stops the sync rather than unwire its hooks.
        let hookd_text = read_file(&target.hookd_file)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        refuse_problems(&target, &host_text)?;
        let kept = split_hooks(target.host, &host_root).kept_and_unmoved();
        let http = manifest
            .http_port
            .map(|port| {
                let events = manifest.http_events.unwrap_or_default();
                http_wire(locations, port, events, args.dry_run)
            })
            .transpose()?;
        let (new_text, wiring) = rewire(
            &target,
            locations,
            &host_text,
            &host_root,
            Kept {
                definitions: kept,
                moved: &manifest.moved,
            },
            &hookd_text,
            manifest.socket.as_deref(),
            http.as_ref(),
            &mut report,
        )?;
        let companions = companion_changes(&target, &new_text)?;
        let mut changes = Vec::new();
        push_change(&mut changes, &target.host_file, host_before, new_text);
        changes.extend(companions);
        if changes.is_empty() {
            let _ = writeln!(report, "{}: in step.", target.describe());
            continue;
        }
        for change in &changes {
            let diff = unified_diff(&change.path, change.before.as_deref(), &change.after);
            match &http {
                // The diff shows the entries; the secret stays in the files.
                Some(http) => report.push_str(&diff.replace(&http.secret, REDACTED)),
                None => report.push_str(&diff),
            }
        }
        let _ = writeln!(
            report,
            "{}: {} now relays {}.",
            target.describe(),
            target.host_file.display(),
            describe_wiring(&wiring)
        );
        if args.dry_run {
            continue;
        }
        manifest.record_changes(&target.backup_dir, &changes)?;
        manifest.save(&target.backup_dir)?;
        for change in &changes {
            let mode = host_file_mode(&change.path, &target.host_file, http.is_some());
            write_atomic(&change.path, &change.after, mode)?;
        }
        let _ = writeln!(report, "{}", target.host.files().pickup_note());
    }
    if args.dry_run {
        report.push_str("Dry run: nothing was written.\n");
    }
    Ok(report)
}
