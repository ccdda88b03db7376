//! The work on one chunk that every stream shares: the builtin filters' pass over its text
//! (inline, or on the blocking pool within each filter's deadline), its `chunk_result`, and
//! what a stream keeps between chunks (the text emitted so far, for `full_content`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookd_core::aggregate::Aggregate;
use hookd_core::json::push_escaped;
use hookd_core::output::hook_result;
use hookd_core::payload::{chunk_text, part_text};
use hookd_core::policy::{FailurePolicy, apply_failure_policy};
use hookd_core::redact::StreamRedactor;
use hookd_core::{
    HookEntry, HookEventName, HookOutcome, HookResult, HookRun, HookType, OutputFormat, Plan,
};
use hookd_protocol::{ChunkResultMessage, RequestId, ServerMessage};
use hookd_runner::fire::{INLINE_FILTER_BYTES, run_filter_blocking, withheld_text, withhold_text};
use serde_json::{Map, Value, json};

use crate::convert;
use crate::engine::Engine;
use crate::results;

/// At most this much of the text emitted so far is kept for `full_content`; beyond it the
/// oldest text is dropped (on a character boundary).
pub(crate) const MAX_FULL_CONTENT_BYTES: usize = 8 * 1024 * 1024;

/// One builtin filter of a stream, with its streaming state.
pub(crate) struct Filter {
    pub(crate) entry: Arc<HookEntry>,
    /// `None` once the filter missed its deadline on a chunk (its state is lost with the
    /// abandoned run): from then on the stream's text is withheld, never passed on unfiltered.
    pub(crate) stream: Option<StreamRedactor>,
}

/// The state a stream keeps between chunks.
pub(crate) struct StreamState {
    pub(crate) filters: Vec<Filter>,
    /// The hooks that are not builtin filters, as a plan of their own.
    pub(crate) commands: Option<Plan>,
    /// The text emitted so far (at most `max_emitted` bytes), for `full_content`.
    pub(crate) emitted: String,
    /// The most text kept in `emitted`.
    pub(crate) max_emitted: usize,
    /// `emitted` escaped as the contents of a JSON string, kept alongside it so that a
    /// chunk's `full_content` is not escaped again from its start for every chunk.
    pub(crate) emitted_json: String,
}

impl StreamState {
    /// The state of a stream of `plan` that keeps up to [`MAX_FULL_CONTENT_BYTES`] of text.
    pub(crate) fn new(plan: &Plan) -> StreamState {
        StreamState::with_max_emitted(plan, MAX_FULL_CONTENT_BYTES)
    }

    /// The state of a stream of `plan` that keeps up to `max_emitted` bytes of the text
    /// emitted so far for `full_content`.
    pub(crate) fn with_max_emitted(plan: &Plan, max_emitted: usize) -> StreamState {
        let mut filters = Vec::new();
        let mut commands = Vec::new();
        for entry in &plan.hooks {
            match (&entry.config.hook_type, &entry.builtin) {
                (HookType::Builtin, Some(redactor)) => filters.push(Filter {
                    entry: Arc::clone(entry),
                    stream: Some(StreamRedactor::new(Arc::clone(redactor))),
                }),
                // A builtin without a compiled filter is the runner's to refuse.
                _ => commands.push(Arc::clone(entry)),
            }
        }
        let commands = (!commands.is_empty()).then(|| Plan {
            event: plan.event,
            hooks: commands,
            sequential: plan.sequential,
        });
        StreamState {
            filters,
            commands,
            emitted: String::new(),
            max_emitted,
            emitted_json: String::new(),
        }
    }

