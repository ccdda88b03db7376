//! The administrator's GitHub Copilot CLI policy folder (`/etc/github-copilot/policy.d/`),
//! read and never written: `hookctl doctor` lists its hooks, checks each file as Copilot CLI
//! does before it loads one, and says what its switches mean for hookd's relay entries;
//! `hookctl install --host copilot` warns when they keep Copilot from running them.
//!
//! Copilot CLI 1.0.102 skips a policy file that is a symbolic link, is not owned by root, or is
//! writable by its group or others (its own messages: "Policy file ... is not owned by root",
//! "... is group or world-writable"), and a policy hook whose `exec` path is not absolute.
//! Unlike Gemini CLI's system files, the folders above are not looked at. `disableAllHooks`
//! in a policy file leaves only the policy files' hooks running; `allowManagedHooksOnly` only
//! managed hooks: in both cases the relay entries hookd writes into the user's or a
//! repository's hooks folder do not run in Copilot CLI, and hookd's hooks run for the other
//! CLIs only.
//!
//! The folder is `HOOKD_COPILOT_POLICY_DIR` when it is an absolute path (for tests, as
//! `HOOKD_MANAGED_HOOKS` is for the managed layer), else
//! [`hookd_core::dialect::copilot::COPILOT_POLICY_DIR`].

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hookd_core::dialect::copilot::COPILOT_POLICY_DIR;
use hookd_core::dialect::copilot::files::{PolicyFile, policy_folder_files, read_policy_file};
use hookd_settings::configfile::read_config_file;

/// The variable that moves the policy folder (an absolute path only).
pub const POLICY_DIR_VAR: &str = "HOOKD_COPILOT_POLICY_DIR";

/// The most policy files read; more are named as left out.
const MAX_POLICY_FILES: usize = 64;

/// The most entries of the folder looked at.
const MAX_POLICY_ENTRIES: usize = 4096;

/// The policy folder: `HOOKD_COPILOT_POLICY_DIR` when absolute, else the system's.
pub fn policy_dir(var: impl Fn(&str) -> Option<String>) -> PathBuf {
    var(POLICY_DIR_VAR)
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| PathBuf::from(COPILOT_POLICY_DIR))
}

/// One policy file as Copilot CLI would take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyEntry {
    /// The file.
    pub path: PathBuf,
    /// Why Copilot CLI skips it (or hookd could not read it); `None`: it loads.
    pub refused: Option<String>,
    /// What it says, when it loads.
    pub read: PolicyFile,
}

/// The policy folder's files, in Copilot's order; empty when the folder does not exist.
/// `owner` is the user the files must belong to: root, but for tests.
pub fn read_policy_dir(dir: &Path, owner: u32) -> Result<Vec<PolicyEntry>, String> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(format!("cannot list {}: {err}", dir.display())),
    };
    let names: Vec<String> = entries
        .take(MAX_POLICY_ENTRIES)
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    let mut files = policy_folder_files(names);
    files.truncate(MAX_POLICY_FILES);
    Ok(files
        .into_iter()
        .map(|name| {
            let path = dir.join(name);
            let refused = refusal(&path, owner);
            let read = match &refused {
                Some(_) => PolicyFile::default(),
                None => match read_config_file(&path) {
                    Ok(Some(bytes)) => read_policy_file(&String::from_utf8_lossy(&bytes)),
                    Ok(None) => PolicyFile {
                        problem: Some("gone while read".to_owned()),
                        ..PolicyFile::default()
                    },
                    Err(err) => PolicyFile {
                        problem: Some(err.to_string()),
                        ..PolicyFile::default()
                    },
                },
            };
            PolicyEntry {
                path,
                refused,
                read,
            }
        })
        .collect())
}

/// Why Copilot CLI skips the policy file at `path`, by its own rules; `None` when it loads it.
fn refusal(path: &Path, owner: u32) -> Option<String> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) => return Some(format!("cannot be examined: {err}")),
    };
    if meta.file_type().is_symlink() {
        return Some("it is a symbolic link".to_owned());
    }
    if !meta.is_file() {
        return Some("it is not a regular file".to_owned());
    }
    if meta.uid() != owner {
        return Some(format!("it is not owned by root (uid {})", meta.uid()));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Some(format!("it is group or world-writable (mode {mode:o})"));
    }
    None
}

