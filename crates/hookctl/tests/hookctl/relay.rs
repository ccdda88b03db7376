//! `hookctl relay` driven exactly as its hosts drive a command hook: the event's JSON on stdin,
//! the host's environment and working directory, and the exit code, stdout and stderr read
//! back. A real daemon runs real hook scripts for every event of Gemini CLI and Claude Code;
//! when the daemon cannot answer, both policies answer within seconds.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::Fixture;
use hookd_testkit::Hermetic;
use serde_json::{Value, json};

/// One relay run: what the host would see, and how long it took.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not JSON ({err}): {:?}", self.stdout))
    }
}

/// How the host runs the relay.
struct Host<'a> {
    socket: &'a Path,
    cwd: &'a Path,
    env: Vec<(&'a str, String)>,
}

impl Host<'_> {
    /// Runs `hookctl relay <args>` with `payload` on stdin, off the async runtime.
    async fn relay(&self, args: &[&str], payload: &Value) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookctl"));
        command
            .arg("relay")
            .args(args)
            .arg("--socket")
            .arg(self.socket)
            .current_dir(self.cwd)
            .env_remove("HOOKD_SOCKET")
            .env_remove("HOOKD_RELAY_UNREACHABLE")
            .env_remove("HOOKD_RELAY_RETRY_MS")
            .env_remove("GEMINI_PROJECT_DIR")
            .env_remove("CLAUDE_PROJECT_DIR")
            // The relay log and its "daemon down" mark go next to the socket.
            .env("XDG_STATE_HOME", state_dir(self.socket))
            // Run inside GitHub Actions, the host's environment would be redacted for its
            // hooks (strict mode), and the marks these tests pass would not reach them.
            .env_remove("GITHUB_SHA")
            .env_remove("SURFACE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in &self.env {
            command.env(name, value);
        }
        let stdin = payload.to_string();
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let mut child = command.spawn().unwrap();
            let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
            let output: Output = child.wait_with_output().unwrap();
            Run {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8(output.stdout).unwrap(),
                stderr: String::from_utf8(output.stderr).unwrap(),
                elapsed: started.elapsed(),
            }
        })
        .await
        .unwrap()
    }
}

/// Where the relays of a test keep their log: next to the socket.
fn state_dir(socket: &Path) -> PathBuf {
    socket.parent().unwrap().join("state")
}

/// The relay log written for `socket`'s relays ("" when there is none).
fn relay_log(socket: &Path) -> String {
    std::fs::read_to_string(state_dir(socket).join("hookd/relay.log")).unwrap_or_default()
}

/// Writes an executable bash script and returns its path.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A `hooks` settings object with one command hook per `(event, matcher, command)`.
fn settings(hooks: &[(&str, Option<&str>, String)]) -> String {
    let mut object = serde_json::Map::new();
    for (event, matcher, command) in hooks {
        let mut definition = json!({"hooks": [{"type": "command", "command": command}]});
        if let Some(matcher) = matcher {
            definition["matcher"] = json!(matcher);
        }
        object
            .entry(event.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .unwrap()
            .push(definition);
    }
    json!({ "hooks": object }).to_string()
}

/// The lines of a file (none when it does not exist).
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A request for the model, as Gemini CLI sends it to model hooks.
fn llm_request() -> Value {
    json!({"model": "gemini-2.5-pro", "messages": [{"role": "user", "content": "hi"}]})
}

/// Gemini CLI's payload for `event` (spec §4.4).
/// A daemon whose hooks are in hookd's own files, where `hookctl install` puts them: for an
/// event a host relays, hookd skips the hooks of the files that host runs itself.
async fn start_with_hookd_files(project_settings: &str, user_settings: Option<&str>) -> Fixture {
    let fixture = prepare_with_hookd_files(project_settings, user_settings);
    fixture.serve().await;
    fixture
}

/// [`start_with_hookd_files`] with no daemon yet.
fn prepare_with_hookd_files(project_settings: &str, user_settings: Option<&str>) -> Fixture {
    let fixture = Fixture::prepare(project_settings, user_settings);
    let hookd_project = fixture.project.join(".hookd");
    std::fs::create_dir_all(&hookd_project).unwrap();
    std::fs::rename(
        fixture.project.join(".gemini/settings.json"),
        hookd_project.join("hooks.json"),
    )
    .unwrap();
    let gemini_user = fixture.home.join(".gemini/settings.json");
    if gemini_user.exists() {
        let hookd_user = fixture.home.join(".config/hookd");
        std::fs::create_dir_all(&hookd_user).unwrap();
        std::fs::rename(gemini_user, hookd_user.join("hooks.json")).unwrap();
    }
    fixture
}

fn gemini_payload(event: &str, cwd: &Path) -> Value {
    let mut payload = json!({
        "session_id": "sess-1",
        "transcript_path": "/srv/transcripts/sess-1.json",
        "cwd": cwd.display().to_string(),
        "hook_event_name": event,
        "timestamp": "2026-01-01T00:00:00.000Z",
    });
    let fields = match event {
        "BeforeTool" => json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
        "AfterTool" => json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"},
                             "tool_response": {"llmContent": "a b", "returnDisplay": "a b"}}),
        "BeforeAgent" => json!({"prompt": "hello"}),
        "AfterAgent" => {
            json!({"prompt": "hello", "prompt_response": "hi", "stop_hook_active": false})
        }
        "Notification" => json!({"notification_type": "ToolPermission",
                                "message": "Tool Shell requires execution",
                                "details": {"type": "exec", "title": "Shell"}}),
        "SessionStart" => json!({"source": "startup"}),
        "SessionEnd" => json!({"reason": "exit"}),
        "PreCompress" => json!({"trigger": "auto"}),
        "BeforeModel" | "BeforeToolSelection" => json!({"llm_request": llm_request()}),
        "AfterModel" => json!({"llm_request": llm_request(),
                              "llm_response": {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}}]}}),
        other => panic!("no payload for {other}"),
    };
    for (key, value) in fields.as_object().unwrap() {
        payload[key] = value.clone();
    }
    payload
}

