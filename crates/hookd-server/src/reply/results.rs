//! `result` and `chunk_result` frame bodies written straight from the engine's records.
//!
//! Every hooked event and every hooked chunk is answered with one of these, so they are
//! written field by field from the engine's [`HookResult`]s and [`Aggregate`] instead of being
//! copied into the wire types (`convert`) and serialised from there: the bytes are exactly
//! what encoding the wire message gives (a test checks it for every outcome and field), one
//! copy of every record and output fewer. A body that grows past the frame limit is given up
//! as soon as it does (it is never built whole) and left to `crate::wire::encode_fitted`,
//! which cuts the captured texts until it fits.

use std::time::Duration;

use bytes::Bytes;
use hookd_core::aggregate::Aggregate;
use hookd_core::json::Object;
use hookd_core::{HookOutcome, HookResult, OutputFormat, StreamName};
use hookd_protocol::{RequestId, ServerMessage};

/// The body of the `result` frame of an event: what encoding
/// `ServerMessage::Result(convert::result(..))` gives; `None` once it grows beyond `limit`
/// bytes (the writing stops there, so an oversized result never exists whole).
pub(crate) fn result_body(
    id: &RequestId,
    aggregate: &Aggregate,
    results: &[HookResult],
    generation: u64,
    limit: usize,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body_capacity(results, limit));
    let mut message = Object::new(&mut out);
    message.str("type", "result");
    message.value("id", id);
    // The wire message flattens the result into itself.
    event_result_fields(&mut message, aggregate, results, limit)?;
    message.int("generation", generation);
    message.end();
    within(out, limit)
}

/// Writes into `out` (emptied first, its room kept) the body of the `chunk_result` frame of a
/// stream's chunk: what encoding its `ServerMessage::ChunkResult` with
/// `convert::event_result(..)` gives. `false`, with `out` holding a partial body, once it
/// grows beyond `limit` bytes.
pub(crate) fn write_chunk_result_body(
    out: &mut Vec<u8>,
    id: &RequestId,
    seq: u64,
    content: Option<&str>,
    aggregate: &Aggregate,
    results: &[HookResult],
    limit: usize,
) -> bool {
    out.clear();
    out.reserve(body_capacity(results, limit));
    let mut message = Object::new(out);
    message.str("type", "chunk_result");
    message.value("id", id);
    message.int("seq", seq);
    if let Some(content) = content {
        message.str("content", content);
    }
    let mut result = message.object("result");
    if event_result_fields(&mut result, aggregate, results, limit).is_none() {
        return false;
    }
    result.end();
    message.end();
    out.len() <= limit
}

/// `body` as a frame when it was written within `max_frame_bytes`; else the message `wire`
/// builds, cut to fit by `crate::wire::encode_fitted` (rare: hooks at their output caps).
pub(crate) fn fitted(
    body: Option<Vec<u8>>,
    max_frame_bytes: usize,
    wire: impl FnOnce() -> ServerMessage,
) -> Bytes {
    match body {
        Some(body) => Bytes::from(body),
        None => crate::wire::encode_fitted(wire(), max_frame_bytes),
    }
}

/// `Some(out)` when it holds at most `limit` bytes.
fn within(out: Vec<u8>, limit: usize) -> Option<Vec<u8>> {
    (out.len() <= limit).then_some(out)
}

/// `Some(())` while `written` is at most `limit` bytes: checked after each large part of a
/// body, so that one that will not fit is given up after one part too many, not at its end.
fn room(written: usize, limit: usize) -> Option<()> {
    (written <= limit).then_some(())
}

