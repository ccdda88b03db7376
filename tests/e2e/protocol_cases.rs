//! The shared protocol cases (`tests/protocol/cases.json`), run through `hookd-client`'s
//! connection (`send_raw` and `tap`); the TypeScript and Python clients run the same file
//! through theirs. The file's `about` says how a case reads.

use std::time::Duration;

use hookd_testkit::{Daemon, within};
use serde_json::Value;

/// The shared cases.
const CASES: &str = include_str!("../protocol/cases.json");

/// Whether `actual` matches `expected` as the file's `about` describes.
fn matches(expected: &Value, actual: Option<&Value>) -> bool {
    match (expected, actual) {
        (Value::String(text), actual) if text == "<absent>" => actual.is_none(),
        (_, None) => false,
        (Value::String(text), Some(_)) if text == "<any>" => true,
        (Value::String(text), Some(actual)) if text.starts_with("<contains:") => {
            let needle = &text["<contains:".len()..text.len() - 1];
            actual
                .as_str()
                .is_some_and(|actual| actual.contains(needle))
        }
        (Value::Object(expected), Some(Value::Object(actual))) => expected
            .iter()
            .all(|(key, value)| matches(value, actual.get(key))),
        (Value::Array(expected), Some(Value::Array(actual))) => {
            expected.len() == actual.len()
                && expected
                    .iter()
                    .zip(actual)
                    .all(|(expected, actual)| matches(expected, Some(actual)))
        }
        (expected, Some(actual)) => expected == actual,
    }
}

/// `value` with every `$CWD` in its strings replaced by `cwd`.
fn substitute(value: &Value, cwd: &str) -> Value {
    match value {
        Value::String(text) => Value::String(text.replace("$CWD", cwd)),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, cwd)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), substitute(value, cwd)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[tokio::test]
async fn the_shared_protocol_cases_pass() {
    let file: Value = serde_json::from_str(CASES).expect("cases.json");
    let daemon = Daemon::start(file["settings"].clone()).await;
    let cwd = daemon.cwd();
    let cases = file["cases"].as_array().expect("cases");
    assert!(cases.len() >= 10, "the file has its cases");
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let client = daemon.client().await;
        let mut frames = client.tap(1024);
        let mut next = async || -> Value {
            let message = within("a frame", Duration::from_secs(20), frames.recv())
                .await
                .expect("the connection is open");
            serde_json::to_value(&message).expect("a message encodes")
        };
        for step in case["steps"].as_array().expect("steps") {
            let step = substitute(step, &cwd);
            if let Some(message) = step.get("send") {
                client.send_raw(message).await.expect("sent");
            } else if let Some(expected) = step.get("expect").and_then(Value::as_array) {
                for expected in expected {
                    let frame = next().await;
                    assert!(
                        matches(expected, Some(&frame)),
                        "{name}: expected {expected}, got {frame}"
                    );
                }
            } else if let Some(expected) = step.get("expect_unordered").and_then(Value::as_array) {
                let mut left: Vec<&Value> = expected.iter().collect();
                while !left.is_empty() {
                    let frame = next().await;
                    let found = left.iter().position(|e| matches(e, Some(&frame)));
                    let Some(index) = found else {
                        panic!("{name}: got {frame}, expected one of {left:?}");
                    };
                    left.remove(index);
                }
            } else {
                panic!("{name}: a step that neither sends nor expects: {step}");
            }
        }
    }
}

#[test]
fn the_matcher_reads_the_file_format() {
    let cases = [
        (r#"{"a": 1}"#, r#"{"a": 1, "b": 2}"#, true),
        (r#"{"a": 1}"#, r#"{"a": 2}"#, false),
        (r#"{"a": "<any>"}"#, r#"{"a": null}"#, true),
        (r#"{"a": "<any>"}"#, r#"{}"#, false),
        (r#"{"a": "<absent>"}"#, r#"{}"#, true),
        (r#"{"a": "<absent>"}"#, r#"{"a": 1}"#, false),
        (r#"{"a": "<contains:ell>"}"#, r#"{"a": "hello"}"#, true),
        (r#"{"a": "<contains:x>"}"#, r#"{"a": "hello"}"#, false),
        (r#"[1, {"b": 2}]"#, r#"[1, {"b": 2, "c": 3}]"#, true),
        (r#"[1]"#, r#"[1, 2]"#, false),
        (r#"{"id": 7}"#, r#"{"id": "7"}"#, false),
    ];
    for (expected, actual, result) in cases {
        let expected: Value = serde_json::from_str(expected).expect("json");
        let actual: Value = serde_json::from_str(actual).expect("json");
        assert_eq!(
            matches(&expected, Some(&actual)),
            result,
            "{expected} vs {actual}"
        );
    }
}
