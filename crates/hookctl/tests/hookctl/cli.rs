//! Runs the real `hookctl` binary against a daemon started in-process on a temp socket.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Fixture, run_hookctl};
use serde_json::Value;

const GATE: &str = r#"{
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "run_shell_command",
        "hooks": [
          {
            "name": "gate",
            "type": "command",
            "command": "grep -q 'rm -rf' && echo '{\"decision\":\"deny\",\"reason\":\"no rm -rf\"}' || echo '{\"decision\":\"allow\"}'"
          }
        ]
      }
    ]
  }
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emit_prints_exactly_the_six_keys_and_exits_two_on_deny() {
    let fixture = Fixture::start(GATE, None).await;
    let cwd = fixture.project.display().to_string();
    let output = fixture
        .hookctl(
            &["emit", "BeforeTool", "--input", "-", "--cwd", &cwd],
            r#"{"tool_name":"run_shell_command","tool_input":{"command":"rm -rf /"}}"#,
        )
        .await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    let keys: Vec<&str> = answer
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "success",
            "final_output",
            "all_outputs",
            "errors",
            "total_duration_ms",
            "hooks"
        ]
    );
    assert_eq!(answer["final_output"]["decision"], "deny");
    assert_eq!(answer["final_output"]["reason"], "no rm -rf");
    assert_eq!(answer["hooks"][0]["name"], "gate");
    assert_eq!(answer["hooks"][0]["source"], "project");

    // A harmless command is allowed; an event no hook matches answers success with no output.
    let output = fixture
        .hookctl(
            &["emit", "BeforeTool", "--input", "-", "--cwd", &cwd],
            r#"{"tool_name":"run_shell_command","tool_input":{"command":"ls"}}"#,
        )
        .await;
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["final_output"]["decision"], "allow");
    let output = fixture
        .hookctl(&["emit", "SessionEnd", "--cwd", &cwd], "")
        .await;
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["success"], true);
    assert_eq!(answer["final_output"], Value::Null);
    assert_eq!(answer["hooks"], Value::Array(Vec::new()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emit_fails_with_one_line_on_bad_input_unknown_event_or_no_daemon() {
    let fixture = Fixture::start(GATE, None).await;
    let cwd = fixture.project.display().to_string();

    let output = fixture
        .hookctl(
            &["emit", "BeforeTool", "--input", "-", "--cwd", &cwd],
            "[1]",
        )
        .await;
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("must be a JSON object"), "{stderr}");

    let output = fixture
        .hookctl(&["emit", "PreToolUse", "--cwd", &cwd], "")
        .await;
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unknown_event"), "{stderr}");
    assert!(output.stdout.is_empty());

    let missing = fixture.dir.path().join("nobody-here.sock");
    let output = tokio::task::spawn_blocking(move || {
        run_hookctl(&missing, &std::env::temp_dir(), &["ping".to_owned()], "")
    })
    .await
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].contains("cannot reach hookd") && lines[0].ends_with(": no socket there"),
        "{stderr}"
    );
    assert!(lines[1].contains("hookctl doctor"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_status_and_ping() {
    let fixture = Fixture::start(GATE, None).await;
    let cwd = fixture.project.display().to_string();

    let output = fixture.hookctl(&["list", "--cwd", &cwd], "").await;
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("BeforeTool:"), "{text}");
    assert!(text.contains("gate [enabled]"), "{text}");
    assert!(text.contains("Matcher: run_shell_command"), "{text}");
    assert!(text.contains("Timeout: 60000 ms"), "{text}");

    let output = fixture
        .hookctl(&["list", "--cwd", &cwd, "--json"], "")
        .await;
    let listing: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listing["hooks"][0]["name"], "gate");
    assert_eq!(listing["hooks"][0]["source"], "project");

    let output = fixture.hookctl(&["status", "--json"], "").await;
    assert!(output.status.success());
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["pid"].as_u64(), Some(u64::from(std::process::id())));
    assert!(status["max_hooks"].as_u64().unwrap() >= 1);

    let output = fixture.hookctl(&["ping"], "").await;
    assert!(output.status.success());
    assert!(
        String::from_utf8(output.stdout)
            .unwrap()
            .starts_with("pong")
    );
}
