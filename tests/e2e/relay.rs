//! The settings layers behind `hookctl relay` and `hookctl install`: hookd's own hooks files
//! (`$XDG_CONFIG_HOME/hookd/hooks.json` as a user layer, `<project>/.hookd/hooks.json` as a
//! project layer) and, with `hookd --claude-settings`, Claude Code's settings files. Each is
//! labelled with its real source and file, ordered after the agent CLI's own file of its
//! scope, watched for changes, and kept at its last good version when a save breaks it.

use std::path::Path;
use std::time::Duration;

use hookd_client::Client;
use hookd_protocol::Severity;
use hookd_testkit::{
    Daemon, DaemonOptions, SEEN_WITHIN, command_hook, fire, message, saying, settings,
    wait_for_message, write,
};
use serde_json::{Value, json};

fn text(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("json")
}

/// `(source, name, file)` of every listed hook of `cwd`.
async fn listed(client: &Client, cwd: &str) -> Vec<(String, String, String)> {
    let listing = client.list(cwd.to_owned()).await.expect("list");
    listing
        .hooks
        .into_iter()
        .map(|hook| (hook.source, hook.name, hook.path.unwrap_or_default()))
        .collect()
}

fn path_string(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookds_own_files_follow_the_cli_files_of_their_scope() {
    let options = DaemonOptions {
        files: vec![
            (
                "home/.gemini/settings.json".into(),
                text(&saying("gemini-user", "gemini user")),
            ),
            (
                "home/.config/hookd/hooks.json".into(),
                text(&saying("hookd-user", "hookd user")),
            ),
            (
                "project/.hookd/hooks.json".into(),
                text(&saying("hookd-project", "hookd project")),
            ),
        ],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(saying("gemini-project", "gemini project"), options).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let root = daemon.dir.path();
    assert_eq!(
        listed(&client, &cwd).await,
        [
            (
                "project".into(),
                "gemini-project".into(),
                path_string(&daemon.project.join(".gemini/settings.json"))
            ),
            (
                "project".into(),
                "hookd-project".into(),
                path_string(&daemon.project.join(".hookd/hooks.json"))
            ),
            (
                "user".into(),
                "gemini-user".into(),
                path_string(&daemon.home.join(".gemini/settings.json"))
            ),
            (
                "user".into(),
                "hookd-user".into(),
                path_string(&root.join("home/.config/hookd/hooks.json"))
            ),
        ]
    );
    assert_eq!(
        message(&client, &cwd).await.as_deref(),
        Some("gemini project\nhookd project\ngemini user\nhookd user")
    );

    // The same hook in the CLI's file and in hookd's runs once, from the CLI's file.
    let counter = root.join("count.log");
    let counting = settings(&[(
        "SessionStart",
        None,
        vec![command_hook(
            "count",
            &format!("echo run >> {}", counter.display()),
        )],
    )]);
    write(
        &daemon.project.join(".gemini/settings.json"),
        &text(&counting),
    );
    write(&daemon.project.join(".hookd/hooks.json"), &text(&counting));
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let names: Vec<String> = listed(&client, &cwd)
            .await
            .into_iter()
            .map(|hook| hook.1)
            .collect();
        if names.iter().filter(|name| *name == "count").count() == 2 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{names:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let result = fire(&client, &cwd, "SessionStart", json!({"source": "startup"})).await;
    assert_eq!(result.hooks.len(), 1, "{result:?}");
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "run\n");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookds_files_are_watched_and_a_bad_save_keeps_the_last_good_one() {
    let daemon = Daemon::start(json!({})).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    assert_eq!(message(&client, &cwd).await, None);

    // Neither `.hookd/` nor `~/.config/hookd/` exists yet.
    let project_file = daemon.project.join(".hookd/hooks.json");
    let user_file = daemon.home.join(".config/hookd/hooks.json");
    write(&project_file, &text(&saying("p", "from .hookd")));
    wait_for_message(&client, &cwd, Some("from .hookd")).await;
    write(&user_file, &text(&saying("u", "from config")));
    wait_for_message(&client, &cwd, Some("from .hookd\nfrom config")).await;

    // A broken save: the last good version stays in force, and the error names the file.
    write(&project_file, "{ \"hooks\": ");
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let listing = client.list(cwd.clone()).await.expect("list");
        let reported = listing.diagnostics.iter().any(|diagnostic| {
            diagnostic.severity == Severity::Error
                && diagnostic.path.as_deref() == Some(project_file.to_str().unwrap())
        });
        if reported {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listing:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        message(&client, &cwd).await.as_deref(),
        Some("from .hookd\nfrom config")
    );
    write(&project_file, &text(&saying("p", "fixed")));
    wait_for_message(&client, &cwd, Some("fixed\nfrom config")).await;
    std::fs::remove_file(&user_file).unwrap();
    wait_for_message(&client, &cwd, Some("fixed")).await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookds_project_file_is_a_project_layer_for_folder_trust() {
    let options = DaemonOptions {
        files: vec![
            (
                "home/.config/hookd/hooks.json".into(),
                text(&saying("u", "user")),
            ),
            (
                "project/.hookd/hooks.json".into(),
                text(&saying("p", "project")),
            ),
        ],
        configure: Box::new(|config| {
            config
                .env
                .insert("GEMINI_CLI_TRUST_WORKSPACE".into(), "false".into());
        }),
    };
    let daemon = Daemon::start_with(json!({}), options).await;
    let client = daemon.client().await;
    assert_eq!(message(&client, &daemon.cwd()).await, None);
    let listing = client.list(daemon.cwd()).await.expect("list");
    assert!(listing.hooks.is_empty(), "{listing:?}");
    daemon.stop().await;
}

/// A Claude Code settings file whose UserPromptSubmit hook appends `line` to `log`.
fn claude_settings(log: &Path, line: &str) -> String {
    text(&json!({
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "UserPromptSubmit": [{"hooks": [
                {"type": "command", "command": format!("cat >/dev/null; echo {line} >> {}", log.display())}
            ]}]
        }
    }))
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn start_with_claude(on: bool, files: Vec<(String, String)>) -> Daemon {
    let options = DaemonOptions {
        files,
        configure: Box::new(move |config| {
            config.host_layers = if on {
                vec![hookd_core::dialect::Dialect::CLAUDE]
            } else {
                Vec::new()
            }
        }),
    };
    Daemon::start_with(json!({}), options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_settings_hooks_run_for_their_gemini_event_only_when_enabled() {
    for on in [false, true] {
        let scratch = tempfile::tempdir().unwrap();
        let log = scratch.path().join("claude.log");
        let files = vec![
            (
                "home/.claude/settings.json".to_owned(),
                claude_settings(&log, "user"),
            ),
            (
                "project/.claude/settings.json".to_owned(),
                claude_settings(&log, "project"),
            ),
            (
                "project/.claude/settings.local.json".to_owned(),
                claude_settings(&log, "local"),
            ),
        ];
        let daemon = start_with_claude(on, files).await;
        let client = daemon.client().await;
        let cwd = daemon.cwd();
        let result = fire(&client, &cwd, "BeforeAgent", json!({"prompt": "hi"})).await;
        assert!(result.success, "{result:?}");
        // UserPromptSubmit is BeforeAgent; no other event runs them.
        fire(&client, &cwd, "SessionStart", json!({"source": "startup"})).await;
        if on {
            // Hooks of one event run in parallel: each once, in any order.
            let mut ran = lines(&log);
            ran.sort();
            assert_eq!(ran, ["local", "project", "user"]);
            let claude = |file: &str| path_string(&daemon.dir.path().join(file));
            let sources: Vec<(String, String)> = listed(&client, &cwd)
                .await
                .into_iter()
                .map(|(source, _, path)| (source, path))
                .collect();
            assert_eq!(
                sources,
                [
                    ("project".into(), claude("project/.claude/settings.json")),
                    (
                        "project".into(),
                        claude("project/.claude/settings.local.json")
                    ),
                    ("user".into(), claude("home/.claude/settings.json")),
                ]
            );
        } else {
            assert_eq!(lines(&log), Vec::<String>::new());
            assert!(listed(&client, &cwd).await.is_empty());
        }
        daemon.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_settings_are_watched_and_their_problems_name_the_file() {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("claude.log");
    let daemon = start_with_claude(true, Vec::new()).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    fire(&client, &cwd, "BeforeAgent", json!({"prompt": "hi"})).await;
    assert!(lines(&log).is_empty());

    // `.claude/` appears after the project was loaded.
    let file = daemon.project.join(".claude/settings.json");
    write(&file, &claude_settings(&log, "first"));
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        fire(&client, &cwd, "BeforeAgent", json!({"prompt": "hi"})).await;
        if lines(&log).contains(&"first".to_owned()) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new file was not seen"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // A broken save keeps the last good version; the error names the Claude file. A hook
    // hookd cannot run (a prompt hook) is a warning naming it.
    write(&file, "{ \"hooks\": {");
    let user_file = daemon.home.join(".claude/settings.json");
    write(
        &user_file,
        &text(&json!({"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}]}})),
    );
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let listing = client.list(cwd.clone()).await.expect("list");
        let named = |severity: Severity, path: &Path| {
            listing.diagnostics.iter().any(|diagnostic| {
                diagnostic.severity == severity
                    && diagnostic.path.as_deref() == Some(path.to_str().unwrap())
            })
        };
        if named(Severity::Error, &file) && named(Severity::Warning, &user_file) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listing:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = lines(&log).len();
    fire(&client, &cwd, "BeforeAgent", json!({"prompt": "hi"})).await;
    assert_eq!(lines(&log)[before..], ["first".to_owned()]);
    daemon.stop().await;
}
