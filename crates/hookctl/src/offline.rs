//! `hookctl enable` and `disable` when no daemon runs: the settings files are edited directly
//! (the same edits the daemon makes, written atomically), and a running daemon would pick them
//! up on its next start. An unknown name is still disabled, with a warning; a name only the
//! managed hooks file holds is not (managed hooks cannot be disabled), and nothing is written.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hookd_core::Source;
use hookd_core::edit::{self, Edit};
use hookd_core::settings::parse_settings;
use hookd_settings::atomic::AtomicWrite;
use hookd_settings::loader::{LayerPaths, LoaderEnv};

/// Where the user settings and the project's settings are.
fn paths(project: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let env = LoaderEnv::from_process().context("cannot find the home directory")?;
    let user = LayerPaths::resolve(&env).user;
    Ok((user, LayerPaths::project_settings(project)))
}

/// The file's text, `""` when it does not exist.
fn read(path: &Path) -> anyhow::Result<String> {
    Ok(crate::read_settings_file(path)?
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default())
}

/// Writes `text` over `path` atomically and durably ([`AtomicWrite`]), keeping the old file's
/// mode (0644 for a new file), creating the directory when needed.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    AtomicWrite::new()
        .keep_mode()
        .mode(0o644)
        .write(path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Whether a hook named `name` is configured in any of `files`.
fn configured(name: &str, files: &[&Path]) -> bool {
    let lookup = |var: &str| std::env::var(var).ok();
    files.iter().any(|path| {
        let text = crate::read_settings_text_or_empty(path);
        let parsed = parse_settings(Source::Project, path, &text, &lookup);
        parsed.layer.is_some_and(|layer| {
            layer
                .hooks
                .iter()
                .flat_map(|event| &event.definitions)
                .flat_map(|definition| &definition.hooks)
                .any(|hook| hook.display_name() == name)
        })
    })
}

/// The managed hooks file, when the daemon would load it (root's alone, up to `/`) and it
/// holds a hook named `name`: such a hook cannot be disabled.
fn managed_hook(name: &str) -> Option<PathBuf> {
    let env = LoaderEnv::from_process()?;
    let path = LayerPaths::resolve(&env).managed;
    hookd_settings::sysfile::check_system_file(&path, &env.system_files).ok()?;
    configured(name, &[&path]).then_some(path)
}

/// The note said when the daemon was not reached.
const NOT_RUNNING: &str = "(hookd is not running: the file was edited directly)";

/// `hookctl disable NAME` without a daemon.
pub fn disable(name: &str, project: &Path, project_scope: bool) -> anyhow::Result<String> {
    let (user, project_file) = paths(project)?;
    let managed = managed_hook(name).map(|path| {
        format!(
            "Hook \"{name}\" of the managed hooks file {} stays on: managed hooks cannot be \
             disabled.\n",
            path.display()
        )
    });
    if let Some(note) = &managed {
        if !configured(name, &[&user, &project_file]) {
            return Ok(format!("{note}Nothing was written.\n"));
        }
    }
    let target = if project_scope { &project_file } else { &user };
    let text = read(target)?;
    let edited: Edit = edit::add_disabled(&text, name)
        .with_context(|| format!("cannot edit {}", target.display()))?;
    let mut out = if edited.changed {
        write(target, &edited.text)?;
        format!(
            "Hook \"{name}\" disabled by adding it to the disabled list in {}. {NOT_RUNNING}\n",
            target.display()
        )
    } else {
        format!(
            "Hook \"{name}\" is already disabled in {}.\n",
            target.display()
        )
    };
    if let Some(note) = managed {
        out.push_str(&note);
    } else if !configured(name, &[&user, &project_file]) {
        out.push_str(&format!(
            "warning: no hook named \"{name}\" is configured in {} or {}\n",
            user.display(),
            project_file.display()
        ));
    }
    Ok(out)
}

/// `hookctl enable NAME` without a daemon.
pub fn enable(name: &str, project: &Path) -> anyhow::Result<String> {
    let (user, project_file) = paths(project)?;
    let mut changed = Vec::new();
    let files = if user == project_file {
        vec![user]
    } else {
        vec![user, project_file]
    };
    for file in &files {
        let text = read(file)?;
        let edited = edit::remove_disabled(&text, &|entry| entry == name)
            .with_context(|| format!("cannot edit {}", file.display()))?;
        if edited.changed {
            write(file, &edited.text)?;
            changed.push(file.display().to_string());
        }
    }
    if changed.is_empty() {
        return Ok(format!("Hook \"{name}\" is already enabled.\n"));
    }
    Ok(format!(
        "Hook \"{name}\" enabled by removing it from the disabled list in {}. {NOT_RUNNING}\n",
        changed.join(" and ")
    ))
}

/// Whether `err` says that no daemon listens (the socket is missing or refuses): the cases
/// where editing the files directly is right. A socket that is not safe to use is not one.
pub fn daemon_not_running(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<hookd_client::ClientError>(),
            Some(hookd_client::ClientError::Connect { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                )
        )
    })
}

/// `hookctl trust --list` without a daemon: the trust store read from its file.
pub fn trust_list(cwd: Option<&Path>) -> anyhow::Result<String> {
    let env = LoaderEnv::from_process().context("cannot find the home directory")?;
    let path = LayerPaths::resolve(&env).trusted_hooks;
    let store = hookd_settings::loader::load_trust_store(&path)
        .map_err(|diagnostic| anyhow::anyhow!("{diagnostic}"))?;
    let projects = store
        .projects()
        .filter(|(project, _)| cwd.is_none_or(|wanted| Path::new(project) == wanted))
        .map(|(project, keys)| hookd_protocol::TrustedProject {
            cwd: project.to_owned(),
            hooks: keys
                .iter()
                .map(|key| hookd_protocol::TrustedHook {
                    event: None,
                    name: key.name.clone(),
                    command: key.command.clone(),
                    settings: (!key.settings.is_empty()).then(|| key.settings_json()),
                    uncovered: key.uncovered.clone(),
                    scripts: key
                        .scripts
                        .iter()
                        .map(|script| hookd_protocol::TrustedScript {
                            path: script.path.clone(),
                            sha256: script.sha256.clone(),
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let listing = hookd_protocol::TrustListMessage {
        id: hookd_protocol::RequestId::from(0),
        file: path.display().to_string(),
        projects,
    };
    Ok(crate::trust::render_trusted(&listing))
}
