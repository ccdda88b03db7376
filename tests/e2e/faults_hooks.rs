//! Fault injection, hook side: hooks that ignore SIGTERM, leave a grandchild holding stdout,
//! start a hundred background sleepers, never read 50 MiB of input, print a gibibyte, print
//! invalid UTF-8, die half-way through their JSON, or close stdout and keep running.
//!
//! Each test runs its own daemon and ends with the same checks: the daemon still answers a new
//! client correctly, no hook process is alive and no zombie waits for the daemon, and the test
//! process's resident memory (the daemon runs inside it) grew by less than a bound that a
//! daemon holding a whole input or output would blow. The memory-measuring tests take
//! [`memory_test_lock`] so that they never overlap.

use std::time::{Duration, Instant};

use hookd_protocol::{EventResult, HookRecord, Outcome, StreamName};
use hookd_testkit::{
    Daemon, DaemonOptions, MemoryWatch, RECORD_PID, RawConn, fire, memory_test_lock,
};
use serde_json::{Value, json};

/// Where hooks write the pids of the processes they start, next to their own.
const PIDS: &str = "${GEMINI_PROJECT_DIR}/.pids";

/// The growth of resident memory every case must stay under, in MiB.
const MEMORY_LIMIT_MIB: u64 = 200;

/// A command hook with an optional timeout in milliseconds.
fn hook(name: &str, command: &str, timeout_ms: Option<u64>) -> Value {
    let mut hook = json!({"name": name, "type": "command", "command": command});
    if let Some(timeout) = timeout_ms {
        hook["timeout"] = json!(timeout);
    }
    hook
}

/// A daemon whose `BeforeTool` hooks for tool `tool` are `hooks`.
async fn daemon_with(tool: &str, hooks: Vec<Value>) -> Daemon {
    let matcher = format!("^{tool}$");
    Daemon::start_for_faults(
        vec![("BeforeTool", Some(matcher.as_str()), hooks)],
        DaemonOptions::default(),
    )
    .await
}

/// Fires `BeforeTool` for `tool` and returns the result and how long the answer took.
async fn run_tool(daemon: &Daemon, tool: &str) -> (EventResult, Duration) {
    let client = daemon.client().await;
    let started = Instant::now();
    let result = fire(
        &client,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": tool, "tool_input": {}}),
    )
    .await;
    (result, started.elapsed())
}

