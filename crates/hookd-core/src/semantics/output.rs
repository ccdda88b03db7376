//! Turning what a hook run produced into Gemini CLI's per-hook result (spec §4.6, §4.8).
//!
//! The algorithm for a process that exited:
//!
//! ```text
//! text = trim(stdout) if non-empty, else trim(stderr)
//! text empty                   -> no output
//! text parses as JSON:
//!     a string                 -> parse that string again (double-encoded JSON); if the
//!                                 second parse fails, use the plain-text path on `text`
//!     an object or an array    -> the output, format json
//!     a number, boolean, null  -> no output
//! text is not JSON (plain text), by exit code:
//!     0                        -> {"decision":"allow","systemMessage":text}
//!     1                        -> {"decision":"allow","systemMessage":"Warning: "+text}
//!     anything else            -> {"decision":"deny","reason":text}
//! success = exit code is 0
//! ```
//!
//! So valid JSON is used whatever the exit code, exit 2 blocks only through the plain-text
//! path, JSON on stderr counts when stdout is empty, and a missing command (bash exits 127)
//! denies with bash's message as the reason. Trimming uses JavaScript's whitespace set.
//!
//! The other outcomes: a process killed by a signal reports exit code 0, fails, and its output
//! is parsed as for code 0, with no error (Gemini CLI reports none). A timeout discards the
//! output and reports `Hook timed out after <N>ms`. A spawn failure, a cancellation and a
//! refusal report their message and no output. A stream over the capture cap (hookd's output caps)
//! fails with an error naming the stream and the cap. What it kept still decides when it
//! can: if the text the output is read from (see above) starts with a JSON object whose
//! `decision` (or `continue: false`) came before the cut, the object's complete members are
//! the output, so a deny printed before a flood is never lost; otherwise the kept text takes
//! the plain-text path, because JSON cut off at the cap cannot be trusted as a whole. A
//! stderr over the cap next to a stdout that is not blank does not touch the decision (stdout
//! is complete and parsed as usual); the runner reports such a run as an ordinary exit.
//!
//! hookd's tool lists (BeforeToolSelection only): where the plain-text path applies with exit code 0
//! and the text is a comma-separated list of tool names, the output selects exactly those
//! tools with mode `ANY`, as the seed documents describe.
//!
//! Known divergences from JavaScript's `JSON.parse`: nesting deeper than 128 levels, numbers
//! beyond the range of `f64` and lone UTF-16 surrogate escapes are rejected here, so such
//! output takes the plain-text path.

use serde_json::{Map, Value, json};

use crate::command::js_trim;
use crate::event::HookEventName;
use crate::model::HookEntry;
use crate::policy::classify;
use crate::result::{HookOutcome, HookResult, HookRun, OutputFormat, StreamName};

/// What one hook run means, before it is joined with the hook's identity.
#[derive(Debug, Clone, PartialEq)]
pub struct Interpretation {
    /// `true` only when the process exited with code 0 within its limits.
    pub success: bool,
    /// The parsed output object (or array), if any.
    pub output: Option<Value>,
    /// How the output was given.
    pub output_format: Option<OutputFormat>,
    /// The exit code as Gemini CLI reports it (a signal reports 0); absent when the process
    /// never ran to an exit (timeout, spawn failure, cancellation, refusal).
    pub exit_code: Option<i32>,
    /// The error, for the failures Gemini CLI reports as errors.
    pub error: Option<String>,
}

