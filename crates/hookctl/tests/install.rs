//! `hookctl install` and `uninstall` through the real binary, in a temp home: the host's hooks
//! move into hookd's file and relay entries take their place; uninstall restores every file
//! byte for byte (comments, absent files); a second install changes nothing; `--dry-run` and
//! a refused confirmation write nothing; a file changed since the install is not overwritten
//! without `--force`. The installed relay entries then run the moved hooks through a daemon.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// A temp home with a project, where hookctl runs.
struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

/// What one hookctl run printed and exited with.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home");
        let project = root.join("work/project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Home {
            _dir: dir,
            root,
            home,
            project,
        }
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Runs hookctl in the project with this home and nothing else that moves its files.
    fn hookctl(&self, args: &[&str]) -> Run {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("GEMINI_CLI_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Not a terminal, and an answer that would say yes if it were read.
        let _ = child.stdin.take().unwrap().write_all(b"y\n");
        let output = child.wait_with_output().unwrap();
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        let run = self.hookctl(args);
        assert!(run.ok, "{args:?}: {}{}", run.stdout, run.stderr);
        run.stdout
    }

    /// Every file and directory under the temp root, with file contents.
    fn snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    out.insert(path.clone(), None);
                    walk(&path, out);
                } else {
                    out.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root, &mut out);
        out
    }
}

fn parse(path: &Path) -> Value {
    hookd_core::jsonc::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const GEMINI_USER: &str = r#"// My Gemini CLI settings.
{
  "theme": "GitHub", // keep this comment
  "hooks": {
    /* the guard */
    "BeforeTool": [
      {"matcher": "run_shell_command", "hooks": [
        {"type": "command", "name": "guard", "command": "guard.sh", "timeout": 90000}
      ]}
    ],
    "AfterAgent": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]
  },
  "hooksConfig": {"disabled": ["old"]}
}
"#;

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

#[test]
fn gemini_user_hooks_move_to_hookd_and_come_back_byte_for_byte() {
    let home = Home::new();
    let settings = home.home.join(".gemini/settings.json");
    let hooks_file = home.home.join(".config/hookd/hooks.json");
    home.write(&settings, GEMINI_USER);
    let before = home.snapshot();

    let report = home.ok(&["install", "--host", "gemini", "--yes"]);
    assert!(report.contains("--- /dev/null"), "{report}");
    assert!(
        report.contains(&format!("+++ {}", settings.display())),
        "{report}"
    );
    assert!(report.contains("Installed"), "{report}");

    // The host keeps its other settings and comments; its hooks are one relay per event.
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(
        text.starts_with(
            "// My Gemini CLI settings.\n{\n  \"theme\": \"GitHub\", // keep this comment\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("  \"hooksConfig\": {\"disabled\": [\"old\"]}\n}\n"),
        "{text}"
    );
    let host = parse(&settings);
    let relays = host["hooks"].as_object().unwrap();
    let events: Vec<&str> = relays.keys().map(String::as_str).collect();
    assert_eq!(events, GEMINI_EVENTS);
    let program = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookctl")).unwrap();
    for (event, definitions) in relays {
        assert_eq!(
            definitions,
            &json!([{"hooks": [{"type": "command", "name": "hookd-relay",
                "command": format!("{} relay {event}", program.display()), "timeout": 100000}]}]),
            "{event}"
        );
    }
    // hookd's file holds the moved hooks, as they were.
    assert_eq!(
        parse(&hooks_file),
        json!({"hooks": {
            "BeforeTool": [{"matcher": "run_shell_command", "hooks": [
                {"type": "command", "name": "guard", "command": "guard.sh", "timeout": 90000}]}],
            "AfterAgent": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]
        }})
    );

    // Again: nothing to do, nothing touched.
    let installed = home.snapshot();
    let report = home.ok(&["install", "--host", "gemini", "--scope", "user", "--yes"]);
    assert!(report.contains("nothing to change"), "{report}");
    assert_eq!(home.snapshot(), installed);

    let report = home.ok(&["uninstall", "--host", "gemini"]);
    assert!(report.contains("Uninstalled"), "{report}");
    assert_eq!(home.snapshot(), before);
    let report = home.ok(&["uninstall", "--host", "gemini"]);
    assert!(report.contains("not installed"), "{report}");
    assert_eq!(home.snapshot(), before);
}

