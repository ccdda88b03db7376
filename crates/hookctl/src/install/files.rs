//! Reading and writing the files an install edits: one file's change ([`Change`]), its bytes
//! read bounded, its text refused when not UTF-8, its top-level object, one member set with the
//! rest of the text kept, and the atomic write with the permissions it should keep.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hookd_core::jsonc;
use hookd_settings::atomic::AtomicWrite;
use serde_json::{Map, Value};

/// One file's change.
pub(super) struct Change {
    pub(super) path: PathBuf,
    pub(super) before: Option<Vec<u8>>,
    pub(super) after: Vec<u8>,
    /// The file goes (uninstall: it did not exist before the install).
    pub(super) remove: bool,
}

/// Adds the change of `path` from `before` to `after` unless they are the same (an absent
/// file that would stay empty is no change).
pub(super) fn push_change(
    changes: &mut Vec<Change>,
    path: &Path,
    before: Option<Vec<u8>>,
    after: String,
) {
    let unchanged = match &before {
        Some(bytes) => *bytes == after.as_bytes(),
        None => after.is_empty(),
    };
    if !unchanged {
        changes.push(Change {
            path: path.to_owned(),
            before,
            after: after.into_bytes(),
            remove: false,
        });
    }
}

/// Reads a settings (or manifest) file, bounded and never blocking
/// ([`crate::read_settings_file`]); `None` when it does not exist.
pub(super) fn read_file(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    crate::read_settings_file(path)
}

/// The file's text; refuses bytes that are not UTF-8 rather than rewrite them lossily.
pub(super) fn text_of(path: &Path, bytes: Option<&[u8]>) -> anyhow::Result<String> {
    match bytes {
        None => Ok(String::new()),
        Some(bytes) => String::from_utf8(bytes.to_vec())
            .with_context(|| format!("{} is not UTF-8 text; not editing it", path.display())),
    }
}

/// The top-level object of a settings text (empty for an empty or absent file).
pub(super) fn parse_object(path: &Path, text: &str) -> anyhow::Result<Map<String, Value>> {
    if jsonc::strip_comments(text).trim().is_empty() {
        return Ok(Map::new());
    }
    match jsonc::parse(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => bail!(
            "{} is not a JSON object; fix it before installing",
            path.display()
        ),
        Err(err) => bail!(
            "{}:{}:{}: invalid JSON ({}); fix it before installing",
            path.display(),
            err.line,
            err.column,
            err.message
        ),
    }
}

/// The text with the top-level member `key` set to `value`, everything else kept.
pub(super) fn set_member(text: &str, key: &str, value: &Value) -> anyhow::Result<String> {
    Ok(hookd_core::edit::set_member(text, key, value)?.text)
}

/// The file's permission bits, when it exists.
pub(super) fn file_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .ok()
        .map(|metadata| metadata.permissions().mode() & 0o7777)
}

/// The ancestors of `path` that do not exist yet, deepest first.
pub(super) fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|dir| !dir.as_os_str().is_empty() && !dir.exists())
        .map(Path::to_owned)
        .collect()
}

/// Writes `bytes` to `path` atomically and durably ([`AtomicWrite`]); `mode` is the file's
/// permissions (default 0644). A symbolic link at `path` is replaced by the file.
pub(super) fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> anyhow::Result<()> {
    AtomicWrite::new()
        .mode(mode.unwrap_or(0o644))
        .write(path, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}
