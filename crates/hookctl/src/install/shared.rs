//! The files two hosts read: GitHub Copilot CLI also runs the hooks of a repository's
//! `.claude/settings.json` (in folders it trusts), relay entries included. `install --host
//! claude --scope project` and `doctor` say so when Copilot CLI is present, and whether
//! Copilot trusts the project (without which it runs neither the relay entries nor the
//! guarded copies of the moved hooks there).

use std::path::{Path, PathBuf};

use hookd_core::dialect::{Dialect, HomeEnv};
use serde_json::Value;

use super::Locations;
use super::status::installed_relays;

/// Copilot CLI's own directory (`$COPILOT_HOME`, else `~/.copilot`), when it exists: the sign
/// that Copilot CLI is used on this machine.
fn copilot_home(locations: &Locations) -> Option<PathBuf> {
    let var = |name: &str| locations.env.var(name).map(str::to_owned);
    let env = HomeEnv {
        home: &locations.env.home_dir,
        var: &var,
    };
    // The user hooks file is `<copilot home>/hooks/hookd.json`.
    let file = Dialect::COPILOT.files().user_settings_file(&env);
    let home = file.parent()?.parent()?.to_path_buf();
    home.is_dir().then_some(home)
}

/// Whether Copilot CLI trusts `project` (`trustedFolders` of its `config.json` holds it or a
/// folder above it; the file has comments once Copilot has written it, and is judged as the
/// daemon judges it: `copilot::files::copilot_trusts_project`); `None` when the file cannot be
/// read.
fn copilot_trusts(copilot_home: &Path, project: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(copilot_home.join("config.json")).ok()?;
    let root: Value = hookd_core::jsonc::parse(&text).ok()?;
    let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_owned());
    Some(hookd_core::dialect::copilot::files::copilot_trusts_project(
        &project,
        Some(&root),
    ))
}

/// What a Claude Code project install means for Copilot CLI, one line each; empty when
/// Copilot CLI is not present or the project's `.claude/settings.json` has no relay entry.
pub fn copilot_on_claude_project(locations: &Locations, project: &Path) -> Vec<String> {
    let Some(home) = copilot_home(locations) else {
        return Vec::new();
    };
    let claude_file = Dialect::CLAUDE.files().project_settings_file(project);
    let wired = installed_relays(locations, project)
        .iter()
        .any(|install| install.host_file == claude_file && !install.commands.is_empty());
    if !wired {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "Copilot CLI also runs the hooks of {} (with Claude Code's event names and a \
         Claude-shaped payload): its relay entries reach hookd from Copilot CLI too and are \
         answered in Claude Code's shape, which Copilot CLI reads there, so each guard runs \
         once in each CLI",
        claude_file.display()
    )];
    match copilot_trusts(&home, project) {
        Some(true) => {}
        Some(false) | None => lines.push(format!(
            "Copilot CLI does not trust {} (trustedFolders in {}): there it runs no hook of \
             .claude/settings.json nor .github/hooks, hookd's or yours",
            project.display(),
            home.join("config.json").display()
        )),
    }
    lines
}
