//! The last good version of every configuration file, so a bad save never takes hooks away.
//!
//! A settings file that is not JSON, or whose top level is not an object, would be skipped
//! whole by the registry build, and every hook it defines would vanish until the user notices.
//! Instead, for each file the daemon keeps the last text that passed that file-level check;
//! when a new version fails it, the registry is built from the kept text and an error
//! diagnostic (file, line and column, message) says so. Fixing the file clears the error, since
//! the fixed text passes and replaces the kept one. An extension's `hooks/hooks.json` is
//! treated the same way (it must be JSON with a `hooks` object).
//!
//! A file over one of the per-file limits ([`hookd_core::limits`]: too many hooks or filters,
//! redact patterns too many or too long) fails the check too. When no version of it is kept,
//! its hooks are left out (its text becomes `{}`) rather than built, with the same error.
//!
//! A file that exists but cannot be read (not a regular file, larger than the limit, a
//! symlink loop, an I/O error; see [`hookd_settings::configfile`]) is treated like an invalid
//! one: the kept text is used, with an error diagnostic that names the file and the reason.
//!
//! A file that does not exist (deleted on purpose) is not an error: its layer goes away and its
//! kept text is forgotten. A file that was never valid since the daemon started has no kept
//! text; it is skipped with the registry's own diagnostic, as before.
//!
//! Problems below the file level (one invalid hook entry) are not masked: the registry keeps
//! the file's valid parts and reports the invalid ones, as Gemini CLI does.
//!
//! The rule covers every settings layer: Gemini CLI's files, hookd's own hooks files and a
//! host's own settings files read as layers (Claude Code's, with `hookd --claude-settings`;
//! checked as written, before their conversion).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hookd_core::registry::LayerText;
use hookd_core::settings::{Diagnostic, Severity};
use hookd_core::{jsonc, limits};
use hookd_settings::loader::{LayerPaths, ProjectLayer, SharedLayers, UnreadableFile};
use serde_json::Value;

/// Kept texts by file path.
#[derive(Debug, Default)]
pub(crate) struct LastGood {
    texts: HashMap<PathBuf, String>,
}

/// Why a text fails the file-level check: the message and, for syntax errors, the position.
struct Failure {
    message: String,
    position: Option<(usize, usize)>,
    /// Over a limit: never built, even without a kept version.
    over_limit: bool,
}