/// The record of the hook named `name`.
fn record<'a>(result: &'a EventResult, name: &str) -> &'a HookRecord {
    result
        .hooks
        .iter()
        .find(|hook| hook.name == name)
        .unwrap_or_else(|| panic!("no hook {name:?} in {result:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let _serial = memory_test_lock().await;
    // The hook and its child both ignore SIGTERM (an ignored disposition is inherited), so
    // only the SIGKILL that follows the grace period can end them.
    let command = format!(
        "{RECORD_PID}; trap '' TERM; sleep 300 & echo $! > \"{PIDS}/$$.child\"; wait; wait"
    );
    let daemon = daemon_with("stubborn", vec![hook("stubborn", &command, Some(1000))]).await;
    let memory = MemoryWatch::start();

    let (result, elapsed) = run_tool(&daemon, "stubborn").await;
    let stubborn = record(&result, "stubborn");
    assert_eq!(
        stubborn.outcome,
        Outcome::TimedOut { timeout_ms: 1000 },
        "{stubborn:?}"
    );
    assert_eq!(
        stubborn.error.as_deref(),
        Some("Hook timed out after 1000ms")
    );
    assert!(!stubborn.success);
    // 1 s timeout + 0.5 s grace: far less than the 300 s the hook would take.
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    assert_eq!(daemon.recorded_in(".child").len(), 1);

    daemon
        .finish_fault("a hook that ignores SIGTERM", memory, MEMORY_LIMIT_MIB)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_holding_stdout_does_not_hold_the_run_past_its_timeout() {
    let _serial = memory_test_lock().await;
    // The subshell starts `sleep` and exits at once, so `sleep` is an orphaned grandchild of
    // the hook; it inherited stdout and keeps the pipe open for five minutes.
    let command = format!(
        "{RECORD_PID}; ( sleep 300 & echo $! > \"{PIDS}/$$.grandchild\" ); \
         printf '%s\\n' '{{\"decision\":\"deny\",\"reason\":\"parent done\"}}'; exit 0"
    );
    let daemon = daemon_with("grandchild", vec![hook("grandchild", &command, Some(2000))]).await;
    let memory = MemoryWatch::start();

    let (result, elapsed) = run_tool(&daemon, "grandchild").await;
    let grandchild = record(&result, "grandchild");
    // The run ends when the hook exited *and* its pipes closed, or a short grace after the
    // hook exited: the grandchild keeps the pipe, so the grace ends it, the group is killed,
    // and the hook's own answer stands.
    assert_eq!(
        grandchild.outcome,
        Outcome::Exited { code: 0 },
        "{grandchild:?}"
    );
    assert_eq!(
        result
            .final_output
            .as_ref()
            .map(|output| &output["decision"]),
        Some(&json!("deny"))
    );
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    assert_eq!(daemon.recorded_in(".grandchild").len(), 1);

    daemon
        .finish_fault(
            "a grandchild that keeps stdout open",
            memory,
            MEMORY_LIMIT_MIB,
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_background_sleepers_without_pipes_do_not_outlive_their_hook() {
    let _serial = memory_test_lock().await;
    // The sleepers hold none of the hook's pipes, so the hook's run ends as soon as the hook
    // exits, and nothing but hookd's cleanup of the process group can stop them.
    let command = format!(
        "{RECORD_PID}; for i in {{1..100}}; do sleep 300 </dev/null >/dev/null 2>&1 & \
         echo $! >> \"{PIDS}/$$.sleepers\"; done; \
         printf '%s\\n' '{{\"decision\":\"deny\",\"reason\":\"sleepers started\"}}'"
    );
    let daemon = daemon_with("bomb", vec![hook("bomb", &command, Some(30_000))]).await;
    let memory = MemoryWatch::start();

    let (result, elapsed) = run_tool(&daemon, "bomb").await;
    let bomb = record(&result, "bomb");
    assert_eq!(bomb.outcome, Outcome::Exited { code: 0 }, "{bomb:?}");
    assert!(bomb.success, "{bomb:?}");
    assert_eq!(
        result.final_output.as_ref().map(|output| &output["reason"]),
        Some(&json!("sleepers started"))
    );
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    assert_eq!(daemon.recorded_in(".sleepers").len(), 100);

    daemon
        .finish_fault(
            "100 background sleepers with their output redirected",
            memory,
            MEMORY_LIMIT_MIB,
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_background_sleepers_holding_the_pipes_are_killed_after_the_hook_exits() {
    let _serial = memory_test_lock().await;
    // Every sleeper inherits stdout and stderr, so the pipes stay open after the hook exits.
    let command = format!(
        "{RECORD_PID}; for i in {{1..100}}; do sleep 300 & \
         echo $! >> \"{PIDS}/$$.sleepers\"; done; \
         printf '%s\\n' '{{\"decision\":\"deny\",\"reason\":\"sleepers started\"}}'"
    );
    let daemon = daemon_with("bomb", vec![hook("bomb", &command, Some(3000))]).await;
    let memory = MemoryWatch::start();

    let (result, elapsed) = run_tool(&daemon, "bomb").await;
    let bomb = record(&result, "bomb");
    // The hook exited; its sleepers get a short grace, then the group is killed and the
    // hook's own deny stands (it used to be held to the timeout and dropped).
    assert_eq!(bomb.outcome, Outcome::Exited { code: 0 }, "{bomb:?}");
    assert_eq!(
        result.final_output.as_ref().map(|output| &output["reason"]),
        Some(&json!("sleepers started"))
    );
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    assert_eq!(daemon.recorded_in(".sleepers").len(), 100);

    daemon
        .finish_fault(
            "100 background sleepers holding the pipes",
            memory,
            MEMORY_LIMIT_MIB,
        )
        .await;
}

/// The size of the string field sent to hooks that do not read their input.
const BIG_INPUT_BYTES: usize = 50 * 1024 * 1024;

/// The growth allowed while the daemon handles a 50 MiB request: the frame, its parsed form
/// and the hooks' stdin payload may each exist once at the same time, plus the allocator's
/// slack; a daemon that copied the input per hook, or kept it, would exceed this.
const BIG_INPUT_MEMORY_LIMIT_MIB: u64 = 320;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_that_never_read_fifty_mebibytes_of_input_do_not_block_the_run() {
    let _serial = memory_test_lock().await;
    let no_read = format!(
        "{RECORD_PID}; sleep 1; printf '%s\\n' '{{\"decision\":\"deny\",\"reason\":\"did not read\"}}'"
    );
    let stuck = format!("{RECORD_PID}; sleep 300");
    let reader =
        format!("{RECORD_PID}; n=$(wc -c); printf '{{\"systemMessage\":\"%s\"}}\\n' \"$n\"");
    let daemon = daemon_with(
        "big-input",
        vec![
            hook("no-read", &no_read, None),
            hook("stuck", &stuck, Some(2000)),
            hook("reader", &reader, None),
        ],
    )
    .await;
    let memory = MemoryWatch::start();

    // The frame is written in pieces, so the test itself never holds the 50 MiB.
    let head = format!(
        r#"{{"type":"event","id":1,"event":"BeforeTool","cwd":{},"input":{{"tool_name":"big-input","tool_input":{{"blob":""#,
        json!(daemon.cwd())
    );
    let tail = r#""}}}"#;
    let body_len = head.len() + BIG_INPUT_BYTES + tail.len();
    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    conn.send_bytes(&u32::try_from(body_len).expect("fits").to_be_bytes())
        .await;
    conn.send_bytes(head.as_bytes()).await;
    let chunk = vec![b'a'; 1024 * 1024];
    for _ in 0..BIG_INPUT_BYTES / chunk.len() {
        conn.send_bytes(&chunk).await;
    }
    conn.send_bytes(tail.as_bytes()).await;
    let started = Instant::now();
    let result = conn.recv().await.expect("a result");
    let elapsed = started.elapsed();
    assert_eq!(result["type"], "result", "{result}");
    let hooks = result["hooks"].as_array().expect("hooks");
    let find = |name: &str| {
        hooks
            .iter()
            .find(|hook| hook["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {hooks:?}"))
    };
    let no_read = find("no-read");
    assert_eq!(no_read["outcome"], json!({"kind": "exited", "code": 0}));
    assert_eq!(no_read["output"]["reason"], "did not read");
    let stuck = find("stuck");
    assert_eq!(
        stuck["outcome"],
        json!({"kind": "timed_out", "timeout_ms": 2000})
    );
    // The reader got the whole payload: the 50 MiB string plus the other fields.
    let reader = find("reader");
    assert_eq!(reader["outcome"], json!({"kind": "exited", "code": 0}));
    let read: usize = reader["output"]["systemMessage"]
        .as_str()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("a byte count: {reader}"));
    assert!(read > BIG_INPUT_BYTES, "the reader got {read} bytes");
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    drop(conn);

    daemon
        .finish_fault(
            "hooks that never read 50 MiB of input",
            memory,
            BIG_INPUT_MEMORY_LIMIT_MIB,
        )
        .await;
}

/// One gibibyte.
const GIB: u64 = 1024 * 1024 * 1024;

/// The daemon's default cap on each captured stream.
const OUTPUT_CAP: u64 = 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_printing_a_gibibyte_are_capped_and_drained() {
    let _serial = memory_test_lock().await;
    let stdout = format!("{RECORD_PID}; head -c {GIB} /dev/zero");
    let stderr = format!("{RECORD_PID}; head -c {GIB} /dev/zero >&2");
    let daemon = daemon_with(
        "flood",
        vec![
            hook("flood-stdout", &stdout, Some(60_000)),
            hook("flood-stderr", &stderr, Some(60_000)),
        ],
    )
    .await;
    let memory = MemoryWatch::start();

    let (result, elapsed) = run_tool(&daemon, "flood").await;
    for (name, stream, label) in [
        ("flood-stdout", StreamName::Stdout, "stdout"),
        ("flood-stderr", StreamName::Stderr, "stderr"),
    ] {
        let flood = record(&result, name);
        assert_eq!(
            flood.outcome,
            Outcome::OutputTooLarge {
                stream,
                cap_bytes: OUTPUT_CAP,
                code: Some(0)
            },
            "{name}: {:?}",
            flood.error
        );
        assert!(!flood.success, "{name}");
        let captured = match stream {
            StreamName::Stdout => &flood.stdout,
            StreamName::Stderr => &flood.stderr,
        };
        // Every byte was read: the cap's worth kept, the rest counted and thrown away.
        let marker = format!(
            "[hookd: {} truncated after {OUTPUT_CAP} bytes; {} more bytes discarded]",
            label,
            GIB - OUTPUT_CAP
        );
        assert!(
            captured.ends_with(&marker),
            "{name}: ends with {:?}",
            &captured[captured.len().saturating_sub(120)..]
        );
        assert_eq!(
            captured.len(),
            usize::try_from(OUTPUT_CAP).expect("fits") + 1 + marker.len(),
            "{name}"
        );
    }
    // `head` finishes by itself; the 60 s timeout is far away.
    eprintln!("two hooks printing 1 GiB each were answered in {elapsed:?}");
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");

    daemon
        .finish_fault("hooks that print 1 GiB", memory, MEMORY_LIMIT_MIB)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_output_is_replaced_not_fatal() {
    let _serial = memory_test_lock().await;
    let text = format!(r"{RECORD_PID}; printf 'caf\xe9 \xff\xfe\n'");
    let json_text =
        format!(r#"{RECORD_PID}; printf '{{"decision":"deny","reason":"bad \xff byte"}}\n'"#);
    let stderr = format!(r"{RECORD_PID}; printf 'blocked \xc3\x28' >&2; exit 2");
    let daemon = daemon_with(
        "bytes",
        vec![
            hook("bytes-text", &text, None),
            hook("bytes-json", &json_text, None),
            hook("bytes-stderr", &stderr, None),
        ],
    )
    .await;
    let memory = MemoryWatch::start();

    let (result, _) = run_tool(&daemon, "bytes").await;
    let cases = [
        (
            "bytes-text",
            0,
            json!({"decision": "allow", "systemMessage": "caf\u{FFFD} \u{FFFD}\u{FFFD}"}),
        ),
        (
            "bytes-json",
            0,
            json!({"decision": "deny", "reason": "bad \u{FFFD} byte"}),
        ),
        (
            "bytes-stderr",
            2,
            json!({"decision": "deny", "reason": "blocked \u{FFFD}("}),
        ),
    ];
    for (name, code, expected) in cases {
        let hook = record(&result, name);
        assert_eq!(hook.outcome, Outcome::Exited { code }, "{name}: {hook:?}");
        assert_eq!(hook.output.as_ref(), Some(&expected), "{name}: {hook:?}");
    }
    assert_eq!(
        record(&result, "bytes-text").stdout,
        "caf\u{FFFD} \u{FFFD}\u{FFFD}\n"
    );

    daemon
        .finish_fault("hooks that print invalid UTF-8", memory, MEMORY_LIMIT_MIB)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_killed_half_way_through_its_json_does_not_decide() {
    let _serial = memory_test_lock().await;
    let command =
        format!(r#"{RECORD_PID}; printf '{{"decision":"deny","reason":"half'; kill -9 $$"#);
    let daemon = daemon_with("half", vec![hook("half", &command, None)]).await;
    let memory = MemoryWatch::start();

    let (result, _) = run_tool(&daemon, "half").await;
    let half = record(&result, "half");
    let written = r#"{"decision":"deny","reason":"half"#;
    assert_eq!(half.outcome, Outcome::Signalled { signal: 9 }, "{half:?}");
    assert!(!half.success, "{half:?}");
    assert_eq!(half.stdout, written);
    // Half an object is not JSON, so it is plain text: Gemini CLI's rules read a killed
    // hook's text as for exit code 0, which allows with the text as a message.
    assert_eq!(
        half.output,
        Some(json!({"decision": "allow", "systemMessage": written}))
    );
    let decision = result
        .final_output
        .as_ref()
        .and_then(|output| output.get("decision"));
    assert_ne!(decision, Some(&json!("deny")), "{result:?}");

    daemon
        .finish_fault(
            "a hook that exits in the middle of a write",
            memory,
            MEMORY_LIMIT_MIB,
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_closes_stdout_and_keeps_running_times_out() {
    let _serial = memory_test_lock().await;
    let stdout =
        format!("{RECORD_PID}; printf '%s\\n' '{{\"decision\":\"deny\"}}'; exec 1>&-; sleep 30");
    let both = format!("{RECORD_PID}; exec 1>&- 2>&-; sleep 30");
    let daemon = daemon_with(
        "closer",
        vec![
            hook("close-stdout", &stdout, Some(1000)),
            hook("close-both", &both, Some(1000)),
        ],
    )
    .await;
    let memory = MemoryWatch::start();

    let (result, elapsed) = run_tool(&daemon, "closer").await;
    for name in ["close-stdout", "close-both"] {
        let hook = record(&result, name);
        assert_eq!(
            hook.outcome,
            Outcome::TimedOut { timeout_ms: 1000 },
            "{name}: {hook:?}"
        );
    }
    // A timed-out hook's output is discarded, so the deny printed before closing is not used.
    let decision = result
        .final_output
        .as_ref()
        .and_then(|output| output.get("decision"));
    assert_ne!(decision, Some(&json!("deny")), "{result:?}");
    // Well before the 30 s the hooks would sleep.
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");

    daemon
        .finish_fault(
            "hooks that close stdout and keep running",
            memory,
            MEMORY_LIMIT_MIB,
        )
        .await;
}

/// The daemon's default frame limit, both directions.
const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// The growth allowed while the daemon answers an event whose result is beyond the frame
/// limit: the captured outputs, the result written up to the limit, the cut result that is
/// sent, and this test's own reading of it (about 100 MiB measured).
const BIG_RESULT_MEMORY_LIMIT_MIB: u64 = 192;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_too_large_for_a_frame_still_gets_a_final_answer() {
    let _serial = memory_test_lock().await;
    // Each hook's 1 MiB of captured NUL bytes is escaped as `\u0000` (six bytes each) and
    // appears in its `stdout`, in its output's `systemMessage` and in the final output's:
    // four such hooks make a result of about 100 MB, beyond the 64 MiB frame limit.
    let hooks: Vec<Value> = (0..4)
        .map(|n| {
            let command = format!("{RECORD_PID}; head -c 2097152 /dev/zero");
            hook(&format!("nul-{n}"), &command, None)
        })
        .collect();
    let daemon = daemon_with("nul", hooks).await;
    let memory = MemoryWatch::start();

    // On the wire: the one answer to the event is a final answer within the frame limit.
    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    conn.send(
        &json!({"type": "event", "id": 1, "event": "BeforeTool", "cwd": daemon.cwd(),
                      "input": {"tool_name": "nul", "tool_input": {}}}),
    )
    .await;
    let body = conn.recv_body().await.expect("an answer");
    assert!(
        body.len() <= MAX_FRAME_BYTES,
        "the daemon sent a {} byte frame; its limit is {MAX_FRAME_BYTES}",
        body.len()
    );
    let answer: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(answer["id"], 1, "{}", &answer.to_string()[..200]);
    assert!(
        answer["type"] == "result" || answer["type"] == "error",
        "a final answer: {}",
        &answer.to_string()[..200]
    );
    drop(conn);

    // Through the client library: the request ends, one way or the other, instead of hanging.
    let client = daemon.client().await;
    let request = hookd_client::EventRequest::new("BeforeTool", daemon.cwd()).with_input(
        hookd_testkit::input(json!({"tool_name": "nul", "tool_input": {}})),
    );
    let _answer = hookd_testkit::within(
        "the client library's answer to an event with a huge result",
        Duration::from_secs(60),
        client.event(request),
    )
    .await;
    drop(client);

    daemon
        .finish_fault(
            "a result too large for a frame",
            memory,
            BIG_RESULT_MEMORY_LIMIT_MIB,
        )
        .await;
}
