//! What a failing hook decides (hookd's failure policy): the hook's `on_failure` policy.
//!
//! Gemini CLI treats a failing hook as non-blocking: a gate that crashes, hangs or cannot be
//! started lets the tool call through. hookd keeps that as the default (`"allow"`) and lets a
//! hook, or the whole daemon, choose to fail closed instead (`"deny"`) or to hand the question
//! to the user (`"ask"`).
//!
//! A run is a failure, of one [`FailureKind`], when the hook
//!
//! - could not be started (`spawn_failed`) or hookd would not run it (`refused`);
//! - outlived its timeout (`timed_out`);
//! - was killed by a signal hookd did not send (`signalled`);
//! - printed more than the capture cap (`output_too_large`, hookd's output caps);
//! - exited with a non-zero code and printed no JSON output with a string `decision`
//!   (`exited_without_decision`): plain text, a stack trace, nothing at all, or JSON without a
//!   decision.
//!
//! A cancelled run is not a failure: the client went away or asked to stop, and nobody reads
//! the answer. A hook that exits 0 is never a failure, whatever it printed, and neither is a
//! non-zero exit with a JSON decision: the hook decided, and Gemini CLI uses JSON whatever the
//! exit code.
//!
//! The failure kind is recorded whatever the policy. Under `deny` or `ask` the hook's output is
//! then replaced by `{"decision": <policy>, "reason": <why>, "systemMessage": <why>}`, where
//! `<why>` names the hook, says what happened and names the policy. The replacement only
//! happens when the hook's own interpreted output is not already at least as strict: an output
//! that stops the agent (`"continue": false`) or blocks (`"block"`/`"deny"`, e.g. Gemini CLI's
//! exit-code rule that turns exit 2 or 127 with plain text into a deny) is kept under both
//! policies, and an `"ask"` is kept under `ask`. Captured stdout and stderr are never touched.
//!
//! The replaced output is merged like any other hook's, so the policy decides exactly as much
//! as a hook printing that decision would: nothing for events whose result ignores decisions.

use serde_json::{Map, Value};

use crate::result::{HookOutcome, HookResult, OutputFormat};

pub use crate::failure::{FailureKind, FailurePolicy, InvalidFailurePolicy, parse_on_failure};

/// Classifies an interpreted hook run: `None` when it is not a failure (see the module
/// documentation). Must be given the result as the output rules produced it, before any
/// policy replaced its output.
pub fn classify(result: &HookResult) -> Option<FailureKind> {
    match &result.outcome {
        HookOutcome::SpawnFailed { .. } => Some(FailureKind::SpawnFailed),
        HookOutcome::Refused { .. } => Some(FailureKind::Refused),
        HookOutcome::TimedOut { .. } => Some(FailureKind::TimedOut),
        HookOutcome::Signalled { .. } => Some(FailureKind::Signalled),
        HookOutcome::OutputTooLarge { .. } => Some(FailureKind::OutputTooLarge),
        HookOutcome::Cancelled | HookOutcome::Exited { code: 0 } => None,
        HookOutcome::Exited { .. } => {
            (!has_json_decision(result)).then_some(FailureKind::ExitedWithoutDecision)
        }
    }
}

/// Records the run's failure kind in `result.failure` and, under `deny` or `ask`, replaces a
/// failed hook's output with the policy's decision unless the hook's own output is already at
/// least as strict. Applying it twice changes nothing more.
pub fn apply_failure_policy(mut result: HookResult, policy: FailurePolicy) -> HookResult {
    if result.failure.is_none() {
        result.failure = classify(&result);
    }
    let Some(kind) = result.failure else {
        return result;
    };
    if policy == FailurePolicy::Allow || already_as_strict(result.output.as_ref(), policy) {
        return result;
    }
    // BeforeToolSelection's merge reads only tool configs: a decision would change nothing
    // but would turn "no output" into an empty AUTO selection. Record the failure, no more.
    if result.event.merge_strategy() == crate::event::MergeStrategy::ToolSelection {
        return result;
    }
    let reason = format!(
        "{} failed ({}) and its on_failure policy is {policy}",
        result.name,
        what_happened(kind, &result.outcome)
    );
    let mut output = Map::new();
    output.insert("decision".to_owned(), Value::from(policy.as_str()));
    output.insert("reason".to_owned(), Value::from(reason.clone()));
    output.insert("systemMessage".to_owned(), Value::from(reason));
    result.output = Some(Value::Object(output));
    result.output_format = Some(OutputFormat::Json);
    result
}

