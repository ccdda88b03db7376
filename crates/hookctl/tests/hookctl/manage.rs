//! The management commands of the real `hookctl` binary against an in-process daemon:
//! `disable`/`enable` (user scope by default, `--project`), the `-all` variants, `list` with
//! last runs, `reload`, `watch` and `validate`.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;

use common::{Fixture, run_hookctl};

const PROJECT: &str = r#"{
  "hooks": {
    "BeforeTool": [
      {"hooks": [
        {"name": "guard", "type": "command", "command": "true", "description": "blocks nothing"},
        {"name": "lint", "type": "command", "command": "exit 1"}
      ]}
    ]
  }
}"#;

const USER: &str = "{\n  // keep me\n  \"theme\": \"dark\"\n}\n";

/// Starts the fixture with this file's project and user settings.
async fn start() -> Fixture {
    Fixture::start(PROJECT, Some(USER)).await
}

/// The user settings file's text.
fn user_settings(fixture: &Fixture) -> String {
    std::fs::read_to_string(fixture.home.join(".gemini/settings.json")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_enable_and_the_panel() {
    let fixture = start().await;
    let user = fixture.home.join(".gemini/settings.json");
    let project = fixture.project.join(".gemini/settings.json");

    // Run the hooks once so the panel has a last run for each.
    fixture.ok(&["emit", "BeforeTool"]).await;
    let panel = fixture.ok(&["list"]).await;
    assert!(
        panel.contains("  guard [enabled]\n    blocks nothing\n"),
        "{panel}"
    );
    assert!(panel.contains("Last run: ok in "), "{panel}");
    assert!(panel.contains("Last run: failed in "), "{panel}");

    let out = fixture.ok(&["disable", "guard"]).await;
    assert_eq!(
        out,
        format!(
            "Hook \"guard\" disabled by adding it to the disabled list in user ({}) settings.\n",
            user.display()
        )
    );
    let text = user_settings(&fixture);
    assert!(
        text.contains("// keep me") && text.contains("\"theme\": \"dark\""),
        "{text}"
    );
    assert!(text.contains("\"disabled\": [\"guard\"]"), "{text}");
    assert!(fixture.ok(&["list"]).await.contains("  guard [disabled]"));

    let out = fixture.ok(&["disable", "lint", "--project", "."]).await;
    assert!(
        out.contains(&format!("project ({})", project.display())),
        "{out}"
    );
    let out = fixture.ok(&["enable", "lint"]).await;
    assert!(out.contains("enabled by removing it"), "{out}");

    let out = fixture.ok(&["enable-all"]).await;
    assert_eq!(out, "Enabled 1 hook(s) successfully.\n");
    let out = fixture.ok(&["disable-all", "--project", "."]).await;
    assert_eq!(out, "Disabled 2 hook(s) successfully.\n");
    let out = fixture.ok(&["enable-all"]).await;
    assert_eq!(out, "Enabled 2 hook(s) successfully.\n");
    assert!(user_settings(&fixture).contains("// keep me"));

    let out = fixture.ok(&["reload"]).await;
    assert!(out.starts_with("reloaded 1 registry\n"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_a_change() {
    let fixture = start().await;
    let cwd = fixture.project.display().to_string();
    // Load the project, then watch it while an edit happens.
    fixture.ok(&["list"]).await;
    let watcher = {
        let socket = fixture.socket.clone();
        let project = fixture.project.clone();
        let args = vec![
            "watch".to_owned(),
            "--cwd".to_owned(),
            cwd.clone(),
            "--count".to_owned(),
            "1".to_owned(),
        ];
        tokio::task::spawn_blocking(move || run_hookctl(&socket, &project, &args, ""))
    };
    // The change is made by the daemon, after `watch` has subscribed: repeat the toggle until
    // the watcher has seen one (bounded), since the subscription may not be in place yet.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !watcher.is_finished() {
        assert!(std::time::Instant::now() < deadline, "watch saw nothing");
        fixture.ok(&["disable", "guard", "--project", "."]).await;
        fixture.ok(&["enable", "guard"]).await;
    }
    let output = watcher.await.unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let change: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(change["type"], "registry_changed");
    assert_eq!(change["cwd"], cwd.as_str());
    assert_eq!(change["layers"], serde_json::json!(["project"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_needs_no_daemon_and_fails_on_errors() {
    let fixture = start().await;
    // The default file is ./.gemini/settings.json.
    let out = fixture.ok(&["validate"]).await;
    assert!(
        out.ends_with("2 hook(s), 0 error(s), 0 warning(s)\n"),
        "{out}"
    );

    let bad = fixture.project.join("bad.json");
    std::fs::write(&bad, "{\n  \"hooks\": {\"BeforeTool\": [}\n}").unwrap();
    let output = fixture.hookctl(&["validate", "bad.json"], "").await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains(&format!("error: {}:2:", bad.display())),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("0 hook(s), 1 error(s), 0 warning(s)\n"),
        "{stdout}"
    );
    // No daemon is needed: a socket nobody listens on does not matter.
    let output = tokio::task::spawn_blocking({
        let project = fixture.project.clone();
        move || {
            run_hookctl(
                Path::new("/nonexistent/hookd.sock"),
                &project,
                &["validate".to_owned()],
                "",
            )
        }
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{output:?}");
}
