//! Test support for the end-to-end tests: a real daemon on a socket in a temp dir, with a temp
//! `HOME`, a project dir, and helpers to write settings files and hook scripts.
//!
//! The daemon is [`hookd_server::run`], the same function the `hookd` binary calls. Readiness
//! is awaited by connecting, never by sleeping.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookd_client::{Client, ConnectOptions};
use hookd_server::ServerConfig;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running daemon with its own home and project directories.
pub struct Daemon {
    /// Holds the temp dir alive; everything below lives inside it.
    pub dir: tempfile::TempDir,
    /// The socket the daemon listens on.
    pub socket: PathBuf,
    /// `HOME` for the daemon (and `~/.gemini`).
    pub home: PathBuf,
    /// A project dir with a `.gemini/` directory.
    pub project: PathBuf,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

/// How to start a test daemon.
pub struct DaemonOptions {
    /// Files to write before the daemon starts: path relative to the temp dir, contents.
    pub files: Vec<(String, String)>,
    /// Adjusts the configuration before start.
    pub configure: Box<dyn FnOnce(&mut ServerConfig) + Send>,
}

impl Default for DaemonOptions {
    fn default() -> Self {
        DaemonOptions {
            files: Vec::new(),
            configure: Box::new(|_| {}),
        }
    }
}

impl Daemon {
    /// Starts a daemon whose project settings are `project_settings` (a JSON value).
    pub async fn start(project_settings: Value) -> Daemon {
        Daemon::start_with(project_settings, DaemonOptions::default()).await
    }

    /// Starts a daemon with project settings and extra options.
    pub async fn start_with(project_settings: Value, options: DaemonOptions) -> Daemon {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_path_buf();
        let home = root.join("home");
        let project = root.join("project");
        std::fs::create_dir_all(home.join(".gemini")).expect("home");
        std::fs::create_dir_all(project.join(".gemini/hooks")).expect("project");
        write(
            &project.join(".gemini/settings.json"),
            &serde_json::to_string_pretty(&project_settings).expect("json"),
        );
        for (path, contents) in &options.files {
            let path = root.join(path);
            write(&path, contents);
        }
        let socket = root.join("run/hookd.sock");

        let mut env: HashMap<String, String> = HashMap::new();
        env.insert("HOME".into(), home.display().to_string());
        env.insert(
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        );
        // Keep the system layers inside the temp dir so the machine's own files never leak in.
        env.insert(
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH".into(),
            root.join("etc/settings.json").display().to_string(),
        );
        env.insert(
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH".into(),
            root.join("etc/system-defaults.json").display().to_string(),
        );
        let mut config = ServerConfig::new(env);
        config.kill_grace = Duration::from_millis(500);
        config.shutdown_grace = Duration::from_secs(5);
        (options.configure)(&mut config);

        let listener = hookd_server::bind_socket(&socket).await.expect("bind");
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                hookd_server::run(listener, config, cancel)
                    .await
                    .expect("daemon failed");
            }
        });
        let daemon = Daemon {
            dir,
            socket,
            home,
            project,
            cancel,
            task: Some(task),
        };
        // Ready when a client completes the handshake.
        daemon.client().await.ping().await.expect("daemon answers");
        daemon
    }

    /// A new connected client.
    pub async fn client(&self) -> Client {
        Client::connect(&self.socket, ConnectOptions::default())
            .await
            .expect("connect")
    }

    /// A new connected client that sends `env` as the hooks' environment.
    pub async fn client_with_env(&self, env: Vec<(String, String)>) -> Client {
        let options = ConnectOptions {
            env: Some(env.into_iter().collect()),
            ..ConnectOptions::default()
        };
        Client::connect(&self.socket, options)
            .await
            .expect("connect")
    }

    /// The project dir as a string, for requests.
    pub fn cwd(&self) -> String {
        self.project.display().to_string()
    }

    /// Writes an executable hook script into the project's `.gemini/hooks/` and returns its
    /// absolute path.
    pub fn script(&self, name: &str, body: &str) -> String {
        let path = self.project.join(".gemini/hooks").join(name);
        write(&path, &format!("#!/usr/bin/env bash\n{body}\n"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        path.display().to_string()
    }

    /// Stops the daemon gracefully and waits for it.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            task.await.expect("daemon task");
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Writes a file, creating its parent directories.
pub fn write(path: &Path, contents: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, contents).expect("write");
}

/// Builds settings with one hook definition per `(event, matcher, hooks)` triple.
pub fn settings(definitions: &[(&str, Option<&str>, Vec<Value>)]) -> Value {
    let mut hooks = serde_json::Map::new();
    for (event, matcher, entries) in definitions {
        let mut definition = serde_json::Map::new();
        if let Some(matcher) = matcher {
            definition.insert("matcher".into(), Value::from(*matcher));
        }
        definition.insert("hooks".into(), Value::Array(entries.clone()));
        hooks
            .entry(event.to_string())
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .expect("array")
            .push(Value::Object(definition));
    }
    serde_json::json!({ "hooks": hooks })
}

/// A command hook entry.
pub fn command_hook(name: &str, command: &str) -> Value {
    serde_json::json!({ "name": name, "type": "command", "command": command })
}

/// Whether a process with this pid still exists (zombies count as gone only once reaped).
pub fn process_exists(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}
