//! The client against a scripted fake daemon on a Unix socket in a temporary directory.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hookd_protocol::{ErrorCode, Frame, FrameCodec, RequestId};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinHandle;
use tokio_util::codec::Framed;

use crate::{Client, ClientError, ConnectOptions, EventRequest, EventStreamItem};

/// The frame limit the fake daemon announces.
const FAKE_MAX_FRAME: u64 = 1024;

/// The fake daemon's side of the connection.
struct Peer {
    frames: Framed<UnixStream, FrameCodec>,
}

impl Peer {
    /// The next frame as JSON, or `None` when the client has closed the connection.
    async fn recv(&mut self) -> Option<Value> {
        match self.frames.next().await {
            Some(Ok(Frame::Data(body))) => Some(serde_json::from_slice(&body).unwrap()),
            None => None,
            other => panic!("the fake daemon got {other:?}"),
        }
    }

    async fn send(&mut self, message: Value) {
        let body = Bytes::from(serde_json::to_vec(&message).unwrap());
        self.frames.send(body).await.unwrap();
    }

    /// Answers the client's `hello` the way the daemon does and returns it.
    async fn handshake(&mut self) -> Value {
        let hello = self.recv().await.unwrap();
        assert_eq!(hello["type"], "hello");
        self.send(
            json!({"type": "hello", "protocol": 1, "server": "hookd/test", "pid": 77,
                         "max_frame_bytes": FAKE_MAX_FRAME}),
        )
        .await;
        hello
    }

    /// Waits until the client closes the connection, failing on any further frame.
    async fn expect_closed(&mut self) {
        assert_eq!(self.recv().await, None);
    }
}

/// A fake daemon listening in a temporary directory, running `script` on one connection.
struct Fake {
    _dir: tempfile::TempDir,
    path: PathBuf,
    task: JoinHandle<()>,
}

impl Fake {
    /// Waits for the script to finish, surfacing its assertion failures.
    async fn finish(self) {
        self.task.await.unwrap();
    }
}

fn fake<F, Fut>(script: F) -> Fake
where
    F: FnOnce(Peer) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.sock");
    // Bound before the client exists, so connecting needs no readiness wait.
    let listener = UnixListener::bind(&path).unwrap();
    let task = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        script(Peer {
            frames: Framed::new(stream, FrameCodec::new()),
        })
        .await;
    });
    Fake {
        _dir: dir,
        path,
        task,
    }
}

async fn connect(fake: &Fake) -> Client {
    Client::connect(&fake.path, ConnectOptions::new("test/1"))
        .await
        .unwrap()
}

/// A `result` frame for request `id` with no hooks.
fn result_frame(id: &Value, generation: u64) -> Value {
    json!({"type": "result", "id": id, "success": true, "final_output": null, "all_outputs": [],
           "errors": [], "total_duration_ms": 1.0, "hooks": [], "generation": generation})
}

/// A `hook_result` frame for request `id`.
fn hook_frame(id: &Value, index: u64, name: &str) -> Value {
    json!({"type": "hook_result", "id": id, "index": index, "hook": {
        "name": name, "source": "project", "event": "BeforeTool", "success": true,
        "exit_code": 0, "duration_ms": 2.0, "output": null, "output_format": null,
        "stdout": "", "stderr": "", "error": null, "outcome": {"kind": "exited", "code": 0}}})
}

#[tokio::test]
async fn handshake_sends_name_and_env_then_requests_work() {
    let fake = fake(|mut peer| async move {
        let hello = peer.handshake().await;
        assert_eq!(
            hello,
            json!({"type": "hello", "protocol": 1, "client": "test/1", "env": {"A": "b"}})
        );
        assert_eq!(peer.recv().await.unwrap(), json!({"type": "ping", "id": 1}));
        peer.send(json!({"type": "pong", "id": 1})).await;
        assert_eq!(
            peer.recv().await.unwrap(),
            json!({"type": "status", "id": 2})
        );
        peer.send(
            json!({"type": "status", "id": 2, "version": "0.1.0", "pid": 77,
                         "uptime_ms": 5, "connections": 1, "hooks_running": 0,
                         "hooks_queued": 0, "max_hooks": 4, "events_served": 0,
                         "registries": []}),
        )
        .await;
        assert_eq!(
            peer.recv().await.unwrap(),
            json!({"type": "list", "id": 3, "cwd": "/p"})
        );
        peer.send(
            json!({"type": "list", "id": 3, "cwd": "/p", "hooks_enabled": true,
                         "generation": 1, "hooks": [], "diagnostics": []}),
        )
        .await;
        peer.expect_closed().await;
    });
    let mut options = ConnectOptions::new("test/1");
    options.env = Some([("A".to_owned(), "b".to_owned())].into());
    let client = Client::connect(&fake.path, options).await.unwrap();
    assert_eq!(client.server_hello().server, "hookd/test");
    assert_eq!(client.server_hello().pid, 77);
    client.ping().await.unwrap();
    assert_eq!(client.status().await.unwrap().max_hooks, 4);
    let listing = client.list("/p").await.unwrap();
    assert_eq!((listing.cwd.as_str(), listing.generation), ("/p", 1));
    drop(client);
    fake.finish().await;
}

