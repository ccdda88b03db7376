//! `hookctl trust`, `trust --list` and `untrust` through the real binary against an
//! in-process daemon: the preview shows each hook's name, command, script and hash; without a
//! terminal `--yes` is required and nothing is trusted; `list` marks untrusted project hooks.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::Fixture;
use hookd_core::trust::sha256_hex;

const PROJECT: &str = r#"{
  "hooks": {
    "BeforeTool": [
      {"hooks": [
        {"name": "guard", "type": "command", "command": "bash .gemini/hooks/guard.sh"},
        {"type": "command", "command": "true"}
      ]}
    ]
  }
}"#;

const GUARD: &str = "echo '{\"decision\":\"allow\"}'\n";

async fn start() -> Fixture {
    let fixture = Fixture::start(PROJECT, None).await;
    let script = fixture.project.join(".gemini/hooks/guard.sh");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(script, GUARD).unwrap();
    fixture
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_shows_what_it_trusts_and_needs_yes_without_a_terminal() {
    let fixture = start().await;
    let project = fixture.project.display().to_string();
    let store = fixture.home.join(".config/hookd/trusted-hooks.json");
    let hash = sha256_hex(GUARD.as_bytes());

    // The panel marks both project hooks as untrusted.
    let panel = fixture.ok(&["list"]).await;
    assert_eq!(
        panel.matches("    Untrusted: review it").count(),
        2,
        "{panel}"
    );

    // Without a terminal and without --yes: the preview is shown, nothing is trusted.
    let output = fixture.hookctl(&["trust"], "y\n").await;
    assert!(!output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    let expected_preview = format!(
        "Project hooks of {project} that are not trusted (project_hooks = warn):\n  guard \
         (BeforeTool)\n    command: bash .gemini/hooks/guard.sh\n    script:  \
         .gemini/hooks/guard.sh\n    sha256:  {hash}\n  true (BeforeTool)\n    command: true\n    \
         script:  none under the project (the command line alone is trusted)\nTrusting records \
         each hook's name, command, settings and file contents in {}; editing any of them makes \
         its hook untrusted again.\n",
        store.display()
    );
    assert_eq!(stdout, expected_preview);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "stdin is not a terminal; read the hooks above and run `hookctl trust --cwd \
             {project} --yes`"
        )),
        "{stderr}"
    );
    assert!(!store.exists());

    // With --yes: the same preview, then the daemon's answer; the store is private.
    let out = fixture.ok(&["trust", "--yes"]).await;
    assert_eq!(
        out,
        format!(
            "{expected_preview}Trusted 2 project hook(s) of {project} in {}.\n",
            store.display()
        )
    );
    let mode = std::fs::metadata(&store).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!fixture.ok(&["list"]).await.contains("Untrusted"));
    let out = fixture.ok(&["trust", "--yes"]).await;
    assert_eq!(
        out,
        format!("Nothing to trust: the 2 project hook(s) of {project} are trusted.\n")
    );

    // --list shows what is trusted, for every project or the one asked for.
    let listed = fixture.ok(&["trust", "--list"]).await;
    assert_eq!(
        listed,
        format!(
            "Trusted hooks ({}):\n{project}:\n  guard\n    command: bash .gemini/hooks/guard.sh\n    \
             script:  .gemini/hooks/guard.sh\n    sha256:  {hash}\n  true\n    command: true\n    \
             script:  none under the project (the command line alone is trusted)\n",
            store.display()
        )
    );
    let elsewhere = fixture.dir.path().display().to_string();
    assert_eq!(
        fixture.ok(&["trust", "--list", "--cwd", &elsewhere]).await,
        format!("No hooks are trusted ({}).\n", store.display())
    );

    // Editing the script makes the guard untrusted again: only it is offered.
    std::fs::write(
        fixture.project.join(".gemini/hooks/guard.sh"),
        "echo changed\n",
    )
    .unwrap();
    fixture.ok(&["reload"]).await;
    let output = fixture.hookctl(&["trust"], "").await;
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("  guard (BeforeTool)\n"), "{stdout}");
    assert!(stdout.contains(&sha256_hex(b"echo changed\n")), "{stdout}");
    assert!(!stdout.contains("  true (BeforeTool)"), "{stdout}");

    // untrust forgets the project.
    assert_eq!(
        fixture.ok(&["untrust"]).await,
        format!(
            "Removed 2 trusted hook(s) of {project} from {}.\n",
            store.display()
        )
    );
    assert_eq!(
        fixture.ok(&["untrust"]).await,
        format!("No hooks of {project} were trusted.\n")
    );
    assert_eq!(panel_untrusted(&fixture).await, 2);
}

/// How many hooks the panel marks untrusted.
async fn panel_untrusted(fixture: &Fixture) -> usize {
    fixture
        .ok(&["list"])
        .await
        .matches("    Untrusted: review it")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_store_is_reported_and_never_overwritten() {
    let fixture = start().await;
    let store = fixture.home.join(".config/hookd/trusted-hooks.json");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    std::fs::write(&store, "{ not json").unwrap();
    let output = fixture.hookctl(&["trust", "--yes"], "").await;
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "the trusted hooks store {} is invalid",
            store.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&store).unwrap(), "{ not json");
    let output = fixture.hookctl(&["trust", "--list"], "").await;
    assert!(!output.status.success());
}
