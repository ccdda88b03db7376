//! Session state (`docs/state.md`): sessions kept apart under concurrent writes, state kept
//! across a restart and across a `kill -9` in the middle of a write loop, a hook reading and
//! writing its own session's keys with `hookctl state`, and the bounds answered as errors.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hookd_client::{Client, ClientError, ConnectOptions, EventRequest};
use hookd_protocol::{ErrorCode, StateOp};
use hookd_testkit::Hermetic;
use hookd_testkit::{Daemon, DaemonOptions, command_hook, fire_request, script_command, settings};
use serde_json::json;

const HOOKCTL: &str = env!("CARGO_BIN_EXE_e2e-hookctl");
const DAEMON: &str = env!("CARGO_BIN_EXE_e2e-daemon");

async fn get(client: &Client, session: &str, key: &str) -> Option<String> {
    client
        .state(StateOp::Get, session, Some(key), None)
        .await
        .expect("state get")
        .value
}

/// The project the tests' direct writes count against.
const PROJECT: &str = "/e2e-project";

/// Sets a key as a hook of `session` would (with its state token).
async fn set(client: &Client, session: &str, key: &str, value: &str) {
    let token = hookd_testkit::state_token(session, PROJECT);
    set_with(client, session, key, value, &token).await;
}

async fn set_with(client: &Client, session: &str, key: &str, value: &str, token: &str) {
    client
        .state_with_token(StateOp::Set, session, Some(key), Some(value), Some(token))
        .await
        .expect("state set");
}