/// Interprets one hook run for `event` (spec §4.6 plus hookd's output caps and tool lists).
pub fn interpret(event: HookEventName, run: &HookRun) -> Interpretation {
    match &run.outcome {
        HookOutcome::Exited { code } => {
            let (output, output_format) = parse_output(event, &run.stdout, &run.stderr, *code);
            Interpretation {
                success: *code == 0,
                output,
                output_format,
                exit_code: Some(*code),
                error: None,
            }
        }
        HookOutcome::Signalled { .. } => {
            let (output, output_format) = parse_output(event, &run.stdout, &run.stderr, 0);
            Interpretation {
                success: false,
                output,
                output_format,
                exit_code: Some(0),
                error: None,
            }
        }
        HookOutcome::TimedOut { timeout_ms } => {
            failure(format!("Hook timed out after {timeout_ms}ms"))
        }
        HookOutcome::OutputTooLarge {
            stream,
            cap_bytes,
            code,
        } => {
            let code = code.unwrap_or(0);
            let stdout_blank = js_trim(&run.stdout).is_empty();
            let (output, output_format) = if *stream == StreamName::Stderr && !stdout_blank {
                // stdout is whole: it decides as usual.
                parse_output(event, &run.stdout, "", code)
            } else {
                let text = output_text(&run.stdout, &run.stderr);
                match salvage_decision(text) {
                    Some(kept) => (Some(Value::Object(kept)), Some(OutputFormat::Json)),
                    None if text.is_empty() => (None, None),
                    None => (
                        Some(plain_text_output(event, text, code)),
                        Some(OutputFormat::Text),
                    ),
                }
            };
            Interpretation {
                success: false,
                output_format,
                output,
                exit_code: Some(code),
                error: Some(format!(
                    "Hook {} exceeded the {cap_bytes}-byte output cap",
                    stream.as_str()
                )),
            }
        }
        HookOutcome::SpawnFailed { message, .. } | HookOutcome::Refused { message } => {
            failure(message.clone())
        }
        HookOutcome::Cancelled => failure("Hook cancelled".to_owned()),
    }
}

/// Joins a run's interpretation with the hook's identity into the per-hook record.
///
/// The record's `failure` says which way the run failed ([`classify`]); no failure policy is
/// applied here (see [`crate::policy::apply_failure_policy`]).
pub fn hook_result(entry: &HookEntry, run: HookRun) -> HookResult {
    let interpretation = interpret(entry.event, &run);
    record(entry, run, interpretation)
}

/// Joins a run with its interpretation (by whichever rules apply to the hook) and the hook's
/// identity into the per-hook record, with its `failure` classified.
pub fn record(entry: &HookEntry, run: HookRun, interpretation: Interpretation) -> HookResult {
    let mut result = HookResult {
        name: entry.config.display_name().to_owned(),
        source: entry.source,
        event: entry.event,
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
    result
}

/// A failed run with an error and nothing else.
fn failure(error: String) -> Interpretation {
    Interpretation {
        success: false,
        output: None,
        output_format: None,
        exit_code: None,
        error: Some(error),
    }
}

/// The decision at the start of output cut off at its cap: the complete members of the JSON
/// object `text` starts with, read up to the cut, when they include a string `decision` or
/// `continue: false`. `None` when the text does not start with an object, or the members that
/// made it whole decide nothing.
fn salvage_decision(text: &str) -> Option<Map<String, Value>> {
    use serde::Deserializer as _;
    use serde::de::{MapAccess, Visitor};

    /// Collects members into the map it borrows, so that what was read before an error stays.
    struct Members<'a>(&'a mut Map<String, Value>);

    impl<'de> Visitor<'de> for Members<'_> {
        type Value = ();

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                let value: Value = map.next_value()?;
                self.0.insert(key, value);
            }
            Ok(())
        }
    }

    let text = js_trim(text);
    if !text.starts_with('{') {
        return None;
    }
    let mut kept = Map::new();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    // The error is the cut (or junk after it); the members before it are what counts.
    let _ = deserializer.deserialize_map(Members(&mut kept));
    let decides = kept.get("decision").is_some_and(Value::is_string)
        || kept.get("continue") == Some(&Value::Bool(false));
    decides.then_some(kept)
}

/// The text the output is read from: trimmed stdout, or trimmed stderr when stdout is blank.
fn output_text<'a>(stdout: &'a str, stderr: &'a str) -> &'a str {
    let stdout = js_trim(stdout);
    if stdout.is_empty() {
        js_trim(stderr)
    } else {
        stdout
    }
}

