//! Reading a client frame into a [`ClientMessage`], classifying every failure.
//!
//! `serde` alone would say "invalid type: integer `5`, expected a string" without naming the
//! field, and would not tell a missing field from a wrong one by anything but its message. So
//! the frame is first parsed as untyped JSON and checked against a small schema of each
//! message type (which fields, which JSON kinds, which are required); only a frame that passes
//! is handed to `serde`. The schema is checked against the types by the round-trip tests.

use serde_json::{Map, Value};

use crate::error::{ErrorCode, ProtocolError};
use crate::id::RequestId;
use crate::request::ClientMessage;

/// The JSON kind a field must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A request id: an unsigned integer or a string.
    Id,
    /// Any string.
    String,
    /// An absolute path, as a string starting with `/`.
    AbsolutePath,
    /// An unsigned integer that fits in 32 bits.
    U32,
    /// An unsigned integer that fits in 64 bits.
    U64,
    /// `true` or `false`.
    Bool,
    /// Any object.
    Object,
    /// An object whose values are all strings (an environment).
    StringMap,
    /// A settings scope: `"user"` or `"project"`.
    Scope,
    /// A string that is not empty.
    NonEmptyString,
    /// An array of trusted-hook keys: objects with string `name` and `command`, an optional
    /// string `event`, an optional object `settings`, an optional array `scripts` of objects
    /// with string `path` and `sha256`, and an optional array `uncovered` of strings.
    TrustedHooks,
}

/// One field of a message type.
struct Field {
    name: &'static str,
    kind: Kind,
    required: bool,
}

const fn required(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        required: true,
    }
}

const fn optional(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        required: false,
    }
}

const HELLO: &[Field] = &[
    required("protocol", Kind::U32),
    required("client", Kind::String),
    optional("env", Kind::StringMap),
];

const EVENT: &[Field] = &[
    required("id", Kind::Id),
    required("event", Kind::String),
    optional("input", Kind::Object),
    required("cwd", Kind::AbsolutePath),
    optional("session_id", Kind::String),
    optional("transcript_path", Kind::String),
    optional("env", Kind::StringMap),
    optional("stream_hooks", Kind::Bool),
    optional("plans_dir", Kind::String),
    optional("project_dir", Kind::AbsolutePath),
    optional("relayed_by", Kind::String),
    optional("detach", Kind::Bool),
];

const CANCEL: &[Field] = &[required("id", Kind::Id), required("target", Kind::Id)];

const LIST: &[Field] = &[
    required("id", Kind::Id),
    required("cwd", Kind::AbsolutePath),
];

const ID_ONLY: &[Field] = &[required("id", Kind::Id)];

const STATE: &[Field] = &[
    required("id", Kind::Id),
    required("op", Kind::NonEmptyString),
    required("session_id", Kind::NonEmptyString),
    optional("key", Kind::String),
    optional("value", Kind::String),
];

const SUBSCRIBE: &[Field] = &[
    required("id", Kind::Id),
    optional("cwd", Kind::AbsolutePath),
];

const ENABLE: &[Field] = &[
    required("id", Kind::Id),
    required("cwd", Kind::AbsolutePath),
    required("name", Kind::NonEmptyString),
];

const DISABLE: &[Field] = &[
    required("id", Kind::Id),
    required("cwd", Kind::AbsolutePath),
    required("name", Kind::NonEmptyString),
    optional("scope", Kind::Scope),
];

const ENABLE_ALL: &[Field] = &[
    required("id", Kind::Id),
    required("cwd", Kind::AbsolutePath),
];

const DISABLE_ALL: &[Field] = &[
    required("id", Kind::Id),
    required("cwd", Kind::AbsolutePath),
    optional("scope", Kind::Scope),
];

const TRUST: &[Field] = &[
    required("id", Kind::Id),
    required("cwd", Kind::AbsolutePath),
    required("hooks", Kind::TrustedHooks),
    optional("anyway", Kind::Bool),
];

const TRUST_LIST: &[Field] = &[
    required("id", Kind::Id),
    optional("cwd", Kind::AbsolutePath),
];

