//! The daemon fixture: a real daemon on a socket in a temp dir, with a temp
//! `HOME`, a project dir, and helpers to write settings files and hook scripts.
//!
//! The daemon is [`hookd_server::run`], the same function the `hookd` binary calls. Readiness
//! is awaited by connecting, never by sleeping.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use hookd_client::{Client, ConnectOptions, EventRequest, EventResponse};
use hookd_protocol::EventResult;
use hookd_server::ServerConfig;
use hookd_settings::httpsecret::HttpSecret;
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
    /// The loopback HTTP listener, when started by [`Daemon::start_with_http`].
    pub http: Option<HttpEndpoint>,
    /// The HTTP listener's socket (bound when prepared, so its port is known) and secret,
    /// until the daemon is served.
    pending_http: Mutex<Option<(std::net::TcpListener, HttpSecret)>>,
    cancel: CancellationToken,
    /// How the test adjusts the configuration, until the daemon is served.
    configure: Mutex<Option<Configure>>,
    /// The daemon's task once it is served.
    task: Mutex<Option<JoinHandle<()>>>,
}

/// Where a test daemon's HTTP listener is and the secret its requests carry.
#[derive(Debug, Clone)]
pub struct HttpEndpoint {
    /// The bound address (an ephemeral port on 127.0.0.1).
    pub address: std::net::SocketAddr,
    /// The secret, for `Authorization: Bearer <secret>`.
    pub secret: String,
}

/// A test's adjustment of the daemon's configuration.
type Configure = Box<dyn FnOnce(&mut ServerConfig) + Send>;

