//! The administrator's GitHub Copilot CLI policy folder (`/etc/github-copilot/policy.d/`),
//! read and never written: `hookctl doctor` lists its hooks, checks each file as Copilot CLI
//! does before it loads one, and says what its switches mean for hookd's relay entries;
//! `hookctl install --host copilot` warns when they keep Copilot from running them.
//!
//! Copilot CLI 1.0.102 skips a policy file that is a symbolic link, is not owned by root, or is
//! writable by its group or others (its own messages: "Policy file ... is not owned by root",
//! "... is group or world-writable"), one with a top-level key a hooks file does not have
//! (`allowManagedHooksOnly` among them), and a policy hook whose `exec` path is not absolute.
//! Unlike Gemini CLI's system files, the folders above are not looked at. `disableAllHooks`
//! in a policy file turns off that file's own hooks only. The switch that keeps Copilot CLI
//! from running the user's and repositories' hooks is `allowManagedHooksOnly: true` in the
//! administrator's managed settings (`/etc/github-copilot/managed-settings.json`, beside the
//! policy folder): then the relay entries hookd writes into the user's or a repository's
//! hooks folder do not run in Copilot CLI, and hookd's hooks run for the other CLIs only. Each
//! of these was checked against the real CLI.
//!
//! The folder is `HOOKD_COPILOT_POLICY_DIR` when it is an absolute path (for tests, as
//! `HOOKD_MANAGED_HOOKS` is for the managed layer), else
//! [`hookd_core::dialect::copilot::COPILOT_POLICY_DIR`]; the managed settings are the
//! `managed-settings.json` of the folder above it.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hookd_core::dialect::copilot::COPILOT_POLICY_DIR;
use hookd_core::dialect::copilot::files::{
    PolicyFile, managed_hooks_only, policy_folder_files, read_policy_file,
};
use hookd_settings::configfile::read_config_file;

/// The variable that moves the policy folder (an absolute path only).
pub const POLICY_DIR_VAR: &str = "HOOKD_COPILOT_POLICY_DIR";

/// The most policy files read; a note says how many more were not.
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

/// The administrator's managed settings file beside the policy folder `dir`.
pub fn managed_settings_file(dir: &Path) -> PathBuf {
    dir.parent()
        .unwrap_or(Path::new("/"))
        .join("managed-settings.json")
}

