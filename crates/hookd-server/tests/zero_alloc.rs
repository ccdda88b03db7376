//! Zero cost when unhooked, measured in the daemon itself: a `chunk` of a stream without hooks
//! and an `event` no hook matches are read, answered and written by the daemon's thread
//! without a single allocation, however many a client pipelines.
//!
//! The daemon (`hookd_server::run`) runs on a current-thread runtime in a thread of its own,
//! and a counting global allocator counts the allocations made on that thread only; the test
//! thread plays the client with plain blocking socket I/O. After a warm-up (buffers reach their
//! working size, the registry is cached), a batch of pipelined requests must add nothing.
//! A test binary of its own, because the allocator is process-wide.

// A global allocator is an `unsafe impl` by definition; it only forwards to the system's.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The system allocator, counting the allocations of threads that asked to be counted.
struct Counting;

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// Allocations made on counted threads.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn note_allocation() {
    if COUNTED.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping is a
// `const`-initialised thread-local `Cell<bool>` and an atomic, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Writes `message` as one frame into `out`.
fn frame(out: &mut Vec<u8>, message: &Value) {
    let body = serde_json::to_vec(message).expect("json");
    out.extend_from_slice(&u32::try_from(body.len()).expect("small").to_be_bytes());
    out.extend_from_slice(&body);
}

/// Reads one frame as JSON.
fn read_frame(stream: &mut UnixStream) -> Value {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).expect("prefix");
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut body).expect("body");
    serde_json::from_slice(&body).expect("json")
}

/// Reads `count` frames, checking each with `check`.
fn read_frames(stream: &mut UnixStream, count: usize, mut check: impl FnMut(usize, &Value)) {
    for n in 0..count {
        check(n, &read_frame(stream));
    }
}

/// Numeric event ids start here, clear of the open stream's id 1 (an in-flight id gets
/// `duplicate_id`).
const EVENT_IDS: u64 = 1 << 32;

/// The requests of one round, numbered from `first`: `count` times a chunk of stream 1 and
/// three events for the project `cwd` that no hook matches.
fn round(cwd: &str, first: u64, count: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for n in first..first + count {
        frame(
            &mut out,
            &json!({"type": "chunk", "id": 1, "seq": n, "llm_response": {"candidates": [
                {"content": {"role": "model", "parts": [format!("chunk {n}:\n\"text\" é")]},
                 "finishReason": null}]}}),
        );
        // A tool neither BeforeTool matcher matches.
        frame(
            &mut out,
            &json!({"type": "event", "id": format!("e{n}"), "event": "BeforeTool",
                    "cwd": cwd, "input": {"tool_name": "read_file",
                    "tool_input": {"path": "/srv/a.txt"}}, "session_id": "s"}),
        );
        // A trigger the SessionStart hook's matcher does not match, and an event with no
        // hook at all.
        frame(
            &mut out,
            &json!({"type": "event", "id": EVENT_IDS + n, "event": "SessionStart", "cwd": cwd,
                    "input": {"source": "startup"}}),
        );
        frame(
            &mut out,
            &json!({"type": "event", "id": EVENT_IDS + n, "event": "Notification", "cwd": cwd,
                    "input": {"notification_type": "ToolPermission", "message": "m"}}),
        );
    }
    out
}

/// Sends a round from a second thread (so neither side's socket buffer can block the other)
/// and checks every answer.
fn exchange(stream: &mut UnixStream, cwd: &str, first: u64, count: u64) {
    let requests = round(cwd, first, count);
    let mut writer = stream.try_clone().expect("clone");
    let sender = std::thread::spawn(move || writer.write_all(&requests).expect("write"));
    read_frames(stream, (count * 4) as usize, |n, answer| match n % 4 {
        0 => {
            assert_eq!(answer["type"], "chunk_result", "{answer}");
            assert_eq!(answer["seq"], first + n as u64 / 4, "{answer}");
            assert_eq!(answer["result"]["hooks"], json!([]), "{answer}");
        }
        _ => {
            assert_eq!(answer["type"], "result", "{answer}");
            assert_eq!(answer["hooks"], json!([]), "{answer}");
        }
    });
    sender.join().expect("sender");
}

