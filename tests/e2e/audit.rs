//! The audit log through the real daemon: every event run that had hooks to run leaves one
//! JSON line with each hook's name, layer, decision, exit code, duration, outcome and failure,
//! and the final decision (each chunk of a hooked AfterModel stream is a run of its own); events
//! no hook matched leave none; the hooks' stdin stays out
//! unless asked for; the files are private and rotate by size; `status` counts the lines; and
//! a daemon told to keep a log it cannot open does not start.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookd_client::{EventRequest, StreamRequest};
use hookd_server::{AuditConfig, ServerConfig};
use hookd_testkit::{
    Daemon, DaemonOptions, command_hook, fire_request, input, settings, wait_until, within,
};
use serde_json::{Value, json};

/// Where the test daemons write their audit log: next to their home directory, which exists
/// before the daemon starts.
fn audit_path(config: &ServerConfig) -> PathBuf {
    config.home.join("audit.log")
}

/// Starts a daemon with `project_settings` and an audit log adjusted by `adjust`; returns it
/// with the log's path.
async fn daemon_with_audit(
    project_settings: Value,
    adjust: impl FnOnce(&mut AuditConfig) + Send + 'static,
) -> (Daemon, PathBuf) {
    let options = DaemonOptions {
        configure: Box::new(move |config: &mut ServerConfig| {
            let mut audit = AuditConfig::new(audit_path(config));
            adjust(&mut audit);
            config.audit = Some(audit);
        }),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(project_settings, options).await;
    let path = daemon.home.join("audit.log");
    (daemon, path)
}

/// The lines of the log at `path` (missing file: none), parsed.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every audit line is JSON"))
        .collect()
}

/// Waits until the log at `path` holds `count` lines and returns them.
async fn wait_for_lines(path: &Path, count: usize) -> Vec<Value> {
    wait_until(
        &format!("{count} audit lines in {}", path.display()),
        Duration::from_secs(20),
        || lines(path).len() >= count,
    )
    .await;
    lines(path)
}

