//! The failure policy (decision D9) through the real daemon and real hooks: a gate hook with
//! `on_failure: deny` fails closed when it times out, crashes or cannot be started; `ask`
//! asks; `allow` keeps Gemini CLI's fail-open answer; the daemon-wide default applies to
//! hooks without the key; a hook that decided is never touched; and where the event's merge
//! ignores decisions (BeforeToolSelection) the policy changes nothing.

use hookd_protocol::{EventResult, HookRecord, Severity};
use hookd_testkit::{Daemon, DaemonOptions, command_hook, fire};
use serde_json::{Value, json};

/// A hook that crashes as an interpreter would: a stack trace on stderr and exit code 1.
const CRASH: &str = "printf 'Traceback (most recent call last):\\n  File \"gate.py\", line 3\\n\
                     KeyError: tool_input\\n' >&2; exit 1";

/// What Gemini CLI makes of [`CRASH`]: an allow with the trace as a warning.
const CRASH_WARNING: &str =
    "Warning: Traceback (most recent call last):\n  File \"gate.py\", line 3\nKeyError: tool_input";

/// A command that does not exist: bash exits 127 with `command not found`.
const MISSING: &str = "hookd-e2e-no-such-command";

/// A hook entry named `name` running `command`, with `on_failure` if given and a 500 ms
/// timeout.
fn gate(name: &str, command: &str, on_failure: Option<&str>) -> Value {
    let mut hook = command_hook(name, command);
    hook["timeout"] = json!(500);
    if let Some(policy) = on_failure {
        hook["on_failure"] = json!(policy);
    }
    hook
}

/// A BeforeTool definition for the tool `tool` holding `hooks`.
fn for_tool(tool: &str, hooks: Vec<Value>) -> Value {
    json!({"matcher": format!("^{tool}$"), "hooks": hooks})
}

/// The reason the policy gives.
fn policy_reason(hook: &str, what: &str, policy: &str) -> String {
    format!("{hook} failed ({what}) and its on_failure policy is {policy}")
}

/// The merged BeforeTool output when the policy decided alone.
fn decided_by_policy(reason: &str, decision: &str) -> Value {
    json!({"continue": true, "suppressOutput": false, "systemMessage": reason,
           "decision": decision, "reason": reason})
}

/// Fires BeforeTool for `tool` and returns the result.
async fn fire_tool(daemon: &Daemon, cwd: &str, tool: &str) -> EventResult {
    let client = daemon.client().await;
    fire(
        &client,
        cwd,
        "BeforeTool",
        json!({"tool_name": tool, "tool_input": {"command": "rm -rf build"}}),
    )
    .await
}

/// The only hook record of `result`.
fn only_hook(result: &EventResult) -> &HookRecord {
    assert_eq!(result.hooks.len(), 1, "{result:?}");
    &result.hooks[0]
}

/// One BeforeTool case: the tool that selects its hook, the final output and the failure
/// recorded.
struct Case {
    tool: &'static str,
    hook: Value,
    expected: Value,
    failure: Option<&'static str>,
}