const STREAM_OPEN: &[Field] = &[
    required("id", Kind::Id),
    required("event", Kind::String),
    required("cwd", Kind::AbsolutePath),
    optional("session_id", Kind::String),
    optional("transcript_path", Kind::String),
    optional("env", Kind::StringMap),
    optional("plans_dir", Kind::String),
    optional("input", Kind::Object),
];

const CHUNK: &[Field] = &[
    required("id", Kind::Id),
    required("seq", Kind::U64),
    required("llm_response", Kind::Object),
];

const HOOKED_EVENTS: &[Field] = &[
    required("id", Kind::Id),
    required("cwd", Kind::AbsolutePath),
    optional("subscribe", Kind::Bool),
];

/// The schema of a message type, or `None` for an unknown type.
fn schema(type_name: &str) -> Option<&'static [Field]> {
    match type_name {
        "hello" => Some(HELLO),
        "event" => Some(EVENT),
        "cancel" => Some(CANCEL),
        "list" => Some(LIST),
        "status" | "ping" | "reload" | "stats" => Some(ID_ONLY),
        "subscribe" => Some(SUBSCRIBE),
        "enable" => Some(ENABLE),
        "disable" => Some(DISABLE),
        "enable_all" => Some(ENABLE_ALL),
        "disable_all" => Some(DISABLE_ALL),
        "trust_preview" | "untrust" => Some(LIST),
        "trust" => Some(TRUST),
        "trust_list" => Some(TRUST_LIST),
        "stream_open" => Some(STREAM_OPEN),
        "chunk" => Some(CHUNK),
        "stream_close" => Some(ID_ONLY),
        "hooked_events" => Some(HOOKED_EVENTS),
        "state" => Some(STATE),
        _ => None,
    }
}

/// The tag of a message, read without building the rest of it.
#[derive(serde::Deserialize)]
struct Tag<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
}

/// A `chunk` frame read in one pass, tag included. serde's derive refuses a field given
/// twice, so a frame with two `type`s (which the classifying path reads by the last one) is
/// not taken here, exactly as the tag pass would not take it.
#[derive(serde::Deserialize)]
struct ChunkFrame {
    #[serde(rename = "type")]
    _kind: ChunkTag,
    id: RequestId,
    seq: u64,
    llm_response: Map<String, Value>,
}

/// The only `type` a [`ChunkFrame`] reads.
#[derive(serde::Deserialize)]
enum ChunkTag {
    #[serde(rename = "chunk")]
    Chunk,
}

/// The typed fast path for the hot request types: the tag is read first (other fields are
/// skipped, not built), then the request struct is deserialized straight from the bytes. A
/// frame that starts like a `chunk` (a look at its first fields) is read in one pass instead.
///
/// It answers only when it reaches exactly the message the classifying path would (the
/// schema's extra checks are repeated here); on anything unusual it returns `None` and the
/// classifying path decides, so error messages never depend on which path ran.
///
/// Two things serde would let through are ruled out first (both found by the property tests
/// in `tests/fuzz_frames.rs`): derived structs also read a JSON array, field by field, so
/// `["ping"]` would be a ping with id `"ping"`; and fields serde skips are not checked for
/// UTF-8, so a frame with invalid bytes in an unknown field would be accepted.
fn parse_fast(body: &[u8]) -> Option<ClientMessage> {
    let text = std::str::from_utf8(body).ok()?;
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    if crate::fast::peek_chunk_id(body).is_some() {
        if let Ok(frame) = serde_json::from_str::<ChunkFrame>(text) {
            return Some(ClientMessage::Chunk(crate::request::ChunkRequest {
                id: frame.id,
                seq: frame.seq,
                llm_response: frame.llm_response,
            }));
        }
    }
    let tag: Tag<'_> = serde_json::from_str(text).ok()?;
    match tag.kind.as_deref()? {
        "event" => {
            let request: crate::request::EventRequest = serde_json::from_str(text).ok()?;
            let absolute = request.cwd.starts_with('/')
                && request
                    .project_dir
                    .as_deref()
                    .is_none_or(|dir| dir.starts_with('/'));
            absolute.then_some(ClientMessage::Event(request))
        }
        "ping" => serde_json::from_str(text).ok().map(ClientMessage::Ping),
        "chunk" => serde_json::from_str(text).ok().map(ClientMessage::Chunk),
        _ => None,
    }
}

