//! AfterModel stream sessions and `hooked_events`, against the real daemon with real hook
//! scripts: chunks come back one per chunk and in order, replaced when a hook replaces them;
//! hooks see `content` and `full_content`; a stream without hooks answers at once; a client
//! that goes away mid-stream takes its running hook with it; two streams share a connection;
//! builtin filters redact across chunk boundaries and release what they held at close; an
//! agent learns which events have hooks, and when that changes.

use std::time::{Duration, Instant};

use hookd_client::{ClientError, StreamRequest};
use hookd_protocol::ErrorCode;
use hookd_testkit::{
    Daemon, RawConn, command_hook, process_running, script_command, settings, wait_until, within,
};
use serde_json::{Map, Value, json};

/// Generous bound for anything that should take a moment.
const WAIT: Duration = Duration::from_secs(30);

/// A model response chunk whose text is `text`, in the candidates form the daemon reads.
fn chunk(text: &str) -> Map<String, Value> {
    let value = json!({"candidates": [{"content": {"role": "model", "parts": [text]},
                                        "index": 0}]});
    value.as_object().cloned().unwrap_or_default()
}

/// The `llm_request` every stream of this module sends.
fn llm_request() -> Value {
    json!({"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hi"}]})
}

/// A hook body that answers `{"content": "<this chunk's text, upper-cased>!"}`, reading the
/// chunk's `content` (the field right before `full_content`) from its stdin with bash alone
/// (the texts of these tests have no escapes). With `log`, it also appends its stdin as a line to that file.
fn upper_script(log: Option<&std::path::Path>) -> String {
    let append = log
        .map(|log| format!("printf '%s\\n' \"$input\" >> '{}'\n", log.display()))
        .unwrap_or_default();
    format!(
        r#"input=$(cat)
{append}if [[ $input =~ \"content\":\"([^\"]*)\",\"full_content\" ]]; then
  printf '{{"content":"%s!"}}' "${{BASH_REMATCH[1]^^}}"
fi"#
    )
}

/// A persistent Python worker: answers each chunk with `{"content": "<text upper-cased>!",
/// "systemMessage": "<its pid>"}`, and fails on request when the chunk's text is `crash`
/// (exit 3) or `hang` (sleeps a minute).
const WORKER: &str = r#"import json, os, sys, time

for line in sys.stdin:
    text = json.loads(line)["content"]
    if text == "crash":
        print("crashing", file=sys.stderr, flush=True)
        sys.exit(3)
    if text == "hang":
        time.sleep(60)
    print(json.dumps({"content": text.upper() + "!", "systemMessage": str(os.getpid())}),
          flush=True)
"#;

/// The AfterModel hook entry running [`WORKER`] as a persistent worker, with `extra` keys.
fn worker_hook(extra: Value) -> Value {
    let mut hook = json!({"name": "upper-worker", "type": "command", "mode": "persistent",
                          "command": "python3 $GEMINI_PROJECT_DIR/.gemini/hooks/worker.py"});
    if let (Some(hook), Some(extra)) = (hook.as_object_mut(), extra.as_object()) {
        hook.extend(extra.clone());
    }
    hook
}

/// The pid a [`WORKER`] answer names.
fn worker_pid(result: &hookd_client::ChunkResultMessage) -> String {
    let output = result.result.final_output.as_ref().expect("an output");
    output["systemMessage"].as_str().expect("a pid").to_owned()
}

/// Settings with these AfterModel hooks.
fn after_model(hooks: Vec<Value>) -> Value {
    settings(&[("AfterModel", None, hooks)])
}

#[tokio::test]
async fn a_thousand_chunks_through_a_replacing_worker_come_back_in_order() {
    let daemon = Daemon::start(after_model(vec![worker_hook(json!({}))])).await;
    hookd_testkit::write(&daemon.project.join(".gemini/hooks/worker.py"), WORKER);
    let client = daemon.client().await;
    let request = StreamRequest::new(daemon.cwd()).with_llm_request(llm_request());
    let mut stream = client.open_stream(request).await.expect("open");
    assert_eq!(stream.hooks(), 1);

    let mut pids = std::collections::BTreeSet::new();
    within("1000 chunks through a worker", Duration::from_secs(120), async {
        for n in 0..1000u64 {
            let seq = stream.send_chunk(chunk(&format!("c{n}"))).await.expect("send");
            assert_eq!(seq, n);
        }
        for n in 0..1000u64 {
            let result = stream.next_result().await.expect("result").expect("in flight");
            assert_eq!(result.seq, n, "results come in order");
            assert_eq!(result.content.as_deref(), Some(format!("C{n}!").as_str()));
            assert!(result.result.success, "{:?}", result.result);
            let replaced = &result.result.final_output.as_ref().expect("output")
                ["hookSpecificOutput"]["llm_response"];
            assert_eq!(
                replaced["candidates"][0]["content"]["parts"],
                json!([format!("C{n}!")])
            );
            pids.insert(worker_pid(&result));
        }
    })
    .await;
    assert_eq!(pids.len(), 1, "one worker served the stream: {pids:?}");
    assert!(stream.next_result().await.expect("none left").is_none());
    let end = stream.close().await.expect("close");
    assert_eq!((end.chunks, end.flush.as_str()), (1000, ""));
    assert!(end.results.is_empty());
}

#[tokio::test]
async fn hooks_see_the_chunk_as_content_and_the_emitted_text_as_full_content() {
    let daemon = Daemon::start(after_model(vec![command_hook(
        "upper",
        &script_command("upper.sh"),
    )]))
    .await;
    let log = daemon.out_dir("out").join("stdin.log");
    daemon.script("upper.sh", &upper_script(Some(&log)));
    let client = daemon.client().await;
    let mut request = StreamRequest::new(daemon.cwd()).with_llm_request(llm_request());
    request.session_id = "sess-stream".to_owned();
    request
        .input
        .insert("extra_field".to_owned(), json!({"kept": true}));
    let mut stream = client.open_stream(request).await.expect("open");
    for text in ["ab", "cd", "ef"] {
        stream.send_chunk(chunk(text)).await.expect("send");
    }
    let end = stream.close().await.expect("close");
    let emitted: Vec<Option<String>> = end.results.iter().map(|r| r.content.clone()).collect();
    assert_eq!(
        emitted,
        [Some("AB!".into()), Some("CD!".into()), Some("EF!".into())]
    );

    let payloads: Vec<Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("payload"))
        .collect();
    assert_eq!(payloads.len(), 3);
    // (content, full_content): the text emitted so far (after the hook's replacement), then
    // this chunk's own text.
    let expected = [("ab", "ab"), ("cd", "AB!cd"), ("ef", "AB!CD!ef")];
    for (payload, (content, full)) in payloads.iter().zip(expected) {
        assert_eq!(payload["hook_event_name"], "AfterModel");
        assert_eq!(payload["session_id"], "sess-stream");
        assert_eq!(
            payload["llm_request"],
            llm_request(),
            "sent once, given every time"
        );
        assert_eq!(payload["extra_field"], json!({"kept": true}));
        assert_eq!(payload["content"], content, "{payload}");
        assert_eq!(payload["full_content"], full, "{payload}");
        assert_eq!(
            payload["llm_response"]["candidates"][0]["content"]["parts"],
            json!([content])
        );
        // Gemini CLI's key order: base fields, then the event's fields.
        let keys: Vec<&str> = payload
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys[..9],
            [
                "session_id",
                "transcript_path",
                "cwd",
                "hook_event_name",
                "timestamp",
                "llm_request",
                "llm_response",
                "content",
                "full_content"
            ]
        );
    }
}

