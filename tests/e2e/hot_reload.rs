//! Hot reload: the daemon watches every settings layer, so the next event after a save sees
//! it, without SIGHUP. A bad save keeps the last good hooks in force and is reported; fixing
//! it clears the report. New project directories, `.gemini/` directories created later,
//! extensions coming and going and `hooksConfig.enabled` are all picked up; subscribers hear
//! about each swap.
//!
//! Nothing here sleeps to wait: every wait polls for an observable condition with a bound of
//! seconds.

use std::path::Path;
use std::time::Duration;

use hookd_client::Client;
use hookd_protocol::{Severity, StatusResponse};
use hookd_testkit::{Daemon, SEEN_WITHIN, message, saying, wait_for_message, within, write};
use serde_json::{Value, json};

/// Polls `status` until `condition` holds for it, and returns that status.
async fn wait_for_status(
    client: &Client,
    what: &str,
    condition: impl Fn(&StatusResponse) -> bool,
) -> StatusResponse {
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let status = client.status().await.expect("status");
        if condition(&status) {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Saves `value` the way editors do: a new file renamed over the old one.
fn save_by_rename(path: &Path, value: &Value) {
    let temp = path.with_extension("json.swp");
    write(&temp, &serde_json::to_string_pretty(value).expect("json"));
    std::fs::rename(&temp, path).expect("rename over");
}

fn project_settings(daemon: &Daemon) -> std::path::PathBuf {
    daemon.project.join(".gemini/settings.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_is_seen_by_the_next_event_without_a_reload() {
    let daemon = Daemon::start(saying("v", "one")).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let first = hookd_testkit::fire_request(
        &client,
        hookd_client::EventRequest::new("BeforeAgent", &cwd),
    )
    .await;
    assert_eq!(first.result.final_output.unwrap()["systemMessage"], "one");

    // Written in place.
    write(
        &project_settings(&daemon),
        &serde_json::to_string(&saying("v", "two")).unwrap(),
    );
    wait_for_message(&client, &cwd, Some("two")).await;
    // Saved by rename, as editors do.
    save_by_rename(&project_settings(&daemon), &saying("v", "three"));
    wait_for_message(&client, &cwd, Some("three")).await;

    let last = hookd_testkit::fire_request(
        &client,
        hookd_client::EventRequest::new("BeforeAgent", &cwd),
    )
    .await;
    assert!(last.generation > first.generation);
    let status = client.status().await.unwrap();
    assert_eq!(status.registries.len(), 1);
    assert_eq!(status.registries[0].generation, last.generation);
    // The file is gone: its layer just goes away, without an error.
    std::fs::remove_file(project_settings(&daemon)).unwrap();
    wait_for_message(&client, &cwd, None).await;
    let status = client.status().await.unwrap();
    assert!(
        status.registries[0]
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error),
        "{status:?}"
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_save_keeps_the_last_good_hooks_until_it_is_fixed() {
    let daemon = Daemon::start(saying("v", "good")).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    assert_eq!(message(&client, &cwd).await.as_deref(), Some("good"));

    let path = project_settings(&daemon);
    write(
        &path,
        "{\n  \"hooks\": {\n    \"BeforeAgent\": [,]\n  }\n}\n",
    );
    let path_text = path.display().to_string();
    let status = wait_for_status(&client, "status reports the bad file", |status| {
        status.registries.iter().any(|registry| {
            registry
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error && d.path.as_deref() == Some(&path_text))
        })
    })
    .await;
    let error = status.registries[0]
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
        .unwrap();
    assert_eq!((error.line, error.column), (Some(3), Some(21)), "{error:?}");
    assert!(error.message.contains("last valid version"), "{error:?}");
    // The old hooks still run.
    assert_eq!(message(&client, &cwd).await.as_deref(), Some("good"));
    // `list` shows the error too.
    let listing = client.list(&cwd).await.unwrap();
    assert!(
        listing
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error && d.line == Some(3)),
        "{listing:?}"
    );
    assert_eq!(listing.hooks.len(), 1);

    // A top level that is not an object is a bad save too.
    write(&path, "[]");
    wait_for_status(&client, "status reports the array", |status| {
        status.registries[0]
            .diagnostics
            .iter()
            .any(|d| d.message.contains("JSON object"))
    })
    .await;
    assert_eq!(message(&client, &cwd).await.as_deref(), Some("good"));

    // Fixing the file clears the error and brings the new hooks.
    save_by_rename(&path, &saying("v", "fixed"));
    wait_for_message(&client, &cwd, Some("fixed")).await;
    let status = client.status().await.unwrap();
    assert!(
        status.registries[0]
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error),
        "{status:?}"
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_project_dirs_and_late_gemini_dirs_are_picked_up() {
    let daemon = Daemon::start(json!({})).await;
    let client = daemon.client().await;

    // A project seen for the first time, then edited.
    let second = daemon.path("second");
    write(
        &second.join(".gemini/settings.json"),
        &serde_json::to_string(&saying("s", "second")).unwrap(),
    );
    let second_cwd = second.display().to_string();
    assert_eq!(
        message(&client, &second_cwd).await.as_deref(),
        Some("second")
    );
    save_by_rename(
        &second.join(".gemini/settings.json"),
        &saying("s", "second, edited"),
    );
    wait_for_message(&client, &second_cwd, Some("second, edited")).await;

    // A project without `.gemini/` at its first event: creating it later is seen.
    let third = daemon.path("third");
    std::fs::create_dir_all(&third).unwrap();
    let third_cwd = third.display().to_string();
    assert_eq!(message(&client, &third_cwd).await, None);
    write(
        &third.join(".gemini/settings.json"),
        &serde_json::to_string(&saying("t", "third")).unwrap(),
    );
    wait_for_message(&client, &third_cwd, Some("third")).await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_settings_and_the_master_switch_apply_to_loaded_projects() {
    let daemon = Daemon::start(saying("project", "from the project")).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    assert_eq!(
        message(&client, &cwd).await.as_deref(),
        Some("from the project")
    );
    let user = daemon.home.join(".gemini/settings.json");

    // hooksConfig.enabled = false in the user settings turns every hook off, no restart.
    save_by_rename(&user, &json!({"hooksConfig": {"enabled": false}}));
    wait_for_message(&client, &cwd, None).await;
    assert!(!client.list(&cwd).await.unwrap().hooks_enabled);

    // Back on, with a user hook of its own that runs after the project's (D1 order).
    let mut user_settings = saying("user", "from the user");
    user_settings["hooksConfig"] = json!({"enabled": true});
    save_by_rename(&user, &user_settings);
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let listing = client.list(&cwd).await.unwrap();
        if listing.hooks_enabled && listing.hooks.len() == 2 {
            assert_eq!(listing.hooks[1].source, "user");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the user hook never appeared: {listing:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    daemon.stop().await;
}

/// Writes an extension named `name` with one BeforeAgent hook saying `message`.
fn install_extension(home: &Path, name: &str, message: &str) {
    let dir = home.join(".gemini/extensions").join(name);
    write(
        &dir.join("gemini-extension.json"),
        &json!({"name": name, "version": "1.0.0"}).to_string(),
    );
    let hooks = saying(&format!("{name}-hook"), message);
    write(&dir.join("hooks/hooks.json"), &hooks.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extensions_added_changed_and_removed_are_picked_up() {
    let daemon = Daemon::start(json!({})).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    assert_eq!(message(&client, &cwd).await, None);

    install_extension(&daemon.home, "greeter", "hello from greeter");
    wait_for_message(&client, &cwd, Some("hello from greeter")).await;
    let listing = client.list(&cwd).await.unwrap();
    assert_eq!(listing.hooks[0].extension.as_deref(), Some("greeter"));

    // Its hooks file edited.
    let hooks_file = daemon
        .home
        .join(".gemini/extensions/greeter/hooks/hooks.json");
    save_by_rename(&hooks_file, &saying("greeter-hook", "greeter again"));
    wait_for_message(&client, &cwd, Some("greeter again")).await;

    // A broken hooks file keeps the last good one.
    write(&hooks_file, "{\"hooks\": ");
    wait_for_status(&client, "the broken hooks file is reported", |status| {
        status.registries[0]
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error && d.message.contains("last valid version"))
    })
    .await;
    assert_eq!(
        message(&client, &cwd).await.as_deref(),
        Some("greeter again")
    );

    // Removed altogether.
    std::fs::remove_dir_all(daemon.home.join(".gemini/extensions/greeter")).unwrap();
    wait_for_message(&client, &cwd, None).await;
    assert!(client.list(&cwd).await.unwrap().hooks.is_empty());
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_get_a_frame_per_swap() {
    let daemon = Daemon::start(saying("v", "one")).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    // Load the project, then subscribe to it and to everything.
    assert_eq!(message(&client, &cwd).await.as_deref(), Some("one"));
    let mut mine = client.subscribe(Some(cwd.clone())).await.unwrap();
    let watcher = daemon.client().await;
    let mut all = watcher.subscribe(None).await.unwrap();
    // A subscription that is never read must not hold anything up.
    let idle = daemon.client().await;
    let _unread = idle.subscribe(None).await.unwrap();

    let path = project_settings(&daemon);
    save_by_rename(&path, &saying("v", "two"));
    let change = within("a registry_changed frame", SEEN_WITHIN, mine.recv())
        .await
        .expect("a frame")
        .expect("a change");
    assert_eq!(change.cwd, cwd);
    assert_eq!(change.layers, ["project"]);
    assert_eq!(change.files, [path.display().to_string()]);
    assert_eq!(change.hooks, 1);
    assert!(change.hooks_enabled);
    assert_eq!(change.missed, 0);
    let same = within("the same change for everything", SEEN_WITHIN, all.recv())
        .await
        .expect("a frame")
        .expect("a change");
    assert_eq!(same.generation, change.generation);
    assert_eq!(message(&client, &cwd).await.as_deref(), Some("two"));

    // A bad save is pushed with its error.
    write(&path, "{ nope");
    let broken = within("the error frame", SEEN_WITHIN, mine.recv())
        .await
        .expect("a frame")
        .expect("a change");
    assert!(broken.generation > change.generation);
    assert!(
        broken
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error && d.line == Some(1)),
        "{broken:?}"
    );

    // Many saves in a row while the idle subscription is never read: the daemon keeps
    // answering, and the reader of `mine` sees the final state last.
    for n in 0..20 {
        save_by_rename(&path, &saying("v", &format!("burst {n}")));
    }
    wait_for_message(&client, &cwd, Some("burst 19")).await;
    let final_generation = client.list(&cwd).await.unwrap().generation;
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    loop {
        let frame = within("the burst's frames", SEEN_WITHIN, mine.recv())
            .await
            .expect("a frame")
            .expect("a change");
        if frame.generation == final_generation {
            assert!(
                frame
                    .diagnostics
                    .iter()
                    .all(|d| d.severity != Severity::Error)
            );
            break;
        }
        assert!(frame.generation < final_generation, "{frame:?}");
        assert!(tokio::time::Instant::now() < deadline);
    }

    // `reload` rebuilds and announces even without a change.
    let reloaded = client.reload().await.unwrap();
    assert_eq!(reloaded.len(), 1);
    let frame = within("the reload's frame", SEEN_WITHIN, mine.recv())
        .await
        .expect("a frame")
        .expect("a change");
    assert_eq!(frame.generation, reloaded[0].generation);
    assert!(frame.layers.is_empty(), "{frame:?}");

    // Cancelling a subscription ends it on the daemon.
    client.cancel(mine.id()).await.unwrap();
    daemon.stop().await;
}
