//! Fault injection, client side: clients that send a frame and vanish, a thousand connections
//! at once, a client that never reads the results it asked to have streamed, a 4 GiB length
//! prefix, and ten thousand requests on one connection without waiting.
//!
//! Each test runs its own daemon and ends with the same checks as the hook-side faults: the
//! daemon still answers a new client correctly, no hook process is alive and no zombie waits
//! for the daemon, and the test process's resident memory (the daemon runs inside it) grew by
//! less than a bound that a daemon buffering without limit would blow.

use std::collections::HashMap;
use std::time::Duration;

use hookd_testkit::{
    Daemon, DaemonOptions, ECHO_N_SCRIPT, MemoryWatch, PROBE_TOOL, RECORD_PID, RawConn,
    command_hook, fire, memory_test_lock, open_file_count, raise_open_files_limit, wait_until,
    within,
};
use serde_json::{Value, json};

/// Where hooks write the pids of the processes they start, next to their own.
const PIDS: &str = "${GEMINI_PROJECT_DIR}/.pids";

/// The growth of resident memory every case must stay under, in MiB.
const MEMORY_LIMIT_MIB: u64 = 200;

/// The tool whose hook echoes the `n` of its tool input back as the deny reason `r-<n>`.
const ECHO_TOOL: &str = "echo";

/// The tool whose hook starts a child and waits for it for five minutes.
const SLOW_TOOL: &str = "slow";

/// A tool no hook matches.
const NO_HOOK_TOOL: &str = "none";

/// A daemon with the echo hook, the slow hook and `extra` definitions.
async fn daemon_with(extra: Vec<(&str, Option<&str>, Vec<Value>)>) -> Daemon {
    let echo = format!("{RECORD_PID}\n{ECHO_N_SCRIPT}");
    let slow = format!("{RECORD_PID}; sleep 300 & echo $! > \"{PIDS}/$$.child\"; wait");
    let mut definitions = vec![
        (
            "BeforeTool",
            Some("^echo$"),
            vec![command_hook("echo-n", &echo)],
        ),
        (
            "BeforeTool",
            Some("^slow$"),
            vec![command_hook("slow", &slow)],
        ),
    ];
    definitions.extend(extra);
    Daemon::start_for_faults(definitions, DaemonOptions::default()).await
}

/// An `event` request for `tool` whose tool input carries `n`.
fn event(id: u64, cwd: &str, tool: &str, n: &str) -> Value {
    json!({"type": "event", "id": id, "event": "BeforeTool", "cwd": cwd,
           "input": {"tool_name": tool, "tool_input": {"n": n}}})
}

