//! Limits through the real daemon, each set low so that it is reached (`docs/limits.md` lists
//! them all): the per-connection in-flight cap pauses reading rather than refusing, clients
//! beyond the connection limit wait and are served when a slot frees, the first frame and
//! every later frame have their own size limits, and a connection that never says hello is
//! closed.

use std::collections::BTreeSet;
use std::time::Duration;

use hookd_server::ServerConfig;
use hookd_testkit::{Daemon, DaemonOptions, RawConn, command_hook, settings, within};
use serde_json::{Value, json};

/// Starts a daemon with `project_settings` and its configuration adjusted by `configure`.
async fn daemon_with(
    project_settings: Value,
    configure: impl FnOnce(&mut ServerConfig) + Send + 'static,
) -> Daemon {
    let options = DaemonOptions {
        configure: Box::new(configure),
        ..DaemonOptions::default()
    };
    Daemon::start_with(project_settings, options).await
}

/// The in-flight cap of the pipelining test.
const CAP: usize = 4;

/// How many requests the pipelining test sends before reading any answer.
const PIPELINED: u64 = 50;

/// A hook that counts how many of its kind run at once. Each run marks itself in `.running`,
/// waits (at most 5 s) until a cap's worth of runs are marked, so that a daemon letting more
/// in would show it, then appends the count it sees to `.counts` and unmarks itself.
fn counting_hook() -> String {
    format!(
        r#"cat >/dev/null
dir="$GEMINI_PROJECT_DIR/.running"; mkdir -p "$dir"; : > "$dir/$$"
for _ in $(seq 100); do [ "$(ls "$dir" | wc -l)" -ge {CAP} ] && break; sleep 0.05; done
ls "$dir" | wc -l >> "$GEMINI_PROJECT_DIR/.counts"
rm -f "$dir/$$""#
    )
}

#[tokio::test]
async fn pipelined_requests_beyond_the_inflight_cap_are_all_answered_with_at_most_the_cap_running()
{
    let project = settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("count", &counting_hook())],
    )]);
    let daemon = daemon_with(project, |config| {
        config.max_inflight_per_connection = CAP;
        config.max_hooks = 64;
    })
    .await;
    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    for id in 1..=PIPELINED {
        conn.send(
            &json!({"type": "event", "id": id, "event": "BeforeTool", "cwd": daemon.cwd(),
                          "input": {"tool_name": "run_shell_command"}}),
        )
        .await;
    }
    let answered = within("all pipelined answers", Duration::from_secs(120), async {
        let mut answered = BTreeSet::new();
        while answered.len() < PIPELINED as usize {
            let answer = conn.recv().await.expect("an answer");
            assert_eq!(answer["type"], "result", "{answer}");
            let id = answer["id"].as_u64().expect("numeric id");
            assert!(answered.insert(id), "request {id} answered twice");
        }
        answered
    })
    .await;
    assert_eq!(answered, (1..=PIPELINED).collect::<BTreeSet<u64>>());

    let counts: Vec<usize> = std::fs::read_to_string(daemon.project.join(".counts"))
        .expect("counts")
        .lines()
        .map(|line| line.trim().parse().expect("a count"))
        .collect();
    assert_eq!(counts.len(), PIPELINED as usize);
    // The first runs wait for each other, so the cap is reached; it is never passed.
    assert_eq!(counts.iter().max(), Some(&CAP), "{counts:?}");

    // The connection is still in service once its runs are done.
    conn.send(&json!({"type": "ping", "id": "after"})).await;
    assert_eq!(conn.recv().await.expect("pong")["type"], "pong");
    daemon.stop().await;
}

