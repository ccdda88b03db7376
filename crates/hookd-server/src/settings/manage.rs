//! Enabling and disabling hooks by editing settings files, as Gemini CLI's `/hooks enable`,
//! `/hooks disable`, `/hooks enable-all` and `/hooks disable-all` do (spec §1.7).
//!
//! hookd departs in the scope written (hookd's edit scopes): `disable` writes the user settings unless
//! the project scope is asked for; `enable` and `enable-all` clear the name from both writable
//! scopes, the user settings and the project settings of the request's directory, as Gemini
//! CLI clears it from the user and workspace scopes. System and system-defaults settings are
//! never written; a hook they disable stays disabled, and the answer says so. A hook of the
//! managed hooks file cannot be disabled: `disable` names the file and writes nothing (or, when
//! hooks of other layers share the name, disables those and says the managed one stays on).
//!
//! Edits go through [`hookd_core::edit`], so the rest of each file (keys, order, comments) is
//! kept, and are written atomically: a temporary file in the same directory, flushed to disk,
//! renamed over the original, keeping its permissions (a symlinked settings file is written
//! through the link). Edits are serialized, and the affected registries are rebuilt before the
//! answer, so the next event already sees the change; the watcher later sees the same files
//! and finds nothing new.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hookd_core::edit::{self, Edit, EditError};
use hookd_core::envexpand;
use hookd_core::{HookEntry, Source};
use hookd_protocol::Scope;
use hookd_settings::atomic::AtomicWrite;
use hookd_settings::loader::LayerPaths;

use crate::registries::Registries;

/// A management request that could not be carried out; nothing was written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManageError {
    /// A settings file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A settings file is not a JSON object, so it is not edited.
    #[error("cannot edit {path}: {source}; fix the file first")]
    Edit {
        /// The file.
        path: PathBuf,
        /// Why.
        source: EditError,
    },
    /// A settings file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What a management request did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Whether any file was written.
    pub(crate) changed: bool,
    /// The sentence for the user.
    pub(crate) message: String,
    /// The files written.
    pub(crate) files: Vec<PathBuf>,
    /// The project registry's generation once the edit is in force.
    pub(crate) generation: u64,
}

/// One writable settings scope.
#[derive(Debug, Clone)]
struct Target {
    scope: Scope,
    path: PathBuf,
}

impl Target {
    /// `user (<path>)`, as the messages name a scope.
    fn describe(&self) -> String {
        format!("{} ({})", self.scope.as_str(), self.path.display())
    }
}

/// A planned edit of one file.
struct Planned {
    target: Target,
    edit: Edit,
}

/// Management requests of one daemon.
pub(crate) struct Manager<'a> {
    registries: &'a Registries,
    project_dir: PathBuf,
}

