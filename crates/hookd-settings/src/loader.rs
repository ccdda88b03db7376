//! Reading the settings layers, extensions and folder trust of a workspace from disk.
//!
//! This is the only place of the engine that reads configuration files. Everything it reads is
//! kept as text with its path, so a later reload can re-read a single file, and handed to
//! [`hookd_core::registry::Registry::build`], which does all parsing and validation.
//!
//! The work is split so a daemon can share what does not depend on the project:
//!
//! - [`SharedLayers::load`] reads, once, the user (Gemini CLI's, hookd's and, when enabled,
//!   a host's own, such as Claude Code's), system and system-defaults settings files,
//!   the installed extensions, `extension-enablement.json` and `trustedFolders.json`;
//! - [`ProjectLayer::load`] decides folder trust for one project directory and reads its
//!   `.gemini/settings.json`, `.hookd/hooks.json` and, when enabled, a host's own (Claude
//!   Code's `.claude/` settings)
//!   (and, when trusted, its `.env` for extension settings);
//! - [`assemble`] combines both into a [`RegistryInput`].
//!
//! [`load_workspace`] does all three at once.
//!
//! # Paths (spec §1.1)
//!
//! "Home" is `GEMINI_CLI_HOME` when set and non-empty, else the user's home directory.
//!
//! | layer | file |
//! |---|---|
//! | user | `<home>/.gemini/settings.json` |
//! | system | `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, else `/etc/gemini-cli/settings.json` (`/Library/Application Support/GeminiCli/settings.json` on macOS) |
//! | system defaults | `GEMINI_CLI_SYSTEM_DEFAULTS_PATH`, else `system-defaults.json` next to the system file |
//! | project | `<project>/.gemini/settings.json`, unless the project directory is the home directory (then that file is the user file) |
//! | user (hookd) | `$XDG_CONFIG_HOME/hookd/hooks.json` (an absolute `XDG_CONFIG_HOME` only), else `<real home>/.config/hookd/hooks.json` |
//! | project (hookd) | `<project>/.hookd/hooks.json` |
//! | managed (hookd) | `HOOKD_MANAGED_HOOKS` (absolute only), else `/etc/hookd/hooks.json`; loaded only when root owns it and every directory above it and none is writable by group or others ([`crate::sysfile`]), refused with an error that names the reason otherwise |
//! | user (Claude Code) | `$CLAUDE_CONFIG_DIR/settings.json` (absolute only), else `<real home>/.claude/settings.json`; only with `hookd --claude-settings` |
//! | project (Claude Code) | `<project>/.claude/settings.json`, then `<project>/.claude/settings.local.json`; only with `hookd --claude-settings` (and not the user file again in the home directory) |
//! | user (Copilot CLI) | the inline `hooks` of `$COPILOT_HOME/settings.json` (absolute only, else `<real home>/.copilot/`), then every `*.json` of `$COPILOT_HOME/hooks/`, by name, but `hookd.json`; only with `hookd --copilot-settings` |
//! | project (Copilot CLI) | the inline `hooks` of `<project>/.github/copilot/settings.json` and `settings.local.json`, then every `*.json` of `<project>/.github/hooks/`, by name, but `hookd.json`; only with `hookd --copilot-settings`, and only in a project Copilot CLI trusts (`trustedFolders` of `$COPILOT_HOME/config.json`) |
//!
//! hookd's own hooks files have the settings schema (`hooks` and `hooksConfig`) and are
//! layers of their scope: the user file is labelled `user`, the project file `project`, so
//! folder trust and project-hook trust apply to the latter as to `.gemini/settings.json`.
//! A host's own files (Claude Code's, the hosts in [`LoaderEnv::host_layers`]) are the files
//! its dialect names ([`hookd_core::dialect::HostFiles::user_layer_files`] and
//! [`hookd_core::dialect::HostFiles::project_layer_files`]), read as written and converted by
//! its dialect ([`hookd_core::dialect::HostFiles::convert_settings`]) when the registry input
//! is assembled ([`convert_host_layers`]): their hooks keep the host's language (`"dialect":
//! "claude"`), their problems are diagnostics naming the host's file, and their origin is that
//! file. A host may name folders instead (Copilot CLI's hooks folders,
//! [`hookd_core::dialect::HostFiles::user_layer_folders`]): the loader lists them
//! ([`list_layer_folder`]: at most [`MAX_LAYER_FOLDER_FILES`] files, in the host's order,
//! project files that are symbolic links out of the project refused) and reads each file the
//! host counts as one layer. A host that keeps a record of the projects it trusts
//! ([`hookd_core::dialect::HostFiles::project_trust_file`]) has its project files read only
//! where it would run them.
//!
//! Within one source the order is: the agent CLI's own file, then hookd's file, then the
//! hosts' own files. The registry keeps it, so de-duplication keeps the CLI's copy of a hook;
//! `hooksConfig` scalars (last wins) are therefore decided by hookd's file over the CLI's.
//!
//! A missing file is an absent layer, silently. A file that exists but cannot be read is an
//! error diagnostic and an absent layer. Invalid UTF-8 is decoded lossily, as Node.js does.
//!
//! # Extensions
//!
//! Every directory in `<home>/.gemini/extensions/` (sorted by name, as Node's `readdirSync`
//! returns them) is an installed extension. If it holds `.gemini-extension-install.json` with
//! `"type": "link"`, the extension's files live at that file's `source` instead. The manifest
//! `gemini-extension.json` must be JSON with a non-empty `name` (letters, digits and dashes)
//! and a `version`; otherwise the extension is skipped with a warning, as is a second
//! extension of the same name. Its `settings[]` entries with an `envVar` are the settings
//! merged into hook environments. Setting values come from
//! `<home>/.gemini/extensions/<name>/.env` and, in a trusted folder only, from the project's
//! own `.env` (Gemini CLI's workspace scope), the latter winning. Every entry of those files is
//! also available to `${…}` hydration. Whether an extension is active for a project follows
//! the rules in `<home>/.gemini/extensions/extension-enablement.json`.
//!
//! Left out, deliberately or for now: sensitive extension settings kept in the OS keychain
//! (they are never seen), the `-e/--extensions` command-line override of enablement, the
//! `security.allowedExtensions`, `security.blockGitExtensions`, `admin.extensions.enabled`
//! and `experimental.extensionConfig` settings, and the environment expansion and `${…}`
//! hydration Gemini CLI applies to the manifest itself (names and `envVar`s are read
//! literally).
//!
//! # Folder trust (spec §1.3)
//!
//! 1. `GEMINI_CLI_TRUST_WORKSPACE=true` or `=false` decides.
//! 2. Otherwise, when `security.folderTrust.enabled` is not `true` in the merged system
//!    defaults, user and system settings (the project cannot vouch for itself), the folder is
//!    trusted.
//! 3. Otherwise the rules of `trustedFolders.json` (`GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else
//!    `<home>/.gemini/trustedFolders.json`) decide: the longest rule path whose directory
//!    (its parent for `TRUST_PARENT`) contains the project, both resolved through symlinks.
//!    `DO_NOT_TRUST` means untrusted, `TRUST_FOLDER`/`TRUST_PARENT` trusted.
//! 4. No matching rule, or an invalid file, means untrusted. Gemini CLI would ask the user (or
//!    consult the IDE, or trust a headless session); a daemon cannot ask, so it refuses.
//!
//! # Project-hook trust
//!
//! The trust store is hookd's own file, `$XDG_CONFIG_HOME/hookd/trusted-hooks.json` (an
//! absolute `XDG_CONFIG_HOME` only), else `<home>/.config/hookd/trusted-hooks.json` with the
//! user's real home (not `GEMINI_CLI_HOME`: the store belongs to hookd, not to a Gemini CLI
//! profile). It is read with the shared files; a store that cannot be read or parsed is an
//! error diagnostic and trusts nothing. For a trusted folder with a project settings file,
//! [`read_hook_trust`] hashes every script file the project hooks' commands run
//! (`hookd_core::trust::script_paths`), so the registry can tell whether each project hook is
//! still the one the user trusted.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use hookd_core::command::CommandVars;
use hookd_core::dialect::{self, Dialect};
use hookd_core::extension::{ExtensionInput, ExtensionSetting, extension_enabled_for_path};
use hookd_core::jsonc;
use hookd_core::registry::{LayerText, RegistryInput};
use hookd_core::settings::{self, Diagnostic};
use hookd_core::trust::{CoveredFiles, HookTrustInput, ScriptFile, TrustStore};
use hookd_core::{LayerFile, Source};

use crate::verify;
use serde_json::Value;

use crate::configfile::{ConfigReadError, read_config_file};

/// The environment the loader resolves paths and expands settings with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoaderEnv {
    /// Environment variables: they choose paths and feed the `$NAME` expansion of settings.
    pub vars: HashMap<String, String>,
    /// The user's home directory (used unless `GEMINI_CLI_HOME` is set).
    pub home_dir: PathBuf,
    /// The hosts whose own settings files are layers too (`hookd --claude-settings`: Claude
    /// Code's), in the order their layers are added; none by default.
    pub host_layers: Vec<Dialect>,
    /// Whom the system settings files and the directories above them must belong to
    /// ([`crate::sysfile`]): root, every directory up to `/`, as Gemini CLI demands; another
    /// owner or a trusted directory only for tests that cannot give files to root.
    pub system_files: crate::sysfile::SystemFileRule,
}

impl LoaderEnv {
    /// An environment from explicit variables and home directory.
    pub fn new(vars: HashMap<String, String>, home_dir: impl Into<PathBuf>) -> LoaderEnv {
        LoaderEnv {
            vars,
            home_dir: home_dir.into(),
            host_layers: Vec::new(),
            system_files: crate::sysfile::SystemFileRule::root(),
        }
    }

    /// The same environment, demanding that the system settings files belong to `uid`
    /// rather than root (for tests running as an ordinary user).
    pub fn with_system_owner(mut self, uid: u32) -> LoaderEnv {
        self.system_files.owner = uid;
        self
    }

    /// The same environment, not checking the directories above `dir` on the way to the
    /// system settings files (for tests whose temp dirs sit under a world-writable `/tmp`).
    pub fn with_system_trusted_above(mut self, dir: Option<PathBuf>) -> LoaderEnv {
        self.system_files.trusted_above = dir;
        self
    }

    /// The same environment, reading the own settings files of `hosts` as layers (and no
    /// other host's).
    pub fn with_host_layers(mut self, hosts: Vec<Dialect>) -> LoaderEnv {
        self.host_layers = hosts;
        self
    }

    /// The current process's environment, with `HOME` as the home directory; `None` when
    /// neither `HOME` nor `GEMINI_CLI_HOME` is set. Variables that are not UTF-8 are skipped.
    pub fn from_process() -> Option<LoaderEnv> {
        let vars: HashMap<String, String> = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect();
        let home =
            non_empty(vars.get("HOME")).or_else(|| non_empty(vars.get("GEMINI_CLI_HOME")))?;
        let home = PathBuf::from(home);
        Some(LoaderEnv::new(vars, home))
    }

    /// The home directory and `var` as a host dialect asks for them, to find a host's files.
    pub fn host_env<'a>(
        &'a self,
        var: &'a dyn Fn(&str) -> Option<String>,
    ) -> hookd_core::dialect::HomeEnv<'a> {
        hookd_core::dialect::HomeEnv {
            home: &self.home_dir,
            var,
        }
    }

    /// A variable's value, treating the empty string as unset (as Gemini CLI's `||` does).
    pub fn var(&self, name: &str) -> Option<&str> {
        non_empty(self.vars.get(name))
    }
}

fn non_empty(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|v| !v.is_empty())
}

/// Where every shared configuration file lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerPaths {
    /// The effective home: `GEMINI_CLI_HOME` or the user's home directory.
    pub home: PathBuf,
    /// The user settings file.
    pub user: PathBuf,
    /// The system (override) settings file.
    pub system: PathBuf,
    /// The system defaults file.
    pub system_defaults: PathBuf,
    /// The directory of installed extensions.
    pub extensions_dir: PathBuf,
    /// The extension enablement rules.
    pub extension_enablement: PathBuf,
    /// The trusted folders file.
    pub trusted_folders: PathBuf,
    /// hookd's project-hook trust store.
    pub trusted_hooks: PathBuf,
    /// hookd's own user hooks file.
    pub hookd_user: PathBuf,
    /// The administrator's managed hooks file ([`managed_hooks_path`]).
    pub managed: PathBuf,
    /// The user settings files of every host whose own files can be layers
    /// ([`Dialect::with_layer_files`]), each with its host; read only for the hosts in
    /// [`LoaderEnv::host_layers`].
    pub host_user: Vec<(Dialect, PathBuf)>,
    /// The folders of user hook files of every host whose own files can be layers
    /// (Copilot CLI's `~/.copilot/hooks/`), each with its host: every file in them that the
    /// host counts is a layer ([`list_layer_folder`]); listed only for the hosts in
    /// [`LoaderEnv::host_layers`].
    pub host_user_folders: Vec<(Dialect, PathBuf)>,
    /// The file of each host that says which projects it runs the hooks of (Copilot CLI's
    /// `config.json`, `trustedFolders`), each with its host.
    pub host_trust: Vec<(Dialect, PathBuf)>,
}