/// How the fake daemon answers `hello` in the handshake failure cases.
enum Reply {
    Frame(Value),
    Close,
    Silence,
}

async fn check_handshake(reply: Reply, expected: impl Fn(&ClientError) -> bool) {
    let fake = fake(|mut peer| async move {
        peer.recv().await.unwrap();
        match reply {
            Reply::Frame(frame) => peer.send(frame).await,
            Reply::Close => return,
            Reply::Silence => {}
        }
        peer.expect_closed().await;
    });
    let mut options = ConnectOptions::new("test/1");
    options.handshake_timeout = Duration::from_millis(200);
    let error = Client::connect(&fake.path, options).await.unwrap_err();
    assert!(expected(&error), "unexpected error: {error:?}");
    fake.finish().await;
}

#[tokio::test]
async fn handshake_failures() {
    check_handshake(
        Reply::Frame(
            json!({"type": "error", "id": null, "code": "unsupported_version",
                            "message": "no"}),
        ),
        |error| {
            matches!(error, ClientError::Server { code: ErrorCode::UnsupportedVersion, message }
                if message == "no")
        },
    )
    .await;
    check_handshake(
        Reply::Frame(
            json!({"type": "hello", "protocol": 2, "server": "hookd/9", "pid": 1,
                            "max_frame_bytes": 10}),
        ),
        |error| {
            matches!(
                error,
                ClientError::UnsupportedVersion {
                    server: 2,
                    client: 1
                }
            )
        },
    )
    .await;
    check_handshake(
        Reply::Frame(json!({"type": "pong", "id": 1})),
        |error| matches!(error, ClientError::Handshake { reason } if reason.contains("`pong`")),
    )
    .await;
    check_handshake(Reply::Frame(json!({"type": "hello"})), |error| {
        matches!(error, ClientError::Handshake { reason } if reason.contains("not a valid message"))
    })
    .await;
    check_handshake(
        Reply::Close,
        |error| matches!(error, ClientError::Handshake { reason } if reason.contains("closed")),
    )
    .await;
    check_handshake(Reply::Silence, |error| {
        matches!(error, ClientError::HandshakeTimeout { .. })
    })
    .await;
}

#[tokio::test]
async fn connecting_to_nothing_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.sock");
    let error = Client::connect(&path, ConnectOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Connect { path: p, .. } if *p == path),
        "{error:?}"
    );
}

#[tokio::test]
async fn answers_are_routed_by_id_in_any_order() {
    const REQUESTS: usize = 20;
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        let mut requests = Vec::new();
        for _ in 0..REQUESTS {
            requests.push(peer.recv().await.unwrap());
        }
        // Answer in reverse arrival order; each event's generation is its index, taken from
        // its session id, so the client can tell whether it got its own answer.
        for request in requests.iter().rev() {
            assert_eq!(request["type"], "event");
            assert_eq!(request["stream_hooks"], false);
            let index: u64 = request["session_id"].as_str().unwrap().parse().unwrap();
            peer.send(result_frame(&request["id"], index)).await;
        }
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let mut tasks = Vec::new();
    for index in 0..REQUESTS {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut request = EventRequest::new("BeforeTool", "/p");
            request.session_id = index.to_string();
            client.event(request).await.unwrap().generation
        }));
    }
    for (index, task) in tasks.into_iter().enumerate() {
        assert_eq!(task.await.unwrap(), index as u64);
    }
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn streaming_yields_hooks_then_the_result() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        let request = peer.recv().await.unwrap();
        assert_eq!(request["stream_hooks"], true);
        assert_eq!(request["input"], json!({"tool_name": "ls"}));
        let id = request["id"].clone();
        peer.send(hook_frame(&id, 1, "second")).await;
        peer.send(hook_frame(&id, 0, "first")).await;
        peer.send(result_frame(&id, 9)).await;
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let input = json!({"tool_name": "ls"}).as_object().cloned().unwrap();
    let request = EventRequest::new("BeforeTool", "/p").with_input(input);
    let mut stream = client.event_streaming(request).await.unwrap();
    let mut seen = Vec::new();
    while let Some(item) = stream.recv().await {
        seen.push(match item.unwrap() {
            EventStreamItem::Hook { index, hook } => format!("{index}:{}", hook.name),
            EventStreamItem::Result(response) => format!("result:{}", response.generation),
        });
    }
    assert_eq!(seen, ["1:second", "0:first", "result:9"]);
    assert!(stream.recv().await.is_none());
    drop((stream, client));
    fake.finish().await;
}