impl LastGood {
    /// Applies the rule to every file of the shared layers: the user, system and
    /// system-defaults settings and each extension's hooks file.
    pub(crate) fn apply_shared(&mut self, shared: &mut SharedLayers) {
        let order = [
            shared.paths.user.clone(),
            shared.paths.hookd_user.clone(),
            shared.paths.system.clone(),
            shared.paths.system_defaults.clone(),
        ];
        let host_order: Vec<PathBuf> = shared
            .paths
            .host_user
            .iter()
            .map(|(_, path)| path.clone())
            .chain(shared.host_folder_files.iter().cloned())
            .collect();
        // A file gone from a hosts' folder is forgotten like any other file gone.
        let folders: Vec<PathBuf> = shared
            .paths
            .host_user_folders
            .iter()
            .map(|(_, folder)| folder.clone())
            .collect();
        self.forget_gone_from(&folders, &shared.host_folder_files);
        for path in order.iter().chain(&host_order) {
            let present = shared
                .layers
                .iter()
                .chain(&shared.host_layers)
                .any(|layer| &layer.path == path)
                || is_unreadable(&shared.unreadable, path);
            if !present {
                self.texts.remove(path);
            }
        }
        for file in &shared.unreadable {
            let Some(layer) = self.restore(file, &mut shared.diagnostics) else {
                continue;
            };
            if host_order.contains(&file.path) {
                shared.host_layers.push(layer);
            } else {
                shared.layers.push(layer);
            }
        }
        // Restored layers take their usual place.
        shared
            .layers
            .sort_by_key(|layer| order.iter().position(|path| *path == layer.path));
        shared
            .host_layers
            .sort_by_key(|layer| host_order.iter().position(|path| *path == layer.path));
        let mut diagnostics = Vec::new();
        let mut restored: Vec<PathBuf> = Vec::new();
        for layer in shared.layers.iter_mut().chain(&mut shared.host_layers) {
            diagnostics.extend(self.settings(layer));
        }
        for extension in &mut shared.extensions {
            let path = extension.hooks_file.clone();
            match &mut extension.hooks_text {
                Some(text) => {
                    diagnostics.extend(self.check(&path, text, extension_failure));
                }
                None => match (&extension.hooks_unreadable, self.texts.get(&path)) {
                    (Some(reason), Some(kept)) => {
                        extension.hooks_text = Some(kept.clone());
                        restored.push(path.clone());
                        diagnostics.push(
                            Diagnostic::error(format!(
                                "cannot read the hooks of extension \"{}\": {reason}; hookd \
                                 keeps using the last valid version of this file until it is \
                                 fixed",
                                extension.name
                            ))
                            .with_path(&path),
                        );
                    }
                    (Some(_), None) => {}
                    (None, _) => {
                        self.texts.remove(&path);
                    }
                },
            }
        }
        // The loader's "cannot read" warning is replaced by the error above.
        shared.diagnostics.retain(|diagnostic| {
            !(diagnostic.severity == Severity::Warning
                && diagnostic
                    .message
                    .starts_with("cannot read the hooks of extension")
                && diagnostic
                    .path
                    .as_ref()
                    .is_some_and(|path| restored.contains(path)))
        });
        shared.diagnostics.extend(diagnostics);
    }

    /// Applies the rule to a project's settings files: Gemini CLI's, hookd's and the hosts'
    /// own read as layers.
    pub(crate) fn apply_project(&mut self, project: &mut ProjectLayer) {
        self.forget_gone_from(
            &LayerPaths::project_folders(&project.project_dir),
            &project.host_folder_files,
        );
        for path in LayerPaths::project_files(&project.project_dir) {
            let present = project
                .layer
                .iter()
                .chain(&project.hookd_layer)
                .chain(&project.host_layers)
                .any(|layer| layer.path == path)
                || is_unreadable(&project.unreadable, &path);
            if !present {
                self.texts.remove(&path);
            }
        }
        let dir = project.project_dir.clone();
        for file in &project.unreadable {
            let Some(layer) = self.restore(file, &mut project.diagnostics) else {
                continue;
            };
            if file.path == LayerPaths::project_settings(&dir) {
                project.layer = Some(layer);
            } else if file.path == LayerPaths::hookd_project(&dir) {
                project.hookd_layer = Some(layer);
            } else {
                project.host_layers.push(layer);
            }
        }
        // Every host's own project files in the loader's order.
        let mut host_order = LayerPaths::project_files(&dir);
        host_order.extend(project.host_folder_files.iter().cloned());
        project
            .host_layers
            .sort_by_key(|layer| host_order.iter().position(|path| *path == layer.path));
        let layers = project
            .layer
            .iter_mut()
            .chain(&mut project.hookd_layer)
            .chain(&mut project.host_layers);
        let mut diagnostics = Vec::new();
        for layer in layers {
            diagnostics.extend(self.settings(layer));
        }
        project.diagnostics.extend(diagnostics);
    }

    /// Forgets what was kept for the files of `folders` (hosts' layer folders) that are not
    /// among `listed` any more.
    fn forget_gone_from(&mut self, folders: &[PathBuf], listed: &[PathBuf]) {
        self.texts.retain(|path, _| {
            listed.contains(path)
                || !path
                    .parent()
                    .is_some_and(|dir| folders.iter().any(|f| f == dir))
        });
    }

    /// Forgets what was kept for a project that is no longer loaded.
    pub(crate) fn forget_project(&mut self, project_dir: &Path) {
        self.forget_gone_from(&LayerPaths::project_folders(project_dir), &[]);
        for path in LayerPaths::project_files(project_dir) {
            self.texts.remove(&path);
        }
    }