impl LayerPaths {
    /// Resolves the paths from the environment.
    pub fn resolve(env: &LoaderEnv) -> LayerPaths {
        let home = hookd_core::dialect::gemini::gemini_home(
            &env.host_env(&|name| env.var(name).map(str::to_owned)),
        );
        let gemini_dir = home.join(".gemini");
        let system = env
            .var("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
            .map_or_else(default_system_settings, PathBuf::from);
        let system_defaults = env.var("GEMINI_CLI_SYSTEM_DEFAULTS_PATH").map_or_else(
            || {
                system
                    .parent()
                    .unwrap_or(Path::new(""))
                    .join("system-defaults.json")
            },
            PathBuf::from,
        );
        let extensions_dir = gemini_dir.join("extensions");
        LayerPaths {
            user: gemini_dir.join("settings.json"),
            system,
            system_defaults,
            extension_enablement: extensions_dir.join("extension-enablement.json"),
            extensions_dir,
            trusted_folders: env
                .var("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
                .map_or_else(|| gemini_dir.join("trustedFolders.json"), PathBuf::from),
            trusted_hooks: hookd_config_dir(env).join("trusted-hooks.json"),
            hookd_user: hookd_config_dir(env).join("hooks.json"),
            managed: managed_hooks_path(env),
            host_user: Dialect::with_layer_files()
                .flat_map(|host| {
                    host.files()
                        .user_layer_files(&env.host_env(&|name| env.var(name).map(str::to_owned)))
                        .into_iter()
                        .map(move |path| (host, path))
                })
                .collect(),
            host_user_folders: Dialect::with_layer_files()
                .flat_map(|host| {
                    host.files()
                        .user_layer_folders(&env.host_env(&|name| env.var(name).map(str::to_owned)))
                        .into_iter()
                        .map(move |path| (host, path))
                })
                .collect(),
            host_trust: Dialect::with_layer_files()
                .filter_map(|host| {
                    host.files()
                        .project_trust_file(&env.host_env(&|name| env.var(name).map(str::to_owned)))
                        .map(|path| (host, path))
                })
                .collect(),
            home,
        }
    }

    /// The project settings file of a project directory.
    pub fn project_settings(project_dir: &Path) -> PathBuf {
        project_dir.join(".gemini").join("settings.json")
    }

    /// hookd's own hooks file of a project directory.
    pub fn hookd_project(project_dir: &Path) -> PathBuf {
        project_dir.join(".hookd").join("hooks.json")
    }

    /// `host`'s own settings files of a project directory, in the order they are layered
    /// (Claude Code's: the shared `settings.json`, then the personal `settings.local.json`).
    pub fn host_project(host: Dialect, project_dir: &Path) -> Vec<PathBuf> {
        host.files().project_layer_files(project_dir)
    }

    /// `host`'s folders of project hook files (Copilot CLI's `.github/hooks/`).
    pub fn host_project_folders(host: Dialect, project_dir: &Path) -> Vec<PathBuf> {
        host.files().project_layer_folders(project_dir)
    }

    /// `host`'s folders of user hook files.
    pub fn host_user_folders(&self, host: Dialect) -> impl Iterator<Item = &Path> {
        self.host_user_folders
            .iter()
            .filter(move |(owner, _)| *owner == host)
            .map(|(_, path)| path.as_path())
    }

    /// `host`'s file that says which projects it trusts to run their hooks, if it has one.
    pub fn host_trust_file(&self, host: Dialect) -> Option<&Path> {
        self.host_trust
            .iter()
            .find(|(owner, _)| *owner == host)
            .map(|(_, path)| path.as_path())
    }

    /// `host`'s user settings files.
    pub fn host_user_files(&self, host: Dialect) -> impl Iterator<Item = &Path> {
        self.host_user
            .iter()
            .filter(move |(owner, _)| *owner == host)
            .map(|(_, path)| path.as_path())
    }

    /// Every hosts' folder of hook files of a project directory that can be a layer folder
    /// (whether or not it is on).
    pub fn project_folders(project_dir: &Path) -> Vec<PathBuf> {
        Dialect::with_layer_files()
            .flat_map(|host| LayerPaths::host_project_folders(host, project_dir))
            .collect()
    }

    /// Every file of a project directory the loader may read as a settings layer: Gemini
    /// CLI's, hookd's, and every host's own that can be a layer (whether or not it is on).
    pub fn project_files(project_dir: &Path) -> Vec<PathBuf> {
        let mut files = vec![
            LayerPaths::project_settings(project_dir),
            LayerPaths::hookd_project(project_dir),
        ];
        for host in Dialect::with_layer_files() {
            files.extend(LayerPaths::host_project(host, project_dir));
        }
        files
    }
}

/// hookd's configuration directory: `$XDG_CONFIG_HOME/hookd` (an absolute `XDG_CONFIG_HOME`
/// only), else `<home>/.config/hookd`, with the user's real home (not `GEMINI_CLI_HOME`: the
/// files there belong to hookd, not to a Gemini CLI profile).
pub fn hookd_config_dir(env: &LoaderEnv) -> PathBuf {
    let config_dir = env
        .var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| env.home_dir.join(".config"));
    config_dir.join("hookd")
}

/// The record of a daemon's options that change what its hooks decide, which the relay's
/// one-shot engine applies (and `hookctl install` reads to learn which hosts' own files the
/// daemon of `socket` reads as layers): `engine-<first 16 hex digits of the SHA-256 of the
/// socket path>.json` in hookd's state directory `state_dir`.
pub fn engine_record_path(state_dir: &Path, socket: &Path) -> PathBuf {
    let digest = hookd_core::trust::sha256_hex(socket.as_os_str().as_encoded_bytes());
    state_dir.join(format!("engine-{}.json", &digest[..16]))
}

/// The key of that record saying whether `host`'s own settings files are layers
/// (`claude_settings` for `--claude-settings`, `copilot_settings` for `--copilot-settings`).
pub fn host_layers_record_key(host: Dialect) -> String {
    format!("{}_settings", host.name())
}

/// The hosts whose own files a recorded daemon reads as layers, from the record's text
/// ([`engine_record_path`]); none when it is not a JSON object.
pub fn recorded_host_layers(record_text: &str) -> Vec<Dialect> {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(record_text) else {
        return Vec::new();
    };
    Dialect::with_layer_files()
        .filter(|host| fields.get(&host_layers_record_key(*host)) == Some(&Value::Bool(true)))
        .collect()
}

/// The managed hooks file: `HOOKD_MANAGED_HOOKS` when it is an absolute path (a relative one
/// would depend on where the daemon was started), else `/etc/hookd/hooks.json`.
pub fn managed_hooks_path(env: &LoaderEnv) -> PathBuf {
    env.var("HOOKD_MANAGED_HOOKS")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_MANAGED_HOOKS))
}

/// Where an administrator puts the managed hooks file unless `HOOKD_MANAGED_HOOKS` says
/// otherwise.
pub const DEFAULT_MANAGED_HOOKS: &str = "/etc/hookd/hooks.json";

fn default_system_settings() -> PathBuf {
    if cfg!(target_os = "macos") {
        PathBuf::from("/Library/Application Support/GeminiCli/settings.json")
    } else if cfg!(windows) {
        PathBuf::from("C:\\ProgramData\\gemini-cli\\settings.json")
    } else {
        PathBuf::from("/etc/gemini-cli/settings.json")
    }
}

/// Reads a configuration file that may legitimately be absent: `Ok(None)` when it does not
/// exist. Bounded and never blocking ([`read_config_file`]).
fn read_optional(path: &Path) -> Result<Option<String>, ConfigReadError> {
    Ok(read_config_file(path)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// Reads one settings file: `Ok(None)` when it does not exist, an error diagnostic when it
/// cannot be read. Use it to re-read a single layer.
pub fn read_layer(source: Source, path: &Path) -> Result<Option<LayerText>, Diagnostic> {
    read_layer_noting(source, LayerFile::Gemini, path).map_err(|unreadable| unreadable.diagnostic())
}

/// [`read_layer`], saying why a file could not be read.
fn read_layer_noting(
    source: Source,
    file: LayerFile,
    path: &Path,
) -> Result<Option<LayerText>, UnreadableFile> {
    match read_optional(path) {
        Ok(text) => Ok(text.map(|text| LayerText {
            source,
            file,
            path: path.to_owned(),
            text,
        })),
        Err(err) => Err(UnreadableFile {
            source,
            file,
            path: path.to_owned(),
            reason: err.to_string(),
        }),
    }
}

/// The most files of one host's layer folder read as layers (Copilot CLI's `hooks/`); the
/// files past it, in name order, are left out with a warning.
pub const MAX_LAYER_FOLDER_FILES: usize = 64;

/// The most entries of a layer folder looked at, whatever they are: a folder holding more is
/// not listed further (with a warning), so that no folder can keep a reload busy.
pub const MAX_LAYER_FOLDER_ENTRIES: usize = 4096;

/// The files of one of a host's layer folders that are layers, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FolderListing {
    /// The files to read as layers, in the host's order.
    pub files: Vec<PathBuf>,
    /// What was left out and why.
    pub diagnostics: Vec<Diagnostic>,
}

/// Lists `host`'s layer folder `folder` ([`hookd_core::dialect::HostFiles::user_layer_folders`]):
/// the files the host counts ([`hookd_core::dialect::HostFiles::layer_folder_files`]), at most
/// [`MAX_LAYER_FOLDER_FILES`] of at most [`MAX_LAYER_FOLDER_ENTRIES`] entries. A missing
/// folder has none. With `within` (a project directory), a file that is a symbolic link
/// whose target is not inside `within` is refused with an error: a cloned repository cannot
/// make hookd read a file of the user's elsewhere. Whether each file is a regular file of a
/// sane size is checked when it is read ([`read_config_file`]).
pub fn list_layer_folder(host: Dialect, folder: &Path, within: Option<&Path>) -> FolderListing {
    let mut listing = FolderListing::default();
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return listing;
        }
        Err(err) => {
            listing.diagnostics.push(
                Diagnostic::error(format!(
                    "cannot list {}'s hooks folder: {err}; its files are not read",
                    host.product()
                ))
                .with_path(folder),
            );
            return listing;
        }
    };
    let mut names = Vec::new();
    for (seen, entry) in entries.enumerate() {
        if seen == MAX_LAYER_FOLDER_ENTRIES {
            listing.diagnostics.push(
                Diagnostic::warning(format!(
                    "more than {MAX_LAYER_FOLDER_ENTRIES} entries in {}'s hooks folder; the \
                     others are not looked at",
                    host.product()
                ))
                .with_path(folder),
            );
            break;
        }
        // A name that is not UTF-8 is no `*.json` a host would name.
        if let Some(name) = entry
            .ok()
            .and_then(|entry| entry.file_name().into_string().ok())
        {
            names.push(name);
        }
    }
    let mut files = host.files().layer_folder_files(names);
    if files.len() > MAX_LAYER_FOLDER_FILES {
        listing.diagnostics.push(
            Diagnostic::warning(format!(
                "{} hook files in {}'s hooks folder; only the first {MAX_LAYER_FOLDER_FILES} \
                 (by name) are read",
                files.len(),
                host.product()
            ))
            .with_path(folder),
        );
        files.truncate(MAX_LAYER_FOLDER_FILES);
    }
    let root = within.map(real_path);
    for name in files {
        let path = folder.join(&name);
        let is_link = fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_symlink());
        if let (true, Some(root)) = (is_link, &root) {
            // A link that cannot be resolved (dangling, a loop) is read and reported as such.
            if let Ok(target) = fs::canonicalize(&path) {
                if !target.starts_with(root) {
                    listing.diagnostics.push(
                        Diagnostic::error(format!(
                            "{} hook file refused: a symbolic link to {}, outside the \
                             project; hookd does not read it",
                            host.product(),
                            target.display()
                        ))
                        .with_path(&path),
                    );
                    continue;
                }
            }
        }
        listing.files.push(path);
    }
    listing
}

/// A settings file that exists but was not read: not a regular file, too large, a symlink
/// loop, or an I/O error. Whoever keeps last good versions keeps using this file's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableFile {
    /// The layer it would have been.
    pub source: Source,
    /// Whose file it is (a kept version is restored as the same kind of layer).
    pub file: LayerFile,
    /// The file.
    pub path: PathBuf,
    /// Why it was not read.
    pub reason: String,
}

impl UnreadableFile {
    /// The diagnostic when no earlier version of the file is kept: the layer is ignored.
    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic::error(format!(
            "cannot read {} settings: {}; layer ignored",
            self.source, self.reason
        ))
        .with_path(&self.path)
    }
}

/// The warning for a system settings or system defaults file that Gemini CLI would refuse as
/// insecure ([`crate::sysfile`]), which is then not loaded either; `None` for any other
/// layer, and for a system file that passes.
fn refused_system_file(
    source: Source,
    path: &Path,
    rule: &crate::sysfile::SystemFileRule,
) -> Option<Diagnostic> {
    if source == Source::Managed {
        // The same rule as Gemini CLI's system files: only root may decide what every user
        // of the machine must run. Refused loudly, since its guards are then missing.
        let reason = crate::sysfile::check_system_file(path, rule).err()?;
        tracing::error!(file = %path.display(), %reason, "managed hooks file refused as insecure");
        return Some(
            Diagnostic::error(format!(
                "managed hooks file refused, its hooks do not run: {reason}"
            ))
            .with_path(path),
        );
    }
    if !matches!(source, Source::System | Source::SystemDefaults) {
        return None;
    }
    let reason = crate::sysfile::check_system_file(path, rule).err()?;
    tracing::warn!(file = %path.display(), %reason, "{source} settings file refused as insecure");
    Some(
        Diagnostic::warning(format!(
            "{source} settings file not loaded, as Gemini CLI does not load it: {reason}"
        ))
        .with_path(path),
    )
}