/// How a doctor finding counts (the doctor turns these into its own findings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// All is well.
    Ok,
    /// Worth knowing.
    Note,
    /// Something to fix, with the fix.
    Problem,
}

/// What the policy folder means, one line each: (level, message, fix). `copilot_wired`: hookd's
/// relay entries are installed in a Copilot hooks file.
pub fn policy_findings(
    dir: &Path,
    owner: u32,
    copilot_wired: bool,
) -> Vec<(Level, String, Option<String>)> {
    let entries = match read_policy_dir(dir, owner) {
        Ok(entries) => entries,
        Err(err) => return vec![(Level::Note, err, None)],
    };
    let mut findings = Vec::new();
    for entry in &entries {
        let file = entry.path.display();
        if let Some(reason) = &entry.refused {
            findings.push((
                Level::Problem,
                format!("Copilot CLI skips the policy file {file}: {reason}; its hooks do not run"),
                Some(format!(
                    "ask the administrator to make it a regular file owned by root and writable \
                     by root only (`sudo chown root {file} && sudo chmod go-w {file}`)"
                )),
            ));
            continue;
        }
        if let Some(problem) = &entry.read.problem {
            findings.push((
                Level::Problem,
                format!("the policy file {file} does not read as a hooks file: {problem}"),
                Some("ask the administrator to fix it".to_owned()),
            ));
            continue;
        }
        let hooks: Vec<String> = entry
            .read
            .hooks
            .iter()
            .map(|(event, line)| format!("{event}: {line}"))
            .collect();
        findings.push((
            Level::Ok,
            format!(
                "policy file {file}: {} administrator hooks{}{} (Copilot CLI runs them first, \
                 whatever the user's files say)",
                hooks.len(),
                if hooks.is_empty() { "" } else { ": " },
                hooks.join(", ")
            ),
            None,
        ));
        for (event, exec) in &entry.read.relative_execs {
            findings.push((
                Level::Note,
                format!(
                    "the {event} policy hook of {file} runs `{exec}`, not an absolute path: \
                     Copilot CLI skips it"
                ),
                None,
            ));
        }
    }
    for line in lockdown_lines(&entries) {
        let level = if copilot_wired {
            Level::Problem
        } else {
            Level::Note
        };
        let fix = copilot_wired.then(|| {
            "hookd cannot lift the administrator's policy: ask for the relay entries to be \
             added to a policy file, or for the switch to be lifted; meanwhile hookd's hooks run \
             for the other CLIs only"
                .to_owned()
        });
        findings.push((level, line, fix));
    }
    findings
}

/// The lines saying that the policy keeps Copilot CLI from running hookd's relay entries, one
/// per switch that is on; empty when none is.
pub fn lockdown_lines(entries: &[PolicyEntry]) -> Vec<String> {
    let loaded = || entries.iter().filter(|entry| entry.refused.is_none());
    let mut lines = Vec::new();
    let consequence = "so the relay entries hookd writes into ~/.copilot/hooks/hookd.json or \
                       .github/hooks/hookd.json do not run there, and hookd's hooks do not run \
                       for Copilot CLI";
    if let Some(entry) = loaded().find(|entry| entry.read.allow_managed_hooks_only) {
        lines.push(format!(
            "{} sets allowManagedHooksOnly: Copilot CLI runs no hook of the user's or a \
             repository's files, {consequence}",
            entry.path.display()
        ));
    }
    if let Some(entry) = loaded().find(|entry| entry.read.disable_all_hooks) {
        lines.push(format!(
            "{} sets disableAllHooks: Copilot CLI runs only the policy files' hooks, \
             {consequence}",
            entry.path.display()
        ));
    }
    lines
}

