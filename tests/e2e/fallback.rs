//! Never weaker than the CLI alone: the relay, run as a host runs a command hook, when hookd
//! is not there, is stopped, is killed mid-session, or cannot be found at all; and payloads
//! the model shapes (deep nesting, a huge stdin).
//!
//! The relay (`e2e-relay`, the code of `hookd-relay`) talks to a real daemon process
//! (`e2e-daemon`) and falls back on the real one-shot engine (`e2e-engine`, the code of
//! `hookd --oneshot`), both found through `HOOKD_ENGINE` as a packaged relay finds `hookd`
//! beside itself. The guard is a real script in hookd's user hooks file.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hookd_testkit::Hermetic;
use serde_json::{Value, json};

const RELAY: &str = env!("CARGO_BIN_EXE_e2e-relay");
const ENGINE: &str = env!("CARGO_BIN_EXE_e2e-engine");
const DAEMON: &str = env!("CARGO_BIN_EXE_e2e-daemon");

/// A home with hookd's user hooks file holding one guard, a project, a state directory and a
/// socket path (whose directory the daemon creates).
struct Setup {
    dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    socket: PathBuf,
    /// One line per run of the guard.
    marks: PathBuf,
}

impl Setup {
    /// The guard denies a shell command containing `rm -rf` and allows the rest, after
    /// sleeping `sleep` seconds; its failure policy is `on_failure`.
    fn new(sleep: &str, on_failure: &str) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(home.join(".config/hookd")).expect("home");
        std::fs::create_dir_all(&project).expect("project");
        let marks = dir.path().join("marks");
        let guard = home.join("guard.sh");
        std::fs::write(
            &guard,
            format!(
                "#!/usr/bin/env bash\n\
                 input=$(cat)\n\
                 echo ran >> '{}'\n\
                 sleep {sleep}\n\
                 case \"$input\" in\n\
                 *'rm -rf'*) echo '{{\"decision\":\"deny\",\"reason\":\"no rm -rf here\"}}' ;;\n\
                 *) echo '{{\"decision\":\"allow\"}}' ;;\n\
                 esac\n",
                marks.display()
            ),
        )
        .expect("guard");
        std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let hooks = json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
            {"name": "guard", "type": "command", "command": guard.display().to_string(),
             "timeout": 10000, "on_failure": on_failure}
        ]}]}});
        std::fs::write(home.join(".config/hookd/hooks.json"), hooks.to_string()).expect("hooks");
        let socket = dir.path().join("run/hookd.sock");
        Setup {
            home,
            project,
            socket,
            marks,
            dir,
        }
    }

    /// How many times the guard ran.
    fn runs(&self) -> usize {
        std::fs::read_to_string(&self.marks)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    }

    /// The environment every process of the test gets (and nothing of the test runner's
    /// hookd variables).
    fn env(&self, command: &mut Command) {
        command
            .hermetic(&self.home)
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("GEMINI_PROJECT_DIR", &self.project)
            .env("HOOKD_ENGINE", ENGINE)
            .current_dir(&self.project);
    }

    /// A BeforeTool payload as Gemini CLI sends it.
    fn payload(&self, command: &str, tool_input_extra: Value) -> Vec<u8> {
        let mut tool_input = json!({"command": command});
        if let (Some(input), Some(extra)) =
            (tool_input.as_object_mut(), tool_input_extra.as_object())
        {
            input.extend(extra.clone());
        }
        json!({
            "session_id": "s1",
            "cwd": self.project.display().to_string(),
            "hook_event_name": "BeforeTool",
            "tool_name": "run_shell_command",
            "tool_input": tool_input,
        })
        .to_string()
        .into_bytes()
    }

    /// Runs the relay as a host runs a command hook, `extra` adjusting its command.
    fn relay(&self, stdin: Vec<u8>, extra: impl FnOnce(&mut Command)) -> RelayRun {
        let mut command = Command::new(RELAY);
        command.arg("BeforeTool").arg("--socket").arg(&self.socket);
        self.env(&mut command);
        extra(&mut command);
        run_relay(command, stdin)
    }

    /// Starts the daemon process and waits until it accepts connections.
    fn start_daemon(&self) -> DaemonProcess {
        let mut command = Command::new(DAEMON);
        self.env(&mut command);
        command
            .env("HOOKD_SOCKET", &self.socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command.spawn().expect("the daemon starts");
        let started = Instant::now();
        while std::os::unix::net::UnixStream::connect(&self.socket).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the daemon never listened"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        DaemonProcess { child }
    }
}

