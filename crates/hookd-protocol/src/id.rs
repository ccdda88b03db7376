//! Request ids: chosen by the client, echoed back verbatim by the daemon.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The id a client gives a request; every response to that request carries it back.
///
/// On the wire it is either a JSON unsigned integer (fitting in 64 bits) or a JSON string. The
/// two are distinct ids: `7` and `"7"` never match each other.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id, such as a per-connection counter.
    Number(u64),
    /// A string id, such as a UUID.
    String(String),
}

impl RequestId {
    /// Reads an id from a raw JSON value, or `None` if the value is not a valid id.
    ///
    /// Used when a frame is malformed elsewhere, so that the error frame can still carry the id.
    pub fn from_json(value: &serde_json::Value) -> Option<RequestId> {
        match value {
            serde_json::Value::Number(number) => number.as_u64().map(RequestId::Number),
            serde_json::Value::String(text) => Some(RequestId::String(text.clone())),
            _ => None,
        }
    }
}

impl From<u64> for RequestId {
    fn from(value: u64) -> Self {
        RequestId::Number(value)
    }
}

impl From<String> for RequestId {
    fn from(value: String) -> Self {
        RequestId::String(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        RequestId::String(value.to_owned())
    }
}

/// Shows the id as it appears in JSON (strings quoted), so `7` and `"7"` read differently.
impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(number) => write!(f, "{number}"),
            RequestId::String(text) => write!(f, "{text:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(value: serde_json::Value, expected: Option<RequestId>) {
        assert_eq!(RequestId::from_json(&value), expected, "input: {value}");
        if let Some(id) = expected {
            let round_trip: RequestId = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(round_trip, id);
            assert_eq!(serde_json::to_value(&id).unwrap(), value);
        }
    }

    #[test]
    fn ids_are_unsigned_integers_or_strings() {
        check(json!(0), Some(RequestId::Number(0)));
        check(json!(u64::MAX), Some(RequestId::Number(u64::MAX)));
        check(json!("abc"), Some(RequestId::from("abc")));
        check(json!("7"), Some(RequestId::from("7")));
        check(json!(""), Some(RequestId::from("")));
        check(json!(-1), None);
        check(json!(1.5), None);
        check(json!(null), None);
        check(json!(true), None);
        check(json!([1]), None);
        check(json!({"id": 1}), None);
    }

    #[test]
    fn display_quotes_strings_only() {
        assert_eq!(RequestId::Number(7).to_string(), "7");
        assert_eq!(RequestId::from("7").to_string(), "\"7\"");
    }
}