#[test]
fn claude_project_without_settings_gets_a_file_that_uninstall_removes() {
    let home = Home::new();
    let before = home.snapshot();
    let report = home.ok(&["install", "--host", "claude", "--scope", "project", "--yes"]);
    assert!(report.contains("0 hook definition(s) move"), "{report}");
    let settings = home.project.join(".claude/settings.json");
    let host = parse(&settings);
    let events: Vec<&str> = host["hooks"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(events, hookd_core::dialect::CLAUDE_EVENTS);
    let program = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookctl")).unwrap();
    assert_eq!(
        host["hooks"]["PreToolUse"],
        json!([{"matcher": "*", "hooks": [{"type": "command",
            "command": format!("{} relay PreToolUse --dialect claude", program.display()),
            "timeout": 70}]}])
    );
    assert_eq!(host["hooks"]["Stop"][0].get("matcher"), None);
    // Nothing moved, so hookd's project file was not created.
    assert!(!home.project.join(".hookd").exists());

    home.ok(&["uninstall", "--host", "claude", "--scope", "project"]);
    assert_eq!(home.snapshot(), before);
}

const CLAUDE_USER: &str = r#"{
  // Claude Code settings
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/check.sh", "timeout": 120},
          {"type": "prompt", "prompt": "Is this command safe?"}
        ]
      }
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "done.sh"}]}]
  }
}"#;

#[test]
fn claude_user_hooks_are_converted_and_what_hookd_cannot_run_stays() {
    let home = Home::new();
    let settings = home.home.join(".claude/settings.json");
    home.write(&settings, CLAUDE_USER);
    let hooks_file = home.home.join(".config/hookd/hooks.json");
    // hookd's file exists already: the moved hooks are appended.
    home.write(
        &hooks_file,
        "{\"hooks\": {\"BeforeTool\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"mine.sh\"}]}]}}\n",
    );
    let before = home.snapshot();

    let report = home.ok(&["install", "--host", "claude", "--scope", "user", "--yes"]);
    assert!(report.contains("stay in"), "{report}");
    let moved = parse(&hooks_file);
    let before_tool = moved["hooks"]["BeforeTool"].as_array().unwrap();
    assert_eq!(before_tool.len(), 2, "{moved}");
    assert_eq!(before_tool[0]["hooks"][0]["command"], json!("mine.sh"));
    let converted = &before_tool[1];
    assert_eq!(
        converted["hooks"][0]["dialect"],
        json!("claude"),
        "{converted}"
    );
    assert_eq!(
        converted["hooks"][0]["timeout"],
        json!(120_000),
        "{converted}"
    );
    assert_eq!(
        moved["hooks"]["AfterAgent"][0]["hooks"][0]["command"],
        json!("done.sh")
    );

    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(text.contains("// Claude Code settings"), "{text}");
    let host = parse(&settings);
    assert_eq!(host["model"], json!("opus"));
    let pre = host["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2, "{pre:?}");
    // BeforeTool's hooks may take 60 s (mine.sh, the default) and 120 s one after the other:
    // the relay waits longer.
    assert_eq!(pre[0]["hooks"][0]["timeout"], json!(190));
    assert_eq!(
        pre[1],
        json!({"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this command safe?"}]})
    );

    let installed = home.snapshot();
    assert!(
        home.ok(&["install", "--host", "claude", "--yes"])
            .contains("nothing to change")
    );
    assert_eq!(home.snapshot(), installed);
    home.ok(&["uninstall", "--host", "claude"]);
    assert_eq!(home.snapshot(), before);
}

#[test]
fn dry_runs_and_unconfirmed_installs_write_nothing() {
    let home = Home::new();
    home.write(&home.project.join(".gemini/settings.json"), GEMINI_USER);
    let before = home.snapshot();

    let report = home.ok(&[
        "install",
        "--host",
        "gemini",
        "--scope",
        "project",
        "--dry-run",
    ]);
    assert!(report.contains("@@"), "{report}");
    assert!(report.contains("Dry run: nothing was written."), "{report}");
    assert_eq!(home.snapshot(), before);

    // No terminal to ask on and no --yes: the changes are shown, nothing is written.
    let run = home.hookctl(&["install", "--host", "gemini", "--scope", "project"]);
    assert!(!run.ok);
    assert!(run.stdout.contains("@@"), "{}", run.stdout);
    assert!(run.stderr.contains("--yes"), "{}", run.stderr);
    assert_eq!(home.snapshot(), before);
}

#[test]
fn uninstall_refuses_to_lose_later_edits_unless_forced() {
    let home = Home::new();
    let settings = home.project.join(".gemini/settings.json");
    let hooks_file = home.project.join(".hookd/hooks.json");
    home.write(&settings, GEMINI_USER);
    // An existing hookd file, in another project dir given by --cwd.
    let before = home.snapshot();
    let cwd = home.project.display().to_string();
    home.ok(&[
        "install", "--host", "gemini", "--scope", "project", "--cwd", &cwd, "--yes",
    ]);
    assert!(hooks_file.exists());

    let edited = std::fs::read_to_string(&hooks_file)
        .unwrap()
        .replace("guard.sh", "guard2.sh");
    std::fs::write(&hooks_file, &edited).unwrap();
    let run = home.hookctl(&[
        "uninstall",
        "--host",
        "gemini",
        "--scope",
        "project",
        "--cwd",
        &cwd,
    ]);
    assert!(!run.ok);
    assert!(
        run.stderr.contains(&hooks_file.display().to_string()) && run.stderr.contains("--force"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&hooks_file).unwrap(), edited);

    home.ok(&[
        "uninstall",
        "--host",
        "gemini",
        "--scope",
        "project",
        "--cwd",
        &cwd,
        "--force",
    ]);
    assert_eq!(home.snapshot(), before);
}