/// Parses a finished process's output with exit code `code` (see the module documentation).
pub fn parse_output(
    event: HookEventName,
    stdout: &str,
    stderr: &str,
    code: i32,
) -> (Option<Value>, Option<OutputFormat>) {
    let text = output_text(stdout, stderr);
    if text.is_empty() {
        return (None, None);
    }
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(Value::String(inner)) => serde_json::from_str::<Value>(&inner).ok(),
        Ok(value) => Some(value),
        Err(_) => None,
    };
    match parsed {
        Some(value @ (Value::Object(_) | Value::Array(_))) => {
            (Some(value), Some(OutputFormat::Json))
        }
        Some(_) => (None, None),
        None => (
            Some(plain_text_output(event, text, code)),
            Some(OutputFormat::Text),
        ),
    }
}

/// The output a plain-text answer stands for, by exit code (and tool lists for BeforeToolSelection).
pub fn plain_text_output(event: HookEventName, text: &str, code: i32) -> Value {
    if code == 0 && event == HookEventName::BeforeToolSelection {
        if let Some(names) = tool_name_list(text) {
            return json!({
                "hookSpecificOutput": {
                    "hookEventName": "BeforeToolSelection",
                    "toolConfig": {"mode": "ANY", "allowedFunctionNames": names},
                }
            });
        }
    }
    let mut output = Map::new();
    match code {
        0 => {
            output.insert("decision".to_owned(), json!("allow"));
            output.insert("systemMessage".to_owned(), json!(text));
        }
        1 => {
            output.insert("decision".to_owned(), json!("allow"));
            output.insert(
                "systemMessage".to_owned(),
                json!(format!("Warning: {text}")),
            );
        }
        _ => {
            output.insert("decision".to_owned(), json!("deny"));
            output.insert("reason".to_owned(), json!(text));
        }
    }
    Value::Object(output)
}

/// Splits `text` into tool names if it is a comma-separated list of them (hookd's tool lists):
/// every item, trimmed, must be a non-empty `[A-Za-z_][A-Za-z0-9_.:-]*`. A single name is a
/// list of one.
pub fn tool_name_list(text: &str) -> Option<Vec<String>> {
    text.split(',')
        .map(|item| {
            let item = js_trim(item);
            is_tool_name(item).then(|| item.to_owned())
        })
        .collect()
}

