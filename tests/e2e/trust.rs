//! Project-hook trust (decision D8) through the real daemon: under `require` an untrusted
//! project hook is not started and its record names it and the command that trusts it; after
//! `trust` it runs; editing its script makes it untrusted again (at once, by the re-hash
//! before spawning, and in the registry once the watcher sees the edit); a stale preview
//! trusts nothing; `untrust` and `trust_list`; user, system and extension hooks are never
//! gated, not even by a refused project copy of them; under `warn` an untrusted hook runs and
//! its first run carries a warning.

use std::time::Duration;

use hookd_client::Client;
use hookd_core::trust::{ProjectHookPolicy, sha256_hex};
use hookd_protocol::{EventResult, HookRecord, Outcome};
use hookd_testkit::{Daemon, DaemonOptions, command_hook, fire, settings, write};
use serde_json::{Value, json};

/// How long the watcher may take to turn a script edit into a rebuilt registry.
const SEEN_WITHIN: Duration = Duration::from_secs(10);

/// The guard script: leaves a mark (so a test can tell it ran) and denies.
const GUARD: &str = "touch \"$GEMINI_PROJECT_DIR/ran-guard\"\necho '{\"decision\":\"deny\",\"reason\":\"guarded\"}'\n";

/// Project settings with one BeforeTool hook, `guard`, running `.gemini/hooks/guard.sh`.
fn guarded_project() -> Value {
    settings(&[(
        "BeforeTool",
        None,
        vec![command_hook(
            "guard",
            "bash \"$GEMINI_PROJECT_DIR/.gemini/hooks/guard.sh\"",
        )],
    )])
}

/// Starts a daemon with the guarded project under `policy`, plus `files`.
async fn start(policy: ProjectHookPolicy, files: Vec<(String, String)>) -> Daemon {
    let mut files = files;
    files.push((
        "project/.gemini/hooks/guard.sh".to_owned(),
        GUARD.to_owned(),
    ));
    Daemon::start_with(
        guarded_project(),
        DaemonOptions {
            files,
            configure: Box::new(move |config| config.project_hooks = policy),
        },
    )
    .await
}

async fn fire_tool(client: &Client, cwd: &str) -> EventResult {
    fire(
        client,
        cwd,
        "BeforeTool",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
    )
    .await
}

/// The record of the hook named `name`.
fn record<'a>(result: &'a EventResult, name: &str) -> &'a HookRecord {
    result
        .hooks
        .iter()
        .find(|hook| hook.name == name)
        .unwrap_or_else(|| panic!("no record of {name}: {result:?}"))
}

/// Whether the guard script has run since the mark was last removed.
fn guard_ran(daemon: &Daemon) -> bool {
    let mark = daemon.project.join("ran-guard");
    let ran = mark.exists();
    let _ = std::fs::remove_file(mark);
    ran
}

/// The `untrusted` marker of the listed hook `name`.
async fn listed_untrusted(client: &Client, cwd: &str, name: &str) -> bool {
    let listing = client.list(cwd).await.expect("list");
    listing
        .hooks
        .iter()
        .find(|hook| hook.name == name)
        .unwrap_or_else(|| panic!("{name} is not listed: {listing:?}"))
        .untrusted
}