impl<'a> Manager<'a> {
    /// Management of the settings that apply to `project_dir`.
    pub(crate) fn new(registries: &'a Registries, project_dir: &Path) -> Manager<'a> {
        Manager {
            registries,
            project_dir: project_dir.to_owned(),
        }
    }

    /// The user scope, and the project scope unless the project is the home directory (whose
    /// project file is the user file).
    fn targets(&self) -> Vec<Target> {
        let user = Target {
            scope: Scope::User,
            path: self.registries.paths().user.clone(),
        };
        let project = self.target(Scope::Project);
        if same_file(&project.path, &user.path) {
            vec![user]
        } else {
            vec![user, project]
        }
    }

    fn target(&self, scope: Scope) -> Target {
        let path = match scope {
            Scope::User => self.registries.paths().user.clone(),
            Scope::Project => LayerPaths::project_settings(&self.project_dir),
        };
        Target { scope, path }
    }

    /// Removes `name` from the disabled lists of both writable scopes.
    pub(crate) async fn enable(&self, name: &str) -> Result<Outcome, ManageError> {
        let _edits = self.registries.edit_lock().lock().await;
        let env = self.registries.env().vars.clone();
        let lookup = move |var: &str| env.get(var).cloned();
        let mut planned = Vec::new();
        for target in self.targets() {
            let text = read(&target.path).await?;
            let edit = edit::remove_disabled(&text, &|entry| {
                entry == name || envexpand::expand_str(entry, &lookup) == name
            })
            .map_err(|source| ManageError::Edit {
                path: target.path.clone(),
                source,
            })?;
            if edit.changed {
                planned.push(Planned { target, edit });
            }
        }
        if planned.is_empty() {
            let snapshot = self.registries.get(&self.project_dir).await;
            let mut message = format!("Hook \"{name}\" is already enabled.");
            message.push_str(&still_disabled_note(&snapshot, name));
            return Ok(Outcome {
                changed: false,
                message,
                files: Vec::new(),
                generation: snapshot.generation,
            });
        }
        let scopes: Vec<String> = planned.iter().map(|p| p.target.describe()).collect();
        let (files, generation, snapshot) = self.write_and_rebuild(planned).await?;
        let mut message = format!(
            "Hook \"{name}\" enabled by removing it from the disabled list in {} settings.",
            scopes.join(" and ")
        );
        message.push_str(&still_disabled_note(&snapshot, name));
        Ok(Outcome {
            changed: true,
            message,
            files,
            generation,
        })
    }

    /// Adds `name` to the disabled list of `scope`.
    pub(crate) async fn disable(&self, name: &str, scope: Scope) -> Result<Outcome, ManageError> {
        let _edits = self.registries.edit_lock().lock().await;
        let target = self.target(scope);
        let text = read(&target.path).await?;
        let present = self.disabled_in(&target.path, &text)?.contains(name);
        let before = self.registries.get(&self.project_dir).await;
        let configured = before
            .registry
            .entries()
            .any(|entry| entry.config.display_name() == name);
        // A managed hook cannot be disabled: say so rather than write a name that does nothing.
        let managed: Vec<String> = before
            .registry
            .entries()
            .filter(|entry| entry.source == Source::Managed && entry.config.display_name() == name)
            .filter_map(|entry| entry.origin.path.as_ref())
            .map(|path| path.display().to_string())
            .collect();
        let others_named = before
            .registry
            .entries()
            .any(|entry| entry.source != Source::Managed && entry.config.display_name() == name);
        let managed_note = match managed.first() {
            Some(path) => format!(
                " Hook \"{name}\" of the managed hooks file {path} stays on: managed hooks \
                 cannot be disabled."
            ),
            None => String::new(),
        };
        if !managed.is_empty() && !others_named {
            return Ok(Outcome {
                changed: false,
                message: managed_note.trim_start().to_owned(),
                files: Vec::new(),
                generation: before.generation,
            });
        }
        let unknown_note = if configured {
            managed_note
        } else {
            format!(
                " No hook named \"{name}\" is configured for {}.",
                self.project_dir.display()
            )
        };
        if present {
            return Ok(Outcome {
                changed: false,
                message: format!("Hook \"{name}\" is already disabled.{unknown_note}"),
                files: Vec::new(),
                generation: before.generation,
            });
        }
        let edit = edit::add_disabled(&text, name).map_err(|source| ManageError::Edit {
            path: target.path.clone(),
            source,
        })?;
        // Is it also disabled in the other writable scope?
        let mut others = Vec::new();
        for other in self.targets() {
            if other.scope == scope || same_file(&other.path, &target.path) {
                continue;
            }
            let other_text = read(&other.path).await?;
            if self
                .disabled_in(&other.path, &other_text)
                .is_ok_and(|names| names.contains(name))
            {
                others.push(other);
            }
        }
        let described = target.describe();
        let (files, generation, _) = self
            .write_and_rebuild(vec![Planned { target, edit }])
            .await?;
        let message = match others.first() {
            Some(other) => format!(
                "Hook \"{name}\" is now disabled in both {described} and {} settings.",
                other.describe()
            ),
            None => format!(
                "Hook \"{name}\" disabled by adding it to the disabled list in {described} \
                 settings."
            ),
        };
        Ok(Outcome {
            changed: true,
            message: format!("{message}{unknown_note}"),
            files,
            generation,
        })
    }

    /// Empties the disabled lists of both writable scopes.
    pub(crate) async fn enable_all(&self) -> Result<Outcome, ManageError> {
        let _edits = self.registries.edit_lock().lock().await;
        let before = self.registries.get(&self.project_dir).await;
        if let Some(outcome) = refuse_when_off(&before) {
            return Ok(outcome);
        }
        let disabled_before = before.registry.entries().filter(|e| !e.enabled).count();
        if disabled_before == 0 {
            return Ok(unchanged("All hooks are already enabled.", &before));
        }
        let mut planned = Vec::new();
        for target in self.targets() {
            let text = read(&target.path).await?;
            let edit = edit::clear_disabled(&text).map_err(|source| ManageError::Edit {
                path: target.path.clone(),
                source,
            })?;
            if edit.changed {
                planned.push(Planned { target, edit });
            }
        }
        let (files, generation, after) = self.write_and_rebuild(planned).await?;
        let disabled_after = after.registry.entries().filter(|e| !e.enabled).count();
        let enabled = disabled_before.saturating_sub(disabled_after);
        let mut message = format!("Enabled {enabled} hook(s) successfully.");
        if disabled_after > 0 {
            message.push_str(&format!(
                " {disabled_after} hook(s) stay disabled by the system settings, which hookd \
                 does not edit."
            ));
        }
        Ok(Outcome {
            changed: !files.is_empty(),
            message,
            files,
            generation,
        })
    }

    /// Adds the display name of every hook the project's registry holds to the disabled list
    /// of `scope`.
    pub(crate) async fn disable_all(&self, scope: Scope) -> Result<Outcome, ManageError> {
        let _edits = self.registries.edit_lock().lock().await;
        let before = self.registries.get(&self.project_dir).await;
        if let Some(outcome) = refuse_when_off(&before) {
            return Ok(outcome);
        }
        let enabled_before = before.registry.entries().filter(|e| e.enabled).count();
        if enabled_before == 0 {
            return Ok(unchanged("All hooks are already disabled.", &before));
        }
        let target = self.target(scope);
        let mut text = read(&target.path).await?;
        let names: BTreeSet<&str> = before
            .registry
            .entries()
            .map(|entry| entry.config.display_name())
            .collect();
        let mut changed = false;
        for name in names {
            let edit = edit::add_disabled(&text, name).map_err(|source| ManageError::Edit {
                path: target.path.clone(),
                source,
            })?;
            changed |= edit.changed;
            text = edit.text;
        }
        let planned = if changed {
            vec![Planned {
                target,
                edit: Edit {
                    text,
                    changed: true,
                },
            }]
        } else {
            Vec::new()
        };
        let (files, generation, after) = self.write_and_rebuild(planned).await?;
        let enabled_after = after.registry.entries().filter(|e| e.enabled).count();
        Ok(Outcome {
            changed: !files.is_empty(),
            message: format!(
                "Disabled {} hook(s) successfully.",
                enabled_before.saturating_sub(enabled_after)
            ),
            files,
            generation,
        })
    }

    /// The disabled names of a file, expanded as the loader expands them.
    fn disabled_in(&self, path: &Path, text: &str) -> Result<BTreeSet<String>, ManageError> {
        let env = &self.registries.env().vars;
        let lookup = |var: &str| env.get(var).cloned();
        let names = edit::disabled_names(text).map_err(|source| ManageError::Edit {
            path: path.to_owned(),
            source,
        })?;
        Ok(names
            .iter()
            .flat_map(|raw| [raw.clone(), envexpand::expand_str(raw, &lookup)])
            .collect())
    }

    /// Writes the planned edits and rebuilds what they affect; returns the files written,
    /// the project's new generation and its new snapshot.
    async fn write_and_rebuild(
        &self,
        planned: Vec<Planned>,
    ) -> Result<
        (
            Vec<PathBuf>,
            u64,
            std::sync::Arc<crate::registries::Snapshot>,
        ),
        ManageError,
    > {
        let mut files = Vec::new();
        let mut user_changed = false;
        for Planned { target, edit } in planned {
            write_atomically(&target.path, &edit.text).await?;
            user_changed |= target.scope == Scope::User;
            files.push(target.path);
        }
        let registries = self.registries;
        // Make sure the project is loaded, then bring it (and, for a user edit, every project)
        // up to date before answering.
        registries.get(&self.project_dir).await;
        if user_changed {
            registries.reload_shared().await;
        } else if !files.is_empty() {
            registries.rebuild_project(&self.project_dir).await;
        }
        let snapshot = registries.get(&self.project_dir).await;
        Ok((files, snapshot.generation, snapshot))
    }
}

/// The answer when hooks are off altogether (Gemini CLI's "Hook system is not enabled.").
fn refuse_when_off(snapshot: &crate::registries::Snapshot) -> Option<Outcome> {
    if snapshot.registry.hooks_enabled() {
        if snapshot.registry.entries().len() == 0 {
            return Some(unchanged("No hooks configured.", snapshot));
        }
        return None;
    }
    Some(unchanged(
        "Hook system is not enabled (hooksConfig.enabled is false).",
        snapshot,
    ))
}

fn unchanged(message: &str, snapshot: &crate::registries::Snapshot) -> Outcome {
    Outcome {
        changed: false,
        message: message.to_owned(),
        files: Vec::new(),
        generation: snapshot.generation,
    }
}

/// A note for hooks that stay disabled after an enable: the layers hookd does not write.
fn still_disabled_note(snapshot: &crate::registries::Snapshot, name: &str) -> String {
    let disabled = snapshot
        .registry
        .entries()
        .any(|entry: &std::sync::Arc<HookEntry>| {
            !entry.enabled && entry.config.display_name() == name
        });
    if !disabled {
        return String::new();
    }
    let layers: Vec<String> = snapshot
        .layer_texts()
        .filter(|(label, _, text)| {
            (*label == Source::System.label() || *label == Source::SystemDefaults.label())
                && edit::disabled_names(text).is_ok_and(|names| names.iter().any(|n| n == name))
        })
        .map(|(label, path, _)| format!("{label} ({})", path.display()))
        .collect();
    if layers.is_empty() {
        " It is still disabled by another settings file.".to_owned()
    } else {
        format!(
            " It is still disabled by the {} settings, which hookd does not edit.",
            layers.join(" and ")
        )
    }
}

/// Whether two paths name the same file (resolving symlinks when both exist).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

/// A settings file's text; `""` when it does not exist. Read like every configuration file:
/// never blocking on a FIFO, only regular files, bounded in size.
async fn read(path: &Path) -> Result<String, ManageError> {
    let owned = path.to_owned();
    let read =
        tokio::task::spawn_blocking(move || hookd_settings::configfile::read_config_file(&owned))
            .await
            .map_err(std::io::Error::other)
            .and_then(|result| result.map_err(std::io::Error::other));
    match read {
        Ok(bytes) => Ok(bytes
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()),
        Err(source) => Err(ManageError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Replaces `path`'s contents atomically: readers see the old file or the new one, never a
/// part. A symlink is followed, so the link stays a link.
pub(crate) async fn write_atomically(path: &Path, text: &str) -> Result<(), ManageError> {
    let path_buf = path.to_owned();
    let text = text.to_owned();
    tokio::task::spawn_blocking(move || write_blocking(&path_buf, &text))
        .await
        .map_err(|err| ManageError::Write {
            path: path.to_owned(),
            source: std::io::Error::other(err.to_string()),
        })?
        .map_err(|source| ManageError::Write {
            path: path.to_owned(),
            source,
        })
}

/// The write itself ([`AtomicWrite`]): the file's permissions are kept, a symlink is followed.
fn write_blocking(path: &Path, text: &str) -> std::io::Result<()> {
    AtomicWrite::new()
        .keep_mode()
        .follow_symlink()
        .write(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn atomic_write_keeps_mode_and_symlinks() {
        let temp = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let real = temp.path().join("real.json");
        std::fs::write(&real, "{}").unwrap_or_else(|err| panic!("{err}"));
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640))
            .unwrap_or_else(|err| panic!("{err}"));
        let link = temp.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap_or_else(|err| panic!("{err}"));

        write_blocking(&link, "{\"a\": 1}").unwrap_or_else(|err| panic!("{err}"));
        let link_meta = std::fs::symlink_metadata(&link).unwrap_or_else(|err| panic!("{err}"));
        assert!(link_meta.file_type().is_symlink());
        assert_eq!(
            std::fs::read_to_string(&real).unwrap_or_default(),
            "{\"a\": 1}"
        );
        let mode = std::fs::metadata(&real)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o640);

        // A new file in a directory that does not exist yet.
        let fresh = temp.path().join("p/.gemini/settings.json");
        write_blocking(&fresh, "{}").unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(std::fs::read_to_string(&fresh).unwrap_or_default(), "{}");
        // No temporary file is left behind.
        let leftovers = std::fs::read_dir(temp.path().join("p/.gemini"))
            .map(|entries| entries.count())
            .unwrap_or(0);
        assert_eq!(leftovers, 1);
    }
}