    /// The display names of the stream's hooks in the order their records come: the
    /// filters, then the command hooks.
    pub(crate) fn record_names(&self) -> impl Iterator<Item = &str> + '_ {
        let commands = self.commands.iter().flat_map(|plan| plan.hooks.iter());
        self.filters
            .iter()
            .map(|filter| &filter.entry)
            .chain(commands)
            .map(|entry| entry.config.display_name())
    }

    /// The builtin filters' hook entries, in the order they run.
    pub(crate) fn filter_entries(&self) -> impl Iterator<Item = &Arc<HookEntry>> + '_ {
        self.filters.iter().map(|filter| &filter.entry)
    }

    /// Adds text to what was emitted, dropping the oldest beyond the bound.
    pub(crate) fn push_emitted(&mut self, text: &str) {
        if self.commands.is_none() {
            // Only command hooks read `full_content`.
            return;
        }
        self.emitted.push_str(text);
        if self.emitted.len() > self.max_emitted {
            let mut cut = self.emitted.len() - self.max_emitted;
            while !self.emitted.is_char_boundary(cut) {
                cut += 1;
            }
            self.emitted.drain(..cut);
            // Rare (past 8 MiB of text): escaped afresh.
            self.emitted_json.clear();
            push_escaped(&mut self.emitted_json, &self.emitted);
        } else {
            push_escaped(&mut self.emitted_json, text);
        }
    }

    /// Writes into `json` (replacing what it held) the JSON of `full_content` for a chunk
    /// whose (filtered) text is `text`: what was emitted so far, then `text`.
    pub(crate) fn write_full_content_json(&self, json: &mut String, text: &str) {
        json.clear();
        json.reserve(self.emitted_json.len() + text.len() + 8);
        json.push('"');
        json.push_str(&self.emitted_json);
        push_escaped(json, text);
        json.push('"');
    }

    /// Ends the filters: what each held back, through the filters after it.
    pub(crate) fn flush(&mut self) -> String {
        let mut carry = String::new();
        for filter in &mut self.filters {
            // A filter that missed its deadline withholds what it held.
            let Some(stream) = &mut filter.stream else {
                return String::new();
            };
            let mut out = stream.push(&carry);
            out.push_str(&stream.finish());
            carry = out;
        }
        carry
    }
}

/// A chunk after the filters: its text before and after them, and their records.
pub(crate) struct Filtered {
    pub(crate) original: String,
    pub(crate) text: String,
    pub(crate) results: Vec<HookResult>,
}

/// Runs the filters of `state` on the chunk `llm_response` and puts the chunk, as the filters
/// left it, into `input` (`llm_response` and `content`) for the command hooks and the
/// aggregate. `(hooks, last)`: the plan's length, and whether the chunk ends the text (what
/// the filters hold back then comes out with it). Runs in the calling thread, whatever the
/// chunk's size: callers send chunks larger than [`INLINE_FILTER_BYTES`] to
/// [`run_filters_bounded`]. A filter that missed its deadline on an earlier chunk withholds
/// this one too (see [`Filter::stream`]), as its failure policy says.
pub(crate) fn run_filters(
    state: &mut StreamState,
    input: &mut Map<String, Value>,
    llm_response: Map<String, Value>,
    (hooks, last): (usize, bool),
    default_on_failure: FailurePolicy,
) -> Filtered {
    let response = Value::Object(llm_response);
    let original = chunk_text(&response);
    run_filters_on(
        state,
        input,
        (response, original),
        (hooks, last),
        default_on_failure,
    )
}

/// [`run_filters`] on a chunk whose text (`original`, [`chunk_text`] of `response`) is
/// already known.
pub(crate) fn run_filters_on(
    state: &mut StreamState,
    input: &mut Map<String, Value>,
    (response, original): (Value, String),
    (hooks, last): (usize, bool),
    default_on_failure: FailurePolicy,
) -> Filtered {
    let mut results: Vec<HookResult> = Vec::with_capacity(hooks);
    let mut text = original.clone();
    let mut missed = false;
    for filter in &mut state.filters {
        let started = Instant::now();
        if missed {
            // The text is withheld already: the filters after it have nothing to filter.
            results.push(builtin_record(&filter.entry, None, Duration::ZERO));
            continue;
        }
        let Some(stream) = &mut filter.stream else {
            let (record, withheld) = missed_record(&filter.entry, default_on_failure, started);
            results.push(record);
            text = withheld;
            missed = true;
            continue;
        };
        let filtered = filter_step(stream, &text, last);
        let output = (filtered != text).then(|| filtered.clone());
        results.push(builtin_record(&filter.entry, output, started.elapsed()));
        text = filtered;
    }
    filtered_chunk(input, response, original, text, results)
}

