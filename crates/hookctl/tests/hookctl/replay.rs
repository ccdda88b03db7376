//! `hookctl replay` against a real daemon that keeps an audit log with the hooks' payloads:
//! replaying the log reproduces its decisions, and after a settings change it flags the one
//! that changed; plain payload lines replay too.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::Fixture;
use hookd_client::{Client, ConnectOptions, EventRequest};
use serde_json::{Value, json};

/// Denies `rm -rf`, allows the rest.
const GATE: &str = r#"{"hooks":{"BeforeTool":[{"matcher":"run_shell_command","hooks":[
  {"name":"gate","type":"command",
   "command":"grep -q 'rm -rf' && echo '{\"decision\":\"deny\",\"reason\":\"no\"}' || echo '{\"decision\":\"allow\"}'"}]}]}}"#;

/// Allows everything.
const LENIENT: &str = r#"{"hooks":{"BeforeTool":[{"matcher":"run_shell_command","hooks":[
  {"name":"gate","type":"command","command":"cat >/dev/null; echo '{\"decision\":\"allow\"}'"}]}]}}"#;

/// Starts the daemon of `fixture`, writing an audit log with payloads; returns the log path.
async fn serve_with_audit(fixture: &Fixture) -> std::path::PathBuf {
    let log = fixture.dir.path().join("audit/audit.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let mut audit = hookd_server::AuditConfig::new(&log);
    audit.include_stdin = true;
    fixture
        .serve_with(move |config| config.audit = Some(audit))
        .await;
    log
}

/// Polls until `path` has `lines` lines.
async fn wait_for_lines(path: &std::path::Path, lines: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= lines {
            return;
        }
        assert!(Instant::now() < deadline, "the audit log has {text:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_an_audit_log_reproduces_its_decisions_and_flags_a_changed_one() {
    let fixture = Fixture::prepare(GATE, None);
    let log = serve_with_audit(&fixture).await;
    let client = Client::connect(&fixture.socket, ConnectOptions::default())
        .await
        .unwrap();
    for command in ["ls", "rm -rf /", "make"] {
        let mut request = EventRequest::new("BeforeTool", fixture.project.display().to_string());
        request.input = serde_json::from_value(
            json!({"tool_name": "run_shell_command", "tool_input": {"command": command}}),
        )
        .unwrap();
        client.event(request).await.unwrap();
    }
    wait_for_lines(&log, 3).await;
    let recorded = fixture.dir.path().join("recorded.log");
    std::fs::copy(&log, &recorded).unwrap();
    let recorded = recorded.display().to_string();

    let same = fixture.hookctl(&["replay", &recorded], "").await;
    let text = String::from_utf8(same.stdout.clone()).unwrap();
    assert_eq!(same.status.code(), Some(0), "{same:?}");
    assert_eq!(text.matches(": same: ").count(), 3, "{text}");
    assert!(text.contains("same: deny (gate=deny)"), "{text}");
    assert!(
        text.ends_with("3 events replayed, 0 with a different decision, 0 lines skipped\n"),
        "{text}"
    );

    // The gate is loosened: the recorded deny is now an allow.
    std::fs::write(fixture.project.join(".gemini/settings.json"), LENIENT).unwrap();
    client.reload().await.unwrap();
    let changed = fixture.hookctl(&["replay", &recorded, "--json"], "").await;
    assert_eq!(changed.status.code(), Some(1), "{changed:?}");
    let lines: Vec<Value> = String::from_utf8(changed.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(
        lines[1],
        json!({"line": 2, "event": "BeforeTool", "tool_name": "run_shell_command",
               "recorded": "deny", "now": "allow", "differs": true,
               "hooks": [["gate", "allow"]]})
    );
    assert_eq!(lines[0]["differs"], false);
    assert_eq!(lines[3], json!({"replayed": 3, "differ": 1, "skipped": 0}));

    let text = fixture
        .hookctl(&["replay", &recorded, "--only-differences"], "")
        .await;
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with("line 2: BeforeTool run_shell_command: DIFFERS: recorded deny, now allow\n  recorded: gate=deny\n  now:      gate=allow\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_payload_lines_from_stdin_runs_their_hooks() {
    let fixture = Fixture::start(GATE, None).await;
    let project = fixture.project.display().to_string();
    let payloads = [
        json!({"hook_event_name": "BeforeTool", "cwd": project, "tool_name": "run_shell_command",
               "tool_input": {"command": "rm -rf /"}}),
        json!({"hook_event_name": "BeforeTool", "cwd": project, "tool_name": "run_shell_command",
               "tool_input": {"command": "ls"}, "decision": "deny"}),
        json!({"tool_name": "no event name"}),
    ];
    let input: String = payloads.iter().map(|p| format!("{p}\n")).collect();
    let output = fixture.hookctl(&["replay", "-"], &input).await;
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        text.contains("line 1: BeforeTool run_shell_command: deny (gate=deny)"),
        "{text}"
    );
    assert!(
        text.contains("line 2: BeforeTool run_shell_command: DIFFERS: recorded deny, now allow"),
        "{text}"
    );
    assert!(
        text.ends_with("2 events replayed, 1 with a different decision, 1 lines skipped\n"),
        "{text}"
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("line 3 skipped: no hook_event_name"),
        "{stderr}"
    );
}
