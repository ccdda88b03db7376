//! Decisions travel through the socket and merge as spec §5.1 says for BeforeTool: the final
//! output is normalised to `continue, stopReason, suppressOutput, systemMessage, decision,
//! reason, hookSpecificOutput` in that order.

use hookd_testkit::{Daemon, command_hook, fire};
use serde_json::{Value, json};

/// One merge case: the outputs of the hooks, in plan order, and the expected final output.
struct Case {
    /// Also the tool name the case's hooks match on.
    name: &'static str,
    outputs: Vec<Value>,
    expected: Value,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "deny",
            outputs: vec![json!({"decision": "deny", "reason": "rm is not allowed"})],
            expected: json!({"continue": true, "suppressOutput": false,
                             "decision": "deny", "reason": "rm is not allowed"}),
        },
        Case {
            name: "deny_joins_every_reason",
            outputs: vec![
                json!({"decision": "allow", "reason": "looked fine"}),
                json!({"decision": "deny", "reason": "but not this"}),
            ],
            expected: json!({"continue": true, "suppressOutput": false,
                             "decision": "deny", "reason": "looked fine\nbut not this"}),
        },
        Case {
            name: "block",
            outputs: vec![json!({"decision": "block", "reason": "blocked"})],
            expected: json!({"continue": true, "suppressOutput": false,
                             "decision": "block", "reason": "blocked"}),
        },
        Case {
            name: "allow",
            outputs: vec![json!({"decision": "allow"})],
            expected: json!({"continue": true, "suppressOutput": false, "decision": "allow"}),
        },
        Case {
            name: "ask",
            outputs: vec![
                json!({"decision": "ask", "systemMessage": "sure?"}),
                json!({"decision": "allow"}),
            ],
            expected: json!({"continue": true, "suppressOutput": false,
                             "systemMessage": "sure?", "decision": "ask"}),
        },
        Case {
            name: "ask_then_block",
            outputs: vec![
                json!({"decision": "ask"}),
                json!({"decision": "block", "reason": "no"}),
            ],
            expected: json!({"continue": true, "suppressOutput": false,
                             "decision": "block", "reason": "no"}),
        },
        Case {
            name: "block_then_ask",
            outputs: vec![json!({"decision": "block"}), json!({"decision": "ask"})],
            expected: json!({"continue": true, "suppressOutput": false, "decision": "block"}),
        },
        Case {
            name: "continue_false_alone",
            outputs: vec![json!({"continue": false, "stopReason": "halt"})],
            expected: json!({"continue": false, "stopReason": "halt", "suppressOutput": false}),
        },
        Case {
            name: "continue_false_joins_stop_reasons",
            outputs: vec![
                json!({"continue": false, "stopReason": "first"}),
                json!({"decision": "allow", "continue": false, "stopReason": "second",
                       "suppressOutput": true}),
            ],
            expected: json!({"continue": false, "stopReason": "first\nsecond",
                             "suppressOutput": true}),
        },
        Case {
            name: "continue_false_with_deny",
            outputs: vec![json!({"continue": false, "decision": "deny", "reason": "r"})],
            expected: json!({"continue": false, "suppressOutput": false,
                             "decision": "deny", "reason": "r"}),
        },
        Case {
            // Decisions are exact lowercase strings; anything else is neutral.
            name: "capitalised_deny_is_neutral",
            outputs: vec![
                json!({"decision": "Deny", "systemMessage": "a"}),
                json!({"systemMessage": "b", "extra": 1}),
            ],
            expected: json!({"continue": true, "suppressOutput": false,
                             "systemMessage": "a\nb", "decision": "allow"}),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_merge_through_the_socket() {
    let cases = cases();
    // One definition per case, selected by the tool name.
    let definitions: Vec<Value> = cases
        .iter()
        .map(|case| {
            let hooks: Vec<Value> = case
                .outputs
                .iter()
                .enumerate()
                .map(|(index, output)| {
                    let command = format!("printf '%s\\n' '{output}'");
                    command_hook(&format!("{}-{index}", case.name), &command)
                })
                .collect();
            json!({"matcher": format!("^{}$", case.name), "hooks": hooks})
        })
        .collect();
    let daemon = Daemon::start(json!({"hooks": {"BeforeTool": definitions}})).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    let mut failures = Vec::new();
    for case in &cases {
        let result = fire(
            &client,
            &cwd,
            "BeforeTool",
            json!({"tool_name": case.name, "tool_input": {}}),
        )
        .await;
        assert_eq!(
            result.hooks.len(),
            case.outputs.len(),
            "{}: {result:?}",
            case.name
        );
        assert!(result.success, "{}: {result:?}", case.name);
        assert_eq!(
            result.all_outputs, case.outputs,
            "{}: all_outputs",
            case.name
        );
        // Compared as text so that the key order counts too.
        let got = serde_json::to_string(&result.final_output).expect("encode");
        let expected = serde_json::to_string(&case.expected).expect("encode");
        if got != expected {
            failures.push(format!(
                "{}:\n  expected {expected}\n  got      {got}",
                case.name
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "final outputs differ:\n{}",
        failures.join("\n")
    );
    daemon.stop().await;
}
