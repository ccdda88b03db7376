//! The real `hookd` binary under systemd's socket-activation protocol.
//!
//! `systemd-socket-activate` opens the listening socket, waits for the first connection, then
//! starts hookd with the socket as fd 3 and `LISTEN_FDS`/`LISTEN_PID` set, exactly as systemd
//! does. The test binds the `NOTIFY_SOCKET` datagram socket itself and reads what hookd tells
//! systemd. Every wait is a bounded poll for a condition; no timing is asserted below seconds.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use hookd_testkit::Hermetic;
use hookd_testkit::{DaemonProcess, KillOnDrop};

/// How long any single condition may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// The activation tool, or `None` (with the reason printed) when it is not installed.
fn socket_activate_tool() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
        .map(|dir| dir.join("systemd-socket-activate"))
        .find(|candidate| candidate.is_file());
    if found.is_none() {
        eprintln!(
            "skipped: systemd-socket-activate is not installed (Debian package `systemd`; .ci/run installs it)"
        );
    }
    found
}

/// Polls `condition` until it holds; panics after [`PATIENCE`].
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `message` (an sd_notify datagram) has `line` as one of its lines.
fn has_line(message: &str, line: &str) -> bool {
    message.lines().any(|l| l == line)
}

/// The test's end of `NOTIFY_SOCKET`.
struct Notifications {
    socket: UnixDatagram,
    path: PathBuf,
}

impl Notifications {
    fn bind(path: PathBuf) -> Notifications {
        let socket = UnixDatagram::bind(&path).unwrap();
        Notifications { socket, path }
    }

    /// Receives messages until one satisfies `wanted`, and returns it; earlier ones are
    /// dropped (watchdog pings interleave with everything).
    fn wait_for(&self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        let mut buffer = vec![0u8; 4096];
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .filter(|left| !left.is_zero())
                .unwrap_or_else(|| panic!("timed out waiting for the notification {what}"));
            self.socket.set_read_timeout(Some(left)).unwrap();
            match self.socket.recv(&mut buffer) {
                Ok(len) => {
                    let message = String::from_utf8_lossy(&buffer[..len]).into_owned();
                    if wanted(&message) {
                        return message;
                    }
                }
                Err(err)
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(err) => panic!("notify socket: {err}"),
            }
        }
    }

    /// A message already waiting, without blocking.
    fn pending(&self) -> Option<String> {
        self.socket.set_nonblocking(true).unwrap();
        let mut buffer = vec![0u8; 4096];
        let message = self
            .socket
            .recv(&mut buffer)
            .ok()
            .map(|len| String::from_utf8_lossy(&buffer[..len]).into_owned());
        self.socket.set_nonblocking(false).unwrap();
        message
    }
}

/// A blocking protocol client speaking raw frames (4-byte big-endian length + JSON).
struct Client {
    stream: UnixStream,
}

impl Client {
    fn connect(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        Client { stream }
    }

    fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).unwrap();
        let len = u32::try_from(body.len()).unwrap();
        self.stream.write_all(&len.to_be_bytes()).unwrap();
        self.stream.write_all(&body).unwrap();
    }

    fn receive(&mut self) -> Value {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// Says hello and returns the daemon's pid from its answer.
    fn hello(&mut self) -> u32 {
        self.send(&json!({"type": "hello", "protocol": 1, "client": "t"}));
        let reply = self.receive();
        assert_eq!(reply["type"], "hello", "{reply}");
        u32::try_from(reply["pid"].as_u64().unwrap()).unwrap()
    }

    fn ping(&mut self) {
        self.send(&json!({"type": "ping", "id": 1}));
        let reply = self.receive();
        assert_eq!(reply, json!({"type": "pong", "id": 1}));
    }

    /// Sends an event and returns its final answer.
    fn event(&mut self, event: &str, cwd: &Path, input: Value) -> Value {
        self.send(&json!({
            "type": "event", "id": 2, "event": event, "cwd": cwd.display().to_string(),
            "input": input,
        }));
        let reply = self.receive();
        assert_eq!(reply["type"], "result", "{reply}");
        reply
    }
}

/// Connects, says hello, pings; returns the serving daemon's pid.
fn hello_and_ping(socket: &Path) -> u32 {
    let mut client = Client::connect(socket);
    let pid = client.hello();
    client.ping();
    pid
}

