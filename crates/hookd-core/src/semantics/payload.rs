//! The JSON object a hook reads on stdin (spec §4.4), with Gemini CLI's exact key order.
//!
//! The base fields come first (`session_id`, `transcript_path`, `cwd`, `hook_event_name`,
//! `timestamp`), then the event's own fields in [`HookEventName::input_fields`] order, then any
//! other key the caller gave, in the caller's order. Optional fields the caller did not give
//! stay absent; nothing is invented as `null`.
//!
//! AfterModel also carries hookd's `content` and `full_content` (hookd's chunk text): this chunk's
//! text and the text accumulated so far in the response. The caller normally gives both; when
//! it does not, `content` is derived from the chunk's `llm_response` and `full_content`
//! defaults to `content`.
//!
//! The timestamp is formatted here from a Unix time the caller read (the core reads no clock);
//! all hooks of one firing get the same value.

use serde_json::{Map, Value};

use crate::event::HookEventName;
use crate::json::Object;

/// The base fields every payload starts with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BaseFields {
    /// The agent session's id.
    pub session_id: String,
    /// The chat recording file path, or `""` when there is none.
    pub transcript_path: String,
    /// The session's working directory.
    pub cwd: String,
    /// When the event fired, as [`format_timestamp`] writes it.
    pub timestamp: String,
}

/// The base keys in payload order; `hook_event_name` is always the firing event.
const BASE_KEYS: [&str; 5] = [
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "timestamp",
];

/// Builds the stdin payload for one firing.
///
/// A base field the caller put in `event_input` wins over `base` (the caller gave it), but
/// keeps its base position; `hook_event_name` is always `event`. For AfterModel, see the
/// module documentation for `content` and `full_content`.
pub fn build_payload(
    event: HookEventName,
    base: &BaseFields,
    event_input: &Map<String, Value>,
) -> Map<String, Value> {
    let mut payload = Map::new();
    for key in BASE_KEYS {
        let value = match key {
            "hook_event_name" => Value::String(event.as_str().to_owned()),
            _ => match event_input.get(key) {
                Some(given) => given.clone(),
                None => Value::String(base_value(base, key).to_owned()),
            },
        };
        payload.insert(key.to_owned(), value);
    }

    let derived = derived_fields(event, event_input);
    for &key in event.input_fields() {
        let value = event_input.get(key).cloned().or_else(|| {
            derived
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, v)| v.clone())
        });
        if let Some(value) = value {
            payload.insert(key.to_owned(), value);
        }
    }

    for (key, value) in event_input {
        if !payload.contains_key(key) {
            payload.insert(key.clone(), value.clone());
        }
    }
    payload
}

/// Writes the compact JSON of [`build_payload`]`(event, base, event_input)`, without the keys
/// in `leave_out`, straight into `out`: byte for byte what serialising the built payload gives,
/// but without copying the input (`llm_request` and `full_content` can be large, and a
/// streamed AfterModel response builds one payload per chunk).
///
/// `serialized` gives some input fields already as JSON text (`(key, json)`): where the
/// payload has that key, the text is written as it is instead of serialising the input's
/// value. It must be exactly what serialising `event_input[key]` gives (a stream keeps the
/// serialised `llm_request` and the escaped text emitted so far, so that neither is serialised
/// again for every chunk); a key the input does not hold is ignored.
pub fn write_payload(
    event: HookEventName,
    base: &BaseFields,
    event_input: &Map<String, Value>,
    leave_out: &[String],
    serialized: &[(&str, &str)],
    out: &mut Vec<u8>,
) {
    let kept = |key: &str| !leave_out.iter().any(|left| left == key);
    let mut writer = Object::new(out);
    for key in BASE_KEYS {
        if !kept(key) {
            continue;
        }
        match key {
            "hook_event_name" => writer.str(key, event.as_str()),
            _ => match event_input.get(key) {
                Some(given) => input_entry(&mut writer, key, given, serialized),
                None => writer.str(key, base_value(base, key)),
            },
        }
    }
    let fields = event.input_fields();
    // Derived only when a field needs it: computing `content` reads the response.
    let mut derived: Option<Vec<(&'static str, Value)>> = None;
    for &key in fields {
        if !kept(key) {
            continue;
        }
        match event_input.get(key) {
            Some(value) => input_entry(&mut writer, key, value, serialized),
            None => {
                let derived = derived.get_or_insert_with(|| derived_fields(event, event_input));
                if let Some((_, value)) = derived.iter().find(|(name, _)| *name == key) {
                    writer.json(key, value);
                }
            }
        }
    }
    for (key, value) in event_input {
        let placed = BASE_KEYS.contains(&key.as_str()) || fields.contains(&key.as_str());
        if !placed && kept(key) {
            input_entry(&mut writer, key, value, serialized);
        }
    }
    writer.end();
}

/// An input field, from its serialised text when there is one.
fn input_entry(writer: &mut Object<'_>, key: &str, value: &Value, serialized: &[(&str, &str)]) {
    match serialized.iter().find(|(name, _)| *name == key) {
        Some((_, json)) => writer.raw(key, json),
        None => writer.json(key, value),
    }
}

fn base_value<'a>(base: &'a BaseFields, key: &str) -> &'a str {
    match key {
        "session_id" => &base.session_id,
        "transcript_path" => &base.transcript_path,
        "cwd" => &base.cwd,
        _ => &base.timestamp,
    }
}