/// [`run_filters`] for a chunk of any size: one whose text is larger than
/// [`INLINE_FILTER_BYTES`] goes through each filter on the blocking pool (at most
/// [`hookd_runner::fire::MAX_BLOCKING_FILTERS`] at once, daemon-wide), within the filter's
/// hook timeout, so that no chunk holds the daemon's threads. A filter that misses its
/// deadline fails closed: its record is a timed-out hook under its failure policy, the chunk's
/// text is replaced by [`hookd_runner::fire::withheld_text`], and the stream's later text is
/// withheld too (the filter's state went with the abandoned run). The filters after a missed
/// one do not run on the chunk (their records say they changed nothing).
pub(crate) async fn run_filters_bounded(
    state: &mut StreamState,
    input: &mut Map<String, Value>,
    llm_response: Map<String, Value>,
    (hooks, last): (usize, bool),
    default_on_failure: FailurePolicy,
) -> Filtered {
    if chunk_text_len(&llm_response) <= INLINE_FILTER_BYTES {
        return run_filters(
            state,
            input,
            llm_response,
            (hooks, last),
            default_on_failure,
        );
    }
    let response = Value::Object(llm_response);
    let original = chunk_text(&response);
    let mut results: Vec<HookResult> = Vec::with_capacity(hooks);
    let mut text = original.clone();
    let mut missed = false;
    for filter in &mut state.filters {
        let started = Instant::now();
        if missed {
            // The text is withheld already: the filters after it have nothing to filter.
            results.push(builtin_record(&filter.entry, None, Duration::ZERO));
            continue;
        }
        let Some(mut stream) = filter.stream.take() else {
            missed = true;
            let (record, withheld) = missed_record(&filter.entry, default_on_failure, started);
            results.push(record);
            text = withheld;
            continue;
        };
        let timeout = Duration::from_millis(filter.entry.config.timeout_ms());
        let unfiltered = std::mem::take(&mut text);
        let ran = run_filter_blocking(timeout, move || {
            let filtered = filter_step(&mut stream, &unfiltered, last);
            (stream, unfiltered, filtered)
        })
        .await;
        match ran {
            Some((stream, unfiltered, filtered)) => {
                filter.stream = Some(stream);
                let output = (filtered != unfiltered).then(|| filtered.clone());
                results.push(builtin_record(&filter.entry, output, started.elapsed()));
                text = filtered;
            }
            None => {
                let (record, withheld) = missed_record(&filter.entry, default_on_failure, started);
                results.push(record);
                text = withheld;
                missed = true;
            }
        }
    }
    filtered_chunk(input, response, original, text, results)
}

/// One filter's step over a chunk's text; with `last`, what it holds back comes out too.
pub(crate) fn filter_step(stream: &mut StreamRedactor, text: &str, last: bool) -> String {
    let mut filtered = stream.push(text);
    if last {
        filtered.push_str(&stream.finish());
    }
    filtered
}

/// Puts the filtered chunk into `input` and returns it with the filters' records.
pub(crate) fn filtered_chunk(
    input: &mut Map<String, Value>,
    mut response: Value,
    original: String,
    text: String,
    results: Vec<HookResult>,
) -> Filtered {
    if text != original {
        if let Value::Object(response) = &mut response {
            hookd_core::aggregate::replace_response_text(response, &text);
        }
    }
    input.insert("llm_response".to_owned(), response);
    input.insert("content".to_owned(), Value::String(text.clone()));
    Filtered {
        original,
        text,
        results,
    }
}

/// The length in bytes of the text [`chunk_text`] would return for `llm_response`, found
/// without building it.
pub(crate) fn chunk_text_len(llm_response: &Map<String, Value>) -> usize {
    if let Some(text) = llm_response.get("text").and_then(Value::as_str) {
        return text.len();
    }
    llm_response
        .get("candidates")
        .and_then(|candidates| candidates.get(0))
        .and_then(|candidate| candidate.get("content"))
        .and_then(|content| content.get("parts"))
        .and_then(Value::as_array)
        .map_or(0, |parts| {
            parts.iter().filter_map(part_text).map(str::len).sum()
        })
}

/// Whether a chunk of a filter-only stream is too large to be filtered by the read loop.
#[cfg(test)]
pub(crate) fn needs_blocking_filter(llm_response: &Map<String, Value>) -> bool {
    chunk_text_len(llm_response) > INLINE_FILTER_BYTES
}

