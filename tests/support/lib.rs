//! Test support for the end-to-end tests: a real daemon on a socket in a temp dir, with a temp
//! `HOME`, a project dir, and helpers to write settings files and hook scripts.
//!
//! The daemon is [`hookd_server::run`], the same function the `hookd` binary calls. Readiness
//! is awaited by connecting, never by sleeping.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookd_client::{Client, ConnectOptions, EventRequest, EventResponse};
use hookd_protocol::EventResult;
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
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
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

/// Whether a process with this pid is still running: a zombie (exited, not yet reaped) counts
/// as gone, because orphaned grandchildren of a hook may be left for an init that never reaps
/// them, and a dead process is what the tests care about.
pub fn process_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesised command name, which may itself
        // contain spaces and parentheses, hence the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        // No procfs entry means the process is gone, unless there is no procfs at all, in
        // which case the kernel is asked (and zombies count as running).
        Err(_) if Path::new("/proc/self").exists() => false,
        Err(_) => process_exists(pid),
    }
}

/// Polls `condition` every 20 ms until it holds, panicking with `what` after `timeout`.
///
/// This waits for a condition the test can observe (a file written by a hook, a process
/// gone), never for an arbitrary amount of time.
pub async fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Awaits `future`, panicking with `what` if it takes longer than `timeout`, so that a daemon
/// bug shows up as a failed test rather than a hung test run.
pub async fn within<T>(what: &str, timeout: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(timeout, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not complete within {timeout:?}"),
    }
}

/// The object of a JSON value, for an event's `input`.
pub fn input(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("event input must be a JSON object, got {other}"),
    }
}

/// The command line that runs the project hook script `name` (written by [`Daemon::script`]),
/// through `$GEMINI_PROJECT_DIR` so that settings can name it before the temp dir exists.
pub fn script_command(name: &str) -> String {
    format!("$GEMINI_PROJECT_DIR/.gemini/hooks/{name}")
}

impl Daemon {
    /// A path inside the daemon's temp dir.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// A fresh directory inside the temp dir for hooks to write into; returns its path.
    pub fn out_dir(&self, name: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(&path).expect("out dir");
        path
    }
}

/// How long [`RawConn::recv`] waits for a frame before failing the test.
const RAW_RECV_TIMEOUT: Duration = Duration::from_secs(20);

/// A connection that speaks the frame format by hand (4-byte big-endian length, then the
/// JSON body), so tests can send what no well-behaved client would: garbage, oversized frames,
/// half frames.
pub struct RawConn {
    stream: tokio::net::UnixStream,
}

impl RawConn {
    /// Connects without saying anything.
    pub async fn connect(socket: &Path) -> RawConn {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .expect("raw connect");
        RawConn { stream }
    }

    /// Connects and completes the handshake, checking the daemon's `hello`.
    pub async fn connect_hello(socket: &Path) -> RawConn {
        let mut conn = RawConn::connect(socket).await;
        conn.send(&serde_json::json!({"type": "hello", "protocol": 1, "client": "raw-e2e/1"}))
            .await;
        let hello = conn.recv().await.expect("hello answer");
        assert_eq!(hello["type"], "hello", "handshake answer: {hello}");
        assert_eq!(hello["protocol"], 1, "handshake answer: {hello}");
        conn
    }

    /// Sends `message` as one frame.
    pub async fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("encode");
        self.send_frame(&body).await;
    }

    /// Sends `body` as one frame with a correct length prefix.
    pub async fn send_frame(&mut self, body: &[u8]) {
        let len = u32::try_from(body.len()).expect("frame fits the prefix");
        let mut frame = len.to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        self.send_bytes(&frame).await;
    }

    /// Writes `bytes` as they are, with no framing.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt;
        self.stream.write_all(bytes).await.expect("raw write");
        self.stream.flush().await.expect("raw flush");
    }

    /// Reads the next frame as JSON; `None` when the daemon closed the connection at a frame
    /// boundary. Fails the test if nothing arrives within a generous timeout.
    pub async fn recv(&mut self) -> Option<Value> {
        use tokio::io::AsyncReadExt;
        within("reading a frame from the daemon", RAW_RECV_TIMEOUT, async {
            let mut prefix = [0u8; 4];
            match self.stream.read_exact(&mut prefix).await {
                Ok(_) => {}
                Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return None,
                // A reset is how a closed connection may look when we had unread data queued.
                Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(err) => panic!("raw read failed: {err}"),
            }
            let len = u32::from_be_bytes(prefix) as usize;
            let mut body = vec![0u8; len];
            self.stream
                .read_exact(&mut body)
                .await
                .expect("a whole frame body");
            Some(serde_json::from_slice(&body).expect("the daemon sends JSON"))
        })
        .await
    }
}

/// How long [`fire`] lets one event take before failing the test.
const FIRE_TIMEOUT: Duration = Duration::from_secs(60);

/// Fires `event` with `input` for the project at `cwd` and returns its aggregate result,
/// failing the test if the daemon answers with an error or not at all.
pub async fn fire(client: &Client, cwd: &str, event: &str, input_fields: Value) -> EventResult {
    let request = EventRequest::new(event, cwd).with_input(input(input_fields));
    fire_request(client, request).await.result
}

/// Sends a prepared event request and returns the daemon's answer, failing the test if the
/// daemon answers with an error or not at all.
pub async fn fire_request(client: &Client, request: EventRequest) -> EventResponse {
    let what = format!("the {} event", request.event);
    within(&what, FIRE_TIMEOUT, client.event(request))
        .await
        .unwrap_or_else(|err| panic!("{what} failed: {err}"))
}

/// A cheap hook script that echoes the `n` field of its `tool_input` back as a deny reason
/// `r-<n>`, so that each answer can be matched to its own request. Only bash and sed: it runs
/// thousands of times in the load test.
pub const ECHO_N_SCRIPT: &str = r#"input=$(cat)
n=$(printf '%s' "$input" | sed -n 's/.*"n":"\([^"]*\)".*/\1/p')
printf '{"decision":"deny","reason":"r-%s"}\n' "$n""#;