/// Whether the hook printed JSON with a string `decision`: it decided, whatever its exit code.
fn has_json_decision(result: &HookResult) -> bool {
    result.output_format == Some(OutputFormat::Json)
        && result
            .output
            .as_ref()
            .and_then(|output| output.get("decision"))
            .is_some_and(Value::is_string)
}

/// Whether `output` already stops or blocks, or asks where the policy would only ask.
fn already_as_strict(output: Option<&Value>, policy: FailurePolicy) -> bool {
    let Some(Value::Object(output)) = output else {
        return false;
    };
    if output.get("continue") == Some(&Value::Bool(false)) {
        return true;
    }
    match output.get("decision").and_then(Value::as_str) {
        Some("block" | "deny") => true,
        Some("ask") => policy == FailurePolicy::Ask,
        _ => false,
    }
}

/// What happened, for the policy's reason: "timed out after 500 ms" and the like.
fn what_happened(kind: FailureKind, outcome: &HookOutcome) -> String {
    match outcome {
        HookOutcome::SpawnFailed { message, .. } => format!("could not be started: {message}"),
        HookOutcome::Refused { message } => format!("was not run: {message}"),
        HookOutcome::TimedOut { timeout_ms } => format!("timed out after {timeout_ms} ms"),
        HookOutcome::Signalled { signal } => match signal_name(*signal) {
            Some(name) => format!("killed by signal {signal} ({name})"),
            None => format!("killed by signal {signal}"),
        },
        HookOutcome::OutputTooLarge {
            stream, cap_bytes, ..
        } => format!(
            "its {} exceeded the {cap_bytes}-byte output cap",
            stream.as_str()
        ),
        HookOutcome::Exited { code } => format!("exited with code {code} without a decision"),
        // Cancelled runs are never classified as failures; the kind's name is all there is.
        HookOutcome::Cancelled => kind.as_str().replace('_', " "),
    }
}

