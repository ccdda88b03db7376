//! Copilot CLI's hook files as hookd layers (`hookd --copilot-settings`): which folders, which
//! files in them, which projects Copilot trusts to run a repository's hooks, and what the
//! administrator's policy files say.
//!
//! Copilot CLI runs every `*.json` of its user folder (`$COPILOT_HOME/hooks/`, by default
//! `~/.copilot/hooks/`) and of a trusted repository's `.github/hooks/`, and the inline `hooks`
//! of its settings files (`$COPILOT_HOME/settings.json`, a repository's
//! `.github/copilot/settings.json` and `settings.local.json`; not `config.json`'s, checked with
//! 1.0.102). A file with `disableAllHooks: true` has none of its own hooks run (the other
//! files' still run; the switch in `config.json` or `settings.json` does not reach them, and
//! `allowManagedHooksOnly` in the user's files changes nothing). hookd reads the same
//! files, but never its own `hookd.json` there: that file is the one `hookctl install --host
//! copilot` writes, whose relay entries are never hooks and whose moved hooks are in hookd
//! already. The core names the folders and the file names that count; the loader lists
//! the folders (bounded) and reads the files.

use std::path::Path;

use serde_json::Value;

use serde_json::Map;

use super::COPILOT_RELAY_FILE;
use crate::dialect::{Conversion, ConversionProblem, ProblemKind};

/// Whether a file named `name` in one of Copilot CLI's hooks folders is a layer: a `*.json`
/// with a name before the extension, not a hidden file (an editor's swap or backup), and not
/// hookd's own relay file.
pub fn is_copilot_hook_file(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".json") else {
        return false;
    };
    !stem.is_empty() && !name.starts_with('.') && !name.contains('/') && name != COPILOT_RELAY_FILE
}

/// A hook file with `disableAllHooks: true` as a layer: no hooks, as Copilot runs none of them
/// (and a note saying so when it has some); `None` for any other file.
pub fn disabled_file(settings: &Value) -> Option<Conversion> {
    if settings.get("disableAllHooks").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    let has_hooks = settings
        .get("hooks")
        .and_then(Value::as_object)
        .is_some_and(|hooks| !hooks.is_empty());
    let problems = has_hooks
        .then(|| ConversionProblem {
            location: "disableAllHooks".to_owned(),
            kind: ProblemKind::Skipped,
            message: "true: Copilot CLI runs none of this file's hooks, and neither does hookd"
                .to_owned(),
        })
        .into_iter()
        .collect();
    Some(Conversion {
        hooks: Map::new(),
        problems,
    })
}

