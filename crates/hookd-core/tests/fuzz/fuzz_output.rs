//! Property tests standing in for fuzzing the hook-output parser and the aggregator: a hook is
//! any program, and whatever it prints, however it ends, hookd must turn it into a well-formed
//! result without panicking.
//!
//! cargo-fuzz needs a nightly toolchain, which this project's machines cannot install, so the
//! fuzz targets are `proptest` properties. `cargo test` runs each with proptest's default of
//! 256 cases; a longer run is
//! `PROPTEST_CASES=100000 cargo test --release -p hookd-core --test fuzz_output`
//! (docs/reliability.md, "Fuzzing").
//!
//! What must hold, whatever the hooks printed and however they ended:
//!
//! - `interpret` never panics; only an exit with code 0 succeeds; an output comes with its
//!   format and is a JSON object or array; the exit code and the error follow the outcome;
//! - the failure classification and the failure policy never panic, never call a
//!   success or a cancelled run a failure, leave `allow` outputs alone, and under `deny`/`ask`
//!   leave no failed hook with an output weaker than the policy (BeforeToolSelection aside,
//!   whose merge ignores decisions);
//! - `aggregate` never panics for any event and any outputs; `final_output` is an object whose
//!   keys are among the seven output keys, in their order; `success` means no errors;
//! - sequential chaining never panics, and leaves the input unchanged when it reports a
//!   JavaScript `TypeError`.

use std::time::Duration;

use hookd_core::aggregate::{OUTPUT_KEYS, aggregate};
use hookd_core::chain::try_apply_chain;
use hookd_core::output::interpret;
use hookd_core::policy::{FailurePolicy, apply_failure_policy, classify};
use hookd_core::{
    HookEventName, HookOutcome, HookResult, HookRun, MergeStrategy, OutputFormat, Source,
    StreamName,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, small, with the values the output rules look at likely.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![
            "allow",
            "deny",
            "block",
            "ask",
            "approve",
            "",
            "ANY",
            "NONE",
            "AUTO",
            "a,b",
            "x",
            "run_shell_command",
        ])
        .prop_map(Value::from),
        ".{0,10}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((output_key(), inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Keys of hook outputs and their `hookSpecificOutput`, and a few others.
fn output_key() -> impl Strategy<Value = String> {
    let mut keys: Vec<&str> = OUTPUT_KEYS.to_vec();
    keys.extend([
        "hookEventName",
        "additionalContext",
        "clearContext",
        "toolConfig",
        "mode",
        "allowedFunctionNames",
        "functionCallingConfig",
        "llm_request",
        "llm_response",
        "content",
        "tool_input",
        "candidates",
        "parts",
        "text",
        "other",
    ]);
    prop::sample::select(keys).prop_map(str::to_owned)
}

/// A hook output: mostly an object with output keys, sometimes anything at all.
fn hook_output() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::vec((output_key(), any_json()), 0..6)
            .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        1 => any_json(),
    ]
}

/// What a hook prints on one stream: text, JSON, double-encoded JSON, padded JSON, or bytes
/// that were not UTF-8 (as the runner decodes them).
fn stream_text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        hook_output().prop_map(|value| value.to_string()),
        hook_output().prop_map(|value| Value::from(value.to_string()).to_string()),
        hook_output().prop_map(|value| format!(" \u{feff}\n{value}\t\u{a0}")),
        prop::collection::vec(any::<u8>(), 0..40)
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        "[a-z_]{1,8}(, ?[a-z_]{1,8}){0,3}",
        Just(String::new()),
    ]
}

/// How a run ended: every outcome, with any values.
fn outcome() -> impl Strategy<Value = HookOutcome> {
    prop_oneof![
        4 => prop_oneof![Just(0), Just(1), Just(2), Just(127), any::<i32>()]
            .prop_map(|code| HookOutcome::Exited { code }),
        1 => any::<i32>().prop_map(|signal| HookOutcome::Signalled { signal }),
        1 => any::<u64>().prop_map(|timeout_ms| HookOutcome::TimedOut { timeout_ms }),
        1 => (any::<bool>(), any::<usize>(), any::<Option<i32>>()).prop_map(
            |(stdout, cap_bytes, code)| HookOutcome::OutputTooLarge {
                stream: if stdout { StreamName::Stdout } else { StreamName::Stderr },
                cap_bytes,
                code,
            }
        ),
        1 => ".{0,12}".prop_map(|message| HookOutcome::SpawnFailed { message, cause: hookd_core::SpawnCause::Hook }),
        1 => Just(HookOutcome::Cancelled),
        1 => ".{0,12}".prop_map(|message| HookOutcome::Refused { message }),
    ]
}