fn per_hook_cases() -> Vec<Case> {
    let timed_out = policy_reason("gate-timeout", "timed out after 500 ms", "deny");
    let crashed = |policy| {
        policy_reason(
            "gate-crash",
            "exited with code 1 without a decision",
            policy,
        )
    };
    vec![
        Case {
            tool: "timeout_deny",
            hook: gate("gate-timeout", "sleep 30", Some("deny")),
            expected: decided_by_policy(&timed_out, "deny"),
            failure: Some("timed_out"),
        },
        // bash's `command not found` (exit 127) is already a deny by Gemini CLI's text rules:
        // the hook keeps its own reason, and the record says it failed.
        Case {
            tool: "missing_deny",
            hook: gate("gate-missing", MISSING, Some("deny")),
            expected: json!({"continue": true, "suppressOutput": false, "decision": "deny",
                "reason": format!("bash: line 1: {MISSING}: command not found")}),
            failure: Some("exited_without_decision"),
        },
        Case {
            tool: "crash_deny",
            hook: gate("gate-crash", CRASH, Some("deny")),
            expected: decided_by_policy(&crashed("deny"), "deny"),
            failure: Some("exited_without_decision"),
        },
        Case {
            tool: "crash_allow",
            hook: gate("gate-crash", CRASH, Some("allow")),
            expected: json!({"continue": true, "suppressOutput": false,
                "systemMessage": CRASH_WARNING, "decision": "allow"}),
            failure: Some("exited_without_decision"),
        },
        Case {
            tool: "crash_ask",
            hook: gate("gate-crash", CRASH, Some("ask")),
            expected: decided_by_policy(&crashed("ask"), "ask"),
            failure: Some("exited_without_decision"),
        },
        // A hook that exits 0 with a decision is never touched.
        Case {
            tool: "decided_deny",
            hook: gate(
                "gate-decided",
                r#"echo '{"decision":"allow","reason":"fine"}'"#,
                Some("deny"),
            ),
            expected: json!({"continue": true, "suppressOutput": false, "decision": "allow",
                "reason": "fine"}),
            failure: None,
        },
    ]
}

