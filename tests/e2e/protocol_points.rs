//! Protocol points a second client implementation relies on, against the real daemon:
//! `duplicate_id` for every kind of request while its id is in flight (answered in the read
//! loop or not, allocation-free path included); chunk text given as Gemini API part objects
//! (`{"text": ...}`) read and filtered like plain strings; `subscribe` for a directory no
//! event has named yet reporting the changes that follow; and a cancelled subscription's id
//! free again as soon as its `cancelled` arrives.

use std::time::Duration;

use hookd_client::StreamRequest;
use hookd_testkit::{Daemon, RawConn, command_hook, script_command, settings, within};
use serde_json::{Map, Value, json};

/// Generous bound for anything that should take a moment.
const WAIT: Duration = Duration::from_secs(30);

/// Sends `request` and returns the next frame, which must answer it.
async fn ask(raw: &mut RawConn, request: &Value) -> Value {
    raw.send(request).await;
    let answer = raw.recv().await.expect("an answer");
    assert_eq!(answer["id"], request["id"], "{request} -> {answer}");
    answer
}

#[tokio::test]
async fn every_request_kind_reusing_an_in_flight_id_gets_duplicate_id() {
    // BeforeTool hangs until cancelled; SessionEnd has no hook (the allocation-free path).
    let daemon = Daemon::start(settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("slow", "sleep 30")],
    )]))
    .await;
    let cwd = daemon.cwd();
    let mut raw = RawConn::connect_hello(&daemon.socket).await;
    // Loads the project, so that unhooked events take the allocation-free path.
    let listed = ask(&mut raw, &json!({"type": "list", "id": 100, "cwd": cwd})).await;
    assert_eq!(listed["type"], "list");

    for id in [json!(1), json!("one")] {
        raw.send(
            &json!({"type": "event", "id": id, "event": "BeforeTool", "cwd": cwd,
                          "input": {"tool_name": "run_shell_command"}}),
        )
        .await;
        let requests = [
            json!({"type": "ping", "id": id}),
            json!({"type": "status", "id": id}),
            json!({"type": "list", "id": id, "cwd": cwd}),
            json!({"type": "event", "id": id, "event": "SessionEnd", "cwd": cwd,
                   "input": {"reason": "exit"}}),
            json!({"type": "event", "id": id, "event": "BeforeTool", "cwd": cwd,
                   "input": {"tool_name": "run_shell_command"}}),
            json!({"type": "hooked_events", "id": id, "cwd": cwd}),
            json!({"type": "hooked_events", "id": id, "cwd": cwd, "subscribe": true}),
            json!({"type": "subscribe", "id": id}),
            json!({"type": "stream_open", "id": id, "event": "AfterModel", "cwd": cwd}),
            json!({"type": "cancel", "id": id, "target": 12345}),
            json!({"type": "trust_list", "id": id}),
        ];
        for request in requests {
            let answer = ask(&mut raw, &request).await;
            assert_eq!(answer["type"], "error", "{request} -> {answer}");
            assert_eq!(answer["code"], "duplicate_id", "{request} -> {answer}");
        }
        // The first request was left alone: cancelling it ends it with its own result.
        let cancelled = ask(&mut raw, &json!({"type": "cancel", "id": 2, "target": id})).await;
        assert_eq!(cancelled["type"], "cancelled", "{cancelled}");
        let result = raw.recv().await.expect("the event's result");
        assert_eq!(
            (&result["type"], &result["id"]),
            (&json!("result"), &id),
            "{result}"
        );
        assert_eq!(result["hooks"][0]["outcome"]["kind"], "cancelled");
        // Its final answer sent, the id is free again, on every path.
        let pong = ask(&mut raw, &json!({"type": "ping", "id": id})).await;
        assert_eq!(pong["type"], "pong");
        let empty = ask(
            &mut raw,
            &json!({"type": "event", "id": id, "event": "SessionEnd", "cwd": cwd}),
        )
        .await;
        assert_eq!(empty["type"], "result", "{empty}");
    }

    // A subscription and a stream hold their ids too; a stream's own chunks are not new
    // requests.
    let subscribed = ask(&mut raw, &json!({"type": "subscribe", "id": "sub"})).await;
    assert_eq!(subscribed["type"], "subscribed");
    let opened = ask(
        &mut raw,
        &json!({"type": "stream_open", "id": 7, "event": "AfterModel", "cwd": cwd}),
    )
    .await;
    assert_eq!(opened["type"], "stream_opened");
    for id in [json!("sub"), json!(7)] {
        for request in [
            json!({"type": "ping", "id": id}),
            json!({"type": "event", "id": id, "event": "SessionEnd", "cwd": cwd}),
        ] {
            let answer = ask(&mut raw, &request).await;
            assert_eq!(answer["code"], "duplicate_id", "{request} -> {answer}");
        }
    }
    let chunk = ask(
        &mut raw,
        &json!({"type": "chunk", "id": 7, "seq": 0, "llm_response": {"text": "x"}}),
    )
    .await;
    assert_eq!(chunk["type"], "chunk_result", "{chunk}");
    let closed = ask(&mut raw, &json!({"type": "stream_close", "id": 7})).await;
    assert_eq!(closed["type"], "stream_closed", "{closed}");
    let pong = ask(&mut raw, &json!({"type": "ping", "id": 7})).await;
    assert_eq!(pong["type"], "pong");
}