/// Fields the payload derives when the caller did not give them (AfterModel only, chunk text).
fn derived_fields(
    event: HookEventName,
    event_input: &Map<String, Value>,
) -> Vec<(&'static str, Value)> {
    if event != HookEventName::AfterModel {
        return Vec::new();
    }
    let content = event_input.get("content").cloned().or_else(|| {
        event_input
            .get("llm_response")
            .map(|response| Value::String(chunk_text(response)))
    });
    let Some(content) = content else {
        return Vec::new();
    };
    let full_content = event_input
        .get("full_content")
        .cloned()
        .unwrap_or_else(|| content.clone());
    vec![("content", content), ("full_content", full_content)]
}

/// The text of one part of a candidate's content: the part itself when it is a string (the
/// hook format), its `text` when it is a Gemini API part object (`{"text": ...}`, a thought
/// part included); `None` for a part without text (a function call, an image).
pub fn part_text(part: &Value) -> Option<&str> {
    match part {
        Value::String(text) => Some(text),
        Value::Object(object) => object.get("text").and_then(Value::as_str),
        _ => None,
    }
}

/// The text of one AfterModel chunk (spec §7.4): the `text` field when it is a string, else
/// the concatenated text parts of the first candidate, else `""`. Parts are read in both
/// forms, the hook format's strings and the Gemini API's part objects (see [`part_text`]),
/// so a client that streams the API's chunks as they come has all their text filtered.
pub fn chunk_text(llm_response: &Value) -> String {
    if let Some(text) = llm_response.get("text").and_then(Value::as_str) {
        return text.to_owned();
    }
    llm_response
        .get("candidates")
        .and_then(|candidates| candidates.get(0))
        .and_then(|candidate| candidate.get("content"))
        .and_then(|content| content.get("parts"))
        .and_then(Value::as_array)
        .map(|parts| parts.iter().filter_map(part_text).collect())
        .unwrap_or_default()
}

/// Formats Unix milliseconds as JavaScript's `Date.prototype.toISOString` does:
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC, with a signed six-digit year outside 0000–9999.
pub fn format_timestamp(unix_millis: i64) -> String {
    let days = unix_millis.div_euclid(86_400_000);
    let millis_of_day = unix_millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let hours = millis_of_day / 3_600_000;
    let minutes = millis_of_day / 60_000 % 60;
    let seconds = millis_of_day / 1000 % 60;
    let millis = millis_of_day % 1000;
    // Written digit by digit: this runs for every chunk of a streamed response, and the
    // formatting machinery costs more than the arithmetic.
    let mut out = String::with_capacity(27);
    if (0..=9999).contains(&year) {
        push_digits(&mut out, year.unsigned_abs(), 4);
    } else {
        out.push(if year < 0 { '-' } else { '+' });
        push_digits(&mut out, year.unsigned_abs(), 6);
    }
    out.push('-');
    push_digits(&mut out, u64::from(month), 2);
    out.push('-');
    push_digits(&mut out, u64::from(day), 2);
    out.push('T');
    // These are non-negative and small by construction (rem_euclid above).
    push_digits(&mut out, hours.unsigned_abs(), 2);
    out.push(':');
    push_digits(&mut out, minutes.unsigned_abs(), 2);
    out.push(':');
    push_digits(&mut out, seconds.unsigned_abs(), 2);
    out.push('.');
    push_digits(&mut out, millis.unsigned_abs(), 3);
    out.push('Z');
    out
}