/// The warnings `hookctl install --host copilot` prints about the policy folder.
pub fn install_warnings(var: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let dir = policy_dir(var);
    read_policy_dir(&dir, 0)
        .map(|entries| lockdown_lines(&entries))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uid(path: &Path) -> u32 {
        fs::metadata(path).expect("metadata").uid()
    }

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, text).expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    const GUARD: &str = r#"{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "/opt/guard.sh"}]}}"#;
    const RELATIVE: &str =
        r#"{"version": 1, "hooks": {"sessionStart": [{"type": "command", "exec": "bin/x"}]}}"#;

    #[test]
    fn the_policy_folder_is_overridable_by_an_absolute_path_only() {
        let cases = [
            (None, COPILOT_POLICY_DIR),
            (Some("/srv/policy"), "/srv/policy"),
            (Some("relative"), COPILOT_POLICY_DIR),
        ];
        for (value, expected) in cases {
            let var = |name: &str| {
                (name == POLICY_DIR_VAR)
                    .then(|| value.map(str::to_owned))
                    .flatten()
            };
            assert_eq!(policy_dir(var), Path::new(expected), "{value:?}");
        }
    }

    #[test]
    fn doctor_checks_each_policy_file_as_copilot_does() {
        // (file text, mode, level of the file's finding, words of it, lockdown findings)
        let cases: [(&str, u32, Level, &str, usize); 6] = [
            (
                GUARD,
                0o644,
                Level::Ok,
                "1 administrator hooks: preToolUse: /opt/guard.sh",
                0,
            ),
            (
                GUARD,
                0o664,
                Level::Problem,
                "group or world-writable (mode 664)",
                0,
            ),
            (
                GUARD,
                0o646,
                Level::Problem,
                "group or world-writable (mode 646)",
                0,
            ),
            (
                r#"{"version": 1, "disableAllHooks": true, "hooks": {}}"#,
                0o644,
                Level::Ok,
                "0 administrator hooks",
                1,
            ),
            (
                r#"{"allowManagedHooksOnly": true}"#,
                0o600,
                Level::Ok,
                "0 administrator hooks",
                1,
            ),
            // The relative exec is a note of its own, counted with the lockdowns.
            (RELATIVE, 0o644, Level::Ok, "sessionStart: bin/x", 1),
        ];
        for (text, mode, level, words, lockdowns) in cases {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = write(dir.path(), "org.json", text, mode);
            // Not a policy file: not *.json.
            write(dir.path(), "README", "{", 0o666);
            let owner = uid(&path);
            for wired in [false, true] {
                let findings = policy_findings(dir.path(), owner, wired);
                assert_eq!(
                    findings.len(),
                    1 + lockdowns,
                    "{text} {mode:o}: {findings:?}"
                );
                assert_eq!(findings[0].0, level, "{findings:?}");
                assert!(findings[0].1.contains(words), "{findings:?}");
                for lockdown in findings[1..]
                    .iter()
                    .filter(|f| !f.1.contains("absolute path"))
                {
                    // Plainly said: the relay entries do not run in Copilot CLI.
                    assert!(lockdown.1.contains("do not run"), "{lockdown:?}");
                    let expected = if wired { Level::Problem } else { Level::Note };
                    assert_eq!(lockdown.0, expected);
                    assert_eq!(lockdown.2.is_some(), wired);
                }
            }
            // Owned by someone else: skipped, and its switches count for nothing.
            let findings = policy_findings(dir.path(), owner + 1, true);
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert!(findings[0].1.contains("not owned by root"), "{findings:?}");
            let relative = usize::from(text == RELATIVE);
            assert_eq!(
                install_warnings_in(dir.path(), owner).len(),
                lockdowns - relative
            );
        }
    }

    fn install_warnings_in(dir: &Path, owner: u32) -> Vec<String> {
        read_policy_dir(dir, owner)
            .map(|entries| lockdown_lines(&entries))
            .unwrap_or_default()
    }

    #[test]
    fn links_missing_folders_and_bad_json() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = write(dir.path(), "real.txt", GUARD, 0o644);
        std::os::unix::fs::symlink(&target, dir.path().join("link.json")).expect("symlink");
        write(dir.path(), "broken.json", "{", 0o644);
        let owner = uid(&target);
        let findings = policy_findings(dir.path(), owner, false);
        let levels: Vec<(Level, bool)> = findings
            .iter()
            .map(|(level, message, _)| (*level, message.contains("symbolic link")))
            .collect();
        // broken.json, then link.json, in name order.
        assert_eq!(
            levels,
            [(Level::Problem, false), (Level::Problem, true)],
            "{findings:?}"
        );
        assert!(policy_findings(&dir.path().join("missing"), owner, true).is_empty());
    }
}
