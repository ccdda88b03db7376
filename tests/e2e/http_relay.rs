//! The loopback HTTP listener gives a host's HTTP hook the answer the command relay gives:
//! for each case the same Claude Code payload goes once through the real relay (a process, as
//! Claude Code runs a command hook) and once as Claude Code's HTTP hook posts it, and the
//! answers must mean the same (the relay's JSON on exit 0 is the HTTP body; its exit-2 block
//! is `decision: "block"` with the same reason, HTTP hooks having no exit code).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use hookd_testkit::{Daemon, DaemonOptions, HttpEndpoint, write_script};
use serde_json::{Value, json};

/// One script for every event: what it answers depends on the payload's text.
const HOOK: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
*'rm -rf'*) echo '{"decision":"deny","reason":"no rm -rf"}' ;;
*'git push'*) echo '{"decision":"ask","reason":"pushing: sure?"}' ;;
*'add context'*) echo '{"hookSpecificOutput":{"additionalContext":"from the hook"}}' ;;
*'a secret'*) echo '{"decision":"block","reason":"no secrets in prompts"}' ;;
*'make it fail'*) echo '{"decision":"block","reason":"the tool failed its check"}' ;;
*'"trigger":"manual"'*) echo '{"decision":"deny","reason":"not now"}' ;;
*'"stop_hook_active":false'*) echo '{"decision":"block","reason":"keep going"}' ;;
esac
exit 0
"#;

/// Runs the relay as Claude Code runs a command hook and returns its exit code, stdout and
/// stderr.
fn relay(daemon_socket: &Path, project: &Path, payload: &Value) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_e2e-relay"))
        .args([
            payload["hook_event_name"].as_str().expect("event"),
            "--dialect",
            "claude",
            "--socket",
        ])
        .arg(daemon_socket)
        .current_dir(project)
        .env("CLAUDE_PROJECT_DIR", project)
        .env_remove("HOOKD_SOCKET")
        .env_remove("HOOKD_RELAY_RETRY_MS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the relay starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(payload.to_string().as_bytes())
        .expect("payload");
    let output = child.wait_with_output().expect("the relay ends");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Posts the payload as Claude Code's HTTP hook does; returns the status and body.
fn post(endpoint: &HttpEndpoint, payload: &Value) -> (u16, String) {
    let mut stream = TcpStream::connect(endpoint.address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let body = payload.to_string();
    let request = format!(
        "POST /v1/hooks/claude/{} HTTP/1.1\r\nAccept: application/json, text/plain, */*\r\n\
         Content-Type: application/json\r\nAuthorization: Bearer {}\r\nUser-Agent: axios/1.15.2\r\n\
         Content-Length: {}\r\nHost: {}\r\nConnection: keep-alive\r\n\r\n{body}",
        payload["hook_event_name"].as_str().expect("event"),
        endpoint.secret,
        body.len(),
        endpoint.address
    );
    stream.write_all(request.as_bytes()).expect("write");
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).expect("header");
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("length");
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("body");
    (status, String::from_utf8(body).expect("utf-8"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_claude_answer_over_http_means_what_the_relays_means() {
    let hook = |event: &str| {
        json!({event: [{"hooks": [{"name": format!("h-{event}"), "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/hook.sh"}]}]})
    };
    let mut hooks = serde_json::Map::new();
    for event in [
        "BeforeTool",
        "AfterTool",
        "BeforeAgent",
        "AfterAgent",
        "PreCompress",
    ] {
        if let Value::Object(entry) = hook(event) {
            hooks.extend(entry);
        }
    }
    let options = DaemonOptions {
        files: vec![(
            "project/.hookd/hooks.json".into(),
            json!({"hooks": hooks}).to_string(),
        )],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with_http(json!({}), options).await;
    write_script(&daemon.project.join("hook.sh"), HOOK);
    let endpoint = daemon.http.clone().expect("an HTTP listener");
    let project = daemon.project.clone();
    let socket = daemon.socket.clone();
    let sub = project.join("sub");
    std::fs::create_dir_all(&sub).expect("sub");

    tokio::task::spawn_blocking(move || {
        let base = |event: &str| {
            json!({
                "session_id": "sess",
                "transcript_path": "/home/u/.claude/projects/-nowhere/sess.jsonl",
                // The model has moved the shell: the project comes from SessionStart.
                "cwd": sub.display().to_string(),
                "permission_mode": "default",
                "hook_event_name": event,
            })
        };
        let with = |event: &str, extra: Value| {
            let mut payload = base(event);
            if let (Some(payload), Value::Object(extra)) = (payload.as_object_mut(), extra) {
                payload.extend(extra);
            }
            payload
        };
        // SessionStart stays a command relay: it records the session's project and env.
        let (code, _, stderr) = relay(&socket, &project, &with("SessionStart", json!({"source": "startup"})));
        assert_eq!(code, 0, "{stderr}");

        let bash = |command: &str| {
            json!({"tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "t1"})
        };
        let cases = [
            with("PreToolUse", bash("rm -rf /")),
            with("PreToolUse", bash("git push")),
            with("PreToolUse", bash("add context; ls")),
            with("PreToolUse", bash("ls")),
            with("UserPromptSubmit", json!({"prompt": "here is a secret"})),
            with("UserPromptSubmit", json!({"prompt": "add context please"})),
            with("UserPromptSubmit", json!({"prompt": "hello"})),
            with(
                "PostToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "make it fail"},
                       "tool_response": {"stdout": "", "stderr": ""}, "tool_use_id": "t2"}),
            ),
            with("Stop", json!({"stop_hook_active": false, "last_assistant_message": "done"})),
            with("Stop", json!({"stop_hook_active": true, "last_assistant_message": "done"})),
            with("PreCompact", json!({"trigger": "manual", "custom_instructions": ""})),
            with("PreCompact", json!({"trigger": "auto", "custom_instructions": ""})),
        ];
        let mut blocks = 0;
        let mut exit_two = 0;
        for payload in cases {
            let (code, stdout, stderr) = relay(&socket, &project, &payload);
            let (status, body) = post(&endpoint, &payload);
            assert_eq!(status, 200, "{payload}: {body}");
            let over_http: Value = serde_json::from_str(&body).expect("JSON");
            let expected = match code {
                0 if stdout.trim().is_empty() => json!({}),
                0 => serde_json::from_str(stdout.trim()).expect("the relay's JSON"),
                2 => {
                    exit_two += 1;
                    json!({"decision": "block", "reason": stderr.trim()})
                }
                other => panic!("the relay exited {other}: {stderr}"),
            };
            assert_eq!(over_http, expected, "{payload}");
            if over_http != json!({}) {
                blocks += usize::from(
                    over_http["decision"] == "block"
                        || over_http["hookSpecificOutput"]["permissionDecision"] == "deny",
                );
            }
        }
        // The cases did decide something (a test whose hooks never answer proves nothing).
        assert!(blocks >= 5, "{blocks}");
        // PreCompact's block is the relay's exit 2, turned into JSON for HTTP.
        assert_eq!(exit_two, 1);
    })
    .await
    .expect("the cases");
    daemon.stop().await;
}
