//! Persistent workers (`"mode": "persistent"`) and pre-warmed one-shot hooks (`"prewarm":
//! true`) through the real daemon, with real Python and Node scripts: one process answers many
//! events, failures are reported like a one-shot hook's and the next event gets a new worker,
//! idle processes are stopped, pools serve in parallel, sessions get their own workers, a
//! disconnecting client frees its worker's slot, and shutdown stops everything.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use hookd_client::{Client, EventRequest};
use hookd_protocol::{EventResult, Outcome};
use hookd_testkit::{
    Daemon, RawConn, fire, fire_request, input, process_running, wait_until, within, write,
};
use serde_json::{Value, json};

/// The worker of these tests. It answers `{"decision":"deny","reason":"<pid>:<count>"}`,
/// where `count` counts its requests, unless the tool input's `action` asks for a failure:
/// `crash` (exit 3), `hang` (after creating `hanging.<pid>`), `garbage` (a line that is not
/// JSON), or `slow` (wait until two requests are being served at once, for up to 10 s).
const WORKER: &str = r#"import json, os, sys, time

pid = os.getpid()
count = 0
for line in sys.stdin:
    count += 1
    action = json.loads(line).get("tool_input", {}).get("action", "count")
    if action == "crash":
        print(f"crashing on request {count}", file=sys.stderr, flush=True)
        sys.exit(3)
    if action == "hang":
        open(f"hanging.{pid}", "w").close()
        time.sleep(60)
    if action == "garbage":
        print("this is not json", flush=True)
        continue
    if action == "slow":
        open(f"busy.{pid}", "w").close()
        deadline = time.time() + 10
        while time.time() < deadline:
            if len([name for name in os.listdir(".") if name.startswith("busy.")]) >= 2:
                break
            time.sleep(0.02)
    print(json.dumps({"decision": "deny", "reason": f"{pid}:{count}"}), flush=True)
"#;

/// A pre-warmed hook: records `started.<pid>` as soon as it starts, then reads its payload
/// and denies with its pid as the reason.
const PREWARMED: &str = r#"import json, os, sys

pid = os.getpid()
open(f"started.{pid}", "w").close()
json.load(sys.stdin)
print(json.dumps({"decision": "deny", "reason": str(pid)}))
"#;

/// How long any single wait of these tests may take before it fails.
const PATIENCE: Duration = Duration::from_secs(20);

/// A hook entry running `script` (a file in the project's `.gemini/hooks/`) with `python3`,
/// with `extra` keys merged in.
fn python_hook(name: &str, script: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "type": "command",
        "command": format!("python3 $GEMINI_PROJECT_DIR/.gemini/hooks/{script}"),
    });
    if let (Some(hook), Some(extra)) = (hook.as_object_mut(), extra.as_object()) {
        hook.extend(extra.clone());
    }
    hook
}

/// Project settings with one BeforeTool definition per `(tool, hook)`.
fn settings(hooks: Vec<(&str, Value)>) -> Value {
    let definitions: Vec<Value> = hooks
        .into_iter()
        .map(|(tool, hook)| json!({"matcher": format!("^{tool}$"), "hooks": [hook]}))
        .collect();
    json!({"hooks": {"BeforeTool": definitions}})
}

/// Starts a daemon with `settings`, the test worker and the pre-warmed script in place.
async fn start(settings: Value) -> Daemon {
    let daemon = Daemon::start(settings).await;
    let hooks = daemon.project.join(".gemini/hooks");
    write(&hooks.join("worker.py"), WORKER);
    write(&hooks.join("prewarmed.py"), PREWARMED);
    daemon
}

/// Fires BeforeTool for `tool` with tool input `{"action": action}`.
async fn ask(client: &Client, daemon: &Daemon, tool: &str, action: &str) -> EventResult {
    fire(
        client,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": tool, "tool_input": {"action": action}}),
    )
    .await
}

/// The same, in session `session`.
async fn ask_in(client: &Client, daemon: &Daemon, session: &str) -> EventResult {
    let mut request = EventRequest::new("BeforeTool", daemon.cwd())
        .with_input(input(json!({"tool_name": "w", "tool_input": {}})));
    request.session_id = session.to_owned();
    fire_request(client, request).await.result
}

/// The `(pid, count)` of the worker's answer.
fn answer(result: &EventResult) -> (i32, u64) {
    let reason = result
        .final_output
        .as_ref()
        .and_then(|output| output["reason"].as_str())
        .unwrap_or_else(|| panic!("no reason in {result:?}"));
    let (pid, count) = reason
        .split_once(':')
        .unwrap_or_else(|| panic!("not a worker's answer: {reason}"));
    (pid.parse().expect("a pid"), count.parse().expect("a count"))
}

