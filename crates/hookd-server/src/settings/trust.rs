//! The trust requests (hookd's project-hook trust): what `trust` would trust, trusting, untrusting, listing.
//!
//! The registry already knows, for every project hook, its trust key (name, command, and the
//! SHA-256 of each project script its command runs) and whether the trust store holds it. A
//! preview lists the untrusted ones; `trust` stores exactly the keys the client sends back,
//! but only those that are still the project's current keys, so a script edited between the
//! preview the user read and the confirmation is not trusted by it. `untrust` forgets a
//! project's keys.
//!
//! The store (`hookd_settings::loader` says where it lives) is re-read from disk under the
//! daemon's edit lock before every change, so concurrent edits are not lost, and written
//! atomically with the same helper as settings edits; a new store is created readable by its
//! owner only. An existing store that is not valid is never overwritten: the request fails
//! and names the file. After a write the shared layers are re-read, so the answer's
//! generation already has the change in force; the watcher later sees the same file and
//! finds nothing new.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use hookd_core::trust::{HookTrust, ScriptDigest, TrustKey, TrustStore};
use hookd_protocol as wire;
use hookd_protocol::RequestId;

use crate::manage::{ManageError, write_atomically};
use crate::registries::{Registries, Snapshot};

/// A trust request that could not be carried out; nothing was written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TrustError {
    /// The store could not be read.
    #[error("cannot read the trusted hooks store {path}: {source}")]
    Read {
        /// The store.
        path: PathBuf,
        /// Why.
        source: hookd_settings::configfile::ConfigReadError,
    },
    /// The store is not valid, so it is not rewritten.
    #[error("the trusted hooks store {path} is invalid ({source}); fix or remove it first")]
    Invalid {
        /// The store.
        path: PathBuf,
        /// Why.
        source: hookd_core::trust::TrustStoreError,
    },
    /// The store could not be written.
    #[error("{0}")]
    Write(#[from] ManageError),
}

/// The core's key as the wire shows it.
fn wire_key(key: &TrustKey, event: Option<&str>) -> wire::TrustedHook {
    wire::TrustedHook {
        event: event.map(str::to_owned),
        name: key.name.clone(),
        command: key.command.clone(),
        settings: (!key.settings.is_empty()).then(|| key.settings_json()),
        uncovered: key.uncovered.clone(),
        scripts: key
            .scripts
            .iter()
            .map(|script| wire::TrustedScript {
                path: script.path.clone(),
                sha256: script.sha256.clone(),
            })
            .collect(),
    }
}

/// The wire's key as the core knows it.
fn core_key(hook: &wire::TrustedHook) -> TrustKey {
    // The same canonical text the core keys with.
    let settings = match &hook.settings {
        Some(serde_json::Value::Object(map)) => hookd_core::trust::settings_text(map),
        _ => String::new(),
    };
    TrustKey {
        name: hook.name.clone(),
        command: hook.command.clone(),
        settings,
        uncovered: hook.uncovered.clone(),
        scripts: hook
            .scripts
            .iter()
            .map(|script| ScriptDigest {
                path: script.path.clone(),
                sha256: script.sha256.clone(),
            })
            .collect(),
    }
}

/// The store's key for a project: the directory as its registry names it.
fn project_key(snapshot: &Snapshot) -> String {
    snapshot.project_dir.to_string_lossy().into_owned()
}

/// The untrusted project hooks of a registry (each key once, with the event it was first
/// seen for) and how many distinct trusted ones it has.
fn untrusted_hooks(snapshot: &Snapshot) -> (Vec<(TrustKey, String)>, usize) {
    let mut seen: HashSet<&TrustKey> = HashSet::new();
    let mut untrusted = Vec::new();
    let mut trusted = 0;
    for entry in snapshot.registry.entries() {
        match &entry.trust {
            HookTrust::NotRequired => {}
            HookTrust::Trusted { key } => {
                if seen.insert(key) {
                    trusted += 1;
                }
            }
            HookTrust::Untrusted { key, .. } => {
                if seen.insert(key) {
                    untrusted.push((key.clone(), entry.event.as_str().to_owned()));
                }
            }
        }
    }
    (untrusted, trusted)
}

/// Answers `trust`: `edited`, or `edit_failed` when the store cannot be used.
pub(crate) async fn answer_trust(
    registries: &Registries,
    request: wire::TrustRequest,
) -> wire::ServerMessage {
    let id = request.id.clone();
    edited_or_error(id, trust(registries, request).await)
}

