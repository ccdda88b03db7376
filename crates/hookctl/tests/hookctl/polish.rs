//! The command line's rough edges, each pinned: validate's exit codes and matcher check,
//! emit's inline input and deny exit code, errors said once with a hint and no backtrace,
//! and enable, disable and trust --list without a daemon.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::Fixture;
use hookd_testkit::Hermetic;
use serde_json::Value;

/// Runs hookctl in `cwd` with `home` as HOME and a socket nobody listens on.
fn offline(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .arg("--socket")
        .arg(home.join("no-daemon/hookd.sock"))
        .args(args)
        .current_dir(cwd)
        .hermetic(home)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn validate_fails_on_dropped_hooks_unknown_events_and_invalid_matchers() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"hooks":{"BeforeTool":[{"matcher":"[unclosed","hooks":[{"type":"command","command":"x"}]}]}}"#,
            1,
            "matcher \"[unclosed\" is not a valid regular expression",
        ),
        (
            r#"{"hooks":{"BeforeTol":[{"hooks":[{"type":"command","command":"x"}]}]}}"#,
            1,
            "Invalid hook event name: \"BeforeTol\"",
        ),
        (
            r#"{"hooks":{"AfterTool":[{"hooks":[{"type":"commnd","command":"x"}]}]}}"#,
            1,
            "Discarding hook",
        ),
        (
            r#"{"hooks":{"BeforeTool":[{"matcher":"run_shell_command|write_.*","hooks":[{"type":"command","command":"x"}]}]}}"#,
            0,
            "1 hook(s), 0 error(s), 0 warning(s)",
        ),
    ];
    for (settings, code, expected) in cases {
        let file = dir.path().join("settings.json");
        std::fs::write(&file, settings).unwrap();
        let output = offline(
            dir.path(),
            dir.path(),
            &["validate", file.to_str().unwrap()],
        );
        assert_eq!(output.status.code(), Some(code), "{settings}: {output:?}");
        assert!(
            text(&output.stdout).contains(expected),
            "{settings}: {output:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emit_takes_inline_json_and_exits_two_on_deny() {
    let settings = r#"{"hooks":{"BeforeTool":[{"hooks":[{"name":"no","type":"command",
      "command":"echo '{\"decision\":\"deny\",\"reason\":\"never\"}'"}]}]}}"#;
    let fixture = Fixture::start(settings, None).await;
    let output = fixture
        .hookctl(
            &[
                "emit",
                "BeforeTool",
                "--input",
                r#"{"tool_name":"x"}"#,
                "--json",
            ],
            "",
        )
        .await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["final_output"]["reason"], "never");
}

#[test]
fn errors_name_the_problem_once_without_a_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let output = offline(
        dir.path(),
        dir.path(),
        &["emit", "BeforeTool", "--input", missing.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("backtrace"), "{stderr}");

    let output = offline(dir.path(), dir.path(), &["status"]);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("no socket there") && stderr.contains("hookctl doctor"),
        "{stderr}"
    );
    assert!(!stderr.contains("backtrace"), "{stderr}");
}

#[test]
fn disable_enable_and_trust_list_work_without_a_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::create_dir_all(project.join(".gemini")).unwrap();
    std::fs::write(
        project.join(".gemini/settings.json"),
        r#"{"hooks":{"BeforeTool":[{"hooks":[{"name":"guard","type":"command","command":"x"}]}]}}"#,
    )
    .unwrap();
    let user = home.join(".gemini/settings.json");
    let disabled = |path: &Path| -> Value {
        let settings: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        settings["hooksConfig"]["disabled"].clone()
    };

    let output = offline(&home, &project, &["disable", "guard"]);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text(&output.stdout).contains("hookd is not running"),
        "{output:?}"
    );
    assert!(!text(&output.stdout).contains("warning"), "{output:?}");
    assert_eq!(disabled(&user), serde_json::json!(["guard"]));

    let output = offline(&home, &project, &["disable", "gaurd"]);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text(&output.stdout).contains("warning: no hook named \"gaurd\" is configured"),
        "{output:?}"
    );

    let output = offline(&home, &project, &["enable", "guard"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(disabled(&user), serde_json::json!(["gaurd"]));

    let output = offline(&home, &project, &["trust", "--list"]);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text(&output.stdout).starts_with("No hooks are trusted"),
        "{output:?}"
    );
}

#[test]
fn completions_and_man_pages_come_from_the_definitions() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let output = offline(dir.path(), dir.path(), &["completions", shell]);
        assert!(output.status.success(), "{shell}: {output:?}");
        let script = text(&output.stdout);
        for subcommand in ["doctor", "stats", "replay", "emit"] {
            assert!(script.contains(subcommand), "{shell} lacks {subcommand}");
        }
    }
    let output = offline(dir.path(), dir.path(), &["man"]);
    assert!(output.status.success(), "{output:?}");
    let page = text(&output.stdout);
    assert!(
        page.contains(".TH hookctl 1") && page.contains("doctor"),
        "{page}"
    );
    let pages = dir.path().join("man");
    let output = offline(
        dir.path(),
        dir.path(),
        &["man", "--out", pages.to_str().unwrap()],
    );
    assert!(output.status.success(), "{output:?}");
    let replay = std::fs::read_to_string(pages.join("hookctl-replay.1")).unwrap();
    assert!(replay.contains(".TH hookctl-replay 1"), "{replay}");
}

#[test]
fn the_relay_binary_says_its_version() {
    let version = Command::new(env!("CARGO_BIN_EXE_hookd-relay"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success(), "{version:?}");
    assert_eq!(
        text(&version.stdout),
        format!("hookd-relay {}\n", env!("CARGO_PKG_VERSION"))
    );
    let hookctl = Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .arg("--version")
        .output()
        .unwrap();
    // The same build: doctor compares the two numbers.
    assert_eq!(
        text(&hookctl.stdout).split_whitespace().nth(1),
        text(&version.stdout).split_whitespace().nth(1)
    );
}
