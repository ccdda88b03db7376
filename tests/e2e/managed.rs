//! The managed hooks file (`HOOKD_MANAGED_HOOKS`, `/etc/hookd/hooks.json` by default): an
//! administrator's guard that no user or project setting can switch off, loaded only when
//! root alone could have written it, and never outranking anything of the user's silently.
//!
//! The test daemons check the file against the test's own uid (root when the tests run as
//! root) with the temp dir as the top of the checked path, so the ownership and mode rules
//! are exercised for real: a group-writable file is refused everywhere, and where the tests
//! run as root, a file given to another user too.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookd_client::{Client, Scope};
use hookd_protocol::StatusResponse;
use hookd_testkit::{Daemon, DaemonOptions, SEEN_WITHIN, command_hook, fire, settings, write};
use serde_json::{Value, json};

/// The managed file of a test daemon.
fn managed_path(daemon: &Daemon) -> PathBuf {
    daemon.dir.path().join("etc/hookd/hooks.json")
}

/// A managed BeforeTool guard that blocks every `run_shell_command` (exit 2, as a Gemini CLI
/// hook blocks).
fn managed_guard() -> Value {
    settings(&[(
        "BeforeTool",
        Some("run_shell_command"),
        vec![command_hook(
            "company-guard",
            "echo 'blocked by policy' >&2; exit 2",
        )],
    )])
}

/// Saves `value` as editors and configuration management do: a new file renamed over the
/// old one, with `mode`.
fn save(path: &Path, value: &Value, mode: u32) {
    let temp = path.with_extension("json.new");
    write(&temp, &serde_json::to_string_pretty(value).expect("json"));
    std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(mode)).expect("chmod");
    std::fs::rename(&temp, path).expect("rename over");
}

/// Polls `status` until `condition` holds, failing after [`SEEN_WITHIN`].
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

fn managed_state(status: &StatusResponse) -> (&str, &str) {
    let managed = status
        .managed
        .as_ref()
        .expect("status names the managed file");
    (
        managed.state.as_str(),
        managed.reason.as_deref().unwrap_or(""),
    )
}

