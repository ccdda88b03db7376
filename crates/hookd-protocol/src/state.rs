//! The session-state messages: `state` requests (`get`, `set`, `delete`, `list` on one
//! session's keys) and their `state` answers. The store behind them is `hookd-state`; what
//! is stored is never put into any hook's payload.

use serde::{Deserialize, Serialize};

use crate::id::RequestId;

/// What a `state` request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateOp {
    /// Read `key`; the answer has `found` and, when found, `value`.
    Get,
    /// Write `value` under `key`, durably, before the answer is sent.
    Set,
    /// Remove `key`; the answer's `found` says whether it was set.
    Delete,
    /// The session's keys, sorted, in the answer's `keys`.
    List,
}

impl StateOp {
    /// The op's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            StateOp::Get => "get",
            StateOp::Set => "set",
            StateOp::Delete => "delete",
            StateOp::List => "list",
        }
    }
}

/// A request on one session's state (`"type": "state"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateRequest {
    /// The request's id.
    pub id: RequestId,
    /// What to do.
    pub op: StateOp,
    /// The session whose keys these are (the agent CLI's session id).
    pub session_id: String,
    /// The key; required by `get`, `set` and `delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The value; required by `set`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The state token hookd gave the hook (`HOOKD_STATE_TOKEN`); required by `set` and
    /// `delete`, which it allows on its own session only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// The answer to a `state` request (`"type": "state"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateResponse {
    /// The request's id.
    pub id: RequestId,
    /// `get`: the key is set; `delete`: it was set; `set`: always true; `list`: the session
    /// has at least one key.
    pub found: bool,
    /// `get` of a key that is set: its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `list`: the session's keys, sorted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientMessage, ServerMessage, encode, parse_client_message};

    #[test]
    fn state_messages_round_trip_and_parse_by_schema() {
        let cases = [
            r#"{"type":"state","id":1,"op":"set","session_id":"s","key":"k","value":"v"}"#,
            r#"{"type":"state","id":3,"op":"delete","session_id":"s","key":"k","token":"v1.a.b"}"#,
            r#"{"type":"state","id":"a","op":"get","session_id":"s","key":"k"}"#,
            r#"{"type":"state","id":2,"op":"list","session_id":"s"}"#,
        ];
        for text in cases {
            let message = parse_client_message(text.as_bytes()).unwrap();
            assert_eq!(message.type_name(), "state");
            let ClientMessage::State(request) = &message else {
                panic!("{text}");
            };
            assert_eq!(request.session_id, "s");
            let again = parse_client_message(&encode(&message)).unwrap();
            assert_eq!(again, message);
        }
        let answer = ServerMessage::State(StateResponse {
            id: 1.into(),
            found: true,
            value: Some("v".into()),
            keys: None,
        });
        assert_eq!(answer.type_name(), "state");
        assert_eq!(answer.id(), Some(&1.into()));
    }

    #[test]
    fn bad_state_requests_are_classified() {
        let cases = [
            (
                r#"{"type":"state","id":1,"op":"get","key":"k"}"#,
                "missing_field",
            ),
            (
                r#"{"type":"state","id":1,"op":"get","session_id":"","key":"k"}"#,
                "bad_request",
            ),
            (
                r#"{"type":"state","id":1,"op":"frob","session_id":"s"}"#,
                "bad_request",
            ),
            (
                r#"{"type":"state","id":1,"op":"set","session_id":"s","key":"k","value":3}"#,
                "bad_request",
            ),
        ];
        for (text, code) in cases {
            let error = parse_client_message(text.as_bytes()).unwrap_err();
            assert_eq!(error.code.as_str(), code, "{text}");
            assert_eq!(error.id, Some(1.into()), "{text}");
        }
    }
}