/// Fires each case and compares the serialised final output (key order counts) and the
/// hook's failure kind.
async fn check(daemon: &Daemon, cases: &[Case]) {
    let mut mismatches = Vec::new();
    for case in cases {
        let result = fire_tool(daemon, &daemon.cwd(), case.tool).await;
        let hook = only_hook(&result);
        let got = (
            serde_json::to_string(&result.final_output).expect("json"),
            hook.failure.as_deref(),
        );
        let want = (
            serde_json::to_string(&Some(&case.expected)).expect("json"),
            case.failure,
        );
        if got != want {
            mismatches.push(format!("{}:\n  got  {got:?}\n  want {want:?}", case.tool));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_hook_policies_decide_for_failed_hooks() {
    let cases = per_hook_cases();
    let definitions: Vec<Value> = cases
        .iter()
        .map(|case| for_tool(case.tool, vec![case.hook.clone()]))
        .collect();
    let daemon = Daemon::start(json!({"hooks": {"BeforeTool": definitions}})).await;
    check(&daemon, &cases).await;

    // The timed-out hook's record keeps what the runner saw, with the policy's output.
    let result = fire_tool(&daemon, &daemon.cwd(), "timeout_deny").await;
    let hook = only_hook(&result);
    assert_eq!(
        (
            hook.error.as_deref(),
            hook.exit_code,
            hook.success,
            result.success
        ),
        (Some("Hook timed out after 500ms"), None, false, false),
        "{hook:?}"
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_default_applies_to_hooks_without_the_key() {
    // (tool, hook, final output, failure)
    let crashed = policy_reason(
        "gate-crash",
        "exited with code 1 without a decision",
        "deny",
    );
    let cases = vec![
        Case {
            tool: "no_key",
            hook: gate("gate-crash", CRASH, None),
            expected: decided_by_policy(&crashed, "deny"),
            failure: Some("exited_without_decision"),
        },
        // An invalid value is a warning and the default applies.
        Case {
            tool: "invalid_key",
            hook: gate("gate-crash", CRASH, Some("DENY")),
            expected: decided_by_policy(&crashed, "deny"),
            failure: Some("exited_without_decision"),
        },
        // The hook's own key overrides the default.
        Case {
            tool: "own_allow",
            hook: gate("gate-crash", CRASH, Some("allow")),
            expected: json!({"continue": true, "suppressOutput": false,
                "systemMessage": CRASH_WARNING, "decision": "allow"}),
            failure: Some("exited_without_decision"),
        },
        // Hooks that exit 0 are never failures.
        Case {
            tool: "decided",
            hook: gate("gate-decided", r#"echo '{"decision":"allow"}'"#, None),
            expected: json!({"continue": true, "suppressOutput": false, "decision": "allow"}),
            failure: None,
        },
        Case {
            tool: "plain",
            hook: gate("gate-plain", "echo looks fine", None),
            expected: json!({"continue": true, "suppressOutput": false,
                "systemMessage": "looks fine", "decision": "allow"}),
            failure: None,
        },
    ];
    let definitions: Vec<Value> = cases
        .iter()
        .map(|case| for_tool(case.tool, vec![case.hook.clone()]))
        .collect();
    let options = DaemonOptions {
        configure: Box::new(|config| {
            config.default_on_failure = "deny".parse().expect("a policy");
        }),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(json!({"hooks": {"BeforeTool": definitions}}), options).await;
    check(&daemon, &cases).await;

    let listing = daemon
        .client()
        .await
        .list(daemon.cwd())
        .await
        .expect("list");
    let warnings: Vec<(Severity, Option<&str>)> = listing
        .diagnostics
        .iter()
        .map(|diagnostic| (diagnostic.severity, diagnostic.key.as_deref()))
        .collect();
    assert_eq!(
        warnings,
        [(
            Severity::Warning,
            Some("hooks.BeforeTool[1].hooks[0].on_failure")
        )],
        "{:?}",
        listing.diagnostics
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_cannot_be_spawned_fails_closed() {
    // A user hook, fired for a session directory that does not exist: bash cannot start there.
    let user_settings = json!({"hooks": {"BeforeTool": [
        for_tool("write_file", vec![gate("gate-cwd", "true", Some("deny"))]),
    ]}});
    let options = DaemonOptions {
        files: vec![(
            "home/.gemini/settings.json".to_owned(),
            user_settings.to_string(),
        )],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(json!({}), options).await;
    let gone = daemon.path("gone");
    let gone = gone.display().to_string();

    let result = fire_tool(&daemon, &gone, "write_file").await;
    let hook = only_hook(&result);
    let what = format!(
        "could not be started: Failed to spawn hook: working directory {gone} does not exist"
    );
    let reason = policy_reason("gate-cwd", &what, "deny");
    assert_eq!(
        (result.final_output.as_ref(), hook.failure.as_deref()),
        (
            Some(&decided_by_policy(&reason, "deny")),
            Some("spawn_failed")
        ),
        "{hook:?}"
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_has_no_effect_where_the_merge_ignores_decisions() {
    // BeforeToolSelection keeps only tool configs: the timed-out gate's deny is dropped and
    // the other hook's selection stands.
    let select = r#"echo '{"hookSpecificOutput":{"toolConfig":{"mode":"ANY","allowedFunctionNames":["read_file"]}}}'"#;
    let daemon = Daemon::start(json!({"hooks": {"BeforeToolSelection": [{"hooks": [
        command_hook("select", select),
        gate("gate-timeout", "sleep 30", Some("deny")),
    ]}]}}))
    .await;
    let client = daemon.client().await;
    let result = fire(
        &client,
        &daemon.cwd(),
        "BeforeToolSelection",
        json!({"llm_request": {"model": "m", "messages": []}}),
    )
    .await;

    assert_eq!(
        result.final_output,
        Some(
            json!({"hookSpecificOutput": {"hookEventName": "BeforeToolSelection",
            "toolConfig": {"mode": "ANY", "allowedFunctionNames": ["read_file"]}}})
        ),
        "{result:?}"
    );
    // The gate's record names its failure, and the policy left its output alone.
    let gate_record = &result.hooks[1];
    assert_eq!(
        (gate_record.failure.as_deref(), gate_record.output.as_ref()),
        (Some("timed_out"), None),
        "{gate_record:?}"
    );
    daemon.stop().await;

    // Alone, the failed gate leaves no selection at all (not an empty AUTO one).
    let daemon = Daemon::start(json!({"hooks": {"BeforeToolSelection": [{"hooks": [
        gate("gate-timeout", "sleep 30", Some("deny")),
    ]}]}}))
    .await;
    let client = daemon.client().await;
    let result = fire(
        &client,
        &daemon.cwd(),
        "BeforeToolSelection",
        json!({"llm_request": {"model": "m", "messages": []}}),
    )
    .await;
    assert_eq!(result.final_output, None, "{result:?}");
    assert_eq!(result.hooks[0].failure.as_deref(), Some("timed_out"));
    daemon.stop().await;
}