#[test]
fn a_later_install_is_undone_first() {
    let home = Home::new();
    let settings = home.home.join(".gemini/settings.json");
    home.write(&settings, GEMINI_USER);
    let original = home.snapshot();
    home.ok(&["install", "--host", "gemini", "--yes"]);

    // A hook added to the host file after the install is moved by the next one.
    let mut host = parse(&settings);
    host["hooks"]["SessionStart"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [{"type": "command", "command": "hello.sh"}]}));
    std::fs::write(&settings, serde_json::to_string_pretty(&host).unwrap()).unwrap();
    let edited = home.snapshot();
    let report = home.ok(&["install", "--host", "gemini", "--yes"]);
    assert!(report.contains("1 hook definition(s) move"), "{report}");
    let moved = parse(&home.home.join(".config/hookd/hooks.json"));
    assert_eq!(
        moved["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        json!("hello.sh")
    );

    let report = home.ok(&["uninstall", "--host", "gemini"]);
    assert!(report.contains("run uninstall again"), "{report}");
    assert_eq!(home.snapshot(), edited);
    home.ok(&["uninstall", "--host", "gemini", "--force"]);
    assert_eq!(home.snapshot(), original);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installed_relay_entries_run_the_moved_hooks_through_the_daemon() {
    let project_settings = r#"{
  "hooks": {
    "BeforeTool": [{"matcher": "run_shell_command", "hooks": [
      {"type": "command", "name": "no-rm", "command": "echo 'rm is not allowed' >&2; exit 2"}
    ]}]
  }
}"#;
    let fixture = common::Fixture::start(project_settings, None).await;
    let project = fixture.project.display().to_string();
    let home = fixture.home.clone();
    let run_install = move |args: Vec<String>| {
        let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(&args)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("GEMINI_CLI_HOME")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    };
    let args: Vec<String> = [
        "install", "--host", "gemini", "--scope", "project", "--yes", "--cwd",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .chain([project.clone()])
    .collect();
    tokio::task::spawn_blocking(move || run_install(args))
        .await
        .unwrap();

    // What Gemini CLI would run for a shell command: the relay entry's command line.
    let host = parse(&fixture.project.join(".gemini/settings.json"));
    let command = host["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let payload = json!({"session_id": "s", "transcript_path": "", "cwd": project,
        "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00.000Z",
        "tool_name": "run_shell_command", "tool_input": {"command": "rm -rf /"}});
    let socket = fixture.socket.clone();
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(&command)
            .env("HOOKD_SOCKET", &socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["decision"], json!("deny"), "{answer}");
    assert_eq!(answer["reason"], json!("rm is not allowed"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installed_claude_hooks_keep_claudes_rules_through_the_relay() {
    let fixture = common::Fixture::start("{}", None).await;
    let project = fixture.project.display().to_string();
    let claude_file = fixture.project.join(".claude/settings.json");
    std::fs::create_dir_all(claude_file.parent().unwrap()).unwrap();
    // Claude Code's rule: exit 2 blocks, with stderr as the reason.
    std::fs::write(
        &claude_file,
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "grep -q 'rm -rf' && { echo 'no rm -rf' >&2; exit 2; }; exit 0"}
        ]}]}}"#,
    )
    .unwrap();
    let home = fixture.home.clone();
    let install = project.clone();
    tokio::task::spawn_blocking(move || {
        let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(["install", "--host", "claude", "--scope", "project", "--yes"])
            .arg("--cwd")
            .arg(&install)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    })
    .await
    .unwrap();

    let host = parse(&claude_file);
    let command = host["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let socket = fixture.socket.clone();
    let ask = move |tool_command: &str| {
        let payload = json!({"session_id": "s", "transcript_path": "", "cwd": project,
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": tool_command}});
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(&command)
            .env("HOOKD_SOCKET", &socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes());
        child.wait_with_output().unwrap()
    };
    let (denied, allowed) = tokio::task::spawn_blocking(move || (ask("rm -rf /"), ask("ls")))
        .await
        .unwrap();
    assert!(denied.status.success(), "{denied:?}");
    let answer: Value = serde_json::from_slice(&denied.stdout).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"],
        json!({"hookEventName": "PreToolUse", "permissionDecision": "deny",
               "permissionDecisionReason": "no rm -rf"}),
        "{answer}"
    );
    assert!(allowed.status.success(), "{allowed:?}");
    assert_eq!(String::from_utf8_lossy(&allowed.stdout), "");
}
