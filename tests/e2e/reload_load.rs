//! 200 rapid edits of a project's settings while 10 clients fire events: no event fails, no
//! answer mixes two versions of the file, each client sees versions in order, and once the
//! edits stop the registry is exactly the final file.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hookd_client::EventRequest;
use hookd_testkit::{Daemon, command_hook, fire_request, settings, write};
use serde_json::{Value, json};
use tokio::task::JoinSet;

const EDITS: usize = 200;
const CLIENTS: usize = 10;

/// Version `n` of the settings: two hooks named `v<n>-a` and `v<n>-b`, so every answer tells
/// which version(s) it ran.
fn version(n: usize) -> Value {
    settings(&[(
        "BeforeTool",
        None,
        vec![
            command_hook(&format!("v{n}-a"), "true"),
            command_hook(&format!("v{n}-b"), "true"),
        ],
    )])
}

/// The version an answer ran, checking that both hooks come from it.
fn version_of(hooks: &[hookd_protocol::HookRecord]) -> usize {
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    let versions: Vec<usize> = hooks
        .iter()
        .map(|hook| {
            let (version, _) = hook.name[1..].split_once('-').expect("v<n>-x");
            version.parse().expect("a version number")
        })
        .collect();
    assert_eq!(versions[0], versions[1], "a torn registry: {hooks:?}");
    assert!(hooks.iter().all(|hook| hook.success), "{hooks:?}");
    versions[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_edits_under_load_never_tear_a_registry() {
    let daemon = Daemon::start(version(0)).await;
    let cwd = daemon.cwd();
    let path = daemon.project.join(".gemini/settings.json");
    let editing = Arc::new(AtomicBool::new(true));

    let mut clients = JoinSet::new();
    for _ in 0..CLIENTS {
        let client = daemon.client().await;
        let cwd = cwd.clone();
        let editing = Arc::clone(&editing);
        clients.spawn(async move {
            let mut last_version = 0;
            let mut last_generation = 0;
            let mut answered = 0usize;
            // At least a few events each, then until the edits stop.
            while answered < 5 || editing.load(Ordering::Acquire) {
                let request = EventRequest::new("BeforeTool", &cwd)
                    .with_input(hookd_testkit::input(json!({"tool_name": "t"})));
                let response = fire_request(&client, request).await;
                assert!(response.result.success, "{response:?}");
                let version = version_of(&response.result.hooks);
                assert!(
                    version >= last_version,
                    "went back from {last_version} to {version}"
                );
                assert!(response.generation >= last_generation);
                last_version = version;
                last_generation = response.generation;
                answered += 1;
            }
            answered
        });
    }

    for n in 1..=EDITS {
        let text = serde_json::to_string_pretty(&version(n)).unwrap();
        if n % 7 == 0 {
            // Some saves in place: a reader may catch a half-written file, which must
            // never take the hooks away.
            write(&path, &text);
        } else {
            let temp = path.with_extension("json.tmp");
            write(&temp, &text);
            std::fs::rename(&temp, &path).unwrap();
        }
        // Rapid, but leave the clients some room to interleave with the edits.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }

    // The final file wins: poll until an event runs it (bounded).
    let client = daemon.client().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let request = EventRequest::new("BeforeTool", &cwd)
            .with_input(hookd_testkit::input(json!({"tool_name": "t"})));
        let response = fire_request(&client, request).await;
        if version_of(&response.result.hooks) == EDITS {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the final version never took effect: {response:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    editing.store(false, Ordering::Release);
    let mut total = 0;
    while let Some(answered) = clients.join_next().await {
        total += answered.expect("a client saw only whole versions, in order");
    }
    assert!(total >= CLIENTS * 5);

    let listing = client.list(&cwd).await.unwrap();
    let names: Vec<&str> = listing
        .hooks
        .iter()
        .map(|hook| hook.name.as_str())
        .collect();
    assert_eq!(names, [format!("v{EDITS}-a"), format!("v{EDITS}-b")]);
    assert!(
        listing
            .diagnostics
            .iter()
            .all(|d| d.severity != hookd_protocol::Severity::Error),
        "{listing:?}"
    );
    daemon.stop().await;
}