/// Claude Code's payload for `event`.
fn claude_payload(event: &str, cwd: &Path) -> Value {
    let mut payload = json!({
        "session_id": "sess-2",
        "transcript_path": "/srv/transcripts/sess-2.jsonl",
        "cwd": cwd.display().to_string(),
        "hook_event_name": event,
        "permission_mode": "default",
    });
    let fields = match event {
        "PreToolUse" => json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}),
        "PostToolUse" => json!({"tool_name": "Bash", "tool_input": {"command": "ls"},
                               "tool_response": {"stdout": "a b", "stderr": ""}}),
        "UserPromptSubmit" => json!({"prompt": "hello"}),
        "Stop" | "SubagentStop" => json!({"stop_hook_active": false}),
        "SessionStart" => json!({"source": "startup"}),
        "SessionEnd" => json!({"reason": "logout"}),
        "PreCompact" => json!({"trigger": "manual", "custom_instructions": ""}),
        "Notification" => json!({"message": "Claude needs your permission to use Bash",
                                "notification_type": "permission_prompt"}),
        other => panic!("no payload for {other}"),
    };
    for (key, value) in fields.as_object().unwrap() {
        payload[key] = value.clone();
    }
    payload
}

const GEMINI_EVENTS: [&str; 11] = [
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "Notification",
    "AfterAgent",
    "SessionStart",
    "SessionEnd",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
];

const CLAUDE_EVENTS: [(&str, &str); 9] = [
    ("PreToolUse", "BeforeTool"),
    ("PostToolUse", "AfterTool"),
    ("UserPromptSubmit", "BeforeAgent"),
    ("Stop", "AfterAgent"),
    ("SubagentStop", "AfterAgent"),
    ("SessionStart", "SessionStart"),
    ("SessionEnd", "SessionEnd"),
    ("PreCompact", "PreCompress"),
    ("Notification", "Notification"),
];

/// User settings with a recording hook on every Gemini event: it appends the event it got to
/// `runs.log`, keeps its stdin and its `RELAY_MARK` variable, and says which event it saw.
/// A relayed `SessionEnd` is sent detached: the daemon answers at once with an empty result,
/// so the host hears nothing from the hooks (both hosts ignore a SessionEnd answer anyway).
fn assert_detached_answer(run: &Run, event: &str) {
    let stdout = run.stdout.trim();
    if !stdout.is_empty() {
        let answer = run.json();
        assert_eq!(answer.get("systemMessage"), None, "{event}: {answer}");
    }
    assert!(
        run.elapsed < Duration::from_secs(2),
        "{event}: {:?}",
        run.elapsed
    );
}