/// A daemon process, killed when dropped.
struct DaemonProcess {
    child: Child,
}

impl DaemonProcess {
    fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).expect("signal the daemon");
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        self.signal(nix::sys::signal::Signal::SIGCONT);
        let _ = self.child.wait();
    }
}

/// What a host sees of one relay run.
#[derive(Debug)]
struct RelayRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl RelayRun {
    /// Whether the host was told to block the call.
    fn blocked(&self) -> bool {
        self.code == Some(2) || self.stdout.contains("\"deny\"")
    }

    /// Whether the host goes on: exit 0 and no blocking decision.
    fn allowed(&self) -> bool {
        self.code == Some(0) && !self.stdout.contains("\"deny\"")
    }

    fn says(&self, text: &str) -> bool {
        self.stdout.contains(text) || self.stderr.contains(text)
    }
}

/// Runs a relay command with `stdin`, written from a thread of its own (it may be large).
fn run_relay(mut command: Command, stdin: Vec<u8>) -> RelayRun {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().expect("the relay starts");
    let mut input = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let mut stdout = String::new();
    let mut stderr = String::new();
    let _ = child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout);
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr);
    let status = child.wait().expect("wait");
    let elapsed = started.elapsed();
    let _ = writer.join();
    RelayRun {
        code: status.code(),
        stdout,
        stderr,
        elapsed,
    }
}

/// Well under the relay's old 3 s retry, with room for a debug build on a loaded machine.
const QUICK: Duration = Duration::from_millis(2500);

#[test]
fn with_no_daemon_and_nothing_configured_the_guard_runs_in_the_engine_at_once() {
    let setup = Setup::new("0", "allow");
    // No socket at all: nothing is coming.
    for round in 0..2 {
        let denied = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
        assert!(denied.blocked(), "round {round}: {denied:?}");
        assert!(denied.says("no rm -rf here"), "{denied:?}");
        assert!(denied.elapsed < QUICK, "round {round}: {denied:?}");
        let allowed = setup.relay(setup.payload("ls", json!({})), |_| {});
        assert!(allowed.allowed(), "{allowed:?}");
        assert!(allowed.elapsed < QUICK, "{allowed:?}");
    }
    assert_eq!(setup.runs(), 4, "the guard runs once per event");
    // A stale socket nobody listens on (a daemon that died): refused, the same at once.
    std::fs::create_dir_all(setup.socket.parent().expect("dir")).expect("dir");
    std::fs::set_permissions(
        setup.socket.parent().expect("dir"),
        std::fs::Permissions::from_mode(0o700),
    )
    .expect("chmod");
    drop(std::os::unix::net::UnixListener::bind(&setup.socket).expect("bind"));
    assert!(setup.socket.exists());
    let denied = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
    assert!(
        denied.blocked() && denied.says("no rm -rf here"),
        "{denied:?}"
    );
    assert!(denied.elapsed < QUICK, "{denied:?}");
    // The fallback is in the relay's log, for `hookctl doctor`.
    let log =
        std::fs::read_to_string(setup.dir.path().join("state/hookd/relay.log")).expect("relay log");
    assert!(log.contains("ran the hooks with hookd --oneshot"), "{log}");
    // The explicit policies stay what they were.
    let allowed = setup.relay(setup.payload("rm -rf /", json!({})), |command| {
        command.args(["--unreachable", "allow", "--retry-ms", "0"]);
    });
    assert!(
        allowed.allowed() && allowed.stdout.is_empty(),
        "{allowed:?}"
    );
}

#[test]
fn without_an_engine_the_relay_fails_closed_and_says_why() {
    let setup = Setup::new("0", "allow");
    for engine in ["/nonexistent/hookd", "hookd-relative"] {
        let run = setup.relay(setup.payload("ls", json!({})), |command| {
            command.env("HOOKD_ENGINE", engine);
        });
        assert!(run.blocked(), "{engine}: {run:?}");
        assert!(run.says("engine was not found"), "{engine}: {run:?}");
        assert!(run.elapsed < QUICK, "{run:?}");
    }
    assert_eq!(setup.runs(), 0);
}