/// The record of a filter that missed its deadline (on this chunk or an earlier one): a
/// timed-out hook under its failure policy, whose output withholds the text; and that text.
pub(crate) fn missed_record(
    entry: &HookEntry,
    default_on_failure: FailurePolicy,
    started: Instant,
) -> (HookResult, String) {
    let timeout_ms = entry.config.timeout_ms();
    let run = HookRun {
        outcome: HookOutcome::TimedOut { timeout_ms },
        stdout: String::new(),
        stderr: String::new(),
        duration: started.elapsed(),
    };
    let policy = entry.config.on_failure().unwrap_or(default_on_failure);
    let mut record = apply_failure_policy(hook_result(entry, run), policy);
    withhold_text(&mut record, timeout_ms);
    (
        record,
        withheld_text(entry.config.display_name(), timeout_ms),
    )
}

/// A chunk's records and their aggregate, kept for the audit log and the last runs.
pub(crate) struct Answered {
    pub(crate) results: Vec<HookResult>,
    pub(crate) aggregate: Aggregate,
}

/// Aggregates a chunk's records (against the firing's `input`), writes its `chunk_result`
/// frame body into `body` (emptied first, its room kept) and returns the aggregate; adds the
/// text the chunk emits to what `full_content` will hold.
pub(crate) fn chunk_result(
    engine: &Engine,
    input: &Map<String, Value>,
    state: &mut StreamState,
    (id, seq): (&RequestId, u64),
    filtered: &Filtered,
    body: &mut Vec<u8>,
) -> Aggregate {
    let Filtered {
        original,
        text,
        results,
    } = filtered;
    let aggregate = hookd_core::aggregate::aggregate(HookEventName::AfterModel, results, input);
    let emitted = replacement_text(&aggregate).unwrap_or_else(|| text.clone());
    state.push_emitted(&emitted);
    let content = (emitted != *original).then_some(emitted);
    let max_frame_bytes = engine.max_frame_bytes;
    let written = results::write_chunk_result_body(
        body,
        id,
        seq,
        content.as_deref(),
        &aggregate,
        results,
        max_frame_bytes,
    );
    if !written {
        // Rare (hooks at their output caps): cut to fit the frame limit.
        let message = ServerMessage::ChunkResult(ChunkResultMessage {
            id: id.clone(),
            seq,
            content,
            result: convert::event_result(&aggregate, results),
        });
        let frame = crate::wire::encode_fitted(message, max_frame_bytes);
        body.clear();
        body.extend_from_slice(&frame);
    }
    aggregate
}

/// The text of the response the aggregate puts in place of the chunk, if it replaces it:
/// `hookSpecificOutput.llm_response` of the merged output, when it is an object.
pub(crate) fn replacement_text(aggregate: &hookd_core::aggregate::Aggregate) -> Option<String> {
    aggregate
        .final_output
        .as_ref()?
        .get("hookSpecificOutput")?
        .get("llm_response")
        .filter(|response| response.is_object())
        .map(chunk_text)
}