/// One hook run as the runner reports it.
fn hook_run() -> impl Strategy<Value = HookRun> {
    (outcome(), stream_text(), stream_text(), 0u64..10_000_000).prop_map(
        |(outcome, stdout, stderr, micros)| HookRun {
            outcome,
            stdout,
            stderr,
            duration: Duration::from_micros(micros),
        },
    )
}

/// Any event.
fn event() -> impl Strategy<Value = HookEventName> {
    prop::sample::select(HookEventName::ALL.to_vec())
}

/// Any failure policy.
fn policy() -> impl Strategy<Value = FailurePolicy> {
    prop::sample::select(vec![
        FailurePolicy::Allow,
        FailurePolicy::Deny,
        FailurePolicy::Ask,
    ])
}

/// Interprets `run` for `event`, checks the interpretation, and returns the per-hook record
/// with `policy` applied as the runner applies it.
fn check_interpret(event: HookEventName, run: HookRun, policy: FailurePolicy) -> HookResult {
    let interpretation = interpret(event, &run);
    assert_eq!(
        interpretation.success,
        run.outcome == HookOutcome::Exited { code: 0 }
    );
    assert_eq!(
        interpretation.output.is_some(),
        interpretation.output_format.is_some()
    );
    if let Some(output) = &interpretation.output {
        assert!(output.is_object() || output.is_array(), "output {output}");
    }
    let (exit_code, has_error) = match &run.outcome {
        HookOutcome::Exited { code } => (Some(*code), false),
        HookOutcome::Signalled { .. } => (Some(0), false),
        HookOutcome::OutputTooLarge { code, .. } => (Some(code.unwrap_or(0)), true),
        HookOutcome::TimedOut { .. }
        | HookOutcome::SpawnFailed { .. }
        | HookOutcome::Cancelled
        | HookOutcome::Refused { .. } => (None, true),
    };
    assert_eq!(interpretation.exit_code, exit_code);
    assert_eq!(interpretation.error.is_some(), has_error);
    if matches!(run.outcome, HookOutcome::OutputTooLarge { .. })
        && interpretation.output_format == Some(OutputFormat::Json)
    {
        // Output cut at its cap is JSON only when what was kept decided (a complete stdout
        // beside an overflowing stderr, or a decision read before the cut).
        let output = interpretation.output.as_ref();
        let decides = output
            .and_then(|output| output.get("decision"))
            .is_some_and(Value::is_string)
            || output.and_then(|output| output.get("continue")) == Some(&Value::Bool(false));
        let stdout_whole = matches!(
            run.outcome,
            HookOutcome::OutputTooLarge {
                stream: StreamName::Stderr,
                ..
            }
        ) && !run.stdout.trim().is_empty();
        assert!(decides || stdout_whole, "{:?}", interpretation.output);
    }

    let mut result = HookResult {
        name: "fuzz".to_owned(),
        source: Source::Project,
        event,
        success: interpretation.success,
        output: interpretation.output,
        output_format: interpretation.output_format,
        stdout: run.stdout,
        stderr: run.stderr,
        exit_code: interpretation.exit_code,
        duration: run.duration,
        error: interpretation.error,
        outcome: run.outcome,
        failure: None,
        warning: None,
    };
    result.failure = classify(&result);
    if result.success || result.outcome == HookOutcome::Cancelled {
        assert_eq!(result.failure, None);
    }
    let before = result.clone();
    let after = apply_failure_policy(result, policy);
    assert_eq!(after.failure, before.failure);
    assert_eq!(
        (
            &after.stdout,
            &after.stderr,
            after.exit_code,
            &after.outcome
        ),
        (
            &before.stdout,
            &before.stderr,
            before.exit_code,
            &before.outcome
        )
    );
    // BeforeToolSelection's merge reads only tool configs, so no policy replaces its outputs.
    let replaceable = event.merge_strategy() != MergeStrategy::ToolSelection;
    if policy == FailurePolicy::Allow || before.failure.is_none() || !replaceable {
        assert_eq!(after, before);
    } else {
        let output = after.output.as_ref().and_then(Value::as_object);
        let stops = output.and_then(|o| o.get("continue")) == Some(&Value::Bool(false));
        let decision = output
            .and_then(|o| o.get("decision"))
            .and_then(Value::as_str);
        let strict_enough = match policy {
            FailurePolicy::Ask => matches!(decision, Some("ask" | "block" | "deny")),
            _ => matches!(decision, Some("block" | "deny")),
        };
        assert!(
            stops || strict_enough,
            "{policy:?} left a failed hook with {:?}",
            after.output
        );
        assert_eq!(apply_failure_policy(after.clone(), policy), after);
    }
    after
}

