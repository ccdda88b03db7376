//! Where the files are: the host's settings file, hookd's hooks file and the install manifest
//! of each host and scope ([`Target`]), resolved from the environment ([`Locations`]), and which
//! `hookd-relay` the relay entries run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hookd_core::dialect;
use hookd_settings::loader::{LayerPaths, LoaderEnv};

use super::args::InstallScope;
use super::manifest::{MANIFEST, Manifest};
use super::{Host, RELAY_BINARY};

/// Where the files are, from the environment.
#[derive(Debug, Clone)]
pub struct Locations {
    pub(super) env: LoaderEnv,
    pub(super) paths: LayerPaths,
    pub(super) state_dir: PathBuf,
    pub(super) current_dir: Option<PathBuf>,
    pub(super) exe: String,
}

impl Locations {
    /// The locations of this process: its environment, home, current directory and
    /// executable.
    pub fn from_process() -> Locations {
        let env = LoaderEnv::from_process().unwrap_or_default();
        let exe = std::env::current_exe()
            .ok()
            .and_then(|exe| std::fs::canonicalize(&exe).ok().or(Some(exe)))
            .map_or_else(|| "hookctl".to_owned(), |exe| exe.display().to_string());
        Locations::new(env, std::env::current_dir().ok(), exe)
    }

    /// Locations for an explicit environment, current directory and `hookctl` executable.
    pub fn new(env: LoaderEnv, current_dir: Option<PathBuf>, exe: String) -> Locations {
        let state_home = env
            .var("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .unwrap_or_else(|| env.home_dir.join(".local/state"));
        Locations {
            paths: LayerPaths::resolve(&env),
            state_dir: state_home.join("hookd").join("install"),
            env,
            current_dir,
            exe,
        }
    }

    pub(super) fn project_dir(&self, cwd: Option<&Path>) -> anyhow::Result<PathBuf> {
        let current = self
            .current_dir
            .clone()
            .context("cannot determine the current directory")?;
        let dir = match cwd {
            Some(dir) if dir.is_absolute() => dir.to_owned(),
            Some(dir) => current.join(dir),
            None => current,
        };
        Ok(std::fs::canonicalize(&dir).unwrap_or(dir))
    }

    /// The host's settings file, hookd's hooks file, and the project dir (project scope).
    pub(super) fn files(
        &self,
        host: Host,
        scope: InstallScope,
        cwd: Option<&Path>,
    ) -> anyhow::Result<Target> {
        let project = match scope {
            InstallScope::User => None,
            InstallScope::Project => Some(self.project_dir(cwd)?),
        };
        Ok(self.target(host, project))
    }

    pub(super) fn target(&self, host: Host, project: Option<PathBuf>) -> Target {
        let var = |name: &str| self.env.var(name).map(str::to_owned);
        let env = dialect::HomeEnv {
            home: &self.env.home_dir,
            var: &var,
        };
        let (host_file, hookd_file) = match &project {
            None => (
                host.files().user_settings_file(&env),
                self.paths.hookd_user.clone(),
            ),
            Some(dir) => (
                host.files().project_settings_file(dir),
                LayerPaths::hookd_project(dir),
            ),
        };
        let scope = if project.is_some() {
            InstallScope::Project
        } else {
            InstallScope::User
        };
        let mut key = format!("{}-{}", host.as_str(), scope.as_str());
        if let Some(dir) = &project {
            let digest = hookd_core::trust::sha256_hex(dir.display().to_string().as_bytes());
            key.push('-');
            key.push_str(&digest[..16]);
        }
        let companions = host.files().companion_files(&host_file, &env);
        Target {
            host,
            scope,
            project,
            companions,
            host_file,
            hookd_file,
            backup_dir: self.state_dir.join(key),
        }
    }

    /// The environment the paths were resolved with.
    pub fn env(&self) -> &LoaderEnv {
        &self.env
    }

    /// The `hookd-relay` found first on `PATH`, if any.
    pub(super) fn relay_found_on_path(&self) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.env.var("PATH")?;
        std::env::split_paths(path)
            .map(|dir| dir.join(RELAY_BINARY))
            .find(|relay| {
                std::fs::metadata(relay).is_ok_and(|metadata| {
                    metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
                })
            })
    }