/// Parses one client frame body, or says precisely why it is not a valid message.
///
/// The error carries the frame's `id` whenever one could be read, so the `error` frame can
/// be matched to the request. Optional fields given as `null` count as absent. Unknown fields
/// are ignored. Never panics, whatever the input.
pub fn parse_client_message(body: &[u8]) -> Result<ClientMessage, ProtocolError> {
    match parse_fast(body) {
        Some(message) => Ok(message),
        None => parse_classified(body),
    }
}

/// The classifying path: untyped JSON checked against the message type's schema, then serde.
fn parse_classified(body: &[u8]) -> Result<ClientMessage, ProtocolError> {
    let text = std::str::from_utf8(body).map_err(|error| {
        ProtocolError::new(
            ErrorCode::BadJson,
            format!(
                "the frame is not valid UTF-8 (invalid byte at offset {})",
                error.valid_up_to()
            ),
        )
    })?;
    let bad_json = |error: &dyn std::fmt::Display| {
        ProtocolError::new(
            ErrorCode::BadJson,
            format!("the frame is not valid JSON: {error}"),
        )
    };
    // Past serde_json's default limit, nesting up to hookd's own is read all the same: a
    // model-shaped tool input may be that deep (`crate::depth`).
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) if crate::depth::is_recursion_limit(&error) => {
            crate::depth::from_slice_deep(body).map_err(|error| bad_json(&error))?
        }
        Err(error) => return Err(bad_json(&error)),
    };
    let Value::Object(mut object) = value else {
        return Err(ProtocolError::new(
            ErrorCode::BadRequest,
            format!(
                "a message must be a JSON object, not {}",
                describe_kind(&value)
            ),
        ));
    };
    let id = read_id(&object)?;
    let fail =
        |code: ErrorCode, message: String| ProtocolError::new(code, message).with_id(id.clone());

    let type_name = match object.get("type") {
        None | Some(Value::Null) => {
            return Err(fail(
                ErrorCode::MissingField,
                "missing field `type`".to_owned(),
            ));
        }
        Some(Value::String(name)) => name.clone(),
        Some(other) => {
            return Err(fail(
                ErrorCode::BadRequest,
                format!(
                    "field `type` must be a string, not {}",
                    describe_kind(other)
                ),
            ));
        }
    };
    let Some(fields) = schema(&type_name) else {
        return Err(fail(
            ErrorCode::UnknownType,
            format!(
                "unknown message type {type_name:?}; expected one of {}",
                ClientMessage::TYPES.join(", ")
            ),
        ));
    };
    for field in fields {
        check_field(&mut object, &type_name, field)
            .map_err(|(code, message)| fail(code, message))?;
    }
    serde_json::from_value(Value::Object(object)).map_err(|error| {
        // The schema check above should make this unreachable; if the two ever disagree,
        // the client still gets a precise-enough answer.
        fail(
            ErrorCode::BadRequest,
            format!("invalid `{type_name}` message: {error}"),
        )
    })
}

/// Reads the `id` field, if present. An `id` of the wrong kind is a `bad_request` of its own,
/// without an id, because echoing an invalid id back would confuse the client further.
fn read_id(object: &Map<String, Value>) -> Result<Option<RequestId>, ProtocolError> {
    match object.get("id") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => RequestId::from_json(value).map(Some).ok_or_else(|| {
            ProtocolError::new(
                ErrorCode::BadRequest,
                format!(
                    "field `id` must be an unsigned 64-bit integer or a string, not {}",
                    describe_kind(value)
                ),
            )
        }),
    }
}

