//! hookctl's view of the test kit's daemon: the kit's [`Daemon`] (a real daemon in-process
//! on a temp socket, with a temp home and project) with optional user settings, and a way to
//! run the real `hookctl` binary against it.

// Each test binary uses part of this module.
#![allow(dead_code)]

use std::io::Write;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hookd_testkit::{Daemon, DaemonOptions, Hermetic};

/// A daemon of the test kit with a home and a project (its fields: `dir`, `socket`, `home`,
/// `project`, through [`Deref`]).
pub struct Fixture(Daemon);

impl Deref for Fixture {
    type Target = Daemon;

    fn deref(&self) -> &Daemon {
        &self.0
    }
}

impl Fixture {
    /// Starts a daemon whose project settings are `project_settings` and, when given, whose
    /// user settings are `user_settings`.
    pub async fn start(project_settings: &str, user_settings: Option<&str>) -> Fixture {
        let fixture = Fixture::prepare(project_settings, user_settings);
        fixture.serve().await;
        fixture
    }

    /// The home, project and settings of [`Fixture::start`], with no daemon yet:
    /// [`Daemon::serve`] (or [`Daemon::serve_with`]) starts it.
    pub fn prepare(project_settings: &str, user_settings: Option<&str>) -> Fixture {
        let files = user_settings
            .map(|user| ("home/.gemini/settings.json".to_owned(), user.to_owned()))
            .into_iter()
            .collect();
        let options = DaemonOptions {
            files,
            ..DaemonOptions::default()
        };
        Fixture(Daemon::prepare_with(project_settings, options))
    }

    /// Runs hookctl with `args` in the project dir, feeding `stdin`, off the async runtime.
    pub async fn hookctl(&self, args: &[&str], stdin: &str) -> Output {
        let socket = self.socket.clone();
        let project = self.project.clone();
        let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        let stdin = stdin.to_owned();
        tokio::task::spawn_blocking(move || run_hookctl(&socket, &project, &args, &stdin))
            .await
            .unwrap()
    }

    /// Runs hookctl and returns its stdout, failing unless it exits 0.
    pub async fn ok(&self, args: &[&str]) -> String {
        let output = self.hookctl(args, "").await;
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }
}

/// Runs the real hookctl binary with `--socket socket` in `cwd`, feeding `stdin`.
pub fn run_hookctl(socket: &Path, cwd: &Path, args: &[String], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .arg("--socket")
        .arg(socket)
        .args(args)
        .current_dir(cwd)
        .env_remove("HOOKD_SOCKET")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // hookctl may exit without reading stdin (e.g. on a bad argument): ignore EPIPE.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

/// A temp home and project and no daemon: for `hookctl install` and `doctor` on a host's own
/// files (fields `home` and `project`, both canonical).
pub struct Home {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
}

impl Home {
    /// A home with each of `dirs` (relative to it) created, and an empty project.
    pub fn new(dirs: &[&str]) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home");
        let project = root.join("project");
        for sub in dirs {
            std::fs::create_dir_all(home.join(sub)).unwrap();
        }
        std::fs::create_dir_all(&project).unwrap();
        Home {
            _dir: dir,
            home,
            project,
        }
    }

    /// Runs the real `hookctl` in the project with only this home in its environment: whether
    /// it succeeded, and its stdout and stderr together.
    pub fn hookctl(&self, args: &[&str]) -> (bool, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(args)
            .current_dir(&self.project)
            .hermetic(&self.home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    }
}