#[tokio::test]
async fn a_stream_without_hooks_answers_every_chunk_at_once() {
    // A BeforeTool hook only: AfterModel has none.
    let daemon = Daemon::start(settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("t", "true")],
    )]))
    .await;
    let client = daemon.client().await;
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()).with_llm_request(llm_request()))
        .await
        .expect("open");
    assert_eq!(stream.hooks(), 0);
    const CHUNKS: u64 = 20_000;
    let started = Instant::now();
    let mut received = 0u64;
    within("20,000 chunks without hooks", WAIT, async {
        for n in 0..CHUNKS {
            stream
                .send_chunk(chunk("some text\nwith \"quotes\""))
                .await
                .expect("send");
            // Read whatever is already back, so the window stays open.
            while stream.in_flight() > 64 {
                let result = stream.next_result().await.expect("result").expect("some");
                assert_eq!(result.seq, received);
                assert_eq!(result.content, None);
                assert!(result.result.hooks.is_empty());
                received += 1;
            }
            assert!(n + 1 - received <= 65);
        }
        while let Some(result) = stream.next_result().await.expect("result") {
            assert_eq!(result.seq, received);
            received += 1;
        }
    })
    .await;
    let elapsed = started.elapsed();
    assert_eq!(received, CHUNKS);
    eprintln!(
        "no-hook stream: {CHUNKS} chunks in {elapsed:?} ({:.0} chunks/s{})",
        CHUNKS as f64 / elapsed.as_secs_f64(),
        if cfg!(debug_assertions) {
            ", unoptimised build"
        } else {
            ""
        }
    );
    let end = stream.close().await.expect("close");
    assert_eq!((end.chunks, end.flush.as_str()), (CHUNKS, ""));
    let status = client.status().await.expect("status");
    assert!(status.events_served >= CHUNKS, "{}", status.events_served);
}

