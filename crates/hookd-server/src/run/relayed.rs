//! AfterModel chunks relayed one event at a time, joined back into streams.
//!
//! Gemini CLI fires AfterModel once per streamed chunk, and `hookctl relay` turns each firing
//! into a separate `event` request (often on a new connection). The builtin filters need the
//! chunks of one response as one text, or a secret cut by a chunk boundary passes them, and
//! hooks are promised `full_content`, the response so far. So consecutive relayed AfterModel
//! events of one model response are one *series*, with the state of a stream session
//! ([`StreamState`]): each filter's held-back text, and the text emitted so far.
//!
//! - **Key.** A response is identified by the project, the session id and a 64-bit hash of the
//!   `llm_request` (the same for every chunk of a response, and re-sent with each).
//! - **End.** The chunk that carries a `finishReason` in one of its candidates is the last:
//!   the filters release what they hold with it, and the series is removed. A last chunk
//!   with no text of its own (a function call's chunk shows no parts to hooks) is passed on
//!   unchanged, since Gemini CLI would drop the parts it cannot see from a replaced chunk;
//!   what the filters still held is then dropped and the filter record says so.
//! - **Bounds.** At most [`MAX_SERIES`] series are kept (the least recently used one not
//!   running a chunk goes first); one with no chunk for [`IDLE_EXPIRY`] after its last one
//!   was answered is dropped (a response the host abandoned); each keeps at most
//!   [`MAX_SERIES_TEXT_BYTES`] of text for `full_content`, and its filters at most
//!   `2 × holdback + 4` bytes each. A dropped series loses what its filters held back.
//! - **Order.** The chunks of one series are run one at a time (a lock per series), in the
//!   order their requests reach it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hookd_core::aggregate::{Aggregate, replace_response_text};
use hookd_core::payload::chunk_text;
use hookd_core::{HookEntry, HookResult, Plan};
use serde_json::{Map, Value};

use hookd_core::policy::FailurePolicy;

use crate::stream::{StreamState, replacement_text, run_filters_bounded};

/// The most series kept at once.
pub(crate) const MAX_SERIES: usize = 64;

/// A series unused for this long is dropped.
pub(crate) const IDLE_EXPIRY: Duration = Duration::from_secs(60);

/// The most text a series keeps for `full_content` (the oldest is dropped beyond it).
pub(crate) const MAX_SERIES_TEXT_BYTES: usize = 1024 * 1024;

/// What identifies the response a relayed chunk belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SeriesKey {
    project: String,
    session_id: String,
    request: u64,
}

impl SeriesKey {
    /// The key of a chunk of `project`'s session `session_id` whose request is `llm_request`.
    pub(crate) fn new(project: &str, session_id: &str, llm_request: Option<&Value>) -> SeriesKey {
        let mut hasher = DefaultHasher::new();
        if let Some(request) = llm_request {
            // Written straight into the hasher: no copy of a long history is made.
            let _ = serde_json::to_writer(HashWriter(&mut hasher), request);
        }
        SeriesKey {
            project: project.to_owned(),
            session_id: session_id.to_owned(),
            request: hasher.finish(),
        }
    }
}

/// An `io::Write` that feeds a hasher.
struct HashWriter<'a>(&'a mut DefaultHasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        bytes.hash(self.0);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether an AfterModel chunk is its response's last: a candidate carries a `finishReason`.
pub(crate) fn is_last_chunk(llm_response: Option<&Value>) -> bool {
    llm_response
        .and_then(|response| response.get("candidates"))
        .and_then(Value::as_array)
        .is_some_and(|candidates| {
            candidates.iter().any(|candidate| {
                candidate
                    .get("finishReason")
                    .and_then(Value::as_str)
                    .is_some_and(|reason| !reason.is_empty())
            })
        })
}

/// The series in progress, daemon-wide (a relay may use a new connection per chunk).
#[derive(Default)]
pub(crate) struct RelayedSeries {
    table: Mutex<HashMap<SeriesKey, Slot>>,
}