/// Asserts that the guard was refused, not run, with `why` in its error.
fn assert_refused(daemon: &Daemon, result: &EventResult, why: &str) {
    let guard = record(result, "guard");
    let error = guard.error.clone().unwrap_or_default();
    assert_eq!(
        guard.outcome,
        Outcome::Refused {
            message: error.clone()
        },
        "{result:?}"
    );
    assert!(
        error.starts_with("project hook \"guard\" was not run: ") && error.contains(why),
        "{error}"
    );
    assert!(
        error.ends_with(&format!(
            "then run `hookctl trust --cwd {}`",
            daemon.project.display()
        )),
        "{error}"
    );
    assert_eq!(guard.exit_code, None);
    assert_eq!(guard.failure.as_deref(), Some("refused"));
    assert!(result.errors.contains(&error), "{result:?}");
    assert_eq!(result.final_output, None, "{result:?}");
    assert!(!guard_ran(daemon), "the refused guard ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_runs_a_project_hook_only_while_it_is_trusted() {
    let daemon = start(ProjectHookPolicy::Require, Vec::new()).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    // Untrusted: refused, named, and the command that trusts it is given.
    let result = fire_tool(&client, &cwd).await;
    assert_refused(
        &daemon,
        &result,
        "it is not trusted (project_hooks = require)",
    );
    assert!(listed_untrusted(&client, &cwd, "guard").await);

    // The preview shows exactly what trusting means: name, command, script and its hash.
    let preview = client.trust_preview(cwd.clone()).await.expect("preview");
    assert_eq!(
        (preview.policy.as_str(), preview.folder_trusted),
        ("require", true)
    );
    assert_eq!(preview.trusted, 0);
    assert_eq!(preview.untrusted.len(), 1, "{preview:?}");
    let hook = &preview.untrusted[0];
    assert_eq!(
        (
            hook.event.as_deref(),
            hook.name.as_str(),
            hook.command.as_str()
        ),
        (
            Some("BeforeTool"),
            "guard",
            "bash \"$GEMINI_PROJECT_DIR/.gemini/hooks/guard.sh\""
        )
    );
    assert_eq!(hook.scripts.len(), 1);
    assert_eq!(hook.scripts[0].path, ".gemini/hooks/guard.sh");
    assert_eq!(hook.scripts[0].sha256, sha256_hex(GUARD.as_bytes()));
    let store = daemon.home.join(".config/hookd/trusted-hooks.json");
    assert_eq!(preview.file, store.display().to_string());

    // Trusted: it runs, and the registry says so before the answer.
    let edited = client
        .trust(cwd.clone(), preview.untrusted.clone())
        .await
        .expect("trust");
    assert!(edited.changed, "{edited:?}");
    assert_eq!(edited.files, [store.display().to_string()]);
    assert!(!listed_untrusted(&client, &cwd, "guard").await);
    let result = fire_tool(&client, &cwd).await;
    assert_eq!(
        result.final_output.as_ref().and_then(|o| o.get("decision")),
        Some(&json!("deny")),
        "{result:?}"
    );
    assert!(guard_ran(&daemon));
    let trusted = client.trust_list(Some(cwd.clone())).await.expect("list");
    assert_eq!(trusted.projects.len(), 1);
    assert_eq!(trusted.projects[0].cwd, cwd);
    assert_eq!(trusted.projects[0].hooks[0].scripts, hook.scripts);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&store)
        .expect("store")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Editing the script re-asks: at once, because the runner hashes the script again just
    // before starting it...
    write(
        &daemon.project.join(".gemini/hooks/guard.sh"),
        "touch \"$GEMINI_PROJECT_DIR/ran-guard\"\necho '{\"decision\":\"allow\"}'\n",
    );
    let result = fire_tool(&client, &cwd).await;
    assert_refused(
        &daemon,
        &result,
        "its script .gemini/hooks/guard.sh changed",
    );
    // ... and in the registry, once the watcher has seen the edit.
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    while !listed_untrusted(&client, &cwd, "guard").await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the edited script was not seen within {SEEN_WITHIN:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let result = fire_tool(&client, &cwd).await;
    assert_refused(
        &daemon,
        &result,
        "its script .gemini/hooks/guard.sh changed since it was trusted",
    );

    // The old preview no longer matches: trusting it trusts nothing.
    let stale = client
        .trust(cwd.clone(), preview.untrusted.clone())
        .await
        .expect("stale trust");
    assert!(!stale.changed, "{stale:?}");
    assert!(stale.message.contains("were not trusted"), "{stale:?}");
    assert_refused(&daemon, &fire_tool(&client, &cwd).await, "changed");

    // A fresh preview and trust bring it back; untrust forgets it.
    let preview = client.trust_preview(cwd.clone()).await.expect("preview");
    client
        .trust(cwd.clone(), preview.untrusted)
        .await
        .expect("trust");
    let result = fire_tool(&client, &cwd).await;
    assert_eq!(
        record(&result, "guard").outcome,
        Outcome::Exited { code: 0 }
    );
    assert!(guard_ran(&daemon));
    let edited = client.untrust(cwd.clone()).await.expect("untrust");
    assert!(edited.changed && edited.message.starts_with("Removed 1 trusted hook(s)"));
    assert!(
        client
            .trust_list(None)
            .await
            .expect("list")
            .projects
            .is_empty()
    );
    assert_refused(
        &daemon,
        &fire_tool(&client, &cwd).await,
        "it is not trusted",
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_system_and_extension_hooks_are_never_gated() {
    let marker =
        |name: &str| command_hook(name, &format!("touch \"$GEMINI_PROJECT_DIR/ran-{name}\""));
    let layer = |name: &str| settings(&[("BeforeTool", None, vec![marker(name)])]).to_string();
    let files = vec![
        ("home/.gemini/settings.json".to_owned(), layer("user")),
        ("etc/settings.json".to_owned(), layer("system")),
        (
            "home/.gemini/extensions/ext/gemini-extension.json".to_owned(),
            json!({"name": "ext", "version": "1.0.0"}).to_string(),
        ),
        (
            "home/.gemini/extensions/ext/hooks/hooks.json".to_owned(),
            layer("extension"),
        ),
    ];
    // The project also defines a copy of the user's hook: refused, it must not take the
    // user's own copy out of the plan.
    let mut project = guarded_project();
    project["hooks"]["BeforeTool"][0]["hooks"]
        .as_array_mut()
        .expect("hooks")
        .push(marker("user"));
    let mut files = files;
    files.push((
        "project/.gemini/settings.json".to_owned(),
        project.to_string(),
    ));
    let daemon = start(ProjectHookPolicy::Require, files).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let result = fire_tool(&client, &cwd).await;
    for name in ["user", "system", "extension"] {
        let hook = result
            .hooks
            .iter()
            .find(|hook| hook.name == name && hook.source != "project")
            .unwrap_or_else(|| panic!("no {name} record: {result:?}"));
        assert_eq!(hook.outcome, Outcome::Exited { code: 0 }, "{hook:?}");
        assert_eq!(hook.warning, None);
        assert!(
            daemon.project.join(format!("ran-{name}")).exists(),
            "{name}"
        );
    }
    let shadow = result
        .hooks
        .iter()
        .find(|hook| hook.name == "user" && hook.source == "project")
        .unwrap_or_else(|| panic!("no project copy: {result:?}"));
    assert_eq!(shadow.failure.as_deref(), Some("refused"), "{shadow:?}");
    assert_refused(&daemon, &result, "it is not trusted");
    // Only project hooks are marked and offered for trust.
    let listing = client.list(cwd.clone()).await.expect("list");
    let marked: Vec<(&str, &str)> = listing
        .hooks
        .iter()
        .filter(|hook| hook.untrusted)
        .map(|hook| (hook.name.as_str(), hook.source.as_str()))
        .collect();
    assert_eq!(marked, [("guard", "project"), ("user", "project")]);
    let preview = client.trust_preview(cwd).await.expect("preview");
    let names: Vec<&str> = preview.untrusted.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["guard", "user"]);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warn_runs_an_untrusted_project_hook_and_says_so_once() {
    let daemon = start(ProjectHookPolicy::Warn, Vec::new()).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    let first = fire_tool(&client, &cwd).await;
    let guard = record(&first, "guard");
    assert_eq!(guard.outcome, Outcome::Exited { code: 0 }, "{first:?}");
    assert!(guard_ran(&daemon));
    assert_eq!(
        guard.warning.as_deref(),
        Some(
            format!(
                "project hook \"guard\" ran, but it is not trusted (project_hooks = warn); \
                 review it, then run `hookctl trust --cwd {cwd}`"
            )
            .as_str()
        )
    );
    // A warning is not an error.
    assert!(first.success && first.errors.is_empty(), "{first:?}");
    assert!(listed_untrusted(&client, &cwd, "guard").await);

    // Once: a second run, on another connection too, has no warning.
    for client in [client.clone(), daemon.client().await] {
        let again = fire_tool(&client, &cwd).await;
        assert_eq!(record(&again, "guard").warning, None, "{again:?}");
        assert!(guard_ran(&daemon));
    }
    daemon.stop().await;
}