/// Whether Copilot CLI trusts `project` to run its repository hooks, by `trustedFolders` of its
/// `config.json` (`config`, parsed: Copilot writes it with comments; `None`: missing,
/// unreadable or not JSON): the project is one of the folders or inside one, compared
/// component by component. Anything else, a file that holds no such list, trusts nothing:
/// Copilot would then ask, and a daemon cannot.
pub fn copilot_trusts_project(project: &Path, config: Option<&Value>) -> bool {
    config
        .and_then(|root| root.get("trustedFolders"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(Path::new)
        .any(|folder| folder.is_absolute() && project.starts_with(folder))
}

/// What one of the administrator's policy files says about hooks (a file of
/// `/etc/github-copilot/policy.d/`), for `hookctl doctor`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyFile {
    /// The hooks it defines: (Copilot event, command line or handler type), in file order.
    pub hooks: Vec<(String, String)>,
    /// The hooks of an `exec` handler whose program is not an absolute path: (event, program).
    /// Copilot CLI skips them in a policy file.
    pub relative_execs: Vec<(String, String)>,
    /// `disableAllHooks: true`: Copilot CLI runs none of this file's hooks (the switch concerns
    /// its own file only: checked with 1.0.102).
    pub disable_all_hooks: bool,
    /// Top-level keys a hooks file does not have (`allowManagedHooksOnly`, say): Copilot CLI
    /// 1.0.102 skips a policy file that holds any.
    pub unknown_keys: Vec<String>,
    /// Why the file does not read as a hooks file (not JSON, not an object), if it does not.
    pub problem: Option<String>,
}

/// Reads a policy file's text as Copilot's hooks file shape.
pub fn read_policy_file(text: &str) -> PolicyFile {
    let root = match serde_json::from_str::<Value>(text) {
        Ok(root @ Value::Object(_)) => root,
        Ok(_) => {
            return PolicyFile {
                problem: Some("not a JSON object".to_owned()),
                ..PolicyFile::default()
            };
        }
        Err(err) => {
            return PolicyFile {
                problem: Some(format!("invalid JSON: {err}")),
                ..PolicyFile::default()
            };
        }
    };
    let flag = |key: &str| root.get(key).and_then(Value::as_bool) == Some(true);
    let mut hooks = Vec::new();
    let mut relative_execs = Vec::new();
    let events = root.get("hooks").and_then(Value::as_object);
    for (event, definitions) in events.into_iter().flatten() {
        for definition in definitions.as_array().into_iter().flatten() {
            // A bare handler, or Claude Code's grouping of handlers under a matcher.
            let handlers: Vec<&Value> = match definition.get("hooks").and_then(Value::as_array) {
                Some(handlers) => handlers.iter().collect(),
                None => vec![definition],
            };
            for handler in handlers {
                let line = ["bash", "command", "exec", "url", "powershell"]
                    .iter()
                    .find_map(|key| handler.get(*key).and_then(Value::as_str))
                    .or_else(|| handler.get("type").and_then(Value::as_str))
                    .unwrap_or("?");
                hooks.push((event.clone(), line.to_owned()));
                if let Some(exec) = handler.get("exec").and_then(Value::as_str)
                    && !Path::new(exec).is_absolute()
                {
                    relative_execs.push((event.clone(), exec.to_owned()));
                }
            }
        }
    }
    let unknown_keys = root
        .as_object()
        .into_iter()
        .flat_map(|object| object.keys())
        .filter(|key| !matches!(key.as_str(), "version" | "hooks" | "disableAllHooks"))
        .cloned()
        .collect();
    PolicyFile {
        hooks,
        relative_execs,
        disable_all_hooks: flag("disableAllHooks"),
        unknown_keys,
        problem: None,
    }
}

/// Whether the administrator's managed settings (`/etc/github-copilot/managed-settings.json`,
/// `managed_settings`: parsed) set `allowManagedHooksOnly: true`: then Copilot CLI runs only
/// the policy files' hooks, none of the user's or a repository's files (checked with 1.0.102),
/// so hookd's relay entries there do not run.
pub fn managed_hooks_only(managed_settings: &Value) -> bool {
    managed_settings
        .get("allowManagedHooksOnly")
        .and_then(Value::as_bool)
        == Some(true)
}

/// The files of a policy folder Copilot CLI reads, from the names it holds, in its order:
/// every `*.json` (not hidden), sorted.
pub fn policy_folder_files(names: Vec<String>) -> Vec<String> {
    let mut files: Vec<String> = names
        .into_iter()
        .filter(|name| {
            name.strip_suffix(".json")
                .is_some_and(|stem| !stem.is_empty() && !name.starts_with('.'))
        })
        .collect();
    files.sort_unstable();
    files.dedup();
    files
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::dialect::{Dialect, HomeEnv};

    #[test]
    fn which_files_of_a_hooks_folder_are_layers() {
        // (names in the folder, the layers in order)
        let cases: [(&[&str], &[&str]); 6] = [
            (&[], &[]),
            (&["b.json", "a.json"], &["a.json", "b.json"]),
            (&["hookd.json", "guard.json"], &["guard.json"]),
            (
                &[
                    "guard.json~",
                    ".guard.json.swp",
                    ".json",
                    "notes.txt",
                    "x.JSON",
                ],
                &[],
            ),
            (&[".hidden.json", "Z.json", "a.json"], &["Z.json", "a.json"]),
            (&["a.json", "a.json"], &["a.json"]),
        ];
        let files = Dialect::COPILOT.files();
        for (names, expected) in cases {
            let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
            assert_eq!(
                files.layer_folder_files(names.clone()),
                expected,
                "{names:?}"
            );
        }
    }

    #[test]
    fn copilot_folders_are_its_user_and_repository_hooks_folders() {
        let home = Path::new("/home/me");
        type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;
        let none = |_: &str| None;
        let set = |name: &str| (name == "COPILOT_HOME").then(|| "/srv/cp".to_owned());
        let relative = |name: &str| (name == "COPILOT_HOME").then(|| "cp".to_owned());
        // (COPILOT_HOME, hooks folder, trust file)
        let cases: [(Lookup<'_>, &str, &str); 3] = [
            (
                &none,
                "/home/me/.copilot/hooks",
                "/home/me/.copilot/config.json",
            ),
            (&set, "/srv/cp/hooks", "/srv/cp/config.json"),
            (
                &relative,
                "/home/me/.copilot/hooks",
                "/home/me/.copilot/config.json",
            ),
        ];
        let files = Dialect::COPILOT.files();
        assert!(files.has_layer_files());
        for (var, folder, trust) in cases {
            let env = HomeEnv { home, var };
            assert_eq!(files.user_layer_folders(&env), [PathBuf::from(folder)]);
            let settings = Path::new(trust).with_file_name("settings.json");
            assert_eq!(files.user_layer_files(&env), [settings]);
            assert_eq!(files.project_trust_file(&env), Some(PathBuf::from(trust)));
        }
        assert_eq!(
            files.project_layer_folders(Path::new("/w")),
            [PathBuf::from("/w/.github/hooks")]
        );
        assert_eq!(
            files.project_layer_files(Path::new("/w")),
            [
                PathBuf::from("/w/.github/copilot/settings.json"),
                PathBuf::from("/w/.github/copilot/settings.local.json")
            ]
        );
        // Other hosts have no folders.
        for host in [Dialect::GEMINI, Dialect::CLAUDE, Dialect::CODEX] {
            assert!(
                host.files()
                    .project_layer_folders(Path::new("/w"))
                    .is_empty()
            );
            assert!(!host.files().is_layer_folder_file("a.json"));
        }
    }

    #[test]
    fn a_file_that_disables_its_hooks_is_a_layer_without_them() {
        use crate::dialect::Purpose;
        let guard = serde_json::json!({"preToolUse": [{"type": "command", "bash": "./g.sh"}]});
        // (file, hooks as a layer, problems)
        let cases = [
            (serde_json::json!({"version": 1, "hooks": guard}), 1, 0),
            (
                serde_json::json!({"disableAllHooks": true, "hooks": guard}),
                0,
                1,
            ),
            (serde_json::json!({"disableAllHooks": true}), 0, 0),
            (
                serde_json::json!({"disableAllHooks": false, "hooks": guard}),
                1,
                0,
            ),
            (
                serde_json::json!({"disableAllHooks": "yes", "hooks": guard}),
                1,
                0,
            ),
            (
                serde_json::json!({"allowManagedHooksOnly": true, "hooks": guard}),
                1,
                0,
            ),
        ];
        for (file, hooks, problems) in cases {
            let conversion = Dialect::COPILOT
                .files()
                .convert_settings(&file, Purpose::Layer)
                .unwrap_or_default();
            assert_eq!(conversion.definition_count(), hooks, "{file}");
            assert_eq!(conversion.problems.len(), problems, "{file}");
        }
    }

    #[test]
    fn copilot_trusts_the_folders_of_its_config() {
        let config =
            serde_json::json!({"trustedFolders": ["/work/repo", "/srv/all/", "rel"], "x": 1});
        // (project, config, trusted)
        let cases = [
            ("/work/repo", Some(config.clone()), true),
            ("/work/repo/sub", Some(config.clone()), true),
            ("/work/repository", Some(config.clone()), false),
            ("/work", Some(config.clone()), false),
            ("/srv/all/p", Some(config.clone()), true),
            ("/tmp/evil", Some(config.clone()), false),
            ("/w", None, false),
            ("/w", Some(serde_json::json!("not an object")), false),
            (
                "/w",
                Some(serde_json::json!({"trustedFolders": "/w"})),
                false,
            ),
            (
                "/w",
                Some(serde_json::json!({"trustedFolders": ["/w"]})),
                true,
            ),
        ];
        for (project, config, expected) in cases {
            assert_eq!(
                copilot_trusts_project(Path::new(project), config.as_ref()),
                expected,
                "{project} {config:?}"
            );
            assert_eq!(
                Dialect::COPILOT
                    .files()
                    .trusts_project(Path::new(project), config.as_ref()),
                expected
            );
        }
        // A host without a trust file trusts every project.
        assert!(
            Dialect::CLAUDE
                .files()
                .trusts_project(Path::new("/w"), None)
        );
    }

    #[test]
    fn policy_files_read_for_doctor() {
        /// (text, hooks, disableAllHooks, unknown keys, problem)
        type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, bool, usize, bool);
        let cases: Vec<Case<'_>> = vec![
            (
                r#"{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "/opt/g.sh"}],
                   "agentStop": [{"matcher": "x", "hooks": [{"type": "http", "url": "https://a"}]}],
                   "sessionStart": [{"type": "command", "exec": "bin/x"}, {"type": "command", "exec": "/bin/y"}]}}"#,
                vec![
                    ("preToolUse", "/opt/g.sh"),
                    ("agentStop", "https://a"),
                    ("sessionStart", "bin/x"),
                    ("sessionStart", "/bin/y"),
                ],
                false,
                0,
                false,
            ),
            (
                r#"{"version": 1, "disableAllHooks": true, "hooks": {}}"#,
                vec![],
                true,
                0,
                false,
            ),
            (
                r#"{"allowManagedHooksOnly": true, "disableAllHooks": "yes", "x": 1}"#,
                vec![],
                false,
                2,
                false,
            ),
            ("[1]", vec![], false, 0, true),
            ("{", vec![], false, 0, true),
        ];
        for (text, hooks, disable, unknown, problem) in cases {
            let read = read_policy_file(text);
            let expected: Vec<(String, String)> = hooks
                .iter()
                .map(|(event, line)| ((*event).to_owned(), (*line).to_owned()))
                .collect();
            assert_eq!(read.hooks, expected, "{text}");
            assert_eq!(read.disable_all_hooks, disable, "{text}");
            assert_eq!(read.unknown_keys.len(), unknown, "{text}");
            assert_eq!(read.problem.is_some(), problem, "{text}");
            let relative = usize::from(text.contains("bin/x"));
            assert_eq!(read.relative_execs.len(), relative, "{text}");
        }
        for (settings, locked) in [
            (serde_json::json!({"allowManagedHooksOnly": true}), true),
            (serde_json::json!({"allowManagedHooksOnly": "true"}), false),
            (serde_json::json!({"disableAllHooks": true}), false),
        ] {
            assert_eq!(managed_hooks_only(&settings), locked, "{settings}");
        }
        let names = ["b.json", "a.json", "README", ".x.json", "hookd.json"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            policy_folder_files(names),
            ["a.json", "b.json", "hookd.json"]
        );
    }
}