/// Aggregates `results` for `event` and checks the aggregate.
fn check_aggregate(event: HookEventName, results: &[HookResult], input: &Map<String, Value>) {
    let aggregate = aggregate(event, results, input);
    assert_eq!(aggregate.success, aggregate.errors.is_empty());
    assert!(aggregate.all_outputs.len() <= results.len());
    assert!(aggregate.errors.len() <= results.len().max(1));
    let total: Duration = results.iter().map(|result| result.duration).sum();
    assert!(aggregate.total_duration <= total);
    if let Some(output) = &aggregate.final_output {
        let Some(object) = output.as_object() else {
            panic!("final output is not an object: {output}");
        };
        let positions: Vec<usize> = object
            .keys()
            .map(|key| {
                OUTPUT_KEYS
                    .iter()
                    .position(|known| known == key)
                    .unwrap_or_else(|| panic!("unexpected key {key} in {output}"))
            })
            .collect();
        assert!(
            positions.windows(2).all(|pair| pair[0] < pair[1]),
            "keys out of order: {output}"
        );
    } else {
        // No merged output: no hook printed anything truthy, or the merge threw a TypeError
        // and, as in Gemini CLI, the firing reports only that error.
        assert!(aggregate.all_outputs.is_empty());
    }
}

/// A record whose output is `output`, printed as JSON by a hook that exited 0.
fn printed(event: HookEventName, output: Value) -> HookResult {
    HookResult {
        name: "fuzz".to_owned(),
        source: Source::User,
        event,
        success: true,
        output: Some(output),
        output_format: Some(OutputFormat::Json),
        stdout: String::new(),
        stderr: String::new(),
        exit_code: Some(0),
        duration: Duration::from_millis(1),
        error: None,
        outcome: HookOutcome::Exited { code: 0 },
        failure: None,
        warning: None,
    }
}

/// An event payload with the fields chaining and chunk text read, in any shape.
fn event_input() -> impl Strategy<Value = Map<String, Value>> {
    (
        any_json(),
        any_json(),
        prop::option::of(any_json()),
        any_json(),
    )
        .prop_map(|(tool_input, llm_request, llm_response, prompt)| {
            let mut input = Map::new();
            input.insert("tool_name".to_owned(), json!("run_shell_command"));
            input.insert("tool_input".to_owned(), tool_input);
            input.insert("llm_request".to_owned(), llm_request);
            if let Some(llm_response) = llm_response {
                input.insert("llm_response".to_owned(), llm_response);
            }
            input.insert("prompt".to_owned(), prompt);
            input
        })
}

proptest! {
    #[test]
    fn any_run_interprets_to_a_well_formed_record(
        event in event(),
        run in hook_run(),
        policy in policy(),
    ) {
        check_interpret(event, run, policy);
    }

    #[test]
    fn any_runs_aggregate_to_the_seven_output_keys(
        event in event(),
        runs in prop::collection::vec((hook_run(), policy()), 0..5),
        input in event_input(),
    ) {
        let results: Vec<HookResult> = runs
            .into_iter()
            .map(|(run, policy)| check_interpret(event, run, policy))
            .collect();
        check_aggregate(event, &results, &input);
    }

    #[test]
    fn any_outputs_aggregate_to_the_seven_output_keys(
        event in event(),
        outputs in prop::collection::vec(hook_output(), 0..5),
        input in event_input(),
    ) {
        let results: Vec<HookResult> =
            outputs.into_iter().map(|output| printed(event, output)).collect();
        check_aggregate(event, &results, &input);
    }

    #[test]
    fn chaining_any_outputs_never_panics_and_a_type_error_changes_nothing(
        event in event(),
        outputs in prop::collection::vec(hook_output(), 0..5),
        input in event_input(),
    ) {
        let mut input = input;
        for output in outputs {
            let before = input.clone();
            if try_apply_chain(event, &mut input, &printed(event, output)).is_err() {
                prop_assert_eq!(&input, &before);
            }
        }
    }
}

/// Hand-picked outputs at the edges: nested double encoding, a bare string, deep nesting past
/// serde_json's recursion limit, a lone surrogate escape, and a huge number.
#[test]
fn fixed_cases() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let texts = [
        "\"\\\"{}\\\"\"".to_owned(),
        "\"text\"".to_owned(),
        deep,
        "{\"decision\":\"\\ud800\"}".to_owned(),
        "1e999".to_owned(),
        "{\"hookSpecificOutput\":true}".to_owned(),
        "{\"hookSpecificOutput\":{\"toolConfig\":{\"allowedFunctionNames\":5}}}".to_owned(),
    ];
    for event in HookEventName::ALL {
        for text in &texts {
            for code in [0, 1, 2] {
                let run = HookRun {
                    outcome: HookOutcome::Exited { code },
                    stdout: text.clone(),
                    stderr: String::new(),
                    duration: Duration::from_millis(1),
                };
                let result = check_interpret(event, run, FailurePolicy::Deny);
                check_aggregate(event, &[result.clone(), result], &Map::new());
            }
        }
    }
}
