//! Work that outlives the answer, and hooks that stop costing their failure: async hooks
//! answer at once and are audited when they finish; a relayed `SessionEnd` returns within its
//! host's budget and its hooks finish after the relay and its host are gone (and a `SessionEnd`
//! run survives its client disconnecting even without `detach`); a graceful stop finishes
//! background work within its grace period and records what it had to cut short; the circuit
//! breaker pauses a failing hook, which decides as its failure would while paused, and resumes
//! it after the back-off.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hookd_client::EventRequest;
use hookd_server::{AuditConfig, ServerConfig};
use hookd_testkit::{
    Daemon, DaemonOptions, RawConn, fire, input, process_running, settings, wait_until, within,
};
use serde_json::{Value, json};

/// Claude Code's default SessionEnd budget: it kills its hooks after about 1.5 s.
const HOST_BUDGET: Duration = Duration::from_millis(1500);

/// Starts a daemon with an audit log next to its home and `configure` applied.
async fn daemon_with_audit(
    project_settings: Value,
    configure: impl FnOnce(&mut ServerConfig) + Send + 'static,
) -> (Daemon, PathBuf) {
    let options = DaemonOptions {
        configure: Box::new(move |config: &mut ServerConfig| {
            config.audit = Some(AuditConfig::new(config.home.join("audit.log")));
            configure(config);
        }),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(project_settings, options).await;
    let path = daemon.home.join("audit.log");
    (daemon, path)
}

/// The audit log's lines (a missing file: none).
fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every audit line is JSON"))
        .collect()
}

/// Waits for an audit line of `event` whose `background` is `kind`, and returns it.
async fn wait_for_audit(path: &Path, event: &str, kind: &str) -> Value {
    let matches = |line: &Value| line["event"] == event && line["background"] == kind;
    wait_until(
        &format!("a {kind} {event} line in the audit log"),
        Duration::from_secs(20),
        || audit_lines(path).iter().any(matches),
    )
    .await;
    audit_lines(path)
        .into_iter()
        .find(matches)
        .expect("the line just seen")
}

/// A command hook entry with extra keys.
fn hook(name: &str, command: &str, extra: Value) -> Value {
    let mut entry = json!({"name": name, "type": "command", "command": command});
    if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
        entry.extend(extra.clone());
    }
    entry
}

/// What a host sees of one relay run.
struct RelayRun {
    /// The exit code, or `None` when the host had to kill the relay.
    code: Option<i32>,
    stdout: String,
    elapsed: Duration,
}