/// Appends `value` in decimal, zero-padded to at least `width` digits.
fn push_digits(out: &mut String, value: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut rest = value;
    let mut len = 0;
    while rest > 0 || len == 0 {
        digits[len] = b'0' + (rest % 10) as u8;
        rest /= 10;
        len += 1;
    }
    for _ in len..width {
        out.push('0');
    }
    for &digit in digits[..len].iter().rev() {
        out.push(char::from(digit));
    }
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
///
/// This is the well-known era-based algorithm: shift the epoch to 0000-03-01 so that leap days
/// fall at the end of a year, split into 400-year eras of 146097 days, then derive the year of
/// the era, the day of that (March-based) year and the month from it.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    // Both values are small by construction (1..=31 and 1..=12).
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn base() -> BaseFields {
        BaseFields {
            session_id: "s1".to_owned(),
            transcript_path: "/t.json".to_owned(),
            cwd: "/w".to_owned(),
            timestamp: "2026-11-22T10:20:30.123Z".to_owned(),
        }
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    /// `write_payload` with the test base fields, into a new buffer.
    fn written(
        event: HookEventName,
        input: &Map<String, Value>,
        leave_out: &[String],
        serialized: &[(&str, &str)],
    ) -> Vec<u8> {
        let mut out = Vec::new();
        write_payload(event, &base(), input, leave_out, serialized, &mut out);
        out
    }

    /// Checks the serialised payload, so key order is part of the comparison.
    fn check_payload(event: HookEventName, input: Value, expected: &str) {
        let input = object(input);
        let payload = build_payload(event, &base(), &input);
        let actual = serde_json::to_string(&payload).expect("serialises");
        assert_eq!(actual, expected, "{event}");
        // Written in place, the payload is the same bytes.
        let written = written(event, &input, &[], &[]);
        assert_eq!(
            String::from_utf8_lossy(&written),
            expected,
            "{event}, written"
        );
    }

    #[test]
    fn written_payloads_leave_out_keys_and_keep_the_order() {
        let input = object(json!({
            "llm_request": {"messages": [{"content": "hi"}]},
            "llm_response": {"text": "chunk"},
            "full_content": "so far: chunk",
            "extra": 1,
            "session_id": "given"
        }));
        // (left out, expected keys in order)
        let cases: [(&[&str], &[&str]); 4] = [
            (
                &[],
                &[
                    "session_id",
                    "transcript_path",
                    "cwd",
                    "hook_event_name",
                    "timestamp",
                    "llm_request",
                    "llm_response",
                    "content",
                    "full_content",
                    "extra",
                ],
            ),
            (
                &["llm_request", "full_content"],
                &[
                    "session_id",
                    "transcript_path",
                    "cwd",
                    "hook_event_name",
                    "timestamp",
                    "llm_response",
                    "content",
                    "extra",
                ],
            ),
            (
                &["session_id", "extra", "content", "missing"],
                &[
                    "transcript_path",
                    "cwd",
                    "hook_event_name",
                    "timestamp",
                    "llm_request",
                    "llm_response",
                    "full_content",
                ],
            ),
            (
                &["hook_event_name", "timestamp", "llm_response"],
                &[
                    "session_id",
                    "transcript_path",
                    "cwd",
                    "llm_request",
                    "content",
                    "full_content",
                    "extra",
                ],
            ),
        ];
        let full = build_payload(HookEventName::AfterModel, &base(), &input);
        for (left_out, keys) in cases {
            let left_out: Vec<String> = left_out.iter().map(|key| (*key).to_owned()).collect();
            let written = written(HookEventName::AfterModel, &input, &left_out, &[]);
            let parsed: Map<String, Value> =
                serde_json::from_slice(&written).expect("written JSON parses");
            let order: Vec<&str> = parsed.keys().map(String::as_str).collect();
            assert_eq!(order, keys, "{left_out:?}");
            // Every kept key has the value the built payload gives it.
            for (key, value) in &parsed {
                assert_eq!(full.get(key), Some(value), "{key}");
            }
        }
        // The derived content is the response's text; a given session id wins.
        let written = written(HookEventName::AfterModel, &input, &[], &[]);
        let parsed: Value = serde_json::from_slice(&written).expect("parses");
        assert_eq!(parsed["content"], "chunk");
        assert_eq!(parsed["session_id"], "given");
        assert_eq!(parsed["full_content"], "so far: chunk");
    }

    #[test]
    fn serialized_fields_are_written_as_given() {
        let input = object(json!({
            "llm_request": {"messages": [{"content": "hi \"there\"\n"}]},
            "llm_response": {"text": "é\u{1}"},
            "full_content": "line\none \"quoted\" \\ é \u{7}",
            "extra": [1, 2]
        }));
        let plain = written(HookEventName::AfterModel, &input, &[], &[]);
        // The serialised texts of two fields, the second built from escaped pieces.
        let request = serde_json::to_string(&input["llm_request"]).expect("serialises");
        let mut full = String::from("\"");
        for piece in ["line\none \"quo", "ted\" \\ é", " \u{7}"] {
            crate::json::push_escaped(&mut full, piece);
        }
        full.push('"');
        assert_eq!(
            full,
            serde_json::to_string(&input["full_content"]).expect("json")
        );
        let given = written(
            HookEventName::AfterModel,
            &input,
            &[],
            &[
                ("llm_request", &request),
                ("full_content", &full),
                ("absent", "1"),
            ],
        );
        assert_eq!(
            String::from_utf8_lossy(&given),
            String::from_utf8_lossy(&plain)
        );
        // A marker shows that the given text is what is written.
        let marked = written(
            HookEventName::AfterModel,
            &input,
            &["llm_response".to_owned()],
            &[("extra", "\"marker\"")],
        );
        let parsed: Value = serde_json::from_slice(&marked).expect("parses");
        assert_eq!(parsed["extra"], "marker");
        assert!(parsed.get("llm_response").is_none());
    }

    const BASE_JSON: &str = r#""session_id":"s1","transcript_path":"/t.json","cwd":"/w""#;
    const TS: &str = r#""timestamp":"2026-11-22T10:20:30.123Z""#;

    #[test]
    fn payload_key_order_per_event() {
        let p = |event: &str, rest: &str| {
            let rest = if rest.is_empty() {
                String::new()
            } else {
                format!(",{rest}")
            };
            format!(r#"{{{BASE_JSON},"hook_event_name":"{event}",{TS}{rest}}}"#)
        };
        let cases = [
            (
                HookEventName::BeforeTool,
                json!({"original_request_name": "o", "mcp_context": {"server_name": "m"},
                       "tool_input": {"b": 1, "a": 2}, "tool_name": "t"}),
                p(
                    "BeforeTool",
                    r#""tool_name":"t","tool_input":{"b":1,"a":2},"mcp_context":{"server_name":"m"},"original_request_name":"o""#,
                ),
            ),
            (
                HookEventName::BeforeTool,
                json!({"tool_input": {}, "tool_name": "t"}),
                p("BeforeTool", r#""tool_name":"t","tool_input":{}"#),
            ),
            (
                HookEventName::AfterTool,
                json!({"tool_response": {"llmContent": "x"}, "tool_input": {}, "tool_name": "t"}),
                p(
                    "AfterTool",
                    r#""tool_name":"t","tool_input":{},"tool_response":{"llmContent":"x"}"#,
                ),
            ),
            (
                HookEventName::BeforeAgent,
                json!({"prompt": "hi"}),
                p("BeforeAgent", r#""prompt":"hi""#),
            ),
            (
                HookEventName::AfterAgent,
                json!({"stop_hook_active": false, "prompt_response": "r", "prompt": "p"}),
                p(
                    "AfterAgent",
                    r#""prompt":"p","prompt_response":"r","stop_hook_active":false"#,
                ),
            ),
            (
                HookEventName::Notification,
                json!({"details": {"type": "exec"}, "message": "m", "notification_type": "ToolPermission"}),
                p(
                    "Notification",
                    r#""notification_type":"ToolPermission","message":"m","details":{"type":"exec"}"#,
                ),
            ),
            (
                HookEventName::SessionStart,
                json!({"source": "startup"}),
                p("SessionStart", r#""source":"startup""#),
            ),
            (
                HookEventName::SessionEnd,
                json!({"reason": "exit"}),
                p("SessionEnd", r#""reason":"exit""#),
            ),
            (
                HookEventName::PreCompress,
                json!({"trigger": "auto"}),
                p("PreCompress", r#""trigger":"auto""#),
            ),
            (
                HookEventName::BeforeModel,
                json!({"llm_request": {"model": "m"}}),
                p("BeforeModel", r#""llm_request":{"model":"m"}"#),
            ),
            (
                HookEventName::BeforeToolSelection,
                json!({"llm_request": {"model": "m"}}),
                p("BeforeToolSelection", r#""llm_request":{"model":"m"}"#),
            ),
            (
                HookEventName::AfterModel,
                json!({"full_content": "ab", "content": "b", "llm_response": {"text": "x"},
                       "llm_request": {"model": "m"}}),
                p(
                    "AfterModel",
                    r#""llm_request":{"model":"m"},"llm_response":{"text":"x"},"content":"b","full_content":"ab""#,
                ),
            ),
            // Extra keys follow the event's fields in the caller's order.
            (
                HookEventName::SessionStart,
                json!({"zeta": 1, "source": "resume", "alpha": 2}),
                p("SessionStart", r#""source":"resume","zeta":1,"alpha":2"#),
            ),
            // Base fields the caller gave win over BaseFields but stay in base position;
            // hook_event_name is always the event.
            (
                HookEventName::SessionEnd,
                json!({"reason": "clear", "cwd": "/other", "hook_event_name": "Fake",
                       "timestamp": "T"}),
                r#"{"session_id":"s1","transcript_path":"/t.json","cwd":"/other","hook_event_name":"SessionEnd","timestamp":"T","reason":"clear"}"#
                    .to_owned(),
            ),
            // Nothing invented for absent fields.
            (HookEventName::AfterAgent, json!({}), p("AfterAgent", "")),
        ];
        for (event, input, expected) in cases {
            check_payload(event, input, &expected);
        }
    }

    #[test]
    fn after_model_content_is_derived_from_the_chunk() {
        let p =
            |rest: &str| format!(r#"{{{BASE_JSON},"hook_event_name":"AfterModel",{TS},{rest}}}"#);
        let cases = [
            // `text` is preferred.
            (
                json!({"llm_response": {"text": "hi", "candidates": [{"content": {"parts": ["x"]}}]}}),
                p(
                    r#""llm_response":{"text":"hi","candidates":[{"content":{"parts":["x"]}}]},"content":"hi","full_content":"hi""#,
                ),
            ),
            // Else the string parts of the first candidate, concatenated.
            (
                json!({"llm_response": {"candidates": [{"content": {"parts": ["a", 1, "b"]}}, {"content": {"parts": ["z"]}}]}}),
                p(
                    r#""llm_response":{"candidates":[{"content":{"parts":["a",1,"b"]}},{"content":{"parts":["z"]}}]},"content":"ab","full_content":"ab""#,
                ),
            ),
            // Gemini API part objects are read like strings; parts without text are skipped.
            (
                json!({"llm_response": {"candidates": [{"content": {"parts": [{"text": "a"}, {"functionCall": {"name": "f"}}, {"text": "b", "thought": true}, "c"]}}]}}),
                p(
                    r#""llm_response":{"candidates":[{"content":{"parts":[{"text":"a"},{"functionCall":{"name":"f"}},{"text":"b","thought":true},"c"]}}]},"content":"abc","full_content":"abc""#,
                ),
            ),
            // No text at all (e.g. a function call chunk) → empty content.
            (
                json!({"llm_response": {"candidates": []}}),
                p(r#""llm_response":{"candidates":[]},"content":"","full_content":"""#),
            ),
            // The caller's full_content is kept while content is derived.
            (
                json!({"full_content": "so far", "llm_response": {"text": "t"}}),
                p(r#""llm_response":{"text":"t"},"content":"t","full_content":"so far""#),
            ),
            // The caller's content wins over the chunk.
            (
                json!({"content": "given", "llm_response": {"text": "t"}}),
                p(r#""llm_response":{"text":"t"},"content":"given","full_content":"given""#),
            ),
        ];
        for (input, expected) in cases {
            check_payload(HookEventName::AfterModel, input, &expected);
        }
        // Without llm_response and content nothing is derived.
        check_payload(
            HookEventName::AfterModel,
            json!({"llm_request": {}}),
            &p(r#""llm_request":{}"#),
        );
    }

    fn check_timestamp(unix_millis: i64, expected: &str) {
        assert_eq!(format_timestamp(unix_millis), expected, "{unix_millis}");
    }

    #[test]
    fn timestamps_match_to_iso_string() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (1, "1970-01-01T00:00:00.001Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (951_868_799_999, "2000-02-29T23:59:59.999Z"),
            (951_868_800_000, "2000-03-01T00:00:00.000Z"),
            (1_709_164_800_000, "2024-02-29T00:00:00.000Z"),
            (1_709_251_200_000, "2024-03-01T00:00:00.000Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (4_107_456_000_000, "2100-02-28T00:00:00.000Z"),
            (1_798_019_999_999, "2026-12-23T09:59:59.999Z"),
            (1_795_170_030_123, "2026-11-20T10:20:30.123Z"),
            (1_704_067_199_999, "2023-12-31T23:59:59.999Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
            (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
            (-62_167_219_200_000, "0000-01-01T00:00:00.000Z"),
            (-62_167_219_200_001, "-000001-12-31T23:59:59.999Z"),
            (-8_640_000_000_000_000, "-271821-04-20T00:00:00.000Z"),
            (8_640_000_000_000_000, "+275760-09-13T00:00:00.000Z"),
        ];
        for (unix_millis, expected) in cases {
            check_timestamp(unix_millis, expected);
        }
        // Extreme inputs must not panic.
        let _ = format_timestamp(i64::MIN);
        let _ = format_timestamp(i64::MAX);
    }
}