#[tokio::test]
async fn error_frames_become_server_errors() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        for code in [
            "unknown_event",
            "shutting_down",
            "unknown_id",
            "bad_request",
        ] {
            let request = peer.recv().await.unwrap();
            peer.send(json!({"type": "error", "id": request["id"], "code": code,
                             "message": format!("{} failed", request["type"])}))
                .await;
        }
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let check = |result: Result<(), ClientError>, code: ErrorCode, message: &str| match result {
        Err(ClientError::Server {
            code: got,
            message: text,
        }) => {
            assert_eq!((got, text.as_str()), (code, message));
        }
        other => panic!("expected a server error, got {other:?}"),
    };
    check(
        client
            .event(EventRequest::new("Nope", "/p"))
            .await
            .map(drop),
        ErrorCode::UnknownEvent,
        "\"event\" failed",
    );
    check(
        client.status().await.map(drop),
        ErrorCode::ShuttingDown,
        "\"status\" failed",
    );
    check(
        client.cancel(&RequestId::Number(99)).await,
        ErrorCode::UnknownId,
        "\"cancel\" failed",
    );
    let mut stream = client
        .event_streaming(EventRequest::new("BeforeTool", "/p"))
        .await
        .unwrap();
    check(
        stream.recv().await.unwrap().map(drop),
        ErrorCode::BadRequest,
        "\"event\" failed",
    );
    assert!(stream.recv().await.is_none());
    drop((stream, client));
    fake.finish().await;
}

#[tokio::test]
async fn cancel_is_acknowledged_and_the_result_still_arrives() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        let event = peer.recv().await.unwrap();
        let cancel = peer.recv().await.unwrap();
        assert_eq!(cancel["type"], "cancel");
        assert_eq!(cancel["target"], event["id"]);
        peer.send(json!({"type": "cancelled", "id": cancel["id"], "target": event["id"]}))
            .await;
        peer.send(result_frame(&event["id"], 4)).await;
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let stream = client
        .event_streaming(EventRequest::new("BeforeTool", "/p"))
        .await
        .unwrap();
    client.cancel(stream.id()).await.unwrap();
    assert_eq!(stream.finish().await.unwrap().generation, 4);
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn dropping_a_stream_cancels_its_event_and_late_answers_are_ignored() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        let event = peer.recv().await.unwrap();
        let cancel = peer.recv().await.unwrap();
        assert_eq!(
            (&cancel["type"], &cancel["target"]),
            (&json!("cancel"), &event["id"])
        );
        // Answers nobody waits for any more must not disturb the connection.
        peer.send(json!({"type": "cancelled", "id": cancel["id"], "target": event["id"]}))
            .await;
        peer.send(hook_frame(&event["id"], 0, "late")).await;
        peer.send(result_frame(&event["id"], 1)).await;
        peer.send(json!({"type": "error", "id": null, "code": "bad_json", "message": "?"}))
            .await;
        let ping = peer.recv().await.unwrap();
        assert_eq!(ping["type"], "ping");
        peer.send(json!({"type": "pong", "id": ping["id"]})).await;
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let stream = client
        .event_streaming(EventRequest::new("BeforeTool", "/p"))
        .await
        .unwrap();
    drop(stream);
    client.ping().await.unwrap();
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn dropping_an_event_future_cancels_its_event() {
    let (received, on_received) = tokio::sync::oneshot::channel();
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        let event = peer.recv().await.unwrap();
        received.send(()).unwrap();
        let cancel = peer.recv().await.unwrap();
        assert_eq!(
            (&cancel["type"], &cancel["target"]),
            (&json!("cancel"), &event["id"])
        );
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    tokio::select! {
        answer = client.event(EventRequest::new("BeforeTool", "/p")) => {
            panic!("the fake daemon never answers, yet got {answer:?}")
        }
        _ = on_received => {}
    }
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn losing_the_connection_fails_pending_and_later_requests() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        peer.recv().await.unwrap();
        peer.recv().await.unwrap();
        // Returning drops the connection with both requests unanswered.
    });
    let client = connect(&fake).await;
    let streaming = client
        .event_streaming(EventRequest::new("BeforeTool", "/p"))
        .await
        .unwrap();
    let whole = client.event(EventRequest::new("BeforeTool", "/p")).await;
    assert!(matches!(whole, Err(ClientError::Disconnected)), "{whole:?}");
    let streamed = streaming.finish().await;
    assert!(
        matches!(streamed, Err(ClientError::Disconnected)),
        "{streamed:?}"
    );
    let ping = client.ping().await;
    assert!(matches!(ping, Err(ClientError::Disconnected)), "{ping:?}");
    fake.finish().await;
}