/// `message` as a frame: its length, then its JSON.
fn frame(message: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("json");
    let mut frame = u32::try_from(body.len())
        .expect("small")
        .to_be_bytes()
        .to_vec();
    frame.extend_from_slice(&body);
    frame
}

#[tokio::test]
async fn a_cancelled_subscription_frees_its_id_at_once() {
    let daemon = Daemon::start(json!({})).await;
    let cwd = daemon.cwd();
    let mut raw = RawConn::connect_hello(&daemon.socket).await;
    let subscriptions = [
        json!({"type": "subscribe", "id": 5, "cwd": cwd}),
        json!({"type": "hooked_events", "id": 5, "cwd": cwd, "subscribe": true}),
    ];
    for (round, subscription) in subscriptions.iter().enumerate() {
        let first = ask(&mut raw, subscription).await;
        assert_ne!(first["type"], "error", "{first}");
        // The cancel and a ping reusing the id in one write: the daemon reads the ping
        // right after answering the cancel, before the subscription's task has ended.
        let cancel = json!({"type": "cancel", "id": 100 + round, "target": 5});
        let ping = json!({"type": "ping", "id": 5});
        raw.send_bytes(&[frame(&cancel), frame(&ping)].concat())
            .await;
        let cancelled = raw.recv().await.expect("cancelled");
        assert_eq!(cancelled["type"], "cancelled", "{cancelled}");
        let pong = raw.recv().await.expect("pong");
        assert_eq!(pong, json!({"type": "pong", "id": 5}));
    }
    // The id works for a new subscription, which a cancel ends again.
    let again = ask(&mut raw, &subscriptions[0]).await;
    assert_eq!(again["type"], "subscribed", "{again}");
    let cancelled = ask(&mut raw, &json!({"type": "cancel", "id": 9, "target": 5})).await;
    assert_eq!(cancelled["type"], "cancelled", "{cancelled}");
    let unknown = ask(&mut raw, &json!({"type": "cancel", "id": 10, "target": 5})).await;
    assert_eq!(unknown["code"], "unknown_id", "{unknown}");
}