    /// Whether `hookd-relay` is found on `PATH`.
    pub(super) fn relay_on_path(&self) -> bool {
        self.relay_found_on_path().is_some()
    }

    /// The `hookd-relay` binary relay entries written now would run, when there is one:
    /// the one on `PATH`, else the one next to this executable.
    pub(super) fn relay_binary(&self) -> Option<PathBuf> {
        self.relay_found_on_path().or_else(|| {
            Path::new(&self.exe)
                .parent()
                .map(|dir| dir.join(RELAY_BINARY))
                .filter(|relay| relay.is_file())
        })
    }

    /// hookd's HTTP secret file (`<config>/hookd/http.secret`, beside the user's hooks file),
    /// the one the daemon reads by default.
    pub fn http_secret_path(&self) -> PathBuf {
        match self.paths.hookd_user.parent().and_then(Path::parent) {
            Some(config_home) => hookd_settings::httpsecret::secret_path(config_home),
            None => self
                .paths
                .hookd_user
                .with_file_name(hookd_settings::httpsecret::SECRET_FILE_NAME),
        }
    }

    /// What relay entries run, before the event: `hookd-relay` from `PATH` when one is there
    /// (the same command in user and project files, so a host that reads both runs it once)
    /// and always in project files (they are shared with people whose binaries live
    /// elsewhere); else the `hookd-relay` next to this executable by its absolute path, else
    /// this executable's `relay`.
    pub(super) fn relay_program(&self, scope: InstallScope) -> String {
        if scope == InstallScope::Project || self.relay_on_path() {
            return RELAY_BINARY.to_owned();
        }
        let exe = Path::new(&self.exe);
        match exe.parent().map(|dir| dir.join(RELAY_BINARY)) {
            Some(relay) if relay.is_file() => {
                hookd_core::command::shell_quote(&relay.display().to_string())
            }
            _ => format!("{} relay", hookd_core::command::shell_quote(&self.exe)),
        }
    }

    /// Every recorded install: the targets of the manifests in the state directory.
    pub(super) fn installed(&self) -> anyhow::Result<Vec<(Target, Manifest)>> {
        let mut found = Vec::new();
        let entries = match std::fs::read_dir(&self.state_dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(found),
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("cannot read {}", self.state_dir.display()));
            }
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .collect();
        dirs.sort();
        for dir in dirs {
            if !dir.join(MANIFEST).exists() {
                continue;
            }
            let manifest = Manifest::load(&dir)?;
            let (Some(host), Some(_)) = (
                Host::parse(&manifest.host),
                InstallScope::parse(&manifest.scope),
            ) else {
                continue;
            };
            let target = self.target(host, manifest.project.as_ref().map(PathBuf::from));
            found.push((target, manifest));
        }
        Ok(found)
    }
}

/// The files one install touches.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub(super) host: Host,
    pub(super) scope: InstallScope,
    pub(super) project: Option<PathBuf>,
    pub(super) host_file: PathBuf,
    pub(super) hookd_file: PathBuf,
    pub(super) backup_dir: PathBuf,
    /// The host's files that change with `host_file` (Codex CLI's trust records in its
    /// `config.toml`), found from hookctl's environment.
    pub(super) companions: Vec<PathBuf>,
}

impl Target {
    pub(super) fn describe(&self) -> String {
        match &self.project {
            Some(dir) => format!("{} hooks of project {}", self.host.product(), dir.display()),
            None => format!("{} user hooks", self.host.product()),
        }
    }

    /// The command that runs `verb` (install, uninstall) for this target again.
    pub(super) fn command(&self, verb: &str) -> String {
        let mut command = format!("hookctl {verb} --host {}", self.host.as_str());
        if let Some(dir) = &self.project {
            let _ = write!(
                command,
                " --scope project --cwd {}",
                hookd_core::command::shell_quote(&dir.display().to_string())
            );
        }
        command
    }
}