#[tokio::test]
async fn oversized_requests_are_refused_before_sending() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        // The oversized event never arrives; the ping after it does.
        let ping = peer.recv().await.unwrap();
        assert_eq!(ping["type"], "ping");
        peer.send(json!({"type": "pong", "id": ping["id"]})).await;
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let big = json!({"prompt": "x".repeat(2000)})
        .as_object()
        .cloned()
        .unwrap();
    let error = client
        .event(EventRequest::new("BeforeAgent", "/p").with_input(big.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::RequestTooLarge { max: 1024, .. }),
        "{error:?}"
    );
    let error = client
        .event_streaming(EventRequest::new("BeforeAgent", "/p").with_input(big))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::RequestTooLarge { .. }),
        "{error:?}"
    );
    client.ping().await.unwrap();
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn an_oversized_answer_fails_the_pending_requests_instead_of_hanging_them() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        let ping = peer.recv().await.unwrap();
        // A frame over the announced limit, written raw: the client cannot know which request
        // it answers, so it must not leave the ping waiting for an answer that never comes.
        let error = json!({"type": "error", "id": ping["id"], "code": "internal", "message": ""});
        let mut body = serde_json::to_vec(&error).unwrap();
        body.resize(usize::try_from(FAKE_MAX_FRAME + 1).unwrap(), b' ');
        let mut raw = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        raw.extend_from_slice(&body);
        peer.frames.get_mut().write_all(&raw).await.unwrap();
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let error = client.ping().await.unwrap_err();
    assert!(matches!(error, ClientError::Disconnected), "{error:?}");
    drop(client);
    fake.finish().await;
}

/// A `registry_changed` frame for subscription `id`.
fn change_frame(id: &Value, generation: u64) -> Value {
    json!({"type": "registry_changed", "id": id, "cwd": "/p", "generation": generation,
           "hooks_enabled": true, "hooks": 1, "layers": ["project"],
           "files": ["/p/.gemini/settings.json"], "diagnostics": [], "missed": 0})
}

#[tokio::test]
async fn subscription_receives_changes_and_cancels_when_dropped() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        assert_eq!(
            peer.recv().await.unwrap(),
            json!({"type": "subscribe", "id": 1, "cwd": "/p"})
        );
        peer.send(json!({"type": "subscribed", "id": 1, "cwd": "/p"}))
            .await;
        peer.send(change_frame(&json!(1), 2)).await;
        // Other requests still work while the subscription is open.
        assert_eq!(
            peer.recv().await.unwrap(),
            json!({"type": "reload", "id": 2})
        );
        peer.send(change_frame(&json!(1), 3)).await;
        peer.send(json!({"type": "reloaded", "id": 2, "registries": []}))
            .await;
        assert_eq!(
            peer.recv().await.unwrap(),
            json!({"type": "disable", "id": 3, "cwd": "/p", "name": "n", "scope": "project"})
        );
        peer.send(
            json!({"type": "edited", "id": 3, "changed": true, "message": "done",
                         "files": ["/p/.gemini/settings.json"], "generation": 4}),
        )
        .await;
        // Dropping the subscription cancels it.
        assert_eq!(
            peer.recv().await.unwrap(),
            json!({"type": "cancel", "id": 4, "target": 1})
        );
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let mut subscription = client.subscribe(Some("/p".to_owned())).await.unwrap();
    assert_eq!(subscription.id(), &RequestId::Number(1));
    assert_eq!(subscription.recv().await.unwrap().unwrap().generation, 2);
    assert!(client.reload().await.unwrap().is_empty());
    assert_eq!(subscription.recv().await.unwrap().unwrap().generation, 3);
    let edited = client
        .disable("/p", "n", crate::Scope::Project)
        .await
        .unwrap();
    assert_eq!((edited.changed, edited.generation), (true, 4));
    drop(subscription);
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn a_refused_subscription_is_an_error() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        assert_eq!(peer.recv().await.unwrap()["type"], "subscribe");
        peer.send(json!({"type": "error", "id": 1, "code": "bad_request", "message": "no"}))
            .await;
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let error = client.subscribe(None).await.unwrap_err();
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
    drop(client);
    fake.finish().await;
}

