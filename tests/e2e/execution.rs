//! How hooks run (spec §4.5, §4.7, decision D2): parallel hooks overlap, sequential hooks
//! chain their tool input, and a hook that outlives its timeout is killed with its whole
//! process group and reported as timed out.

use std::time::{Duration, Instant};

use hookd_protocol::Outcome;
use hookd_testkit::{Daemon, command_hook, fire, process_running, script_command, wait_until};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_hooks_run_at_the_same_time() {
    let hooks: Vec<Value> = (1..=5)
        .map(|n| command_hook(&format!("sleeper-{n}"), "sleep 1"))
        .collect();
    let daemon = Daemon::start(json!({"hooks": {"BeforeAgent": [{"hooks": hooks}]}})).await;
    let client = daemon.client().await;

    let started = Instant::now();
    let result = fire(
        &client,
        &daemon.cwd(),
        "BeforeAgent",
        json!({"prompt": "p"}),
    )
    .await;
    let elapsed = started.elapsed();

    assert_eq!(result.hooks.len(), 5, "{result:?}");
    assert!(result.success, "{result:?}");
    for hook in &result.hooks {
        assert!(hook.success, "{hook:?}");
        assert!(
            hook.duration_ms >= 900.0,
            "each hook slept a second: {hook:?}"
        );
    }
    // Five one-second hooks in a row would take five seconds.
    assert!(
        elapsed < Duration::from_secs(4),
        "5 parallel `sleep 1` hooks took {elapsed:?}"
    );
    // The total is the sum of the durations, as Gemini CLI computes it.
    assert!(
        result.total_duration_ms >= 4500.0,
        "{}",
        result.total_duration_ms
    );
    daemon.stop().await;
}

/// The second hook of the chaining tests: reports the `tool_input` it received in its
/// `systemMessage` and answers a tool input of its own.
const REPORT_TOOL_INPUT: &str = r#"exec python3 -c '
import json, sys
payload = json.load(sys.stdin)
print(json.dumps({
    "systemMessage": json.dumps(payload["tool_input"], sort_keys=True),
    "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"b": 2}},
}))
'"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_hooks_chain_tool_input_and_parallel_ones_do_not() {
    let set_a = r#"printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"BeforeTool","tool_input":{"a":1}}}'"#;
    let report = script_command("report.sh");
    let settings = json!({"hooks": {"BeforeTool": [
        {"matcher": "^chained$", "sequential": true, "hooks": [
            command_hook("set-a", set_a),
            command_hook("report", &report),
        ]},
        {"matcher": "^parallel$", "hooks": [
            command_hook("set-a-parallel", set_a),
            command_hook("report-parallel", &report),
        ]}
    ]}});
    let daemon = Daemon::start(settings).await;
    daemon.script("report.sh", REPORT_TOOL_INPUT);
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    // (tool, what the second hook must have received)
    let cases = [
        ("chained", json!({"a": 1, "path": "x"})),
        ("parallel", json!({"path": "x"})),
    ];
    for (tool, received) in cases {
        let result = fire(
            &client,
            &cwd,
            "BeforeTool",
            json!({"tool_name": tool, "tool_input": {"path": "x"}}),
        )
        .await;
        assert_eq!(result.hooks.len(), 2, "{tool}: {result:?}");
        assert!(
            result.hooks.iter().all(|hook| hook.success),
            "{tool}: {result:?}"
        );
        let final_output = result.final_output.expect("a final output");
        let reported: Value = serde_json::from_str(
            final_output["systemMessage"]
                .as_str()
                .unwrap_or_else(|| panic!("{tool}: no systemMessage in {final_output}")),
        )
        .expect("the report is JSON");
        assert_eq!(
            reported, received,
            "{tool}: tool_input seen by the second hook"
        );
        // The merge takes the last hook's tool_input wholesale; chaining changes only what
        // later hooks see.
        assert_eq!(
            final_output["hookSpecificOutput"]["tool_input"],
            json!({"b": 2}),
            "{tool}: {final_output}"
        );
    }
    daemon.stop().await;
}

/// A hook that ignores SIGTERM (as do its children, which inherit the ignored disposition),
/// after writing its pid to `stubborn.pid` in the project dir.
const STUBBORN: &str =
    "trap '' TERM\necho $$ > stubborn.pid.tmp && mv stubborn.pid.tmp stubborn.pid\nsleep 30";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_hooks_are_killed_and_reported() {
    let settings = json!({"hooks": {"BeforeTool": [
        {"matcher": "^slow$", "hooks": [{
            "name": "slow", "type": "command", "timeout": 500,
            "command": r#"printf '%s\n' '{"decision":"deny"}'; sleep 30"#
        }]},
        {"matcher": "^stubborn$", "hooks": [{
            "name": "stubborn", "type": "command", "timeout": 1500,
            "command": script_command("stubborn.sh")
        }]}
    ]}});
    let daemon = Daemon::start(settings).await;
    daemon.script("stubborn.sh", STUBBORN);
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    // The stubborn hook gets more time so that it has surely set its trap when TERM comes.
    for (tool, timeout_ms) in [("slow", 500), ("stubborn", 1500)] {
        let error = format!("Hook timed out after {timeout_ms}ms");
        let started = Instant::now();
        let result = fire(
            &client,
            &cwd,
            "BeforeTool",
            json!({"tool_name": tool, "tool_input": {}}),
        )
        .await;
        let elapsed = started.elapsed();
        assert!(
            elapsed < Duration::from_secs(10),
            "{tool}: a {timeout_ms} ms timeout took {elapsed:?} to report"
        );
        assert!(!result.success, "{tool}: {result:?}");
        assert_eq!(result.errors, std::slice::from_ref(&error), "{tool}");
        // Output printed before the deadline is discarded.
        assert_eq!(result.final_output, None, "{tool}");
        assert!(
            result.all_outputs.is_empty(),
            "{tool}: {:?}",
            result.all_outputs
        );
        let hook = &result.hooks[0];
        assert!(!hook.success, "{tool}: {hook:?}");
        assert_eq!(hook.outcome, Outcome::TimedOut { timeout_ms }, "{tool}");
        assert_eq!(hook.error.as_deref(), Some(error.as_str()), "{tool}");
        assert_eq!(hook.output, None, "{tool}");
    }

    // The stubborn hook (and its `sleep`) did not survive: SIGKILL followed the ignored TERM.
    let pid_text = std::fs::read_to_string(daemon.project.join("stubborn.pid"))
        .expect("the stubborn hook wrote its pid");
    let pid: i32 = pid_text.trim().parse().expect("a pid");
    wait_until(
        "the stubborn hook's process is gone",
        Duration::from_secs(5),
        || !process_running(pid),
    )
    .await;
    daemon.stop().await;
}