#[tokio::test]
async fn a_worker_that_crashes_mid_stream_is_replaced_and_the_stream_goes_on() {
    let daemon = Daemon::start(after_model(vec![worker_hook(json!({}))])).await;
    hookd_testkit::write(&daemon.project.join(".gemini/hooks/worker.py"), WORKER);
    let client = daemon.client().await;
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()))
        .await
        .expect("open");
    for text in ["a", "b", "crash", "c", "d"] {
        stream.send_chunk(chunk(text)).await.expect("send");
    }
    let end = within("the stream", WAIT, stream.close())
        .await
        .expect("close");
    let contents: Vec<Option<&str>> = end.results.iter().map(|r| r.content.as_deref()).collect();
    // The crashed chunk keeps its text; the others are replaced.
    assert_eq!(
        contents,
        [Some("A!"), Some("B!"), None, Some("C!"), Some("D!")]
    );
    let crashed = &end.results[2].result.hooks[0];
    assert_eq!(crashed.outcome, hookd_protocol::Outcome::Exited { code: 3 });
    assert!(crashed.stderr.contains("crashing"), "{crashed:?}");
    assert!(!crashed.success);
    assert_ne!(
        worker_pid(&end.results[1]),
        worker_pid(&end.results[3]),
        "a new worker took over"
    );
    assert_eq!(worker_pid(&end.results[3]), worker_pid(&end.results[4]));
}

#[tokio::test]
async fn a_hanging_worker_is_killed_at_its_timeout_and_the_chunk_says_so() {
    let daemon = Daemon::start(after_model(vec![worker_hook(json!({"timeout": 1500}))])).await;
    hookd_testkit::write(&daemon.project.join(".gemini/hooks/worker.py"), WORKER);
    let client = daemon.client().await;
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()))
        .await
        .expect("open");
    for text in ["a", "hang", "b"] {
        stream.send_chunk(chunk(text)).await.expect("send");
    }
    let started = Instant::now();
    let end = within("the stream", WAIT, stream.close())
        .await
        .expect("close");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let hung = &end.results[1];
    assert_eq!(hung.content, None);
    assert_eq!(
        hung.result.hooks[0].outcome,
        hookd_protocol::Outcome::TimedOut { timeout_ms: 1500 }
    );
    assert_eq!(hung.result.hooks[0].failure.as_deref(), Some("timed_out"));
    assert_eq!(end.results[2].content.as_deref(), Some("B!"));
    assert_ne!(worker_pid(&end.results[0]), worker_pid(&end.results[2]));
}

