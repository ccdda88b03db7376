//! The install manifest: what the installs of one host and scope changed (each file's original
//! bytes and what hookctl last wrote) and moved (each host definition and what it became).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

use super::files::{Change, file_mode, missing_dirs, read_file, write_atomic};

/// The manifest's file name in a backup directory.
pub(super) const MANIFEST: &str = "manifest.json";

/// What the installs of one host and scope changed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Manifest {
    #[serde(default)]
    pub(super) host: String,
    #[serde(default)]
    pub(super) scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) project: Option<String>,
    /// The `--socket` the relay entries carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) socket: Option<String>,
    /// With `--transport http`: the port of hookd's HTTP listener the entries name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) http_port: Option<u16>,
    /// With `--transport http`: which events the entries wire (`None`, from a hookctl before
    /// `--events`: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) http_events: Option<super::args::HttpEvents>,
    /// Every file hookctl changed, with its bytes from before the first change.
    #[serde(default)]
    pub(super) files: Vec<BackedUpFile>,
    /// Every host definition moved to hookd's file, oldest first.
    #[serde(default)]
    pub(super) moved: Vec<MovedDefinition>,
    /// The state directories the first install created, deepest first: removed with the
    /// uninstall when nothing else is in them.
    #[serde(default)]
    pub(super) created_dirs: Vec<PathBuf>,
    /// Whether an install after the first moved hooks (hooks added to the host file since):
    /// the saved originals then no longer hold every hook, so uninstall never restores them
    /// byte for byte.
    #[serde(default)]
    pub(super) later_moves: bool,
    /// The layout of an older hookctl (one record per install); refused.
    #[serde(default, skip_serializing)]
    pub(super) installs: Vec<Value>,
}

/// One changed file: where its original bytes are and what hookctl last wrote.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct BackedUpFile {
    pub(super) path: PathBuf,
    /// The saved original's file name in the backup directory; `None`: it did not exist.
    pub(super) original: Option<String>,
    /// The original's permission bits.
    #[serde(default)]
    pub(super) mode: Option<u32>,
    /// SHA-256 of the bytes hookctl last wrote.
    pub(super) written_sha256: String,
    /// Directories the install created for it, deepest first.
    #[serde(default)]
    pub(super) created_dirs: Vec<PathBuf>,
}

/// One definition moved from the host's file: as it was there, and what it became in
/// hookd's file.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct MovedDefinition {
    /// The host's event name.
    pub(super) host_event: String,
    /// The definition as it was in the host file (its relay entries and the hooks hookd
    /// cannot run left out).
    pub(super) host_definition: Value,
    /// What it became: (Gemini event, definition) pairs.
    pub(super) hookd: Vec<(String, Value)>,
    /// The pairs the install added to hookd's file (not those it already had).
    #[serde(default)]
    pub(super) added: Vec<(String, Value)>,
}

impl MovedDefinition {
    pub(super) fn new(
        host_event: &str,
        host_definition: Value,
        hookd: Vec<(String, Value)>,
    ) -> Self {
        MovedDefinition {
            host_event: host_event.to_owned(),
            host_definition,
            hookd,
            added: Vec::new(),
        }
    }
}

impl Manifest {
    pub(super) fn load(dir: &Path) -> anyhow::Result<Manifest> {
        let path = dir.join(MANIFEST);
        let manifest: Manifest = match read_file(&path)? {
            None => return Ok(Manifest::default()),
            Some(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is damaged", path.display()))?,
        };
        if !manifest.installs.is_empty() {
            bail!(
                "{} was written by an older hookctl; undo that install with the hookctl that \
                 made it, or restore the files it names by hand and remove it",
                path.display()
            );
        }
        Ok(manifest)
    }

    /// Whether an install is recorded.
    pub(super) fn is_recorded(&self) -> bool {
        !self.files.is_empty() || !self.moved.is_empty()
    }

    /// Saves the original of each changed file the first time it changes, and what is
    /// written now.
    pub(super) fn record_changes(
        &mut self,
        backup_dir: &Path,
        changes: &[Change],
    ) -> anyhow::Result<()> {
        std::fs::create_dir_all(backup_dir)
            .with_context(|| format!("cannot create {}", backup_dir.display()))?;
        for change in changes {
            let written_sha256 = hookd_core::trust::sha256_hex(&change.after);
            if let Some(file) = self.files.iter_mut().find(|file| file.path == change.path) {
                file.written_sha256 = written_sha256;
                continue;
            }
            let original = match &change.before {
                Some(bytes) => {
                    let name = format!("{}.orig", self.files.len());
                    write_atomic(&backup_dir.join(&name), bytes, Some(0o600))?;
                    Some(name)
                }
                None => None,
            };
            self.files.push(BackedUpFile {
                path: change.path.clone(),
                original,
                mode: change.before.as_ref().and_then(|_| file_mode(&change.path)),
                written_sha256,
                created_dirs: missing_dirs(&change.path),
            });
        }
        Ok(())
    }

    pub(super) fn save(&self, dir: &Path) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(self).context("cannot encode the manifest")?;
        text.push('\n');
        write_atomic(&dir.join(MANIFEST), text.as_bytes(), Some(0o600))
    }
}