/// One series in the table.
struct Slot {
    series: Arc<tokio::sync::Mutex<Series>>,
    last_used: Instant,
}

impl RelayedSeries {
    fn lock(&self) -> MutexGuard<'_, HashMap<SeriesKey, Slot>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The series of `key`, started when there is none; expired series are dropped first,
    /// and the least recently used one when the table is full.
    pub(crate) fn series(&self, key: &SeriesKey, now: Instant) -> Arc<tokio::sync::Mutex<Series>> {
        let mut table = self.lock();
        // A series whose chunk is running (its lock taken) is in use, however long its hooks
        // take.
        table.retain(|_, slot| {
            now.saturating_duration_since(slot.last_used) < IDLE_EXPIRY
                || slot.series.try_lock().is_err()
        });
        if let Some(slot) = table.get_mut(key) {
            slot.last_used = now;
            return Arc::clone(&slot.series);
        }
        if table.len() >= MAX_SERIES {
            let oldest = table
                .iter()
                .min_by_key(|(_, slot)| (slot.series.try_lock().is_err(), slot.last_used))
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                tracing::debug!("relayed AfterModel series table full; dropping the oldest");
                table.remove(&oldest);
            }
        }
        let series = Arc::new(tokio::sync::Mutex::new(Series::default()));
        table.insert(
            key.clone(),
            Slot {
                series: Arc::clone(&series),
                last_used: now,
            },
        );
        series
    }

    /// Marks the series of `key` as used now (a chunk of it was answered): the idle time is
    /// counted from the end of its last chunk.
    pub(crate) fn touch(&self, key: &SeriesKey, now: Instant) {
        if let Some(slot) = self.lock().get_mut(key) {
            slot.last_used = now;
        }
    }

    /// Ends the series of `key` (its last chunk was answered).
    pub(crate) fn end(&self, key: &SeriesKey) {
        self.lock().remove(key);
    }

    /// How many series are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// One response's state across its relayed chunks.
#[derive(Default)]
pub(crate) struct Series {
    /// The filters' and `full_content`'s state, with the registry generation it was built
    /// for; `None` before the first chunk.
    state: Option<(u64, StreamState)>,
}

/// A chunk after the filters, ready for the command hooks.
pub(crate) struct FilteredChunk {
    /// The filters' records, in the order they ran.
    pub(crate) results: Vec<HookResult>,
    /// The filters' entries, in the same order.
    pub(crate) filters: Vec<Arc<HookEntry>>,
    /// The rest of the plan, run on the filtered chunk.
    pub(crate) commands: Option<Plan>,
    /// The chunk's text as the filters left it.
    text: String,
}

