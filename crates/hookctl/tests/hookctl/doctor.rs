//! `hookctl doctor` against a real daemon: clean on a good setup (a daemon, an installed and
//! current relay wiring, hooks once each), and one test per problem it claims to find, each
//! with a fix and exit code 1.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::Fixture;
use hookd_testkit::Hermetic;
use serde_json::{Value, json};

/// A user settings file with one BeforeTool hook.
const USER_HOOK: &str = r#"{"hooks":{"BeforeTool":[{"matcher":"run_shell_command",
  "hooks":[{"name":"guard","type":"command","command":"guard.sh"}]}]}}"#;

/// Runs hookctl with `args` in an environment of the fixture's own (home, state, units,
/// runtime dir), with the directory of the built binaries first on `PATH`.
fn hookctl(socket: &Path, home: &Path, project: &Path, args: &[&str]) -> Output {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hookctl")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .arg("--socket")
        .arg(socket)
        .args(args)
        .current_dir(project)
        .hermetic(home)
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `hookctl doctor --json`, off the runtime: the exit code and the report.
async fn doctor(fixture: &Fixture) -> (i32, Value) {
    let view = View::of(fixture);
    tokio::task::spawn_blocking(move || {
        let output = view.run(&["doctor", "--json"]);
        let report: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {output:?}"));
        (output.status.code().unwrap_or(-1), report)
    })
    .await
    .unwrap()
}

/// The paths hookctl needs, to run it off the runtime.
struct View {
    socket: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

impl View {
    fn of(fixture: &Fixture) -> View {
        View {
            socket: fixture.socket.clone(),
            home: fixture.home.clone(),
            project: fixture.project.clone(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        hookctl(&self.socket, &self.home, &self.project, args)
    }
}

/// The findings of `check` with `status`.
fn findings<'a>(report: &'a Value, check: &str, status: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["check"] == check && finding["status"] == status)
        .collect()
}

/// Asserts that `check` reports a problem whose message contains `needle`, with a fix.
fn assert_problem(report: &Value, check: &str, needle: &str) {
    let problems = findings(report, check, "problem");
    assert!(
        problems.iter().any(|finding| {
            finding["message"].as_str().unwrap().contains(needle)
                && finding["fix"].as_str().is_some_and(|fix| !fix.is_empty())
        }),
        "no {check} problem mentioning {needle:?}:\n{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_is_clean_on_a_good_setup_and_says_so_in_text() {
    let fixture = Fixture::start("{}", Some(USER_HOOK)).await;
    let installed = {
        let view = View::of(&fixture);
        tokio::task::spawn_blocking(move || view.run(&["install", "--host", "gemini", "--yes"]))
            .await
            .unwrap()
    };
    assert!(installed.status.success(), "{installed:?}");
    let (code, report) = doctor(&fixture).await;
    assert_eq!(report["problems"], 0, "{report:#}");
    assert_eq!(code, 0);
    for check in [
        "socket",
        "daemon",
        "wiring",
        "hooks",
        "trust",
        "settings",
        "system-files",
    ] {
        assert!(
            !findings(&report, check, "ok").is_empty(),
            "no ok finding for {check}:\n{report:#}"
        );
    }
    let view = View::of(&fixture);
    let text = tokio::task::spawn_blocking(move || view.run(&["doctor"]))
        .await
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.ends_with("No problems found.\n"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_stale_wiring() {
    let fixture = Fixture::start("{}", Some(USER_HOOK)).await;
    let view = View::of(&fixture);
    let installed =
        tokio::task::spawn_blocking(move || view.run(&["install", "--host", "gemini", "--yes"]))
            .await
            .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    // hookd's hooks file gets a hook on an event the CLI does not relay.
    let hooks_file = fixture.home.join(".config/hookd/hooks.json");
    let mut hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(&hooks_file).unwrap()).unwrap();
    hooks["hooks"]["SessionStart"] = json!([{"hooks": [{"type": "command", "command": "hi.sh"}]}]);
    std::fs::write(&hooks_file, hooks.to_string()).unwrap();
    let (code, report) = doctor(&fixture).await;
    assert_eq!(code, 1, "{report:#}");
    assert_problem(&report, "wiring", "no relay entry on SessionStart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_a_relay_that_is_not_on_path() {
    let fixture = Fixture::start("{}", Some(USER_HOOK)).await;
    let view = View::of(&fixture);
    let installed =
        tokio::task::spawn_blocking(move || view.run(&["install", "--host", "gemini", "--yes"]))
            .await
            .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    // The relay entries are pointed at a binary that does not exist.
    let settings = fixture.home.join(".gemini/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(text.contains("hookd-relay"), "{text}");
    std::fs::write(
        &settings,
        text.replace("hookd-relay", "/nonexistent/hookd-relay"),
    )
    .unwrap();
    let (code, report) = doctor(&fixture).await;
    assert_eq!(code, 1, "{report:#}");
    assert_problem(&report, "wiring", "/nonexistent/hookd-relay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_a_doubled_hook() {
    let project = r#"{"hooks":{"BeforeTool":[{"matcher":"run_shell_command",
      "hooks":[{"name":"guard-again","type":"command","command":"guard.sh"}]}]}}"#;
    let fixture = Fixture::start(project, Some(USER_HOOK)).await;
    let (code, report) = doctor(&fixture).await;
    assert_eq!(code, 1, "{report:#}");
    assert_problem(
        &report,
        "hooks",
        "`guard.sh` runs 2 times on each BeforeTool",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_a_socket_directory_others_can_write() {
    let fixture = Fixture::start("{}", None).await;
    let dir = fixture.socket.parent().unwrap().to_owned();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, report) = doctor(&fixture).await;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(code, 1, "{report:#}");
    assert_problem(&report, "socket", "no client will use it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_an_unreachable_daemon() {
    // The socket file is left behind by a daemon that is gone: it exists, nobody listens.
    let fixture = Fixture::prepare("{}", None);
    let listener = std::os::unix::net::UnixListener::bind(&fixture.socket).unwrap();
    drop(listener);
    let (code, report) = doctor(&fixture).await;
    assert_eq!(code, 1, "{report:#}");
    assert_problem(&report, "daemon", "no daemon answers");

    // And with no socket file at all.
    std::fs::remove_file(&fixture.socket).unwrap();
    let (code, report) = doctor(&fixture).await;
    assert_eq!(code, 1, "{report:#}");
    assert_problem(&report, "socket", "does not exist");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_untrusted_project_hooks_under_require() {
    let project = r#"{"hooks":{"BeforeTool":[{"hooks":[
      {"name":"project-guard","type":"command","command":"echo '{}'"}]}]}}"#;
    let fixture = Fixture::prepare(project, None);
    fixture
        .serve_with(|config| {
            config.project_hooks = hookd_core::trust::ProjectHookPolicy::Require;
        })
        .await;
    let (code, report) = doctor(&fixture).await;
    assert_eq!(code, 1, "{report:#}");
    assert_problem(&report, "trust", "project-guard");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_hooks_the_circuit_breaker_paused() {
    let project = r#"{"hooks":{"BeforeTool":[{"hooks":[
      {"name":"broken-guard","type":"command","command":"exit 1"}]}]}}"#;
    let fixture = Fixture::start(project, None).await;
    let client = hookd_client::Client::connect(&fixture.socket, Default::default())
        .await
        .unwrap();
    // The default threshold: five failures in a row pause the hook.
    for _ in 0..5 {
        let mut input = serde_json::Map::new();
        input.insert("tool_name".to_owned(), Value::from("run_shell_command"));
        let request =
            hookd_client::EventRequest::new("BeforeTool", fixture.project.display().to_string())
                .with_input(input);
        client.event(request).await.unwrap();
    }
    let (code, report) = doctor(&fixture).await;
    assert_eq!(code, 1, "{report:#}");
    assert_problem(
        &report,
        "breaker",
        "broken-guard (BeforeTool, 5 failures in a row)",
    );

    client.reload().await.unwrap();
    let (_, report) = doctor(&fixture).await;
    assert!(
        findings(&report, "breaker", "problem").is_empty(),
        "{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_moved_guards_while_no_daemon_runs_and_recent_fallbacks() {
    // Installed while no daemon runs: the guard now lives in hookd's file only.
    let fixture = Fixture::prepare("{}", Some(USER_HOOK));
    let view = View::of(&fixture);
    let report = tokio::task::spawn_blocking(move || {
        let installed = view.run(&["install", "--host", "gemini", "--yes"]);
        assert!(installed.status.success(), "{installed:?}");
        let bin_dir = Path::new(env!("CARGO_BIN_EXE_hookctl")).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let doctor = |engine: &str| {
            let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
                .arg("--socket")
                .arg(&view.socket)
                .args(["doctor", "--json"])
                .current_dir(&view.project)
                .hermetic(&view.home)
                .env("PATH", &path)
                .env("HOOKD_ENGINE", engine)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let report: Value = serde_json::from_slice(&output.stdout).unwrap();
            (output.status.code(), report)
        };
        // An engine the relay can run: the guards still decide, and doctor says so.
        let (code, report) = doctor(env!("CARGO_BIN_EXE_hookctl"));
        assert_eq!(code, Some(1), "{report:#}");
        assert_problem(&report, "fallback", "moved guards while no daemon runs");
        assert_problem(&report, "fallback", "one-shot engine");
        assert!(
            !findings(&report, "fallback", "ok").is_empty(),
            "nothing in the relay's log yet:\n{report:#}"
        );
        // None: every relayed event is blocked, and doctor says that instead.
        let (_, report) = doctor("/nonexistent/hookd");
        assert_problem(&report, "fallback", "every relayed event is blocked");
        // The relay's log of the last day: each kind of fallback is counted.
        let state = view.home.join(".local/state/hookd");
        std::fs::create_dir_all(&state).unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let stamp = hookctl::relay::utc_timestamp(now - 60);
        let old = hookctl::relay::utc_timestamp(now - 3 * 24 * 3600);
        std::fs::write(
            state.join("relay.log"),
            format!(
                "{old} hookctl relay: gemini BeforeTool: gone; allowing without hooks (--unreachable allow)\n\
                 {stamp} hookctl relay: gemini BeforeTool: gone; ran the hooks with hookd --oneshot\n"
            ),
        )
        .unwrap();
        let (_, report) = doctor("/nonexistent/hookd");
        let notes = findings(&report, "fallback", "note");
        assert!(
            notes.iter().any(|finding| {
                let message = finding["message"].as_str().unwrap();
                message.contains("fallbacks taken recently")
                    && message.contains("one-shot engine 1")
                    && message.contains("allowed without hooks 0")
            }),
            "{report:#}"
        );
        report
    })
    .await
    .unwrap();
    assert_eq!(report["problems"].as_u64().map(|n| n > 0), Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_a_policy_hook_that_does_not_compile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.rego");
    let broken = dir.path().join("broken.rego");
    std::fs::write(&good, "package good\n\ndeny contains \"x\" if false\n").expect("write");
    std::fs::write(&broken, "package broken\n\ndeny if {\n").expect("write");
    let project = serde_json::json!({"hooks": {"BeforeTool": [{"hooks": [
        {"type": "policy", "name": "good-policy", "policy": good.display().to_string()},
        {"type": "policy", "name": "broken-policy", "policy": broken.display().to_string()}
    ]}]}})
    .to_string();
    let fixture = Fixture::start(&project, None).await;
    let (code, report) = doctor(&fixture).await;
    assert_eq!(code, 1, "{report:#}");
    assert_problem(&report, "policies", "broken-policy");
    assert_problem(&report, "policies", "broken.rego");
    let problems = findings(&report, "policies", "problem");
    assert_eq!(problems.len(), 1, "{report:#}");

    // Fixed: the check passes and says how many policies compile.
    std::fs::write(&broken, "package broken\n\ndeny if false\n").expect("write");
    let (_, report) = doctor(&fixture).await;
    assert!(
        findings(&report, "policies", "problem").is_empty(),
        "{report:#}"
    );
    let ok = findings(&report, "policies", "ok");
    assert!(
        ok.iter()
            .any(|finding| finding.to_string().contains("2 policy hook(s) compile")),
        "{report:#}"
    );
}

/// The administrator's Copilot CLI policy folder (`HOOKD_COPILOT_POLICY_DIR` in place of
/// `/etc/github-copilot/policy.d`): a policy file Copilot would skip is a problem, and
/// `allowManagedHooksOnly` in the managed settings beside it is said plainly. Read only:
/// nothing there changes.
#[test]
fn doctor_reads_the_copilot_policy_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let policy = root.join("github-copilot/policy.d");
    std::fs::create_dir_all(&policy).unwrap();
    let file = policy.join("org.json");
    std::fs::write(
        &file,
        r#"{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "/opt/g.sh"}]}}"#,
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
    let managed = root.join("github-copilot/managed-settings.json");
    std::fs::write(&managed, r#"{"allowManagedHooksOnly": true}"#).unwrap();
    let (home, project) = (root.join("home"), root.join("project"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let before: Vec<(PathBuf, Vec<u8>)> = [&file, &managed]
        .iter()
        .map(|path| ((*path).clone(), std::fs::read(path).unwrap()))
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .arg("--socket")
        .arg(root.join("no.sock"))
        .args(["doctor", "--json"])
        .current_dir(&project)
        .hermetic(&home)
        .env("HOOKD_COPILOT_POLICY_DIR", &policy)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_problem(&report, "copilot-policy", "group or world-writable");
    let notes = findings(&report, "copilot-policy", "note");
    assert!(
        notes.iter().any(|note| {
            let message = note["message"].as_str().unwrap_or_default();
            message.contains("allowManagedHooksOnly") && message.contains("do not run there")
        }),
        "{report}"
    );
    for (path, bytes) in before {
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{}", path.display());
    }
}