#[test]
fn unhooked_chunks_and_events_allocate_nothing_in_the_daemon() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let home = root.join("home");
    let project = root.join("project");
    std::fs::create_dir_all(home.join(".gemini")).expect("home");
    std::fs::create_dir_all(project.join(".gemini")).expect("project");
    let settings = json!({"hooks": {
        "BeforeTool": [{"matcher": "run_shell_command", "hooks": [
            {"type": "command", "command": "true"}]},
            // A matcher that needs the (linear-time) regex engine.
            {"matcher": "^(write|edit)_\\w+$", "hooks": [
            {"type": "command", "command": "true"}]}],
        "SessionStart": [{"matcher": "resume", "hooks": [
            {"type": "command", "command": "true"}]}],
    }});
    std::fs::write(
        project.join(".gemini/settings.json"),
        serde_json::to_vec(&settings).expect("json"),
    )
    .expect("settings");
    let env: HashMap<String, String> = HashMap::from([
        ("HOME".to_owned(), home.display().to_string()),
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        (
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_owned(),
            root.join("etc/settings.json").display().to_string(),
        ),
        (
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH".to_owned(),
            root.join("etc/defaults.json").display().to_string(),
        ),
    ]);
    let socket = root.join("run/hookd.sock");
    let cancel = tokio_util::sync::CancellationToken::new();
    let daemon = {
        let socket = socket.clone();
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            COUNTED.with(|counted| counted.set(true));
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = hookd_server::bind_socket(&socket).await.expect("bind");
                let config = hookd_server::ServerConfig::new(env);
                hookd_server::run(listener, config, cancel)
                    .await
                    .expect("daemon");
            });
        })
    };

    let mut stream = connect(&socket);
    let mut hello = Vec::new();
    frame(
        &mut hello,
        &json!({"type": "hello", "protocol": 1, "client": "zero-alloc/1"}),
    );
    let cwd = project.display().to_string();
    frame(
        &mut hello,
        &json!({"type": "stream_open", "id": 1, "event": "AfterModel", "cwd": cwd,
                "input": {"llm_request": {"model": "m"}}}),
    );
    stream.write_all(&hello).expect("hello");
    assert_eq!(read_frame(&mut stream)["type"], "hello");
    let opened = read_frame(&mut stream);
    assert_eq!(opened["type"], "stream_opened", "{opened}");
    assert_eq!(opened["hooks"], 0);

    // Warm-up: buffers grow to their working size, match strings to the longest name.
    exchange(&mut stream, &cwd, 0, 2_000);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    const ROUND: u64 = 10_000;
    let started = Instant::now();
    exchange(&mut stream, &cwd, 2_000, ROUND);
    let elapsed = started.elapsed();
    let made = ALLOCATIONS.load(Ordering::Relaxed) - before;
    eprintln!(
        "{} requests ({ROUND} chunks, {} unmatched events) in {elapsed:?}: {made} allocations \
         in the daemon",
        ROUND * 4,
        ROUND * 3
    );
    assert_eq!(
        made,
        0,
        "the daemon allocated {made} times for {} unhooked requests",
        ROUND * 4
    );

    // The counter counts the daemon's thread: a request that does allocate is seen.
    let mut close = Vec::new();
    frame(&mut close, &json!({"type": "stream_close", "id": 1}));
    stream.write_all(&close).expect("close");
    assert_eq!(read_frame(&mut stream)["chunks"], 2_000 + ROUND);
    assert!(ALLOCATIONS.load(Ordering::Relaxed) > before);

    drop(stream);
    cancel.cancel();
    daemon.join().expect("daemon thread");
}

/// Connects once the daemon listens (readiness by connecting, with a deadline).
fn connect(socket: &Path) -> UnixStream {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match UnixStream::connect(socket) {
            Ok(stream) => return stream,
            Err(err) => {
                assert!(
                    Instant::now() < deadline,
                    "the daemon never listened: {err}"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
