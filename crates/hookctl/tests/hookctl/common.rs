//! The fixture shared by hookctl's tests: a daemon started in-process on a temp socket, with
//! a temp home and project, and a way to run the real `hookctl` binary against it.

// Each test binary uses part of this module.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tokio_util::sync::CancellationToken;

/// A daemon on a temp socket with a home and a project.
pub struct Fixture {
    /// The temp dir everything lives in.
    pub dir: tempfile::TempDir,
    /// The daemon's socket.
    pub socket: PathBuf,
    /// `HOME` of the daemon.
    pub home: PathBuf,
    /// The project dir (hookctl runs in it).
    pub project: PathBuf,
    cancel: CancellationToken,
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
    /// [`Fixture::serve`] starts it.
    pub fn prepare(project_settings: &str, user_settings: Option<&str>) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::create_dir_all(project.join(".gemini")).unwrap();
        if let Some(user) = user_settings {
            std::fs::write(home.join(".gemini/settings.json"), user).unwrap();
        }
        std::fs::write(project.join(".gemini/settings.json"), project_settings).unwrap();
        let socket = dir.path().join("hookd.sock");
        Fixture {
            dir,
            socket,
            home,
            project,
            cancel: CancellationToken::new(),
        }
    }

    /// Binds the socket and starts the daemon on it.
    pub async fn serve(&self) {
        let mut env = HashMap::new();
        env.insert("HOME".to_owned(), self.home.display().to_string());
        env.insert("PATH".to_owned(), std::env::var("PATH").unwrap_or_default());
        env.insert(
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_owned(),
            self.dir.path().join("none.json").display().to_string(),
        );
        let listener = hookd_server::bind_socket(&self.socket).await.unwrap();
        tokio::spawn(hookd_server::run(
            listener,
            hookd_server::ServerConfig::new(env),
            self.cancel.clone(),
        ));
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

impl Drop for Fixture {
    fn drop(&mut self) {
        self.cancel.cancel();
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