/// Checks one field of a message against its schema entry. A `null` optional field is
/// removed, so that `serde` applies the field's default.
fn check_field(
    object: &mut Map<String, Value>,
    type_name: &str,
    field: &Field,
) -> Result<(), (ErrorCode, String)> {
    let value = match object.get(field.name) {
        None | Some(Value::Null) if field.required => {
            return Err((
                ErrorCode::MissingField,
                format!("missing field `{}` in `{type_name}` message", field.name),
            ));
        }
        None => return Ok(()),
        Some(Value::Null) => {
            object.remove(field.name);
            return Ok(());
        }
        Some(value) => value,
    };
    let wrong = |expected: &str| {
        Err((
            ErrorCode::BadRequest,
            format!(
                "field `{}` of `{type_name}` message must be {expected}, not {}",
                field.name,
                describe_kind(value)
            ),
        ))
    };
    match field.kind {
        Kind::Id if RequestId::from_json(value).is_none() => {
            wrong("an unsigned 64-bit integer or a string")
        }
        Kind::String | Kind::AbsolutePath | Kind::Scope | Kind::NonEmptyString
            if !value.is_string() =>
        {
            wrong("a string")
        }
        Kind::NonEmptyString if value.as_str() == Some("") => Err((
            ErrorCode::BadRequest,
            format!(
                "field `{}` of `{type_name}` message must not be empty",
                field.name
            ),
        )),
        Kind::Scope if !matches!(value.as_str(), Some("user" | "project")) => Err((
            ErrorCode::BadRequest,
            format!(
                "field `{}` of `{type_name}` message must be \"user\" or \"project\", not {value}",
                field.name
            ),
        )),
        Kind::AbsolutePath if !value.as_str().is_some_and(|path| path.starts_with('/')) => Err((
            ErrorCode::BadRequest,
            format!(
                "field `{}` of `{type_name}` message must be an absolute path, not {value}",
                field.name
            ),
        )),
        Kind::U32 if value.as_u64().and_then(|n| u32::try_from(n).ok()).is_none() => {
            wrong("an unsigned 32-bit integer")
        }
        Kind::U64 if value.as_u64().is_none() => wrong("an unsigned 64-bit integer"),
        Kind::Bool if !value.is_boolean() => wrong("true or false"),
        Kind::Object | Kind::StringMap if !value.is_object() => wrong("an object"),
        Kind::StringMap => match value
            .as_object()
            .and_then(|map| map.iter().find(|(_, entry)| !entry.is_string()))
        {
            Some((key, entry)) => Err((
                ErrorCode::BadRequest,
                format!(
                    "field `{}` of `{type_name}` message must map names to strings, but {key:?} \
                     is {}",
                    field.name,
                    describe_kind(entry)
                ),
            )),
            None => Ok(()),
        },
        Kind::TrustedHooks => check_trusted_hooks(value).map_err(|problem| {
            (
                ErrorCode::BadRequest,
                format!("field `{}` of `{type_name}` message {problem}", field.name),
            )
        }),
        _ => Ok(()),
    }
}

/// Checks an array of trusted-hook keys; the error completes "field `hooks` of ... message".
fn check_trusted_hooks(value: &Value) -> Result<(), String> {
    let Value::Array(hooks) = value else {
        return Err(format!("must be an array, not {}", describe_kind(value)));
    };
    for (index, hook) in hooks.iter().enumerate() {
        let Value::Object(hook) = hook else {
            return Err(format!(
                "must hold objects, but item {index} is {}",
                describe_kind(hook)
            ));
        };
        for (key, required) in [("name", true), ("command", true), ("event", false)] {
            match hook.get(key) {
                Some(Value::String(_)) => {}
                None | Some(Value::Null) if !required => {}
                None | Some(Value::Null) => {
                    return Err(format!("item {index} lacks a string `{key}`"));
                }
                Some(other) => {
                    return Err(format!(
                        "item {index}: `{key}` must be a string, not {}",
                        describe_kind(other)
                    ));
                }
            }
        }
        match hook.get("settings") {
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(other) => {
                return Err(format!(
                    "item {index}: `settings` must be an object, not {}",
                    describe_kind(other)
                ));
            }
        }
        match hook.get("uncovered") {
            None => {}
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
            Some(other) => {
                return Err(format!(
                    "item {index}: `uncovered` must be an array of strings, not {}",
                    describe_kind(other)
                ));
            }
        }
        let scripts = match hook.get("scripts") {
            None => continue,
            Some(Value::Array(scripts)) => scripts,
            Some(other) => {
                return Err(format!(
                    "item {index}: `scripts` must be an array, not {}",
                    describe_kind(other)
                ));
            }
        };
        for script in scripts {
            let valid = script.as_object().is_some_and(|script| {
                ["path", "sha256"]
                    .iter()
                    .all(|key| script.get(*key).is_some_and(Value::is_string))
            });
            if !valid {
                return Err(format!(
                    "item {index}: each of `scripts` must be an object with string `path` and \
                     `sha256`, not {}",
                    describe_kind(script)
                ));
            }
        }
    }
    Ok(())
}