/// A `chunk_result` frame of stream `id` for chunk `seq` whose text became `content`.
fn chunk_result_frame(id: &Value, seq: u64, content: &str) -> Value {
    json!({"type": "chunk_result", "id": id, "seq": seq, "content": content, "result": {
        "success": true, "final_output": null, "all_outputs": [], "errors": [],
        "total_duration_ms": 0.0, "hooks": []}})
}

#[tokio::test]
async fn a_stream_pipelines_more_chunks_than_its_window_and_gets_every_result_in_order() {
    const CHUNKS: u64 = crate::STREAM_WINDOW as u64 + 44;
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        let open = peer.recv().await.unwrap();
        assert_eq!(open["type"], "stream_open");
        assert_eq!(open["event"], "AfterModel");
        assert_eq!(open["input"]["llm_request"], json!({"model": "m"}));
        let id = open["id"].clone();
        peer.send(json!({"type": "stream_opened", "id": id, "hooks": 1, "generation": 4}))
            .await;
        // Answer in batches, as a busy daemon would: the client must not stall.
        let mut seq = 0;
        while seq < CHUNKS {
            let batch = (CHUNKS - seq).min(100);
            for n in seq..seq + batch {
                let chunk = peer.recv().await.unwrap();
                assert_eq!(chunk["type"], "chunk");
                assert_eq!(chunk["id"], id);
                assert_eq!(chunk["seq"], n);
            }
            for n in seq..seq + batch {
                peer.send(chunk_result_frame(&id, n, &format!("T{n}")))
                    .await;
            }
            seq += batch;
        }
        assert_eq!(
            peer.recv().await.unwrap(),
            json!({"type": "stream_close", "id": id})
        );
        peer.send(json!({"type": "stream_closed", "id": id, "chunks": CHUNKS, "flush": "end"}))
            .await;
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let request = crate::StreamRequest::new("/p").with_llm_request(json!({"model": "m"}));
    let mut stream = client.open_stream(request).await.unwrap();
    assert_eq!((stream.hooks(), stream.generation()), (1, 4));
    for n in 0..CHUNKS {
        let chunk = json!({"text": format!("t{n}")});
        let seq = stream
            .send_chunk(chunk.as_object().cloned().unwrap())
            .await
            .unwrap();
        assert_eq!(seq, n);
        assert!(stream.in_flight() <= CHUNKS as usize);
    }
    // Half read here, the rest handed back by the close.
    for n in 0..CHUNKS / 2 {
        let result = stream.next_result().await.unwrap().unwrap();
        assert_eq!(result.seq, n);
        assert_eq!(result.emitted("ignored"), format!("T{n}"));
    }
    let end = stream.close().await.unwrap();
    let seqs: Vec<u64> = end.results.iter().map(|result| result.seq).collect();
    assert_eq!(seqs, (CHUNKS / 2..CHUNKS).collect::<Vec<_>>());
    assert_eq!((end.chunks, end.flush.as_str()), (CHUNKS, "end"));
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn a_stream_the_daemon_refuses_or_ends_reports_it() {
    let fake = fake(|mut peer| async move {
        peer.handshake().await;
        let open = peer.recv().await.unwrap();
        peer.send(
            json!({"type": "error", "id": open["id"], "code": "unsupported_event",
                         "message": "no"}),
        )
        .await;
        let open = peer.recv().await.unwrap();
        let id = open["id"].clone();
        peer.send(json!({"type": "stream_opened", "id": id, "hooks": 0, "generation": 1}))
            .await;
        peer.recv().await.unwrap();
        // The daemon ends the stream by itself (cancelled elsewhere, or stopping).
        peer.send(json!({"type": "stream_closed", "id": id, "chunks": 0, "flush": "x"}))
            .await;
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let error = client
        .open_stream(crate::StreamRequest::new("/p"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Server {
                code: ErrorCode::UnsupportedEvent,
                ..
            }
        ),
        "{error:?}"
    );
    let mut stream = client
        .open_stream(crate::StreamRequest::new("/p"))
        .await
        .unwrap();
    stream.send_chunk(serde_json::Map::new()).await.unwrap();
    assert!(matches!(
        stream.next_result().await,
        Err(ClientError::StreamEnded)
    ));
    assert!(matches!(
        stream.send_chunk(serde_json::Map::new()).await,
        Err(ClientError::StreamEnded)
    ));
    let end = stream.close().await.unwrap();
    assert_eq!(end.flush, "x");
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn hooked_events_answers_once_and_a_watch_keeps_the_newest_answer() {
    let answer = |id: &Value, generation: u64, events: &[&str]| {
        json!({"type": "hooked_events", "id": id, "cwd": "/p", "events": events,
               "generation": generation})
    };
    let fake = fake(move |mut peer| async move {
        peer.handshake().await;
        let once = peer.recv().await.unwrap();
        assert_eq!(
            once,
            json!({"type": "hooked_events", "id": once["id"], "cwd": "/p", "subscribe": false})
        );
        peer.send(answer(&once["id"], 1, &["BeforeTool"])).await;
        let watch = peer.recv().await.unwrap();
        assert_eq!(watch["subscribe"], true);
        let id = watch["id"].clone();
        peer.send(answer(&id, 1, &["BeforeTool"])).await;
        // Two changes, then a pong: once the pong is in, both changes were delivered.
        let ping = peer.recv().await.unwrap();
        peer.send(answer(&id, 2, &["BeforeTool", "AfterModel"]))
            .await;
        peer.send(answer(&id, 3, &["AfterModel"])).await;
        peer.send(json!({"type": "pong", "id": ping["id"]})).await;
        // Dropping the watch cancels it.
        let cancel = peer.recv().await.unwrap();
        assert_eq!(cancel["type"], "cancel");
        assert_eq!(cancel["target"], id);
        peer.expect_closed().await;
    });
    let client = connect(&fake).await;
    let once = client.hooked_events("/p").await.unwrap();
    assert_eq!(once.events, ["BeforeTool"]);
    let mut watch = client.watch_hooked_events("/p").await.unwrap();
    assert_eq!(watch.current().generation, 1);
    assert!(watch.is_hooked("BeforeTool"));
    client.ping().await.unwrap();
    // The newest answer, the one in between skipped.
    let changed = watch.changed().await.unwrap().unwrap();
    assert_eq!(
        (changed.generation, changed.events.clone()),
        (3, vec!["AfterModel".to_owned()])
    );
    assert!(!watch.is_hooked("BeforeTool"));
    // The cancel is queued before the connection closes; the fake checks it came.
    drop(watch);
    drop(client);
    fake.finish().await;
}

#[tokio::test]
async fn an_unsafe_socket_directory_gets_nothing() {
    use std::os::unix::fs::PermissionsExt;
    // A listener in a directory other users could write to: the client must not send its
    // hello (which carries its environment) there.
    let dir = tempfile::tempdir().unwrap();
    let wide = dir.path().join("wide");
    std::fs::create_dir(&wide).unwrap();
    std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = wide.join("hookd.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let error = Client::connect(&path, ConnectOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::UntrustedSocket(
                hookd_protocol::SocketTrustError::DirectoryWritable { .. }
            )
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains(&wide.display().to_string()));
    // Nothing connected at all.
    let accepted = tokio::time::timeout(Duration::from_millis(50), listener.accept()).await;
    assert!(accepted.is_err(), "the client connected");

    // A symbolic link to a real daemon's directory is refused the same way.
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let _real_listener = tokio::net::UnixListener::bind(real.join("hookd.sock")).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let error = Client::connect(link.join("hookd.sock"), ConnectOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::UntrustedSocket(
                hookd_protocol::SocketTrustError::DirectoryIsSymlink { .. }
            )
        ),
        "{error:?}"
    );
}