#[test]
fn a_daemon_stopped_before_it_says_hello_is_replaced_by_the_engine() {
    let setup = Setup::new("0", "allow");
    let daemon = setup.start_daemon();
    let answered = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
    assert!(answered.blocked(), "{answered:?}");
    daemon.signal(nix::sys::signal::Signal::SIGSTOP);
    // The kernel still accepts the connection, but no hello comes: the relay sees a stopped
    // process on the other end after 50 ms, and the engine runs the guard.
    let denied = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
    assert!(
        denied.blocked() && denied.says("no rm -rf here"),
        "{denied:?}"
    );
    assert!(denied.elapsed < QUICK, "{denied:?}");
    let allowed = setup.relay(setup.payload("ls", json!({})), |_| {});
    assert!(allowed.allowed(), "{allowed:?}");
}

#[test]
fn a_daemon_stopped_mid_run_leaves_the_decision_to_the_failure_policy_before_the_host_timeout() {
    // The entry's timeout `install` writes for this guard: its 10 s plus 10 s.
    let entry_timeout = Duration::from_secs(20);
    for (on_failure, blocks) in [("deny", true), ("allow", false)] {
        let setup = Setup::new("1", on_failure);
        let daemon = setup.start_daemon();
        let payload = setup.payload("ls", json!({}));
        let relay = {
            let mut command = Command::new(RELAY);
            command.arg("BeforeTool").arg("--socket").arg(&setup.socket);
            setup.env(&mut command);
            std::thread::spawn(move || run_relay(command, payload))
        };
        // The daemon has the event once its guard has started: then it stops.
        let started = Instant::now();
        while setup.runs() == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the guard never ran"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        daemon.signal(nix::sys::signal::Signal::SIGSTOP);
        let run = relay.join().expect("relay");
        assert_eq!(run.blocked(), blocks, "{on_failure}: {run:?}");
        assert!(run.elapsed < entry_timeout / 2, "{on_failure}: {run:?}");
        // Seen stopped at the first check, 1 s after the hello, not at the pong's deadline.
        assert!(
            run.elapsed < Duration::from_secs(5),
            "{on_failure}: {run:?}"
        );
        // Decided by the policy, not run a second time.
        assert_eq!(setup.runs(), 1, "{on_failure}");
        if blocks {
            assert!(run.says("did not answer in time"), "{run:?}");
        }
    }
}

#[test]
fn a_slow_guard_on_a_healthy_daemon_is_never_cut_short() {
    // The guard takes 4 s, longer than the relay's ping check (1 s, then 2 s for the pong):
    // a daemon that answers pings keeps the event, and the guard's own answer arrives.
    let setup = Setup::new("4", "deny");
    let _daemon = setup.start_daemon();
    let run = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
    assert!(run.blocked() && run.says("no rm -rf here"), "{run:?}");
    assert!(!run.says("did not answer in time"), "{run:?}");
    assert!(run.elapsed >= Duration::from_secs(4), "{run:?}");
    let run = setup.relay(setup.payload("ls", json!({})), |_| {});
    assert!(run.allowed(), "{run:?}");
    assert_eq!(setup.runs(), 2, "each guard ran once, in the daemon");
}

#[test]
fn a_daemon_killed_mid_session_lets_no_guarded_call_through() {
    let setup = Setup::new("0.5", "allow");
    let daemon = setup.start_daemon();
    let payload = setup.payload("rm -rf /", json!({}));
    let relay = {
        let mut command = Command::new(RELAY);
        command.arg("BeforeTool").arg("--socket").arg(&setup.socket);
        setup.env(&mut command);
        std::thread::spawn(move || run_relay(command, payload))
    };
    let started = Instant::now();
    while setup.runs() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the guard never ran"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    let cut = relay.join().expect("relay");
    assert!(cut.blocked() && cut.says("no rm -rf here"), "{cut:?}");
    for _ in 0..3 {
        let denied = setup.relay(setup.payload("rm -rf ~", json!({})), |_| {});
        assert!(
            denied.blocked() && denied.says("no rm -rf here"),
            "{denied:?}"
        );
        assert!(denied.elapsed < QUICK, "{denied:?}");
    }
    let allowed = setup.relay(setup.payload("ls", json!({})), |_| {});
    assert!(allowed.allowed(), "{allowed:?}");
    drop(daemon);
}