impl Series {
    /// Runs the filters of `plan` on the chunk in `input` (its `llm_response`), leaving the
    /// filtered chunk there (`llm_response`, `content`) with `full_content`, the response so
    /// far; `last` ends the response. A registry change since the previous chunk restarts the
    /// state with the new plan, the old filters' held-back text going first.
    /// A chunk larger than `hookd_runner::fire::INLINE_FILTER_BYTES` is filtered on the
    /// blocking pool within each filter's timeout, failing closed
    /// ([`crate::stream::run_filters_bounded`]).
    pub(crate) async fn filter_chunk(
        &mut self,
        plan: &Plan,
        generation: u64,
        input: &mut Map<String, Value>,
        last: bool,
        default_on_failure: FailurePolicy,
    ) -> FilteredChunk {
        let mut carried = String::new();
        let stale = self
            .state
            .as_ref()
            .is_some_and(|(built_for, _)| *built_for != generation);
        if stale && let Some((_, mut old)) = self.state.take() {
            carried = old.flush();
            let mut state = StreamState::with_max_emitted(plan, MAX_SERIES_TEXT_BYTES);
            state.push_emitted(&old.emitted);
            self.state = Some((generation, state));
        }
        let (_, state) = self.state.get_or_insert_with(|| {
            (
                generation,
                StreamState::with_max_emitted(plan, MAX_SERIES_TEXT_BYTES),
            )
        });
        let mut response = input.remove("llm_response").unwrap_or(Value::Null);
        let mut text = chunk_text(&response);
        if !carried.is_empty() {
            text.insert_str(0, &carried);
            if let Value::Object(map) = &mut response {
                replace_response_text(map, &text);
            }
        }
        let llm_response = match response {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        // A last chunk with no text of its own is passed on as it is (see the module docs).
        let flush_here = last && !text.is_empty();
        let mut filtered = run_filters_bounded(
            state,
            input,
            llm_response,
            (plan.hooks.len(), flush_here),
            default_on_failure,
        )
        .await;
        if last && !flush_here {
            let dropped = state.flush();
            if !dropped.is_empty()
                && let Some(first) = filtered.results.first_mut()
            {
                first.warning = Some(format!(
                    "{} bytes held back at the end of the response were dropped: its last \
                     chunk has no text to carry them (replacing it would drop its other parts)",
                    dropped.len()
                ));
            }
        }
        if state.commands.is_some() {
            let mut full_content = String::with_capacity(state.emitted.len() + filtered.text.len());
            full_content.push_str(&state.emitted);
            full_content.push_str(&filtered.text);
            input.insert("full_content".to_owned(), Value::String(full_content));
        }
        FilteredChunk {
            results: std::mem::take(&mut filtered.results),
            filters: state.filter_entries().cloned().collect(),
            commands: state.commands.clone(),
            text: filtered.text,
        }
    }

    /// Records what the chunk emitted (the aggregate's replacement, else the filtered text),
    /// for the next chunk's `full_content`.
    pub(crate) fn emitted(&mut self, chunk: &FilteredChunk, aggregate: &Aggregate) {
        if let Some((_, state)) = &mut self.state {
            let text = replacement_text(aggregate).unwrap_or_else(|| chunk.text.clone());
            state.push_emitted(&text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filter_plan() -> Plan {
        let raw = json!({"builtin": "redact", "holdback": 16});
        let raw = raw.as_object().cloned().unwrap_or_default();
        let redactor = hookd_core::redact::Redactor::from_raw(&raw).expect("the filter");
        let entry = HookEntry {
            event: hookd_core::HookEventName::AfterModel,
            config: hookd_core::HookConfig {
                hook_type: hookd_core::HookType::Builtin,
                command: None,
                name: Some("redact".to_owned()),
                description: None,
                timeout_ms: None,
                env: Vec::new(),
                raw,
            },
            source: hookd_core::Source::User,
            origin: hookd_core::Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: hookd_core::trust::HookTrust::NotRequired,
            builtin: Some(Arc::new(redactor)),
            identity: Default::default(),
        };
        Plan {
            event: hookd_core::HookEventName::AfterModel,
            hooks: vec![Arc::new(entry)],
            sequential: false,
        }
    }

    /// Runs `chunks` (text, last) through one series and returns, per chunk, the text the
    /// filters left and the filter's warning.
    async fn run(
        series: &mut Series,
        generation: u64,
        chunks: &[(&str, bool)],
    ) -> Vec<(String, bool)> {
        let plan = filter_plan();
        let mut out = Vec::new();
        for (text, last) in chunks {
            let response = json!({"candidates": [{"content": {"parts": [text]}}]});
            let mut input = Map::new();
            input.insert("llm_response".to_owned(), response);
            let filtered = series
                .filter_chunk(&plan, generation, &mut input, *last, FailurePolicy::Allow)
                .await;
            let warned = filtered.results.iter().any(|r| r.warning.is_some());
            out.push((filtered.text, warned));
        }
        out
    }

    #[tokio::test]
    async fn held_back_text_comes_out_at_the_last_chunk_with_text() {
        let key = "AKIAABCDEFGHIJKLMNOP";
        let text = format!("a long enough line with {key} inside it, and then the rest");
        let (first, second) = text.split_at(30);
        let mut series = Series::default();
        let out = run(&mut series, 1, &[(first, false), (second, true)]).await;
        let joined: String = out.iter().map(|(text, _)| text.as_str()).collect();
        assert_eq!(
            joined,
            "a long enough line with [REDACTED:aws-access-key-id] inside it, and then the rest"
        );
        assert!(out.iter().all(|(_, warned)| !warned));

        // A last chunk without text stays as it is; what was held is dropped, with a warning.
        let mut series = Series::default();
        let out = run(&mut series, 1, &[("some text", false), ("", true)]).await;
        assert_eq!(out, [(String::new(), false), (String::new(), true)]);

        // A registry change mid-response: the old filters' held text goes first.
        let mut series = Series::default();
        let mut out = run(&mut series, 1, &[("held ", false)]).await;
        out.extend(run(&mut series, 2, &[("back", true)]).await);
        let joined: String = out.iter().map(|(text, _)| text.as_str()).collect();
        assert_eq!(joined, "held back");
    }

    #[test]
    fn the_last_chunk_is_the_one_with_a_finish_reason() {
        let cases = [
            (
                json!({"candidates": [{"content": {"parts": ["a"]}}]}),
                false,
            ),
            (
                json!({"candidates": [{"content": {"parts": ["a"]}, "finishReason": "STOP"}]}),
                true,
            ),
            (
                json!({"candidates": [{"finishReason": "MAX_TOKENS"}]}),
                true,
            ),
            (
                json!({"candidates": [{}, {"finishReason": "SAFETY"}]}),
                true,
            ),
            (json!({"candidates": [{"finishReason": ""}]}), false),
            (json!({"candidates": [{"finishReason": null}]}), false),
            (json!({"text": "x"}), false),
            (json!(null), false),
        ];
        for (response, expected) in cases {
            assert_eq!(is_last_chunk(Some(&response)), expected, "{response}");
        }
        assert!(!is_last_chunk(None));
    }

    #[test]
    fn keys_tell_responses_apart() {
        let request = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let other = json!({"model": "m", "messages": [{"role": "user", "content": "ho"}]});
        let key = SeriesKey::new("/p", "s", Some(&request));
        assert_eq!(key, SeriesKey::new("/p", "s", Some(&request.clone())));
        assert_ne!(key, SeriesKey::new("/p", "s", Some(&other)));
        assert_ne!(key, SeriesKey::new("/p", "t", Some(&request)));
        assert_ne!(key, SeriesKey::new("/q", "s", Some(&request)));
    }

    #[test]
    fn the_table_is_bounded_and_expires_idle_series() {
        let table = RelayedSeries::default();
        let start = Instant::now();
        let key = |n: usize| SeriesKey::new("/p", &format!("s{n}"), None);
        for n in 0..MAX_SERIES + 5 {
            table.series(&key(n), start + Duration::from_millis(n as u64));
        }
        assert_eq!(table.len(), MAX_SERIES);
        // The oldest went first; a kept one is found again.
        let kept = table.series(&key(MAX_SERIES + 4), start + Duration::from_secs(1));
        let again = table.series(&key(MAX_SERIES + 4), start + Duration::from_secs(2));
        assert!(Arc::ptr_eq(&kept, &again));
        assert_eq!(table.len(), MAX_SERIES);
        // Past the expiry every idle series is gone, and a new one starts afresh.
        let later = start + Duration::from_secs(2) + IDLE_EXPIRY;
        let fresh = table.series(&key(MAX_SERIES + 4), later);
        assert!(!Arc::ptr_eq(&kept, &fresh));
        assert_eq!(table.len(), 1);
        table.end(&key(MAX_SERIES + 4));
        assert_eq!(table.len(), 0);

        // A series running a chunk is kept however long its hooks take.
        let busy = table.series(&key(1), later);
        let guard = busy.try_lock().expect("free");
        let much_later = later + IDLE_EXPIRY * 3;
        table.series(&key(2), much_later);
        assert_eq!(table.len(), 2);
        drop(guard);
        table.touch(&key(1), much_later);
        table.series(&key(3), much_later + IDLE_EXPIRY / 2);
        assert_eq!(table.len(), 3);
        table.series(&key(3), much_later + IDLE_EXPIRY * 2);
        assert_eq!(table.len(), 1);
    }
}