/// Waits (by polling the file system) until `path` exists: a detached hook writes it after
/// the relay has returned.
async fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn recording_daemon() -> (Fixture, tempfile::TempDir) {
    let scratch = tempfile::tempdir().unwrap();
    let record = script(
        scratch.path(),
        "record.sh",
        r#"payload=$(cat)
event=$(printf '%s' "$payload" | sed -n 's/.*"hook_event_name":"\([A-Za-z]*\)".*/\1/p')
printf '%s\n' "$event" >> "$(dirname "$0")/runs.log"
printf '%s' "$payload" > "$(dirname "$0")/$event.json"
printf '%s' "${RELAY_MARK:-unset}" > "$(dirname "$0")/$event.mark"
printf '{"systemMessage": "seen %s"}' "$event""#,
    );
    let hooks: Vec<(&str, Option<&str>, String)> = GEMINI_EVENTS
        .iter()
        .map(|event| (*event, None, record.clone()))
        .collect();
    let fixture = start_with_hookd_files("{}", Some(&settings(&hooks))).await;
    (fixture, scratch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_gemini_event_is_relayed_with_its_payload_and_environment() {
    let (fixture, scratch) = recording_daemon().await;
    let scratch = scratch.path();
    // The host runs the hook elsewhere than the project: the payload's cwd decides.
    let host = Host {
        socket: &fixture.socket,
        cwd: scratch,
        env: vec![("RELAY_MARK", "from-the-host".to_owned())],
    };
    for event in GEMINI_EVENTS {
        let run = host
            .relay(&[event], &gemini_payload(event, &fixture.project))
            .await;
        assert_eq!(run.code, 0, "{event}: {}", run.stderr);
        assert_eq!(run.stderr, "", "{event}");
        if event == "SessionEnd" {
            // Detached: answered at once with nothing to say; the hook finishes on its own.
            assert_detached_answer(&run, event);
            wait_for_file(&scratch.join(format!("{event}.mark"))).await;
        } else if event == "BeforeToolSelection" {
            let answer = run.json();
            // Only a tool selection counts for this event.
            assert_eq!(
                answer["hookSpecificOutput"]["toolConfig"]["mode"],
                json!("AUTO"),
                "{event}: {answer}"
            );
        } else {
            let answer = run.json();
            assert_eq!(
                answer["systemMessage"],
                json!(format!("seen {event}")),
                "{event}: {answer}"
            );
        }
        let payload: Value = serde_json::from_str(
            &std::fs::read_to_string(scratch.join(format!("{event}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(payload["session_id"], json!("sess-1"), "{event}");
        assert_eq!(
            payload["transcript_path"],
            json!("/srv/transcripts/sess-1.json"),
            "{event}"
        );
        assert_eq!(
            payload["cwd"],
            json!(fixture.project.display().to_string()),
            "{event}"
        );
        let sent = gemini_payload(event, &fixture.project);
        for (key, value) in sent.as_object().unwrap() {
            if !["timestamp", "hook_event_name"].contains(&key.as_str()) {
                assert_eq!(&payload[key], value, "{event}: {key}");
            }
        }
        assert_eq!(
            std::fs::read_to_string(scratch.join(format!("{event}.mark"))).unwrap(),
            "from-the-host",
            "{event}: hooks run with the host's environment"
        );
    }
    assert_eq!(lines(&scratch.join("runs.log")), GEMINI_EVENTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_claude_event_is_relayed_as_its_gemini_event() {
    let (fixture, scratch) = recording_daemon().await;
    let scratch = scratch.path();
    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: vec![("RELAY_MARK", "from-claude".to_owned())],
    };
    for (claude, gemini) in CLAUDE_EVENTS {
        let before = lines(&scratch.join("runs.log")).len();
        let run = host
            .relay(
                &[claude, "--dialect", "claude"],
                &claude_payload(claude, &fixture.project),
            )
            .await;
        assert_eq!(run.code, 0, "{claude}: {}", run.stderr);
        if claude == "SessionEnd" {
            assert_detached_answer(&run, claude);
            wait_for_file(&scratch.join(format!("{gemini}.mark"))).await;
        } else {
            let answer = run.json();
            assert_eq!(
                answer["systemMessage"],
                json!(format!("seen {gemini}")),
                "{claude}: {answer}"
            );
        }
        assert_eq!(
            lines(&scratch.join("runs.log"))[before..],
            [gemini.to_owned()],
            "{claude}"
        );
        let payload: Value = serde_json::from_str(
            &std::fs::read_to_string(scratch.join(format!("{gemini}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(payload["session_id"], json!("sess-2"), "{claude}");
        assert_eq!(payload["claude_event"], json!(claude), "{claude}");
        if claude == "PreToolUse" {
            assert_eq!(payload["tool_name"], json!("run_shell_command"));
            assert_eq!(payload["tool_input"], json!({"command": "rm -rf build"}));
        }
        assert_eq!(
            std::fs::read_to_string(scratch.join(format!("{gemini}.mark"))).unwrap(),
            "from-claude"
        );
    }
}

/// Claude Code's events with no Gemini counterpart, each with a field of its own.
const CLAUDE_ONLY_EVENTS: [(&str, &str); 6] = [
    (
        "PermissionRequest",
        r#"{"tool_name": "Bash", "tool_input": {"command": "ls"}}"#,
    ),
    (
        "PostToolUseFailure",
        r#"{"tool_name": "Bash", "error": "exit 3"}"#,
    ),
    ("PostToolBatch", r#"{"tool_calls": []}"#),
    ("CwdChanged", r#"{"old_cwd": "/a", "new_cwd": "/b"}"#),
    ("TaskCompleted", r#"{"task_id": "t1"}"#),
    ("SubagentStart", r#"{"agent_type": "reviewer"}"#),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_only_events_are_held_relayed_and_answered_in_claudes_terms() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    // Records the event and its payload; blocks TaskCompleted with exit 2, denies the
    // permission request, gives the failure some context.
    let hook = script(
        dir,
        "claude-hook.sh",
        r#"payload=$(cat)
event=$(printf '%s' "$payload" | sed -n 's/.*"hook_event_name":"\([A-Za-z]*\)".*/\1/p')
printf '%s' "$payload" > "$(dirname "$0")/$event.json"
case "$event" in
  TaskCompleted) echo 'tests still fail' >&2; exit 2 ;;
  PermissionRequest) echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "not here"}}}' ;;
  PostToolUseFailure) echo '{"hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": "try sudo"}}' ;;
esac"#,
    );
    let mut hooks = serde_json::Map::new();
    for (event, _) in CLAUDE_ONLY_EVENTS {
        // SubagentStart's matcher is applied to the agent type.
        let matcher = if event == "SubagentStart" {
            "^reviewer$"
        } else {
            ""
        };
        hooks.insert(
            event.to_owned(),
            json!([{"matcher": matcher, "hooks": [
                {"type": "command", "command": hook, "dialect": "claude"}
            ]}]),
        );
    }
    let fixture = start_with_hookd_files("{}", Some(&json!({"hooks": hooks}).to_string())).await;
    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: Vec::new(),
    };
    // (event, exit code, stdout JSON or none, stderr)
    let expected: [(&str, i32, Option<Value>, &str); 6] = [
        (
            "PermissionRequest",
            0,
            Some(
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": "not here"}}}),
            ),
            "",
        ),
        (
            "PostToolUseFailure",
            0,
            Some(
                json!({"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                "additionalContext": "try sudo"}}),
            ),
            "",
        ),
        ("PostToolBatch", 0, None, ""),
        ("CwdChanged", 0, None, ""),
        ("TaskCompleted", 2, None, "tests still fail\n"),
        ("SubagentStart", 0, None, ""),
    ];
    for ((event, fields), (_, code, stdout, stderr)) in CLAUDE_ONLY_EVENTS.iter().zip(expected) {
        let mut payload = json!({
            "session_id": "sess-3",
            "transcript_path": "/srv/t.jsonl",
            "cwd": fixture.project.display().to_string(),
            "hook_event_name": event,
        });
        let fields: Value = serde_json::from_str(fields).unwrap();
        for (key, value) in fields.as_object().unwrap() {
            payload[key] = value.clone();
        }
        let run = host.relay(&[event, "--dialect", "claude"], &payload).await;
        assert_eq!(run.code, code, "{event}: {}", run.stderr);
        assert_eq!(run.stderr, stderr, "{event}");
        match stdout {
            Some(expected) => assert_eq!(run.json(), expected, "{event}"),
            None => assert_eq!(run.stdout, "", "{event}"),
        }
        // The hook read Claude Code's own payload, without Gemini's timestamp.
        let seen: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{event}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(seen, payload, "{event}");
    }
    // A matcher that does not select the agent type: the hook does not run.
    std::fs::remove_file(dir.join("SubagentStart.json")).unwrap();
    let other = json!({"session_id": "sess-3", "transcript_path": "/srv/t.jsonl",
        "cwd": fixture.project.display().to_string(), "hook_event_name": "SubagentStart",
        "agent_type": "planner"});
    let run = host
        .relay(&["SubagentStart", "--dialect", "claude"], &other)
        .await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert!(!dir.join("SubagentStart.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_if_is_checked_before_it_runs_for_both_hosts() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    // Denies, and counts its runs: it must run only for `git` commands.
    let guard = script(
        dir,
        "git-guard.sh",
        r#"cat >/dev/null; echo run >> "$(dirname "$0")/runs.log"; echo 'no git here' >&2; exit 2"#,
    );
    let hooks = json!({"hooks": {"BeforeTool": [{"hooks": [
        {"type": "command", "command": guard, "if": "Bash(git *)"}
    ]}]}});
    let fixture = start_with_hookd_files("{}", Some(&hooks.to_string())).await;
    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: Vec::new(),
    };
    // (host's dialect, command, denied)
    let cases = [
        ("gemini", "ls -la", false),
        ("gemini", "cd repo && git push", true),
        ("claude", "git status", true),
        ("claude", "echo git", false),
    ];
    let mut runs = 0;
    for (dialect, command, denied) in cases {
        let run = if dialect == "gemini" {
            let mut payload = gemini_payload("BeforeTool", &fixture.project);
            payload["tool_input"]["command"] = json!(command);
            host.relay(&["BeforeTool"], &payload).await
        } else {
            let mut payload = claude_payload("PreToolUse", &fixture.project);
            payload["tool_input"]["command"] = json!(command);
            host.relay(&["PreToolUse", "--dialect", "claude"], &payload)
                .await
        };
        assert_eq!(run.code, 0, "{command}: {}", run.stderr);
        let said_no = run.stdout.contains("no git here");
        assert_eq!(said_no, denied, "{dialect} {command}: {}", run.stdout);
        runs += usize::from(denied);
        assert_eq!(lines(&dir.join("runs.log")).len(), runs, "{command}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_hears_only_the_winning_reason_gemini_cli_every_reason() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let allow = script(
        dir,
        "allow.sh",
        r#"cat >/dev/null; echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "REASON-allowed"}}'"#,
    );
    let deny = script(
        dir,
        "deny.sh",
        r#"cat >/dev/null; echo 'REASON-deny' >&2; exit 2"#,
    );
    let hooks = json!({"hooks": {"BeforeTool": [{"hooks": [
        {"type": "command", "command": allow, "dialect": "claude"},
        {"type": "command", "command": deny, "dialect": "claude"}
    ]}]}});
    let fixture = start_with_hookd_files("{}", Some(&hooks.to_string())).await;
    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: Vec::new(),
    };
    let claude = host
        .relay(
            &["PreToolUse", "--dialect", "claude"],
            &claude_payload("PreToolUse", &fixture.project),
        )
        .await;
    assert_eq!(
        claude.json()["hookSpecificOutput"],
        json!({"hookEventName": "PreToolUse", "permissionDecision": "deny",
               "permissionDecisionReason": "REASON-deny"})
    );
    // Gemini CLI's OR-merge joins every reason.
    let gemini = host
        .relay(
            &["BeforeTool"],
            &gemini_payload("BeforeTool", &fixture.project),
        )
        .await;
    assert_eq!(gemini.json()["decision"], json!("deny"));
    assert_eq!(
        gemini.json()["reason"],
        json!("REASON-allowed\nREASON-deny")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_hooks_block_in_each_hosts_own_terms() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let exit2 = script(
        dir,
        "exit2.sh",
        "cat >/dev/null; echo 'no rm here' >&2; exit 2",
    );
    let block = script(
        dir,
        "block.sh",
        r#"cat >/dev/null; echo '{"decision": "block", "reason": "policy says no"}'"#,
    );
    let user = settings(&[
        ("BeforeTool", Some("run_shell_command"), exit2.clone()),
        ("AfterTool", None, block.clone()),
        ("BeforeAgent", None, block.clone()),
        ("AfterAgent", None, block.clone()),
        ("BeforeModel", None, block.clone()),
        ("PreCompress", None, block.clone()),
    ]);
    let fixture = start_with_hookd_files("{}", Some(&user)).await;
    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: Vec::new(),
    };

    // Gemini CLI: the merged output, whose decision blocks.
    for (event, reason) in [
        ("BeforeTool", "no rm here"),
        ("AfterTool", "policy says no"),
        ("BeforeAgent", "policy says no"),
        ("AfterAgent", "policy says no"),
        ("BeforeModel", "policy says no"),
    ] {
        let run = host
            .relay(&[event], &gemini_payload(event, &fixture.project))
            .await;
        assert_eq!(run.code, 0, "{event}: {}", run.stderr);
        let answer = run.json();
        assert!(
            matches!(answer["decision"].as_str(), Some("deny" | "block")),
            "{event}: {answer}"
        );
        assert_eq!(answer["reason"], json!(reason), "{event}: {answer}");
    }
    // A tool the matcher does not select is not blocked.
    let mut payload = gemini_payload("BeforeTool", &fixture.project);
    payload["tool_name"] = json!("read_file");
    let run = host.relay(&["BeforeTool"], &payload).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{}", run.stderr);

    // Claude Code: PreToolUse denies the permission, the others block, PreCompact exits 2.
    let claude = |event: &str| claude_payload(event, &fixture.project);
    let run = host
        .relay(
            &["PreToolUse", "--dialect", "claude"],
            &claude("PreToolUse"),
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.json()["hookSpecificOutput"],
        json!({"hookEventName": "PreToolUse", "permissionDecision": "deny",
               "permissionDecisionReason": "no rm here"})
    );
    for event in ["PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop"] {
        let run = host
            .relay(&[event, "--dialect", "claude"], &claude(event))
            .await;
        assert_eq!(run.code, 0, "{event}: {}", run.stderr);
        let answer = run.json();
        assert_eq!(answer["decision"], json!("block"), "{event}: {answer}");
        assert_eq!(
            answer["reason"],
            json!("policy says no"),
            "{event}: {answer}"
        );
    }
    let run = host
        .relay(
            &["PreCompact", "--dialect", "claude"],
            &claude("PreCompact"),
        )
        .await;
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    assert_eq!(run.stderr, "policy says no\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_file_with_relay_entries_and_real_hooks_runs_each_real_hook_once() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let count = script(
        dir,
        "count.sh",
        "cat >/dev/null; echo run >> \"$(dirname \"$0\")/count.log\"",
    );
    let relay_program = env!("CARGO_BIN_EXE_hookctl");
    // The relay entries find the daemon through HOOKD_SOCKET, as they would at the user's: if
    // the daemon ran them, each would relay the event again and run the real hook again.
    let user = json!({"hooks": {
        "BeforeTool": [
            {"hooks": [{"type": "command", "name": "hookd-relay",
                        "command": format!("{relay_program} relay BeforeTool"), "timeout": 5000}]},
            {"hooks": [{"type": "command", "command": count}]}
        ],
        "PreCompress": [
            {"hooks": [{"type": "command", "command": count},
                       {"type": "command", "command": format!("'{relay_program}' --socket=/dev/null relay PreCompact --dialect claude")}]}
        ]
    }});
    let fixture = start_with_hookd_files("{}", Some(&user.to_string())).await;
    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: vec![("HOOKD_SOCKET", fixture.socket.display().to_string())],
    };
    let run = host
        .relay(
            &["BeforeTool"],
            &gemini_payload("BeforeTool", &fixture.project),
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lines(&dir.join("count.log")), ["run"]);
    let run = host
        .relay(
            &["PreCompress"],
            &gemini_payload("PreCompress", &fixture.project),
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(lines(&dir.join("count.log")), ["run", "run"]);
    // The panel does not list the relay entries either.
    let panel = fixture.ok(&["list"]).await;
    assert!(!panel.contains("hookd-relay"), "{panel}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_daemon_both_policies_answer_within_seconds() {
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("no-daemon.sock");
    // A socket whose owner never accepts: the connection waits in the backlog and no hello
    // ever comes.
    let silent = scratch.path().join("silent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&silent).unwrap();

    for socket in [&missing, &silent] {
        // A short retry budget keeps the test fast; the retries have a test of their own.
        let host = |mut env: Vec<(&'static str, String)>| {
            env.push(("HOOKD_RELAY_RETRY_MS", "300".to_owned()));
            Host {
                socket,
                cwd: scratch.path(),
                env,
            }
        };
        let payload = gemini_payload("BeforeTool", scratch.path());
        let claude = claude_payload("PreToolUse", scratch.path());

        // allow (the default): exit 0 and nothing at all for the host, exactly a hook with
        // nothing to say; the reason is in the relay log.
        let run = host(Vec::new()).relay(&["BeforeTool"], &payload).await;
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, "", ""),
            "{socket:?}"
        );
        assert!(
            relay_log(socket).contains("not reachable"),
            "{:?}",
            relay_log(socket)
        );
        assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
        let run = host(Vec::new())
            .relay(
                &["BeforeToolSelection"],
                &gemini_payload("BeforeToolSelection", scratch.path()),
            )
            .await;
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, "", ""),
            "{socket:?}"
        );
        let run = host(Vec::new())
            .relay(&["PreToolUse", "--dialect", "claude"], &claude)
            .await;
        assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{socket:?}");
        assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);

        // deny, by flag or by environment: the host's blocking answer naming hookd.
        let by_flag = host(Vec::new())
            .relay(&["BeforeTool", "--unreachable", "deny"], &payload)
            .await;
        let by_env = host(vec![("HOOKD_RELAY_UNREACHABLE", "deny".to_owned())])
            .relay(&["BeforeTool"], &payload)
            .await;
        for run in [by_flag, by_env] {
            assert_eq!(run.code, 0, "{}", run.stderr);
            let answer = run.json();
            assert_eq!(answer["decision"], json!("deny"), "{answer}");
            assert!(
                answer["reason"].as_str().unwrap().contains("hookd"),
                "{answer}"
            );
            assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
        }
        let run = host(Vec::new())
            .relay(
                &["PreToolUse", "--dialect", "claude", "--unreachable=deny"],
                &claude,
            )
            .await;
        let answer = run.json();
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"],
            json!("deny"),
            "{answer}"
        );
        assert!(
            answer["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .contains("hookd"),
            "{answer}"
        );
        // Denying a stop would make the agent go on: the relay stops it instead.
        let run = host(Vec::new())
            .relay(
                &["Stop", "--dialect", "claude", "--unreachable=deny"],
                &claude_payload("Stop", scratch.path()),
            )
            .await;
        let answer = run.json();
        assert_eq!(answer["continue"], json!(false), "{answer}");
        assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payloads_cwd_picks_the_project_else_the_hosts_directory() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let mark = script(
        dir,
        "mark.sh",
        "cat >/dev/null; pwd >> \"$(dirname \"$0\")/dirs.log\"",
    );
    let project = settings(&[("SessionStart", None, mark)]);
    let fixture = start_with_hookd_files(&project, None).await;
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();

    // With a cwd in the payload, the project's hooks run from anywhere.
    let host = Host {
        socket: &fixture.socket,
        cwd: &elsewhere,
        env: Vec::new(),
    };
    let run = host
        .relay(
            &["SessionStart"],
            &gemini_payload("SessionStart", &fixture.project),
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Without one, the host's working directory is the project.
    let mut payload = gemini_payload("SessionStart", &fixture.project);
    payload.as_object_mut().unwrap().remove("cwd");
    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: Vec::new(),
    };
    let run = host.relay(&["SessionStart"], &payload).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let host = Host {
        socket: &fixture.socket,
        cwd: &elsewhere,
        env: Vec::new(),
    };
    let run = host.relay(&["SessionStart"], &payload).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let project = std::fs::canonicalize(&fixture.project).unwrap();
    let runs: Vec<PathBuf> = lines(&dir.join("dirs.log"))
        .iter()
        .map(|line| std::fs::canonicalize(line).unwrap())
        .collect();
    assert_eq!(runs, [project.clone(), project]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_answered_by_policy() {
    let fixture = start_with_hookd_files("{}", None).await;
    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: Vec::new(),
    };
    // (arguments, stdin)
    let cases: [(&[&str], Value); 3] = [
        (&["NotAnEvent"], json!({})),
        (&["BeforeTool", "--dialect", "cursor"], json!({})),
        (
            &["PreToolUse", "--dialect", "claude"],
            json!({"tool_name": 7}),
        ),
    ];
    for (args, stdin) in cases {
        // By default the relay blocks what nothing could evaluate, saying why: the host
        // alone would have run its hooks.
        let run = host.relay(args, &stdin).await;
        assert!(
            run.code == 2 || run.stdout.contains("deny"),
            "{args:?}: {} {} {}",
            run.code,
            run.stdout,
            run.stderr
        );
        assert!(
            run.stderr.contains("blocking") || run.stdout.contains("blocked"),
            "{args:?}: {} {}",
            run.stdout,
            run.stderr
        );
        let mut allow = args.to_vec();
        allow.push("--unreachable=allow");
        let run = host.relay(&allow, &stdin).await;
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, "", ""),
            "{args:?}"
        );
        assert!(
            relay_log(&fixture.socket).contains("hookctl relay: "),
            "{args:?}: {}",
            relay_log(&fixture.socket)
        );
        let mut deny = args.to_vec();
        deny.push("--unreachable=deny");
        let run = host.relay(&deny, &stdin).await;
        assert!(
            run.code == 2 || run.stdout.contains("deny"),
            "{args:?}: {} {} {}",
            run.code,
            run.stdout,
            run.stderr
        );
    }
}

/// Reads one length-prefixed frame's JSON from `stream`; `None` at the end of the stream.
fn read_frame(stream: &mut std::os::unix::net::UnixStream) -> Option<Value> {
    use std::io::Read;
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Writes one length-prefixed frame.
fn write_frame(stream: &mut std::os::unix::net::UnixStream, value: &Value) {
    let body = value.to_string();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(body.as_bytes());
    stream.write_all(&frame).unwrap();
}

/// A stand-in daemon on `socket` for one connection: records the relay's `event` request
/// and answers it with `final_output`.
fn recording_fake_daemon(
    socket: &Path,
    final_output: Value,
) -> std::thread::JoinHandle<Option<Value>> {
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().ok()?;
        let hello = read_frame(&mut stream)?;
        assert_eq!(hello["type"], json!("hello"), "{hello}");
        let event = read_frame(&mut stream)?;
        write_frame(
            &mut stream,
            &json!({"type": "hello", "protocol": 1, "server": "fake", "pid": 1,
                    "max_frame_bytes": 16_777_216}),
        );
        write_frame(
            &mut stream,
            &json!({"type": "result", "id": event["id"], "success": true,
                    "final_output": final_output, "all_outputs": [], "errors": [],
                    "total_duration_ms": 0.0, "hooks": [], "generation": 1}),
        );
        Some(event)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_names_the_relaying_host_and_the_hosts_project() {
    let scratch = tempfile::tempdir().unwrap();
    let project = scratch.path().join("proj");
    let sub = project.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let socket = scratch.path().join("fake.sock");
    // (host's variables, arguments, payload, relayed_by, project_dir)
    type Case<'a> = (
        Vec<(&'a str, String)>,
        Vec<&'a str>,
        Value,
        &'a str,
        Option<String>,
    );
    let cases: Vec<Case<'_>> = vec![
        // After `cd sub` in Claude's Bash tool, the payload's cwd moved; the project did not.
        (
            vec![("CLAUDE_PROJECT_DIR", project.display().to_string())],
            vec!["PreToolUse", "--dialect", "claude"],
            claude_payload("PreToolUse", &sub),
            "claude",
            Some(project.display().to_string()),
        ),
        (
            vec![("GEMINI_PROJECT_DIR", project.display().to_string())],
            vec!["BeforeTool"],
            gemini_payload("BeforeTool", &project),
            "gemini",
            Some(project.display().to_string()),
        ),
        // No project from the host: the daemon falls back to cwd.
        (
            Vec::new(),
            vec!["BeforeTool"],
            gemini_payload("BeforeTool", &sub),
            "gemini",
            None,
        ),
    ];
    for (env, args, payload, relayed_by, project_dir) in cases {
        let _ = std::fs::remove_file(&socket);
        let daemon = recording_fake_daemon(&socket, json!({"decision": "allow"}));
        let host = Host {
            socket: &socket,
            cwd: &sub,
            env,
        };
        let run = host.relay(&args, &payload).await;
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let event = daemon.join().unwrap().unwrap();
        assert_eq!(event["relayed_by"], json!(relayed_by), "{event}");
        assert_eq!(
            event.get("project_dir").cloned(),
            project_dir.map(Value::from),
            "{event}"
        );
        assert_eq!(event["cwd"], payload["cwd"], "{event}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_restarting_by_hand_loses_no_call() {
    let guard = settings(&[(
        "BeforeTool",
        Some("run_shell_command"),
        "echo 'no rm here' >&2; exit 2".to_owned(),
    )]);
    let fixture = prepare_with_hookd_files(&guard, None);
    let socket = fixture.socket.clone();
    let payload = gemini_payload("BeforeTool", &fixture.project);
    let host = Host {
        socket: &socket,
        cwd: &fixture.project,
        env: Vec::new(),
    };
    // The old daemon takes the connection and goes away without answering (EOF before the
    // result), then for a while there is no socket at all (ENOENT), then the new daemon
    // binds: the relay keeps trying and gets the new daemon's answer.
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let old = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        drop(stream);
        drop(listener);
    });
    // Under `allow` the relay would answer without hooks if it gave up: the answer below
    // shows it waited for the new daemon (under the default, `run`, a missing socket is
    // answered by the one-shot engine at once instead, with the same decision).
    let relay = host.relay(&["BeforeTool", "--unreachable", "allow"], &payload);
    let restart = async {
        tokio::task::spawn_blocking(move || old.join().unwrap())
            .await
            .unwrap();
        std::fs::remove_file(&fixture.socket).unwrap();
        // The gap a restart by hand leaves.
        tokio::time::sleep(Duration::from_millis(300)).await;
        fixture.serve().await;
    };
    let (run, ()) = tokio::join!(relay, restart);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let answer = run.json();
    assert_eq!(answer["decision"], json!("deny"), "{answer}");
    assert_eq!(answer["reason"], json!("no rm here"), "{answer}");
    assert_eq!(relay_log(&socket), "");
}

/// A first install moves the user's guard into `~/.config/hookd/`, a directory the running
/// daemon has not seen yet: install asks it to reload, so the very next relayed call is
/// guarded (not answered by neither the host, whose hook moved out, nor hookd, which has not
/// read the new file yet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_event_after_install_runs_the_moved_hook() {
    let scratch = tempfile::tempdir().unwrap();
    let guard = script(
        scratch.path(),
        "guard.sh",
        "cat >/dev/null; echo 'moved guard says no' >&2; exit 2",
    );
    let user = settings(&[("BeforeTool", Some("run_shell_command"), guard)]);
    let fixture = Fixture::start("{}", Some(&user)).await;
    assert!(!fixture.home.join(".config/hookd").exists());
    let home = fixture.home.clone();
    let socket = fixture.socket.clone();
    let project = fixture.project.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(["--socket"])
            .arg(&socket)
            .args(["install", "--host", "gemini", "--yes"])
            .current_dir(&project)
            .hermetic(&home)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report} {output:?}");
    assert!(
        report.contains("hookd has read its hooks files again"),
        "{report}"
    );
    assert!(fixture.home.join(".config/hookd/hooks.json").is_file());

    let host = Host {
        socket: &fixture.socket,
        cwd: &fixture.project,
        env: Vec::new(),
    };
    let run = host
        .relay(
            &["BeforeTool"],
            &gemini_payload("BeforeTool", &fixture.project),
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["decision"], json!("deny"), "{}", run.stdout);
    assert_eq!(run.json()["reason"], json!("moved guard says no"));
}