#[tokio::test]
async fn a_client_that_disconnects_mid_stream_takes_its_running_hook_with_it() {
    let daemon = Daemon::start(after_model(vec![command_hook(
        "slow",
        &script_command("slow.sh"),
    )]))
    .await;
    let pid_file = daemon.out_dir("out").join("pid");
    daemon.script(
        "slow.sh",
        &format!("echo $$ > '{}'\nexec sleep 60", pid_file.display()),
    );
    let client = daemon.client().await;
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()))
        .await
        .expect("open");
    stream.send_chunk(chunk("one")).await.expect("send");
    stream.send_chunk(chunk("two")).await.expect("send");
    wait_until("the hook has started", WAIT, || {
        std::fs::read_to_string(&pid_file).is_ok_and(|pid| pid.trim().parse::<i32>().is_ok())
    })
    .await;
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(process_running(pid));
    drop(stream);
    drop(client);
    wait_until("the running hook is killed", WAIT, || !process_running(pid)).await;
    // The daemon carries on.
    daemon.client().await.ping().await.expect("ping");
}

#[tokio::test]
async fn cancelling_a_stream_stops_its_hook_and_ends_it() {
    let daemon = Daemon::start(after_model(vec![command_hook(
        "slow",
        &script_command("slow.sh"),
    )]))
    .await;
    daemon.script("slow.sh", "exec sleep 60");
    let client = daemon.client().await;
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()))
        .await
        .expect("open");
    stream.send_chunk(chunk("one")).await.expect("send");
    stream.send_chunk(chunk("two")).await.expect("send");
    let id = stream.id().clone();
    within("cancel", WAIT, client.cancel(&id))
        .await
        .expect("cancelled");
    // Both chunks are answered, their hook cancelled, then the stream ends.
    let first = within("result", WAIT, stream.next_result())
        .await
        .expect("result")
        .expect("one");
    assert_eq!(first.result.hooks[0].outcome.kind(), "cancelled");
    let second = stream.next_result().await.expect("result").expect("two");
    assert_eq!(second.seq, 1);
    assert_eq!(second.result.hooks[0].outcome.kind(), "cancelled");
    let end = stream.close().await.expect("ended by the daemon");
    assert_eq!(end.chunks, 2);
}

#[tokio::test]
async fn two_streams_interleave_on_one_connection() {
    let daemon = Daemon::start(after_model(vec![command_hook(
        "upper",
        &script_command("upper.sh"),
    )]))
    .await;
    daemon.script("upper.sh", &upper_script(None));
    let client = daemon.client().await;
    let open = || client.open_stream(StreamRequest::new(daemon.cwd()));
    let mut left = open().await.expect("open left");
    let mut right = open().await.expect("open right");
    assert_ne!(left.id(), right.id());
    within("two interleaved streams", WAIT, async {
        for n in 0..20 {
            left.send_chunk(chunk(&format!("l{n}")))
                .await
                .expect("left");
            right
                .send_chunk(chunk(&format!("r{n}")))
                .await
                .expect("right");
        }
        for n in 0..20 {
            let l = left
                .next_result()
                .await
                .expect("left")
                .expect("left result");
            let r = right
                .next_result()
                .await
                .expect("right")
                .expect("right result");
            assert_eq!(l.content.as_deref(), Some(format!("L{n}!").as_str()));
            assert_eq!(r.content.as_deref(), Some(format!("R{n}!").as_str()));
        }
    })
    .await;
    assert_eq!(left.close().await.expect("close").chunks, 20);
    assert_eq!(right.close().await.expect("close").chunks, 20);
}

