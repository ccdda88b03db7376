//! Runs the real `hookctl` binary against a daemon started in-process on a temp socket.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A daemon on a temp socket with one project whose settings are given.
struct Fixture {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    project: PathBuf,
    cancel: CancellationToken,
}

impl Fixture {
    async fn start(settings: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::create_dir_all(project.join(".gemini")).unwrap();
        std::fs::write(project.join(".gemini/settings.json"), settings).unwrap();
        let mut env = HashMap::new();
        env.insert("HOME".to_owned(), home.display().to_string());
        env.insert("PATH".to_owned(), std::env::var("PATH").unwrap_or_default());
        env.insert(
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_owned(),
            dir.path().join("none.json").display().to_string(),
        );
        let socket = dir.path().join("hookd.sock");
        let listener = hookd_server::bind_socket(&socket).await.unwrap();
        let cancel = CancellationToken::new();
        tokio::spawn(hookd_server::run(
            listener,
            hookd_server::ServerConfig::new(env),
            cancel.clone(),
        ));
        Fixture {
            _dir: dir,
            socket,
            project,
            cancel,
        }
    }

    /// Runs hookctl with `args` (and `--socket`), feeding `stdin`, off the async runtime.
    async fn hookctl(&self, args: &[&str], stdin: &str) -> Output {
        let socket = self.socket.clone();
        let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
        let stdin = stdin.to_owned();
        tokio::task::spawn_blocking(move || run_hookctl(&socket, &args, &stdin))
            .await
            .unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn run_hookctl(socket: &Path, args: &[String], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .arg("--socket")
        .arg(socket)
        .args(args)
        .env_remove("HOOKD_SOCKET")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

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
async fn emit_prints_exactly_the_six_keys_and_exits_zero() {
    let fixture = Fixture::start(GATE).await;
    let cwd = fixture.project.display().to_string();
    let output = fixture
        .hookctl(
            &["emit", "BeforeTool", "--input", "-", "--cwd", &cwd],
            r#"{"tool_name":"run_shell_command","tool_input":{"command":"rm -rf /"}}"#,
        )
        .await;
    assert!(output.status.success(), "{output:?}");
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
    let fixture = Fixture::start(GATE).await;
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

    let missing = fixture._dir.path().join("nobody-here.sock");
    let output =
        tokio::task::spawn_blocking(move || run_hookctl(&missing, &["ping".to_owned()], ""))
            .await
            .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot reach hookd"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_status_and_ping() {
    let fixture = Fixture::start(GATE).await;
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