/// `layer`, marked as a file of `file`'s (`read_layer` reads every file as Gemini CLI's).
/// One installed extension, as read from disk (project-independent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledExtension {
    /// The manifest's name.
    pub name: String,
    /// The directory under `extensions/`.
    pub install_dir: PathBuf,
    /// Where the extension's files are: `install_dir`, or the source of a linked install.
    pub path: PathBuf,
    /// The manifest's settings with an `envVar`.
    pub settings: Vec<ExtensionSetting>,
    /// The hooks file.
    pub hooks_file: PathBuf,
    /// Its text, `None` when absent or unreadable.
    pub hooks_text: Option<String>,
    /// Why the hooks file exists but was not read (not a regular file, too large, ...);
    /// whoever keeps last good versions keeps using this file's.
    pub hooks_unreadable: Option<String>,
    /// The user-scope `.env` file of the extension.
    pub user_env_file: PathBuf,
    /// Its entries, in file order.
    pub user_env: Vec<(String, String)>,
}

/// A trust level of `trustedFolders.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustLevel {
    /// `TRUST_FOLDER`: the folder and everything below it.
    TrustFolder,
    /// `TRUST_PARENT`: the folder's parent and everything below it.
    TrustParent,
    /// `DO_NOT_TRUST`.
    DoNotTrust,
}

impl TrustLevel {
    fn parse(value: &str) -> Option<TrustLevel> {
        match value {
            "TRUST_FOLDER" => Some(TrustLevel::TrustFolder),
            "TRUST_PARENT" => Some(TrustLevel::TrustParent),
            "DO_NOT_TRUST" => Some(TrustLevel::DoNotTrust),
            _ => None,
        }
    }
}

/// The rules of `trustedFolders.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedFolders {
    /// The file.
    pub path: PathBuf,
    /// Its rules, in file order.
    pub rules: Vec<(String, TrustLevel)>,
    /// Problems with the file; when there are any, no folder is trusted by rule.
    pub errors: Vec<Diagnostic>,
}

impl TrustedFolders {
    /// Reads the file; a missing file has no rules.
    pub fn load(path: &Path) -> TrustedFolders {
        let mut folders = TrustedFolders {
            path: path.to_owned(),
            ..TrustedFolders::default()
        };
        let text = match read_optional(path) {
            Ok(Some(text)) => text,
            Ok(None) => return folders,
            Err(err) => {
                folders.errors.push(
                    Diagnostic::error(format!("cannot read trusted folders: {err}"))
                        .with_path(path),
                );
                return folders;
            }
        };
        match jsonc::parse(&text) {
            Ok(Value::Object(map)) => {
                for (folder, level) in map {
                    match level.as_str().and_then(TrustLevel::parse) {
                        Some(level) => folders.rules.push((folder, level)),
                        None => folders.errors.push(
                            Diagnostic::error(format!(
                                "Invalid trust level {level} for path \"{folder}\". Possible \
                                 values are: TRUST_FOLDER, TRUST_PARENT, DO_NOT_TRUST."
                            ))
                            .with_path(path),
                        ),
                    }
                }
            }
            Ok(_) => folders.errors.push(
                Diagnostic::error("Trusted folders file is not a valid JSON object.")
                    .with_path(path),
            ),
            Err(err) => folders.errors.push(
                Diagnostic::error(format!("invalid JSON: {}", err.message))
                    .with_path(path)
                    .with_position(err.line, err.column),
            ),
        }
        folders
    }

    /// The trust the rules give `location`: the longest matching rule decides; `None` when
    /// no rule matches.
    pub fn is_path_trusted(&self, location: &Path) -> Option<bool> {
        let location = real_path(location);
        let mut best: Option<(usize, TrustLevel)> = None;
        for (rule, level) in &self.rules {
            let rule_path = Path::new(rule);
            let effective = match level {
                TrustLevel::TrustParent => rule_path.parent().unwrap_or(rule_path),
                TrustLevel::TrustFolder | TrustLevel::DoNotTrust => rule_path,
            };
            if location.starts_with(real_path(effective))
                && best.is_none_or(|(length, _)| rule.len() > length)
            {
                best = Some((rule.len(), *level));
            }
        }
        best.map(|(_, level)| level != TrustLevel::DoNotTrust)
    }
}

/// The path with symlinks resolved, or the path itself when that fails.
fn real_path(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// How folder trust was decided for a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustDecision {
    /// `GEMINI_CLI_TRUST_WORKSPACE` forced the answer.
    ForcedByEnv(bool),
    /// `security.folderTrust.enabled` is off, so every folder is trusted.
    FeatureDisabled,
    /// A `trustedFolders.json` rule decided.
    Rule(bool),
    /// No rule covers the folder.
    NoRule,
    /// `trustedFolders.json` is invalid, so no folder is trusted by rule.
    InvalidRules,
}

impl TrustDecision {
    /// Whether the folder is trusted.
    pub fn is_trusted(&self) -> bool {
        match self {
            TrustDecision::ForcedByEnv(trusted) | TrustDecision::Rule(trusted) => *trusted,
            TrustDecision::FeatureDisabled => true,
            TrustDecision::NoRule | TrustDecision::InvalidRules => false,
        }
    }

    /// Why the folder is untrusted, for a diagnostic; `None` when it is trusted.
    fn reason(&self) -> Option<&'static str> {
        match self {
            _ if self.is_trusted() => None,
            TrustDecision::ForcedByEnv(_) => Some("GEMINI_CLI_TRUST_WORKSPACE=false"),
            TrustDecision::Rule(_) => Some("a DO_NOT_TRUST rule in the trusted folders file"),
            TrustDecision::NoRule => {
                Some("folder trust is enabled and no trusted folders rule covers it")
            }
            TrustDecision::InvalidRules => Some("the trusted folders file is invalid"),
            TrustDecision::FeatureDisabled => None,
        }
    }
}

/// What a daemon loads once and shares between projects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedLayers {
    /// The environment everything was resolved with.
    pub env: LoaderEnv,
    /// The paths of the shared files.
    pub paths: LayerPaths,
    /// The user, system and system-defaults settings files that exist, hookd's own user
    /// hooks file (a user layer, after Gemini CLI's) among them.
    pub layers: Vec<LayerText>,
    /// The user settings files of the hosts in [`LoaderEnv::host_layers`] as written (each
    /// host's schema), those that exist; [`assemble`] converts them.
    pub host_layers: Vec<LayerText>,
    /// The files found in the hosts' user layer folders ([`LayerPaths::host_user_folders`]),
    /// in the order they are layered, read or not.
    pub host_folder_files: Vec<PathBuf>,
    /// Each host's trust file ([`LayerPaths::host_trust`]) as parsed, for the hosts in
    /// [`LoaderEnv::host_layers`]; `None` when it is missing, unreadable or not JSON.
    pub host_trust: Vec<(Dialect, Option<Value>)>,
    /// The installed extensions, sorted by directory name.
    pub extensions: Vec<InstalledExtension>,
    /// Enablement rules per extension name.
    pub enablement: HashMap<String, Vec<String>>,
    /// The trusted folders rules.
    pub trusted_folders: TrustedFolders,
    /// The project-hook trust store (empty when it is missing or invalid).
    pub trusted_hooks: TrustStore,
    /// Problems found while reading (not parsing) the shared files.
    pub diagnostics: Vec<Diagnostic>,
    /// Settings files that exist but could not be read (each also has a diagnostic).
    pub unreadable: Vec<UnreadableFile>,
}

impl SharedLayers {
    /// Reads every shared file.
    pub fn load(env: LoaderEnv) -> SharedLayers {
        let paths = LayerPaths::resolve(&env);
        let mut diagnostics = Vec::new();
        let mut unreadable = Vec::new();
        let mut layers = Vec::new();
        for (source, file, path) in [
            (Source::Managed, LayerFile::Hookd, &paths.managed),
            (Source::User, LayerFile::Gemini, &paths.user),
            (Source::User, LayerFile::Hookd, &paths.hookd_user),
            (Source::System, LayerFile::Gemini, &paths.system),
            (
                Source::SystemDefaults,
                LayerFile::Gemini,
                &paths.system_defaults,
            ),
        ] {
            if let Some(diagnostic) = refused_system_file(source, path, &env.system_files) {
                diagnostics.push(diagnostic);
                continue;
            }
            match read_layer_noting(source, file, path) {
                Ok(layer) => layers.extend(layer),
                Err(file) => {
                    diagnostics.push(file.diagnostic());
                    unreadable.push(file);
                }
            }
        }
        let mut host_layers = Vec::new();
        let mut host_folder_files = Vec::new();
        let mut host_trust = Vec::new();
        for host in &env.host_layers {
            let mut files: Vec<PathBuf> =
                paths.host_user_files(*host).map(Path::to_owned).collect();
            for folder in paths.host_user_folders(*host) {
                let listing = list_layer_folder(*host, folder, None);
                diagnostics.extend(listing.diagnostics);
                host_folder_files.extend(listing.files.iter().cloned());
                files.extend(listing.files);
            }
            for path in &files {
                match read_layer_noting(Source::User, host.layer_file(), path) {
                    Ok(layer) => host_layers.extend(layer),
                    Err(file) => {
                        diagnostics.push(file.diagnostic());
                        unreadable.push(file);
                    }
                }
            }
            if let Some(path) = paths.host_trust_file(*host) {
                // Unreadable, missing or not JSON: the host trusts no project
                // ([`ProjectLayer::load`]). Copilot CLI writes comments into its `config.json`.
                let record = read_optional(path)
                    .ok()
                    .flatten()
                    .and_then(|text| jsonc::parse(&text).ok());
                host_trust.push((*host, record));
            }
        }
        let extensions = load_extensions(&paths.extensions_dir, &mut diagnostics);
        let enablement = load_enablement(&paths.extension_enablement, &mut diagnostics);
        let trusted_folders = TrustedFolders::load(&paths.trusted_folders);
        let trusted_hooks = match load_trust_store(&paths.trusted_hooks) {
            Ok(store) => store,
            Err(diagnostic) => {
                diagnostics.push(diagnostic);
                TrustStore::default()
            }
        };
        tracing::debug!(
            layers = layers.len(),
            extensions = extensions.len(),
            "loaded shared hook configuration"
        );
        SharedLayers {
            env,
            paths,
            layers,
            host_layers,
            host_folder_files,
            host_trust,
            extensions,
            enablement,
            trusted_folders,
            trusted_hooks,
            diagnostics,
            unreadable,
        }
    }

    /// Whether `host` would run the hooks of `project_dir`'s own files, by its trust file as
    /// read ([`hookd_core::dialect::HostFiles::trusts_project`]); the project is compared by
    /// its real path, as the host sees its working directory.
    pub fn host_trusts_project(&self, host: Dialect, project_dir: &Path) -> bool {
        if self.paths.host_trust_file(host).is_none() {
            return true;
        }
        let record = self
            .host_trust
            .iter()
            .find(|(owner, _)| *owner == host)
            .and_then(|(_, record)| record.as_ref());
        host.files().trusts_project(&real_path(project_dir), record)
    }

    /// Replaces (or removes, with `None`) the shared layer of `source` read from `path`, e.g.
    /// after the file changed on disk. A replaced layer keeps its place; a new one goes last.
    pub fn replace_layer(&mut self, source: Source, path: &Path, layer: Option<LayerText>) {
        let position = self
            .layers
            .iter()
            .position(|existing| existing.source == source && existing.path == path);
        match (position, layer) {
            (Some(index), Some(layer)) => self.layers[index] = layer,
            (Some(index), None) => {
                self.layers.remove(index);
            }
            (None, layer) => self.layers.extend(layer),
        }
    }

    /// `security.folderTrust.enabled` merged over system defaults, user and system (last
    /// wins); off unless a layer turns it on.
    pub fn folder_trust_enabled(&self) -> bool {
        let lookup = |name: &str| self.env.vars.get(name).cloned();
        // hookd's own hooks file holds hooks, not Gemini CLI's security settings.
        let mut ordered: Vec<&LayerText> = self
            .layers
            .iter()
            .filter(|layer| layer.path != self.paths.hookd_user && layer.source != Source::Managed)
            .collect();
        ordered.sort_by_key(|layer| match layer.source {
            Source::SystemDefaults => 0,
            Source::User => 1,
            _ => 2,
        });
        let mut enabled = false;
        for layer in ordered {
            let parsed = settings::parse_settings(layer.source, &layer.path, &layer.text, &lookup);
            if let Some(value) = parsed.layer.and_then(|layer| layer.folder_trust_enabled) {
                enabled = value;
            }
        }
        enabled
    }