#[tokio::test]
async fn stream_requests_that_cannot_be_served_get_typed_errors() {
    let daemon = Daemon::start(after_model(vec![])).await;
    let mut raw = RawConn::connect_hello(&daemon.socket).await;
    let cwd = daemon.cwd();
    let cases = [
        (
            json!({"type": "chunk", "id": 99, "seq": 0, "llm_response": {}}),
            "unknown_id",
        ),
        (json!({"type": "stream_close", "id": 99}), "unknown_id"),
        (
            json!({"type": "stream_open", "id": 1, "event": "BeforeTool", "cwd": cwd}),
            "unsupported_event",
        ),
        (
            json!({"type": "stream_open", "id": 1, "event": "Nope", "cwd": cwd}),
            "unknown_event",
        ),
        (
            json!({"type": "chunk", "id": 99, "seq": -1, "llm_response": {}}),
            "bad_request",
        ),
        (
            json!({"type": "chunk", "id": 99, "seq": 0, "llm_response": "text"}),
            "bad_request",
        ),
    ];
    for (request, code) in cases {
        raw.send(&request).await;
        let answer = raw.recv().await.expect("an answer");
        assert_eq!(answer["type"], "error", "{request} -> {answer}");
        assert_eq!(answer["code"], code, "{request} -> {answer}");
        assert_eq!(answer["id"], request["id"], "{request} -> {answer}");
    }
    // A stream's id is in flight while it is open.
    raw.send(&json!({"type": "stream_open", "id": 5, "event": "AfterModel", "cwd": cwd}))
        .await;
    let opened = raw.recv().await.expect("opened");
    assert_eq!(
        opened,
        json!({"type": "stream_opened", "id": 5, "hooks": 0,
                              "generation": opened["generation"]})
    );
    raw.send(&json!({"type": "stream_open", "id": 5, "event": "AfterModel", "cwd": cwd}))
        .await;
    assert_eq!(raw.recv().await.expect("error")["code"], "duplicate_id");
    raw.send(&json!({"type": "chunk", "id": 5, "seq": 41, "llm_response": {"text": "x"}}))
        .await;
    let result = raw.recv().await.expect("chunk result");
    assert_eq!(
        result,
        json!({"type": "chunk_result", "id": 5, "seq": 41, "result": {"success": true,
               "final_output": null, "all_outputs": [], "errors": [], "total_duration_ms": 0.0,
               "hooks": []}})
    );
    raw.send(&json!({"type": "stream_close", "id": 5})).await;
    assert_eq!(
        raw.recv().await.expect("closed"),
        json!({"type": "stream_closed", "id": 5, "chunks": 1, "flush": ""})
    );
    // After the close, the id is free and the stream gone.
    raw.send(&json!({"type": "chunk", "id": 5, "seq": 42, "llm_response": {}}))
        .await;
    assert_eq!(raw.recv().await.expect("error")["code"], "unknown_id");
    raw.send(&json!({"type": "ping", "id": 5})).await;
    assert_eq!(raw.recv().await.expect("pong")["type"], "pong");
}