#[tokio::test]
async fn clients_beyond_the_connection_limit_wait_and_are_served_when_one_closes() {
    let daemon = daemon_with(json!({}), |config| config.max_connections = 2).await;
    let mut first = RawConn::connect_hello(&daemon.socket).await;
    let second = RawConn::connect_hello(&daemon.socket).await;

    // The third client's connect succeeds (the kernel queues it); its hello waits.
    let mut third = RawConn::connect(&daemon.socket).await;
    third
        .send(&json!({"type": "hello", "protocol": 1, "client": "third/1"}))
        .await;

    first.send(&json!({"type": "status", "id": 1})).await;
    let status = first.recv().await.expect("status");
    assert_eq!(
        (&status["connections"], &status["max_connections"]),
        (&json!(2), &json!(2)),
        "{status}"
    );

    drop(first);
    let hello = third.recv().await.expect("the waiting client is answered");
    assert_eq!(hello["type"], "hello", "{hello}");
    third.send(&json!({"type": "status", "id": 2})).await;
    let status = third.recv().await.expect("status");
    assert_eq!(status["connections"], 2, "{status}");
    drop(second);
    daemon.stop().await;
}

#[tokio::test]
async fn a_first_frame_over_the_hello_limit_is_refused_and_closed_but_later_frames_may_be_larger() {
    let daemon = daemon_with(json!({}), |config| config.max_hello_frame_bytes = 1024).await;
    let big_env: serde_json::Map<String, Value> = (0..100)
        .map(|n| (format!("VAR_{n}"), Value::from("x".repeat(20))))
        .collect();

    let mut refused = RawConn::connect(&daemon.socket).await;
    refused
        .send(&json!({"type": "hello", "protocol": 1, "client": "big/1", "env": big_env}))
        .await;
    let answer = refused.recv().await.expect("an error");
    assert_eq!(
        (&answer["type"], &answer["code"]),
        (&json!("error"), &json!("frame_too_large")),
        "{answer}"
    );
    assert!(
        answer["message"]
            .as_str()
            .is_some_and(|m| m.contains("1024")),
        "{answer}"
    );
    assert_eq!(refused.recv().await, None, "closed after the error");

    // After the handshake the full frame limit applies.
    let mut accepted = RawConn::connect_hello(&daemon.socket).await;
    accepted
        .send(&json!({"type": "ping", "id": 1, "padding": big_env}))
        .await;
    assert_eq!(accepted.recv().await.expect("pong")["type"], "pong");
    daemon.stop().await;
}

#[tokio::test]
async fn the_frame_limit_is_announced_and_enforced_and_the_connection_goes_on() {
    let daemon = daemon_with(json!({}), |config| config.max_frame_bytes = 4096).await;
    let mut conn = RawConn::connect(&daemon.socket).await;
    conn.send(&json!({"type": "hello", "protocol": 1, "client": "t/1"}))
        .await;
    let hello = conn.recv().await.expect("hello");
    assert_eq!(hello["max_frame_bytes"], 4096, "{hello}");

    conn.send(&json!({"type": "ping", "id": 1, "padding": "x".repeat(5000)}))
        .await;
    let answer = conn.recv().await.expect("an error");
    assert_eq!(
        (&answer["code"], &answer["id"]),
        (&json!("frame_too_large"), &Value::Null),
        "{answer}"
    );
    conn.send(&json!({"type": "ping", "id": 2})).await;
    let pong = conn.recv().await.expect("pong");
    assert_eq!((&pong["type"], &pong["id"]), (&json!("pong"), &json!(2)));
    daemon.stop().await;
}

#[tokio::test]
async fn a_connection_that_sends_no_hello_is_closed_after_the_handshake_timeout() {
    let daemon = daemon_with(json!({}), |config| {
        config.handshake_timeout = Duration::from_secs(1);
    })
    .await;
    let mut silent = RawConn::connect(&daemon.socket).await;
    // `recv` fails the test if nothing happens within 20 s; the daemon closes in about 1 s.
    assert_eq!(silent.recv().await, None);
    // Others are served as usual.
    daemon.client().await.ping().await.expect("ping");
    daemon.stop().await;
}
