//! `hookctl stats` against a real daemon after a known sequence of runs: every number it
//! reports is the one the sequence implies.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::Fixture;
use hookd_client::{Client, ConnectOptions, EventRequest};
use serde_json::{Value, json};

const SETTINGS: &str = r#"{"hooks":{
  "BeforeTool":[{"matcher":"run_shell_command","hooks":[{"name":"gate","type":"command",
    "command":"grep -q 'rm -rf' && echo '{\"decision\":\"deny\",\"reason\":\"no\"}' || echo '{\"decision\":\"allow\"}'"}]}],
  "AfterTool":[{"hooks":[{"name":"slow","type":"command","command":"exec sleep 30","timeout":150}]}]
}}"#;

async fn fire(client: &Client, fixture: &Fixture, event: &str, input: Value) {
    let mut request = EventRequest::new(event, fixture.project.display().to_string());
    request.input = serde_json::from_value(input).unwrap();
    client.event(request).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_match_a_known_sequence_of_runs() {
    let fixture = Fixture::start(SETTINGS, None).await;
    let client = Client::connect(&fixture.socket, ConnectOptions::new("stats-test/1"))
        .await
        .unwrap();
    let shell = |command: &str| json!({"tool_name": "run_shell_command", "tool_input": {"command": command}});
    for _ in 0..3 {
        fire(&client, &fixture, "BeforeTool", shell("ls")).await;
    }
    fire(&client, &fixture, "BeforeTool", shell("rm -rf /")).await;
    fire(
        &client,
        &fixture,
        "AfterTool",
        json!({"tool_name": "read_file"}),
    )
    .await;
    for _ in 0..2 {
        fire(
            &client,
            &fixture,
            "BeforeTool",
            json!({"tool_name": "read_file"}),
        )
        .await;
    }
    // One event relayed by Gemini CLI's relay: the project's Gemini settings are Gemini's own
    // to run, so it runs no hook in hookd, but it is counted as relayed.
    let socket = fixture.socket.clone();
    let project = fixture.project.clone();
    let relayed = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(["relay", "BeforeTool", "--socket"])
            .arg(&socket)
            .current_dir(&project)
            .env("XDG_STATE_HOME", socket.parent().unwrap().join("state"))
            .env_remove("HOOKD_RELAY_UNREACHABLE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let payload = json!({"hook_event_name": "BeforeTool", "session_id": "s",
            "transcript_path": "", "cwd": project, "timestamp": "2026-01-01T00:00:00.000Z",
            "tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(relayed.status.success(), "{relayed:?}");

    let output = fixture.hookctl(&["stats", "--json"], "").await;
    assert!(output.status.success(), "{output:?}");
    let stats: Value = serde_json::from_slice(&output.stdout).unwrap();

    assert_eq!(stats["events_served"], 8, "{stats:#}");
    let hooks = stats["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 2, "{stats:#}");
    let gate = &hooks[0];
    assert_eq!(
        (&gate["event"], &gate["name"], &gate["source"]),
        (&json!("BeforeTool"), &json!("gate"), &json!("project"))
    );
    assert_eq!(gate["runs"], 4);
    assert_eq!(gate["failures"], 0);
    assert_eq!(gate["timeouts"], 0);
    assert_eq!(gate["decisions"], json!({"allow": 3, "deny": 1}));
    assert_eq!(gate["last_error"], Value::Null);
    assert!(gate["p50_ms"].as_f64().unwrap() > 0.0);
    assert!(gate["p99_ms"].as_f64().unwrap() >= gate["p50_ms"].as_f64().unwrap());
    assert!(gate["max_ms"].as_f64().unwrap() >= gate["p99_ms"].as_f64().unwrap());

    let slow = &hooks[1];
    assert_eq!(
        (&slow["event"], &slow["name"]),
        (&json!("AfterTool"), &json!("slow"))
    );
    assert_eq!(slow["runs"], 1);
    assert_eq!(slow["failures"], 1);
    assert_eq!(slow["timeouts"], 1);
    assert_eq!(slow["failures_by_kind"], json!({"timed_out": 1}));
    assert!(
        slow["last_error"].as_str().unwrap().contains("150"),
        "{slow}"
    );
    assert!(slow["p50_ms"].as_f64().unwrap() >= 150.0, "{slow}");

    assert_eq!(
        stats["events"],
        json!([
            {"event": "BeforeTool", "runs": 4, "failed_runs": 0,
             "decisions": {"allow": 3, "deny": 1},
             "p50_ms": stats["events"][0]["p50_ms"], "p99_ms": stats["events"][0]["p99_ms"]},
            {"event": "AfterTool", "runs": 1, "failed_runs": 1, "decisions": {"none": 1},
             "p50_ms": stats["events"][1]["p50_ms"], "p99_ms": stats["events"][1]["p99_ms"]},
        ])
    );
    let clients = stats["clients"].as_array().unwrap();
    let ours = clients
        .iter()
        .find(|client| client["name"] == "stats-test/1")
        .unwrap();
    assert_eq!(
        ours,
        &json!({"name": "stats-test/1", "connections": 1, "connections_total": 1,
                "events": 7, "runs": 5})
    );
    let relay = clients
        .iter()
        .find(|client| {
            client["name"]
                .as_str()
                .unwrap()
                .starts_with("hookctl-relay/")
        })
        .unwrap();
    assert_eq!((&relay["events"], &relay["runs"]), (&json!(1), &json!(0)));
    assert_eq!(stats["relays"], json!([{"host": "gemini", "events": 1}]));

    let text = fixture.ok(&["stats"]).await;
    assert!(text.contains("gate (BeforeTool, project)"), "{text}");
    assert!(text.contains("failed: timed_out 1"), "{text}");
    assert!(text.contains("relayed events: gemini 1"), "{text}");
}