#[tokio::test]
async fn the_client_reports_a_stream_the_daemon_refuses() {
    let daemon = Daemon::start(after_model(vec![])).await;
    let client = daemon.client().await;
    let error = client
        .open_stream(StreamRequest::new("relative/dir"))
        .await
        .expect_err("refused");
    assert!(
        matches!(
            error,
            ClientError::Server {
                code: ErrorCode::BadRequest,
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn hooked_events_lists_the_events_with_hooks_and_follows_changes() {
    let daemon = Daemon::start(settings(&[
        (
            "BeforeTool",
            Some("run_shell_command"),
            vec![command_hook("t", "true")],
        ),
        ("SessionEnd", None, vec![command_hook("s", "true")]),
    ]))
    .await;
    let client = daemon.client().await;
    let answer = client.hooked_events(daemon.cwd()).await.expect("answer");
    assert_eq!(answer.events, ["BeforeTool", "SessionEnd"]);
    assert_eq!(answer.cwd, daemon.cwd());

    let mut watch = client
        .watch_hooked_events(daemon.cwd())
        .await
        .expect("watch");
    assert!(watch.is_hooked("BeforeTool"));
    assert!(!watch.is_hooked("AfterModel"));
    let generation = watch.current().generation;

    // Adding an AfterModel hook (and dropping the SessionEnd one) is announced.
    let new_settings = settings(&[
        ("BeforeTool", None, vec![command_hook("t", "true")]),
        ("AfterModel", None, vec![command_hook("m", "true")]),
    ]);
    hookd_testkit::write(
        &daemon.project.join(".gemini/settings.json"),
        &serde_json::to_string_pretty(&new_settings).expect("json"),
    );
    // A rebuild that changes nothing visible (the watcher's first look at the project can
    // come after the subscription) is announced too; wait for the one with the new events.
    let changed = within("the change is announced", WAIT, async {
        loop {
            let next = watch
                .changed()
                .await
                .expect("a change")
                .expect("not an error");
            if next.events != ["BeforeTool", "SessionEnd"] {
                return next;
            }
        }
    })
    .await;
    assert_eq!(changed.events, ["BeforeTool", "AfterModel"]);
    assert!(changed.generation > generation);
    assert!(watch.is_hooked("AfterModel"));

    // Cancelling the watch ends it; the connection goes on.
    let id = watch.id().clone();
    client.cancel(&id).await.expect("cancelled");
    assert_eq!(
        client
            .hooked_events(daemon.cwd())
            .await
            .expect("answer")
            .events,
        ["BeforeTool", "AfterModel"]
    );
}

#[tokio::test]
async fn a_builtin_filter_redacts_a_secret_split_across_chunks() {
    let redact = json!({"type": "builtin", "builtin": "redact", "name": "redact-tickets",
                        "default_patterns": false, "holdback": 16,
                        "patterns": [{"name": "ticket", "regex": "TCK-[0-9]{6}"}]});
    // The filter comes after the command hook in plan order, and still runs first.
    let daemon = Daemon::start(after_model(vec![
        command_hook("log", &script_command("log.sh")),
        redact,
    ]))
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
    assert_eq!(stream.hooks(), 2);
    let chunks = [
        "Your ticket number is TCK-12",
        "3456, filed today; the ticket before it was TCK-654",
        "321 and that one is closed. Thanks for writing!",
    ];
    for text in chunks {
        stream.send_chunk(chunk(text)).await.expect("send");
    }
    let end = within("close", WAIT, stream.close()).await.expect("close");
    let mut emitted = String::new();
    for (result, original) in end.results.iter().zip(chunks) {
        emitted.push_str(result.emitted(original));
        // The filter's record comes first, then the command hook's.
        let names: Vec<&str> = result
            .result
            .hooks
            .iter()
            .map(|h| h.name.as_str())
            .collect();
        assert_eq!(names, ["redact-tickets", "log"]);
    }
    emitted.push_str(&end.flush);
    assert_eq!(
        emitted,
        "Your ticket number is [REDACTED:ticket], filed today; the ticket before it was \
         [REDACTED:ticket] and that one is closed. Thanks for writing!"
    );
    assert!(
        !end.flush.is_empty(),
        "the tail was held back until the close"
    );
    // The command hook never saw a secret, whole or in part.
    let seen = std::fs::read_to_string(&log).expect("log");
    assert_eq!(seen.lines().count(), 3);
    for part in ["TCK-12", "3456", "TCK-654", "321"] {
        assert!(!seen.contains(part), "the hook saw {part:?}: {seen}");
    }
}

#[tokio::test]
async fn a_stream_of_filters_only_is_answered_in_order_and_flushed_at_close_or_cancel() {
    let redact = json!({"type": "builtin", "builtin": "redact", "name": "redact-tickets",
                        "default_patterns": false, "holdback": 16,
                        "patterns": [{"name": "ticket", "regex": "TCK-[0-9]{6}"}]});
    let daemon = Daemon::start(after_model(vec![redact])).await;
    let client = daemon.client().await;
    let chunks = [
        "Your ticket number is TCK-12",
        "3456, filed today; nothing else to report, thanks",
        " for writing!",
    ];

    // Pipelined: every chunk is sent before any result is read.
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()))
        .await
        .expect("open");
    assert_eq!(stream.hooks(), 1);
    for text in chunks {
        stream.send_chunk(chunk(text)).await.expect("send");
    }
    let end = within("close", WAIT, stream.close()).await.expect("close");
    assert_eq!(end.chunks, 3);
    let mut emitted = String::new();
    for (seq, (result, original)) in end.results.iter().zip(chunks).enumerate() {
        assert_eq!(result.seq, seq as u64);
        let hooks = &result.result.hooks;
        assert_eq!(hooks.len(), 1);
        assert_eq!(
            (hooks[0].name.as_str(), hooks[0].exit_code, hooks[0].success),
            ("redact-tickets", Some(0), true)
        );
        // A chunk the filter changed says so in its record and its content.
        let changed = result.content.is_some();
        assert_eq!(hooks[0].output.is_some(), changed, "{result:?}");
        emitted.push_str(result.emitted(original));
    }
    assert!(
        !end.flush.is_empty(),
        "the tail is held back until the close"
    );
    emitted.push_str(&end.flush);
    assert_eq!(
        emitted,
        "Your ticket number is [REDACTED:ticket], filed today; nothing else to report, \
         thanks for writing!"
    );

    // A cancelled stream ends too, with what its filter held back.
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()))
        .await
        .expect("open");
    stream
        .send_chunk(chunk("the next one is TCK-99"))
        .await
        .expect("send");
    let first = within("result", WAIT, stream.next_result())
        .await
        .expect("result")
        .expect("a result");
    let id = stream.id().clone();
    within("cancel", WAIT, client.cancel(&id))
        .await
        .expect("cancelled");
    let end = within("end", WAIT, stream.close())
        .await
        .expect("ended by the daemon");
    assert_eq!(end.chunks, 1);
    assert_eq!(
        format!("{}{}", first.emitted("the next one is TCK-99"), end.flush),
        "the next one is TCK-99"
    );
}