/// The pids named by files `<prefix><pid>` in `dir`.
fn pids_named(dir: &Path, prefix: &str) -> BTreeSet<i32> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| {
                    entry
                        .file_name()
                        .to_str()?
                        .strip_prefix(prefix)?
                        .parse()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_answers_200_requests_with_one_process() {
    let daemon = start(settings(vec![(
        "w",
        python_hook("gate", "worker.py", json!({"mode": "persistent"})),
    )]))
    .await;
    let client = daemon.client().await;
    let mut pids = BTreeSet::new();
    for expected in 1..=200 {
        let result = ask(&client, &daemon, "w", "count").await;
        assert!(result.success, "{result:?}");
        let (pid, count) = answer(&result);
        assert_eq!(count, expected, "request {expected} went to a fresh worker");
        pids.insert(pid);
    }
    assert_eq!(pids.len(), 1, "{pids:?}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_from_a_worker_deny_like_a_one_shot_hook() {
    let daemon = start(settings(vec![
        (
            "w",
            python_hook("gate", "worker.py", json!({"mode": "persistent"})),
        ),
        ("one", python_hook("gate", "worker.py", json!({}))),
    ]))
    .await;
    let client = daemon.client().await;
    for _ in 0..3 {
        let worker = ask(&client, &daemon, "w", "count").await;
        let one_shot = ask(&client, &daemon, "one", "count").await;
        for result in [&worker, &one_shot] {
            assert!(result.success, "{result:?}");
            let output = result.final_output.as_ref().expect("an output");
            assert_eq!(output["decision"], "deny", "{result:?}");
            let record = &result.hooks[0];
            assert_eq!(record.outcome, Outcome::Exited { code: 0 });
            assert_eq!(record.exit_code, Some(0));
            assert_eq!(record.failure, None);
        }
        // The same fields, the same interpretation; only the reason (pid, count) differs.
        let keys = |result: &EventResult| -> Vec<String> {
            let output = result.final_output.as_ref().and_then(Value::as_object);
            output
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(keys(&worker), keys(&one_shot));
        assert_eq!(
            worker.hooks[0].output_format,
            one_shot.hooks[0].output_format
        );
    }
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_reported_like_a_one_shot_hooks_and_the_next_event_gets_a_new_worker() {
    // The timeout counts from the spawn, as a one-shot hook's does, so it must leave room for
    // a cold Python start: on a loaded 2-core machine that alone takes up to 2 s, and a 1.5 s
    // timeout once cut off a plain `count`.
    const TIMEOUT_MS: u64 = 5000;
    let daemon = start(settings(vec![(
        "w",
        python_hook(
            "gate",
            "worker.py",
            json!({"mode": "persistent", "timeout": TIMEOUT_MS}),
        ),
    )]))
    .await;
    let client = daemon.client().await;
    let cases = ["crash", "hang", "garbage"];
    for action in cases {
        let (pid, _) = answer(&ask(&client, &daemon, "w", "count").await);
        let started = Instant::now();
        let result = ask(&client, &daemon, "w", action).await;
        let elapsed = started.elapsed();
        // Within the timeout and the kill grace, with room for a loaded machine.
        assert!(
            elapsed < Duration::from_millis(TIMEOUT_MS) + Duration::from_secs(8),
            "{action} took {elapsed:?}"
        );
        let record = &result.hooks[0];
        assert!(!record.success, "{action}: {record:?}");
        match action {
            "crash" => {
                assert_eq!(record.outcome, Outcome::Exited { code: 3 });
                assert!(
                    record.stderr.contains("crashing on request 2"),
                    "{record:?}"
                );
                assert_eq!(record.failure.as_deref(), Some("exited_without_decision"));
            }
            "hang" => {
                assert_eq!(
                    record.outcome,
                    Outcome::TimedOut {
                        timeout_ms: TIMEOUT_MS
                    }
                );
                assert_eq!(
                    record.error.clone(),
                    Some(format!("Hook timed out after {TIMEOUT_MS}ms"))
                );
                assert_eq!(record.failure.as_deref(), Some("timed_out"));
            }
            _ => {
                assert_eq!(record.outcome, Outcome::Exited { code: 1 });
                assert!(
                    record.stderr.contains(
                        "the worker answered with a line that is not JSON: \"this is not json\""
                    ),
                    "{record:?}"
                );
                assert_eq!(record.failure.as_deref(), Some("exited_without_decision"));
            }
        }
        wait_until(
            &format!("the worker {pid} is gone after {action}"),
            PATIENCE,
            || !process_running(pid),
        )
        .await;
        let next = ask(&client, &daemon, "w", "count").await;
        let (new_pid, count) = answer(&next);
        assert_ne!(new_pid, pid, "{action}");
        assert_eq!(count, 1, "{action}: a restarted worker counts from 1");
    }
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_workers_are_stopped() {
    let daemon = start(settings(vec![(
        "w",
        python_hook(
            "gate",
            "worker.py",
            json!({"mode": "persistent", "idle_timeout": 300}),
        ),
    )]))
    .await;
    let client = daemon.client().await;
    let (pid, _) = answer(&ask(&client, &daemon, "w", "count").await);
    wait_until("the idle worker is gone", PATIENCE, || {
        !process_running(pid)
    })
    .await;
    // The next event starts a new one.
    let (new_pid, count) = answer(&ask(&client, &daemon, "w", "count").await);
    assert_ne!(new_pid, pid);
    assert_eq!(count, 1);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_two_serves_two_slow_requests_at_once() {
    let daemon = start(settings(vec![(
        "w",
        python_hook(
            "gate",
            "worker.py",
            json!({"mode": "persistent", "pool": 2, "timeout": 30000}),
        ),
    )]))
    .await;
    let client = daemon.client().await;
    // Each `slow` request waits until both are being served: one at a time, the first would
    // wait its 10 s out alone and see only itself.
    let (a, b) = tokio::join!(
        ask(&client, &daemon, "w", "slow"),
        ask(&client, &daemon, "w", "slow")
    );
    let (pid_a, _) = answer(&a);
    let (pid_b, _) = answer(&b);
    assert_ne!(pid_a, pid_b);
    let busy = pids_named(&daemon.project, "busy.");
    assert_eq!(busy, BTreeSet::from([pid_a, pid_b]));
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_has_its_own_worker() {
    let daemon = start(settings(vec![(
        "w",
        python_hook("gate", "worker.py", json!({"mode": "persistent"})),
    )]))
    .await;
    let client = daemon.client().await;
    let (a, _) = answer(&ask_in(&client, &daemon, "session-a").await);
    let (b, _) = answer(&ask_in(&client, &daemon, "session-b").await);
    let (a_again, count) = answer(&ask_in(&client, &daemon, "session-a").await);
    assert_ne!(a, b);
    assert_eq!((a_again, count), (a, 2));
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_closed_by_disconnect_frees_the_workers_slots() {
    // One worker, and a timeout far beyond the test's patience: the second client is served
    // in time only if the first client's disconnect freed the worker's slot.
    let daemon = start(settings(vec![(
        "w",
        python_hook(
            "gate",
            "worker.py",
            json!({"mode": "persistent", "pool": 1, "timeout": 120000}),
        ),
    )]))
    .await;
    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    conn.send(
        &json!({"type": "event", "id": 1, "event": "BeforeTool", "cwd": daemon.cwd(),
                      "input": {"tool_name": "w", "tool_input": {"action": "hang"}}}),
    )
    .await;
    wait_until("the worker took the request", PATIENCE, || {
        !pids_named(&daemon.project, "hanging.").is_empty()
    })
    .await;
    let hung = *pids_named(&daemon.project, "hanging.")
        .first()
        .expect("a hanging worker");
    drop(conn);

    let client = daemon.client().await;
    let result = within(
        "another client's request to the same hook",
        PATIENCE,
        ask(&client, &daemon, "w", "count"),
    )
    .await;
    let (pid, count) = answer(&result);
    assert_ne!(pid, hung);
    assert_eq!(count, 1);
    wait_until("the abandoned worker is gone", PATIENCE, || {
        !process_running(hung)
    })
    .await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_daemon_stops_its_workers() {
    let daemon = start(settings(vec![(
        "w",
        python_hook("gate", "worker.py", json!({"mode": "persistent"})),
    )]))
    .await;
    let client = daemon.client().await;
    let (pid, _) = answer(&ask(&client, &daemon, "w", "count").await);
    assert!(process_running(pid));
    drop(client);
    within("stopping the daemon", PATIENCE, daemon.stop()).await;
    wait_until("the worker is gone", PATIENCE, || !process_running(pid)).await;
}

/// The pid a pre-warmed hook denied with.
fn prewarmed_pid(result: &EventResult) -> i32 {
    result
        .final_output
        .as_ref()
        .and_then(|output| output["reason"].as_str())
        .and_then(|reason| reason.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {result:?}"))
}

/// Fires the pre-warmed hook once and returns the pid of its spare, once it is started.
async fn first_prewarmed_event(client: &Client, daemon: &Daemon) -> i32 {
    let first = ask(client, daemon, "p", "").await;
    assert!(first.success, "{first:?}");
    let ran = prewarmed_pid(&first);
    wait_until("a spare started", PATIENCE, || {
        pids_named(&daemon.project, "started.").len() == 2
    })
    .await;
    let spares: Vec<i32> = pids_named(&daemon.project, "started.")
        .into_iter()
        .filter(|pid| *pid != ran)
        .collect();
    assert_eq!(spares.len(), 1, "{spares:?}");
    spares[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_event_of_a_prewarmed_hook_is_served_by_a_process_started_before_it() {
    let daemon = start(settings(vec![(
        "p",
        python_hook("warm", "prewarmed.py", json!({"prewarm": true})),
    )]))
    .await;
    let client = daemon.client().await;
    let spare = first_prewarmed_event(&client, &daemon).await;
    // The spare recorded its start before this event was sent.
    assert!(process_running(spare));
    let second = ask(&client, &daemon, "p", "").await;
    assert!(second.success, "{second:?}");
    assert_eq!(prewarmed_pid(&second), spare);
    assert_eq!(second.hooks[0].outcome, Outcome::Exited { code: 0 });
    wait_until("the used spare is gone", PATIENCE, || {
        !process_running(spare)
    })
    .await;
    // And the third event gets the spare started after the second.
    wait_until("another spare started", PATIENCE, || {
        pids_named(&daemon.project, "started.").len() == 3
    })
    .await;
    let third = ask(&client, &daemon, "p", "").await;
    let newest = pids_named(&daemon.project, "started.");
    assert!(newest.contains(&prewarmed_pid(&third)));
    assert_eq!(
        newest.len(),
        3,
        "the third event used a spare, not a new process"
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unused_spare_is_stopped_after_its_idle_timeout() {
    let daemon = start(settings(vec![(
        "p",
        python_hook(
            "warm",
            "prewarmed.py",
            json!({"prewarm": true, "idle_timeout": 2000}),
        ),
    )]))
    .await;
    let client = daemon.client().await;
    let spare = first_prewarmed_event(&client, &daemon).await;
    wait_until("the idle spare is gone", PATIENCE, || {
        !process_running(spare)
    })
    .await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_daemon_stops_its_spares() {
    let daemon = start(settings(vec![(
        "p",
        python_hook("warm", "prewarmed.py", json!({"prewarm": true})),
    )]))
    .await;
    let client = daemon.client().await;
    let spare = first_prewarmed_event(&client, &daemon).await;
    assert!(process_running(spare));
    drop(client);
    within("stopping the daemon", PATIENCE, daemon.stop()).await;
    wait_until("the spare is gone", PATIENCE, || !process_running(spare)).await;
}

/// The example workers of `docs/workers.md`, as shipped in `docs/examples/`.
const EXAMPLE_PYTHON: &str = include_str!("../../docs/examples/worker.py");
const EXAMPLE_NODE: &str = include_str!("../../docs/examples/worker.js");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_example_workers_run_through_the_daemon() {
    let worker = |name: &str, command: &str| {
        json!({"name": name, "type": "command", "mode": "persistent", "timeout": 10000,
               "command": command})
    };
    let daemon = Daemon::start(json!({"hooks": {"BeforeTool": [{
        "matcher": "run_shell_command",
        "hooks": [
            worker("python-policy", "python3 $GEMINI_PROJECT_DIR/.gemini/hooks/worker.py"),
            worker("node-policy", "node $GEMINI_PROJECT_DIR/.gemini/hooks/worker.js"),
        ]
    }]}}))
    .await;
    let hooks = daemon.project.join(".gemini/hooks");
    write(&hooks.join("worker.py"), EXAMPLE_PYTHON);
    write(&hooks.join("worker.js"), EXAMPLE_NODE);
    let client = daemon.client().await;
    let shell = |command: &str| json!({"tool_name": "run_shell_command", "tool_input": {"command": command}});
    for round in 1..=3 {
        let allowed = fire(&client, &daemon.cwd(), "BeforeTool", shell("ls -la")).await;
        assert!(allowed.success, "{allowed:?}");
        assert_eq!(allowed.hooks.len(), 2);
        for record in &allowed.hooks {
            assert_eq!(record.outcome, Outcome::Exited { code: 0 }, "{record:?}");
            let decision = record.output.as_ref().and_then(|o| o.get("decision"));
            assert_eq!(decision, None, "{record:?}");
        }
        let blocked = fire(
            &client,
            &daemon.cwd(),
            "BeforeTool",
            shell("sudo rm -rf / --no-preserve-root"),
        )
        .await;
        assert_eq!(blocked.hooks.len(), 2);
        // Each worker has now answered 2 requests per round: one process each, all along.
        let request = round * 2;
        for record in &blocked.hooks {
            let output = record.output.as_ref().expect("an output");
            assert_eq!(output["decision"], "deny", "{record:?}");
            assert_eq!(
                output["reason"],
                format!("rm -rf / is not allowed (request {request} of this worker)"),
                "{}: {record:?}",
                record.name
            );
            assert!(
                record
                    .stderr
                    .contains(&format!("answered request {request}")),
                "{record:?}"
            );
        }
        let output = blocked.final_output.as_ref().expect("a final output");
        assert_eq!(output["decision"], "deny");
    }
    daemon.stop().await;
}