/// The record of a builtin filter's run on one chunk: a hook that exited 0, whose output
/// replaces the chunk's text (`{"content": ...}`, hookd's chunk text) when the filter changed it.
pub(crate) fn builtin_record(
    entry: &HookEntry,
    filtered: Option<String>,
    duration: Duration,
) -> HookResult {
    let output = filtered.map(|content| json!({ "content": content }));
    HookResult {
        name: entry.config.display_name().to_owned(),
        source: entry.source,
        event: HookEventName::AfterModel,
        success: true,
        output_format: output.as_ref().map(|_| OutputFormat::Json),
        output,
        stdout: String::new(),
        stderr: String::new(),
        exit_code: Some(0),
        duration,
        error: None,
        outcome: HookOutcome::Exited { code: 0 },
        failure: None,
        warning: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan of one redact filter built from `raw` (its settings), with `timeout_ms`.
    pub(crate) fn filter_plan(raw: Value, timeout_ms: u64) -> Plan {
        let raw = raw.as_object().cloned().unwrap_or_default();
        let redactor = hookd_core::redact::Redactor::from_raw(&raw).expect("the filter");
        let entry = HookEntry {
            event: HookEventName::AfterModel,
            config: hookd_core::HookConfig {
                hook_type: HookType::Builtin,
                command: None,
                name: Some("redact".to_owned()),
                description: None,
                timeout_ms: Some(timeout_ms),
                env: Vec::new(),
                raw,
            },
            source: hookd_core::Source::Project,
            origin: hookd_core::Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: hookd_core::trust::HookTrust::NotRequired,
            builtin: Some(Arc::new(redactor)),
            identity: Default::default(),
        };
        Plan {
            event: HookEventName::AfterModel,
            hooks: vec![Arc::new(entry)],
            sequential: false,
        }
    }

    pub(crate) fn chunk(text: &str) -> Map<String, Value> {
        let response = json!({"candidates": [{"content": {"parts": [text]}}]});
        response.as_object().cloned().unwrap_or_default()
    }

    #[tokio::test]
    pub(crate) async fn large_chunks_are_filtered_off_the_read_loop_and_fail_closed() {
        let secret = format!("ghp_{}", "A1".repeat(20));
        let large = format!("{}{secret} end", "word ".repeat(40 * 1024));
        assert!(needs_blocking_filter(&chunk(&large)));
        assert!(!needs_blocking_filter(&chunk("small")));

        // In time: the secret is redacted, as on the read loop.
        let plan = filter_plan(json!({"builtin": "redact"}), 60_000);
        let mut state = StreamState::new(&plan);
        let mut input = Map::new();
        let filtered = run_filters_bounded(
            &mut state,
            &mut input,
            chunk(&large),
            (1, true),
            FailurePolicy::Allow,
        )
        .await;
        assert!(!filtered.text.contains(&secret));
        assert!(filtered.text.contains("[REDACTED:github-token]"));
        assert!(filtered.results[0].success);

        // Heavy patterns, 4 MiB of text and a 1 ms deadline: the text is withheld, the record
        // is a timed-out hook under its policy, and the stream's later text is withheld too.
        let patterns: Vec<Value> = (0..12)
            .map(|i| json!({"name": format!("p{i}"), "regex": format!(r"(\w+\s?){{3}}x{i}")}))
            .collect();
        // (on_failure, decision)
        let cases = [("allow", None), ("deny", Some(json!("deny")))];
        for (on_failure, decision) in cases {
            let raw = json!({"builtin": "redact", "patterns": patterns, "on_failure": on_failure});
            let plan = filter_plan(raw, 1);
            let mut state = StreamState::new(&plan);
            let huge = format!("{}{secret}", "héllo wörld ab1 x ".repeat(200 * 1024));
            for text in [huge.as_str(), "a small chunk after it"] {
                let mut input = Map::new();
                let filtered = run_filters_bounded(
                    &mut state,
                    &mut input,
                    chunk(text),
                    (1, false),
                    FailurePolicy::Allow,
                )
                .await;
                let withheld = hookd_runner::fire::withheld_text("redact", 1);
                assert_eq!(filtered.text, withheld, "{on_failure}");
                assert_eq!(input.get("content"), Some(&Value::String(withheld.clone())));
                let record = &filtered.results[0];
                assert!(!record.success, "{on_failure}");
                assert!(matches!(
                    record.outcome,
                    HookOutcome::TimedOut { timeout_ms: 1 }
                ));
                let output = record.output.as_ref().expect("an output");
                assert_eq!(output.get("content"), Some(&Value::String(withheld)));
                assert_eq!(output.get("decision").cloned(), decision, "{on_failure}");
            }
            assert_eq!(state.flush(), "", "what the filter held is withheld");
        }
    }

    #[test]
    pub(crate) fn replacement_text_reads_the_merged_llm_response() {
        let aggregate = |output: Option<Value>| hookd_core::aggregate::Aggregate {
            success: true,
            final_output: output,
            all_outputs: Vec::new(),
            errors: Vec::new(),
            total_duration: Duration::ZERO,
        };
        let cases = [
            (None, None),
            (Some(json!({"decision": "allow"})), None),
            (
                Some(json!({"hookSpecificOutput": {"llm_response": null}})),
                None,
            ),
            (
                Some(json!({"hookSpecificOutput": {"llm_response": {"text": "t"}}})),
                Some("t"),
            ),
            (
                Some(json!({"hookSpecificOutput": {"llm_response":
                    {"candidates": [{"content": {"parts": ["a", "b"]}}]}}})),
                Some("ab"),
            ),
        ];
        for (output, expected) in cases {
            assert_eq!(
                replacement_text(&aggregate(output.clone())).as_deref(),
                expected,
                "{output:?}"
            );
        }
    }
}