#[tokio::test]
async fn full_content_carries_escapes_and_unicode_exactly_across_chunks() {
    let daemon = Daemon::start(after_model(vec![command_hook(
        "log",
        &script_command("log.sh"),
    )]))
    .await;
    let log = daemon.out_dir("out").join("seen.jsonl");
    // The hook logs what it parsed: this chunk's content and the full content so far.
    daemon.script(
        "log.sh",
        &format!(
            "exec python3 -c 'import json, sys; p = json.load(sys.stdin); \
             open(\"{}\", \"a\").write(json.dumps([p[\"content\"], p[\"full_content\"]]) + \"\\n\")'",
            log.display()
        ),
    );
    let client = daemon.client().await;
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()).with_llm_request(llm_request()))
        .await
        .expect("open");
    let chunks = [
        "plain, ",
        "\"quoted\" and \\backslashed\\\n",
        "tab\there, control \u{1}\u{1f}, é and 🦀 ",
        "</script> \u{2028} end",
    ];
    for text in chunks {
        stream.send_chunk(chunk(text)).await.expect("send");
    }
    let end = within("close", WAIT, stream.close()).await.expect("close");
    assert_eq!(end.chunks, chunks.len() as u64);
    let seen: Vec<(String, String)> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a logged pair"))
        .collect();
    let mut so_far = String::new();
    for ((content, full), text) in seen.iter().zip(chunks) {
        so_far.push_str(text);
        assert_eq!(content, text);
        assert_eq!(full, &so_far);
    }
    assert_eq!(seen.len(), chunks.len());
}