/// Whether `name` matches `[A-Za-z_][A-Za-z0-9_.:-]*` (checked by hand: no regex in the core).
fn is_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::model::{HookConfig, HookType, Origin, Source};
    use crate::result::StreamName;

    fn run(outcome: HookOutcome, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            outcome,
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
            duration: Duration::from_millis(7),
        }
    }

    fn exited(code: i32) -> HookOutcome {
        HookOutcome::Exited { code }
    }

    /// Expected interpretation, written compactly:
    /// (success, output, format, exit code, error).
    type Expected = (
        bool,
        Option<Value>,
        Option<OutputFormat>,
        Option<i32>,
        Option<&'static str>,
    );

    fn check(event: HookEventName, run: HookRun, expected: Expected) {
        let (success, output, output_format, exit_code, error) = expected;
        let want = Interpretation {
            success,
            output,
            output_format,
            exit_code,
            error: error.map(str::to_owned),
        };
        assert_eq!(interpret(event, &run), want, "{event}: {run:?}");
    }

    const JSON: Option<OutputFormat> = Some(OutputFormat::Json);
    const TEXT: Option<OutputFormat> = Some(OutputFormat::Text);

    #[test]
    fn exit_code_and_output_parsing_follow_4_6() {
        let e = HookEventName::BeforeTool;
        let cases: Vec<(HookRun, Expected)> = vec![
            // Empty output: nothing, whatever the code.
            (run(exited(0), "", ""), (true, None, None, Some(0), None)),
            (
                run(exited(0), " \n\t", "  "),
                (true, None, None, Some(0), None),
            ),
            (run(exited(2), "", ""), (false, None, None, Some(2), None)),
            // A JSON object on stdout, exit 0.
            (
                run(exited(0), "{\"decision\":\"deny\",\"reason\":\"r\"}\n", ""),
                (
                    true,
                    Some(json!({"decision":"deny","reason":"r"})),
                    JSON,
                    Some(0),
                    None,
                ),
            ),
            // Valid JSON is used whatever the exit code.
            (
                run(exited(2), "{\"decision\":\"allow\"}", "blocked"),
                (
                    false,
                    Some(json!({"decision":"allow"})),
                    JSON,
                    Some(2),
                    None,
                ),
            ),
            (
                run(exited(1), "{\"decision\":\"deny\"}", ""),
                (false, Some(json!({"decision":"deny"})), JSON, Some(1), None),
            ),
            // Arrays are outputs too.
            (
                run(exited(0), "[1,2]", ""),
                (true, Some(json!([1, 2])), JSON, Some(0), None),
            ),
            // Scalars are no output.
            (run(exited(0), "42", ""), (true, None, None, Some(0), None)),
            (
                run(exited(0), "true", ""),
                (true, None, None, Some(0), None),
            ),
            (
                run(exited(0), "null", ""),
                (true, None, None, Some(0), None),
            ),
            (
                run(exited(2), "false", "err"),
                (false, None, None, Some(2), None),
            ),
            // Double-encoded JSON.
            (
                run(exited(0), r#""{\"decision\":\"block\"}""#, ""),
                (true, Some(json!({"decision":"block"})), JSON, Some(0), None),
            ),
            // A JSON string whose content is a scalar JSON value: no output.
            (
                run(exited(0), r#""12""#, ""),
                (true, None, None, Some(0), None),
            ),
            // A JSON string that holds a string: the second value is a string, no output.
            (
                run(exited(0), r#""\"x\"""#, ""),
                (true, None, None, Some(0), None),
            ),
            // A JSON string that is not JSON inside: plain text with the ORIGINAL text.
            (
                run(exited(0), r#""hello""#, ""),
                (
                    true,
                    Some(json!({"decision":"allow","systemMessage":"\"hello\""})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            // Plain text, code 0 → allow + systemMessage.
            (
                run(exited(0), "  all good \n", ""),
                (
                    true,
                    Some(json!({"decision":"allow","systemMessage":"all good"})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            // Plain text, code 1 → allow + Warning.
            (
                run(exited(1), "careful", ""),
                (
                    false,
                    Some(json!({"decision":"allow","systemMessage":"Warning: careful"})),
                    TEXT,
                    Some(1),
                    None,
                ),
            ),
            // Plain text, any other code → deny + reason.
            (
                run(exited(2), "", "no way\n"),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"no way"})),
                    TEXT,
                    Some(2),
                    None,
                ),
            ),
            (
                run(exited(3), "three", ""),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"three"})),
                    TEXT,
                    Some(3),
                    None,
                ),
            ),
            (
                run(exited(126), "", "not executable"),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"not executable"})),
                    TEXT,
                    Some(126),
                    None,
                ),
            ),
            (
                run(exited(255), "x", ""),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"x"})),
                    TEXT,
                    Some(255),
                    None,
                ),
            ),
            (
                run(exited(-1), "neg", ""),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"neg"})),
                    TEXT,
                    Some(-1),
                    None,
                ),
            ),
            // A missing binary: exit 127 denies with bash's stderr.
            (
                run(exited(127), "", "bash: line 1: nope: command not found\n"),
                (
                    false,
                    Some(
                        json!({"decision":"deny","reason":"bash: line 1: nope: command not found"}),
                    ),
                    TEXT,
                    Some(127),
                    None,
                ),
            ),
            // Exit 2 reason is stdout when stdout is non-empty.
            (
                run(exited(2), "from stdout", "from stderr"),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"from stdout"})),
                    TEXT,
                    Some(2),
                    None,
                ),
            ),
            // Exit 0, empty stdout, JSON on stderr → that JSON is the output.
            (
                run(exited(0), "\n", "{\"systemMessage\":\"s\"}"),
                (
                    true,
                    Some(json!({"systemMessage":"s"})),
                    JSON,
                    Some(0),
                    None,
                ),
            ),
            // A debug line before the JSON turns everything into a system message.
            (
                run(exited(0), "debug\n{\"decision\":\"deny\"}", ""),
                (
                    true,
                    Some(
                        json!({"decision":"allow","systemMessage":"debug\n{\"decision\":\"deny\"}"}),
                    ),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            // Stdout that is blank after trimming falls back to stderr, even for code 0.
            (
                run(exited(0), "   ", "note"),
                (
                    true,
                    Some(json!({"decision":"allow","systemMessage":"note"})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            // JavaScript whitespace: a BOM is trimmed.
            (
                run(exited(0), "\u{FEFF}{\"a\":1}\u{FEFF}", ""),
                (true, Some(json!({"a":1})), JSON, Some(0), None),
            ),
        ];
        for (run, expected) in cases {
            check(e, run, expected);
        }
    }

    #[test]
    fn json_output_keeps_key_order() {
        let interpretation = interpret(
            HookEventName::BeforeTool,
            &run(exited(0), r#"{"z":1,"a":2,"m":{"y":1,"b":2}}"#, ""),
        );
        let text = serde_json::to_string(&interpretation.output).expect("serialises");
        assert_eq!(text, r#"{"z":1,"a":2,"m":{"y":1,"b":2}}"#);
    }

    #[test]
    fn non_exit_outcomes() {
        let e = HookEventName::AfterTool;
        let cases: Vec<(HookRun, Expected)> = vec![
            // Signal: code 0, failure, parsed as code 0, no error.
            (
                run(HookOutcome::Signalled { signal: 9 }, "partial", ""),
                (
                    false,
                    Some(json!({"decision":"allow","systemMessage":"partial"})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            (
                run(
                    HookOutcome::Signalled { signal: 15 },
                    "{\"decision\":\"block\"}",
                    "",
                ),
                (
                    false,
                    Some(json!({"decision":"block"})),
                    JSON,
                    Some(0),
                    None,
                ),
            ),
            (
                run(HookOutcome::Signalled { signal: 15 }, "", ""),
                (false, None, None, Some(0), None),
            ),
            // Timeout: output discarded even when it was valid JSON.
            (
                run(
                    HookOutcome::TimedOut { timeout_ms: 300 },
                    "{\"decision\":\"deny\"}",
                    "",
                ),
                (false, None, None, None, Some("Hook timed out after 300ms")),
            ),
            // Spawn failure.
            (
                run(
                    HookOutcome::SpawnFailed {
                        message: "spawn bash ENOENT".to_owned(),
                        cause: crate::SpawnCause::Hook,
                    },
                    "",
                    "",
                ),
                (false, None, None, None, Some("spawn bash ENOENT")),
            ),
            // Cancellation.
            (
                run(HookOutcome::Cancelled, "x", ""),
                (false, None, None, None, Some("Hook cancelled")),
            ),
            // Refusal.
            (
                run(
                    HookOutcome::Refused {
                        message: "untrusted".to_owned(),
                    },
                    "",
                    "",
                ),
                (false, None, None, None, Some("untrusted")),
            ),
            // Output too large: a decision read before the cut stands (with the members that
            // made it whole); anything else takes the plain-text path, with the code.
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stdout,
                        cap_bytes: 1_048_576,
                        code: Some(0),
                    },
                    "{\"decision\":\"deny\"}",
                    "",
                ),
                (
                    false,
                    Some(json!({"decision":"deny"})),
                    JSON,
                    Some(0),
                    Some("Hook stdout exceeded the 1048576-byte output cap"),
                ),
            ),
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stdout,
                        cap_bytes: 40,
                        code: Some(0),
                    },
                    " {\"decision\":\"deny\",\"reason\":\"padding padding\n[hookd: stdout truncated]",
                    "",
                ),
                (
                    false,
                    Some(json!({"decision":"deny"})),
                    JSON,
                    Some(0),
                    Some("Hook stdout exceeded the 40-byte output cap"),
                ),
            ),
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stdout,
                        cap_bytes: 40,
                        code: Some(0),
                    },
                    "{\"continue\":false,\"stopReason\":\"st",
                    "",
                ),
                (
                    false,
                    Some(json!({"continue":false})),
                    JSON,
                    Some(0),
                    Some("Hook stdout exceeded the 40-byte output cap"),
                ),
            ),
            // Cut before the decision: nothing decided, the plain-text path.
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stdout,
                        cap_bytes: 20,
                        code: Some(0),
                    },
                    "{\"reason\":\"aaaaaaa",
                    "",
                ),
                (
                    false,
                    Some(json!({"decision":"allow","systemMessage":"{\"reason\":\"aaaaaaa"})),
                    TEXT,
                    Some(0),
                    Some("Hook stdout exceeded the 20-byte output cap"),
                ),
            ),
            // stderr over its cap beside a whole stdout: stdout decides as usual.
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stderr,
                        cap_bytes: 10,
                        code: Some(0),
                    },
                    "{\"decision\":\"deny\",\"reason\":\"no\"}\n",
                    "xxxxxxxxxx[truncated]",
                ),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"no"})),
                    JSON,
                    Some(0),
                    Some("Hook stderr exceeded the 10-byte output cap"),
                ),
            ),
            // JSON on an overflowing stderr (stdout blank) is read the same way.
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stderr,
                        cap_bytes: 30,
                        code: Some(1),
                    },
                    "",
                    "{\"decision\":\"block\",\"reason\":\"xxxxx",
                ),
                (
                    false,
                    Some(json!({"decision":"block"})),
                    JSON,
                    Some(1),
                    Some("Hook stderr exceeded the 30-byte output cap"),
                ),
            ),
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stderr,
                        cap_bytes: 10,
                        code: Some(2),
                    },
                    "",
                    "xxxxxxxxxx[truncated]",
                ),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"xxxxxxxxxx[truncated]"})),
                    TEXT,
                    Some(2),
                    Some("Hook stderr exceeded the 10-byte output cap"),
                ),
            ),
            // No exit code (signalled) counts as 0.
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stdout,
                        cap_bytes: 4,
                        code: None,
                    },
                    "abcd…",
                    "",
                ),
                (
                    false,
                    Some(json!({"decision":"allow","systemMessage":"abcd…"})),
                    TEXT,
                    Some(0),
                    Some("Hook stdout exceeded the 4-byte output cap"),
                ),
            ),
            (
                run(
                    HookOutcome::OutputTooLarge {
                        stream: StreamName::Stdout,
                        cap_bytes: 4,
                        code: Some(1),
                    },
                    "  ",
                    "",
                ),
                (
                    false,
                    None,
                    None,
                    Some(1),
                    Some("Hook stdout exceeded the 4-byte output cap"),
                ),
            ),
        ];
        for (run, expected) in cases {
            check(e, run, expected);
        }
    }

    #[test]
    fn before_tool_selection_comma_list_d5() {
        let e = HookEventName::BeforeToolSelection;
        let any = |names: Value| {
            Some(
                json!({"hookSpecificOutput": {"hookEventName": "BeforeToolSelection",
                "toolConfig": {"mode": "ANY", "allowedFunctionNames": names}}}),
            )
        };
        let cases: Vec<(HookRun, Expected)> = vec![
            (
                run(exited(0), "read_file,write_file,replace\n", ""),
                (
                    true,
                    any(json!(["read_file", "write_file", "replace"])),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            // Items are trimmed and keep their order.
            (
                run(exited(0), "zeta , alpha,\tmcp_srv.tool:x-y", ""),
                (
                    true,
                    any(json!(["zeta", "alpha", "mcp_srv.tool:x-y"])),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            // A single name is a list of one.
            (
                run(exited(0), "glob", ""),
                (true, any(json!(["glob"])), TEXT, Some(0), None),
            ),
            // From stderr when stdout is empty.
            (
                run(exited(0), "", "_a"),
                (true, any(json!(["_a"])), TEXT, Some(0), None),
            ),
            // An empty item or an invalid name: the ordinary plain-text rule.
            (
                run(exited(0), "a,,b", ""),
                (
                    true,
                    Some(json!({"decision":"allow","systemMessage":"a,,b"})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            (
                run(exited(0), "a,b,", ""),
                (
                    true,
                    Some(json!({"decision":"allow","systemMessage":"a,b,"})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            (
                run(exited(0), "read file", ""),
                (
                    true,
                    Some(json!({"decision":"allow","systemMessage":"read file"})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            (
                run(exited(0), "1tool", ""),
                (
                    true,
                    Some(json!({"decision":"allow","systemMessage":"1tool"})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            (
                run(exited(0), "tööl", ""),
                (
                    true,
                    Some(json!({"decision":"allow","systemMessage":"tööl"})),
                    TEXT,
                    Some(0),
                    None,
                ),
            ),
            // Only for exit code 0.
            (
                run(exited(1), "read_file", ""),
                (
                    false,
                    Some(json!({"decision":"allow","systemMessage":"Warning: read_file"})),
                    TEXT,
                    Some(1),
                    None,
                ),
            ),
            (
                run(exited(2), "read_file", ""),
                (
                    false,
                    Some(json!({"decision":"deny","reason":"read_file"})),
                    TEXT,
                    Some(2),
                    None,
                ),
            ),
            // A signal reports code 0, so the list applies.
            (
                run(HookOutcome::Signalled { signal: 1 }, "a,b", ""),
                (false, any(json!(["a", "b"])), TEXT, Some(0), None),
            ),
            // JSON is JSON, not a list.
            (
                run(exited(0), "[\"a\"]", ""),
                (true, Some(json!(["a"])), JSON, Some(0), None),
            ),
        ];
        for (run, expected) in cases {
            check(e, run, expected);
        }
        // Other events never read a list.
        check(
            HookEventName::BeforeModel,
            run(exited(0), "read_file,glob", ""),
            (
                true,
                Some(json!({"decision":"allow","systemMessage":"read_file,glob"})),
                TEXT,
                Some(0),
                None,
            ),
        );
    }

    #[test]
    fn hook_result_joins_identity() {
        let entry = HookEntry {
            event: HookEventName::BeforeTool,
            config: HookConfig {
                hook_type: HookType::Command,
                command: Some("./check.sh".to_owned()),
                name: None,
                description: None,
                timeout_ms: None,
                env: Vec::new(),
                raw: Map::new(),
            },
            source: Source::User,
            origin: Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: crate::trust::HookTrust::NotRequired,
            builtin: None,
            identity: Default::default(),
        };
        let result = hook_result(&entry, run(exited(2), "", "nope"));
        assert_eq!(
            result,
            HookResult {
                name: "./check.sh".to_owned(),
                source: Source::User,
                event: HookEventName::BeforeTool,
                success: false,
                output: Some(json!({"decision":"deny","reason":"nope"})),
                output_format: TEXT,
                stdout: String::new(),
                stderr: "nope".to_owned(),
                exit_code: Some(2),
                duration: Duration::from_millis(7),
                error: None,
                outcome: exited(2),
                failure: Some(crate::policy::FailureKind::ExitedWithoutDecision),
                warning: None,
            }
        );
    }
}