    /// Decides whether `project_dir` is trusted.
    pub fn folder_trust(&self, project_dir: &Path) -> TrustDecision {
        match self.env.var("GEMINI_CLI_TRUST_WORKSPACE") {
            Some("true") => return TrustDecision::ForcedByEnv(true),
            Some("false") => return TrustDecision::ForcedByEnv(false),
            _ => {}
        }
        if !self.folder_trust_enabled() {
            return TrustDecision::FeatureDisabled;
        }
        if !self.trusted_folders.errors.is_empty() {
            return TrustDecision::InvalidRules;
        }
        match self.trusted_folders.is_path_trusted(project_dir) {
            Some(trusted) => TrustDecision::Rule(trusted),
            None => TrustDecision::NoRule,
        }
    }
}

/// Reads the project-hook trust store; a missing file is an empty store. An unreadable or
/// invalid one is an error: nothing is trusted until it is fixed (or rewritten by `trust`).
pub fn load_trust_store(path: &Path) -> Result<TrustStore, Diagnostic> {
    let text = match read_optional(path) {
        Ok(text) => text.unwrap_or_default(),
        Err(err) => {
            return Err(Diagnostic::error(format!(
                "cannot read the trusted hooks store: {err}; no project hook is trusted"
            ))
            .with_path(path));
        }
    };
    TrustStore::parse(&text).map_err(|err| {
        Diagnostic::error(format!(
            "invalid trusted hooks store: {err}; no project hook is trusted"
        ))
        .with_path(path)
    })
}

/// What marking `project`'s hooks trusted or untrusted needs: the store's keys for it and the
/// digests of the script files its hooks' commands run. Empty for an untrusted folder or a
/// project without a settings file (it has no project hooks).
pub fn read_hook_trust(shared: &SharedLayers, project: &ProjectLayer) -> HookTrustInput {
    let (host_layers, _) = convert_host_layers(&project.host_layers);
    let layers: Vec<&LayerText> = project
        .layer
        .iter()
        .chain(&project.hookd_layer)
        .chain(&host_layers)
        .collect();
    if layers.is_empty() || !project.trust.is_trusted() {
        return HookTrustInput::default();
    }
    let lookup = |name: &str| shared.env.vars.get(name).cloned();
    let project_text = project.project_dir.to_string_lossy().into_owned();
    let vars = CommandVars {
        project_dir: &project_text,
        plans_dir: "",
        session_id: "",
    };
    let mut scripts: Vec<ScriptFile> = Vec::new();
    let mut hooks: Vec<CoveredFiles> = Vec::new();
    for layer in layers {
        let parsed = settings::parse_settings(layer.source, &layer.path, &layer.text, &lookup);
        let configs = parsed
            .layer
            .iter()
            .flat_map(|layer| &layer.hooks)
            .flat_map(|event| &event.definitions)
            .flat_map(|definition| &definition.hooks)
            .filter(|config| config.runs_process());
        for config in configs {
            let command = config.command.clone().unwrap_or_default();
            if hooks
                .iter()
                .any(|hook| hook.command == command && hook.env == config.env)
            {
                continue;
            }
            let collected = match config.policy_sources(&layer.path) {
                Some(files) => verify::collect_files(&files, &project.project_dir),
                None => verify::collect(&command, &config.env, &vars),
            };
            for file in collected.files {
                if !scripts.iter().any(|known| known.path == file.path) {
                    scripts.push(file);
                }
            }
            hooks.push(CoveredFiles {
                command,
                env: config.env.clone(),
                scripts: collected.digests,
                uncovered: collected.uncovered,
            });
        }
    }
    HookTrustInput {
        trusted: shared
            .trusted_hooks
            .keys(&project.project_dir.to_string_lossy())
            .to_vec(),
        scripts,
        hooks,
    }
}

/// Reads the installed extensions.
fn load_extensions(dir: &Path, diagnostics: &mut Vec<Diagnostic>) -> Vec<InstalledExtension> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Vec::new();
        }
        Err(err) => {
            diagnostics
                .push(Diagnostic::error(format!("cannot list extensions: {err}")).with_path(dir));
            return Vec::new();
        }
    };
    let mut names: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect();
    // Node's readdir (libuv scandir) returns names sorted bytewise.
    names.sort();

    let mut extensions: Vec<InstalledExtension> = Vec::new();
    for name in names {
        let install_dir = dir.join(&name);
        // `is_dir` follows symlinks, like Node's statSync; files such as the enablement file
        // are not extensions.
        if !install_dir.is_dir() {
            continue;
        }
        match load_extension(dir, &install_dir) {
            Ok(extension) => {
                let name = &extension.installed.name;
                if extensions.iter().any(|other| other.name == *name) {
                    diagnostics.push(
                        Diagnostic::warning(format!(
                            "skipping extension: an extension named \"{name}\" is already loaded"
                        ))
                        .with_path(&extension.installed.path),
                    );
                    continue;
                }
                if let Some(diagnostic) = extension.read_problem.clone() {
                    diagnostics.push(diagnostic);
                }
                extensions.push(extension.installed);
            }
            Err(diagnostic) => diagnostics.push(diagnostic),
        }
    }
    extensions
}

/// An extension and a non-fatal problem met while reading it.
struct LoadedExtension {
    installed: InstalledExtension,
    read_problem: Option<Diagnostic>,
}

