//! A relay's answer as the body of an HTTP hook's response.
//!
//! The dialect's `relay_answer` says what a command relay prints and exits with. A host's HTTP
//! hook has no exit code: Claude Code reads only a 2xx response's JSON (an empty body is `{}`),
//! so every answer becomes a JSON object here. JSON on stdout after exit 0 is sent as it is;
//! an exit-2 block (the only way a command hook blocks Claude Code's `PreCompact`,
//! `TaskCompleted` and a few more) becomes `decision: "block"` with the reason, which Claude
//! Code's HTTP hooks turn into the same blocking error; text that is not JSON, or an error
//! exit, is kept as a `systemMessage` so that nothing the hooks said is lost.

use hookd_core::dialect::HostAnswer;
use serde_json::{Map, Value};

/// The JSON object body for `answer`.
pub(crate) fn http_body(answer: &HostAnswer) -> Value {
    let stdout = answer.stdout.trim();
    let stderr = answer.stderr.trim();
    let mut body = match serde_json::from_str::<Value>(stdout) {
        Ok(Value::Object(map)) => map,
        _ => {
            let mut map = Map::new();
            if !stdout.is_empty() {
                map.insert("systemMessage".to_owned(), Value::from(stdout));
            }
            map
        }
    };
    match answer.exit_code {
        0 => {}
        2 => {
            let reason = if stderr.is_empty() {
                "No reason provided"
            } else {
                stderr
            };
            body.insert("decision".to_owned(), Value::from("block"));
            body.insert("reason".to_owned(), Value::from(reason));
        }
        _ if !stderr.is_empty() => {
            let message = match body.get("systemMessage").and_then(Value::as_str) {
                Some(earlier) => format!("{earlier}\n{stderr}"),
                None => stderr.to_owned(),
            };
            body.insert("systemMessage".to_owned(), Value::from(message));
        }
        _ => {}
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(stdout: &str, stderr: &str, exit_code: i32) -> HostAnswer {
        HostAnswer {
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
            exit_code,
        }
    }

    #[test]
    fn answers_become_json_objects() {
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
        for (given, expected) in [
            (answer("", "", 0), json!({})),
            (answer("\n", "", 0), json!({})),
            (answer(deny, "", 0), serde_json::from_str(deny).unwrap()),
            (
                answer("", "compaction refused\n", 2),
                json!({"decision": "block", "reason": "compaction refused"}),
            ),
            (
                answer("", "", 2),
                json!({"decision": "block", "reason": "No reason provided"}),
            ),
            (answer("plain", "", 0), json!({"systemMessage": "plain"})),
            (answer("", "oops", 1), json!({"systemMessage": "oops"})),
            (
                answer(r#"{"systemMessage":"a"}"#, "b", 1),
                json!({"systemMessage": "a\nb"}),
            ),
            (answer("[1]", "", 0), json!({"systemMessage": "[1]"})),
        ] {
            assert_eq!(http_body(&given), expected, "{given:?}");
        }
    }
}