/// `{"f": {"f": ... {"f": 1}}}`, `levels` objects deep, as text.
fn nested(levels: usize) -> String {
    format!("{}1{}", "{\"f\":".repeat(levels), "}".repeat(levels))
}

/// A payload whose `tool_input.filter` nests `levels` deep, as text.
fn deep_payload(setup: &Setup, command: &str, levels: usize) -> Vec<u8> {
    let filter = nested(levels);
    assert_eq!(hookd_protocol::json_depth(filter.as_bytes()), levels);
    let shallow =
        String::from_utf8(setup.payload(command, json!({"filter": "FILTER"}))).expect("utf-8");
    shallow.replace("\"FILTER\"", &filter).into_bytes()
}

#[test]
fn deeply_nested_tool_input_is_decided_by_the_gate_through_the_daemon_and_the_engine() {
    let setup = Setup::new("0", "allow");
    // The engine, with no daemon.
    for levels in [125, 10_000] {
        let denied = setup.relay(deep_payload(&setup, "rm -rf /", levels), |_| {});
        assert!(
            denied.blocked() && denied.says("no rm -rf here"),
            "{levels}: {denied:?}"
        );
        let allowed = setup.relay(deep_payload(&setup, "ls", levels), |_| {});
        assert!(allowed.allowed(), "{levels}: {allowed:?}");
    }
    // The daemon, over its socket: no engine to fall back on, so an answer is the daemon's.
    let daemon = setup.start_daemon();
    for levels in [125, 10_000] {
        let no_engine = |command: &mut Command| {
            command.env("HOOKD_ENGINE", "/nonexistent/hookd");
        };
        let denied = setup.relay(deep_payload(&setup, "rm -rf /", levels), no_engine);
        assert!(
            denied.blocked() && denied.says("no rm -rf here"),
            "{levels}: {denied:?}"
        );
        let allowed = setup.relay(deep_payload(&setup, "ls", levels), no_engine);
        assert!(allowed.allowed(), "{levels}: {allowed:?}");
    }
    assert_eq!(setup.runs(), 8);
    // Deeper than any host sends: the policy decides, and under `run` that blocks.
    let too_deep = deep_payload(&setup, "ls", hookd_protocol::MAX_JSON_DEPTH + 10);
    let blocked = setup.relay(too_deep, |_| {});
    assert!(
        blocked.blocked() && blocked.says("deeper than"),
        "{blocked:?}"
    );
    assert_eq!(setup.runs(), 8);
    drop(daemon);
}

/// The peak resident memory of a command, in KiB, as `/usr/bin/time` reports it.
fn peak_rss_kib(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .rev()
        .find_map(|line| line.trim().parse().ok())
}

#[test]
fn a_huge_stdin_is_answered_by_the_policy_with_bounded_memory() {
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("skipped: /usr/bin/time is not installed");
        return;
    }
    let setup = Setup::new("0", "allow");
    let mut payload = setup.payload("ls", json!({"content": "X"}));
    let at = payload
        .windows(3)
        .position(|window| window == b"\"X\"")
        .expect("placeholder");
    let filler = vec![b'a'; 100 * 1024 * 1024];
    payload.splice(at + 1..at + 2, filler);
    let mut command = Command::new("/usr/bin/time");
    command
        .args(["-f", "%M", RELAY, "BeforeTool", "--socket"])
        .arg(&setup.socket);
    setup.env(&mut command);
    let run = run_relay(command, payload);
    assert!(run.blocked(), "{:?} {:?}", run.code, run.stdout);
    assert!(run.says("larger than"), "{}", run.stdout);
    let peak = peak_rss_kib(&run.stderr).expect("time's report");
    assert!(peak < 160 * 1024, "the relay peaked at {peak} KiB");
    assert_eq!(setup.runs(), 0);
    // Under an explicit allow it is allowed, as asked.
    let mut payload = setup.payload("ls", json!({}));
    payload.extend(std::iter::repeat_n(b' ', 70 * 1024 * 1024));
    let allowed = setup.relay(payload, |command| {
        command.args(["--unreachable", "allow"]);
    });
    assert!(allowed.allowed(), "{:?}", allowed.code);
}

