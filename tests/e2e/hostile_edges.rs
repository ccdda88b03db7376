//! Hostile edges: another local user squatting the socket, hooks that flood, leak or leave
//! processes behind, a daemon out of descriptors, a deleted audit log, and connections that
//! hold huge half-sent frames. For each, the decision must be the safe one, and another client
//! must still get its answer within a bound while the attack runs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use hookd_client::{Client, ClientError, ConnectOptions};
use hookd_protocol::{EventResult, Outcome, SocketTrustError};
use hookd_testkit::{
    Daemon, DaemonOptions, MemoryWatch, RawConn, command_hook, fire, memory_test_lock, settings,
    within,
};
use serde_json::{Value, json};

/// How long the bystander's answer may take while an attack runs: far above a normal answer
/// (milliseconds), far below what any of these attacks used to cost (seconds to minutes).
const BYSTANDER_BOUND: Duration = Duration::from_secs(3);

/// A gate for `tool` that denies (the hook is `command`, `on_failure: deny`), and a `probe`
/// tool whose hook allows at once, for the bystander.
fn gate_settings(tool: &str, gate: Value) -> Value {
    settings(&[
        ("BeforeTool", Some(&format!("^{tool}$")), vec![gate]),
        (
            "BeforeTool",
            Some("^probe$"),
            vec![command_hook("probe", "echo '{\"decision\":\"allow\"}'")],
        ),
    ])
}

/// A command hook that fails closed.
fn closed_hook(name: &str, command: &str) -> Value {
    let mut hook = command_hook(name, command);
    hook["on_failure"] = json!("deny");
    hook
}

/// Fires BeforeTool for `tool` on a new connection.
async fn fire_tool(daemon: &Daemon, tool: &str) -> EventResult {
    let client = daemon.client().await;
    fire(
        &client,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": tool, "tool_input": {}}),
    )
    .await
}

/// Another client's probe while an attack runs: answered, allowed, within the bound.
async fn bystander_is_served(daemon: &Daemon, what: &str) {
    let started = Instant::now();
    let result = within(
        &format!("the bystander's answer during {what}"),
        BYSTANDER_BOUND,
        fire_tool(daemon, "probe"),
    )
    .await;
    assert_eq!(decision(&result), Some("allow"), "{what}: {result:?}");
    assert!(started.elapsed() < BYSTANDER_BOUND);
}

fn decision(result: &EventResult) -> Option<&str> {
    result
        .final_output
        .as_ref()
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str)
}

/// A socket in a directory other users can write to, or behind a planted symbolic
/// link, gets nothing from a client (no hello, no environment); the daemon refuses to bind
/// there and changes no mode; the user's real daemon keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_squatted_socket_gets_nothing_and_is_never_chmodded() {
    let daemon = Daemon::start(gate_settings("x", closed_hook("gate", "exit 0"))).await;
    let root = daemon.path("squat");
    let wide = root.join("wide");
    std::fs::create_dir_all(&wide).unwrap();
    std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let own = root.join("own");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
    let planted = root.join("planted");
    std::os::unix::fs::symlink(&own, &planted).unwrap();

    // The "other user's" fake daemon listens in the wide directory and behind the link.
    let fake_wide = tokio::net::UnixListener::bind(wide.join("hookd.sock")).unwrap();
    let fake_own = tokio::net::UnixListener::bind(own.join("hookd.sock")).unwrap();
    for (socket, fake) in [
        (wide.join("hookd.sock"), &fake_wide),
        (planted.join("hookd.sock"), &fake_own),
    ] {
        let options = ConnectOptions {
            env: Some([("API_KEY".to_owned(), "secret".to_owned())].into()),
            ..ConnectOptions::default()
        };
        let error = Client::connect(&socket, options).await.unwrap_err();
        assert!(
            matches!(
                error,
                ClientError::UntrustedSocket(
                    SocketTrustError::DirectoryWritable { .. }
                        | SocketTrustError::DirectoryIsSymlink { .. }
                )
            ),
            "{socket:?}: {error}"
        );
        let accepted = tokio::time::timeout(Duration::from_millis(50), fake.accept()).await;
        assert!(
            accepted.is_err(),
            "{socket:?}: the fake daemon was contacted"
        );
        bystander_is_served(&daemon, "a squatted socket").await;
    }

    // The daemon refuses both places and leaves their modes alone.
    drop((fake_wide, fake_own));
    for (dir, mode) in [(&wide, 0o1777), (&planted, 0o755)] {
        let error = hookd_server::bind_socket(&dir.join("other.sock"))
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains(&dir.display().to_string()),
            "{error}"
        );
        assert_eq!(
            std::fs::metadata(dir).unwrap().permissions().mode() & 0o7777,
            mode
        );
    }
    daemon.stop().await;
}