/// Waits until `status` says the audit log has written `count` lines.
async fn wait_for_written(client: &hookd_client::Client, count: u64) {
    within(
        "the audit lines being written",
        Duration::from_secs(20),
        async {
            loop {
                let status = client.status().await.expect("status");
                if status.audit.expect("audit status").lines_written >= count {
                    return;
                }
                // Polling a condition the test observes, as `wait_until` does.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
}

/// Fires `event` for the daemon's project with `fields` as input and `session` as session id.
async fn fire_as(daemon: &Daemon, session: &str, event: &str, fields: Value) {
    let client = daemon.client().await;
    let mut request = EventRequest::new(event, daemon.cwd()).with_input(input(fields));
    request.session_id = session.to_owned();
    fire_request(&client, request).await;
}

/// Drops the fields that vary from run to run (time, durations), checking their shape first.
fn without_timings(mut line: Value) -> Value {
    let time = line["time"].as_str().expect("time is a string").to_owned();
    assert!(
        time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "time {time}"
    );
    line.as_object_mut().expect("object").remove("time");
    for hook in line["hooks"].as_array_mut().expect("hooks array") {
        assert!(
            hook["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
            "{hook}"
        );
        hook.as_object_mut().expect("object").remove("duration_ms");
    }
    line
}

/// The settings of the main test: a gate that denies, a quiet hook next to it, a gate that
/// times out under `on_failure: deny`, and an AfterAgent hook.
fn audited_settings() -> Value {
    let mut slow = command_hook("slow-gate", "sleep 30");
    slow["timeout"] = json!(300);
    slow["on_failure"] = json!("deny");
    settings(&[
        (
            "BeforeTool",
            Some("^run_shell_command$"),
            vec![
                command_hook(
                    "guard",
                    r#"cat >/dev/null; echo '{"decision":"deny","reason":"no rm here"}'"#,
                ),
                command_hook("quiet", "cat >/dev/null"),
            ],
        ),
        ("BeforeTool", Some("^slow_tool$"), vec![slow]),
        ("AfterAgent", None, vec![command_hook("after", "exit 1")]),
    ])
}

#[tokio::test]
async fn each_event_run_with_hooks_leaves_one_line_without_the_hooks_stdin() {
    let (daemon, path) = daemon_with_audit(audited_settings(), |_| {}).await;
    let cwd = daemon.cwd();
    let secret_command = "rm -rf build --token=hunter2-secret";
    fire_as(
        &daemon,
        "sess-1",
        "BeforeTool",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": secret_command}}),
    )
    .await;
    // No hook matches: no line.
    fire_as(
        &daemon,
        "sess-1",
        "BeforeTool",
        json!({"tool_name": "read_file"}),
    )
    .await;
    fire_as(
        &daemon,
        "sess-2",
        "BeforeTool",
        json!({"tool_name": "slow_tool"}),
    )
    .await;
    fire_as(
        &daemon,
        "sess-2",
        "AfterAgent",
        json!({"prompt": "my secret prompt", "prompt_response": "ok"}),
    )
    .await;

    let found = wait_for_lines(&path, 3).await;
    let found: Vec<Value> = found.into_iter().map(without_timings).collect();
    // The registry may be rebuilt between events (when its watches are set up), so each line
    // names the generation its event ran against.
    let generation = |n: usize| {
        let generation = found[n]["generation"].clone();
        assert!(generation.as_u64().is_some(), "{}", found[n]);
        generation
    };
    let expected = vec![
        json!({
            "event": "BeforeTool", "session_id": "sess-1", "cwd": cwd,
            "tool_name": "run_shell_command", "generation": generation(0),
            "hooks": [
                {"name": "guard", "source": "project", "decision": "deny", "exit_code": 0,
                 "outcome": "exited", "failure": null, "success": true},
                {"name": "quiet", "source": "project", "decision": null, "exit_code": 0,
                 "outcome": "exited", "failure": null, "success": true},
            ],
            "decision": "deny", "continue": true, "success": true,
        }),
        json!({
            "event": "BeforeTool", "session_id": "sess-2", "cwd": cwd,
            "tool_name": "slow_tool", "generation": generation(1),
            "hooks": [
                {"name": "slow-gate", "source": "project", "decision": "deny",
                 "exit_code": null, "outcome": "timed_out", "failure": "timed_out",
                 "success": false},
            ],
            "decision": "deny", "continue": true, "success": false,
        }),
        json!({
            "event": "AfterAgent", "session_id": "sess-2", "cwd": cwd,
            "generation": generation(2),
            "hooks": [
                {"name": "after", "source": "project", "decision": null, "exit_code": 1,
                 "outcome": "exited", "failure": "exited_without_decision", "success": false},
            ],
            "decision": null, "continue": null, "success": true,
        }),
    ];
    assert_eq!(found, expected);

    let text = std::fs::read_to_string(&path).expect("audit log");
    for secret in ["hunter2-secret", "my secret prompt", "tool_input", "stdin"] {
        assert!(!text.contains(secret), "the log leaks {secret:?}:\n{text}");
    }
    let mode = std::fs::metadata(&path).expect("log").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let status = daemon.client().await.status().await.expect("status");
    let audit = status.audit.expect("status reports the audit log");
    assert_eq!(audit.path, path.display().to_string());
    assert_eq!(
        (audit.lines_written, audit.lines_dropped, audit.write_errors),
        (3, 0, 0)
    );
    daemon.stop().await;
}

#[tokio::test]
async fn stdin_is_logged_only_when_asked_for() {
    let project = settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("quiet", "cat >/dev/null")],
    )]);
    let (daemon, path) = daemon_with_audit(project, |audit| audit.include_stdin = true).await;
    fire_as(
        &daemon,
        "sess-3",
        "BeforeTool",
        json!({"tool_name": "write_file", "tool_input": {"file_path": "/tmp/x"}}),
    )
    .await;
    let found = wait_for_lines(&path, 1).await;
    let stdin = &found[0]["stdin"];
    assert_eq!(stdin["session_id"], "sess-3", "{stdin}");
    assert_eq!(stdin["hook_event_name"], "BeforeTool", "{stdin}");
    assert_eq!(stdin["cwd"], daemon.cwd(), "{stdin}");
    assert_eq!(
        stdin["tool_input"],
        json!({"file_path": "/tmp/x"}),
        "{stdin}"
    );
    daemon.stop().await;
}

