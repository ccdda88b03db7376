//! Matchers (spec §2) through the socket: tool names match as unanchored regexes, SessionStart
//! triggers match exactly, and a Notification matcher is ignored.

use hookd_testkit::{Daemon, command_hook, fire};
use serde_json::{Value, json};

/// Fires `event` with `input` and returns the names of the hooks that ran, in plan order.
async fn hooks_run(
    client: &hookd_client::Client,
    cwd: &str,
    event: &str,
    input: Value,
) -> Vec<String> {
    let result = fire(client, cwd, event, input).await;
    result.hooks.into_iter().map(|hook| hook.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matchers_select_hooks_per_event_rules() {
    let settings = json!({"hooks": {
        "BeforeTool": [
            {"matcher": "write_file|replace", "hooks": [command_hook("edit", "true")]},
            {"matcher": "read", "hooks": [command_hook("read", "true")]},
            {"matcher": "*", "hooks": [command_hook("star", "true")]},
            {"hooks": [command_hook("all", "true")]}
        ],
        "SessionStart": [
            {"matcher": "startup", "hooks": [command_hook("on-startup", "true")]},
            {"matcher": "resume", "hooks": [command_hook("on-resume", "true")]},
            {"matcher": "startup|resume", "hooks": [command_hook("alternation", "true")]},
            {"matcher": "start", "hooks": [command_hook("prefix", "true")]},
            {"hooks": [command_hook("any-source", "true")]}
        ],
        "Notification": [
            {"matcher": "NOPE", "hooks": [command_hook("notify", "true")]}
        ]
    }});
    let daemon = Daemon::start(settings).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    let tool_cases: [(&str, &[&str]); 7] = [
        ("write_file", &["edit", "star", "all"]),
        ("replace", &["edit", "star", "all"]),
        // Unanchored: a substring match is enough.
        ("my_write_file_v2", &["edit", "star", "all"]),
        ("read_file", &["read", "star", "all"]),
        ("spread", &["read", "star", "all"]),
        ("run_shell_command", &["star", "all"]),
        // Case-sensitive.
        ("Write_File", &["star", "all"]),
    ];
    let trigger_cases: [(&str, &[&str]); 3] = [
        ("startup", &["on-startup", "any-source"]),
        ("resume", &["on-resume", "any-source"]),
        ("clear", &["any-source"]),
    ];

    let mut failures = Vec::new();
    for (tool, expected) in tool_cases {
        let got = hooks_run(
            &client,
            &cwd,
            "BeforeTool",
            json!({"tool_name": tool, "tool_input": {}}),
        )
        .await;
        if got != expected {
            failures.push(format!(
                "BeforeTool {tool}: expected {expected:?}, got {got:?}"
            ));
        }
    }
    for (source, expected) in trigger_cases {
        let got = hooks_run(&client, &cwd, "SessionStart", json!({"source": source})).await;
        if got != expected {
            failures.push(format!(
                "SessionStart {source}: expected {expected:?}, got {got:?}"
            ));
        }
    }
    let got = hooks_run(
        &client,
        &cwd,
        "Notification",
        json!({"notification_type": "ToolPermission", "message": "m", "details": {}}),
    )
    .await;
    if got != ["notify"] {
        failures.push(format!("Notification: expected [\"notify\"], got {got:?}"));
    }
    assert!(failures.is_empty(), "matchers:\n{}", failures.join("\n"));
    daemon.stop().await;
}