/// A gate that prints its deny and floods stderr (or pads its reason past the stdout
/// cap) still denies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_beside_a_flood_still_denies() {
    let _serial = memory_test_lock().await;
    let stderr_flood = "echo '{\"decision\":\"deny\",\"reason\":\"flood\"}'; \
                        head -c 8388608 /dev/zero | tr '\\0' e >&2";
    let padded_reason = "printf '{\"decision\":\"deny\",\"reason\":\"'; \
                         head -c 3145728 /dev/zero | tr '\\0' p; printf '\"}'";
    let daemon = Daemon::start(settings(&[
        (
            "BeforeTool",
            Some("^stderr$"),
            vec![command_hook("stderr-flood", stderr_flood)],
        ),
        (
            "BeforeTool",
            Some("^stdout$"),
            vec![command_hook("padded", padded_reason)],
        ),
        (
            "BeforeTool",
            Some("^probe$"),
            vec![command_hook("probe", "echo '{\"decision\":\"allow\"}'")],
        ),
    ]))
    .await;
    let memory = MemoryWatch::start();
    for tool in ["stderr", "stdout"] {
        let attack = fire_tool(&daemon, tool);
        let bystander = bystander_is_served(&daemon, "an output flood");
        let (result, ()) = tokio::join!(attack, bystander);
        assert_eq!(decision(&result), Some("deny"), "{tool}: {result:?}");
        let hook = &result.hooks[0];
        if tool == "stderr" {
            // Not even a failure: stdout decided, stderr was cut and drained.
            assert_eq!(hook.outcome, Outcome::Exited { code: 0 }, "{hook:?}");
            assert!(hook.stderr.contains("truncated"), "{hook:?}");
        } else {
            assert_eq!(
                hook.failure.as_deref(),
                Some("output_too_large"),
                "{hook:?}"
            );
        }
    }
    daemon.stop().await;
    memory
        .finish()
        .assert_bounded("output floods beside a deny", 64);
}

/// A gate that leaves `sleep 30 &` holding its pipes and prints its deny is answered
/// within a fraction of a second, with its deny.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_sleep_does_not_hold_a_deny() {
    let gate = closed_hook(
        "sleeper",
        "sleep 30 & echo '{\"decision\":\"deny\",\"reason\":\"left a sleeper\"}'",
    );
    let daemon = Daemon::start(gate_settings("sleepy", gate)).await;
    let started = Instant::now();
    let attack = fire_tool(&daemon, "sleepy");
    let bystander = bystander_is_served(&daemon, "a hook leaving a sleeper");
    let (result, ()) = tokio::join!(attack, bystander);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(decision(&result), Some("deny"), "{result:?}");
    assert_eq!(result.hooks[0].outcome, Outcome::Exited { code: 0 });
    daemon.stop().await;
}

/// The daemon out of file descriptors. The attack lowers the open-files limit of a
/// whole process, so it runs in a child process of this test binary (the
/// `fd_exhaustion_child` test below, selected by an environment variable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_out_of_descriptors_keeps_a_deny_gate_closed() {
    let exe = std::env::current_exe().unwrap();
    let output = tokio::process::Command::new(exe)
        .args([
            "hostile_edges::fd_exhaustion_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FD_CHILD_VAR, "1")
        .output();
    let output = within(
        "the descriptor-exhaustion child",
        Duration::from_secs(60),
        output,
    )
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(FD_CHILD_DONE),
        "the child did not run:\n{stdout}\n{stderr}"
    );
}

/// Set for the child of [`a_daemon_out_of_descriptors_keeps_a_deny_gate_closed`].
const FD_CHILD_VAR: &str = "HOOKD_E2E_FD_EXHAUSTION_CHILD";

/// Printed by the child when every check passed.
const FD_CHILD_DONE: &str = "fd-exhaustion-child: all checks passed";

