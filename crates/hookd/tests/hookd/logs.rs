//! The real `hookd` binary's log: one `info` line per event that ran hooks, with every field,
//! one per stream when it ends (not one per chunk), and a `warn` line per hook that failed
//! (here, one that timed out and was killed); the client's name is in them and in `status`.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hookd_client::{Client, ConnectOptions, EventRequest};
use hookd_testkit::{DaemonProcess, KillOnDrop};
use serde_json::json;

/// How long any single condition may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// A hookd process logging at `info` to a file, with a home and a project of its own.
struct Daemon {
    /// Declared first, so the process is killed before its temp dir goes.
    _child: KillOnDrop,
    fixture: DaemonProcess,
    log: PathBuf,
}

impl Daemon {
    /// Starts hookd with `settings` as the project's settings.
    fn start(settings: serde_json::Value) -> Daemon {
        let fixture = DaemonProcess::prepare(None);
        let dir = &fixture.dir;
        let project = &fixture.project;
        std::fs::create_dir_all(project.join(".gemini")).unwrap();
        std::fs::write(
            project.join(".gemini/settings.json"),
            settings
                .to_string()
                .replace("$DIR", &dir.path().display().to_string()),
        )
        .unwrap();
        let log = dir.path().join("hookd.log");
        let child = fixture.spawn(
            fixture
                .hookd(env!("CARGO_BIN_EXE_hookd"))
                .args(["--log-level", "info"])
                .stderr(std::fs::File::create(&log).unwrap()),
        );
        Daemon {
            _child: child,
            fixture,
            log,
        }
    }

    fn project(&self) -> String {
        self.fixture.project.display().to_string()
    }

    /// Connects as `name`, retrying until the daemon listens.
    async fn client(&self, name: &str) -> Client {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match Client::connect(&self.fixture.socket, ConnectOptions::new(name)).await {
                Ok(client) => return client,
                Err(err) => {
                    assert!(Instant::now() < deadline, "hookd never answered: {err}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }

    /// Waits for a log line that contains every one of `parts`, and returns it.
    async fn line_with(&self, parts: &[&str]) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(line) = text
                .lines()
                .find(|line| parts.iter().all(|part| line.contains(part)))
            {
                return line.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no log line with {parts:?}; the log:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Writes an executable script into `dir` and returns its path.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn hooks(definitions: serde_json::Value) -> serde_json::Value {
    json!({ "hooks": { "BeforeTool": [ { "matcher": "run_shell_command", "hooks": definitions } ] } })
}

#[tokio::test]
async fn a_hooked_event_logs_one_info_line_with_every_field() {
    let scripts = tempfile::tempdir().unwrap();
    let gate = script(
        scripts.path(),
        "gate.sh",
        r#"cat >/dev/null; echo '{"decision":"deny","reason":"no"}'"#,
    );
    let quiet = script(scripts.path(), "quiet.sh", "cat >/dev/null; exit 0");
    let daemon = Daemon::start(hooks(json!([
        {"name": "gate", "type": "command", "command": gate},
        {"name": "quiet", "type": "command", "command": quiet},
    ])));
    let client = daemon.client("log-test/7").await;
    let mut request = EventRequest::new("BeforeTool", daemon.project());
    request.input = serde_json::from_value(
        json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
    )
    .unwrap();
    let answer = client.event(request).await.unwrap();
    assert_eq!(answer.result.final_output.unwrap()["decision"], "deny");

    let line = daemon.line_with(&["event ran hooks", "log-test/7"]).await;
    for part in [
        " INFO ",
        "hookd::run",
        "event=\"BeforeTool\"",
        "tool=\"run_shell_command\"",
        "relayed_by=\"-\"",
        &format!("project=\"{}\"", daemon.project()),
        "gate=deny/",
        "quiet=ok/",
        "decision=\"deny\"",
        "success=true",
        "total=",
    ] {
        assert!(line.contains(part), "{part:?} missing from {line}");
    }

    // An event no hook matches is not logged at info.
    let mut request = EventRequest::new("BeforeTool", daemon.project());
    request.input = serde_json::from_value(json!({"tool_name": "read_file"})).unwrap();
    client.event(request).await.unwrap();
    let status = client.status().await.unwrap();
    assert!(
        status
            .clients
            .iter()
            .any(|entry| entry.name == "log-test/7" && entry.connections == 1),
        "{:?}",
        status.clients
    );
    let text = std::fs::read_to_string(&daemon.log).unwrap();
    assert_eq!(text.matches("event ran hooks").count(), 1, "{text}");
}

#[tokio::test]
async fn a_timed_out_hook_logs_a_warn_line() {
    let scripts = tempfile::tempdir().unwrap();
    let slow = script(scripts.path(), "slow.sh", "cat >/dev/null; exec sleep 30");
    let daemon = Daemon::start(hooks(json!([
        {"name": "slow", "type": "command", "command": slow, "timeout": 200},
    ])));
    let client = daemon.client("log-test/timeout").await;
    let mut request = EventRequest::new("BeforeTool", daemon.project());
    request.input = serde_json::from_value(json!({"tool_name": "run_shell_command"})).unwrap();
    client.event(request).await.unwrap();
    let line = daemon.line_with(&["hook failed", "slow"]).await;
    for part in [
        " WARN ",
        "client=\"log-test/timeout\"",
        "hook=\"slow\"",
        "source=\"project\"",
        "failure=\"timed_out\"",
        "outcome=\"timed_out\"",
    ] {
        assert!(line.contains(part), "{part:?} missing from {line}");
    }
    let line = daemon.line_with(&["event ran hooks"]).await;
    assert!(line.contains("slow=timed_out/"), "{line}");
}

#[tokio::test]
async fn a_stream_logs_one_info_line_when_it_ends_not_one_per_chunk() {
    let daemon = Daemon::start(json!({"hooks": {"AfterModel": [{"hooks": [
        {"name": "redact", "type": "builtin", "builtin": "redact"}
    ]}]}}));
    let client = daemon.client("log-test/stream").await;
    let mut stream = client
        .open_stream(hookd_client::StreamRequest::new(daemon.project()))
        .await
        .unwrap();
    for n in 0..3 {
        let chunk = json!({"candidates": [{"content": {"parts": [format!("chunk {n} ")]}}]});
        stream
            .send_chunk(chunk.as_object().cloned().unwrap())
            .await
            .unwrap();
        stream.next_result().await.unwrap().unwrap();
    }
    stream.close().await.unwrap();

    let line = daemon
        .line_with(&["stream ran hooks", "log-test/stream"])
        .await;
    for part in [
        " INFO ",
        "hookd::run",
        "event=\"AfterModel\"",
        &format!("project=\"{}\"", daemon.project()),
        "chunks=3",
        "hooks=\"redact=ok/",
        "decision=\"none\"",
        "failed_chunks=0",
        "total=",
    ] {
        assert!(line.contains(part), "{part:?} missing from {line}");
    }
    let text = std::fs::read_to_string(&daemon.log).unwrap();
    assert_eq!(text.matches("stream ran hooks").count(), 1, "{text}");
    assert_eq!(text.matches("event ran hooks").count(), 0, "{text}");
}