/// The test kit's daemon files (a temp home with user hooks, a project dir, the socket's
/// path; through [`std::ops::Deref`]) and the log of an activated daemon.
struct Fixture {
    files: DaemonProcess,
    log: PathBuf,
}

impl std::ops::Deref for Fixture {
    type Target = DaemonProcess;

    fn deref(&self) -> &DaemonProcess {
        &self.files
    }
}

impl Fixture {
    fn new() -> Fixture {
        let files = DaemonProcess::prepare(None);
        let home = &files.home;
        let envdump = script(
            home,
            "envdump.sh",
            // The hook's own environment and its bash's open descriptors, on stderr.
            "{ env; echo OPEN-FDS; ls -l /proc/$$/fd; } >&2",
        );
        let slow = script(
            home,
            "slow.sh",
            "touch \"$HOME/started\"; sleep 1; echo '{\"systemMessage\":\"finished\"}'",
        );
        let settings = json!({"hooks": {
            "BeforeTool": [{"hooks": [{"name": "envdump", "type": "command", "command": envdump}]}],
            "BeforeAgent": [{"hooks": [{"name": "slow", "type": "command", "command": slow}]}],
        }});
        std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).unwrap();
        Fixture {
            log: files.dir.path().join("hookd.log"),
            files,
        }
    }

    /// `systemd-socket-activate` on the fixture's socket, passing `vars` to the program it
    /// starts (it passes nothing else but PATH, HOME, USER and TERM).
    fn activate(&self, tool: &Path, vars: &[(&str, String)], program: &[String]) -> Command {
        std::fs::create_dir_all(self.socket.parent().unwrap()).unwrap();
        let mut command = Command::new(tool);
        command.arg("-l").arg(&self.socket);
        for (name, value) in vars {
            command.arg("-E").arg(format!("{name}={value}"));
        }
        // Keep the machine's settings layers out of the test.
        for (name, file) in [
            ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "etc/settings.json"),
            (
                "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
                "etc/system-defaults.json",
            ),
        ] {
            command
                .arg("-E")
                .arg(format!("{name}={}", self.dir.path().join(file).display()));
        }
        command.arg("--").args(program);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .hermetic(&self.home)
            .stdout(std::fs::File::create(&self.log).unwrap())
            .stderr(std::fs::File::create(self.log.with_extension("err")).unwrap());
        command
    }

    /// The daemon's log so far (printed when a test fails).
    fn logs(&self) -> String {
        let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
        format!(
            "{}{}",
            read(&self.log),
            read(&self.log.with_extension("err"))
        )
    }

    /// Waits until the activation socket listens. Its file appears at `bind`, before
    /// `listen`, and a client connecting in between is refused; connecting to find out would
    /// start the daemon, so the kernel's socket table says instead.
    fn wait_for_socket(&self) {
        wait_until("the activation socket", || listening(&self.socket));
    }
}

/// Whether a Unix socket bound at `path` is listening, from `/proc/net/unix` (whose `Flags`
/// column has `__SO_ACCEPTCON`, 0x10000, for a listening socket).
fn listening(path: &Path) -> bool {
    let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let path = path.to_string_lossy();
    table.lines().skip(1).any(|line| {
        let columns: Vec<&str> = line.split_whitespace().collect();
        columns.len() >= 8
            && columns[7] == path
            && u32::from_str_radix(columns[3], 16).is_ok_and(|flags| flags & 0x10000 != 0)
    })
}

/// Writes an executable script into `dir` and returns its path as a string.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// The hookd command line the tests run.
fn hookd_command() -> Vec<String> {
    [
        env!("CARGO_BIN_EXE_hookd"),
        "--log-level",
        "debug",
        "--shutdown-grace-ms",
        "10000",
        "--kill-grace-ms",
        "500",
    ]
    .map(String::from)
    .to_vec()
}