/// Names a JSON value's kind for error messages, with the value itself when it is short.
fn describe_kind(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => format!("the boolean {flag}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::encode::encode;

    /// Parses `input` and compares the error code, the id and a part of the message.
    fn check(input: &str, code: ErrorCode, id: Option<RequestId>, message_part: &str) {
        let error = parse_client_message(input.as_bytes()).unwrap_err();
        assert_eq!(error.code, code, "input: {input}; error: {error}");
        assert_eq!(error.id, id, "input: {input}; error: {error}");
        assert!(
            error.message.contains(message_part),
            "input: {input}; message {:?} lacks {message_part:?}",
            error.message
        );
    }

    fn number(n: u64) -> Option<RequestId> {
        Some(RequestId::Number(n))
    }

    #[test]
    fn the_fast_path_reads_chunks_as_the_classifying_path_does_or_leaves_them_to_it() {
        let frames = [
            r#"{"type":"chunk","id":1,"seq":0,"llm_response":{"text":"a"}}"#,
            r#"{"type": "chunk", "id": "s", "seq": 2, "llm_response": {}, "extra": [1, {}]}"#,
            r#"{"id":1,"seq":0,"llm_response":{},"type":"chunk"}"#,
            // Two tags: the classifying path reads the last one.
            r#"{"type":"chunk","id":1,"seq":0,"llm_response":{},"type":"event"}"#,
            r#"{"type":"chunk","id":1,"seq":0,"llm_response":{},"type":"chunk"}"#,
            r#"{"type":"event","id":1,"seq":0,"llm_response":{},"type":"chunk"}"#,
            // Repeated or wrong fields.
            r#"{"type":"chunk","id":1,"id":2,"seq":0,"llm_response":{}}"#,
            r#"{"type":"chunk","id":1,"seq":0,"seq":1,"llm_response":{}}"#,
            r#"{"type":"chunk","id":1,"seq":-1,"llm_response":{}}"#,
            r#"{"type":"chunk","id":1,"seq":0,"llm_response":[]}"#,
            r#"{"type":"chunk","id":1,"seq":0}"#,
            r#"{"type":"chunk","id":null,"seq":0,"llm_response":{}}"#,
            r#"{"type":"chunk","id":1,"seq":0,"llm_response":{},"type":null}"#,
        ];
        for frame in frames {
            let classified = parse_classified(frame.as_bytes());
            if let Some(fast) = parse_fast(frame.as_bytes()) {
                assert_eq!(Ok(fast), classified.clone(), "{frame}");
            }
            assert_eq!(
                parse_client_message(frame.as_bytes()),
                classified,
                "{frame}"
            );
        }
        // The common shape takes the fast path.
        assert!(parse_fast(frames[0].as_bytes()).is_some());
        assert!(parse_fast(frames[2].as_bytes()).is_some());
    }

    #[test]
    fn malformed_frames() {
        use ErrorCode::*;
        check("", BadJson, None, "not valid JSON");
        check("{", BadJson, None, "not valid JSON");
        check(
            "{\"type\":\"ping\",\"id\":1} x",
            BadJson,
            None,
            "trailing characters",
        );
        check("\u{0}", BadJson, None, "not valid JSON");
        check(
            "[]",
            BadRequest,
            None,
            "must be a JSON object, not an array",
        );
        check("42", BadRequest, None, "not the number 42");
        check("null", BadRequest, None, "not null");
        check("\"ping\"", BadRequest, None, "not a string");
        // serde's derived structs read arrays field by field; the fast path must not.
        check(r#"["ping"]"#, BadRequest, None, "not an array");
        check(
            r#"["event",1,"BeforeTool",{},"/p"]"#,
            BadRequest,
            None,
            "not an array",
        );
    }

    #[test]
    fn invalid_utf8_is_bad_json() {
        let error = parse_client_message(b"{\"type\":\"p\xffing\"}").unwrap_err();
        assert_eq!(error.code, ErrorCode::BadJson);
        assert!(error.message.contains("offset 10"), "{}", error.message);
        // In a field the fast path would skip, too.
        let error =
            parse_client_message(b"{\"type\":\"ping\",\"id\":4,\"x\":\"\x80\"}").unwrap_err();
        assert_eq!(error.code, ErrorCode::BadJson);
    }

    #[test]
    fn type_problems() {
        use ErrorCode::*;
        check(
            r#"{"id":1}"#,
            MissingField,
            number(1),
            "missing field `type`",
        );
        check(
            r#"{"id":1,"type":null}"#,
            MissingField,
            number(1),
            "missing field `type`",
        );
        check(
            r#"{"id":"a","type":7}"#,
            BadRequest,
            Some("a".into()),
            "`type` must be a string, not the number 7",
        );
        check(
            r#"{"id":2,"type":"frobnicate"}"#,
            UnknownType,
            number(2),
            "\"frobnicate\"",
        );
        check(
            r#"{"id":2,"type":"Ping"}"#,
            UnknownType,
            number(2),
            "hello, event, cancel, list, status, ping, subscribe, reload, enable, disable, \
             enable_all, disable_all",
        );
        // Server message types are not client message types.
        check(
            r#"{"id":2,"type":"pong"}"#,
            UnknownType,
            number(2),
            "\"pong\"",
        );
    }

    #[test]
    fn id_problems() {
        use ErrorCode::*;
        check(
            r#"{"type":"ping"}"#,
            MissingField,
            None,
            "missing field `id` in `ping` message",
        );
        check(
            r#"{"type":"ping","id":null}"#,
            MissingField,
            None,
            "missing field `id`",
        );
        check(
            r#"{"type":"ping","id":-1}"#,
            BadRequest,
            None,
            "`id` must be an unsigned 64-bit integer or a string, not the number -1",
        );
        check(
            r#"{"type":"ping","id":1.5}"#,
            BadRequest,
            None,
            "not the number 1.5",
        );
        check(
            r#"{"type":"ping","id":[1]}"#,
            BadRequest,
            None,
            "not an array",
        );
        check(
            r#"{"type":"frob","id":{}}"#,
            BadRequest,
            None,
            "not an object",
        );
        check(
            r#"{"type":"cancel","id":1}"#,
            MissingField,
            number(1),
            "missing field `target` in `cancel` message",
        );
        check(
            r#"{"type":"cancel","id":1,"target":true}"#,
            BadRequest,
            number(1),
            "field `target` of `cancel` message must be an unsigned 64-bit integer or a string, not the boolean true",
        );
    }

    #[test]
    fn trust_problems() {
        use ErrorCode::*;
        check(
            r#"{"type":"trust","id":1,"cwd":"/p"}"#,
            MissingField,
            number(1),
            "missing field `hooks` in `trust` message",
        );
        check(
            r#"{"type":"trust","id":1,"cwd":"/p","hooks":{}}"#,
            BadRequest,
            number(1),
            "field `hooks` of `trust` message must be an array, not an object",
        );
        check(
            r#"{"type":"trust","id":1,"cwd":"/p","hooks":[{"name":"n"}]}"#,
            BadRequest,
            number(1),
            "item 0 lacks a string `command`",
        );
        check(
            r#"{"type":"trust","id":1,"cwd":"/p","hooks":[{"name":"n","command":"c","event":1}]}"#,
            BadRequest,
            number(1),
            "item 0: `event` must be a string, not the number 1",
        );
        check(
            r#"{"type":"trust","id":1,"cwd":"/p","hooks":[{"name":"n","command":"c","scripts":null}]}"#,
            BadRequest,
            number(1),
            "item 0: `scripts` must be an array, not null",
        );
        check(
            r#"{"type":"trust","id":1,"cwd":"/p","hooks":[{"name":"n","command":"c","scripts":[{"path":"a"}]}]}"#,
            BadRequest,
            number(1),
            "with string `path` and `sha256`",
        );
        check(
            r#"{"type":"trust_list","id":1,"cwd":"rel"}"#,
            BadRequest,
            number(1),
            "must be an absolute path",
        );
        check(
            r#"{"type":"untrust","id":1}"#,
            MissingField,
            number(1),
            "missing field `cwd` in `untrust` message",
        );
        // A valid request parses, with an event that is null or absent.
        let parsed = parse_client_message(
            br#"{"type":"trust","id":1,"cwd":"/p","hooks":[{"event":null,"name":"n","command":"c"}]}"#,
        );
        assert!(
            matches!(parsed, Ok(ClientMessage::Trust(ref request)) if request.hooks.len() == 1),
            "{parsed:?}"
        );
    }

    #[test]
    fn field_problems() {
        use ErrorCode::*;
        check(
            r#"{"type":"hello","client":"x"}"#,
            MissingField,
            None,
            "missing field `protocol` in `hello` message",
        );
        check(
            r#"{"type":"hello","protocol":1}"#,
            MissingField,
            None,
            "missing field `client`",
        );
        check(
            r#"{"type":"hello","protocol":"1","client":"x"}"#,
            BadRequest,
            None,
            "`protocol` of `hello` message must be an unsigned 32-bit integer, not a string",
        );
        check(
            r#"{"type":"hello","protocol":4294967296,"client":"x"}"#,
            BadRequest,
            None,
            "unsigned 32-bit integer",
        );
        check(
            r#"{"type":"hello","protocol":1,"client":"x","env":["A=b"]}"#,
            BadRequest,
            None,
            "`env` of `hello` message must be an object, not an array",
        );
        check(
            r#"{"type":"hello","protocol":1,"client":"x","env":{"A":"b","N":1}}"#,
            BadRequest,
            None,
            "must map names to strings, but \"N\" is the number 1",
        );
        check(
            r#"{"type":"event","id":"e","cwd":"/p"}"#,
            MissingField,
            Some("e".into()),
            "missing field `event` in `event` message",
        );
        check(
            r#"{"type":"event","id":3,"event":"BeforeTool"}"#,
            MissingField,
            number(3),
            "missing field `cwd` in `event` message",
        );
        check(
            r#"{"type":"event","id":3,"event":"BeforeTool","cwd":"rel/dir"}"#,
            BadRequest,
            number(3),
            "`cwd` of `event` message must be an absolute path, not \"rel/dir\"",
        );
        check(
            r#"{"type":"event","id":3,"event":"BeforeTool","cwd":"/p/sub","project_dir":"p"}"#,
            BadRequest,
            number(3),
            "`project_dir` of `event` message must be an absolute path, not \"p\"",
        );
        check(
            r#"{"type":"event","id":3,"event":"BeforeTool","cwd":""}"#,
            BadRequest,
            number(3),
            "absolute path",
        );
        check(
            r#"{"type":"event","id":3,"event":5,"cwd":"/p"}"#,
            BadRequest,
            number(3),
            "`event` of `event` message must be a string, not the number 5",
        );
        check(
            r#"{"type":"event","id":3,"event":"E","cwd":"/p","input":[]}"#,
            BadRequest,
            number(3),
            "`input` of `event` message must be an object, not an array",
        );
        check(
            r#"{"type":"event","id":3,"event":"E","cwd":"/p","stream_hooks":"yes"}"#,
            BadRequest,
            number(3),
            "`stream_hooks` of `event` message must be true or false, not a string",
        );
        check(
            r#"{"type":"event","id":3,"event":"E","cwd":"/p","session_id":1}"#,
            BadRequest,
            number(3),
            "`session_id` of `event` message must be a string",
        );
        check(
            r#"{"type":"list","id":4}"#,
            MissingField,
            number(4),
            "missing field `cwd` in `list` message",
        );
        check(
            r#"{"type":"list","id":4,"cwd":null}"#,
            MissingField,
            number(4),
            "missing field `cwd`",
        );
        check(
            r#"{"type":"subscribe","id":5,"cwd":"rel"}"#,
            BadRequest,
            number(5),
            "`cwd` of `subscribe` message must be an absolute path",
        );
        check(
            r#"{"type":"enable","id":6,"cwd":"/p"}"#,
            MissingField,
            number(6),
            "missing field `name` in `enable` message",
        );
        check(
            r#"{"type":"enable","id":6,"cwd":"/p","name":""}"#,
            BadRequest,
            number(6),
            "`name` of `enable` message must not be empty",
        );
        check(
            r#"{"type":"disable","id":7,"cwd":"/p","name":"n","scope":"system"}"#,
            BadRequest,
            number(7),
            "`scope` of `disable` message must be \"user\" or \"project\", not \"system\"",
        );
        check(
            r#"{"type":"disable_all","id":8,"cwd":"/p","scope":3}"#,
            BadRequest,
            number(8),
            "`scope` of `disable_all` message must be a string, not the number 3",
        );
        check(
            r#"{"type":"enable_all","id":9}"#,
            MissingField,
            number(9),
            "missing field `cwd` in `enable_all` message",
        );
    }

    #[test]
    fn nulls_and_unknown_fields_are_tolerated() {
        let message = parse_client_message(
            br#"{"type":"event","id":9,"event":"BeforeTool","cwd":"/p","input":null,
                "session_id":null,"env":null,"stream_hooks":null,"plans_dir":null,"extra":[1]}"#,
        )
        .unwrap();
        let ClientMessage::Event(event) = message else {
            panic!("not an event: {message:?}");
        };
        assert!(event.input.is_empty());
        assert_eq!(event.session_id, "");
        assert_eq!(event.env, None);
        assert!(!event.stream_hooks);
        assert_eq!(event.plans_dir, None);
    }

    /// A tiny deterministic generator, so the fuzz-style tests need no extra crate and always
    /// test the same inputs.
    pub(crate) struct XorShift(pub(crate) u64);

    impl XorShift {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Whatever the input, parsing returns, and its answer is consistent: a parsed message
    /// re-encodes to a frame that parses to the same message, and `bad_json` is given exactly
    /// when the bytes are not a JSON document.
    fn check_consistent(input: &[u8]) {
        let is_json = serde_json::from_slice::<Value>(input).is_ok();
        match parse_client_message(input) {
            Ok(message) => {
                assert_eq!(parse_client_message(&encode(&message)).unwrap(), message);
            }
            Err(error) => assert_eq!(error.code == ErrorCode::BadJson, !is_json, "{error}"),
        }
    }

    #[test]
    fn random_and_mutated_frames_never_panic() {
        let seeds: &[&[u8]] = &[
            br#"{"type":"hello","protocol":1,"client":"t/1","env":{"A":"b"}}"#,
            br#"{"type":"event","id":1,"event":"BeforeTool","input":{"tool_name":"x","tool_input":{"a":[1,2]}},"cwd":"/p","session_id":"s","transcript_path":"/t","env":{"K":"v"},"stream_hooks":true,"plans_dir":"/plans"}"#,
            br#"{"type":"cancel","id":"c","target":1}"#,
            br#"{"type":"list","id":2,"cwd":"/p"}"#,
            br#"{"type":"status","id":3}"#,
            br#"{"type":"ping","id":"x"}"#,
            br#"{"type":"subscribe","id":4,"cwd":"/p"}"#,
            br#"{"type":"disable","id":5,"cwd":"/p","name":"n","scope":"project"}"#,
            br#"{"type":"disable_all","id":6,"cwd":"/p","scope":"user"}"#,
        ];
        let alphabet = b"{}[]\":,0123456789-.eE truefalsnl\\/u\xff\x00abcidtype";
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for seed in seeds {
            check_consistent(seed);
            for _ in 0..2_000 {
                let mut bytes = seed.to_vec();
                for _ in 0..=rng.below(4) {
                    let at = rng.below(bytes.len() + 1);
                    match rng.below(4) {
                        0 if at < bytes.len() => {
                            bytes.remove(at);
                        }
                        1 if at < bytes.len() => bytes[at] = alphabet[rng.below(alphabet.len())],
                        2 => bytes.insert(at, alphabet[rng.below(alphabet.len())]),
                        _ => bytes.truncate(at),
                    }
                }
                check_consistent(&bytes);
            }
        }
        for _ in 0..2_000 {
            let len = rng.below(64);
            let bytes: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            check_consistent(&bytes);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            check_consistent(&bytes);
        }
    }
}
