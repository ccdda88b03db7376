//! Copilot CLI's hook files as layers (`hookd --copilot-settings`): a guard written only in
//! `~/.copilot/hooks/guard.json` guards the other hosts' events in Copilot's own language, is
//! skipped for the events Copilot relays (Copilot ran it already), and new files in the
//! folders are picked up as they appear; a repository's `.github/hooks/` counts only where
//! Copilot trusts the project.

use std::path::Path;
use std::time::Duration;

use hookd_client::Client;
use hookd_testkit::{Daemon, DaemonOptions, RawConn, SEEN_WITHIN, write};
use serde_json::{Value, json};

/// A Copilot hooks file whose `preToolUse` guard logs the payload it reads to `log` and denies
/// `rm -rf` in Copilot's words.
fn copilot_guard(log: &Path, reason: &str) -> String {
    let line = format!(
        "input=$(cat); printf '%s\\n' \"$input\" >> {}; case \"$input\" in *'rm -rf'*) \
         echo '{{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"{reason}\"}}';; esac",
        log.display()
    );
    json!({"version": 1, "hooks": {"preToolUse": [
        {"type": "command", "bash": line, "timeoutSec": 10}
    ]}})
    .to_string()
}

/// Sends a BeforeTool event for `command` relayed by `relayed_by` (`None`: no host's relay).
async fn before_tool(
    conn: &mut RawConn,
    id: u64,
    cwd: &str,
    command: &str,
    relayed_by: Option<&str>,
) -> Value {
    let mut request = json!({
        "type": "event", "id": id, "event": "BeforeTool", "cwd": cwd, "session_id": "s1",
        "input": {"tool_name": "run_shell_command", "tool_input": {"command": command}},
    });
    if let Some(host) = relayed_by {
        request["relayed_by"] = json!(host);
    }
    conn.send(&request).await;
    let answer = conn.recv().await.expect("an answer");
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["type"], "result", "{answer}");
    answer
}

fn logged(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// `(source, file)` of every listed hook of `cwd`.
async fn listed(client: &Client, cwd: &str) -> Vec<(String, String)> {
    let listing = client.list(cwd.to_owned()).await.expect("list");
    listing
        .hooks
        .into_iter()
        .map(|hook| (hook.source, hook.path.unwrap_or_default()))
        .collect()
}

/// Waits until the listing of `cwd` is `expected`.
async fn listed_within(client: &Client, cwd: &str, expected: &[(String, String)]) {
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let now = listed(client, cwd).await;
        if now == expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "listed {now:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copilot_guard_guards_other_hosts_and_is_skipped_for_copilots_own_events() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let log = scratch.path().join("guard.log");
    let options = DaemonOptions {
        files: vec![
            (
                "home/.copilot/hooks/guard.json".into(),
                copilot_guard(&log, "copilot guard"),
            ),
            // hookd's own relay file in the folder is never a layer.
            (
                "home/.copilot/hooks/hookd.json".into(),
                copilot_guard(&log, "relay file"),
            ),
        ],
        configure: Box::new(|config| {
            config.host_layers = vec![hookd_core::dialect::Dialect::COPILOT];
        }),
    };
    let daemon = Daemon::start_with(json!({}), options).await;
    let cwd = daemon.cwd();
    let mut conn = RawConn::connect_hello(&daemon.socket).await;

    // (relayed by, the guard runs in hookd)
    let cases = [
        (Some("gemini"), true),
        (Some("claude"), true),
        (Some("codex"), true),
        (None, true),
        // Copilot CLI ran the hooks of its own files before it relayed the event.
        (Some("copilot"), false),
    ];
    for (id, (relayed_by, runs)) in (1..).zip(cases) {
        let before = logged(&log).len();
        let answer = before_tool(&mut conn, id, &cwd, "rm -rf /tmp/x", relayed_by).await;
        let ran = logged(&log);
        if runs {
            assert_eq!(ran.len(), before + 1, "{relayed_by:?}: {answer}");
            assert_eq!(answer["final_output"]["decision"], "deny", "{answer}");
            assert_eq!(
                answer["final_output"]["reason"], "copilot guard",
                "{answer}"
            );
            // The guard read Copilot's payload, not hookd's.
            let payload = &ran[before];
            assert_eq!(payload["toolName"], "bash", "{payload}");
            assert_eq!(payload["toolArgs"]["command"], "rm -rf /tmp/x", "{payload}");
        } else {
            assert_eq!(ran.len(), before, "{relayed_by:?}: {answer}");
            assert_ne!(answer["final_output"]["decision"], "deny", "{answer}");
        }
    }
    // A harmless command is let through.
    let answer = before_tool(&mut conn, 20, &cwd, "ls", Some("gemini")).await;
    assert_ne!(answer["final_output"]["decision"], "deny", "{answer}");

    let client = daemon.client().await;
    let file = |relative: &str| daemon.dir.path().join(relative).display().to_string();
    assert_eq!(
        listed(&client, &cwd).await,
        [("user".to_owned(), file("home/.copilot/hooks/guard.json"))]
    );

    // A repository's hooks folder counts only where Copilot trusts the project, as in
    // Copilot: until then hookd says so, and does not read it.
    write(
        &daemon.project.join(".github/hooks/repo.json"),
        &copilot_guard(&log, "repo"),
    );
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let listing = client.list(cwd.clone()).await.expect("list");
        if listing
            .diagnostics
            .iter()
            .any(|diagnostic| diagnostic.message.contains("does not trust"))
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listing:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        listed(&client, &cwd).await,
        [("user".to_owned(), file("home/.copilot/hooks/guard.json"))]
    );

    // A file added to the folder is a new layer, without a restart.
    write(
        &daemon.home.join(".copilot/hooks/more.json"),
        &copilot_guard(&log, "more"),
    );
    listed_within(
        &client,
        &cwd,
        &[
            ("user".to_owned(), file("home/.copilot/hooks/guard.json")),
            ("user".to_owned(), file("home/.copilot/hooks/more.json")),
        ],
    )
    .await;

    // Trusted by Copilot: the repository's files are read.
    write(
        &daemon.home.join(".copilot/config.json"),
        &json!({"trustedFolders": [daemon.project]}).to_string(),
    );
    listed_within(
        &client,
        &cwd,
        &[
            (
                "project".to_owned(),
                file("project/.github/hooks/repo.json"),
            ),
            ("user".to_owned(), file("home/.copilot/hooks/guard.json")),
            ("user".to_owned(), file("home/.copilot/hooks/more.json")),
        ],
    )
    .await;

    // A file removed is a layer gone.
    std::fs::remove_file(daemon.home.join(".copilot/hooks/more.json")).expect("remove");
    listed_within(
        &client,
        &cwd,
        &[
            (
                "project".to_owned(),
                file("project/.github/hooks/repo.json"),
            ),
            ("user".to_owned(), file("home/.copilot/hooks/guard.json")),
        ],
    )
    .await;
    daemon.stop().await;
}