async fn shell_decision(client: &Client, cwd: &str) -> Option<String> {
    let result = fire(
        client,
        cwd,
        "BeforeTool",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
    )
    .await;
    result
        .final_output
        .as_ref()
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_user_or_project_setting_switches_off_a_managed_guard() {
    // The project disables the guard by name; the user turns hooks off altogether and keeps a
    // copy of the guard that would let everything through.
    let mut project = settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("project-note", "echo '{}'")],
    )]);
    project["hooksConfig"] = json!({"disabled": ["company-guard"]});
    let mut user = settings(&[(
        "BeforeTool",
        Some("run_shell_command"),
        vec![command_hook(
            "company-guard",
            "echo 'blocked by policy' >&2; exit 2",
        )],
    )]);
    user["hooksConfig"] = json!({"enabled": false});
    let options = DaemonOptions {
        files: vec![
            (
                "etc/hookd/hooks.json".into(),
                serde_json::to_string(&managed_guard()).expect("json"),
            ),
            (
                "home/.config/hookd/hooks.json".into(),
                serde_json::to_string(&user).expect("json"),
            ),
        ],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(project, options).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    assert_eq!(
        shell_decision(&client, &cwd).await.as_deref(),
        Some("deny"),
        "the managed guard still decides"
    );

    let listing = client.list(&cwd).await.expect("list");
    let managed: Vec<_> = listing
        .hooks
        .iter()
        .filter(|hook| hook.source == "managed")
        .collect();
    assert_eq!(managed.len(), 1, "{listing:#?}");
    assert!(managed[0].enabled);
    assert_eq!(
        managed[0].path.as_deref(),
        Some(managed_path(&daemon).to_str().expect("utf-8"))
    );
    // The user sees what the managed layer outranked and ignored, and where.
    let messages: Vec<&str> = listing
        .diagnostics
        .iter()
        .map(|diagnostic| diagnostic.message.as_str())
        .collect();
    assert!(
        messages.iter().any(|message| message.contains(
            "hooksConfig.disabled names \"company-guard\", a hook of the managed hooks file"
        )),
        "{messages:#?}"
    );
    assert!(
        messages
            .iter()
            .any(|message| message.contains("turns off every hook but the managed ones")),
        "{messages:#?}"
    );
    let status = client.status().await.expect("status");
    assert_eq!(managed_state(&status).0, "loaded");

    // Disabling it through the daemon is refused and names the file; nothing is written.
    let user_file = daemon.home.join(".gemini/settings.json");
    let edited = client
        .disable(&cwd, "company-guard", Scope::User)
        .await
        .expect("disable answers");
    assert!(!edited.changed, "{edited:?}");
    assert!(
        edited.message.contains("managed hooks cannot be disabled"),
        "{edited:?}"
    );
    assert!(!user_file.exists(), "nothing was written");
    assert_eq!(shell_decision(&client, &cwd).await.as_deref(), Some("deny"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_copy_is_outranked_and_list_says_by_what() {
    let user = settings(&[(
        "BeforeTool",
        Some("run_shell_command"),
        vec![
            command_hook("company-guard", "echo 'blocked by policy' >&2; exit 2"),
            command_hook("mine", "echo '{}'"),
        ],
    )]);
    let options = DaemonOptions {
        files: vec![
            (
                "etc/hookd/hooks.json".into(),
                serde_json::to_string(&managed_guard()).expect("json"),
            ),
            (
                "home/.config/hookd/hooks.json".into(),
                serde_json::to_string(&user).expect("json"),
            ),
        ],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(json!({}), options).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let result = fire(
        &client,
        &cwd,
        "BeforeTool",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
    )
    .await;
    let ran: Vec<(String, String)> = result
        .hooks
        .iter()
        .map(|hook| (hook.source.clone(), hook.name.clone()))
        .collect();
    assert_eq!(
        ran,
        [
            ("managed".to_owned(), "company-guard".to_owned()),
            ("user".to_owned(), "mine".to_owned())
        ],
        "the managed copy runs first, in the user's copy's place"
    );
    let listing = client.list(&cwd).await.expect("list");
    let outranked: Vec<(&str, &str)> = listing
        .hooks
        .iter()
        .filter_map(|hook| Some((hook.source.as_str(), hook.outranked_by.as_deref()?)))
        .collect();
    let managed = managed_path(&daemon);
    assert_eq!(
        outranked,
        [("user", managed.to_str().expect("utf-8"))],
        "{listing:#?}"
    );
    let rendered = hookctl_render(&listing);
    assert!(rendered.contains("Source: managed"), "{rendered}");
    assert!(
        rendered.contains("Outranked by the managed hooks file"),
        "{rendered}"
    );
}

/// What `hookctl list` prints for a listing.
fn hookctl_render(listing: &hookd_protocol::ListResponse) -> String {
    hookctl::render_list(listing)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_file_others_could_write_is_refused_named_and_picked_up_once_fixed() {
    let daemon = Daemon::prepare_with("{}", DaemonOptions::default());
    let path = managed_path(&daemon);
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::set_permissions(
        path.parent().expect("dir"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod dir");
    save(&path, &managed_guard(), 0o664);
    daemon.serve().await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    let status = wait_for_status(&client, "the group-writable file is refused", |status| {
        managed_state(status).0 == "refused"
    })
    .await;
    assert!(
        managed_state(&status)
            .1
            .contains("is writable by its group or others (mode 664"),
        "{status:?}"
    );
    assert_eq!(
        shell_decision(&client, &cwd).await,
        None,
        "its guard does not run"
    );
    let listing = client.list(&cwd).await.expect("list");
    assert!(
        listing.diagnostics.iter().any(|diagnostic| diagnostic
            .message
            .contains("managed hooks file refused, its hooks do not run")),
        "named where the user looks: {listing:#?}"
    );

    // Fixed by configuration management: the next event sees it, with no restart.
    save(&path, &managed_guard(), 0o644);
    wait_for_status(&client, "the fixed file is loaded", |status| {
        managed_state(status).0 == "loaded"
    })
    .await;
    assert_eq!(shell_decision(&client, &cwd).await.as_deref(), Some("deny"));

    if nix::unistd::geteuid().is_root() {
        // Owned by someone other than root: refused too, and the guard stops running.
        save(&path, &managed_guard(), 0o644);
        nix::unistd::chown(&path, Some(nix::unistd::Uid::from_raw(65534)), None).expect("chown");
        // A rename of the same file keeps its owner and wakes the watcher.
        std::fs::rename(&path, path.with_extension("moved")).expect("move");
        std::fs::rename(path.with_extension("moved"), &path).expect("move back");
        let status = wait_for_status(&client, "the file of uid 65534 is refused", |status| {
            managed_state(status).0 == "refused"
        })
        .await;
        assert!(
            managed_state(&status).1.contains("is owned by uid 65534"),
            "{status:?}"
        );
        assert_eq!(shell_decision(&client, &cwd).await, None);
    }
}