#[test]
fn the_engine_reads_trust_and_the_daemons_options_exactly_as_the_daemon() {
    let setup = Setup::new("0", "allow");
    // An untrusted project hook that would leave a mark.
    let mark = setup.dir.path().join("project-hook-ran");
    let project_hooks = json!({"hooks": {"BeforeTool": [{"hooks": [
        {"name": "project-hook", "type": "command",
         "command": format!("touch '{}'", mark.display())}
    ]}]}});
    std::fs::create_dir_all(setup.project.join(".hookd")).expect("dir");
    std::fs::write(
        setup.project.join(".hookd/hooks.json"),
        project_hooks.to_string(),
    )
    .expect("project hooks");
    // The daemon of this socket ran with --project-hooks require.
    let state = setup.dir.path().join("state/hookd");
    let record = hookd_server::EngineOptions::record_path(&state, &setup.socket);
    let defaults = hookd_server::EngineOptions::from_config(&hookd_server::ServerConfig::new(
        Default::default(),
    ));
    hookd_server::EngineOptions {
        project_hooks: hookd_core::trust::ProjectHookPolicy::Require,
        ..defaults
    }
    .record(&record)
    .expect("record");
    let denied = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
    assert!(
        denied.blocked() && denied.says("no rm -rf here"),
        "{denied:?}"
    );
    assert!(
        !mark.exists(),
        "an untrusted project hook ran under require"
    );
    // A record others can write is not believed: the engine falls back to the defaults
    // (warn: the hook runs, as Gemini CLI would run it).
    std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let denied = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
    assert!(denied.blocked(), "{denied:?}");
    assert!(
        mark.exists(),
        "the project hook did not run under the defaults"
    );
    // A project settings file that is a FIFO (never written) is refused by the loader, not
    // waited on: the user's guard still answers, quickly.
    std::fs::create_dir_all(setup.project.join(".gemini")).expect("dir");
    nix::unistd::mkfifo(
        &setup.project.join(".gemini/settings.json"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .expect("fifo");
    let denied = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
    assert!(
        denied.blocked() && denied.says("no rm -rf here"),
        "{denied:?}"
    );
    assert!(denied.elapsed < Duration::from_secs(5), "{denied:?}");
    std::fs::remove_file(setup.project.join(".gemini/settings.json")).expect("remove fifo");
    // A project hooks file over the loader's size bound is not read (its hooks do not run),
    // and a catastrophic matcher is matched in linear time: the guard still answers, quickly.
    std::fs::remove_file(&mark).expect("remove mark");
    let mut huge = project_hooks.to_string().into_bytes();
    huge.extend(std::iter::repeat_n(b' ', 5 * 1024 * 1024));
    std::fs::write(setup.project.join(".hookd/hooks.json"), huge).expect("huge");
    // The catastrophic matcher sits in hookd's own user file, which the engine runs.
    let user_hooks = setup.home.join(".config/hookd/hooks.json");
    let mut hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(&user_hooks).expect("read")).expect("json");
    hooks["hooks"]["BeforeTool"]
        .as_array_mut()
        .expect("groups")
        .push(json!({"matcher": "(a|aa)+$", "hooks": [
            {"name": "backtracker", "type": "command", "command": "true"}
        ]}));
    std::fs::write(&user_hooks, hooks.to_string()).expect("write");
    let mut payload: Value =
        serde_json::from_slice(&setup.payload("rm -rf /", json!({}))).expect("payload");
    payload["tool_name"] = Value::String(format!("{}b", "a".repeat(50_000)));
    let answered = setup.relay(payload.to_string().into_bytes(), |_| {});
    assert!(answered.code.is_some(), "{answered:?}");
    assert!(answered.elapsed < Duration::from_secs(5), "{answered:?}");
    assert!(!mark.exists(), "a hook of an oversized file ran");
    let denied = setup.relay(setup.payload("rm -rf /", json!({})), |_| {});
    assert!(
        denied.blocked() && denied.says("no rm -rf here"),
        "{denied:?}"
    );
    assert!(!mark.exists(), "a hook of an oversized file ran");
}