/// The child: start a daemon, connect two clients, then take every descriptor the process
/// may open. The gate cannot be started (its pipes need descriptors): it must deny under its
/// `on_failure`, and the other client must still be answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fd_exhaustion_child() {
    if std::env::var_os(FD_CHILD_VAR).is_none() {
        return;
    }
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    // The gate is the user's own: the project's settings file is re-read once after its
    // watches are set up, and a read that fails for want of descriptors drops that layer
    // (see docs/reliability.md); the user layer is read once at start.
    let gate = closed_hook("gate", "echo '{\"decision\":\"allow\"}'");
    let user = settings(&[
        ("BeforeTool", Some("^gated$"), vec![gate]),
        ("BeforeTool", Some("^free$"), Vec::new()),
    ]);
    let daemon = Daemon::start_with(
        json!({}),
        DaemonOptions {
            files: vec![("home/.gemini/settings.json".to_owned(), user.to_string())],
            ..DaemonOptions::default()
        },
    )
    .await;
    let gate_client = daemon.client().await;
    let bystander = daemon.client().await;
    // Warm both paths (registry built, matchers compiled) while descriptors are plentiful.
    let warm = fire(
        &gate_client,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": "gated"}),
    )
    .await;
    assert_eq!(decision(&warm), Some("allow"), "{warm:?}");

    // Lower the limit to what is open plus a little, then take the rest.
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let limit = (open + 16).min(hard);
    setrlimit(Resource::RLIMIT_NOFILE, limit, hard).unwrap();
    let mut hoard = Vec::new();
    while let Ok(file) = std::fs::File::open("/dev/null") {
        hoard.push(file);
    }
    assert!(std::fs::File::open("/dev/null").is_err());

    let started = Instant::now();
    let result = fire(
        &gate_client,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": "gated"}),
    )
    .await;
    assert_eq!(decision(&result), Some("deny"), "{result:?}");
    assert_eq!(
        result.hooks[0].failure.as_deref(),
        Some("spawn_failed"),
        "{result:?}"
    );
    let reason = result.hooks[0].error.clone().unwrap_or_default();
    assert!(reason.contains("Too many open files"), "{reason}");
    let pong = within("the bystander's ping", BYSTANDER_BOUND, bystander.ping()).await;
    assert!(pong.is_ok(), "{pong:?}");
    let free = fire(
        &bystander,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": "free"}),
    )
    .await;
    assert!(free.success, "{free:?}");
    assert!(
        started.elapsed() < BYSTANDER_BOUND,
        "{:?}",
        started.elapsed()
    );

    // With descriptors back, the gate runs again.
    drop(hoard);
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let again = fire(
        &gate_client,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": "gated"}),
    )
    .await;
    assert_eq!(decision(&again), Some("allow"), "{again:?}");
    daemon.stop().await;
    println!("{FD_CHILD_DONE}");
}

/// A daemon out of descriptors does not pause the hooks it cannot start: the circuit
/// breaker counts only failures of the hook itself. Run in a child process as above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_out_of_descriptors_never_pauses_a_hook() {
    let exe = std::env::current_exe().unwrap();
    let output = tokio::process::Command::new(exe)
        .args([
            "hostile_edges::fd_breaker_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FD_BREAKER_CHILD_VAR, "1")
        .output();
    let output = within("the breaker child", Duration::from_secs(60), output)
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(FD_BREAKER_CHILD_DONE),
        "the child did not run:\n{stdout}\n{stderr}"
    );
}

/// Set for the child of [`a_daemon_out_of_descriptors_never_pauses_a_hook`].
const FD_BREAKER_CHILD_VAR: &str = "HOOKD_E2E_FD_BREAKER_CHILD";

/// Printed by that child when every check passed.
const FD_BREAKER_CHILD_DONE: &str = "fd-breaker-child: all checks passed";

