//! `result` and `chunk_result` frame bodies written straight from the engine's records.
//!
//! Every hooked event and every hooked chunk is answered with one of these, so they are
//! written field by field from the engine's [`HookResult`]s and [`Aggregate`] instead of being
//! copied into the wire types (`convert`) and serialised from there: the bytes are exactly
//! what encoding the wire message gives (a test checks it for every outcome and field), one
//! copy of every record and output fewer. A body over the frame limit is left to
//! `connection::encode_fitted`, which cuts the captured texts until it fits.

use std::time::Duration;

use bytes::Bytes;
use hookd_core::aggregate::Aggregate;
use hookd_core::json::Object;
use hookd_core::{HookOutcome, HookResult, OutputFormat, StreamName};
use hookd_protocol::{RequestId, ServerMessage};

/// The body of the `result` frame of an event: what encoding
/// `ServerMessage::Result(convert::result(..))` gives.
pub(crate) fn result_body(
    id: &RequestId,
    aggregate: &Aggregate,
    results: &[HookResult],
    generation: u64,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(body_capacity(results));
    let mut message = Object::new(&mut out);
    message.str("type", "result");
    message.value("id", id);
    // The wire message flattens the result into itself.
    event_result_fields(&mut message, aggregate, results);
    message.value("generation", &generation);
    message.end();
    out
}

/// The body of the `chunk_result` frame of a stream's chunk: what encoding its
/// `ServerMessage::ChunkResult` with `convert::event_result(..)` gives.
pub(crate) fn chunk_result_body(
    id: &RequestId,
    seq: u64,
    content: Option<&str>,
    aggregate: &Aggregate,
    results: &[HookResult],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(body_capacity(results));
    let mut message = Object::new(&mut out);
    message.str("type", "chunk_result");
    message.value("id", id);
    message.value("seq", &seq);
    if let Some(content) = content {
        message.str("content", content);
    }
    let mut result = message.object("result");
    event_result_fields(&mut result, aggregate, results);
    result.end();
    message.end();
    out
}

/// `body` as a frame when it fits in `max_frame_bytes`; else the message `wire` builds, cut to
/// fit by `connection::encode_fitted` (rare: hooks at their output caps).
pub(crate) fn fitted(
    body: Vec<u8>,
    max_frame_bytes: usize,
    wire: impl FnOnce() -> ServerMessage,
) -> Bytes {
    if body.len() <= max_frame_bytes {
        return Bytes::from(body);
    }
    crate::connection::encode_fitted(wire(), max_frame_bytes)
}

/// A first guess at a body's size: most are a few hundred bytes per hook plus their texts.
fn body_capacity(results: &[HookResult]) -> usize {
    256 + results
        .iter()
        .map(|result| 384 + 3 * (result.stdout.len() + result.stderr.len()))
        .sum::<usize>()
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The fields of `hookd_protocol::EventResult`, in its order.
fn event_result_fields(object: &mut Object<'_>, aggregate: &Aggregate, results: &[HookResult]) {
    object.value("success", &aggregate.success);
    object.json_or_null("final_output", aggregate.final_output.as_ref());
    object.json_list("all_outputs", &aggregate.all_outputs);
    object.value("errors", &aggregate.errors);
    object.value("total_duration_ms", &millis(aggregate.total_duration));
    let mut hooks = object.array("hooks");
    for result in results {
        let mut record = hooks.object();
        record_fields(&mut record, result);
        record.end();
    }
    hooks.end();
}

/// The fields of `hookd_protocol::HookRecord`, in its order.
fn record_fields(record: &mut Object<'_>, result: &HookResult) {
    record.str("name", &result.name);
    record.str("source", result.source.label());
    record.str("event", result.event.as_str());
    record.value("success", &result.success);
    record.value("exit_code", &result.exit_code);
    record.value("duration_ms", &millis(result.duration));
    record.json_or_null("output", result.output.as_ref());
    record.value(
        "output_format",
        &result.output_format.map(|format| match format {
            OutputFormat::Json => "json",
            OutputFormat::Text => "text",
        }),
    );
    record.str("stdout", &result.stdout);
    record.str("stderr", &result.stderr);
    record.value("error", &result.error);
    let mut outcome = record.object("outcome");
    outcome_fields(&mut outcome, &result.outcome);
    outcome.end();
    record.value("failure", &result.failure.map(|kind| kind.as_str()));
    if let Some(warning) = &result.warning {
        record.str("warning", warning);
    }
}

/// The fields of `hookd_protocol::Outcome`, tagged by `kind`.
fn outcome_fields(object: &mut Object<'_>, outcome: &HookOutcome) {
    object.str("kind", outcome.kind());
    match outcome {
        HookOutcome::Exited { code } => object.value("code", code),
        HookOutcome::Signalled { signal } => object.value("signal", signal),
        HookOutcome::TimedOut { timeout_ms } => object.value("timeout_ms", timeout_ms),
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
            object.value("cap_bytes", &(*cap_bytes as u64));
            object.value("code", code);
        }
        HookOutcome::SpawnFailed { message } | HookOutcome::Refused { message } => {
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
                    let written = result_body(id, &aggregate, records, 42);
                    assert_eq!(
                        String::from_utf8_lossy(&written),
                        String::from_utf8_lossy(&expected)
                    );
                    for content in [None, Some("new \"text\"")] {
                        let message = ServerMessage::ChunkResult(ChunkResultMessage {
                            id: id.clone(),
                            seq: 3,
                            content: content.map(str::to_owned),
                            result: convert::event_result(&aggregate, records),
                        });
                        let expected = hookd_protocol::encode(&message);
                        let written = chunk_result_body(id, 3, content, &aggregate, records);
                        assert_eq!(
                            String::from_utf8_lossy(&written),
                            String::from_utf8_lossy(&expected)
                        );
                    }
                }
            }
        }
    }
}
