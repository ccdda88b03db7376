//! The host's own rules about its files: a settings file it would not load (refused before any
//! edit), its companion files (Codex CLI's hook trust records in `config.toml`) kept in step
//! with the settings file, and why it would not run the relay entries as they are.

use std::path::PathBuf;

use anyhow::bail;

use super::files::{Change, push_change, read_file, text_of};
use super::locations::Target;

/// Refuses to edit a host settings file the host would not load (it would drop the relay
/// entries with the rest).
pub(super) fn refuse_problems(target: &Target, host_text: &str) -> anyhow::Result<()> {
    let problems = target.host.files().settings_problems(host_text);
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "{} would not load {} as it is, so relay entries written there would not run: {}. Fix \
         the file first; nothing was changed.",
        target.host.product(),
        target.host_file.display(),
        problems.join("; ")
    )
}

/// The changes of the host's companion files (a trust record, say) for the settings file's
/// new text.
pub(super) fn companion_changes(target: &Target, host_text: &str) -> anyhow::Result<Vec<Change>> {
    let mut changes = Vec::new();
    for path in &target.companions {
        let before = read_file(path)?;
        let current = before
            .as_deref()
            .map(|bytes| text_of(path, Some(bytes)))
            .transpose()?;
        let after = target
            .host
            .files()
            .companion_text(&target.host_file, host_text, path, current.as_deref())
            .map_err(|message| anyhow::anyhow!("cannot edit {}: {message}", path.display()))?;
        if let Some(after) = after {
            push_change(&mut changes, path, before, after);
        }
    }
    Ok(changes)
}

/// Why the host would not run the relay entries of an installed target as they are.
pub(super) fn host_wiring_problems(target: &Target) -> Vec<String> {
    let text = crate::read_settings_text_or_empty(&target.host_file);
    let companions: Vec<(PathBuf, Option<String>)> = target
        .companions
        .iter()
        .map(|path| {
            let text = read_file(path)
                .ok()
                .flatten()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
            (path.clone(), text)
        })
        .collect();
    target
        .host
        .files()
        .wiring_problems(&target.host_file, &text, &companions)
}