/// The child: a deny gate under a breaker that pauses after 2 failures in a row for an
/// hour. Twelve events while the daemon has no descriptor left: each is denied by the gate's
/// `on_failure` as a spawn failure, never as a pause (`refused`); the bystander is answered
/// meanwhile. With descriptors back, the very next event runs the gate itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fd_breaker_child() {
    if std::env::var_os(FD_BREAKER_CHILD_VAR).is_none() {
        return;
    }
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let gate = closed_hook(
        "gate",
        "echo '{\"decision\":\"deny\",\"reason\":\"the gate itself\"}'",
    );
    let user = settings(&[
        ("BeforeTool", Some("^gated$"), vec![gate]),
        ("BeforeTool", Some("^free$"), Vec::new()),
    ]);
    let daemon = Daemon::start_with(
        json!({}),
        DaemonOptions {
            files: vec![("home/.gemini/settings.json".to_owned(), user.to_string())],
            configure: Box::new(|config| {
                config.breaker.threshold = 2;
                config.breaker.backoff = Duration::from_secs(3600);
                config.breaker.max_backoff = Duration::from_secs(3600);
            }),
        },
    )
    .await;
    let gate_client = daemon.client().await;
    let bystander = daemon.client().await;
    let cwd = daemon.cwd();
    let gated = || {
        fire(
            &gate_client,
            &cwd,
            "BeforeTool",
            json!({"tool_name": "gated"}),
        )
    };
    let warm = gated().await;
    assert_eq!(decision(&warm), Some("deny"), "{warm:?}");
    assert_eq!(warm.hooks[0].failure, None, "{warm:?}");

    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    setrlimit(Resource::RLIMIT_NOFILE, (open + 16).min(hard), hard).unwrap();
    let mut hoard = Vec::new();
    while let Ok(file) = std::fs::File::open("/dev/null") {
        hoard.push(file);
    }
    for round in 0..12 {
        // Descriptors the daemon or the runtime closed since (a finished run's pipes, closed
        // a moment late under load) are taken again, so every round starts with none free.
        while let Ok(file) = std::fs::File::open("/dev/null") {
            hoard.push(file);
        }
        let result = gated().await;
        assert_eq!(decision(&result), Some("deny"), "round {round}: {result:?}");
        assert_eq!(
            result.hooks[0].failure.as_deref(),
            Some("spawn_failed"),
            "round {round}: a paused gate would be refused: {result:?}"
        );
        let started = Instant::now();
        let free = within(
            "the bystander's event",
            BYSTANDER_BOUND,
            fire(
                &bystander,
                &daemon.cwd(),
                "BeforeTool",
                json!({"tool_name": "free"}),
            ),
        )
        .await;
        assert!(free.success, "{free:?}");
        assert!(started.elapsed() < BYSTANDER_BOUND);
    }

    drop(hoard);
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let again = gated().await;
    assert_eq!(decision(&again), Some("deny"), "{again:?}");
    assert_eq!(
        again.hooks[0].failure, None,
        "the gate ran, not its pause: {again:?}"
    );
    assert_eq!(
        again.hooks[0].outcome,
        Outcome::Exited { code: 0 },
        "{again:?}"
    );
    let status = bystander.status().await.unwrap();
    let breaker = status.breaker.expect("breaker status");
    assert!(breaker.paused.is_empty(), "{breaker:?}");
    assert_eq!(breaker.pauses, 0, "{breaker:?}");
    daemon.stop().await;
    println!("{FD_BREAKER_CHILD_DONE}");
}