/// Answers `untrust`: `edited`, or `edit_failed` when the store cannot be used.
pub(crate) async fn answer_untrust(
    registries: &Registries,
    request: wire::UntrustRequest,
) -> wire::ServerMessage {
    let id = request.id.clone();
    edited_or_error(id, untrust(registries, request).await)
}

/// Answers `trust_list`, or `edit_failed` when the store cannot be read.
pub(crate) async fn answer_list(
    registries: &Registries,
    request: wire::TrustListRequest,
) -> wire::ServerMessage {
    let id = request.id.clone();
    match list(registries, request).await {
        Ok(listing) => wire::ServerMessage::TrustList(listing),
        Err(err) => error_message(id, &err),
    }
}

fn edited_or_error(
    id: RequestId,
    outcome: Result<wire::EditedMessage, TrustError>,
) -> wire::ServerMessage {
    match outcome {
        Ok(edited) => {
            tracing::info!("{}", edited.message);
            wire::ServerMessage::Edited(edited)
        }
        Err(err) => error_message(id, &err),
    }
}

/// Answers `trust_preview`.
pub(crate) async fn answer_preview(
    registries: &Registries,
    request: wire::TrustPreviewRequest,
) -> wire::ServerMessage {
    let snapshot = registries.get(Path::new(&request.cwd)).await;
    let (untrusted, trusted) = untrusted_hooks(&snapshot);
    wire::ServerMessage::TrustPreview(wire::TrustPreviewMessage {
        id: request.id,
        cwd: request.cwd,
        policy: registries.project_hooks().as_str().to_owned(),
        folder_trusted: snapshot.folder_trusted(),
        untrusted: untrusted
            .iter()
            .map(|(key, event)| wire_key(key, Some(event)))
            .collect(),
        trusted: trusted as u64,
        file: store_path(registries).display().to_string(),
        generation: snapshot.generation,
    })
}

/// Stores the requested keys that are still current.
async fn trust(
    registries: &Registries,
    request: wire::TrustRequest,
) -> Result<wire::EditedMessage, TrustError> {
    let _guard = registries.edit_lock().lock().await;
    let snapshot = registries.get(Path::new(&request.cwd)).await;
    let (untrusted, _) = untrusted_hooks(&snapshot);
    let current: HashSet<&TrustKey> = untrusted.iter().map(|(key, _)| key).collect();
    let mut keys: Vec<TrustKey> = Vec::new();
    let mut stale = 0usize;
    let mut unverifiable = 0usize;
    for key in request.hooks.iter().map(core_key) {
        if !key.uncovered.is_empty() && !request.anyway {
            unverifiable += 1;
            continue;
        }
        if current.contains(&key) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        } else {
            stale += 1;
        }
    }
    let project = project_key(&snapshot);
    let path = store_path(registries);
    let mut message = String::new();
    let mut files = Vec::new();
    if keys.is_empty() {
        message.push_str(&format!("Nothing was trusted for {project}."));
    } else {
        let mut store = read_store(&path).await?;
        let added = store.trust(&project, &keys);
        write_store(&path, &store).await?;
        files.push(path.display().to_string());
        message.push_str(&format!(
            "Trusted {added} project hook(s) of {project} in {}.",
            path.display()
        ));
    }
    if stale > 0 {
        message.push_str(&format!(
            " {stale} hook(s) are not the project's current untrusted hooks (changed since the \
             preview, or trusted already) and were not trusted; preview again."
        ));
    }
    if unverifiable > 0 {
        message.push_str(&format!(
            " {unverifiable} hook(s) run files that cannot all be verified and were not \
             trusted; review them, then trust them anyway (`{}`).",
            hookd_core::trust::trust_anyway_command(&project)
        ));
    }
    let generation = refresh(registries, &snapshot, !files.is_empty()).await;
    Ok(wire::EditedMessage {
        id: request.id,
        changed: !files.is_empty(),
        message,
        files,
        generation,
    })
}