/// How to start a test daemon.
pub struct DaemonOptions {
    /// Files to write before the daemon starts: path relative to the temp dir, contents.
    pub files: Vec<(String, String)>,
    /// Adjusts the configuration before start.
    pub configure: Configure,
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
        let daemon = Daemon::prepare_inner(
            &serde_json::to_string_pretty(&project_settings).expect("json"),
            options,
            false,
        );
        daemon.serve().await;
        daemon
    }

    /// [`Daemon::start_with`], also serving HTTP hooks on an ephemeral loopback port
    /// ([`Daemon::http`]), with a secret file under the temp dir (`config/hookd/http.secret`).
    pub async fn start_with_http(project_settings: Value, options: DaemonOptions) -> Daemon {
        let daemon = Daemon::prepare_inner(
            &serde_json::to_string_pretty(&project_settings).expect("json"),
            options,
            true,
        );
        daemon.serve().await;
        daemon
    }

    /// The home, project and files of [`Daemon::start_with`], with `project_settings` written
    /// as given (so a test may hand the daemon a file it cannot read), and no daemon yet: a
    /// test writes what else it needs, then [`Daemon::serve`] starts it.
    pub fn prepare_with(project_settings: &str, options: DaemonOptions) -> Daemon {
        Daemon::prepare_inner(project_settings, options, false)
    }

    fn prepare_inner(project_settings: &str, options: DaemonOptions, http: bool) -> Daemon {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_path_buf();
        let home = root.join("home");
        let project = root.join("project");
        std::fs::create_dir_all(home.join(".gemini")).expect("home");
        std::fs::create_dir_all(project.join(".gemini/hooks")).expect("project");
        write(&project.join(".gemini/settings.json"), project_settings);
        for (path, contents) in &options.files {
            let path = root.join(path);
            write(&path, contents);
        }
        // The socket's directory exists (private, as the daemon makes it), so a test may put
        // something else on the socket's path before the daemon is served, or instead of it.
        let socket = root.join("run/hookd.sock");
        std::fs::create_dir_all(root.join("run")).expect("run dir");
        std::fs::set_permissions(root.join("run"), std::fs::Permissions::from_mode(0o700))
            .expect("chmod run dir");
        let (endpoint, pending_http) = if http {
            let secret_file = hookd_settings::httpsecret::secret_path(&root.join("config"));
            let secret = hookd_settings::httpsecret::load_or_create(&secret_file).expect("secret");
            let listener =
                std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind the HTTP listener");
            let endpoint = HttpEndpoint {
                address: listener.local_addr().expect("HTTP address"),
                secret: secret.as_str().to_owned(),
            };
            (Some(endpoint), Some((listener, secret)))
        } else {
            (None, None)
        };
        Daemon {
            dir,
            socket,
            home,
            project,
            http: endpoint,
            pending_http: Mutex::new(pending_http),
            cancel: CancellationToken::new(),
            configure: Mutex::new(Some(options.configure)),
            task: Mutex::new(None),
        }
    }

    /// The configuration every test daemon starts with: `HOME`, `PATH` and the system
    /// layers inside the temp dir, the test's own files trusted as system files, and a known
    /// state token key.
    fn config(&self) -> ServerConfig {
        let root = self.dir.path();
        let mut env: HashMap<String, String> = HashMap::new();
        env.insert("HOME".into(), self.home.display().to_string());
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
        env.insert(
            "HOOKD_MANAGED_HOOKS".into(),
            root.join("etc/hookd/hooks.json").display().to_string(),
        );
        let mut config = ServerConfig::new(env);
        config.kill_grace = Duration::from_millis(500);
        config.shutdown_grace = Duration::from_secs(5);
        // The test's system files are its own, not root's.
        config.system_owner = nix::unistd::geteuid().as_raw();
        config.system_trusted_above = Some(root.to_path_buf());
        // A known key, so tests can write state as a hook of any session would.
        config.state_token_key = Some(hookd_server::StateTokenKey::from_bytes(STATE_TEST_KEY));
        config
    }

    /// Binds the socket, starts the daemon on it and returns once it answers a ping. The
    /// options' `configure` applies to the first daemon served; a second call (after the
    /// first was taken away) starts one with the fixture's configuration alone.
    pub async fn serve(&self) {
        self.serve_with(|_| {}).await;
    }

    /// [`Daemon::serve`], with `adjust` applied to the configuration after the options'
    /// `configure`: for a setting that names the fixture's own paths (an audit log in its
    /// temp dir, say).
    pub async fn serve_with(&self, adjust: impl FnOnce(&mut ServerConfig)) {
        let mut config = self.config();
        let configure = self
            .configure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(configure) = configure {
            configure(&mut config);
        }
        adjust(&mut config);
        let listener = hookd_server::bind_socket(&self.socket).await.expect("bind");
        let http = self
            .pending_http
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .map(|(listener, secret)| {
                hookd_server::HttpListener::from_std(listener, secret).expect("HTTP listener")
            });
        let task = tokio::spawn({
            let cancel = self.cancel.clone();
            async move {
                hookd_server::run_with_http(listener, http, config, cancel)
                    .await
                    .expect("daemon failed");
            }
        });
        let previous = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .replace(task);
        drop(previous);
        // Ready when a client completes the handshake.
        self.client().await.ping().await.expect("daemon answers");
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
    pub async fn stop(self) {
        self.cancel.cancel();
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            task.await.expect("daemon task");
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The key of the state tokens of every test daemon [`Daemon::start_with`] starts.
pub const STATE_TEST_KEY: [u8; 32] = [0x5a; 32];

/// The state token a hook of `session` in `project_dir` gets from a test daemon
/// (`HOOKD_STATE_TOKEN`): what writing that session's state needs.
pub fn state_token(session: &str, project_dir: &str) -> String {
    hookd_server::StateTokenKey::from_bytes(STATE_TEST_KEY).token(session, project_dir)
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
        read_raw_frame(&mut self.stream).await
    }
}

impl RawConn {
    /// Reads the next frame's body as bytes, unparsed (to check its size, say); `None` when
    /// the daemon closed the connection at a frame boundary.
    pub async fn recv_body(&mut self) -> Option<Vec<u8>> {
        use tokio::io::AsyncReadExt;
        within("reading a frame from the daemon", RAW_RECV_TIMEOUT, async {
            let mut prefix = [0u8; 4];
            match self.stream.read_exact(&mut prefix).await {
                Ok(_) => {}
                Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return None,
                Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(err) => panic!("raw read failed: {err}"),
            }
            let len = u32::from_be_bytes(prefix) as usize;
            let mut body = vec![0u8; len];
            self.stream
                .read_exact(&mut body)
                .await
                .expect("a whole frame body");
            Some(body)
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

// Fault injection: the helpers below let a test break the daemon's world on purpose and then
// check that nothing is left behind: no process, no zombie, no memory.

/// Serialises the tests that measure the test process's memory: the daemon runs inside the
/// test process, so two such tests at once would count each other's allocations.
static MEMORY_TESTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Waits until no other memory-measuring test runs; hold the guard for the whole test.
pub async fn memory_test_lock() -> tokio::sync::MutexGuard<'static, ()> {
    MEMORY_TESTS.lock().await
}

/// A `/proc/self/status` field given in kB (`VmRSS`, `VmHWM`), in KiB.
pub fn own_memory_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// How often [`MemoryWatch`] samples the resident set size.
const MEMORY_SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// Watches the test process's resident memory from [`MemoryWatch::start`] to
/// [`MemoryWatch::finish`]: the value before, the peak in between, the value after.
///
/// The peak is the larger of a sampler thread's readings and the kernel's own high-water mark
/// (`VmHWM`), which is reset at the start when `/proc/self/clear_refs` allows it. Freed large
/// buffers go back to the kernel, so only the peak catches a daemon that held an input or an
/// output whole for a while; the value after catches memory that is never given back.
pub struct MemoryWatch {
    before_kib: u64,
    hwm_reset: bool,
    peak_kib: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

/// What a [`MemoryWatch`] saw, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// Resident memory when the watch started.
    pub before_kib: u64,
    /// The most resident memory seen while it ran.
    pub peak_kib: u64,
    /// Resident memory when it finished.
    pub after_kib: u64,
}

impl MemoryWatch {
    /// Records the current resident memory and starts sampling.
    pub fn start() -> MemoryWatch {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

        // "5" resets the high-water mark to the current resident size (proc(5)).
        let hwm_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let before_kib = own_memory_kib("VmRSS").expect("VmRSS in /proc/self/status");
        let peak_kib = std::sync::Arc::new(AtomicU64::new(before_kib));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let sampler = std::thread::spawn({
            let peak_kib = std::sync::Arc::clone(&peak_kib);
            let stop = std::sync::Arc::clone(&stop);
            move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(rss) = own_memory_kib("VmRSS") {
                        peak_kib.fetch_max(rss, Ordering::Relaxed);
                    }
                    std::thread::sleep(MEMORY_SAMPLE_EVERY);
                }
            }
        });
        MemoryWatch {
            before_kib,
            hwm_reset,
            peak_kib,
            stop,
            sampler: Some(sampler),
        }
    }

    /// How far the sampled peak has risen above the value before so far, in MiB; lets a test
    /// stop a fault early once the bound is broken, instead of letting it bloat the process
    /// for the tests that come after.
    pub fn peak_growth_so_far_mib(&self) -> f64 {
        let peak = self.peak_kib.load(std::sync::atomic::Ordering::Relaxed);
        peak.saturating_sub(self.before_kib) as f64 / 1024.0
    }

    /// Stops sampling and returns what was seen.
    pub fn finish(mut self) -> MemoryUse {
        use std::sync::atomic::Ordering;

        self.stop.store(true, Ordering::Relaxed);
        if let Some(sampler) = self.sampler.take() {
            sampler.join().expect("memory sampler");
        }
        let after_kib = own_memory_kib("VmRSS").expect("VmRSS in /proc/self/status");
        let mut peak_kib = self.peak_kib.load(Ordering::Relaxed).max(after_kib);
        if self.hwm_reset {
            peak_kib = peak_kib.max(own_memory_kib("VmHWM").unwrap_or(0));
        }
        MemoryUse {
            before_kib: self.before_kib,
            peak_kib,
            after_kib,
        }
    }
}

impl Drop for MemoryWatch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl MemoryUse {
    /// How far the peak rose above the value before, in MiB.
    pub fn peak_growth_mib(&self) -> f64 {
        self.peak_kib.saturating_sub(self.before_kib) as f64 / 1024.0
    }

    /// How far the value after rose above the value before, in MiB.
    pub fn after_growth_mib(&self) -> f64 {
        self.after_kib.saturating_sub(self.before_kib) as f64 / 1024.0
    }

    /// Prints the figures (visible with `--nocapture`) and asserts that neither the peak nor
    /// the value after grew by `limit_mib` or more.
    pub fn assert_bounded(&self, what: &str, limit_mib: u64) {
        let limit = limit_mib as f64;
        eprintln!(
            "memory during {what}: before {:.1} MiB, peak +{:.1} MiB, after +{:.1} MiB \
             (limit +{limit_mib} MiB)",
            self.before_kib as f64 / 1024.0,
            self.peak_growth_mib(),
            self.after_growth_mib()
        );
        assert!(
            self.peak_growth_mib() < limit,
            "{what}: resident memory peaked {:.1} MiB above its start (limit {limit_mib} MiB): \
             {self:?}",
            self.peak_growth_mib()
        );
        assert!(
            self.after_growth_mib() < limit,
            "{what}: resident memory ended {:.1} MiB above its start (limit {limit_mib} MiB): \
             {self:?}",
            self.after_growth_mib()
        );
    }
}

/// One process as its `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: i32,
    /// Its command name (at most 15 bytes, as the kernel keeps it).
    pub command: String,
    /// Its state letter: `R`, `S`, `D`, `Z` (zombie), ...
    pub state: char,
    /// Its parent's pid.
    pub ppid: i32,
    /// Its process group.
    pub pgid: i32,
}

impl ProcessInfo {
    /// Parses the contents of `/proc/<pid>/stat`. The command name is in parentheses and may
    /// itself contain spaces and parentheses, so the fields are counted from the last `)`.
    pub fn parse_stat(stat: &str) -> Option<ProcessInfo> {
        let (head, rest) = stat.rsplit_once(')')?;
        let (pid, command) = head.split_once(" (")?;
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgid = fields.next()?.parse().ok()?;
        Some(ProcessInfo {
            pid: pid.trim().parse().ok()?,
            command: command.to_owned(),
            state,
            ppid,
            pgid,
        })
    }

    /// Whether it has exited (a zombie, or dead and about to vanish).
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Every process `/proc` shows now; processes that vanish during the scan are skipped.
pub fn all_processes() -> Vec<ProcessInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|stat| ProcessInfo::parse_stat(&stat))
        .collect()
}