    /// The kept version of a file that could not be read, as a layer, replacing the read
    /// error in `diagnostics` with one that says the kept version is used; `None` when nothing
    /// is kept (the layer stays out and the read error stands).
    fn restore(
        &self,
        file: &UnreadableFile,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Option<LayerText> {
        let kept = self.texts.get(&file.path)?;
        let read_error = file.diagnostic();
        diagnostics.retain(|diagnostic| *diagnostic != read_error);
        diagnostics.push(
            Diagnostic::error(format!(
                "cannot read {} settings: {}; hookd keeps using the last valid version of this \
                 file until it is fixed",
                file.source, file.reason
            ))
            .with_path(&file.path),
        );
        Some(LayerText {
            source: file.source,
            file: file.file,
            path: file.path.clone(),
            text: kept.clone(),
        })
    }

    fn settings(&mut self, layer: &mut LayerText) -> Option<Diagnostic> {
        let path = layer.path.clone();
        self.check(&path, &mut layer.text, settings_failure)
    }

    /// Keeps `text` when it passes `fails`, else replaces it with the kept version (when
    /// there is one) and returns the diagnostic to report.
    fn check(
        &mut self,
        path: &Path,
        text: &mut String,
        fails: fn(&str) -> Option<Failure>,
    ) -> Option<Diagnostic> {
        let Some(failure) = fails(text) else {
            match self.texts.get_mut(path) {
                Some(kept) if kept == text => {}
                Some(kept) => kept.clone_from(text),
                None => {
                    self.texts.insert(path.to_owned(), text.clone());
                }
            }
            return None;
        };
        let Some(kept) = self.texts.get(path) else {
            if !failure.over_limit {
                return None;
            }
            "{}".clone_into(text);
            return Some(
                Diagnostic::error(format!(
                    "{}; its hooks are ignored until it is fixed",
                    failure.message
                ))
                .with_path(path),
            );
        };
        text.clone_from(kept);
        let mut diagnostic = Diagnostic::error(format!(
            "{}; hookd keeps using the last valid version of this file until it is fixed",
            failure.message
        ))
        .with_path(path);
        if let Some((line, column)) = failure.position {
            diagnostic = diagnostic.with_position(line, column);
        }
        Some(diagnostic)
    }
}

/// Whether `path` is among the files that could not be read.
fn is_unreadable(unreadable: &[UnreadableFile], path: &Path) -> bool {
    unreadable.iter().any(|file| file.path == path)
}

/// The file-level check of a settings file: JSON with comments, an object at the top.
fn settings_failure(text: &str) -> Option<Failure> {
    match jsonc::parse(text) {
        Ok(root @ Value::Object(_)) => limit_failure(&root),
        Ok(_) => Some(Failure {
            message: "settings file must contain a JSON object".to_owned(),
            position: None,
            over_limit: false,
        }),
        Err(err) => Some(Failure {
            message: format!("invalid JSON: {}", err.message),
            position: Some((err.line, err.column)),
            over_limit: false,
        }),
    }
}

/// The per-file limits ([`limits::violation`]).
fn limit_failure(root: &Value) -> Option<Failure> {
    limits::violation(root).map(|why| Failure {
        message: format!("over a limit: {why}"),
        position: None,
        over_limit: true,
    })
}

/// The file-level check of an extension's hooks file: JSON with a `hooks` object.
fn extension_failure(text: &str) -> Option<Failure> {
    match serde_json::from_str::<Value>(text) {
        Ok(root) => match root.get("hooks") {
            Some(Value::Object(_)) => limit_failure(&root),
            _ => Some(Failure {
                message: "\"hooks\" property must be an object".to_owned(),
                position: None,
                over_limit: false,
            }),
        },
        Err(err) => {
            let full = err.to_string();
            let suffix = format!(" at line {} column {}", err.line(), err.column());
            Some(Failure {
                message: format!(
                    "invalid JSON: {}",
                    full.strip_suffix(&suffix).unwrap_or(&full)
                ),
                position: Some((err.line(), err.column())),
                over_limit: false,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookd_core::Source;

    /// One version of a file: its text, the text the registry should get, the error position.
    type Version<'a> = (&'a str, &'a str, Option<(usize, usize)>);

    /// Feeds versions of one settings file in order and checks, for each, the text the
    /// registry gets and the position of the reported error (`None`: no error).
    fn check(versions: &[Version<'_>]) {
        let mut last_good = LastGood::default();
        for (text, expected_text, expected_error) in versions {
            let mut layer = LayerText {
                source: Source::User,
                file: hookd_core::LayerFile::Gemini,
                path: PathBuf::from("/h/.gemini/settings.json"),
                text: (*text).to_owned(),
            };
            let diagnostic = last_good.settings(&mut layer);
            assert_eq!(layer.text, *expected_text, "version {text:?}");
            assert_eq!(
                diagnostic.as_ref().map(|d| (d.line, d.column)),
                expected_error.map(|(l, c)| (Some(l), Some(c))),
                "version {text:?}: {diagnostic:?}"
            );
        }
    }

    #[test]
    fn a_bad_version_falls_back_to_the_last_good_one() {
        check(&[
            // Never valid yet: passed through, the registry reports it.
            ("{", "{", None),
            ("{\"a\": 1}", "{\"a\": 1}", None),
            ("{\n\"a\": 1,\n}", "{\"a\": 1}", Some((3, 1))),
            ("{\"a\": 2}", "{\"a\": 2}", None),
            ("", "{\"a\": 2}", Some((1, 0))),
        ]);
    }

    #[test]
    fn non_object_top_level_is_a_file_level_failure() {
        let mut last_good = LastGood::default();
        let path = PathBuf::from("/p/.gemini/settings.json");
        let mut text = "{}".to_owned();
        assert!(
            last_good
                .check(&path, &mut text, settings_failure)
                .is_none()
        );
        let mut text = "[1]".to_owned();
        let diagnostic = last_good.check(&path, &mut text, settings_failure);
        assert_eq!(text, "{}");
        assert!(diagnostic.unwrap().message.contains("JSON object"));
    }

    #[test]
    fn a_file_over_a_limit_keeps_its_last_good_version_or_is_left_out() {
        let hooks = |n: usize| {
            let list: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"type":"command","command":"true {i}"}}"#))
                .collect();
            format!(
                r#"{{"hooks":{{"BeforeTool":[{{"hooks":[{}]}}]}}}}"#,
                list.join(",")
            )
        };
        let over = hooks(limits::MAX_HOOKS_PER_FILE + 1);
        let path = PathBuf::from("/p/.gemini/settings.json");
        // Nothing kept: left out.
        let mut fresh = LastGood::default();
        let mut text = over.clone();
        let diagnostic = fresh.check(&path, &mut text, settings_failure);
        assert_eq!(text, "{}");
        assert!(diagnostic.unwrap().message.contains("1001 hooks"));
        // A good version kept: it stays.
        let mut last_good = LastGood::default();
        let good = hooks(2);
        let mut text = good.clone();
        assert!(
            last_good
                .check(&path, &mut text, settings_failure)
                .is_none()
        );
        let mut text = over;
        let diagnostic = last_good.check(&path, &mut text, settings_failure);
        assert_eq!(text, good);
        assert!(diagnostic.unwrap().message.contains("last valid version"));
    }

    #[test]
    fn extension_hooks_need_a_hooks_object() {
        let cases = [
            ("{\"hooks\": {}}", false),
            ("{\"hooks\": []}", true),
            ("{}", true),
            ("{\"hooks\": {}", true),
        ];
        for (text, fails) in cases {
            assert_eq!(extension_failure(text).is_some(), fails, "{text}");
        }
    }
}