/// Whether the managed settings beside `dir` lock hooks to the managed ones
/// (`allowManagedHooksOnly: true`); a missing or unreadable file does not.
fn managed_lockdown(dir: &Path) -> Option<PathBuf> {
    let file = managed_settings_file(dir);
    let bytes = read_config_file(&file).ok()??;
    let settings = hookd_core::jsonc::parse(&String::from_utf8_lossy(&bytes)).ok()?;
    managed_hooks_only(&settings).then_some(file)
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

/// The policy folder's files, in Copilot's order (at most [`MAX_POLICY_FILES`]), and how many
/// more there are; none when the folder does not exist. `owner` is the user the files must
/// belong to: root, but for tests.
pub fn read_policy_dir(dir: &Path, owner: u32) -> Result<(Vec<PolicyEntry>, usize), String> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(err) => return Err(format!("cannot list {}: {err}", dir.display())),
    };
    let names: Vec<String> = entries
        .take(MAX_POLICY_ENTRIES)
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    let files = policy_folder_files(names);
    let left_out = files.len().saturating_sub(MAX_POLICY_FILES);
    let entries = files
        .into_iter()
        .take(MAX_POLICY_FILES)
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
        .collect();
    Ok((entries, left_out))
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
    let (entries, left_out) = match read_policy_dir(dir, owner) {
        Ok(read) => read,
        Err(err) => return vec![(Level::Note, err, None)],
    };
    let mut findings = Vec::new();
    if left_out > 0 {
        findings.push((
            Level::Note,
            format!(
                "{} holds {left_out} policy files more than the {MAX_POLICY_FILES} checked \
                 (the first by name)",
                dir.display()
            ),
            None,
        ));
    }
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
        if !entry.read.unknown_keys.is_empty() {
            findings.push((
                Level::Problem,
                format!(
                    "Copilot CLI skips the policy file {file}: it holds {}, which a hooks file \
                     does not have; its hooks do not run",
                    entry.read.unknown_keys.join(", ")
                ),
                Some(
                    "ask the administrator to keep only version, hooks and disableAllHooks \
                     there (allowManagedHooksOnly belongs in managed-settings.json)"
                        .to_owned(),
                ),
            ));
            continue;
        }
        let hooks: Vec<String> = entry
            .read
            .hooks
            .iter()
            .map(|(event, line)| format!("{event}: {line}"))
            .collect();
        if entry.read.disable_all_hooks {
            findings.push((
                Level::Note,
                format!(
                    "the policy file {file} sets disableAllHooks: Copilot CLI runs none of its \
                     {} hooks (the switch concerns this file only; the user's files, hookd's \
                     relay entries among them, still run)",
                    hooks.len()
                ),
                None,
            ));
            continue;
        }
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
    if let Some(line) = lockdown_line(dir) {
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

/// The line saying that the administrator's managed settings keep Copilot CLI from running
/// hookd's relay entries; `None` when they do not.
pub fn lockdown_line(dir: &Path) -> Option<String> {
    let file = managed_lockdown(dir)?;
    Some(format!(
        "{} sets allowManagedHooksOnly: Copilot CLI runs only the policy files' hooks, none of \
         the user's or a repository's files, so the relay entries hookd writes into \
         ~/.copilot/hooks/hookd.json or .github/hooks/hookd.json do not run there, and hookd's \
         hooks do not run for Copilot CLI",
        file.display()
    ))
}

/// The warnings `hookctl install --host copilot` prints about the policy folder.
pub fn install_warnings(var: impl Fn(&str) -> Option<String>) -> Vec<String> {
    lockdown_line(&policy_dir(var)).into_iter().collect()
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
        // (file text, mode, level of the file's finding, words of it, relative exec notes)
        let cases: [(&str, u32, Level, &str, usize); 7] = [
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
                r#"{"version": 1, "disableAllHooks": true, "hooks": {"preToolUse": []}}"#,
                0o644,
                Level::Note,
                "runs none of its 0 hooks",
                0,
            ),
            (
                r#"{"version": 1, "allowManagedHooksOnly": true, "hooks": {}}"#,
                0o600,
                Level::Problem,
                "it holds allowManagedHooksOnly",
                0,
            ),
            (RELATIVE, 0o644, Level::Ok, "sessionStart: bin/x", 1),
            (
                "[1]",
                0o644,
                Level::Problem,
                "does not read as a hooks file",
                0,
            ),
        ];
        for (text, mode, level, words, notes) in cases {
            let root = tempfile::tempdir().expect("tempdir");
            let dir = root.path().join("policy.d");
            fs::create_dir(&dir).expect("mkdir");
            let path = write(&dir, "org.json", text, mode);
            // Not a policy file: not *.json.
            write(&dir, "README", "{", 0o666);
            let owner = uid(&path);
            let findings = policy_findings(&dir, owner, true);
            assert_eq!(findings.len(), 1 + notes, "{text} {mode:o}: {findings:?}");
            assert_eq!(findings[0].0, level, "{findings:?}");
            assert!(findings[0].1.contains(words), "{findings:?}");
            assert_eq!(findings[0].2.is_some(), level == Level::Problem);
            // Owned by someone else: skipped.
            let findings = policy_findings(&dir, owner + 1, true);
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert!(findings[0].1.contains("not owned by root"), "{findings:?}");
            // No lockdown without the managed settings.
            assert!(install_warnings(|name| (name == POLICY_DIR_VAR).then(|| dir.display().to_string())).is_empty());
        }
    }

    #[test]
    fn managed_settings_that_allow_managed_hooks_only_say_the_relay_entries_do_not_run() {
        // (managed settings, a lockdown line)
        let cases = [
            (Some(r#"{"allowManagedHooksOnly": true}"#), true),
            (Some("// managed\n{\"allowManagedHooksOnly\": true}"), true),
            (Some(r#"{"allowManagedHooksOnly": false}"#), false),
            (Some(r#"{"disableAllHooks": true}"#), false),
            (Some("not json"), false),
            (None, false),
        ];
        for (settings, locked) in cases {
            let root = tempfile::tempdir().expect("tempdir");
            let dir = root.path().join("policy.d");
            fs::create_dir(&dir).expect("mkdir");
            if let Some(text) = settings {
                write(root.path(), "managed-settings.json", text, 0o644);
            }
            for wired in [false, true] {
                let findings = policy_findings(&dir, 0, wired);
                assert_eq!(
                    findings.len(),
                    usize::from(locked),
                    "{settings:?}: {findings:?}"
                );
                if let Some((level, message, fix)) = findings.first() {
                    // Said plainly: the relay entries do not run in Copilot CLI.
                    assert!(message.contains("do not run there"), "{message}");
                    assert_eq!(*level, if wired { Level::Problem } else { Level::Note });
                    assert_eq!(fix.is_some(), wired);
                }
            }
            let var = |name: &str| (name == POLICY_DIR_VAR).then(|| dir.display().to_string());
            assert_eq!(
                install_warnings(var).len(),
                usize::from(locked),
                "{settings:?}"
            );
        }
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
