//! Each branch of spec §4.6 (exit code and output parsing), through the socket: what the hook
//! record says and what the event's final output becomes.

use hookd_protocol::{HookRecord, Outcome, OutputFormat};
use hookd_testkit::{Daemon, command_hook, fire};
use serde_json::{Value, json};

/// What a hook's parsed output must be.
enum Expected {
    /// No output at all (`output` and `output_format` null).
    Nothing,
    /// Exactly this value, given in this format.
    Output(Value, OutputFormat),
    /// A plain-text deny whose reason is the hook's trimmed stderr, which must contain this.
    DenyWithStderr(&'static str),
}

/// One parsing case: the hook's command line and what its record must show.
struct Case {
    /// Also the tool name the case's hook matches on.
    name: &'static str,
    command: &'static str,
    success: bool,
    exit_code: i32,
    outcome: Outcome,
    expected: Expected,
}

fn cases() -> Vec<Case> {
    use Expected::{DenyWithStderr, Nothing, Output};
    use OutputFormat::{Json, Text};
    vec![
        Case {
            name: "json_exit_0",
            command: r#"printf '%s\n' '{"decision":"deny","reason":"json says no"}'"#,
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Output(json!({"decision": "deny", "reason": "json says no"}), Json),
        },
        Case {
            name: "json_with_surrounding_whitespace",
            command: r#"printf '  \n{"decision":"block"}\n\n'"#,
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Output(json!({"decision": "block"}), Json),
        },
        Case {
            name: "text_exit_0",
            command: "echo hello there",
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Output(
                json!({"decision": "allow", "systemMessage": "hello there"}),
                Text,
            ),
        },
        Case {
            // A debug line before the JSON makes the whole stdout plain text.
            name: "debug_line_before_json",
            command: r#"echo debug; printf '%s\n' '{"decision":"deny"}'"#,
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Output(
                json!({"decision": "allow", "systemMessage": "debug\n{\"decision\":\"deny\"}"}),
                Text,
            ),
        },
        Case {
            name: "text_exit_1",
            command: "echo careful; exit 1",
            success: false,
            exit_code: 1,
            outcome: Outcome::Exited { code: 1 },
            expected: Output(
                json!({"decision": "allow", "systemMessage": "Warning: careful"}),
                Text,
            ),
        },
        Case {
            name: "exit_2_stdout",
            command: "echo 'from stdout'; echo 'from stderr' >&2; exit 2",
            success: false,
            exit_code: 2,
            outcome: Outcome::Exited { code: 2 },
            expected: Output(json!({"decision": "deny", "reason": "from stdout"}), Text),
        },
        Case {
            name: "exit_2_stderr_only",
            command: "echo '  only stderr  ' >&2; exit 2",
            success: false,
            exit_code: 2,
            outcome: Outcome::Exited { code: 2 },
            expected: Output(json!({"decision": "deny", "reason": "only stderr"}), Text),
        },
        Case {
            name: "exit_3_text",
            command: "echo nope; exit 3",
            success: false,
            exit_code: 3,
            outcome: Outcome::Exited { code: 3 },
            expected: Output(json!({"decision": "deny", "reason": "nope"}), Text),
        },
        Case {
            // Valid JSON wins whatever the exit code.
            name: "exit_2_json_allow",
            command: r#"printf '%s\n' '{"decision":"allow"}'; exit 2"#,
            success: false,
            exit_code: 2,
            outcome: Outcome::Exited { code: 2 },
            expected: Output(json!({"decision": "allow"}), Json),
        },
        Case {
            name: "empty_stdout_json_stderr",
            command: r#"printf '%s\n' '{"decision":"block","reason":"via stderr"}' >&2"#,
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Output(json!({"decision": "block", "reason": "via stderr"}), Json),
        },
        Case {
            name: "double_encoded_json",
            command: r#"printf '%s\n' '"{\"decision\":\"deny\",\"reason\":\"twice\"}"'"#,
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Output(json!({"decision": "deny", "reason": "twice"}), Json),
        },
        Case {
            name: "scalar_number",
            command: "echo 42",
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Nothing,
        },
        Case {
            name: "scalar_null",
            command: "echo null",
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Nothing,
        },
        Case {
            name: "empty_output",
            command: "true",
            success: true,
            exit_code: 0,
            outcome: Outcome::Exited { code: 0 },
            expected: Nothing,
        },
        Case {
            name: "missing_command",
            command: "hookd-e2e-no-such-command --flag",
            success: false,
            exit_code: 127,
            outcome: Outcome::Exited { code: 127 },
            expected: DenyWithStderr("command not found"),
        },
        Case {
            // Killed by a signal hookd did not send: reported as exit code 0, not a success,
            // and its stdout parsed as for code 0.
            name: "killed_by_signal",
            command: "echo partial; kill -9 $$",
            success: false,
            exit_code: 0,
            outcome: Outcome::Signalled { signal: 9 },
            expected: Output(
                json!({"decision": "allow", "systemMessage": "partial"}),
                Text,
            ),
        },
    ]
}

/// Checks one hook record against its case; returns what differs.
fn check(case: &Case, hook: &HookRecord, final_output: Option<&Value>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut expect = |what: &str, ok: bool, got: String| {
        if !ok {
            problems.push(format!("{what}: got {got}"));
        }
    };
    expect(
        "success",
        hook.success == case.success,
        format!("{}", hook.success),
    );
    expect(
        "exit_code",
        hook.exit_code == Some(case.exit_code),
        format!("{:?}", hook.exit_code),
    );
    expect(
        "outcome",
        hook.outcome == case.outcome,
        format!("{:?}", hook.outcome),
    );
    expect("error", hook.error.is_none(), format!("{:?}", hook.error));
    let (output, format) = match &case.expected {
        Expected::Nothing => (None, None),
        Expected::Output(value, format) => (Some(value.clone()), Some(*format)),
        Expected::DenyWithStderr(needle) => {
            let stderr = hook.stderr.trim();
            expect(
                "stderr",
                stderr.contains(needle),
                format!("{stderr:?}, wanted it to contain {needle:?}"),
            );
            (
                Some(json!({"decision": "deny", "reason": stderr})),
                Some(OutputFormat::Text),
            )
        }
    };
    expect(
        "output",
        hook.output == output,
        format!("{:?}, expected {output:?}", hook.output),
    );
    expect(
        "output_format",
        hook.output_format == format,
        format!("{:?}, expected {format:?}", hook.output_format),
    );
    // The final output carries the hook's decision (an absent or neutral one merges to allow).
    match &output {
        None => expect(
            "final_output",
            final_output.is_none(),
            format!("{final_output:?}"),
        ),
        Some(output) => {
            let decision = output
                .get("decision")
                .and_then(Value::as_str)
                .filter(|decision| matches!(*decision, "deny" | "block"))
                .unwrap_or("allow");
            let got = final_output.and_then(|value| value.get("decision"));
            expect(
                "final decision",
                got == Some(&json!(decision)),
                format!("{final_output:?}, expected decision {decision}"),
            );
        }
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_output_parsing_branch_through_the_socket() {
    let cases = cases();
    let definitions: Vec<Value> = cases
        .iter()
        .map(|case| {
            json!({"matcher": format!("^{}$", case.name),
                   "hooks": [command_hook(case.name, case.command)]})
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
        assert_eq!(result.hooks.len(), 1, "{}: {result:?}", case.name);
        // Only spawn failures, timeouts and the like are errors; exit codes are not.
        if !result.success || !result.errors.is_empty() {
            failures.push(format!(
                "{}: aggregate errors {:?}",
                case.name, result.errors
            ));
        }
        let problems = check(case, &result.hooks[0], result.final_output.as_ref());
        if !problems.is_empty() {
            failures.push(format!(
                "{} (`{}`):\n    {}\n    record: {:?}",
                case.name,
                case.command,
                problems.join("\n    "),
                result.hooks[0]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "parsing cases failed:\n{}",
        failures.join("\n")
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captured_streams_are_reported_verbatim() {
    let daemon = Daemon::start(json!({"hooks": {"BeforeTool": [{"hooks": [command_hook(
        "both",
        "echo 'to stdout'; echo 'to stderr' >&2; exit 2",
    )]}]}}))
    .await;
    let client = daemon.client().await;
    let result = fire(
        &client,
        &daemon.cwd(),
        "BeforeTool",
        json!({"tool_name": "x", "tool_input": {}}),
    )
    .await;
    let hook = &result.hooks[0];
    assert_eq!(hook.stdout, "to stdout\n");
    assert_eq!(hook.stderr, "to stderr\n");
    assert_eq!(
        result.final_output,
        Some(json!({"continue": true, "suppressOutput": false,
                    "decision": "deny", "reason": "to stdout"}))
    );
    daemon.stop().await;
}
