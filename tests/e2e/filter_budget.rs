//! The daemon-wide budget of compiled `redact` filters (`ServerConfig::compiled_budget_bytes`):
//! many projects, each with filters as heavy as the limits allow, keep the daemon's memory
//! within the budget, and every project is still answered with its own filters, an evicted
//! one compiled again (a new generation), never skipped.

use std::time::Duration;

use hookd_client::{Client, EventRequest, EventResponse};
use hookd_testkit::{Daemon, DaemonOptions, MemoryWatch, input, memory_test_lock, within, write};
use serde_json::{Map, Value, json};

/// Projects loaded one after another.
const PROJECTS: usize = 16;

/// The budget the daemon runs with.
const BUDGET_MIB: usize = 32;

/// Room above the budget and the project being built for what is not a compiled filter: the
/// test's own allocations, the runtime, allocator slack and the registries being freed.
const SLACK_MIB: u64 = 56;

/// How long one event may take, filters compiled included, on a loaded 2-core machine.
const EVENT_BOUND: Duration = Duration::from_secs(30);

/// A redact hook with `count` copies of `pattern` (numbered, so no two are the same).
fn redact_hook(name: &str, count: usize, pattern: &str) -> Value {
    let patterns: Vec<Value> = (0..count)
        .map(|i| json!({"name": format!("p{i}"), "regex": format!("{pattern}{i}")}))
        .collect();
    json!({"type": "builtin", "builtin": "redact", "name": name, "patterns": patterns})
}

/// The hooks of project `index` (a settings file may have four filters): three as heavy as
/// the limits allow, and one whose pattern only this project has, so an answer shows whose
/// filters ran.
fn project_hooks(index: usize) -> Vec<Value> {
    let mut hooks: Vec<Value> = (0..3)
        .map(|i| redact_hook(&format!("heavy-{i}"), 12, r"(\w+\s?){3}x"))
        .collect();
    // Listed last, it has the last word over the others' outputs, so it also keeps the
    // default patterns.
    hooks.push(json!({"type": "builtin", "builtin": "redact", "name": "own",
        "patterns": [{"name": format!("own-{index}"), "regex": format!("TOKEN{index}-[0-9]{{6}}")}]}));
    hooks
}

/// The compiled memory the budget counts for one project's filters.
fn project_compiled_bytes(index: usize) -> usize {
    project_hooks(index)
        .iter()
        .map(|hook| {
            let raw: Map<String, Value> = hook.as_object().cloned().unwrap_or_default();
            hookd_core::redact::Redactor::from_raw(&raw)
                .expect("the filter compiles")
                .compiled_bytes()
        })
        .sum()
}

/// Sends project `cwd`'s AfterModel event carrying its own token and a GitHub token, and
/// checks that both come back redacted by that project's filters.
async fn check_project(client: &Client, cwd: &str, index: usize) -> EventResponse {
    let secret = format!("ghp_{}", "A1".repeat(20));
    let own = format!("TOKEN{index}-123456");
    let content = format!("the build used {own} and {secret} today");
    let request =
        EventRequest::new("AfterModel", cwd).with_input(input(json!({"content": content})));
    let response = within("a project's event", EVENT_BOUND, client.event(request))
        .await
        .expect("event");
    let output = serde_json::to_string(&response.result.final_output).expect("json");
    assert!(
        !output.contains(&own) && !output.contains(&secret),
        "project {index}: {output}"
    );
    assert!(
        output.contains(&format!("[REDACTED:own-{index}]"))
            && output.contains("[REDACTED:github-token]"),
        "project {index}: {output}"
    );
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_heavy_filter_projects_stay_within_the_budget_and_are_all_answered() {
    let _serial = memory_test_lock().await;
    let per_project = project_compiled_bytes(0);
    let budget = BUDGET_MIB * 1024 * 1024;
    // Without the budget the projects' filters would take several times its size.
    assert!(
        per_project * PROJECTS > 3 * budget,
        "{per_project} bytes per project is too light for this test"
    );
    let daemon = Daemon::start_with(
        json!({}),
        DaemonOptions {
            configure: Box::new(move |config| config.compiled_budget_bytes = budget),
            ..DaemonOptions::default()
        },
    )
    .await;
    let client = daemon.client().await;
    let projects: Vec<String> = (0..PROJECTS)
        .map(|index| {
            let dir = daemon.dir.path().join(format!("heavy-{index}"));
            write(
                &dir.join(".gemini/settings.json"),
                &json!({"hooks": {"AfterModel": [{"hooks": project_hooks(index)}]}}).to_string(),
            );
            dir.display().to_string()
        })
        .collect();

    let memory = MemoryWatch::start();
    let mut first_generations = Vec::new();
    for (index, cwd) in projects.iter().enumerate() {
        let response = check_project(&client, cwd, index).await;
        first_generations.push(response.generation);
    }
    // Again, in the same order: the early projects were dropped for the budget and come back
    // compiled again (a new generation), with the same filters.
    let mut rebuilt = 0;
    for (index, cwd) in projects.iter().enumerate() {
        let response = check_project(&client, cwd, index).await;
        if response.generation != first_generations[index] {
            rebuilt += 1;
        }
    }
    assert!(
        rebuilt >= PROJECTS / 2,
        "{rebuilt} of {PROJECTS} projects were compiled again"
    );
    // The most recently used project stays cached: asked twice in a row, it is not rebuilt.
    let last = PROJECTS - 1;
    let again = check_project(&client, &projects[last], last).await;
    let once_more = check_project(&client, &projects[last], last).await;
    assert_eq!(again.generation, once_more.generation);
    daemon.stop().await;
    // The bound `docs/limits.md` gives: the budget, plus the registry being built (one at a
    // time here), plus slack. Without the budget, the filters alone would take
    // `per_project * PROJECTS`.
    let per_project_mib = per_project.div_ceil(1024 * 1024) as u64;
    eprintln!(
        "compiled filters counted per project: {per_project_mib} MiB; all {PROJECTS}: {} MiB",
        per_project_mib * PROJECTS as u64
    );
    memory.finish().assert_bounded(
        "sixteen projects of heavy filters",
        BUDGET_MIB as u64 + per_project_mib + SLACK_MIB,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_that_holds_every_project_evicts_none() {
    // Serialized with the tests that measure this process's memory: its filters would count.
    let _serial = memory_test_lock().await;
    let daemon = Daemon::start(json!({})).await;
    let client = daemon.client().await;
    let mut generations = Vec::new();
    let projects: Vec<String> = (0..3)
        .map(|index| {
            let dir = daemon.dir.path().join(format!("heavy-{index}"));
            write(
                &dir.join(".gemini/settings.json"),
                &json!({"hooks": {"AfterModel": [{"hooks": project_hooks(index)}]}}).to_string(),
            );
            dir.display().to_string()
        })
        .collect();
    for (index, cwd) in projects.iter().enumerate() {
        generations.push(check_project(&client, cwd, index).await.generation);
    }
    for (index, cwd) in projects.iter().enumerate() {
        let response = check_project(&client, cwd, index).await;
        assert_eq!(response.generation, generations[index], "project {index}");
    }
    daemon.stop().await;
}