/// A first guess at a body's size, generous enough that writing one rarely grows its buffer
/// (a grown buffer is copied): the fields, the merged output and the outputs (a streamed
/// chunk's text appears in each), and per hook its record and its captured texts, which JSON
/// escaping can lengthen. Never more than the body may hold.
fn body_capacity(results: &[HookResult], limit: usize) -> usize {
    let guess = 1024
        + results
            .iter()
            .map(|result| 512 + 3 * (result.stdout.len() + result.stderr.len()))
            .sum::<usize>();
    guess.min(limit)
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The fields of `hookd_protocol::EventResult`, in its order; `None` as soon as the buffer
/// holds more than `limit` bytes.
fn event_result_fields(
    object: &mut Object<'_>,
    aggregate: &Aggregate,
    results: &[HookResult],
    limit: usize,
) -> Option<()> {
    object.bool("success", aggregate.success);
    object.json_or_null("final_output", aggregate.final_output.as_ref());
    room(object.written(), limit)?;
    object.json_list("all_outputs", &aggregate.all_outputs);
    room(object.written(), limit)?;
    object.strs("errors", &aggregate.errors);
    object.float("total_duration_ms", millis(aggregate.total_duration));
    let mut hooks = object.array("hooks");
    for result in results {
        let mut record = hooks.object();
        record_fields(&mut record, result);
        record.end();
        room(hooks.written(), limit)?;
    }
    hooks.end();
    Some(())
}

/// The fields of `hookd_protocol::HookRecord`, in its order.
fn record_fields(record: &mut Object<'_>, result: &HookResult) {
    record.str("name", &result.name);
    record.str("source", result.source.label());
    record.str("event", result.event.as_str());
    record.bool("success", result.success);
    record.int_or_null("exit_code", result.exit_code);
    record.float("duration_ms", millis(result.duration));
    record.json_or_null("output", result.output.as_ref());
    record.str_or_null(
        "output_format",
        result.output_format.map(|format| match format {
            OutputFormat::Json => "json",
            OutputFormat::Text => "text",
        }),
    );
    record.str("stdout", &result.stdout);
    record.str("stderr", &result.stderr);
    record.str_or_null("error", result.error.as_deref());
    let mut outcome = record.object("outcome");
    outcome_fields(&mut outcome, &result.outcome);
    outcome.end();
    record.str_or_null("failure", result.failure.map(|kind| kind.as_str()));
    if let Some(warning) = &result.warning {
        record.str("warning", warning);
    }
}

/// The fields of `hookd_protocol::Outcome`, tagged by `kind`.
fn outcome_fields(object: &mut Object<'_>, outcome: &HookOutcome) {
    object.str("kind", outcome.kind());
    match outcome {
        HookOutcome::Exited { code } => object.int("code", *code),
        HookOutcome::Signalled { signal } => object.int("signal", *signal),
        HookOutcome::TimedOut { timeout_ms } => object.int("timeout_ms", *timeout_ms),
        HookOutcome::OutputTooLarge {
            stream,
            cap_bytes,
            code,
        } => {
            object.str(
                "stream",
                match stream {
                    StreamName::Stdout => "stdout",
                    StreamName::Stderr => "stderr",
                },
            );
            object.int("cap_bytes", *cap_bytes as u64);
            object.int_or_null("code", *code);
        }
        HookOutcome::SpawnFailed { message, .. } | HookOutcome::Refused { message } => {
            object.str("message", message);
        }
        HookOutcome::Cancelled => {}
    }
}

#[cfg(test)]
mod tests {
    use hookd_core::policy::FailureKind;
    use hookd_core::{HookEventName, Source};
    use hookd_protocol::ChunkResultMessage;
    use serde_json::json;

    use super::*;
    use crate::convert;

    fn result(outcome: HookOutcome, failure: Option<FailureKind>) -> HookResult {
        HookResult {
            name: "guard \"quoted\" é".to_owned(),
            source: Source::Project,
            event: HookEventName::AfterModel,
            success: failure.is_none(),
            output: Some(json!({"content": "x\ny", "hookSpecificOutput": {"a": [1, null]}})),
            output_format: Some(OutputFormat::Json),
            stdout: "{\"content\": \"x\\ny\"}\n\u{1}".to_owned(),
            stderr: "warn\t✓".to_owned(),
            exit_code: Some(0),
            duration: Duration::from_nanos(1_234_567),
            error: failure.map(|kind| format!("failed: {}", kind.as_str())),
            outcome,
            failure,
            warning: None,
        }
    }

    /// One result per outcome and failure kind, and the other shapes of each field.
    fn results() -> Vec<HookResult> {
        let mut all = vec![
            result(HookOutcome::Exited { code: 0 }, None),
            result(
                HookOutcome::Exited { code: 2 },
                Some(FailureKind::ExitedWithoutDecision),
            ),
            result(
                HookOutcome::Signalled { signal: 9 },
                Some(FailureKind::Signalled),
            ),
            result(
                HookOutcome::TimedOut { timeout_ms: 60_000 },
                Some(FailureKind::TimedOut),
            ),
            result(
                HookOutcome::OutputTooLarge {
                    stream: StreamName::Stderr,
                    cap_bytes: 1 << 20,
                    code: None,
                },
                Some(FailureKind::OutputTooLarge),
            ),
            result(
                HookOutcome::OutputTooLarge {
                    stream: StreamName::Stdout,
                    cap_bytes: 10,
                    code: Some(1),
                },
                Some(FailureKind::OutputTooLarge),
            ),
            result(
                HookOutcome::SpawnFailed {
                    message: "no such file".to_owned(),
                    cause: hookd_core::SpawnCause::Hook,
                },
                Some(FailureKind::SpawnFailed),
            ),
            result(HookOutcome::Cancelled, None),
            result(
                HookOutcome::Refused {
                    message: "untrusted".to_owned(),
                },
                Some(FailureKind::Refused),
            ),
        ];
        let mut plain = result(HookOutcome::Exited { code: 0 }, None);
        plain.output = None;
        plain.output_format = Some(OutputFormat::Text);
        plain.exit_code = None;
        plain.source = Source::Extension;
        plain.event = HookEventName::BeforeTool;
        plain.warning = Some("not trusted yet".to_owned());
        all.push(plain);
        let mut bare = result(HookOutcome::Exited { code: 1 }, None);
        bare.output_format = None;
        bare.stdout.clear();
        bare.stderr.clear();
        all.push(bare);
        all
    }

    fn aggregates() -> Vec<Aggregate> {
        vec![
            Aggregate {
                success: true,
                final_output: None,
                all_outputs: Vec::new(),
                errors: Vec::new(),
                total_duration: Duration::ZERO,
            },
            Aggregate {
                success: false,
                final_output: Some(json!({"decision": "deny", "reason": "r\u{7f}"})),
                all_outputs: vec![json!({"decision": "deny"}), json!("text"), json!(null)],
                errors: vec!["one".to_owned(), "two \"2\"".to_owned()],
                total_duration: Duration::from_micros(123_456_789),
            },
        ]
    }

    #[test]
    fn written_bodies_are_the_encoded_wire_messages() {
        let records = results();
        let ids = [RequestId::Number(7), RequestId::from("req-\"1\"")];
        for aggregate in aggregates() {
            for count in [0, 1, records.len()] {
                let records = &records[..count];
                for id in &ids {
                    let expected = hookd_protocol::encode(&convert::result(
                        id.clone(),
                        &aggregate,
                        records,
                        42,
                    ));
                    let written = result_body(id, &aggregate, records, 42, usize::MAX);
                    assert_eq!(
                        String::from_utf8_lossy(&written.expect("no limit")),
                        String::from_utf8_lossy(&expected)
                    );
                    for limit in limits(expected.len()) {
                        let written = result_body(id, &aggregate, records, 42, limit);
                        assert_eq!(written.is_some(), expected.len() <= limit, "{limit}");
                        if let Some(written) = written {
                            assert_eq!(written, expected);
                        }
                    }
                    for content in [None, Some("new \"text\"")] {
                        let message = ServerMessage::ChunkResult(ChunkResultMessage {
                            id: id.clone(),
                            seq: 3,
                            content: content.map(str::to_owned),
                            result: convert::event_result(&aggregate, records),
                        });
                        let expected = hookd_protocol::encode(&message);
                        let written =
                            chunk_result_body(id, 3, content, &aggregate, records, usize::MAX);
                        assert_eq!(
                            String::from_utf8_lossy(&written.expect("no limit")),
                            String::from_utf8_lossy(&expected)
                        );
                        for limit in limits(expected.len()) {
                            let written =
                                chunk_result_body(id, 3, content, &aggregate, records, limit);
                            assert_eq!(written.is_some(), expected.len() <= limit, "{limit}");
                            if let Some(written) = written {
                                assert_eq!(written, expected);
                            }
                        }
                    }
                }
            }
        }
    }

    /// [`write_chunk_result_body`] into a new buffer, `None` when over `limit`.
    fn chunk_result_body(
        id: &RequestId,
        seq: u64,
        content: Option<&str>,
        aggregate: &Aggregate,
        results: &[HookResult],
        limit: usize,
    ) -> Option<Vec<u8>> {
        let mut out = b"left over from the previous chunk".to_vec();
        write_chunk_result_body(&mut out, id, seq, content, aggregate, results, limit)
            .then_some(out)
    }

    /// Limits around a body of `len` bytes: far below, one short, exact, above.
    fn limits(len: usize) -> [usize; 5] {
        [0, 16, len - 1, len, len + 1]
    }

    #[test]
    fn a_result_over_the_frame_limit_is_cut_to_fit_or_answered_with_an_error() {
        let id = RequestId::Number(9);
        let aggregate = &aggregates()[0];
        let mut big = result(HookOutcome::Exited { code: 0 }, None);
        // Each NUL byte is six bytes of JSON.
        big.stdout = "\0".repeat(100_000);
        let records = vec![big.clone(), big];
        let whole = result_body(&id, aggregate, &records, 1, usize::MAX).expect("no limit");
        let wire = || convert::result(id.clone(), aggregate, &records, 1);

        // Cut to 64 KiB of stdout per hook, said in the text.
        let max = 1_000_000;
        assert!(whole.len() > max);
        assert!(result_body(&id, aggregate, &records, 1, max).is_none());
        let frame = fitted(None, max, wire);
        assert!(frame.len() <= max, "{}", frame.len());
        let answer: serde_json::Value = serde_json::from_slice(&frame).expect("JSON");
        assert_eq!(answer["type"], "result");
        for hook in answer["hooks"].as_array().expect("hooks") {
            let stdout = hook["stdout"].as_str().expect("stdout");
            assert!(
                stdout.starts_with(&"\0".repeat(64 * 1024)),
                "{}",
                stdout.len()
            );
            assert!(
                stdout.ends_with("[hookd: 34464 more bytes cut so the result fits in one frame]"),
                "{}",
                &stdout[64 * 1024..]
            );
        }

        // Beyond any cut: an internal error naming the whole result's size.
        let max = 400;
        let frame = fitted(None, max, wire);
        assert!(frame.len() <= max, "{}", String::from_utf8_lossy(&frame));
        let answer: serde_json::Value = serde_json::from_slice(&frame).expect("JSON");
        assert_eq!(answer["type"], "error");
        assert_eq!(answer["id"], 9);
        assert_eq!(answer["code"], "internal");
        let message = answer["message"].as_str().expect("message");
        assert!(
            message.contains(&format!(
                "is {} bytes, over the 400-byte frame limit",
                whole.len()
            )),
            "{message}"
        );
    }
}