/// Runs the relay as Claude Code runs a command hook: the payload on stdin, its project root
/// in `CLAUDE_PROJECT_DIR`, killed when it outlives `budget`.
async fn relay_as_claude(daemon: &Daemon, payload: Value, budget: Duration) -> RelayRun {
    let mut command = Command::new(env!("CARGO_BIN_EXE_e2e-relay"));
    command
        .args([
            payload["hook_event_name"].as_str().expect("event"),
            "--dialect",
            "claude",
            "--socket",
        ])
        .arg(&daemon.socket)
        .current_dir(&daemon.project)
        .env("CLAUDE_PROJECT_DIR", &daemon.project)
        .env("XDG_STATE_HOME", daemon.dir.path().join("state"))
        .env_remove("HOOKD_SOCKET")
        .env_remove("HOOKD_RELAY_RETRY_MS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut child = command.spawn().expect("the relay starts");
        let _ = child
            .stdin
            .take()
            .expect("stdin")
            .write_all(payload.to_string().as_bytes());
        let code = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status.code();
            }
            if started.elapsed() > budget {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let elapsed = started.elapsed();
        let mut stdout = String::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut out, &mut stdout);
        }
        RelayRun {
            code,
            stdout,
            elapsed,
        }
    })
    .await
    .expect("relay task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_session_end_returns_within_the_hosts_budget_and_its_hook_finishes_later() {
    // The hook takes 5 s, more than three times Claude Code's 1.5 s budget.
    let settings = settings(&[(
        "SessionEnd",
        None,
        vec![hook(
            "summarise",
            "cat > session-end.payload; sleep 5; echo done > session-end.done",
            json!({}),
        )],
    )]);
    let (daemon, audit) = daemon_with_audit(settings, |_| {}).await;
    let done = daemon.project.join("session-end.done");
    let payload = json!({
        "session_id": "s-end",
        "transcript_path": "",
        "cwd": daemon.cwd(),
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    });

    let run = relay_as_claude(&daemon, payload, HOST_BUDGET).await;
    assert_eq!(
        run.code,
        Some(0),
        "the relay returns by itself within the host's budget ({:?})",
        run.elapsed
    );
    assert!(run.elapsed < HOST_BUDGET, "{:?}", run.elapsed);
    assert_eq!(run.stdout, "", "nothing for the host to act on");
    assert!(!done.exists(), "the relay did not wait for the hook");

    // The relay (the daemon's only client) has exited; the hook still finishes.
    wait_until(
        "the SessionEnd hook finished",
        Duration::from_secs(20),
        || done.exists(),
    )
    .await;
    let line = wait_for_audit(&audit, "SessionEnd", "detached").await;
    assert_eq!(line["session_id"], "s-end");
    assert_eq!(line["hooks"][0]["name"], "summarise");
    assert_eq!(line["hooks"][0]["success"], true);
    assert_eq!(line["hooks"][0]["exit_code"], 0);
    let payload = std::fs::read_to_string(daemon.project.join("session-end.payload"))
        .expect("the hook read its payload");
    assert!(payload.contains("\"s-end\""), "{payload}");

    let status = daemon.client().await.status().await.expect("status");
    let background = status.background.expect("background status");
    assert_eq!(
        (background.started, background.finished, background.dropped),
        (1, 1, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_end_run_survives_its_client_disconnecting() {
    // A client that does not ask for `detach` (an older relay) and is killed mid-run.
    let settings = settings(&[(
        "SessionEnd",
        None,
        vec![hook(
            "sync",
            "touch started; sleep 1; touch finished",
            json!({}),
        )],
    )]);
    let daemon = Daemon::start(settings).await;
    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    conn.send(&json!({
        "type": "event", "id": 1, "event": "SessionEnd", "cwd": daemon.cwd(),
        "input": {"reason": "exit"}
    }))
    .await;
    let started = daemon.project.join("started");
    wait_until("the hook started", Duration::from_secs(20), || {
        started.exists()
    })
    .await;
    drop(conn);
    wait_until(
        "the hook finished after its client went away",
        Duration::from_secs(20),
        || daemon.project.join("finished").exists(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_hook_answers_at_once_takes_no_part_in_the_decision_and_is_audited() {
    // The async hook would deny (exit 2) after 3 s; the guard allows at once.
    let settings = settings(&[(
        "BeforeTool",
        Some("run_shell_command"),
        vec![
            hook("guard", "echo '{\"decision\":\"allow\"}'", json!({})),
            hook(
                "slow-audit",
                "sleep 3; touch async.done; echo 'would deny' >&2; exit 2",
                json!({"async": true}),
            ),
        ],
    )]);
    let (daemon, audit) = daemon_with_audit(settings, |_| {}).await;
    let client = daemon.client().await;
    let started = Instant::now();
    let result = fire(
        &client,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(2), "answered in {elapsed:?}");
    assert!(!daemon.project.join("async.done").exists());
    assert_eq!(result.hooks.len(), 1, "only the guard is in the answer");
    assert_eq!(result.hooks[0].name, "guard");
    assert_eq!(
        result.final_output.expect("output")["decision"],
        "allow",
        "the async hook's exit 2 never reaches the decision"
    );

    let listing = client.list(daemon.cwd()).await.expect("list");
    let flags: Vec<(String, bool)> = listing
        .hooks
        .iter()
        .map(|hook| (hook.name.clone(), hook.is_async))
        .collect();
    assert_eq!(
        flags,
        [("guard".to_owned(), false), ("slow-audit".to_owned(), true)]
    );

    let line = wait_for_audit(&audit, "BeforeTool", "async").await;
    assert!(daemon.project.join("async.done").exists());
    assert_eq!(line["hooks"][0]["name"], "slow-audit");
    assert_eq!(line["hooks"][0]["exit_code"], 2);
    assert_eq!(line["tool_name"], "run_shell_command");
    let stats = client.stats().await.expect("stats");
    assert!(
        stats
            .hooks
            .iter()
            .any(|hook| hook.name == "slow-audit" && hook.runs == 1),
        "{:?}",
        stats.hooks
    );
    assert_eq!(stats.background.expect("background").finished, 1);
}

/// A daemon whose background AfterAgent hook writes its pid and `started` into `outside`
/// (a directory that outlives the daemon's own, which its stop removes), sleeps `seconds`
/// and writes `done`; the audit log is in `outside` too.
async fn daemon_with_background_sleeper(
    outside: &Path,
    seconds: u32,
    grace: Duration,
) -> (Daemon, PathBuf) {
    let dir = outside.display();
    let settings = settings(&[(
        "AfterAgent",
        None,
        vec![hook(
            "sync-up",
            &format!(
                "echo $$ > '{dir}/pid'; touch '{dir}/started'; sleep {seconds}; touch '{dir}/done'"
            ),
            json!({"async": true}),
        )],
    )]);
    let audit = outside.join("audit.log");
    let options = DaemonOptions {
        configure: Box::new({
            let audit = audit.clone();
            move |config: &mut ServerConfig| {
                config.audit = Some(AuditConfig::new(audit));
                config.background_grace = grace;
            }
        }),
        ..DaemonOptions::default()
    };
    (Daemon::start_with(settings, options).await, audit)
}

/// Fires the AfterAgent event and waits until the background hook has started.
async fn start_background_work(daemon: &Daemon, outside: &Path) {
    let client = daemon.client().await;
    let request = EventRequest::new("AfterAgent", daemon.cwd())
        .with_input(input(json!({"prompt": "p", "prompt_response": "r"})));
    within("the answer", Duration::from_secs(5), client.event(request))
        .await
        .expect("answered");
    let started = outside.join("started");
    wait_until(
        "the background hook started",
        Duration::from_secs(20),
        || started.exists(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_finishes_background_work_within_its_grace() {
    let outside = tempfile::tempdir().expect("temp dir");
    let (daemon, audit) =
        daemon_with_background_sleeper(outside.path(), 1, Duration::from_secs(20)).await;
    start_background_work(&daemon, outside.path()).await;
    assert!(!outside.path().join("done").exists());
    within("the stop", Duration::from_secs(20), daemon.stop()).await;
    assert!(
        outside.path().join("done").exists(),
        "the hook was let finish"
    );
    let line = wait_for_audit(&audit, "AfterAgent", "async").await;
    assert_eq!(line["hooks"][0]["success"], true);
    assert!(
        !audit_lines(&audit)
            .iter()
            .any(|line| line["background"] == "cut_short")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_past_its_grace_kills_background_work_and_records_it_cut_short() {
    let outside = tempfile::tempdir().expect("temp dir");
    let (daemon, audit) =
        daemon_with_background_sleeper(outside.path(), 60, Duration::from_millis(300)).await;
    start_background_work(&daemon, outside.path()).await;
    let pid: i32 = std::fs::read_to_string(outside.path().join("pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    let stopping = Instant::now();
    within("the stop", Duration::from_secs(20), daemon.stop()).await;
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "{:?}",
        stopping.elapsed()
    );
    assert!(!outside.path().join("done").exists());
    assert!(!process_running(pid), "the hook's process was killed");
    // The audit log is complete once the daemon has stopped.
    let line = audit_lines(&audit)
        .into_iter()
        .find(|line| line["background"] == "cut_short")
        .expect("the run is audited as cut short");
    assert_eq!(line["event"], "AfterAgent");
    assert_eq!(line["hooks"][0]["name"], "sync-up");
    assert_eq!(line["hooks"][0]["outcome"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_guard_is_paused_denies_while_paused_and_resumes_after_the_back_off() {
    // A fail-closed guard that fails (exit 1, no decision) while `broken` exists; every run
    // appends a line to `runs`.
    let settings = settings(&[(
        "BeforeTool",
        None,
        vec![hook(
            "guard",
            "echo run >> runs; if [ -e broken ]; then echo 'service down' >&2; exit 1; fi; \
             echo '{\"decision\":\"allow\"}'",
            json!({"on_failure": "deny"}),
        )],
    )]);
    let (daemon, audit) = daemon_with_audit(settings, |config| {
        config.breaker.threshold = 2;
        config.breaker.backoff = Duration::from_millis(800);
        config.breaker.max_backoff = Duration::from_secs(5);
    })
    .await;
    let runs = || {
        std::fs::read_to_string(daemon.project.join("runs"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    std::fs::write(daemon.project.join("broken"), "").expect("write");
    let client = daemon.client().await;
    let tool = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
    let decide = |result: &hookd_protocol::EventResult| {
        let output = result.final_output.clone().unwrap_or_default();
        (
            output["decision"].as_str().unwrap_or("none").to_owned(),
            output["reason"].as_str().unwrap_or("").to_owned(),
        )
    };

    // Two failures in a row: each denies by its failure policy; the second pauses the hook.
    for expected_runs in 1..=2 {
        let result = fire(&client, &daemon.cwd(), "BeforeTool", tool.clone()).await;
        let (decision, reason) = decide(&result);
        assert_eq!(decision, "deny", "{reason}");
        assert!(!reason.contains("paused"), "{reason}");
        assert_eq!(runs(), expected_runs);
    }

    // Paused: not spawned, and the guard stays closed with a reason that says why.
    let result = fire(&client, &daemon.cwd(), "BeforeTool", tool.clone()).await;
    let (decision, reason) = decide(&result);
    assert_eq!(decision, "deny");
    assert!(reason.contains("paused by the circuit breaker"), "{reason}");
    assert_eq!(runs(), 2, "a paused hook is not spawned");
    let listing = client.list(daemon.cwd()).await.expect("list");
    let paused = listing.hooks[0]
        .paused
        .clone()
        .expect("list shows it paused");
    assert_eq!(paused.failures, 2);
    let status = client.status().await.expect("status");
    let breaker = status.breaker.expect("breaker status");
    assert_eq!(breaker.paused.len(), 1);
    assert_eq!((breaker.pauses, breaker.skipped), (1, 1));
    let stats = client.stats().await.expect("stats");
    assert_eq!(stats.breaker.expect("breaker").paused[0].name, "guard");
    // The audit writer runs apart from the answer: wait for its line.
    wait_until(
        "the skipped run is audited",
        Duration::from_secs(10),
        || {
            audit_lines(&audit)
                .iter()
                .any(|line| line["hooks"][0]["failure"] == "refused")
        },
    )
    .await;

    // The service is back; after the back-off one trial run resumes the hook.
    std::fs::remove_file(daemon.project.join("broken")).expect("remove");
    within("the back-off to end", Duration::from_secs(20), async {
        loop {
            let listing = client.list(daemon.cwd()).await.expect("list");
            if listing.hooks[0]
                .paused
                .as_ref()
                .is_some_and(|paused| paused.retry_in_ms == 0)
            {
                return;
            }
            // Polling state the daemon reports, as `wait_until` does.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let result = fire(&client, &daemon.cwd(), "BeforeTool", tool.clone()).await;
    assert_eq!(decide(&result).0, "allow", "the trial run ran and allowed");
    assert_eq!(runs(), 3);
    let listing = client.list(daemon.cwd()).await.expect("list");
    assert_eq!(listing.hooks[0].paused, None, "resumed");
    let result = fire(&client, &daemon.cwd(), "BeforeTool", tool).await;
    assert_eq!(decide(&result).0, "allow");
    assert_eq!(runs(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_past_the_bound_is_dropped_and_recorded_not_queued() {
    let settings = settings(&[(
        "AfterTool",
        None,
        vec![hook(
            "index",
            "echo run >> runs; touch started; sleep 2",
            json!({"async": true}),
        )],
    )]);
    let (daemon, audit) = daemon_with_audit(settings, |config| {
        config.max_background_runs = 1;
    })
    .await;
    let client = daemon.client().await;
    let fields = json!({"tool_name": "write_file", "tool_input": {}, "tool_response": {}});
    let first = fire(&client, &daemon.cwd(), "AfterTool", fields.clone()).await;
    assert!(first.hooks.is_empty(), "answered without the async hook");
    let started = daemon.project.join("started");
    wait_until("the first run started", Duration::from_secs(20), || {
        started.exists()
    })
    .await;

    // The one background slot is taken: the second run is dropped at once, not queued.
    let second = fire(&client, &daemon.cwd(), "AfterTool", fields).await;
    assert!(second.success && second.hooks.is_empty());
    let line = wait_for_audit(&audit, "AfterTool", "dropped").await;
    assert_eq!(line["hooks"][0]["name"], "index");
    assert_eq!(line["hooks"][0]["failure"], "refused");
    let status = client.status().await.expect("status");
    let background = status.background.expect("background");
    assert_eq!((background.started, background.dropped), (1, 1));
    assert_eq!(background.max, 1);

    wait_for_audit(&audit, "AfterTool", "async").await;
    let runs = std::fs::read_to_string(daemon.project.join("runs")).expect("runs");
    assert_eq!(runs.lines().count(), 1, "the dropped run never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_project_cannot_take_every_background_slot() {
    let slow = settings(&[(
        "AfterTool",
        None,
        vec![hook(
            "index",
            "echo run >> runs; touch started; sleep 2",
            json!({"async": true}),
        )],
    )]);
    let (daemon, audit) = daemon_with_audit(slow.clone(), |config| {
        config.max_background_runs = 2;
    })
    .await;
    let other = daemon.dir.path().join("other");
    hookd_testkit::write(&other.join(".gemini/settings.json"), &slow.to_string());
    let client = daemon.client().await;
    let fields = json!({"tool_name": "write_file", "tool_input": {}, "tool_response": {}});
    fire(&client, &daemon.cwd(), "AfterTool", fields.clone()).await;
    let started = daemon.project.join("started");
    wait_until("the first run started", Duration::from_secs(20), || {
        started.exists()
    })
    .await;

    // The project holds its share (half of 2; the whole bound still has a slot): its next
    // run is dropped...
    fire(&client, &daemon.cwd(), "AfterTool", fields.clone()).await;
    let line = wait_for_audit(&audit, "AfterTool", "dropped").await;
    assert_eq!(line["hooks"][0]["failure"], "refused");
    // ...while another project's run still finds a slot.
    let other_cwd = other.display().to_string();
    fire(&client, &other_cwd, "AfterTool", fields).await;
    let other_started = other.join("started");
    wait_until(
        "the other project's run started",
        Duration::from_secs(20),
        || other_started.exists(),
    )
    .await;
    let background = client
        .status()
        .await
        .expect("status")
        .background
        .expect("background");
    assert_eq!((background.started, background.dropped), (2, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_resumes_paused_hooks_at_once() {
    let settings = settings(&[(
        "BeforeTool",
        None,
        vec![hook("flaky", "echo run >> runs; exit 1", json!({}))],
    )]);
    let daemon = Daemon::start_with(
        settings,
        DaemonOptions {
            configure: Box::new(|config: &mut ServerConfig| {
                config.breaker.threshold = 1;
                config.breaker.backoff = Duration::from_secs(3600);
            }),
            ..DaemonOptions::default()
        },
    )
    .await;
    let client = daemon.client().await;
    let runs = || {
        std::fs::read_to_string(daemon.project.join("runs"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let tool = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
    fire(&client, &daemon.cwd(), "BeforeTool", tool.clone()).await;
    fire(&client, &daemon.cwd(), "BeforeTool", tool.clone()).await;
    assert_eq!(runs(), 1, "paused after one failure for an hour");
    let listing = client.list(daemon.cwd()).await.expect("list");
    assert!(listing.hooks[0].paused.is_some());

    client.reload().await.expect("reload");
    let listing = client.list(daemon.cwd()).await.expect("list");
    assert_eq!(listing.hooks[0].paused, None, "a reload forgets the pause");
    fire(&client, &daemon.cwd(), "BeforeTool", tool).await;
    assert_eq!(runs(), 2, "the hook runs again at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_that_blocks_every_time_is_never_paused() {
    // Exit 2 with a message denies: an answer, not a failure. Were it paused, its failure
    // policy (allow, by default) would let through what it blocks.
    let settings = settings(&[(
        "BeforeTool",
        None,
        vec![hook(
            "no-rm",
            "echo run >> runs; echo 'no rm -rf here' >&2; exit 2",
            json!({}),
        )],
    )]);
    let daemon = Daemon::start_with(
        settings,
        DaemonOptions {
            configure: Box::new(|config: &mut ServerConfig| {
                config.breaker.threshold = 2;
                config.breaker.backoff = Duration::from_secs(3600);
            }),
            ..DaemonOptions::default()
        },
    )
    .await;
    let client = daemon.client().await;
    let tool = json!({"tool_name": "run_shell_command", "tool_input": {"command": "rm -rf /"}});
    for n in 1..=4 {
        let result = fire(&client, &daemon.cwd(), "BeforeTool", tool.clone()).await;
        let output = result.final_output.expect("output");
        assert_eq!(output["decision"], "deny", "run {n}");
        assert_eq!(output["reason"], "no rm -rf here", "run {n}");
    }
    let runs = std::fs::read_to_string(daemon.project.join("runs")).expect("runs");
    assert_eq!(runs.lines().count(), 4, "spawned every time");
    let status = client.status().await.expect("status");
    assert!(status.breaker.expect("breaker").paused.is_empty());
}

/// A cloned project whose `"async": true` hooks (`sleep 30`, on every tool) flood the daemon
/// cannot starve another project: its foreground deny gate is answered within 1 s with its
/// deny, and its `SessionEnd` hook still runs. The flood holds at most its project's
/// background share of the hook slots (a quarter of them), so the other project's
/// foreground and background work find slots at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_flood_from_one_project_never_starves_another_projects_guards() {
    let sleepers: Vec<Value> = (0..8)
        .map(|n| {
            hook(
                &format!("sleeper-{n}"),
                "echo started >> started; sleep 30",
                json!({"async": true}),
            )
        })
        .collect();
    let hostile = settings(&[("BeforeTool", None, sleepers)]);
    let (daemon, _audit) = daemon_with_audit(hostile, |config| {
        // What the default is on a two-core machine, where the flood held every slot.
        config.max_hooks = 32;
        config.background_grace = Duration::from_millis(500);
        config.kill_grace = Duration::from_millis(200);
    })
    .await;
    let other = daemon.dir.path().join("other");
    let guarded = settings(&[
        (
            "BeforeTool",
            None,
            vec![hook(
                "gate",
                "echo '{\"decision\":\"deny\",\"reason\":\"the gate\"}'",
                json!({"on_failure": "deny"}),
            )],
        ),
        (
            "SessionEnd",
            None,
            vec![hook("farewell", "touch session-end.done", json!({}))],
        ),
    ]);
    hookd_testkit::write(&other.join(".gemini/settings.json"), &guarded.to_string());
    let other_cwd = other.display().to_string();

    // The flood: 20 tool calls, each starting 8 sleepers in the background.
    let attacker = daemon.client().await;
    let fields = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
    for _ in 0..20 {
        fire(&attacker, &daemon.cwd(), "BeforeTool", fields.clone()).await;
    }
    let started = daemon.project.join("started");
    wait_until(
        "the flood to hold its share of the slots",
        Duration::from_secs(20),
        || {
            std::fs::read_to_string(&started)
                .map(|text| text.lines().count() >= 8)
                .unwrap_or(false)
        },
    )
    .await;
    let status = attacker.status().await.expect("status");
    assert!(
        status.hooks_running <= 8 && status.hooks_queued > 0,
        "the flood holds its project's background share (8 of 32), no more: {status:?}"
    );

    // The other project's gate: its deny, within 1 s, while the flood goes on.
    let guarded_client = daemon.client().await;
    for _ in 0..5 {
        let asked = Instant::now();
        let result = within(
            "the other project's gate",
            Duration::from_secs(1),
            guarded_client.event(
                EventRequest::new("BeforeTool", &other_cwd).with_input(input(fields.clone())),
            ),
        )
        .await
        .expect("an answer");
        let elapsed = asked.elapsed();
        let decision = result
            .result
            .final_output
            .as_ref()
            .map(|o| o["decision"].clone());
        assert_eq!(decision, Some(json!("deny")), "{result:?}");
        assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    }

    // Its SessionEnd hook runs too (a detached run: background work of another project).
    let mut end =
        EventRequest::new("SessionEnd", &other_cwd).with_input(input(json!({"reason": "exit"})));
    end.detach = true;
    fire_request_quietly(&guarded_client, end).await;
    let done = other.join("session-end.done");
    wait_until(
        "the other project's SessionEnd hook",
        Duration::from_secs(5),
        || done.exists(),
    )
    .await;
    let still = std::fs::read_to_string(&started).unwrap_or_default();
    assert!(
        still.lines().count() <= 8,
        "no more sleepers than the share started: {still}"
    );
    daemon.stop().await;
}

/// Sends `request` and waits for its answer, which must not be an error.
async fn fire_request_quietly(client: &hookd_client::Client, request: EventRequest) {
    within("the event", Duration::from_secs(10), client.event(request))
        .await
        .expect("an answer");
}
