//! A misbehaving client gets typed errors and never disturbs the others: garbage JSON,
//! oversized frames, half frames, unknown events, missing fields and skipped handshakes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hookd_client::{ClientError, EventRequest};
use hookd_protocol::ErrorCode;
use hookd_testkit::{
    Daemon, DaemonOptions, ECHO_N_SCRIPT, RawConn, command_hook, fire, script_command, settings,
    within,
};
use serde_json::{Value, json};

/// The daemon's frame limit in these tests.
const MAX_FRAME: usize = 64 * 1024;

/// A daemon with the echo hook on every BeforeTool and a small frame limit.
async fn echo_daemon() -> Daemon {
    let settings = settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("echo-n", &script_command("echo-n.sh"))],
    )]);
    let options = DaemonOptions {
        configure: Box::new(|config| config.max_frame_bytes = MAX_FRAME),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(settings, options).await;
    daemon.script("echo-n.sh", ECHO_N_SCRIPT);
    daemon
}

/// Asserts that `message` is an `error` frame with this id and code.
fn assert_error(message: Option<Value>, id: Value, code: &str) {
    let message = message.unwrap_or_else(|| panic!("connection closed instead of `{code}`"));
    assert_eq!(message["type"], "error", "expected `{code}`, got {message}");
    assert_eq!(message["code"], code, "{message}");
    assert_eq!(message["id"], id, "{message}");
    assert!(
        message["message"]
            .as_str()
            .is_some_and(|text| !text.is_empty()),
        "an error names its problem: {message}"
    );
}

/// Asserts that `message` is the `pong` for `id`.
fn assert_pong(message: Option<Value>, id: u64) {
    let message = message.expect("connection closed instead of pong");
    assert_eq!(message, json!({"type": "pong", "id": id}));
}

/// A 4-byte big-endian length prefix.
fn prefix(len: usize) -> [u8; 4] {
    u32::try_from(len).expect("fits").to_be_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_clients_get_typed_errors_and_others_are_unaffected() {
    let daemon = echo_daemon().await;
    let cwd = daemon.cwd();

    // A well-behaved client keeps firing events the whole time, checking every answer.
    let good = daemon.client().await;
    let stop = Arc::new(AtomicBool::new(false));
    let worker = tokio::spawn({
        let stop = Arc::clone(&stop);
        let cwd = cwd.clone();
        async move {
            let mut answered = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let tag = format!("good-{answered}");
                let result = fire(
                    &good,
                    &cwd,
                    "BeforeTool",
                    json!({"tool_name": "t", "tool_input": {"n": tag}}),
                )
                .await;
                let reason = result.final_output.as_ref().map(|output| &output["reason"]);
                assert_eq!(reason, Some(&json!(format!("r-{tag}"))), "{result:?}");
                answered += 1;
            }
            answered
        }
    });

    // The garbage client.
    let mut garbage = RawConn::connect_hello(&daemon.socket).await;
    garbage.send_frame(b"{not json").await;
    assert_error(garbage.recv().await, Value::Null, "bad_json");
    garbage.send_frame(&[0xff, 0xfe, 0x7b]).await;
    assert_error(garbage.recv().await, Value::Null, "bad_json");

    // Oversized: answered as soon as the prefix is read, then the body is skipped.
    let oversized = 100 * 1024;
    garbage.send_bytes(&prefix(oversized)).await;
    assert_error(garbage.recv().await, Value::Null, "frame_too_large");
    garbage.send_bytes(&vec![b'x'; oversized]).await;
    garbage.send(&json!({"type": "ping", "id": 1})).await;
    assert_pong(garbage.recv().await, 1);

    garbage
        .send(&json!({"type": "event", "id": 2, "event": "Nope", "cwd": cwd}))
        .await;
    assert_error(garbage.recv().await, json!(2), "unknown_event");
    garbage
        .send(&json!({"type": "event", "id": 3, "event": "BeforeTool"}))
        .await;
    assert_error(garbage.recv().await, json!(3), "missing_field");
    garbage.send(&json!({"type": "bogus", "id": 4})).await;
    assert_error(garbage.recv().await, json!(4), "unknown_type");
    garbage
        .send(&json!({"type": "event", "id": 5, "event": "BeforeTool", "cwd": "relative/dir"}))
        .await;
    assert_error(garbage.recv().await, json!(5), "bad_request");

    // After all that, the same connection still works, events included.
    garbage.send(&json!({"type": "ping", "id": 6})).await;
    assert_pong(garbage.recv().await, 6);
    garbage
        .send(
            &json!({"type": "event", "id": 7, "event": "BeforeTool", "cwd": cwd,
                      "input": {"tool_name": "t", "tool_input": {"n": "raw"}}}),
        )
        .await;
    let result = garbage.recv().await.expect("a result");
    assert_eq!(result["type"], "result", "{result}");
    assert_eq!(result["id"], 7, "{result}");
    assert_eq!(result["final_output"]["reason"], "r-raw", "{result}");

    // Half a frame, then gone.
    let mut half = RawConn::connect_hello(&daemon.socket).await;
    half.send_bytes(&prefix(100)).await;
    half.send_bytes(br#"{"type":"p"#).await;
    drop(half);

    // A client that skips the handshake is told so and closed.
    let mut rude = RawConn::connect(&daemon.socket).await;
    rude.send(&json!({"type": "ping", "id": 1})).await;
    let answer = rude.recv().await.expect("an error before closing");
    assert_eq!(answer["code"], "handshake_required", "{answer}");
    assert_eq!(
        rude.recv().await,
        None,
        "the connection is closed after handshake_required"
    );

    stop.store(true, Ordering::Relaxed);
    let answered = within("the good client's loop", Duration::from_secs(60), worker)
        .await
        .expect("the good client saw only correct answers");
    assert!(answered >= 1, "the good client got no answer at all");

    // And a new client is served normally.
    let fresh = daemon.client().await;
    let result = fire(
        &fresh,
        &cwd,
        "BeforeTool",
        json!({"tool_name": "t", "tool_input": {"n": "fresh"}}),
    )
    .await;
    assert_eq!(
        result.final_output.as_ref().map(|output| &output["reason"]),
        Some(&json!("r-fresh"))
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_frame_that_is_not_json_gets_bad_json_and_is_closed() {
    // docs/protocol.md §4: "a first frame that is not JSON gets `bad_json` and then the
    // connection is closed".
    let daemon = echo_daemon().await;
    let mut conn = RawConn::connect(&daemon.socket).await;
    conn.send_frame(b"hello?").await;
    let answer = conn.recv().await.expect("an error before closing");
    assert_eq!(answer["type"], "error", "{answer}");
    assert_eq!(answer["code"], "bad_json", "{answer}");
    assert_eq!(conn.recv().await, None, "the connection is closed");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_library_reports_request_errors_as_server_errors() {
    let daemon = echo_daemon().await;
    let client = daemon.client().await;
    let error = client
        .event(EventRequest::new("NoSuchEvent", daemon.cwd()))
        .await
        .expect_err("an unknown event is refused");
    assert!(
        matches!(
            error,
            ClientError::Server {
                code: ErrorCode::UnknownEvent,
                ..
            }
        ),
        "{error:?}"
    );
    // The connection survives the error.
    client.ping().await.expect("ping after an error");
    daemon.stop().await;
}