/// The audit log deleted (or rotated away) under the daemon is reopened, counters
/// match the file, and a flood of large lines queued for it is bounded in bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_survives_deletion_and_stays_bounded() {
    let _serial = memory_test_lock().await;
    let gate = closed_hook("gate", "echo '{\"decision\":\"deny\"}'");
    let log_path = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = std::sync::Arc::clone(&log_path);
    let daemon = Daemon::start_with(
        gate_settings("audited", gate),
        DaemonOptions {
            configure: Box::new(move |config| {
                let path = config.home.join("audit.log");
                *seen.lock().unwrap() = Some(path.clone());
                let mut audit = hookd_server::AuditConfig::new(path);
                audit.include_stdin = true;
                // Four 1 MiB lines at most wait for the disk.
                audit.queue_bytes = 4 * 1024 * 1024;
                config.audit = Some(audit);
            }),
            ..DaemonOptions::default()
        },
    )
    .await;
    let path = log_path.lock().unwrap().clone().unwrap();
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let audited =
        |big: usize| json!({"tool_name": "audited", "tool_input": {"padding": "x".repeat(big)}});
    assert_eq!(
        decision(&fire(&client, &cwd, "BeforeTool", audited(10)).await),
        Some("deny")
    );
    let lines_in = |path: &Path| {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).map(|_| ()))
            .collect::<Result<Vec<()>, _>>()
            .unwrap()
            .len() as u64
    };
    within("the first audit line", Duration::from_secs(10), async {
        while lines_in(&path) < 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;

    // Deleted under the daemon: the next line creates it again.
    std::fs::remove_file(&path).unwrap();
    let (result, ()) = tokio::join!(
        fire(&client, &cwd, "BeforeTool", audited(10)),
        bystander_is_served(&daemon, "a deleted audit log")
    );
    assert_eq!(decision(&result), Some("deny"));
    within(
        "the audit log to be reopened",
        Duration::from_secs(10),
        async {
            while lines_in(&path) < 1 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        },
    )
    .await;

    // Forty 1 MiB events at once: every event is decided, memory stays bounded, and what the
    // counters say matches the files.
    let memory = MemoryWatch::start();
    let mut runs = Vec::new();
    for _ in 0..40 {
        let client = daemon.client().await;
        let cwd = cwd.clone();
        let input = audited(1024 * 1024);
        runs.push(tokio::spawn(async move {
            fire(&client, &cwd, "BeforeTool", input).await
        }));
    }
    bystander_is_served(&daemon, "a flood of large audit lines").await;
    for run in runs {
        assert_eq!(decision(&run.await.unwrap()), Some("deny"));
    }
    let status = within("status", Duration::from_secs(10), async {
        loop {
            let status = client.status().await.unwrap();
            let audit = status.audit.clone().unwrap();
            // 40 flood lines, two gated events and two bystander probes before them (the
            // first line went to the file that was deleted).
            if audit.lines_written + audit.lines_dropped + audit.write_errors >= 44 {
                return audit;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(status.write_errors, 0, "{status:?}");
    assert_eq!(
        status.lines_written + status.lines_dropped,
        44,
        "{status:?}"
    );
    let rotated: u64 = (1..=5)
        .map(|n| lines_in(Path::new(&format!("{}.{n}", path.display()))))
        .sum();
    assert_eq!(
        lines_in(&path) + rotated + 1,
        status.lines_written,
        "{status:?}"
    );
    daemon.stop().await;
    memory
        .finish()
        .assert_bounded("forty 1 MiB audit lines", 200);
}

/// Connections that each start a large frame and stall hold at most the daemon-wide
/// budget; the frame that does not fit is refused with `limit_reached`, the connection stays
/// usable, and other clients are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_frames_share_one_budget() {
    let _serial = memory_test_lock().await;
    let gate = closed_hook("gate", "echo '{\"decision\":\"deny\"}'");
    let daemon = Daemon::start_with(
        gate_settings("x", gate),
        DaemonOptions {
            configure: Box::new(|config| config.max_pending_frame_bytes = 32 * 1024 * 1024),
            ..DaemonOptions::default()
        },
    )
    .await;
    let memory = MemoryWatch::start();
    let frame_len: u32 = 15 * 1024 * 1024;
    // Three connections each start a 15 MiB frame and stall. Two fit in the budget; whichever
    // the daemon reads last is refused (the order is the daemon's, so all three are watched).
    let (answers, mut answered) = tokio::sync::mpsc::channel::<(usize, Value)>(8);
    let mut writers = Vec::new();
    let mut readers = Vec::new();
    for index in 0..3 {
        let (mut reader, mut writer) = RawConn::connect_hello(&daemon.socket).await.into_split();
        writer.send_bytes(&frame_len.to_be_bytes()).await.unwrap();
        writer.send_bytes(&[b' '; 1024]).await.unwrap();
        writers.push(writer);
        let answers = answers.clone();
        readers.push(tokio::spawn(async move {
            while let Some(message) = reader.recv().await {
                if answers.send((index, message)).await.is_err() {
                    break;
                }
            }
        }));
    }
    let (refused, error) = within("one refusal", Duration::from_secs(10), answered.recv())
        .await
        .unwrap();
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["code"], "limit_reached", "{error}");
    // The two held frames arrive but for their last byte, so the daemon really holds them;
    // the refused one's body is skipped as it arrives, and its connection then works as before.
    // (Written in 1 MiB pieces: this process's memory is what the test measures.)
    let piece = vec![b' '; 1024 * 1024];
    for (index, writer) in writers.iter_mut().enumerate() {
        let mut left = frame_len as usize - 1024 - usize::from(index != refused);
        while left > 0 {
            let now = left.min(piece.len());
            writer.send_bytes(&piece[..now]).await.unwrap();
            left -= now;
        }
    }
    bystander_is_served(&daemon, "two stalled 15 MiB frames and a refused one").await;
    let writer = &mut writers[refused];
    writer
        .send(&json!({"type": "ping", "id": 7}))
        .await
        .unwrap();
    let (from, pong) = within("the pong", Duration::from_secs(10), answered.recv())
        .await
        .unwrap();
    assert_eq!((from, pong), (refused, json!({"type": "pong", "id": 7})));
    // The two others are still held, unanswered.
    assert!(answered.try_recv().is_err());
    for reader in readers {
        reader.abort();
    }
    drop(writers);
    daemon.stop().await;
    // 30 MiB held, the 15 MiB refused one never buffered (with no budget, 45 MiB).
    memory
        .finish()
        .assert_bounded("three 15 MiB half frames", 40);
}

/// A persistent worker that leaks memory is bounded by `max_memory_mb`: past it, the
/// worker dies, its request is answered by its `on_failure`, and the next request gets a new
/// worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaking_worker_is_bounded_and_fails_closed() {
    const LEAKER: &str = "import json, sys\nleak = []\nfor line in sys.stdin:\n    \
                          leak.append(bytearray(16 << 20))\n    \
                          print(json.dumps({\"decision\": \"allow\", \"reason\": str(len(leak))}), flush=True)\n";
    let worker = json!({
        "name": "leaker", "type": "command", "mode": "persistent",
        "command": "python3 $GEMINI_PROJECT_DIR/.gemini/hooks/leak.py",
        "max_memory_mb": 96, "on_failure": "deny",
    });
    let daemon = Daemon::start(gate_settings("leaky", worker)).await;
    hookd_testkit::write(&daemon.project.join(".gemini/hooks/leak.py"), LEAKER);
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let mut reasons = Vec::new();
    let mut denied_at = None;
    for n in 1..=12 {
        let result = fire(&client, &cwd, "BeforeTool", json!({"tool_name": "leaky"})).await;
        match decision(&result) {
            Some("allow") => reasons.push(
                result.final_output.as_ref().unwrap()["reason"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ),
            Some("deny") => {
                denied_at.get_or_insert(n);
                reasons.push("deny".to_owned());
            }
            other => panic!("request {n}: {other:?} {result:?}"),
        }
        if n % 3 == 0 {
            bystander_is_served(&daemon, "a leaking worker").await;
        }
    }
    // 16 MiB a request under 96 MiB: a few requests, then a deny, then a fresh worker.
    let first_deny = denied_at.unwrap_or_else(|| panic!("never bounded: {reasons:?}"));
    assert!((2..=7).contains(&first_deny), "{reasons:?}");
    assert_eq!(
        reasons[first_deny], "1",
        "no fresh worker after the deny: {reasons:?}"
    );
    daemon.stop().await;
}

/// The growth a fuzzing run showed: persistent workers are kept per session, so a client
/// inventing session ids starts a worker each. They hold a permit of the daemon-wide hook cap
/// each, and an idle one is stopped when a new process needs its permit, so live workers
/// (and the four descriptors each costs the daemon) never exceed `max_hooks`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_of_invented_sessions_stay_within_the_hook_cap() {
    const WORKER: &str = "import json, os, sys\nopen(f\"worker.{os.getpid()}\", \"w\").close()\n\
                          for line in sys.stdin:\n    print('{\"decision\": \"allow\"}', flush=True)\n";
    let worker = json!({
        "name": "per-session", "type": "command", "mode": "persistent",
        "command": "cd $GEMINI_PROJECT_DIR/.gemini/hooks && python3 worker.py",
    });
    let daemon = Daemon::start_with(
        gate_settings("sessions", worker),
        DaemonOptions {
            configure: Box::new(|config| config.max_hooks = 4),
            ..DaemonOptions::default()
        },
    )
    .await;
    let hooks = daemon.project.join(".gemini/hooks");
    hookd_testkit::write(&hooks.join("worker.py"), WORKER);
    let client = daemon.client().await;
    let mut most_alive = 0;
    for session in 0..12 {
        let mut request = hookd_client::EventRequest::new("BeforeTool", daemon.cwd());
        request.input = hookd_testkit::input(json!({"tool_name": "sessions"}));
        request.session_id = format!("invented-{session}");
        let response = hookd_testkit::fire_request(&client, request).await;
        assert_eq!(decision(&response.result), Some("allow"), "{response:?}");
        let alive = std::fs::read_dir(&hooks)
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter_map(|name| name.strip_prefix("worker.")?.parse::<i32>().ok())
            .filter(|pid| hookd_testkit::process_running(*pid))
            .count();
        most_alive = most_alive.max(alive);
    }
    // (The daemon's descriptors follow: four per live worker. They are not counted here,
    // because the other tests of this process open and close their own meanwhile.)
    assert!(most_alive <= 4, "{most_alive} workers alive at once");
    assert!(
        most_alive >= 2,
        "the sessions did not get workers of their own"
    );
    bystander_is_served(&daemon, "twelve invented sessions").await;
    daemon.stop().await;
}