/// The name of the signals hooks commonly die of; their numbers are the same on every
/// platform hookd runs on.
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::event::HookEventName;
    use crate::model::{HookConfig, HookEntry, HookType, Origin, Source};
    use crate::output::hook_result;
    use crate::result::{HookRun, StreamName};

    /// The record the output rules make of `outcome` with `stdout`, for a hook named `gate`.
    fn interpreted(outcome: HookOutcome, stdout: &str) -> HookResult {
        let entry = HookEntry {
            event: HookEventName::BeforeTool,
            config: HookConfig {
                hook_type: HookType::Command,
                command: Some("./gate.sh".to_owned()),
                name: Some("gate".to_owned()),
                description: None,
                timeout_ms: None,
                env: Vec::new(),
                raw: Map::new(),
            },
            source: Source::Project,
            origin: Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: crate::trust::HookTrust::NotRequired,
            builtin: None,
            identity: Default::default(),
        };
        let run = HookRun {
            outcome,
            stdout: stdout.to_owned(),
            stderr: "trace".to_owned(),
            duration: Duration::from_millis(3),
        };
        hook_result(&entry, run)
    }

    fn exited(code: i32) -> HookOutcome {
        HookOutcome::Exited { code }
    }

    /// What the policy should leave in the record: the failure kind and the output.
    type Expected = (Option<FailureKind>, Option<Value>);

    /// Applies `policy` to the interpreted run and checks the failure kind and the output;
    /// everything else of the record must be exactly as the output rules made it, except the
    /// output format, which is JSON whenever the output was replaced.
    fn check(outcome: HookOutcome, stdout: &str, policy: FailurePolicy, expected: Expected) {
        let before = interpreted(outcome, stdout);
        let after = apply_failure_policy(before.clone(), policy);
        let (failure, output) = expected;
        let what = format!("{:?} {stdout:?} under {policy}", before.outcome);
        assert_eq!((after.failure, &after.output), (failure, &output), "{what}");
        let replaced = after.output != before.output;
        let mut unchanged = after.clone();
        unchanged.output = before.output.clone();
        unchanged.failure = before.failure;
        if replaced {
            assert_eq!(after.output_format, Some(OutputFormat::Json), "{what}");
            unchanged.output_format = before.output_format;
        }
        assert_eq!(
            unchanged, before,
            "{what}: only output and failure may change"
        );
        assert_eq!(
            apply_failure_policy(after.clone(), policy),
            after,
            "{what}: idempotent"
        );
    }

    /// The policy's replacement output.
    fn decided(policy: &str, what: &str) -> Option<Value> {
        let reason = format!("gate failed ({what}) and its on_failure policy is {policy}");
        Some(json!({"decision": policy, "reason": reason, "systemMessage": reason}))
    }

    #[test]
    fn every_failure_kind_under_every_policy() {
        use FailureKind::*;
        use FailurePolicy::{Allow, Ask, Deny};
        let too_large = |code| HookOutcome::OutputTooLarge {
            stream: StreamName::Stdout,
            cap_bytes: 1024,
            code,
        };
        // (outcome, stdout, failure kind, what the reason says happened, the output the
        // output rules made, which the allow policy keeps)
        let cases: Vec<(HookOutcome, &str, FailureKind, &str, Option<Value>)> = vec![
            (
                HookOutcome::SpawnFailed {
                    message: "Failed to spawn hook: working directory /gone does not exist"
                        .to_owned(),
                    cause: crate::SpawnCause::Hook,
                },
                "",
                SpawnFailed,
                "could not be started: Failed to spawn hook: working directory /gone does not \
                 exist",
                None,
            ),
            (
                HookOutcome::Refused {
                    message: "hookConfig.action is not a function".to_owned(),
                },
                "",
                Refused,
                "was not run: hookConfig.action is not a function",
                None,
            ),
            (
                HookOutcome::TimedOut { timeout_ms: 500 },
                "{\"decision\":\"allow\"}",
                TimedOut,
                "timed out after 500 ms",
                None,
            ),
            (
                HookOutcome::Signalled { signal: 9 },
                "",
                Signalled,
                "killed by signal 9 (SIGKILL)",
                Some(json!({"decision": "allow", "systemMessage": "trace"})),
            ),
            (
                HookOutcome::Signalled { signal: 11 },
                "{\"decision\":\"allow\"}",
                Signalled,
                "killed by signal 11 (SIGSEGV)",
                Some(json!({"decision": "allow"})),
            ),
            (
                HookOutcome::Signalled { signal: 64 },
                "half a line",
                Signalled,
                "killed by signal 64",
                Some(json!({"decision": "allow", "systemMessage": "half a line"})),
            ),
            (
                too_large(Some(0)),
                "yyyy",
                OutputTooLarge,
                "its stdout exceeded the 1024-byte output cap",
                Some(json!({"decision": "allow", "systemMessage": "yyyy"})),
            ),
            (
                too_large(None),
                "",
                OutputTooLarge,
                "its stdout exceeded the 1024-byte output cap",
                Some(json!({"decision": "allow", "systemMessage": "trace"})),
            ),
            // A crash: exit 1 with a stack trace is Gemini CLI's "Warning:" allow.
            (
                exited(1),
                "Traceback (most recent call last):\n  boom",
                ExitedWithoutDecision,
                "exited with code 1 without a decision",
                Some(json!({"decision": "allow",
                    "systemMessage": "Warning: Traceback (most recent call last):\n  boom"})),
            ),
            // Non-zero and silent: stderr is the text.
            (
                exited(1),
                "",
                ExitedWithoutDecision,
                "exited with code 1 without a decision",
                Some(json!({"decision": "allow", "systemMessage": "Warning: trace"})),
            ),
            // JSON without a decision, or with a decision that is not a string.
            (
                exited(3),
                "{\"systemMessage\":\"half done\"}",
                ExitedWithoutDecision,
                "exited with code 3 without a decision",
                Some(json!({"systemMessage": "half done"})),
            ),
            (
                exited(1),
                "{\"decision\":null}",
                ExitedWithoutDecision,
                "exited with code 1 without a decision",
                Some(json!({"decision": null})),
            ),
            (
                exited(1),
                "[\"deny\"]",
                ExitedWithoutDecision,
                "exited with code 1 without a decision",
                Some(json!(["deny"])),
            ),
            // A scalar is no output at all.
            (
                exited(4),
                "42",
                ExitedWithoutDecision,
                "exited with code 4 without a decision",
                None,
            ),
        ];
        for (outcome, stdout, kind, what, original) in cases {
            check(
                outcome.clone(),
                stdout,
                Allow,
                (Some(kind), original.clone()),
            );
            check(
                outcome.clone(),
                stdout,
                Deny,
                (Some(kind), decided("deny", what)),
            );
            check(outcome, stdout, Ask, (Some(kind), decided("ask", what)));
        }
    }

    #[test]
    fn blocking_outputs_of_failed_hooks_are_kept_and_labelled() {
        use FailurePolicy::{Allow, Ask, Deny};
        let deny = |reason: &str| Some(json!({"decision": "deny", "reason": reason}));
        // (outcome, stdout, failure kind, kept output)
        let cases: Vec<(HookOutcome, &str, FailureKind, Option<Value>)> = vec![
            // Exit 2 (and 127, a missing command) with plain text already deny (spec §4.6).
            (
                exited(2),
                "no way",
                FailureKind::ExitedWithoutDecision,
                deny("no way"),
            ),
            (
                exited(127),
                "",
                FailureKind::ExitedWithoutDecision,
                deny("trace"),
            ),
            (
                HookOutcome::OutputTooLarge {
                    stream: StreamName::Stderr,
                    cap_bytes: 4,
                    code: Some(2),
                },
                "",
                FailureKind::OutputTooLarge,
                deny("trace"),
            ),
            // A signalled hook that had printed a block, or a stop.
            (
                HookOutcome::Signalled { signal: 15 },
                "{\"decision\":\"block\",\"reason\":\"r\"}",
                FailureKind::Signalled,
                Some(json!({"decision": "block", "reason": "r"})),
            ),
            (
                exited(1),
                "{\"continue\":false,\"stopReason\":\"halt\"}",
                FailureKind::ExitedWithoutDecision,
                Some(json!({"continue": false, "stopReason": "halt"})),
            ),
        ];
        for (outcome, stdout, kind, kept) in cases {
            for policy in [Allow, Deny, Ask] {
                check(outcome.clone(), stdout, policy, (Some(kind), kept.clone()));
            }
        }
        // A hook's own ask is kept under ask and hardened under deny.
        let ask = "{\"decision\":\"ask\",\"reason\":\"sure?\"}";
        let signalled = HookOutcome::Signalled { signal: 9 };
        let kind = Some(FailureKind::Signalled);
        check(
            signalled.clone(),
            ask,
            Ask,
            (kind, Some(json!({"decision": "ask", "reason": "sure?"}))),
        );
        check(
            signalled,
            ask,
            Deny,
            (kind, decided("deny", "killed by signal 9 (SIGKILL)")),
        );
    }

    #[test]
    fn runs_that_are_not_failures_are_never_touched() {
        // (outcome, stdout): exit 0 whatever it printed, a JSON decision whatever the exit
        // code, and cancellation.
        let cases = [
            (exited(0), "{\"decision\":\"allow\"}"),
            (exited(0), "{\"decision\":\"deny\",\"reason\":\"r\"}"),
            (exited(0), "plain text"),
            (exited(0), ""),
            (exited(0), "{}"),
            (exited(2), "{\"decision\":\"allow\"}"),
            (exited(1), "{\"decision\":\"approve\"}"),
            (exited(1), "\"{\\\"decision\\\":\\\"allow\\\"}\""),
            (HookOutcome::Cancelled, ""),
        ];
        for (outcome, stdout) in cases {
            let original = interpreted(outcome.clone(), stdout).output;
            for policy in [
                FailurePolicy::Allow,
                FailurePolicy::Deny,
                FailurePolicy::Ask,
            ] {
                check(outcome.clone(), stdout, policy, (None, original.clone()));
            }
        }
    }

    #[test]
    fn on_failure_values() {
        // (settings value, parsed)
        /// The parsed policy, or the value the error quotes.
        type Parsed = Result<Option<FailurePolicy>, &'static str>;
        let cases: Vec<(Option<Value>, Parsed)> = vec![
            (None, Ok(None)),
            (Some(Value::Null), Ok(None)),
            (Some(json!("allow")), Ok(Some(FailurePolicy::Allow))),
            (Some(json!("deny")), Ok(Some(FailurePolicy::Deny))),
            (Some(json!("ask")), Ok(Some(FailurePolicy::Ask))),
            (Some(json!("Deny")), Err("\"Deny\"")),
            (Some(json!(" deny")), Err("\" deny\"")),
            (Some(json!("block")), Err("\"block\"")),
            (Some(json!(true)), Err("true")),
            (Some(json!(["deny"])), Err("[\"deny\"]")),
        ];
        for (value, expected) in cases {
            let parsed = parse_on_failure(value.as_ref());
            let expected = expected.map_err(|found| InvalidFailurePolicy {
                found: found.to_owned(),
            });
            assert_eq!(parsed, expected, "{value:?}");
        }
        assert_eq!(
            "nope".parse::<FailurePolicy>().map_err(|e| e.to_string()),
            Err("expected \"allow\", \"deny\" or \"ask\", not \"nope\"".to_owned())
        );
        for policy in [
            FailurePolicy::Allow,
            FailurePolicy::Deny,
            FailurePolicy::Ask,
        ] {
            assert_eq!(policy.as_str().parse(), Ok(policy));
        }
        assert_eq!(FailurePolicy::default(), FailurePolicy::Allow);
    }
}