/// Forgets every key of the project.
async fn untrust(
    registries: &Registries,
    request: wire::UntrustRequest,
) -> Result<wire::EditedMessage, TrustError> {
    let _guard = registries.edit_lock().lock().await;
    let snapshot = registries.get(Path::new(&request.cwd)).await;
    let project = project_key(&snapshot);
    let path = store_path(registries);
    let mut store = read_store(&path).await?;
    let removed = store.untrust(&project);
    let mut files = Vec::new();
    let message = if removed == 0 {
        format!("No hooks of {project} were trusted.")
    } else {
        write_store(&path, &store).await?;
        files.push(path.display().to_string());
        format!(
            "Removed {removed} trusted hook(s) of {project} from {}.",
            path.display()
        )
    };
    let generation = refresh(registries, &snapshot, removed > 0).await;
    Ok(wire::EditedMessage {
        id: request.id,
        changed: removed > 0,
        message,
        files,
        generation,
    })
}

/// The store as it is on disk, for `trust_list`.
async fn list(
    registries: &Registries,
    request: wire::TrustListRequest,
) -> Result<wire::TrustListMessage, TrustError> {
    let path = store_path(registries);
    let store = read_store(&path).await?;
    let wanted = request.cwd.as_deref().map(Path::new);
    let projects = store
        .projects()
        .filter(|(project, _)| wanted.is_none_or(|wanted| Path::new(project) == wanted))
        .map(|(project, keys)| wire::TrustedProject {
            cwd: project.to_owned(),
            hooks: keys.iter().map(|key| wire_key(key, None)).collect(),
        })
        .collect();
    Ok(wire::TrustListMessage {
        id: request.id,
        file: path.display().to_string(),
        projects,
    })
}

/// The error frame for a failed trust request.
fn error_message(id: RequestId, err: &TrustError) -> wire::ServerMessage {
    let code = match err {
        TrustError::Read { .. } | TrustError::Invalid { .. } | TrustError::Write(_) => {
            wire::ErrorCode::EditFailed
        }
    };
    wire::ProtocolError::new(code, err.to_string())
        .with_id(Some(id))
        .to_server_message()
}

fn store_path(registries: &Registries) -> PathBuf {
    registries.paths().trusted_hooks.clone()
}

/// The store as it is on disk now; a missing file is an empty store. Read as any
/// configuration file is (`hookd_settings::configfile`): bounded in size, never blocking on a
/// FIFO or a device, off the daemon's threads.
async fn read_store(path: &Path) -> Result<TrustStore, TrustError> {
    let owned = path.to_owned();
    let read =
        tokio::task::spawn_blocking(move || hookd_settings::configfile::read_config_file(&owned))
            .await
            .unwrap_or_else(|join| {
                Err(hookd_settings::configfile::ConfigReadError::Io(
                    std::io::Error::other(join.to_string()),
                ))
            });
    let text = match read {
        Ok(bytes) => bytes
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default(),
        Err(source) => {
            return Err(TrustError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    TrustStore::parse(&text).map_err(|source| TrustError::Invalid {
        path: path.to_owned(),
        source,
    })
}

/// Writes the store atomically; a store that did not exist is created owner-only first, so
/// the atomic write keeps that mode.
async fn write_store(path: &Path, store: &TrustStore) -> Result<(), TrustError> {
    let missing = tokio::fs::symlink_metadata(path).await.is_err();
    if missing {
        let create = path.to_owned();
        let created = tokio::task::spawn_blocking(move || create_private(&create)).await;
        if let Ok(Err(source)) | Err(source) = created.map_err(std::io::Error::other) {
            return Err(ManageError::Write {
                path: path.to_owned(),
                source,
            }
            .into());
        }
    }
    write_atomically(path, &store.to_text()).await?;
    Ok(())
}

/// Creates an empty file readable and writable by its owner only, and its directory.
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err),
    }
}

/// Puts a store change in force before answering and returns the project's generation.
async fn refresh(registries: &Registries, snapshot: &Snapshot, changed: bool) -> u64 {
    if !changed {
        return snapshot.generation;
    }
    registries.reload_shared().await;
    registries.get(&snapshot.project_dir).await.generation
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_store_that_never_ends_or_never_opens_is_an_error_at_once() {
        let temp = tempfile::tempdir().expect("temp dir");
        let fifo = temp.path().join("fifo.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let zero = temp.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let missing = temp.path().join("missing.json");
        for path in [&fifo, &zero] {
            let read =
                tokio::time::timeout(std::time::Duration::from_secs(5), read_store(path)).await;
            let Err(error) = read.expect("answered at once") else {
                panic!("{}: read as a store", path.display());
            };
            assert!(
                error.to_string().contains("not a regular file"),
                "{}: {error}",
                path.display()
            );
        }
        assert!(
            read_store(&missing).await.is_ok(),
            "a missing store is empty"
        );
    }
}