/// A model response chunk whose text is `text`.
fn model_chunk(text: &str) -> serde_json::Map<String, Value> {
    json!({"candidates": [{"content": {"role": "model", "parts": [text]}}]})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn every_chunk_of_a_hooked_stream_leaves_one_line() {
    // One stream with a command hook (run by the stream's task) and one of builtin filters
    // only (answered by the read loop): each chunk is one run, audited like an event.
    let redact = json!({"type": "builtin", "builtin": "redact", "name": "redact",
                        "default_patterns": false, "holdback": 16,
                        "patterns": [{"name": "ticket", "regex": "TCK-[0-9]+"}]});
    let project = settings(&[(
        "AfterModel",
        None,
        vec![command_hook(
            "shout",
            r#"cat >/dev/null; echo '{"content":"X"}'"#,
        )],
    )]);
    let (daemon, path) = daemon_with_audit(project, |audit| audit.include_stdin = true).await;
    let client = daemon.client().await;
    let mut request = StreamRequest::new(daemon.cwd());
    request.session_id = "sess-stream".to_owned();
    let mut stream = client.open_stream(request).await.expect("open");
    for text in ["one", "two"] {
        stream.send_chunk(model_chunk(text)).await.expect("send");
    }
    let end = within("close", Duration::from_secs(30), stream.close())
        .await
        .expect("close");
    assert_eq!(end.results.len(), 2);

    let found = wait_for_lines(&path, 2).await;
    assert_eq!(found.len(), 2);
    for (line, text) in found.iter().zip(["one", "two"]) {
        assert_eq!(line["event"], "AfterModel", "{line}");
        assert_eq!(line["session_id"], "sess-stream", "{line}");
        assert_eq!(line["hooks"][0]["name"], "shout", "{line}");
        assert_eq!(line["hooks"][0]["outcome"], "exited", "{line}");
        // The stdin the hook read for this chunk.
        assert_eq!(line["stdin"]["content"], text, "{line}");
    }
    // The second chunk's hook saw the first one's replacement as the text so far.
    assert_eq!(found[1]["stdin"]["full_content"], "Xtwo");

    daemon.stop().await;

    // A filter-only stream: the read loop audits its chunks too.
    let filters = settings(&[("AfterModel", None, vec![redact])]);
    let (daemon, path) = daemon_with_audit(filters, |audit| audit.include_stdin = true).await;
    let client = daemon.client().await;
    let mut stream = client
        .open_stream(StreamRequest::new(daemon.cwd()))
        .await
        .expect("open");
    assert_eq!(stream.hooks(), 1);
    stream
        .send_chunk(model_chunk("see TCK-42 and the rest of the sentence"))
        .await
        .expect("send");
    within("close", Duration::from_secs(30), stream.close())
        .await
        .expect("close");
    let found = wait_for_lines(&path, 1).await;
    assert_eq!(found.len(), 1);
    let line = &found[0];
    assert_eq!(line["event"], "AfterModel", "{line}");
    assert_eq!(line["hooks"][0]["name"], "redact", "{line}");
    // What the filter let out of this chunk (the window's tail comes out at the close).
    let content = line["stdin"]["content"].as_str().expect("content");
    assert!(content.starts_with("see [REDACTED:ticket]"), "{line}");
    daemon.stop().await;
}

#[tokio::test]
async fn the_log_rotates_by_size_and_keeps_the_newest_files() {
    let project = settings(&[("Notification", None, vec![command_hook("n", "true")])]);
    // A line is about 260 bytes: two fit in a file.
    let (daemon, path) = daemon_with_audit(project, |audit| {
        audit.max_bytes = 600;
        audit.keep = 2;
    })
    .await;
    let client = daemon.client().await;
    for n in 0..9 {
        let request = EventRequest::new("Notification", daemon.cwd())
            .with_input(input(json!({"message": format!("note {n}")})));
        fire_request(&client, request).await;
    }
    wait_for_written(&client, 9).await;

    let rotated = |n: usize| PathBuf::from(format!("{}.{n}", path.display()));
    let files = [path.clone(), rotated(1), rotated(2)];
    let mut total = 0;
    for file in &files {
        let size = std::fs::metadata(file).expect("log file").len();
        assert!(size <= 600, "{} is {size} bytes", file.display());
        total += lines(file).len();
        let mode = std::fs::metadata(file).expect("log").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
    assert!(!rotated(3).exists(), "only two rotated files are kept");
    // The newest lines are in the current file, the oldest kept ones in `.2`; the first
    // files' lines are gone.
    assert!(total < 9, "older files were removed");
    assert_eq!(
        lines(&path).last().expect("a line")["event"],
        "Notification"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_daemon_whose_audit_log_cannot_be_opened_does_not_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("run/hookd.sock");
    let listener = hookd_server::bind_socket(&socket).await.expect("bind");
    let mut config = ServerConfig::new(
        [("HOME".to_owned(), dir.path().display().to_string())]
            .into_iter()
            .collect(),
    );
    // A missing directory is created (mode 0700); one that is a regular file cannot be.
    std::fs::write(dir.path().join("not-a-dir"), "").expect("write");
    config.audit = Some(AuditConfig::new(dir.path().join("not-a-dir/audit.log")));
    let result =
        hookd_server::run(listener, config, tokio_util::sync::CancellationToken::new()).await;
    let error = result.expect_err("the daemon refuses to start");
    assert!(error.to_string().contains("not-a-dir/audit.log"), "{error}");
}