/// Whether process `pid` was started with `entry` (`NAME=value`) in its environment. Zombies
/// have no readable environment, so this is only ever true of a live process.
fn has_environment_entry(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|&byte| byte == 0).any(|item| item == entry))
}

/// The directory, inside the project, where hooks record pids (see [`RECORD_PID`]).
pub const PIDS_DIR: &str = ".pids";

/// A shell command that records the hook's pid as an empty file named after it in
/// [`PIDS_DIR`]. Hooks run as `bash -c` and lead their own process group, so this pid is also
/// the group id that every process the hook starts inherits. A hook can record more pids (of
/// its children, say) by writing them, whitespace-separated, into any file of that directory.
///
/// The braces keep the variable for the shell: hookd rewrites the bare `$GEMINI_PROJECT_DIR`
/// form in command lines textually, as Gemini CLI does.
pub const RECORD_PID: &str = r#": > "${GEMINI_PROJECT_DIR}/.pids/$$""#;

/// What the hooks of one daemon left behind, from [`Daemon::leftovers`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// Live processes started for this daemon's project: hooks and everything they started,
    /// found by the `GEMINI_PROJECT_DIR` the daemon put in their environment (it is inherited
    /// by every descendant, even one that left the hook's process group).
    pub running: Vec<ProcessInfo>,
    /// Zombies whose parent is this test process, that is the daemon, among the recorded
    /// hooks: processes the daemon spawned and never reaped.
    pub zombies: Vec<ProcessInfo>,
    /// Dead members of recorded hook groups whose parent is another process: a hook's
    /// children orphaned when the hook exited, then killed. Reaping them is the job of the
    /// process they were reparented to (init, or a subreaper), not the daemon's, so they do
    /// not count against it; in a container whose init never reaps they stay forever.
    pub orphan_zombies: Vec<ProcessInfo>,
}