/// A daemon whose store lives at `store` (outside its own temp dir, so a second daemon can
/// open it) with `limits`.
async fn daemon_with_store(store: PathBuf, limits: hookd_server::StateLimits) -> Daemon {
    let options = DaemonOptions {
        configure: Box::new(move |config| {
            config.state_store = Some(store);
            config.state_limits = limits;
        }),
        ..DaemonOptions::default()
    };
    Daemon::start_with(json!({}), options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_writing_the_same_keys_concurrently_stay_separate() {
    let daemon = Daemon::start(json!({})).await;
    let writers = ["alpha", "beta"].map(|session| {
        let socket = daemon.socket.clone();
        tokio::spawn(async move {
            let client = Client::connect(&socket, ConnectOptions::default())
                .await
                .expect("connect");
            for round in 0..30 {
                let key = format!("k{}", round % 3);
                set(&client, session, &key, &format!("{session}-{round}")).await;
            }
        })
    });
    for writer in writers {
        writer.await.expect("writer");
    }
    let client = daemon.client().await;
    for session in ["alpha", "beta"] {
        for (key, last_round) in [("k0", 27), ("k1", 28), ("k2", 29)] {
            assert_eq!(
                get(&client, session, key).await.as_deref(),
                Some(format!("{session}-{last_round}").as_str()),
                "{session} {key}"
            );
        }
        let listed = client
            .state(StateOp::List, session, None, None)
            .await
            .expect("list");
        assert_eq!(listed.keys.unwrap_or_default(), ["k0", "k1", "k2"]);
    }
    assert_eq!(get(&client, "gamma", "k0").await, None);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_survives_a_daemon_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("state/hookd/state.redb");
    let limits = hookd_server::StateLimits::default();
    let first = daemon_with_store(store.clone(), limits).await;
    let client = first.client().await;
    set(&client, "s1", "kept", "before restart").await;
    set(&client, "s1", "gone", "deleted").await;
    assert!(
        client
            .state_with_token(
                StateOp::Delete,
                "s1",
                Some("gone"),
                None,
                Some(&hookd_testkit::state_token("s1", PROJECT))
            )
            .await
            .expect("delete")
            .found
    );
    drop(client);
    first.stop().await;
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| std::fs::metadata(path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&store), 0o600);
    assert_eq!(mode(store.parent().expect("dir")), 0o700);

    let second = daemon_with_store(store, limits).await;
    let client = second.client().await;
    assert_eq!(
        get(&client, "s1", "kept").await.as_deref(),
        Some("before restart")
    );
    assert_eq!(get(&client, "s1", "gone").await, None);
    second.stop().await;
}

/// A daemon process (`tests/bin/daemon.rs`) with its own `HOME` under `root`.
struct DaemonProcess {
    child: Child,
    socket: PathBuf,
}

impl DaemonProcess {
    async fn start(root: &Path) -> DaemonProcess {
        let socket = root.join("run/hookd.sock");
        // A hook that hands its state token over, as the only way to one.
        let settings = settings(&[(
            "BeforeTool",
            Some("^state-token$"),
            vec![command_hook(
                "token",
                r#"printf '{"systemMessage":"%s"}' "$HOOKD_STATE_TOKEN""#,
            )],
        )]);
        hookd_testkit::write(
            &root.join("home/.gemini/settings.json"),
            &settings.to_string(),
        );
        let child = Command::new(DAEMON)
            .isolated(root.join("home"), root)
            .env("HOOKD_SOCKET", &socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the daemon process");
        DaemonProcess { child, socket }
    }

    /// A client, once the daemon accepts one: readiness is a completed handshake.
    async fn client(&mut self) -> Client {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(client) = Client::connect(&self.socket, ConnectOptions::default()).await {
                return client;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the daemon process exited: {status}");
            }
            assert!(Instant::now() < deadline, "the daemon never answered");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The state token of `session`, from a hook of this daemon.
    async fn token(client: &Client, root: &Path, session: &str) -> String {
        let mut request = EventRequest::new("BeforeTool", root.display().to_string())
            .with_input(hookd_testkit::input(json!({"tool_name": "state-token"})));
        request.session_id = session.to_owned();
        let response = fire_request(client, request).await;
        response
            .result
            .final_output
            .as_ref()
            .and_then(|output| output["systemMessage"].as_str())
            .filter(|token| !token.is_empty())
            .expect("the hook's token")
            .to_owned()
    }

    fn kill9(&mut self) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("SIGKILL");
        self.child.wait().expect("reap");
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_during_a_write_loop_keeps_every_acknowledged_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut daemon = DaemonProcess::start(dir.path()).await;
    let client = daemon.client().await;
    let token = DaemonProcess::token(&client, dir.path(), "crash").await;
    // The writer records the last value the daemon acknowledged and the last it sent.
    let acked = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let writer = tokio::spawn({
        let (acked, sent) = (Arc::clone(&acked), Arc::clone(&sent));
        let token = token.clone();
        async move {
            for value in 1u64.. {
                sent.store(value, Ordering::SeqCst);
                let answer = client
                    .state_with_token(
                        StateOp::Set,
                        "crash",
                        Some("counter"),
                        Some(&value.to_string()),
                        Some(&token),
                    )
                    .await;
                if answer.is_err() {
                    return;
                }
                acked.store(value, Ordering::SeqCst);
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.load(Ordering::SeqCst) < 25 {
        assert!(Instant::now() < deadline, "the write loop made no progress");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    daemon.kill9();
    tokio::time::timeout(Duration::from_secs(10), writer)
        .await
        .expect("the writer notices the daemon is gone")
        .expect("writer");
    let (acked, sent) = (acked.load(Ordering::SeqCst), sent.load(Ordering::SeqCst));

    // The store opens, and holds the last acknowledged value or the one in flight.
    let path = dir.path().join("home/.local/state/hookd/state.redb");
    let stored: u64 = {
        let store = hookd_state::Store::open(&path, hookd_state::Limits::default())
            .expect("the store opens after a kill -9");
        store
            .get("crash", "counter")
            .expect("get")
            .expect("a value")
            .parse()
            .expect("a number")
    };
    assert!(
        (acked..=sent).contains(&stored),
        "stored {stored}, acknowledged {acked}, sent {sent}"
    );

    // A new daemon serves the same value and takes new writes.
    let mut again = DaemonProcess::start(dir.path()).await;
    let client = again.client().await;
    assert_eq!(
        get(&client, "crash", "counter").await,
        Some(stored.to_string())
    );
    // A new daemon has a new key: the old token is worthless, a hook's new one works.
    let refused = client
        .state_with_token(
            StateOp::Set,
            "crash",
            Some("counter"),
            Some("x"),
            Some(&token),
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(ClientError::Server {
                code: ErrorCode::BadRequest,
                ..
            })
        ),
        "{refused:?}"
    );
    let token = DaemonProcess::token(&client, dir.path(), "crash").await;
    set_with(&client, "crash", "counter", "after", &token).await;
    assert_eq!(
        get(&client, "crash", "counter").await.as_deref(),
        Some("after")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_reads_and_writes_its_own_sessions_state_with_hookctl() {
    let out = tempfile::tempdir().expect("temp dir");
    let log = out.path().join("seen.log");
    let body = format!(
        r#"cat > /dev/null
before=$('{hookctl}' state get last); code=$?
printf '%s %s %s\n' "$GEMINI_SESSION_ID" "$code" "$before" >> '{log}'
'{hookctl}' state set last "value-of-$GEMINI_SESSION_ID" || exit 9
printf 'piped' | '{hookctl}' state set from-stdin || exit 9
"#,
        hookctl = HOOKCTL,
        log = log.display()
    );
    let daemon = Daemon::start(settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("state", &script_command("state.sh"))],
    )]))
    .await;
    daemon.script("state.sh", &body);
    // A client whose environment names another socket: hooks still get this daemon's.
    let client = daemon
        .client_with_env(vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOOKD_SOCKET".into(), "/nonexistent/hookd.sock".into()),
        ])
        .await;
    for session in ["A", "B", "A"] {
        let mut request = EventRequest::new("BeforeTool", daemon.cwd()).with_input(
            hookd_testkit::input(json!({"tool_name": "run_shell_command", "tool_input": {}})),
        );
        request.session_id = session.to_owned();
        let response = fire_request(&client, request).await;
        let text = serde_json::to_string(&response.result).expect("json");
        assert!(
            !text.contains("value-of-"),
            "a value reached an answer: {text}"
        );
    }
    let seen = std::fs::read_to_string(&log).expect("the hook ran");
    assert_eq!(seen, "A 1 \nB 1 \nA 0 value-of-A\n");
    let reader = daemon.client().await;
    assert_eq!(
        get(&reader, "B", "last").await.as_deref(),
        Some("value-of-B")
    );
    assert_eq!(
        get(&reader, "A", "from-stdin").await.as_deref(),
        Some("piped")
    );
    daemon.stop().await;
}

fn server_error(result: Result<hookd_protocol::StateResponse, ClientError>) -> (ErrorCode, String) {
    match result {
        Err(ClientError::Server { code, message }) => (code, message),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bounds_are_answered_with_clear_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let limits = hookd_server::StateLimits {
        max_value_bytes: 16,
        max_keys_per_session: 2,
        max_sessions: 2,
        ..hookd_server::StateLimits::default()
    };
    let daemon = daemon_with_store(dir.path().join("state.redb"), limits).await;
    let client = daemon.client().await;
    let long_key = "k".repeat(300);
    // (op, session, key, value, code, words the message must hold)
    type Case<'a> = (
        StateOp,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        ErrorCode,
        &'a str,
    );
    let cases: [Case<'_>; 5] = [
        (
            StateOp::Set,
            "s",
            Some("k"),
            Some("12345678901234567"),
            ErrorCode::LimitReached,
            "the value is 17 bytes; the most a value may have is 16",
        ),
        (
            StateOp::Set,
            "s",
            Some(&long_key),
            Some("v"),
            ErrorCode::BadRequest,
            "invalid key: it is 300 bytes; the most it may have is 256",
        ),
        (
            StateOp::Get,
            "s",
            Some(""),
            None,
            ErrorCode::BadRequest,
            "invalid key: it is empty",
        ),
        (
            StateOp::Get,
            "s",
            None,
            None,
            ErrorCode::MissingField,
            "needs a `key`",
        ),
        (
            StateOp::Set,
            "s",
            Some("k"),
            None,
            ErrorCode::MissingField,
            "needs a `value`",
        ),
    ];
    let token = |session: &str| hookd_testkit::state_token(session, PROJECT);
    for (op, session, key, value, code, words) in cases {
        let (got, message) = server_error(
            client
                .state_with_token(op, session, key, value, Some(&token(session)))
                .await,
        );
        assert_eq!(got, code, "{message}");
        assert!(message.contains(words), "{message:?} lacks {words:?}");
    }
    set(&client, "s", "a", "1").await;
    set(&client, "s", "b", "2").await;
    let (code, message) = server_error(
        client
            .state_with_token(StateOp::Set, "s", Some("c"), Some("3"), Some(&token("s")))
            .await,
    );
    assert_eq!(code, ErrorCode::LimitReached);
    assert!(message.contains("has 2 keys already"), "{message}");
    set(&client, "t", "a", "1").await;
    let (code, message) = server_error(
        client
            .state_with_token(StateOp::Set, "u", Some("a"), Some("1"), Some(&token("u")))
            .await,
    );
    assert_eq!(code, ErrorCode::LimitReached);
    assert!(message.contains("2 sessions already"), "{message}");

    // hookctl: exit 1 and nothing printed for a missing key, 2 and the reason for a bound.
    let hookctl = |args: &[&str]| {
        Command::new(HOOKCTL)
            .arg("--socket")
            .arg(&daemon.socket)
            .args(["state", "--session", "s"])
            .args(args)
            .env("HOOKD_STATE_TOKEN", token("s"))
            .stdin(Stdio::null())
            .output()
            .expect("run hookctl")
    };
    let found = hookctl(&["get", "a"]);
    assert_eq!(found.status.code(), Some(0));
    assert_eq!(found.stdout, b"1");
    let missing = hookctl(&["get", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(missing.stdout.is_empty() && missing.stderr.is_empty());
    let refused = hookctl(&["set", "a", "12345678901234567"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("limit_reached"), "{stderr}");
    let listed = hookctl(&["list"]);
    assert_eq!(listed.stdout, b"a\nb\n");
    assert_eq!(hookctl(&["delete", "b"]).status.code(), Some(0));
    assert_eq!(hookctl(&["delete", "b"]).status.code(), Some(1));
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_end_expires_that_sessions_keys_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("state.redb");
    let options = DaemonOptions {
        configure: Box::new(move |config| {
            config.state_store = Some(store);
            config.state_limits.keep_after_end = Duration::ZERO;
            config.state_expiry_interval = Duration::from_millis(20);
        }),
        ..DaemonOptions::default()
    };
    // No hook listens to SessionEnd: the event is still seen.
    let daemon = Daemon::start_with(json!({}), options).await;
    let client = daemon.client().await;
    set(&client, "ended", "k", "v").await;
    set(&client, "live", "k", "v").await;
    // A first event caches the project's registry, so that SessionEnd could take the
    // no-hook fast path, which must not skip it.
    fire_request(&client, EventRequest::new("Notification", daemon.cwd())).await;
    let mut request = EventRequest::new("SessionEnd", daemon.cwd())
        .with_input(hookd_testkit::input(json!({"reason": "exit"})));
    request.session_id = "ended".to_owned();
    fire_request(&client, request).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(&client, "ended", "k").await.is_some() {
        assert!(
            Instant::now() < deadline,
            "the ended session's keys were never removed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(get(&client, "live", "k").await.as_deref(), Some("v"));
    daemon.stop().await;
}

/// A hook naming another session is refused, whatever it does with the token it has: its
/// own token for another session, no token, a forged one. Its own session's write works,
/// and another client's gate is answered meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_cannot_write_another_sessions_keys() {
    let out = tempfile::tempdir().expect("temp dir");
    let log = out.path().join("codes.log");
    let forged = format!("v1.{}.{}", "0".repeat(32), "f".repeat(64));
    let command = format!(
        r#"cat > /dev/null
h='{hookctl}'
"$h" state --session victim set stolen 1 2>> '{log}.err'; a=$?
HOOKD_STATE_TOKEN= "$h" state --session victim set stolen 2 2>> '{log}.err'; b=$?
HOOKD_STATE_TOKEN='{forged}' "$h" state --session victim set stolen 3 2>> '{log}.err'; c=$?
"$h" state --session victim delete planted 2>> '{log}.err'; d=$?
"$h" state set mine 4; e=$?
echo "$a $b $c $d $e" >> '{log}'
echo '{{"decision":"allow"}}'"#,
        hookctl = HOOKCTL,
        log = log.display()
    );
    let daemon = Daemon::start(settings(&[
        (
            "BeforeTool",
            Some("^attack$"),
            vec![command_hook("attack", &command)],
        ),
        (
            "BeforeTool",
            Some("^gated$"),
            vec![command_hook(
                "gate",
                r#"echo '{"decision":"deny","reason":"gate"}'"#,
            )],
        ),
    ]))
    .await;
    let client = daemon.client().await;
    // The victim's own key, written as its hook would.
    set(&client, "victim", "planted", "mine").await;
    let mut attack = EventRequest::new("BeforeTool", daemon.cwd())
        .with_input(hookd_testkit::input(json!({"tool_name": "attack"})));
    attack.session_id = "attacker".to_owned();
    let bystander = daemon.client().await;
    let gated = async {
        let asked = Instant::now();
        let result = hookd_testkit::within(
            "the bystander's gate",
            Duration::from_secs(1),
            hookd_testkit::fire(
                &bystander,
                &daemon.cwd(),
                "BeforeTool",
                json!({"tool_name": "gated"}),
            ),
        )
        .await;
        (result, asked.elapsed())
    };
    let (attacked, (gate, elapsed)) = tokio::join!(fire_request(&client, attack), gated);
    assert!(attacked.result.success, "{:?}", attacked.result);
    assert_eq!(
        gate.final_output
            .as_ref()
            .map(|output| output["decision"].clone()),
        Some(json!("deny"))
    );
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    let codes = std::fs::read_to_string(&log).expect("the hook ran");
    assert_eq!(codes.trim(), "2 2 2 2 0", "exit codes of the five writes");
    let errors = std::fs::read_to_string(format!("{}.err", log.display())).unwrap_or_default();
    assert!(
        errors.contains("a hook may write only its own session's keys"),
        "{errors}"
    );
    assert!(errors.contains("needs the state token"), "{errors}");
    assert_eq!(get(&client, "victim", "stolen").await, None);
    assert_eq!(
        get(&client, "victim", "planted").await.as_deref(),
        Some("mine")
    );
    assert_eq!(get(&client, "attacker", "mine").await.as_deref(), Some("4"));
    daemon.stop().await;
}

/// One project's hooks fill its share of the store (sessions it invents included); another
/// project's hook still writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_projects_still_write_when_one_project_has_used_its_share() {
    let out = tempfile::tempdir().expect("temp dir");
    let log = out.path().join("codes.log");
    // Each run writes 5 values of 100 bytes; the project may hold 1000 bytes.
    let command = format!(
        r#"cat > /dev/null
v=$(printf '%0100d' 0)
for k in 1 2 3 4 5; do '{hookctl}' state set "k$k" "$v" 2>> '{log}.err'; printf '%s ' $? >> '{log}'; done
echo "$GEMINI_PROJECT_DIR" >> '{log}'"#,
        hookctl = HOOKCTL,
        log = log.display()
    );
    let writer = settings(&[("BeforeTool", None, vec![command_hook("writer", &command)])]);
    let store = out.path().join("state.redb");
    let options = DaemonOptions {
        configure: Box::new(move |config| {
            config.state_store = Some(store);
            config.state_limits.max_bytes_per_project = 1000;
            config.state_limits.max_total_bytes = 4000;
        }),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(writer.clone(), options).await;
    let other = daemon.dir.path().join("other");
    hookd_testkit::write(&other.join(".gemini/settings.json"), &writer.to_string());
    let client = daemon.client().await;
    let run = |cwd: String, session: &str| {
        let mut request = EventRequest::new("BeforeTool", cwd)
            .with_input(hookd_testkit::input(json!({"tool_name": "write_file"})));
        request.session_id = session.to_owned();
        fire_request(&client, request)
    };
    for session in ["h1", "h2", "h3"] {
        run(daemon.cwd(), session).await;
    }
    run(other.display().to_string(), "o1").await;
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .expect("the hooks ran")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    // 102 bytes a key: 5 in h1, 4 in h2 (the project's 1000 bytes), none in h3.
    assert!(lines[0].starts_with("0 0 0 0 0 "), "{lines:?}");
    assert!(lines[1].starts_with("0 0 0 0 2 "), "{lines:?}");
    assert!(lines[2].starts_with("2 2 2 2 2 "), "{lines:?}");
    // The other project writes all five.
    assert!(lines[3].starts_with("0 0 0 0 0 "), "{lines:?}");
    let errors = std::fs::read_to_string(format!("{}.err", log.display())).unwrap_or_default();
    assert!(errors.contains("its share of the store"), "{errors}");
    assert_eq!(get(&client, "o1", "k5").await.map(|v| v.len()), Some(100));
    daemon.stop().await;
}