/// Reads one extension directory; a warning diagnostic when it must be skipped.
fn load_extension(
    extensions_dir: &Path,
    install_dir: &Path,
) -> Result<LoadedExtension, Diagnostic> {
    let path = linked_source(install_dir).unwrap_or_else(|| install_dir.to_owned());
    let manifest_path = path.join("gemini-extension.json");
    let skip = |message: String| {
        Diagnostic::warning(format!("skipping extension: {message}")).with_path(&manifest_path)
    };
    let text = match read_optional(&manifest_path) {
        Ok(Some(text)) => text,
        Ok(None) => return Err(skip("configuration file not found".to_owned())),
        Err(err) => return Err(skip(format!("cannot read the configuration file: {err}"))),
    };
    let manifest: Value = serde_json::from_str(&text)
        .map_err(|err| skip(format!("invalid configuration file: {err}")))?;
    let name = match manifest.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(skip("missing \"name\"".to_owned())),
    };
    if !is_truthy(manifest.get("version")) {
        return Err(skip("missing \"version\"".to_owned()));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(skip(format!(
            "Invalid extension name: \"{name}\". Only letters (a-z, A-Z), numbers (0-9), and \
             dashes (-) are allowed."
        )));
    }
    let settings = manifest
        .get("settings")
        .and_then(Value::as_array)
        .map(|settings| {
            settings
                .iter()
                .filter_map(|setting| {
                    Some(ExtensionSetting {
                        name: setting
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        env_var: setting.get("envVar")?.as_str()?.to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();

    let mut read_problem = None;
    let mut hooks_unreadable = None;
    let hooks_file = ExtensionInput::hooks_file_for(&path);
    let hooks_text = match read_optional(&hooks_file) {
        Ok(text) => text,
        Err(err) => {
            hooks_unreadable = Some(err.to_string());
            read_problem = Some(
                Diagnostic::warning(format!(
                    "cannot read the hooks of extension \"{name}\": {err}"
                ))
                .with_path(&hooks_file),
            );
            None
        }
    };
    // The user-scope settings live under the extension's name, even for linked installs.
    let user_env_file = extensions_dir.join(&name).join(".env");
    let user_env = match read_optional(&user_env_file) {
        Ok(text) => text.map(|text| parse_dotenv(&text)).unwrap_or_default(),
        Err(err) => {
            read_problem = Some(
                Diagnostic::warning(format!(
                    "cannot read the settings of extension \"{name}\": {err}"
                ))
                .with_path(&user_env_file),
            );
            Vec::new()
        }
    };
    Ok(LoadedExtension {
        installed: InstalledExtension {
            name,
            install_dir: install_dir.to_owned(),
            path,
            settings,
            hooks_file,
            hooks_text,
            hooks_unreadable,
            user_env_file,
            user_env,
        },
        read_problem,
    })
}

/// The source directory of a linked install, from `.gemini-extension-install.json`.
fn linked_source(install_dir: &Path) -> Option<PathBuf> {
    let text = read_optional(&install_dir.join(".gemini-extension-install.json")).ok()??;
    let metadata: Value = serde_json::from_str(&text).ok()?;
    if metadata.get("type").and_then(Value::as_str) != Some("link") {
        return None;
    }
    metadata
        .get("source")
        .and_then(Value::as_str)
        .map(PathBuf::from)
}

/// JavaScript truthiness of an optional JSON value.
fn is_truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(Value::Number(number)) => number.as_f64().is_some_and(|n| n != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

/// Reads `extension-enablement.json`: `{"<name>": {"overrides": ["rule", ...]}}`.
fn load_enablement(path: &Path, diagnostics: &mut Vec<Diagnostic>) -> HashMap<String, Vec<String>> {
    let text = match read_optional(path) {
        Ok(Some(text)) => text,
        Ok(None) => return HashMap::new(),
        Err(err) => {
            diagnostics.push(
                Diagnostic::error(format!(
                    "cannot read extension enablement: {err}; all extensions enabled"
                ))
                .with_path(path),
            );
            return HashMap::new();
        }
    };
    let root: Value = match serde_json::from_str(&text) {
        Ok(root) => root,
        Err(err) => {
            diagnostics.push(
                Diagnostic::error(format!(
                    "Failed to read extension enablement config: {err}; all extensions enabled"
                ))
                .with_path(path),
            );
            return HashMap::new();
        }
    };
    root.as_object()
        .map(|map| {
            map.iter()
                .map(|(name, config)| {
                    let rules = config
                        .get("overrides")
                        .and_then(Value::as_array)
                        .map(|rules| {
                            rules
                                .iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default();
                    (name.clone(), rules)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Parses a `.env` file the way the `dotenv` package does: `KEY=value` or `KEY: value` lines,
/// an optional `export ` prefix, `#` comments, values in single, double or back quotes (which
/// may span lines; `\n` and `\r` are unescaped in double quotes), unquoted values trimmed and
/// ending at `#`. A later entry for the same key wins, keeping the first one's position.
pub fn parse_dotenv(text: &str) -> Vec<(String, String)> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let (entry, consumed) = parse_dotenv_entry(rest);
        rest = rest.get(consumed..).unwrap_or("");
        if let Some((key, value)) = entry {
            match entries.iter_mut().find(|(existing, _)| *existing == key) {
                Some(slot) => slot.1 = value,
                None => entries.push((key, value)),
            }
        }
    }
    entries
}

/// Parses the entry starting at the beginning of `rest`. Returns the entry, if any, and how
/// many bytes were consumed (through the line break ending it).
fn parse_dotenv_entry(rest: &str) -> (Option<(String, String)>, usize) {
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let next_line = (line_end + 1).min(rest.len());
    let line = &rest[..line_end];
    let mut cursor = line.trim_start();
    if let Some(after) = cursor.strip_prefix("export") {
        if after.starts_with([' ', '\t']) {
            cursor = after.trim_start();
        }
    }
    let key_len = cursor
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        .count();
    if key_len == 0 {
        return (None, next_line);
    }
    let key = cursor[..key_len].to_owned();
    let after_key = &cursor[key_len..];
    let value_start =
        if let Some(after) = after_key.trim_start_matches([' ', '\t']).strip_prefix('=') {
            after.trim_start_matches([' ', '\t'])
        } else if let Some(after) = after_key.strip_prefix(':') {
            if !after.starts_with([' ', '\t']) {
                return (None, next_line);
            }
            after.trim_start_matches([' ', '\t'])
        } else {
            return (None, next_line);
        };

    // A quoted value may run past this line, so continue from the value's position in `rest`.
    let value_offset = value_start.as_ptr() as usize - rest.as_ptr() as usize;
    let from_value = &rest[value_offset..];
    if let Some(quote) = from_value
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"' | '`'))
    {
        if let Some(close) = closing_quote(&from_value[1..], quote) {
            let after = value_offset + 1 + close + 1;
            let tail_end = rest[after..].find('\n').map_or(rest.len(), |i| after + i);
            // Only blanks and a comment may follow the closing quote.
            let tail = &rest[after..tail_end];
            if tail.split('#').next().unwrap_or("").trim().is_empty() {
                let value = unescape_dotenv(&from_value[1..1 + close], quote);
                return (Some((key, value)), (tail_end + 1).min(rest.len()));
            }
        }
    }
    let raw = value_start.split('#').next().unwrap_or("").trim();
    let value = match raw.chars().next() {
        Some(quote @ ('\'' | '"' | '`')) if raw.len() >= 2 && raw.ends_with(quote) => {
            unescape_dotenv(&raw[1..raw.len() - 1], quote)
        }
        _ => raw.to_owned(),
    };
    (Some((key, value)), next_line)
}

/// Double-quoted values have `\n` and `\r` turned into line breaks; others are literal.
fn unescape_dotenv(value: &str, quote: char) -> String {
    if quote == '"' {
        value.replace("\\n", "\n").replace("\\r", "\r")
    } else {
        value.to_owned()
    }
}

/// The index of the quote closing a value in `text` (which starts after the opening quote);
/// a backslash-quote pair does not close it.
fn closing_quote(text: &str, quote: char) -> Option<usize> {
    let mut chars = text.char_indices();
    while let Some((index, c)) = chars.next() {
        if c == '\\' {
            if let Some((_, next)) = chars.clone().next() {
                if next == quote {
                    chars.next();
                    continue;
                }
            }
        } else if c == quote {
            return Some(index);
        }
    }
    None
}

/// What a daemon loads per project directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectLayer {
    /// The project directory.
    pub project_dir: PathBuf,
    /// How folder trust was decided.
    pub trust: TrustDecision,
    /// The project settings file, when it exists (and is not the user file).
    pub layer: Option<LayerText>,
    /// hookd's own project hooks file (`.hookd/hooks.json`), when it exists.
    pub hookd_layer: Option<LayerText>,
    /// The project's own settings files of the hosts in [`LoaderEnv::host_layers`] as
    /// written (each host's schema), those that exist; [`assemble`] converts them.
    pub host_layers: Vec<LayerText>,
    /// The files found in the hosts' project layer folders
    /// ([`LayerPaths::host_project_folders`]), in the order they are layered, read or not.
    pub host_folder_files: Vec<PathBuf>,
    /// The project's `.env` entries, read only when the folder is trusted.
    pub workspace_env: Vec<(String, String)>,
    /// Problems found while reading.
    pub diagnostics: Vec<Diagnostic>,
    /// Settings files that exist but could not be read (each also has a diagnostic).
    pub unreadable: Vec<UnreadableFile>,
}

impl ProjectLayer {
    /// Decides trust for `project_dir` and reads its files.
    pub fn load(shared: &SharedLayers, project_dir: &Path) -> ProjectLayer {
        let trust = shared.folder_trust(project_dir);
        let mut diagnostics = Vec::new();
        let mut unreadable = Vec::new();
        if matches!(trust, TrustDecision::InvalidRules) {
            diagnostics.extend(shared.trusted_folders.errors.iter().cloned());
        }
        // In the home directory the project file would be the user file; Gemini CLI does not
        // load it twice.
        let is_home = real_path(project_dir) == real_path(&shared.paths.home);
        let layer = if is_home {
            None
        } else {
            let path = LayerPaths::project_settings(project_dir);
            match read_layer_noting(Source::Project, LayerFile::Gemini, &path) {
                Ok(layer) => layer,
                Err(file) => {
                    diagnostics.push(file.diagnostic());
                    unreadable.push(file);
                    None
                }
            }
        };
        let mut read_project_layer =
            |file: LayerFile, path: &Path| match read_layer_noting(Source::Project, file, path) {
                Ok(layer) => layer,
                Err(file) => {
                    diagnostics.push(file.diagnostic());
                    unreadable.push(file);
                    None
                }
            };
        let hookd_layer =
            read_project_layer(LayerFile::Hookd, &LayerPaths::hookd_project(project_dir));
        let mut host_layers = Vec::new();
        let mut host_folder_files = Vec::new();
        // Kept apart while `read_project_layer` holds `diagnostics`.
        let mut folder_diagnostics = Vec::new();
        for host in &shared.env.host_layers {
            let folders = LayerPaths::host_project_folders(*host, project_dir);
            if !shared.host_trusts_project(*host, project_dir) {
                // The host itself would not run this repository's hooks: neither does hookd,
                // so a cloned repository's hook files cannot run through hookd either. Said
                // only where there are some.
                let trust_file = shared.paths.host_trust_file(*host);
                let has_files = folders.iter().any(|folder| folder.is_dir())
                    || LayerPaths::host_project(*host, project_dir)
                        .iter()
                        .any(|file| file.exists());
                if !has_files {
                    continue;
                }
                folder_diagnostics.push(
                    Diagnostic::info(format!(
                        "{} does not trust {} ({}): its hook files there are not read",
                        host.product(),
                        project_dir.display(),
                        trust_file.map_or_else(String::new, |file| format!(
                            "not in the trusted folders of {}",
                            file.display()
                        )),
                    ))
                    .with_path(folders.first().map_or(project_dir, PathBuf::as_path)),
                );
                continue;
            }
            let mut files = LayerPaths::host_project(*host, project_dir);
            for folder in &folders {
                let listing = list_layer_folder(*host, folder, Some(project_dir));
                folder_diagnostics.extend(listing.diagnostics);
                host_folder_files.extend(listing.files.iter().cloned());
                files.extend(listing.files);
            }
            for path in files {
                // In the home directory a project file may be the user file
                // (`~/.claude/settings.json`): it is read once, as the user's.
                let real = real_path(&path);
                if shared
                    .paths
                    .host_user_files(*host)
                    .any(|user| real_path(user) == real)
                {
                    continue;
                }
                host_layers.extend(read_project_layer(host.layer_file(), &path));
            }
        }
        diagnostics.extend(folder_diagnostics);
        let mut workspace_env = Vec::new();
        if trust.is_trusted() && !shared.extensions.is_empty() {
            let env_file = project_dir.join(".env");
            match read_optional(&env_file) {
                Ok(text) => workspace_env = text.map(|t| parse_dotenv(&t)).unwrap_or_default(),
                Err(err) => diagnostics.push(
                    Diagnostic::warning(format!("cannot read workspace extension settings: {err}"))
                        .with_path(env_file),
                ),
            }
        }
        ProjectLayer {
            project_dir: project_dir.to_owned(),
            trust,
            layer,
            hookd_layer,
            host_layers,
            host_folder_files,
            workspace_env,
            diagnostics,
            unreadable,
        }
    }
}

/// A workspace's registry input with the loader's own diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedWorkspace {
    /// What to build the registry from.
    pub input: RegistryInput,
    /// How folder trust was decided.
    pub trust: TrustDecision,
    /// Problems found while reading files (parse problems come from the registry build).
    pub diagnostics: Vec<Diagnostic>,
}

/// Combines the shared layers and one project into a registry input.
pub fn assemble(shared: &SharedLayers, project: &ProjectLayer) -> LoadedWorkspace {
    let trusted = project.trust.is_trusted();
    // Within a source the agent CLI's own file comes first, then hookd's, then the hosts'
    // own: the registry keeps this order within a source, and de-duplication keeps the
    // first copy.
    let (host_user, mut host_diagnostics) = convert_host_layers(&shared.host_layers);
    let (host_project, project_host_diagnostics) = convert_host_layers(&project.host_layers);
    host_diagnostics.extend(project_host_diagnostics);
    let mut layers = shared.layers.clone();
    layers.extend(host_user);
    layers.extend(project.layer.clone());
    layers.extend(project.hookd_layer.clone());
    layers.extend(host_project);
    let project_path = project.project_dir.to_string_lossy();
    let extensions = shared
        .extensions
        .iter()
        .map(|extension| {
            let rules = shared
                .enablement
                .get(&extension.name)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let setting_values = extension.user_env.clone();
            let workspace_setting_values = if trusted {
                project.workspace_env.clone()
            } else {
                Vec::new()
            };
            ExtensionInput {
                name: extension.name.clone(),
                path: extension.path.clone(),
                hooks_file: extension.hooks_file.clone(),
                hooks_text: extension.hooks_text.clone(),
                settings: extension.settings.clone(),
                setting_values,
                workspace_setting_values,
                active: extension_enabled_for_path(rules, &project_path),
            }
        })
        .collect();
    let mut diagnostics = shared.diagnostics.clone();
    diagnostics.extend(project.diagnostics.iter().cloned());
    diagnostics.extend(host_diagnostics);
    if let Some(reason) = project.trust.reason() {
        diagnostics.push(Diagnostic::info(format!(
            "the folder {} is not trusted ({reason})",
            project.project_dir.display()
        )));
    }
    LoadedWorkspace {
        input: RegistryInput {
            layers,
            extensions,
            workspace_path: project.project_dir.clone(),
            folder_trusted: trusted,
            env: shared.env.vars.clone(),
            hook_trust: read_hook_trust(shared, project),
            project_hooks: Default::default(),
        },
        trust: project.trust.clone(),
        diagnostics,
    }
}

/// Converts hosts' own settings files (layers of kind [`LayerFile::Host`]) into settings
/// layers of the same source, kind and path, each by its host's dialect. Each file's problems
/// (not JSON, hooks that cannot be converted) are diagnostics naming it. A layer of another
/// kind is kept as it is.
pub fn convert_host_layers(raw: &[LayerText]) -> (Vec<LayerText>, Vec<Diagnostic>) {
    let mut layers = Vec::new();
    let mut diagnostics = Vec::new();
    for layer in raw {
        let Some(host) = Dialect::of_layer(layer.file) else {
            layers.push(layer.clone());
            continue;
        };
        let root = match jsonc::parse(&layer.text) {
            Ok(root @ Value::Object(_)) => root,
            Ok(_) => {
                diagnostics.push(
                    Diagnostic::error(format!(
                        "{} settings file must contain a JSON object; layer ignored",
                        host.product()
                    ))
                    .with_path(&layer.path),
                );
                continue;
            }
            Err(err) => {
                diagnostics.push(
                    Diagnostic::error(format!("invalid JSON: {}; layer ignored", err.message))
                        .with_path(&layer.path)
                        .with_position(err.line, err.column),
                );
                continue;
            }
        };
        // A host whose hooks are hookd's shape already needs no conversion.
        let Some(conversion) = host
            .files()
            .convert_settings(&root, dialect::Purpose::Layer)
        else {
            layers.push(layer.clone());
            continue;
        };
        for problem in &conversion.problems {
            diagnostics.push(Diagnostic::warning(problem.to_string()).with_path(&layer.path));
        }
        let mut converted = serde_json::Map::new();
        converted.insert("hooks".to_owned(), Value::Object(conversion.hooks));
        layers.push(LayerText {
            source: layer.source,
            file: layer.file,
            path: layer.path.clone(),
            text: Value::Object(converted).to_string(),
        });
    }
    (layers, diagnostics)
}

/// Loads everything for one project directory at once.
pub fn load_workspace(env: LoaderEnv, project_dir: &Path) -> LoadedWorkspace {
    let shared = SharedLayers::load(env);
    let project = ProjectLayer::load(&shared, project_dir);
    assemble(&shared, &project)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookd_core::HookEventName;
    use hookd_core::matcher::MatchContext;
    use hookd_core::registry::Registry;
    use hookd_core::settings::Severity;

    /// The environment of a test, whose system files belong to whoever runs it.
    fn env(vars: &[(&str, &str)], home: &str) -> LoaderEnv {
        LoaderEnv::new(
            vars.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            home,
        )
        .with_system_owner(nix::unistd::geteuid().as_raw())
    }

    /// Checks user, system, system-defaults, trusted-folders and extensions paths.
    fn check_paths(vars: &[(&str, &str)], expected: [&Path; 5]) {
        let paths = LayerPaths::resolve(&env(vars, "/h"));
        let got = [
            paths.user.as_path(),
            &paths.system,
            &paths.system_defaults,
            &paths.trusted_folders,
            &paths.extensions_dir,
        ];
        assert_eq!(got, expected, "{vars:?}");
        assert_eq!(
            paths.extension_enablement,
            paths.extensions_dir.join("extension-enablement.json")
        );
    }

    #[test]
    fn paths_follow_the_environment() {
        let system = default_system_settings();
        let defaults = system
            .parent()
            .unwrap_or(Path::new("/"))
            .join("system-defaults.json");
        let p = Path::new;
        check_paths(
            &[],
            [
                p("/h/.gemini/settings.json"),
                &system,
                &defaults,
                p("/h/.gemini/trustedFolders.json"),
                p("/h/.gemini/extensions"),
            ],
        );
        check_paths(
            &[
                ("GEMINI_CLI_HOME", "/g"),
                ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "/s/sys.json"),
            ],
            [
                p("/g/.gemini/settings.json"),
                p("/s/sys.json"),
                p("/s/system-defaults.json"),
                p("/g/.gemini/trustedFolders.json"),
                p("/g/.gemini/extensions"),
            ],
        );
        // Empty variables count as unset.
        check_paths(
            &[
                ("GEMINI_CLI_HOME", ""),
                ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", ""),
                ("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "/d.json"),
                ("GEMINI_CLI_TRUSTED_FOLDERS_PATH", "/t.json"),
            ],
            [
                p("/h/.gemini/settings.json"),
                &system,
                p("/d.json"),
                p("/t.json"),
                p("/h/.gemini/extensions"),
            ],
        );
    }

    fn check_dotenv(text: &str, expected: &[(&str, &str)]) {
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(parse_dotenv(text), expected, "{text:?}");
    }

    #[test]
    fn dotenv_files_parse_like_the_dotenv_package() {
        check_dotenv("A=1\nB = two words \n", &[("A", "1"), ("B", "two words")]);
        check_dotenv(
            "# comment\n\nexport C=3\r\nD: 4\nE:5\n",
            &[("C", "3"), ("D", "4")],
        );
        check_dotenv("F=x # note\nG=x#y\n", &[("F", "x"), ("G", "x")]);
        check_dotenv(
            "H='a # b'\nI=\"l1\\nl2\"\nJ='l1\\nl2'\n",
            &[("H", "a # b"), ("I", "l1\nl2"), ("J", "l1\\nl2")],
        );
        check_dotenv(
            "K=\"multi\nline\"\nL=after\n",
            &[("K", "multi\nline"), ("L", "after")],
        );
        check_dotenv(
            "M=`back`  # c\nN=\"a\\\"b\"\n",
            &[("M", "back"), ("N", "a\\\"b")],
        );
        check_dotenv(
            "O=\"unterminated\nP=1\n",
            &[("O", "\"unterminated"), ("P", "1")],
        );
        check_dotenv("Q=\"a\" b\n", &[("Q", "\"a\" b")]);
        check_dotenv(
            "R=\nR=2\nS.t-u=v\nnot a line\n=x\n",
            &[("R", "2"), ("S.t-u", "v")],
        );
    }

    /// A scratch home, system directory and project.
    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    impl Fixture {
        fn new() -> Fixture {
            let dir = tempfile::tempdir().expect("tempdir");
            let root = fs::canonicalize(dir.path()).expect("canonical");
            Fixture { _dir: dir, root }
        }

        fn path(&self, relative: &str) -> PathBuf {
            self.root.join(relative)
        }

        fn write(&self, relative: &str, text: &str) {
            let path = self.path(relative);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(path, text).expect("write");
        }

        fn env(&self, extra: &[(&str, &str)]) -> LoaderEnv {
            let system = self.path("etc/settings.json");
            let managed = self.path("etc/hookd/hooks.json");
            let mut vars: Vec<(&str, &str)> = vec![
                (
                    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
                    system.to_str().expect("utf-8"),
                ),
                ("HOOKD_MANAGED_HOOKS", managed.to_str().expect("utf-8")),
            ];
            vars.extend_from_slice(extra);
            let mut loader_env = env(&vars, self.path("home").to_str().expect("utf-8"))
                .with_system_trusted_above(Some(self.root.clone()));
            loader_env.vars.insert("ME".to_owned(), "me".to_owned());
            loader_env
        }

        fn load(&self, extra: &[(&str, &str)]) -> (LoadedWorkspace, Registry) {
            let loaded = load_workspace(self.env(extra), &self.path("project"));
            let registry = Registry::build(&loaded.input);
            (loaded, registry)
        }
    }

    fn hook(name: &str) -> String {
        format!(
            r#"{{"hooks": {{"BeforeTool": [{{"hooks": [{{"type": "command", "name": "{name}", "command": "run $ME"}}]}}]}}}}"#
        )
    }

    fn summary(registry: &Registry) -> Vec<String> {
        registry
            .entries()
            .map(|e| {
                format!(
                    "{} {} {}",
                    e.source,
                    e.config.display_name(),
                    e.config.command.as_deref().unwrap_or("")
                )
            })
            .collect()
    }

    #[test]
    fn all_layers_are_read_and_labelled() {
        let fx = Fixture::new();
        fx.write("home/.gemini/settings.json", &hook("user"));
        fx.write("etc/settings.json", &hook("system"));
        fx.write("etc/system-defaults.json", &hook("defaults"));
        fx.write(
            "project/.gemini/settings.json",
            &format!("// jsonc\n{}", hook("project")),
        );
        let (loaded, registry) = fx.load(&[]);
        assert_eq!(loaded.trust, TrustDecision::FeatureDisabled);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert_eq!(
            summary(&registry),
            [
                "project project run me",
                "user user run me",
                "system system run me",
                "system-defaults defaults run me"
            ]
        );
        let plan = registry
            .plan(HookEventName::BeforeTool, &MatchContext::tool("read_file"))
            .expect("plan");
        assert_eq!(
            plan.hooks[0].origin.path.as_deref(),
            Some(fx.path("project/.gemini/settings.json").as_path())
        );
    }

    #[test]
    fn hookd_files_are_layers_after_the_cli_files_of_their_scope() {
        let fx = Fixture::new();
        fx.write("home/.gemini/settings.json", &hook("user"));
        fx.write("home/.config/hookd/hooks.json", &hook("hookd-user"));
        fx.write("project/.gemini/settings.json", &hook("project"));
        fx.write(
            "project/.hookd/hooks.json",
            &format!("// hookd's own file\n{}", hook("hookd-project")),
        );
        let (loaded, registry) = fx.load(&[]);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert_eq!(
            summary(&registry),
            [
                "project project run me",
                "project hookd-project run me",
                "user user run me",
                "user hookd-user run me",
            ]
        );
        let origins: Vec<PathBuf> = registry
            .entries()
            .filter_map(|entry| entry.origin.path.clone())
            .collect();
        assert_eq!(
            origins,
            [
                fx.path("project/.gemini/settings.json"),
                fx.path("project/.hookd/hooks.json"),
                fx.path("home/.gemini/settings.json"),
                fx.path("home/.config/hookd/hooks.json"),
            ]
        );

        // XDG_CONFIG_HOME moves hookd's user file; the same hook in both files of a scope
        // runs once, from the CLI's file.
        let xdg = fx.path("xdg");
        let xdg = xdg.to_str().expect("utf-8");
        fx.write("xdg/hookd/hooks.json", &hook("user"));
        let (_, registry) = fx.load(&[("XDG_CONFIG_HOME", xdg)]);
        assert_eq!(
            summary(&registry),
            [
                "project project run me",
                "project hookd-project run me",
                "user user run me",
                "user user run me"
            ]
        );
        let plan = registry
            .plan(HookEventName::BeforeTool, &MatchContext::tool("read_file"))
            .expect("plan");
        let planned: Vec<(&str, Option<&Path>)> = plan
            .hooks
            .iter()
            .map(|hook| (hook.config.display_name(), hook.origin.path.as_deref()))
            .collect();
        let user_file = fx.path("home/.gemini/settings.json");
        assert_eq!(planned[2], ("user", Some(user_file.as_path())));
        assert_eq!(planned.len(), 3, "{planned:?}");

        // An untrusted folder runs neither project file.
        let (_, registry) = fx.load(&[("GEMINI_CLI_TRUST_WORKSPACE", "false")]);
        assert_eq!(registry.entries().len(), 0);
    }

    #[test]
    fn hookd_project_hooks_need_project_hook_trust() {
        let fx = Fixture::new();
        let xdg = fx.path("config");
        let xdg = xdg.to_str().expect("utf-8");
        fx.write(
            "project/.hookd/hooks.json",
            r#"{"hooks": {"BeforeTool": [{"hooks": [
                {"type": "command", "name": "guard", "command": "bash $GEMINI_PROJECT_DIR/g.sh"}
            ]}]}}"#,
        );
        fx.write("project/g.sh", "echo v1\n");
        let shared = SharedLayers::load(fx.env(&[("XDG_CONFIG_HOME", xdg)]));
        let project = ProjectLayer::load(&shared, &fx.path("project"));
        let input = read_hook_trust(&shared, &project);
        assert_eq!(input.scripts.len(), 1);
        assert_eq!(input.scripts[0].path, fx.path("project/g.sh"));
        assert_eq!(
            project_trust(&fx, &[("XDG_CONFIG_HOME", xdg)]),
            [("guard".to_owned(), "untrusted")]
        );
    }

    /// `(source, event, command, origin file relative to the fixture, dialect)` of every hook.
    fn claude_summary(fx: &Fixture, registry: &Registry) -> Vec<String> {
        registry
            .entries()
            .map(|entry| {
                let origin = entry.origin.path.clone().unwrap_or_default();
                let origin = origin.strip_prefix(&fx.root).unwrap_or(&origin).to_owned();
                format!(
                    "{} {} {} {} {}",
                    entry.source,
                    entry.event,
                    entry.config.command.as_deref().unwrap_or(""),
                    origin.display(),
                    entry.config.dialect()
                )
            })
            .collect()
    }

    #[test]
    fn claude_settings_are_layers_only_when_enabled() {
        let fx = Fixture::new();
        let claude = |command: &str| {
            format!(
                r#"{{"permissions": {{"allow": []}}, "hooks": {{"PreToolUse": [{{"matcher": "Bash", "hooks": [{{"type": "command", "command": "{command}", "timeout": 5}}]}}]}}}}"#
            )
        };
        fx.write("home/.gemini/settings.json", &hook("user"));
        fx.write("home/.claude/settings.json", &claude("claude-user"));
        fx.write("project/.claude/settings.json", &claude("claude-project"));
        fx.write(
            "project/.claude/settings.local.json",
            &claude("claude-local"),
        );

        // Off (the default): Claude Code's files are not read.
        let (loaded, registry) = fx.load(&[]);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert_eq!(summary(&registry), ["user user run me"]);

        let load_with_claude = || {
            let env = fx.env(&[]).with_host_layers(vec![Dialect::CLAUDE]);
            let loaded = load_workspace(env, &fx.path("project"));
            let registry = Registry::build(&loaded.input);
            (loaded, registry)
        };
        let (loaded, registry) = load_with_claude();
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert_eq!(
            claude_summary(&fx, &registry),
            [
                "project BeforeTool claude-project project/.claude/settings.json claude",
                "project BeforeTool claude-local project/.claude/settings.local.json claude",
                "user BeforeTool run me home/.gemini/settings.json gemini",
                "user BeforeTool claude-user home/.claude/settings.json claude",
            ]
        );
        // Claude's seconds are hookd's milliseconds; the Bash matcher selects Gemini's shell.
        let plan = registry
            .plan(
                HookEventName::BeforeTool,
                &MatchContext::tool("run_shell_command"),
            )
            .expect("plan");
        assert_eq!(plan.hooks.len(), 4);
        assert_eq!(plan.hooks[0].config.timeout_ms(), 5000);
        assert!(
            registry
                .plan(HookEventName::BeforeTool, &MatchContext::tool("read_file"))
                .is_some_and(|plan| plan.hooks.len() == 1)
        );

        // A broken file is an error naming it; a hook hookd cannot run is a warning naming it.
        fx.write("project/.claude/settings.json", "{ broken");
        fx.write(
            "home/.claude/settings.json",
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}]}}"#,
        );
        let (loaded, registry) = load_with_claude();
        let problems: Vec<(Severity, PathBuf)> = loaded
            .diagnostics
            .iter()
            .map(|d| (d.severity, d.path.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            problems,
            [
                (Severity::Warning, fx.path("home/.claude/settings.json")),
                (Severity::Error, fx.path("project/.claude/settings.json")),
            ],
            "{:?}",
            loaded.diagnostics
        );
        assert_eq!(
            claude_summary(&fx, &registry),
            [
                "project BeforeTool claude-local project/.claude/settings.local.json claude",
                "user BeforeTool run me home/.gemini/settings.json gemini",
            ]
        );

        // In the home directory the project's .claude/settings.json is the user file.
        fx.write("home/.claude/settings.json", &claude("claude-user"));
        let env = fx.env(&[]).with_host_layers(vec![Dialect::CLAUDE]);
        let registry = Registry::build(&load_workspace(env, &fx.path("home")).input);
        assert_eq!(
            claude_summary(&fx, &registry),
            [
                "user BeforeTool run me home/.gemini/settings.json gemini",
                "user BeforeTool claude-user home/.claude/settings.json claude",
            ]
        );
    }

    fn copilot_hooks(command: &str) -> String {
        format!(
            r#"{{"version": 1, "hooks": {{"preToolUse": [{{"type": "command", "bash": "{command}", "timeoutSec": 5}}]}}}}"#
        )
    }

    #[test]
    fn copilot_hooks_folders_are_layers_only_when_enabled_and_trusted() {
        let fx = Fixture::new();
        fx.write("home/.copilot/hooks/b.json", &copilot_hooks("user-b"));
        fx.write("home/.copilot/hooks/a.json", &copilot_hooks("user-a"));
        // hookd's own relay file, a hidden file and a file of another kind are no layers.
        fx.write("home/.copilot/hooks/hookd.json", &copilot_hooks("relay"));
        fx.write("home/.copilot/hooks/.a.json.swp", &copilot_hooks("swap"));
        fx.write("home/.copilot/hooks/notes.txt", &copilot_hooks("notes"));
        fx.write("project/.github/hooks/guard.json", &copilot_hooks("repo"));
        // Inline hooks of Copilot's settings files, beside their other settings.
        let inline = |command: &str| copilot_hooks(command).replacen('{', r#"{"model": "m", "#, 1);
        fx.write("home/.copilot/settings.json", &inline("user-inline"));
        fx.write(
            "project/.github/copilot/settings.local.json",
            &inline("repo-inline"),
        );
        // A file that disables its own hooks.
        fx.write(
            "home/.copilot/hooks/off.json",
            &copilot_hooks("off").replacen('{', r#"{"disableAllHooks": true, "#, 1),
        );
        let project = fx.path("project");
        // As Copilot CLI writes it, with comments.
        let config = format!(
            "// This file is managed automatically.\n{{\"trustedFolders\": [\"{}\"]}}",
            project.display()
        );
        let load = |hosts: Vec<Dialect>| {
            let env = fx.env(&[]).with_host_layers(hosts);
            let loaded = load_workspace(env, &project);
            let registry = Registry::build(&loaded.input);
            (loaded, registry)
        };

        // Off (the default): Copilot's files are not read.
        let (_, registry) = load(vec![]);
        assert!(claude_summary(&fx, &registry).is_empty());

        // On, in a project Copilot does not trust: the user's files only, said once.
        let (loaded, registry) = load(vec![Dialect::COPILOT]);
        assert_eq!(
            claude_summary(&fx, &registry),
            [
                "user BeforeTool user-inline home/.copilot/settings.json copilot",
                "user BeforeTool user-a home/.copilot/hooks/a.json copilot",
                "user BeforeTool user-b home/.copilot/hooks/b.json copilot",
            ]
        );
        let untrusted: Vec<&str> = loaded
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.message.as_str())
            .collect();
        // The disabled file's note, and the untrusted project's.
        assert!(
            untrusted.len() == 2
                && untrusted[0].contains("does not trust")
                && untrusted[1].contains("disableAllHooks"),
            "{untrusted:?}"
        );

        // Trusted: the repository's files too, converted with their timeout in seconds.
        fx.write("home/.copilot/config.json", &config);
        fs::remove_file(fx.path("home/.copilot/hooks/off.json")).expect("remove");
        let (loaded, registry) = load(vec![Dialect::COPILOT]);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert_eq!(
            claude_summary(&fx, &registry),
            [
                "project BeforeTool repo-inline project/.github/copilot/settings.local.json copilot",
                "project BeforeTool repo project/.github/hooks/guard.json copilot",
                "user BeforeTool user-inline home/.copilot/settings.json copilot",
                "user BeforeTool user-a home/.copilot/hooks/a.json copilot",
                "user BeforeTool user-b home/.copilot/hooks/b.json copilot",
            ]
        );
        let plan = registry
            .plan(
                HookEventName::BeforeTool,
                &MatchContext::tool("run_shell_command"),
            )
            .expect("plan");
        assert_eq!(plan.hooks[0].config.timeout_ms(), 5000);

        // A broken file is an error naming it; the others still load.
        fx.write("home/.copilot/hooks/a.json", "{ broken");
        let (loaded, registry) = load(vec![Dialect::COPILOT]);
        let problems: Vec<(Severity, PathBuf)> = loaded
            .diagnostics
            .iter()
            .map(|d| (d.severity, d.path.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            problems,
            [(Severity::Error, fx.path("home/.copilot/hooks/a.json"))]
        );
        assert_eq!(claude_summary(&fx, &registry).len(), 4);
    }

    #[test]
    fn copilot_hooks_folders_are_bounded() {
        use std::os::unix::fs::symlink;
        let fx = Fixture::new();
        let project = fx.path("project");
        fx.write(
            "home/.copilot/config.json",
            &format!(r#"{{"trustedFolders": ["{}"]}}"#, project.display()),
        );
        // More files than are read: the first by name are.
        for index in 0..MAX_LAYER_FOLDER_FILES + 3 {
            fx.write(
                &format!("home/.copilot/hooks/h{index:03}.json"),
                &copilot_hooks(&format!("u{index:03}")),
            );
        }
        // A project file linking out of the project is refused; one linking inside is read.
        fx.write("secret/key.json", &copilot_hooks("outside"));
        fx.write("project/tools/inside.json", &copilot_hooks("inside"));
        fs::create_dir_all(fx.path("project/.github/hooks")).expect("mkdir");
        symlink(
            fx.path("secret/key.json"),
            fx.path("project/.github/hooks/a.json"),
        )
        .expect("symlink");
        symlink(
            "../../tools/inside.json",
            fx.path("project/.github/hooks/b.json"),
        )
        .expect("symlink");
        // A FIFO is not read (and does not stall the load); a directory is not a file.
        let fifo = fx.path("project/.github/hooks/c.json");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(status.success());
        fs::create_dir_all(fx.path("project/.github/hooks/d.json")).expect("mkdir");
        // Too large a file is not read.
        fx.write(
            "project/.github/hooks/e.json",
            &" ".repeat(
                usize::try_from(crate::configfile::MAX_CONFIG_FILE_BYTES).expect("size") + 1,
            ),
        );

        let env = fx.env(&[]).with_host_layers(vec![Dialect::COPILOT]);
        let loaded = load_workspace(env, &project);
        let registry = Registry::build(&loaded.input);
        let summary = claude_summary(&fx, &registry);
        let project_hooks: Vec<&String> = summary
            .iter()
            .filter(|line| line.starts_with("project"))
            .collect();
        assert_eq!(
            project_hooks,
            ["project BeforeTool inside project/.github/hooks/b.json copilot"]
        );
        let user = summary
            .iter()
            .filter(|line| line.starts_with("user"))
            .count();
        assert_eq!(user, MAX_LAYER_FOLDER_FILES);
        assert!(summary.iter().any(|line| line.contains(" u000 ")));
        assert!(
            !summary
                .iter()
                .any(|line| line.contains(&format!(" u{MAX_LAYER_FOLDER_FILES:03} ")))
        );
        let problems: Vec<(Severity, PathBuf)> = loaded
            .diagnostics
            .iter()
            .map(|d| (d.severity, d.path.clone().unwrap_or_default()))
            .collect();
        for expected in [
            (Severity::Warning, fx.path("home/.copilot/hooks")),
            (Severity::Error, fx.path("project/.github/hooks/a.json")),
            (Severity::Error, fx.path("project/.github/hooks/c.json")),
            (Severity::Error, fx.path("project/.github/hooks/d.json")),
            (Severity::Error, fx.path("project/.github/hooks/e.json")),
        ] {
            assert!(problems.contains(&expected), "{expected:?} in {problems:?}");
        }
        assert_eq!(problems.len(), 5, "{problems:?}");
    }

    #[test]
    fn system_files_gemini_cli_refuses_are_not_loaded() {
        use std::os::unix::fs::PermissionsExt;
        let fx = Fixture::new();
        fx.write("etc/settings.json", &hook("system"));
        fx.write("etc/system-defaults.json", &hook("defaults"));
        fx.write("home/.gemini/settings.json", &hook("user"));
        let chmod = |relative: &str, mode: u32| {
            fs::set_permissions(fx.path(relative), fs::Permissions::from_mode(mode))
                .expect("chmod");
        };
        chmod("etc", 0o755);
        /// (etc mode, settings mode, defaults mode, hooks loaded, files refused)
        type Case = (
            u32,
            u32,
            u32,
            &'static [&'static str],
            &'static [&'static str],
        );
        let cases: [Case; 4] = [
            (0o755, 0o644, 0o644, &["user", "system", "defaults"], &[]),
            (
                0o755,
                0o664,
                0o644,
                &["user", "defaults"],
                &["settings.json"],
            ),
            (
                0o755,
                0o644,
                0o646,
                &["user", "system"],
                &["system-defaults.json"],
            ),
            (
                0o777,
                0o644,
                0o644,
                &["user"],
                &["settings.json", "system-defaults.json"],
            ),
        ];
        for (etc, settings, defaults, loaded, refused) in cases {
            chmod("etc", etc);
            chmod("etc/settings.json", settings);
            chmod("etc/system-defaults.json", defaults);
            let (workspace, registry) = fx.load(&[]);
            let names: Vec<&str> = registry
                .entries()
                .map(|entry| entry.config.display_name())
                .collect();
            assert_eq!(names, loaded, "{etc:o} {settings:o} {defaults:o}");
            let warned: Vec<String> = workspace
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Warning && d.message.contains("not loaded"))
                .filter_map(|d| d.path.as_ref())
                .filter_map(|path| path.file_name())
                .map(|name| name.to_string_lossy().into_owned())
                .collect();
            assert_eq!(warned, refused, "{etc:o} {settings:o} {defaults:o}");
        }
        chmod("etc", 0o755);
    }

    #[test]
    fn the_managed_file_loads_first_only_when_root_could_write_it_alone() {
        use std::os::unix::fs::PermissionsExt;
        let fx = Fixture::new();
        fx.write("etc/hookd/hooks.json", &hook("managed"));
        fx.write("home/.gemini/settings.json", &hook("user"));
        let chmod = |relative: &str, mode: u32| {
            fs::set_permissions(fx.path(relative), fs::Permissions::from_mode(mode))
                .expect("chmod");
        };
        chmod("etc", 0o755);
        let root = nix::unistd::geteuid().is_root();
        // (etc/hookd mode, file mode, file owner (root only), loaded, refusal reason)
        type Case = (
            u32,
            u32,
            Option<u32>,
            &'static [&'static str],
            Option<&'static str>,
        );
        let mut cases: Vec<Case> = vec![
            (0o755, 0o644, None, &["managed", "user"], None),
            (
                0o755,
                0o664,
                None,
                &["user"],
                Some("hooks.json is writable by its group or others"),
            ),
            (
                0o755,
                0o646,
                None,
                &["user"],
                Some("writable by its group or others (mode 646"),
            ),
            (
                0o775,
                0o644,
                None,
                &["user"],
                Some("hookd is writable by its group or others"),
            ),
        ];
        if root {
            // Given to another user: only root may own what every user must run.
            cases.push((
                0o755,
                0o644,
                Some(65534),
                &["user"],
                Some("is owned by uid 65534"),
            ));
        }
        for (dir, file, owner, loaded, refused) in cases {
            chmod("etc/hookd", dir);
            chmod("etc/hookd/hooks.json", file);
            let uid = owner.unwrap_or(0);
            if root {
                nix::unistd::chown(
                    &fx.path("etc/hookd/hooks.json"),
                    Some(nix::unistd::Uid::from_raw(uid)),
                    None,
                )
                .expect("chown");
            }
            let (workspace, registry) = fx.load(&[]);
            let names: Vec<String> = registry
                .entries()
                .map(|entry| entry.config.display_name().to_owned())
                .collect();
            assert_eq!(names, loaded, "{dir:o} {file:o} {owner:?}");
            if let Some(entry) = registry.entries().next().filter(|_| refused.is_none()) {
                assert_eq!(entry.source, Source::Managed);
            }
            let errors: Vec<&str> = workspace
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .filter(|d| d.path.as_deref() == Some(fx.path("etc/hookd/hooks.json").as_path()))
                .map(|d| d.message.as_str())
                .collect();
            match refused {
                None => assert!(errors.is_empty(), "{errors:?}"),
                Some(reason) => assert!(
                    errors.len() == 1
                        && errors[0].contains("managed hooks file refused")
                        && errors[0].contains(reason),
                    "{dir:o} {file:o}: {errors:?}"
                ),
            }
        }
    }

    #[test]
    fn missing_files_are_silent_and_unreadable_ones_reported() {
        let fx = Fixture::new();
        // A directory where the user file should be cannot be read.
        fs::create_dir_all(fx.path("home/.gemini/settings.json")).expect("mkdir");
        fx.write("project/.gemini/settings.json", "{ broken");
        let (loaded, registry) = fx.load(&[]);
        let errors: Vec<&Diagnostic> = loaded.diagnostics.iter().collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].severity, Severity::Error);
        assert_eq!(
            errors[0].path.as_deref(),
            Some(fx.path("home/.gemini/settings.json").as_path())
        );
        assert!(registry.entries().next().is_none());
        // The broken project file is reported by the registry build, with its position.
        let parse_errors: Vec<String> = registry
            .diagnostics()
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert_eq!(parse_errors.len(), 1, "{parse_errors:?}");
        assert!(
            parse_errors[0].contains("project/.gemini/settings.json:1:3"),
            "{parse_errors:?}"
        );
    }

    #[test]
    fn the_home_directory_is_not_its_own_project() {
        let fx = Fixture::new();
        fx.write("home/.gemini/settings.json", &hook("user"));
        let loaded = load_workspace(fx.env(&[]), &fx.path("home"));
        let registry = Registry::build(&loaded.input);
        assert_eq!(summary(&registry), ["user user run me"]);
    }

    fn write_extension(fx: &Fixture, dir: &str, name: &str, hooks: Option<&str>) {
        fx.write(
            &format!("{dir}/gemini-extension.json"),
            &format!(
                r#"{{"name": "{name}", "version": "1.0.0", "settings": [{{"name": "Key", "envVar": "KEY"}}, {{"name": "bad"}}]}}"#
            ),
        );
        if let Some(hooks) = hooks {
            fx.write(&format!("{dir}/hooks/hooks.json"), hooks);
        }
    }

    const EXT_HOOKS: &str = r#"{"hooks": {"BeforeTool": [{"hooks": [
        {"type": "command", "command": "${extensionPath}${/}gate.sh ${KEY} ${OTHER}"}]}]}}"#;

    #[test]
    fn extensions_are_found_hydrated_and_enabled_per_path() {
        let fx = Fixture::new();
        let exts = "home/.gemini/extensions";
        write_extension(&fx, &format!("{exts}/b-ext"), "b-ext", Some(EXT_HOOKS));
        fx.write(&format!("{exts}/b-ext/.env"), "KEY=user-key\nOTHER=o\n");
        // A linked install: the files live elsewhere; the .env stays under the name.
        write_extension(&fx, "src/linked", "a-linked", Some(EXT_HOOKS));
        let source = fx.path("src/linked");
        fx.write(
            &format!("{exts}/a-linked/.gemini-extension-install.json"),
            &format!(r#"{{"type": "link", "source": "{}"}}"#, source.display()),
        );
        // Skipped: no manifest, a bad name, a duplicate name; a plain file is not an extension.
        fs::create_dir_all(fx.path(&format!("{exts}/c-empty"))).expect("mkdir");
        write_extension(&fx, &format!("{exts}/d-bad"), "bad name", None);
        write_extension(&fx, &format!("{exts}/e-dup"), "b-ext", Some(EXT_HOOKS));
        // Disabled for the project only.
        write_extension(&fx, &format!("{exts}/f-off"), "f-off", Some(EXT_HOOKS));
        fx.write(
            &format!("{exts}/extension-enablement.json"),
            &format!(
                r#"{{"f-off": {{"overrides": ["!{}/*"]}}}}"#,
                fx.path("project").display()
            ),
        );
        fx.write("project/.env", "KEY=workspace-key\n");

        let (loaded, registry) = fx.load(&[]);
        let warnings: Vec<String> = loaded
            .diagnostics
            .iter()
            .map(|d| format!("{} {}", d.severity, d.message))
            .collect();
        assert_eq!(
            warnings,
            [
                "warning skipping extension: configuration file not found",
                "warning skipping extension: Invalid extension name: \"bad name\". Only letters \
                 (a-z, A-Z), numbers (0-9), and dashes (-) are allowed.",
                "warning skipping extension: an extension named \"b-ext\" is already loaded",
            ]
        );
        let names: Vec<&str> = loaded
            .input
            .extensions
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, ["a-linked", "b-ext", "f-off"]);
        let active: Vec<bool> = loaded.input.extensions.iter().map(|e| e.active).collect();
        assert_eq!(active, [true, true, false]);
        assert_eq!(
            loaded.input.extensions[1].settings,
            [ExtensionSetting {
                name: "Key".to_owned(),
                env_var: "KEY".to_owned()
            }]
        );

        let commands: Vec<&str> = registry
            .entries()
            .map(|e| e.config.command.as_deref().unwrap_or(""))
            .collect();
        assert_eq!(
            commands,
            [
                format!("{}/gate.sh workspace-key ${{OTHER}}", source.display()),
                format!(
                    "{}/gate.sh workspace-key o",
                    fx.path(&format!("{exts}/b-ext")).display()
                ),
            ]
        );
        let env: Vec<Vec<(String, String)>> =
            registry.entries().map(|e| e.config.env.clone()).collect();
        let key = |v: &str| vec![("KEY".to_owned(), v.to_owned())];
        assert_eq!(env, [key("workspace-key"), key("workspace-key")]);

        // Untrusted: the project's .env is not read; extension hooks still run.
        let (loaded, registry) = fx.load(&[("GEMINI_CLI_TRUST_WORKSPACE", "false")]);
        assert_eq!(loaded.trust, TrustDecision::ForcedByEnv(false));
        let env: Vec<Vec<(String, String)>> =
            registry.entries().map(|e| e.config.env.clone()).collect();
        assert_eq!(env, [Vec::new(), key("user-key")]);
    }

    /// The settings and files one folder-trust case is decided from.
    struct TrustCase<'a> {
        user: &'a str,
        system: &'a str,
        project: &'a str,
        trusted_folders: Option<String>,
        vars: &'a [(&'a str, &'a str)],
    }

    fn check_trust(fx: &Fixture, case: TrustCase<'_>, expected: TrustDecision) {
        fx.write("home/.gemini/settings.json", case.user);
        fx.write("etc/settings.json", case.system);
        let mut project: Value = serde_json::from_str(case.project).expect("project json");
        project["hooks"] = serde_json::json!(
            {"BeforeTool": [{"hooks": [{"type": "command", "command": "p"}]}]}
        );
        fx.write("project/.gemini/settings.json", &project.to_string());
        let trusted_path = fx.path("home/.gemini/trustedFolders.json");
        match &case.trusted_folders {
            Some(text) => fx.write("home/.gemini/trustedFolders.json", text),
            None => {
                let _ = fs::remove_file(&trusted_path);
            }
        }
        let (loaded, registry) = fx.load(case.vars);
        let label = format!(
            "user {} system {} project {} rules {:?} vars {:?}",
            case.user, case.system, case.project, case.trusted_folders, case.vars
        );
        assert_eq!(loaded.trust, expected, "{label}");
        // Untrusted folders run no settings hooks.
        let expected_hooks = usize::from(expected.is_trusted());
        assert_eq!(registry.entries().len(), expected_hooks, "{label}");
        // Only an invalid rules file is an error.
        let has_error = loaded
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error);
        assert_eq!(
            has_error,
            expected == TrustDecision::InvalidRules,
            "{label}"
        );
    }

    #[test]
    fn folder_trust_decisions() {
        let fx = Fixture::new();
        let on = r#"{"security": {"folderTrust": {"enabled": true}}}"#;
        let off = r#"{"security": {"folderTrust": {"enabled": false}}}"#;
        let parent = fx.root.display().to_string();
        let project = fx.path("project").display().to_string();
        let rules = |pairs: &[(&str, &str)]| {
            let body: Vec<String> = pairs
                .iter()
                .map(|(path, level)| format!("\"{path}\": \"{level}\""))
                .collect();
            Some(format!("// rules\n{{{}}}", body.join(", ")))
        };
        let case = |user, system, project, trusted_folders, vars| TrustCase {
            user,
            system,
            project,
            trusted_folders,
            vars,
        };
        use TrustDecision::*;
        check_trust(&fx, case("{}", "{}", "{}", None, &[]), FeatureDisabled);
        check_trust(&fx, case(on, "{}", "{}", None, &[]), NoRule);
        // The project cannot switch the feature off for itself.
        check_trust(&fx, case(on, "{}", off, None, &[]), NoRule);
        // The system file wins over the user file.
        check_trust(&fx, case(on, off, "{}", None, &[]), FeatureDisabled);
        let trust_parent_dir = rules(&[(&parent, "TRUST_FOLDER")]);
        check_trust(&fx, case(on, "{}", "{}", trust_parent_dir, &[]), Rule(true));
        // The longest rule wins.
        let deny_project = rules(&[(&parent, "TRUST_FOLDER"), (&project, "DO_NOT_TRUST")]);
        check_trust(&fx, case(on, "{}", "{}", deny_project, &[]), Rule(false));
        let trust_parent = rules(&[(&format!("{project}/sub"), "TRUST_PARENT")]);
        check_trust(&fx, case(on, "{}", "{}", trust_parent, &[]), Rule(true));
        let elsewhere = rules(&[(&format!("{parent}/elsewhere"), "TRUST_FOLDER")]);
        check_trust(&fx, case(on, "{}", "{}", elsewhere, &[]), NoRule);
        let not_object = Some("[]".to_owned());
        check_trust(&fx, case(on, "{}", "{}", not_object, &[]), InvalidRules);
        let bad_level = rules(&[(&parent, "TRUST_ALL")]);
        check_trust(&fx, case(on, "{}", "{}", bad_level, &[]), InvalidRules);
        let force_on: &[(&str, &str)] = &[("GEMINI_CLI_TRUST_WORKSPACE", "true")];
        check_trust(&fx, case(on, "{}", "{}", None, force_on), ForcedByEnv(true));
        let force_off: &[(&str, &str)] = &[("GEMINI_CLI_TRUST_WORKSPACE", "false")];
        check_trust(
            &fx,
            case("{}", "{}", "{}", None, force_off),
            ForcedByEnv(false),
        );
        let other: &[(&str, &str)] = &[("GEMINI_CLI_TRUST_WORKSPACE", "yes")];
        check_trust(&fx, case(on, "{}", "{}", None, other), NoRule);
    }

    #[test]
    fn trust_rules_resolve_symlinks() {
        let fx = Fixture::new();
        fs::create_dir_all(fx.path("real/project")).expect("mkdir");
        std::os::unix::fs::symlink(fx.path("real"), fx.path("link")).expect("symlink");
        let folders = TrustedFolders {
            path: PathBuf::new(),
            rules: vec![(
                fx.path("link").display().to_string(),
                TrustLevel::TrustFolder,
            )],
            errors: Vec::new(),
        };
        assert_eq!(
            folders.is_path_trusted(&fx.path("real/project")),
            Some(true)
        );
        assert_eq!(
            folders.is_path_trusted(&fx.path("link/project")),
            Some(true)
        );
        assert_eq!(folders.is_path_trusted(&fx.path("realm")), None);
    }

    #[test]
    fn the_trust_store_lives_in_the_config_dir() {
        // (variables, store path); the home directory is /h.
        let cases: [(&[(&str, &str)], &str); 4] = [
            (&[], "/h/.config/hookd/trusted-hooks.json"),
            (&[("XDG_CONFIG_HOME", "/x")], "/x/hookd/trusted-hooks.json"),
            // A relative XDG_CONFIG_HOME is ignored, as the XDG specification says, and the
            // store follows the real home, not a Gemini CLI profile.
            (
                &[("XDG_CONFIG_HOME", "rel"), ("GEMINI_CLI_HOME", "/g")],
                "/h/.config/hookd/trusted-hooks.json",
            ),
            (
                &[("XDG_CONFIG_HOME", "")],
                "/h/.config/hookd/trusted-hooks.json",
            ),
        ];
        for (vars, expected) in cases {
            let paths = LayerPaths::resolve(&env(vars, "/h"));
            assert_eq!(paths.trusted_hooks, Path::new(expected), "{vars:?}");
        }
    }

    /// `(display name, trust)` of every project hook of the fixture's project.
    fn project_trust(fx: &Fixture, vars: &[(&str, &str)]) -> Vec<(String, &'static str)> {
        let (loaded, registry) = fx.load(vars);
        assert!(
            loaded
                .diagnostics
                .iter()
                .all(|d| d.severity != Severity::Error),
            "{:?}",
            loaded.diagnostics
        );
        registry
            .entries()
            .filter(|entry| entry.source == Source::Project)
            .map(|entry| {
                let trust = match &entry.trust {
                    hookd_core::trust::HookTrust::NotRequired => "-",
                    hookd_core::trust::HookTrust::Trusted { .. } => "trusted",
                    hookd_core::trust::HookTrust::Untrusted { .. } => "untrusted",
                };
                (entry.config.display_name().to_owned(), trust)
            })
            .collect()
    }

    #[test]
    fn project_hooks_are_trusted_by_store_and_script_contents() {
        let fx = Fixture::new();
        let xdg = fx.path("config");
        let xdg = xdg.to_str().expect("utf-8");
        let vars: &[(&str, &str)] = &[("XDG_CONFIG_HOME", xdg)];
        fx.write(
            "project/.gemini/settings.json",
            r#"{"hooks": {"BeforeTool": [{"hooks": [
                {"type": "command", "name": "guard", "command": "bash $GEMINI_PROJECT_DIR/hooks/g.sh"},
                {"type": "command", "name": "inline", "command": "echo hi"}
            ]}]}}"#,
        );
        fx.write("project/hooks/g.sh", "echo v1\n");
        assert_eq!(
            project_trust(&fx, vars),
            [
                ("guard".to_owned(), "untrusted"),
                ("inline".to_owned(), "untrusted")
            ]
        );

        // The store trusts the guard with the script as it is now.
        let shared = SharedLayers::load(fx.env(vars));
        let project = ProjectLayer::load(&shared, &fx.path("project"));
        let input = read_hook_trust(&shared, &project);
        assert_eq!(
            input.scripts,
            [ScriptFile {
                path: fx.path("project/hooks/g.sh"),
                sha256: Some(hookd_core::trust::sha256_hex(b"echo v1\n")),
            }]
        );
        let registry = Registry::build(&assemble(&shared, &project).input);
        let guard = registry
            .entries()
            .find(|entry| entry.config.display_name() == "guard")
            .and_then(|entry| entry.trust.key().cloned())
            .expect("the guard's key");
        assert_eq!(guard.scripts[0].path, "hooks/g.sh");
        let mut store = TrustStore::default();
        store.trust(&fx.path("project").to_string_lossy(), &[guard]);
        fx.write("config/hookd/trusted-hooks.json", &store.to_text());
        assert_eq!(
            project_trust(&fx, vars),
            [
                ("guard".to_owned(), "trusted"),
                ("inline".to_owned(), "untrusted")
            ]
        );

        // Editing the script, or deleting it, makes the guard untrusted again.
        fx.write("project/hooks/g.sh", "echo v2\n");
        assert_eq!(
            project_trust(&fx, vars)[0],
            ("guard".to_owned(), "untrusted")
        );
        fs::remove_file(fx.path("project/hooks/g.sh")).expect("remove");
        assert_eq!(
            project_trust(&fx, vars)[0],
            ("guard".to_owned(), "untrusted")
        );
        fx.write("project/hooks/g.sh", "echo v1\n");
        assert_eq!(project_trust(&fx, vars)[0], ("guard".to_owned(), "trusted"));

        // A broken store is an error and trusts nothing.
        fx.write("config/hookd/trusted-hooks.json", "{");
        let (loaded, registry) = fx.load(vars);
        assert!(
            loaded
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error
                    && d.message.starts_with("invalid trusted hooks store")),
            "{:?}",
            loaded.diagnostics
        );
        assert!(registry.entries().all(|entry| entry.trust.is_untrusted()));
    }

    #[test]
    fn a_shared_layer_can_be_replaced() {
        let fx = Fixture::new();
        fx.write("home/.gemini/settings.json", &hook("old"));
        let mut shared = SharedLayers::load(fx.env(&[]));
        fx.write("home/.gemini/settings.json", &hook("new"));
        let reread = read_layer(Source::User, &shared.paths.user).expect("readable");
        let path = shared.paths.user.clone();
        shared.replace_layer(Source::User, &path, reread);
        let project = ProjectLayer::load(&shared, &fx.path("project"));
        let registry = Registry::build(&assemble(&shared, &project).input);
        assert_eq!(summary(&registry), ["user new run me"]);
    }
}