/// Waits for `child` to exit, bounded.
fn wait_for_exit(child: &mut Child) -> ExitStatus {
    let mut status = None;
    wait_until("the process to exit", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

fn signal(pid: u32, signal: Signal) {
    kill(Pid::from_raw(i32::try_from(pid).unwrap()), signal).unwrap();
}

#[test]
fn activation_readiness_reload_watchdog_and_graceful_stop() {
    let Some(tool) = socket_activate_tool() else {
        return;
    };
    let fixture = Fixture::new();
    let notify = Notifications::bind(fixture.dir.path().join("notify.sock"));
    let vars = [
        ("NOTIFY_SOCKET", notify.path.display().to_string()),
        ("WATCHDOG_USEC", "400000".to_owned()),
    ];
    let mut daemon = KillOnDrop(
        fixture
            .activate(&tool, &vars, &hookd_command())
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    fixture.wait_for_socket();
    // Nothing runs until the first connection.
    assert_eq!(notify.pending(), None, "{}", fixture.logs());

    // The first connection starts hookd, which takes over the activation tool's pid, and is
    // served.
    let mut first = Client::connect(&fixture.socket);
    assert_eq!(first.hello(), daemon.0.id(), "{}", fixture.logs());
    first.ping();

    let ready = notify.wait_for("READY=1", |m| has_line(m, "READY=1"));
    assert!(ready.lines().any(|l| l.starts_with("STATUS=")), "{ready:?}");
    // Ready means accepting: a new connection is served at once.
    assert_eq!(hello_and_ping(&fixture.socket), daemon.0.id());

    for _ in 0..3 {
        notify.wait_for("WATCHDOG=1", |m| has_line(m, "WATCHDOG=1"));
    }

    // A hook sees none of systemd's variables for the daemon, and no inherited socket.
    let result = first.event(
        "BeforeTool",
        &fixture.project,
        json!({"tool_name": "read_file"}),
    );
    let stderr = result["hooks"][0]["stderr"].as_str().unwrap();
    assert!(stderr.contains("HOME="), "{stderr}");
    assert!(stderr.contains("OPEN-FDS"), "{stderr}");
    for name in [
        "LISTEN_FDS=",
        "LISTEN_PID=",
        "LISTEN_FDNAMES=",
        "NOTIFY_SOCKET=",
        "WATCHDOG_USEC=",
        "WATCHDOG_PID=",
    ] {
        assert!(
            !stderr.lines().any(|line| line.starts_with(name)),
            "{name} leaked into a hook:\n{stderr}"
        );
    }
    assert!(
        !stderr.contains("socket:["),
        "a hook inherited a socket:\n{stderr}"
    );

    // SIGHUP: RELOADING=1 (with the monotonic timestamp), then READY=1 again.
    signal(daemon.0.id(), Signal::SIGHUP);
    let reloading = notify.wait_for("RELOADING=1", |m| has_line(m, "RELOADING=1"));
    assert!(
        reloading.lines().any(|l| l.starts_with("MONOTONIC_USEC=")),
        "{reloading:?}"
    );
    notify.wait_for("READY=1 after the reload", |m| has_line(m, "READY=1"));
    first.ping();

    // SIGTERM with a run in flight: STOPPING=1, the run finishes, hookd exits 0.
    let started = fixture.home.join("started");
    let project = fixture.project.clone();
    let in_flight =
        std::thread::spawn(move || first.event("BeforeAgent", &project, json!({"prompt": "p"})));
    wait_until("the slow hook to start", || started.exists());
    signal(daemon.0.id(), Signal::SIGTERM);
    notify.wait_for("STOPPING=1", |m| has_line(m, "STOPPING=1"));
    let result = in_flight.join().unwrap();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["final_output"]["systemMessage"], "finished");
    let status = wait_for_exit(&mut daemon.0);
    assert_eq!(status.code(), Some(0), "{}", fixture.logs());
}

/// A minimal service manager for the restart test: it holds the activation socket (fd 3) like
/// systemd does and starts one hookd per `start` line on its stdin, passing the socket with
/// `LISTEN_PID` set to that hookd's pid. Each exit status is appended to `$EXITS`.
const SUPERVISOR: &str = r#"
while read -r command && [ "$command" = start ]; do
  bash -c 'export LISTEN_PID=$$; exec "$@"' hookd "$@" </dev/null
  echo "exited $?" >> "$EXITS"
done
"#;

#[test]
fn clients_queued_during_a_restart_are_all_served() {
    let Some(tool) = socket_activate_tool() else {
        return;
    };
    let fixture = Fixture::new();
    let notify = Notifications::bind(fixture.dir.path().join("notify.sock"));
    let exits = fixture.dir.path().join("exits");
    let vars = [
        ("NOTIFY_SOCKET", notify.path.display().to_string()),
        ("EXITS", exits.display().to_string()),
    ];
    let mut program = vec![
        "bash".to_owned(),
        "-c".to_owned(),
        SUPERVISOR.to_owned(),
        "supervisor".to_owned(),
    ];
    program.extend(hookd_command());
    let mut supervisor = KillOnDrop(
        fixture
            .activate(&tool, &vars, &program)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut control: ChildStdin = supervisor.0.stdin.take().unwrap();
    let start = |control: &mut ChildStdin| {
        control.write_all(b"start\n").unwrap();
        control.flush().unwrap();
    };
    let exit_lines = || {
        std::fs::read_to_string(&exits)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect::<Vec<_>>()
    };

    start(&mut control);
    fixture.wait_for_socket();
    let old = hello_and_ping(&fixture.socket);
    notify.wait_for("READY=1", |m| has_line(m, "READY=1"));

    // Stop the daemon; from STOPPING=1 on it accepts nothing, so every client from here on
    // waits in the socket's backlog, which the supervisor keeps open: some connect while the
    // old daemon drains, some once it has exited and no hookd runs at all.
    signal(old, Signal::SIGTERM);
    notify.wait_for("STOPPING=1", |m| has_line(m, "STOPPING=1"));
    let mut clients = queue_clients(&fixture.socket, 10);
    wait_until("the old daemon to exit", || !exit_lines().is_empty());
    assert_eq!(exit_lines(), ["exited 0"], "{}", fixture.logs());
    clients.extend(queue_clients(&fixture.socket, 10));

    // The next daemon takes the same socket and serves everyone who queued.
    start(&mut control);
    let pids: Vec<u32> = clients
        .into_iter()
        .map(|client| client.join().unwrap())
        .collect();
    let new = pids[0];
    assert_ne!(new, old);
    assert!(pids.iter().all(|&pid| pid == new), "{pids:?}");
    notify.wait_for("READY=1 from the new daemon", |m| has_line(m, "READY=1"));

    // Closing the supervisor's stdin ends its loop once this daemon exits.
    drop(control);
    signal(new, Signal::SIGTERM);
    let status = wait_for_exit(&mut supervisor.0);
    assert!(status.success(), "{}", fixture.logs());
    assert_eq!(exit_lines(), ["exited 0", "exited 0"]);
}

/// Starts `count` clients that each connect, then say hello and ping; returns once all are
/// connected. Each thread returns the pid of the daemon that served it.
fn queue_clients(socket: &Path, count: usize) -> Vec<std::thread::JoinHandle<u32>> {
    let (connected_tx, connected_rx) = mpsc::channel();
    let clients: Vec<_> = (0..count)
        .map(|_| {
            let socket = socket.to_owned();
            let connected = connected_tx.clone();
            std::thread::spawn(move || {
                let mut client = Client::connect(&socket);
                connected.send(()).unwrap();
                let pid = client.hello();
                client.ping();
                pid
            })
        })
        .collect();
    for _ in 0..count {
        connected_rx
            .recv_timeout(PATIENCE)
            .expect("a client could not connect while hookd was restarting");
    }
    clients
}

#[test]
fn without_activation_hookd_binds_its_own_socket_and_logs_for_the_journal() {
    let fixture = Fixture::new();
    let log = std::fs::File::create(&fixture.log).unwrap();
    let journal = std::fs::metadata(&fixture.log).unwrap();
    let mut daemon = fixture.spawn(
        fixture
            .hookd(env!("CARGO_BIN_EXE_hookd"))
            // Socket-activation variables meant for another process are ignored.
            .env("LISTEN_FDS", "1")
            .env("LISTEN_PID", "1")
            // stderr is "the journal": the file JOURNAL_STREAM names.
            .env(
                "JOURNAL_STREAM",
                format!("{}:{}", journal.dev(), journal.ino()),
            )
            .stderr(log),
    );
    wait_until("hookd to bind its socket", || {
        UnixStream::connect(&fixture.socket).is_ok()
    });
    hello_and_ping(&fixture.socket);
    signal(daemon.0.id(), Signal::SIGTERM);
    let status = wait_for_exit(&mut daemon.0);
    assert_eq!(status.code(), Some(0), "{}", fixture.logs());
    assert!(!fixture.socket.exists(), "hookd left its own socket behind");

    let logs = fixture.logs();
    let lines: Vec<&str> = logs.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("<6>hookd: hookd listening")),
        "{logs}"
    );
    assert!(lines.iter().all(|l| l.starts_with('<')), "{logs}");
    assert!(!logs.contains('\u{1b}'), "{logs}");
}