/// A frame: the 4-byte big-endian length, then the body.
fn frame(message: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("encode");
    let mut frame = u32::try_from(body.len())
        .expect("fits")
        .to_be_bytes()
        .to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// Asserts that `answer` is the right final answer to request `id` of `tool` (`None` for a
/// ping).
fn check_answer(answer: &Value, id: u64, tool: Option<&str>, n: &str) {
    assert_eq!(answer["id"], id, "{answer}");
    match tool {
        None => assert_eq!(answer, &json!({"type": "pong", "id": id})),
        Some(ECHO_TOOL) => {
            assert_eq!(answer["type"], "result", "{answer}");
            assert_eq!(
                answer["final_output"]["reason"],
                format!("r-{n}"),
                "{answer}"
            );
        }
        Some(_) => {
            assert_eq!(answer["type"], "result", "{answer}");
            assert_eq!(answer["hooks"], json!([]), "{answer}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_send_a_frame_and_vanish_leave_nothing_behind() {
    let _serial = memory_test_lock().await;
    let daemon = daemon_with(Vec::new()).await;
    let cwd = daemon.cwd();
    let memory = MemoryWatch::start();

    // Twenty clients start a hook that runs for five minutes, then vanish while it runs.
    let mut running = Vec::new();
    for _ in 0..20 {
        let mut conn = RawConn::connect_hello(&daemon.socket).await;
        conn.send(&event(1, &cwd, SLOW_TOOL, "")).await;
        running.push(conn);
    }
    wait_until("the 20 slow hooks started", Duration::from_secs(30), || {
        daemon.recorded_in(".child").len() == 20
    })
    .await;
    drop(running);

    // Twenty send an event whose hook answers at once, and vanish before the answer.
    for n in 0..20 {
        let mut conn = RawConn::connect_hello(&daemon.socket).await;
        conn.send(&event(1, &cwd, ECHO_TOOL, &n.to_string())).await;
    }
    // Twenty send their hello and vanish before the daemon's.
    for _ in 0..20 {
        let mut conn = RawConn::connect(&daemon.socket).await;
        conn.send(&json!({"type": "hello", "protocol": 1, "client": "vanishing/1"}))
            .await;
    }
    // Twenty send a length prefix and half the body it announces, and vanish.
    for _ in 0..20 {
        let mut conn = RawConn::connect_hello(&daemon.socket).await;
        conn.send_bytes(&100u32.to_be_bytes()).await;
        conn.send_bytes(br#"{"type":"event","id":1,"#).await;
    }

    daemon
        .finish_fault(
            "clients that send a frame and vanish",
            memory,
            MEMORY_LIMIT_MIB,
        )
        .await;
}

/// The connections the test opens when the open-files limit allows.
const CONNECTIONS: usize = 1000;

/// Descriptors kept free for everything else the test process opens (hook pipes, files).
const FD_MARGIN: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_are_held_and_all_served() {
    let _serial = memory_test_lock().await;
    let limit = usize::try_from(raise_open_files_limit()).unwrap_or(usize::MAX);
    // Each connection costs this process two descriptors: the client's end and the daemon's.
    let room = limit.saturating_sub(open_file_count() + FD_MARGIN) / 2;
    let count = CONNECTIONS.min(room);
    if count < CONNECTIONS {
        eprintln!(
            "the open-files hard limit is {limit}: opening {count} connections, not {CONNECTIONS}"
        );
    }
    assert!(count >= 100, "the open-files limit {limit} is too low");
    let daemon = daemon_with(Vec::new()).await;
    let cwd = daemon.cwd();
    let memory = MemoryWatch::start();

    let mut conns = Vec::with_capacity(count);
    for _ in 0..count {
        conns.push(RawConn::connect_hello(&daemon.socket).await);
    }
    // Every connection has an event and a ping in flight at the same time; one in fifty runs
    // a hook.
    let tool = |index: usize| {
        if index % 50 == 0 {
            ECHO_TOOL
        } else {
            NO_HOOK_TOOL
        }
    };
    for (index, conn) in conns.iter_mut().enumerate() {
        conn.send(&event(1, &cwd, tool(index), &index.to_string()))
            .await;
        conn.send(&json!({"type": "ping", "id": 2})).await;
    }
    for (index, conn) in conns.iter_mut().enumerate() {
        let mut answers = HashMap::new();
        for _ in 0..2 {
            let answer = conn.recv().await.expect("an answer");
            let id = answer["id"].as_u64().expect("a numeric id");
            assert!(answers.insert(id, answer).is_none(), "id {id} twice");
        }
        check_answer(&answers[&1], 1, Some(tool(index)), &index.to_string());
        check_answer(&answers[&2], 2, None, "");
    }

    let client = daemon.client().await;
    let status = client.status().await.expect("status");
    assert!(
        status.connections > count as u64,
        "{count} held: {status:?}"
    );
    daemon.assert_serves("opening 1,000 connections").await;

    drop(conns);
    within(
        "the daemon to see the connections closed",
        Duration::from_secs(30),
        async {
            while client.status().await.expect("status").connections > 1 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
    drop(client);

    daemon
        .finish_fault("1,000 connections", memory, MEMORY_LIMIT_MIB)
        .await;
}

/// How many streamed events the slow consumer sends.
const SLOW_EVENTS: u64 = 400;

/// How much each of its hooks prints (to stderr, under the 1 MiB cap). Unread, the 400
/// events' records would add up to about 700 MB.
const BIG_OUTPUT_BYTES: usize = 900_000;

/// The other client's answers needed before the measurement may end.
const MIN_PROBES: usize = 100;

/// The other client's answers in a row, with no new slow-consumer hook starting, after which
/// the daemon is taken to have stopped taking the slow consumer's work.
const STALLED_AFTER: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_streamed_results_does_not_grow_the_daemon() {
    let _serial = memory_test_lock().await;
    let big = format!(
        "echo $$ > \"{PIDS}/big.$$\"; cat \"${{GEMINI_PROJECT_DIR}}/big.txt\" >&2; \
         printf '%s\\n' '{{\"decision\":\"allow\"}}'"
    );
    let daemon = daemon_with(vec![(
        "BeforeTool",
        Some("^big$"),
        vec![command_hook("big", &big)],
    )])
    .await;
    std::fs::write(daemon.project.join("big.txt"), vec![b'x'; BIG_OUTPUT_BYTES]).expect("write");
    let cwd = daemon.cwd();
    let big_hooks_started = || {
        std::fs::read_dir(daemon.pids_dir())
            .expect("pids dir")
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("big."))
            .count()
    };
    let memory = MemoryWatch::start();

    // The slow consumer asks for every hook's record as it finishes and never reads a byte.
    let slow = RawConn::connect_hello(&daemon.socket).await;
    let (slow_reader, mut slow_writer) = slow.into_split();
    let writer = tokio::spawn({
        let cwd = cwd.clone();
        async move {
            for id in 1..=SLOW_EVENTS {
                let mut request = event(id, &cwd, "big", "");
                request["stream_hooks"] = json!(true);
                // A daemon that stops reading this connection may leave this write pending
                // for good; the task is aborted at the end.
                if slow_writer.send(&request).await.is_err() {
                    break;
                }
            }
            // Returned, not dropped: dropping the write half would signal end-of-stream.
            slow_writer
        }
    });
    wait_until(
        "the slow consumer's hooks run",
        Duration::from_secs(30),
        || big_hooks_started() >= 1,
    )
    .await;

    // Meanwhile another client gets correct answers. The measurement lasts until it has had
    // enough of them and the slow consumer's hooks have all run or stopped starting.
    let good = daemon.client().await;
    let (probes, started) = within(
        "the other client's requests",
        Duration::from_secs(300),
        async {
            let mut probes = 0;
            let mut last_count = big_hooks_started();
            let mut last_change = 0;
            loop {
                let result = fire(
                    &good,
                    &cwd,
                    "BeforeTool",
                    json!({"tool_name": PROBE_TOOL, "tool_input": {}}),
                )
                .await;
                assert_eq!(
                    result.final_output.as_ref().map(|output| &output["reason"]),
                    Some(&json!("probe-ok")),
                    "{result:?}"
                );
                probes += 1;
                let count = big_hooks_started();
                if count != last_count {
                    last_count = count;
                    last_change = probes;
                }
                let all_ran = count as u64 >= SLOW_EVENTS;
                let stalled = probes - last_change >= STALLED_AFTER;
                // Past the bound the test has failed; stopping here keeps the bloat from
                // hiding growth in the memory checks of the tests that come after.
                let over = memory.peak_growth_so_far_mib() >= MEMORY_LIMIT_MIB as f64;
                if over || (probes >= MIN_PROBES && (all_ran || stalled)) {
                    break (probes, count);
                }
            }
        },
    )
    .await;
    eprintln!(
        "slow consumer: the hooks of {started} of its {SLOW_EVENTS} events ran while \
         another client got {probes} correct answers"
    );

    // The slow consumer goes away; its runs are cancelled.
    writer.abort();
    let _ = writer.await;
    drop(slow_reader);
    drop(good);

    daemon
        .finish_fault(
            "a client that never reads its streamed results",
            memory,
            MEMORY_LIMIT_MIB,
        )
        .await;
}

/// The largest length a 4-byte prefix can announce: 4 GiB − 1 bytes.
const FOUR_GIB: u32 = u32::MAX;

/// Asserts that `answer` is a `frame_too_large` error with a `null` id.
fn assert_frame_too_large(answer: Option<Value>) {
    let answer = answer.expect("an error, not a closed connection");
    assert_eq!(answer["type"], "error", "{answer}");
    assert_eq!(answer["code"], "frame_too_large", "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_four_gib_length_prefix_is_refused_and_its_body_skipped() {
    let _serial = memory_test_lock().await;
    let daemon = daemon_with(Vec::new()).await;
    let memory = MemoryWatch::start();

    // As the first frame: refused under the small hello limit, and the connection closed.
    let mut early = RawConn::connect(&daemon.socket).await;
    early.send_bytes(&FOUR_GIB.to_be_bytes()).await;
    assert_frame_too_large(early.recv().await);
    assert_eq!(early.recv().await, None, "closed after a refused hello");

    // After the handshake, then gone without a byte of the body.
    let mut gone = RawConn::connect_hello(&daemon.socket).await;
    gone.send_bytes(&FOUR_GIB.to_be_bytes()).await;
    assert_frame_too_large(gone.recv().await);
    drop(gone);

    // After the handshake, with the whole body: refused at once, skipped as it arrives, and
    // the next frame is read normally.
    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    conn.send_bytes(&FOUR_GIB.to_be_bytes()).await;
    assert_frame_too_large(conn.recv().await);
    let chunk = vec![0u8; 1024 * 1024];
    let mut left = u64::from(FOUR_GIB);
    let started = std::time::Instant::now();
    within(
        "writing 4 GiB to the daemon",
        Duration::from_secs(300),
        async {
            while left > 0 {
                let n = usize::try_from(left.min(chunk.len() as u64)).expect("fits");
                conn.send_bytes(&chunk[..n]).await;
                left -= n as u64;
            }
        },
    )
    .await;
    conn.send(&json!({"type": "ping", "id": 1})).await;
    assert_eq!(conn.recv().await, Some(json!({"type": "pong", "id": 1})));
    eprintln!(
        "a 4 GiB body was skipped and the next frame answered in {:?}",
        started.elapsed()
    );
    drop(conn);

    daemon
        .finish_fault("a 4 GiB length prefix", memory, MEMORY_LIMIT_MIB)
        .await;
}

/// How many requests go out on one connection before any answer is read.
const PIPELINED: u64 = 10_000;

/// Request `id`'s tool: one in ten runs the echo hook, four match no hook, and the other
/// five are pings (`None`).
fn pipelined_tool(id: u64) -> Option<&'static str> {
    match id % 10 {
        0 => Some(ECHO_TOOL),
        1..=4 => Some(NO_HOOK_TOOL),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_requests_on_one_connection_are_each_answered_once() {
    let _serial = memory_test_lock().await;
    let daemon = daemon_with(Vec::new()).await;
    let cwd = daemon.cwd();
    let memory = MemoryWatch::start();

    let conn = RawConn::connect_hello(&daemon.socket).await;
    let (mut reader, mut writer) = conn.into_split();
    let mut frames = Vec::new();
    for id in 1..=PIPELINED {
        let message = match pipelined_tool(id) {
            Some(tool) => event(id, &cwd, tool, &id.to_string()),
            None => json!({"type": "ping", "id": id}),
        };
        frames.extend(frame(&message));
    }
    // All 10,000 go out in one write while this task reads: the daemon may stop reading until
    // its answers are read, so writing first and reading afterwards could deadlock.
    let sender = tokio::spawn(async move {
        writer
            .send_bytes(&frames)
            .await
            .expect("write the requests");
        writer
    });
    let mut answers: HashMap<u64, Value> = HashMap::new();
    within("10,000 answers", Duration::from_secs(300), async {
        while (answers.len() as u64) < PIPELINED {
            let answer = reader.recv().await.expect("the connection stays open");
            let id = answer["id"]
                .as_u64()
                .unwrap_or_else(|| panic!("an answer with a request's id: {answer}"));
            assert!((1..=PIPELINED).contains(&id), "unknown id: {answer}");
            if let Some(first) = answers.insert(id, answer) {
                panic!("id {id} answered twice; first {first}");
            }
        }
    })
    .await;
    for (id, answer) in &answers {
        check_answer(answer, *id, pipelined_tool(*id), &id.to_string());
    }
    // Nothing more was queued: the next frame is the answer to a new ping.
    let mut writer = sender.await.expect("sender");
    writer
        .send(&json!({"type": "ping", "id": PIPELINED + 1}))
        .await
        .expect("write");
    assert_eq!(
        reader.recv().await,
        Some(json!({"type": "pong", "id": PIPELINED + 1}))
    );
    drop((reader, writer));

    daemon
        .finish_fault(
            "10,000 requests on one connection",
            memory,
            MEMORY_LIMIT_MIB,
        )
        .await;
}