/// A Gemini API chunk: its parts are part objects, with a function call among them.
fn api_chunk(texts: &[&str]) -> Map<String, Value> {
    let mut parts: Vec<Value> = texts.iter().map(|text| json!({"text": text})).collect();
    parts.push(json!({"functionCall": {"name": "noop", "args": {}}}));
    let value = json!({"candidates": [{"content": {"role": "model", "parts": parts},
                                        "index": 0}]});
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn chunk_text_in_part_objects_is_read_and_filtered_like_strings() {
    let redact = json!({"type": "builtin", "builtin": "redact", "name": "redact-tickets",
                        "default_patterns": false, "holdback": 16,
                        "patterns": [{"name": "ticket", "regex": "TCK-[0-9]{6}"}]});
    let daemon = Daemon::start(settings(&[(
        "AfterModel",
        None,
        vec![redact, command_hook("log", &script_command("log.sh"))],
    )]))
    .await;
    let log = daemon.out_dir("out").join("stdin.log");
    daemon.script(
        "log.sh",
        &format!("cat >> '{}'\necho >> '{}'", log.display(), log.display()),
    );
    let client = daemon.client().await;
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()))
        .await
        .expect("open");
    let chunks: [&[&str]; 3] = [
        &["Your ticket ", "is TCK-12"],
        &["3456; the one before", " was TCK-654321"],
        &[" and that is all."],
    ];
    for texts in chunks {
        stream.send_chunk(api_chunk(texts)).await.expect("send");
    }
    let end = within("close", WAIT, stream.close()).await.expect("close");
    let mut emitted = String::new();
    for (result, texts) in end.results.iter().zip(chunks) {
        emitted.push_str(result.emitted(&texts.concat()));
    }
    emitted.push_str(&end.flush);
    assert_eq!(
        emitted,
        "Your ticket is [REDACTED:ticket]; the one before was [REDACTED:ticket] and that is all."
    );
    // The command hook saw the filtered text, in the chunk's own form, its function call kept.
    let seen = std::fs::read_to_string(&log).expect("log");
    for part in ["TCK-12", "3456", "TCK-654321"] {
        assert!(!seen.contains(part), "the hook saw {part:?}: {seen}");
    }
    let first: Value = serde_json::from_str(seen.lines().next().expect("a line")).expect("json");
    let content = first["content"].as_str().expect("content");
    assert!("Your ticket is ".starts_with(content), "{first}");
    assert_eq!(
        first["llm_response"]["candidates"][0]["content"]["parts"],
        json!([{"text": content}, {"functionCall": {"name": "noop", "args": {}}}])
    );

    // A plain AfterModel event reads part objects too.
    let result = hookd_testkit::fire(
        &client,
        &daemon.cwd(),
        "AfterModel",
        json!({"llm_response": api_chunk(&["ticket TCK-123456 done"])}),
    )
    .await;
    let output = result.final_output.expect("the filter's output");
    let parts = &output["hookSpecificOutput"]["llm_response"]["candidates"][0]["content"]["parts"];
    assert_eq!(
        parts[0],
        json!({"text": "ticket [REDACTED:ticket] done"}),
        "{output}"
    );
}

#[tokio::test]
async fn subscribing_to_a_directory_not_loaded_yet_reports_its_changes() {
    let daemon = Daemon::start(json!({})).await;
    // One project with a `.gemini/` directory, one without any yet.
    let with_dir = daemon.dir.path().join("fresh");
    std::fs::create_dir_all(with_dir.join(".gemini")).expect("mkdir");
    let without_dir = daemon.dir.path().join("bare");
    std::fs::create_dir_all(&without_dir).expect("mkdir");
    let mut raw = RawConn::connect_hello(&daemon.socket).await;
    let hooked = settings(&[("BeforeTool", None, vec![command_hook("g", "true")])]);
    for (id, dir) in [(1, &with_dir), (2, &without_dir)] {
        let cwd = dir.display().to_string();
        let ack = ask(
            &mut raw,
            &json!({"type": "subscribe", "id": id, "cwd": cwd}),
        )
        .await;
        assert_eq!(ack, json!({"type": "subscribed", "id": id, "cwd": cwd}));
        hookd_testkit::write(
            &dir.join(".gemini/settings.json"),
            &serde_json::to_string(&hooked).expect("json"),
        );
        // Frames of the project's first rebuilds may report zero hooks if they raced the
        // write; the one with the hook must come.
        within("a registry_changed frame with the new hook", WAIT, async {
            loop {
                let frame = raw.recv().await.expect("a frame");
                assert_eq!(frame["type"], "registry_changed", "{frame}");
                assert_eq!((&frame["id"], &frame["cwd"]), (&json!(id), &json!(cwd)));
                if frame["hooks"] == 1 {
                    break;
                }
            }
        })
        .await;
    }
}