impl Leftovers {
    /// Nothing alive and no unreaped child of the daemon.
    pub fn is_clean(&self) -> bool {
        self.running.is_empty() && self.zombies.is_empty()
    }
}

/// How long [`Daemon::assert_no_leftovers`] waits for processes to go away.
const LEFTOVER_TIMEOUT: Duration = Duration::from_secs(20);

impl Daemon {
    /// Creates (if needed) and returns the directory hooks record their pids in with
    /// [`RECORD_PID`].
    pub fn pids_dir(&self) -> PathBuf {
        let dir = self.project.join(PIDS_DIR);
        std::fs::create_dir_all(&dir).expect("pids dir");
        dir
    }

    /// Every pid recorded in [`PIDS_DIR`]: file names that are pids, and the whitespace-
    /// separated numbers inside the files.
    pub fn recorded_pids(&self) -> std::collections::BTreeSet<i32> {
        let mut pids = std::collections::BTreeSet::new();
        let Ok(entries) = std::fs::read_dir(self.project.join(PIDS_DIR)) else {
            return pids;
        };
        for entry in entries.filter_map(Result::ok) {
            if let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse().ok())
            {
                pids.insert(pid);
            }
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            pids.extend(
                text.split_whitespace()
                    .filter_map(|word| word.parse::<i32>().ok()),
            );
        }
        pids
    }

    /// The pids written into the files of [`PIDS_DIR`] whose names end with `suffix`.
    pub fn recorded_in(&self, suffix: &str) -> Vec<i32> {
        let mut pids = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.project.join(PIDS_DIR)) else {
            return pids;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            if name.to_str().is_some_and(|name| name.ends_with(suffix)) {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                pids.extend(
                    text.split_whitespace()
                        .filter_map(|word| word.parse::<i32>().ok()),
                );
            }
        }
        pids
    }

    /// Scans `/proc` for what this daemon's hooks left behind.
    pub fn leftovers(&self) -> Leftovers {
        let me = i32::try_from(std::process::id()).expect("pid fits i32");
        let recorded = self.recorded_pids();
        let marker = format!("GEMINI_PROJECT_DIR={}", self.project.display());
        let mut leftovers = Leftovers::default();
        for process in all_processes() {
            if process.pid == me {
                continue;
            }
            let in_hook_group = recorded.contains(&process.pgid) || recorded.contains(&process.pid);
            if process.is_zombie() {
                if in_hook_group && process.ppid == me {
                    leftovers.zombies.push(process);
                } else if in_hook_group {
                    leftovers.orphan_zombies.push(process);
                }
            } else if has_environment_entry(process.pid, marker.as_bytes()) {
                leftovers.running.push(process);
            }
        }
        leftovers
    }

    /// Waits (a bounded poll) until no hook process of this daemon is alive and the daemon
    /// has reaped every hook it spawned; fails the test with the leftovers otherwise.
    pub async fn assert_no_leftovers(&self, what: &str) {
        let deadline = tokio::time::Instant::now() + LEFTOVER_TIMEOUT;
        loop {
            let leftovers = self.leftovers();
            if leftovers.is_clean() {
                if !leftovers.orphan_zombies.is_empty() {
                    eprintln!(
                        "{what}: {} killed orphans of hooks wait for their new parent \
                         (not the daemon) to reap them",
                        leftovers.orphan_zombies.len()
                    );
                }
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                // Kill what is left so that a failed test does not leave it to later tests.
                for process in &leftovers.running {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(process.pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                panic!(
                    "{what}: after {LEFTOVER_TIMEOUT:?}, {} hook processes still ran (now \
                     killed by the test) and {} zombies waited for the daemon; the first: \
                     running {:?}, zombies {:?}",
                    leftovers.running.len(),
                    leftovers.zombies.len(),
                    &leftovers.running[..leftovers.running.len().min(5)],
                    &leftovers.zombies[..leftovers.zombies.len().min(5)],
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The tool name whose `BeforeTool` event runs the probe hook of [`probe_definition`].
pub const PROBE_TOOL: &str = "probe";

/// The probe: a definition for tool [`PROBE_TOOL`] whose one hook records its pid and
/// denies with reason `probe-ok`, so that a test can check the daemon still answers
/// correctly after a fault.
pub fn probe_definition() -> (&'static str, Option<&'static str>, Vec<Value>) {
    let command =
        format!("{RECORD_PID}; printf '%s\\n' '{{\"decision\":\"deny\",\"reason\":\"probe-ok\"}}'");
    (
        "BeforeTool",
        Some("^probe$"),
        vec![command_hook("probe", &command)],
    )
}

impl Daemon {
    /// Starts a daemon for a fault-injection test: project settings made of `definitions`
    /// plus the [`probe_definition`], and an empty [`PIDS_DIR`].
    pub async fn start_for_faults(
        definitions: Vec<(&str, Option<&str>, Vec<Value>)>,
        options: DaemonOptions,
    ) -> Daemon {
        let mut definitions = definitions;
        definitions.push(probe_definition());
        let daemon = Daemon::start_with(settings(&definitions), options).await;
        daemon.pids_dir();
        daemon
    }

    /// Checks, with a new client, that the daemon still answers correctly: a ping, an event
    /// that runs the probe hook, and an event that matches no hook.
    pub async fn assert_serves(&self, what: &str) {
        let client = within(
            &format!("connecting after {what}"),
            Duration::from_secs(20),
            self.client(),
        )
        .await;
        within("a ping", Duration::from_secs(20), client.ping())
            .await
            .unwrap_or_else(|err| panic!("after {what}, a ping failed: {err}"));
        let cwd = self.cwd();
        let probe = fire(
            &client,
            &cwd,
            "BeforeTool",
            serde_json::json!({"tool_name": PROBE_TOOL, "tool_input": {}}),
        )
        .await;
        assert_eq!(probe.hooks.len(), 1, "after {what}: {probe:?}");
        assert!(probe.success, "after {what}: {probe:?}");
        assert_eq!(
            probe.final_output.as_ref().map(|output| &output["reason"]),
            Some(&Value::from("probe-ok")),
            "after {what}: {probe:?}"
        );
        let nothing = fire(
            &client,
            &cwd,
            "BeforeTool",
            serde_json::json!({"tool_name": "no-hook-matches-this", "tool_input": {}}),
        )
        .await;
        assert!(nothing.hooks.is_empty(), "after {what}: {nothing:?}");
    }

    /// The checks every fault ends with: the daemon serves a new client correctly, leaves no
    /// hook process and no zombie, and its memory grew by less than `limit_mib` (peak and
    /// end); then it is stopped.
    pub async fn finish_fault(self, what: &str, memory: MemoryWatch, limit_mib: u64) {
        self.assert_serves(what).await;
        self.assert_no_leftovers(what).await;
        memory.finish().assert_bounded(what, limit_mib);
        within("stopping the daemon", Duration::from_secs(30), self.stop()).await;
    }
}

/// Raises this process's soft limit on open files to its hard limit, and returns the soft
/// limit now in force.
pub fn raise_open_files_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};

    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}

/// How many file descriptors this process has open now.
pub fn open_file_count() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |entries| entries.count())
}

impl RawConn {
    /// Splits the connection so that one task can keep writing while another reads.
    pub fn into_split(self) -> (RawReader, RawWriter) {
        let (read, write) = self.stream.into_split();
        (RawReader { half: read }, RawWriter { half: write })
    }
}

/// The reading half of a [`RawConn`].
pub struct RawReader {
    half: tokio::net::unix::OwnedReadHalf,
}

impl RawReader {
    /// Reads the next frame as JSON, as [`RawConn::recv`] does; `None` at end of stream.
    pub async fn recv(&mut self) -> Option<Value> {
        read_raw_frame(&mut self.half).await
    }
}

/// The writing half of a [`RawConn`]. Its writes report errors instead of failing the test,
/// because a writer that the daemon stops reading from, or disconnects, is what some tests
/// are about.
pub struct RawWriter {
    half: tokio::net::unix::OwnedWriteHalf,
}

impl RawWriter {
    /// Sends `message` as one frame.
    pub async fn send(&mut self, message: &Value) -> std::io::Result<()> {
        let body = serde_json::to_vec(message).expect("encode");
        let len = u32::try_from(body.len()).expect("frame fits the prefix");
        let mut frame = len.to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        self.send_bytes(&frame).await
    }

    /// Writes `bytes` as they are.
    pub async fn send_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.half.write_all(bytes).await?;
        self.half.flush().await
    }
}

/// Reads one frame (4-byte big-endian length, then JSON) from `reader`; `None` when the daemon
/// closed the connection at a frame boundary. Fails the test if nothing arrives within a
/// generous timeout.
async fn read_raw_frame<R: tokio::io::AsyncRead + Unpin>(reader: &mut R) -> Option<Value> {
    use tokio::io::AsyncReadExt;
    within("reading a frame from the daemon", RAW_RECV_TIMEOUT, async {
        let mut prefix = [0u8; 4];
        match reader.read_exact(&mut prefix).await {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            // A reset is how a closed connection may look when we had unread data queued.
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => return None,
            Err(err) => panic!("raw read failed: {err}"),
        }
        let len = u32::from_be_bytes(prefix) as usize;
        let mut body = vec![0u8; len];
        reader
            .read_exact(&mut body)
            .await
            .expect("a whole frame body");
        Some(serde_json::from_slice(&body).expect("the daemon sends JSON"))
    })
    .await
}

/// How long a settings change may take to be seen before a test fails (far above the target
/// of 100 ms, so a loaded machine does not make the tests flaky).
pub const SEEN_WITHIN: Duration = Duration::from_secs(10);

/// Settings with one BeforeAgent hook named `name` that answers `{"systemMessage": message}`.
pub fn saying(name: &str, message: &str) -> Value {
    settings(&[(
        "BeforeAgent",
        None,
        vec![command_hook(
            name,
            &format!("echo '{{\"systemMessage\":\"{message}\"}}'"),
        )],
    )])
}

/// The systemMessage the BeforeAgent hooks of `cwd` answer now (`None`: no hook answered).
pub async fn message(client: &Client, cwd: &str) -> Option<String> {
    let result = fire(
        client,
        cwd,
        "BeforeAgent",
        serde_json::json!({"prompt": "p"}),
    )
    .await;
    assert!(result.success, "{result:?}");
    result
        .final_output
        .and_then(|output| output.get("systemMessage").cloned())
        .and_then(|message| message.as_str().map(str::to_owned))
}

/// Fires BeforeAgent until its answer is `expected`, failing after [`SEEN_WITHIN`].
pub async fn wait_for_message(client: &Client, cwd: &str, expected: Option<&str>) {
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let got = message(client, cwd).await;
        if got.as_deref() == expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "after {SEEN_WITHIN:?} the hooks of {cwd} still answer {got:?}, not {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
