//! Writing compact JSON straight into a buffer, entry by entry.
//!
//! What serde_json's compact serializer writes, for the cases where building the value first
//! would cost more than the writing: a hook's stdin payload (`payload`), and the daemon's
//! per-event and per-chunk results. The bytes are the ones serialising an equal value with
//! serde_json gives (tests compare the two on arbitrary strings and values).
//!
//! Strings, keys and `serde_json::Value`s are written here rather than through serde_json:
//! a string is scanned eight bytes at a time for what JSON must escape and copied in runs,
//! where serde_json looks each byte up in a table. A streamed chunk's payload and result hold
//! a few kilobytes of text, so this is a large share of their cost.

use serde::Serialize;
use serde_json::Value;

/// A JSON object being written; [`Object::end`] closes it.
pub struct Object<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Object<'a> {
    /// Opens an object at the end of `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Object<'a> {
        out.push(b'{');
        Object { out, first: true }
    }

    /// Writes `"key":` (after a comma when it is not the first entry).
    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        write_str(self.out, key);
        self.out.push(b':');
    }

    /// An entry whose value is a string.
    pub fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        write_str(self.out, value);
    }

    /// An entry whose value is a JSON value.
    pub fn json(&mut self, key: &str, value: &Value) {
        self.key(key);
        write_value(self.out, value);
    }

    /// An entry whose value is a JSON value or `null`.
    pub fn json_or_null(&mut self, key: &str, value: Option<&Value>) {
        self.key(key);
        match value {
            Some(value) => write_value(self.out, value),
            None => self.out.extend_from_slice(b"null"),
        }
    }

    /// An entry whose value is an array of JSON values.
    pub fn json_list(&mut self, key: &str, values: &[Value]) {
        self.key(key);
        write_list(self.out, values);
    }

    /// An entry whose value is `true` or `false`.
    pub fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// An entry whose value is an integer.
    pub fn int(&mut self, key: &str, value: impl itoa::Integer) {
        self.key(key);
        write_int(self.out, value);
    }

    /// An entry whose value is an integer or `null`.
    pub fn int_or_null(&mut self, key: &str, value: Option<impl itoa::Integer>) {
        self.key(key);
        match value {
            Some(value) => write_int(self.out, value),
            None => self.out.extend_from_slice(b"null"),
        }
    }

    /// An entry whose value is a floating-point number, as serde_json writes an `f64`
    /// (`null` when it is not finite).
    pub fn float(&mut self, key: &str, value: f64) {
        self.key(key);
        write_float(self.out, value);
    }

    /// An entry whose value is a string or `null`.
    pub fn str_or_null(&mut self, key: &str, value: Option<&str>) {
        self.key(key);
        match value {
            Some(value) => write_str(self.out, value),
            None => self.out.extend_from_slice(b"null"),
        }
    }

    /// An entry whose value is an array of strings.
    pub fn strs(&mut self, key: &str, values: &[String]) {
        self.key(key);
        self.out.push(b'[');
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            write_str(self.out, value);
        }
        self.out.push(b']');
    }

    /// An entry whose value is anything serializable (a `serde_json::Value`, a number, an
    /// option, ...).
    pub fn value<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        self.key(key);
        write(self.out, value);
    }

    /// An entry whose value is given already as JSON text, written as it is.
    pub fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.out.extend_from_slice(json.as_bytes());
    }

    /// An entry whose value is an object, written through the returned writer (which must be
    /// ended before this one is used again).
    pub fn object(&mut self, key: &str) -> Object<'_> {
        self.key(key);
        Object::new(self.out)
    }

    /// An entry whose value is an array, written through the returned writer.
    pub fn array(&mut self, key: &str) -> Array<'_> {
        self.key(key);
        Array::new(self.out)
    }

    /// How many bytes the buffer holds so far (this object's and everything before it).
    pub fn written(&self) -> usize {
        self.out.len()
    }

    /// Closes the object.
    pub fn end(self) {
        self.out.push(b'}');
    }
}

/// A JSON array being written; [`Array::end`] closes it.
pub struct Array<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Array<'a> {
    fn new(out: &'a mut Vec<u8>) -> Array<'a> {
        out.push(b'[');
        Array { out, first: true }
    }

    fn comma(&mut self) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
    }

    /// An item that is anything serializable.
    pub fn value<T: Serialize + ?Sized>(&mut self, value: &T) {
        self.comma();
        write(self.out, value);
    }

    /// An item that is an object, written through the returned writer.
    pub fn object(&mut self) -> Object<'_> {
        self.comma();
        Object::new(self.out)
    }

    /// How many bytes the buffer holds so far (this array's and everything before it).
    pub fn written(&self) -> usize {
        self.out.len()
    }

    /// Closes the array.
    pub fn end(self) {
        self.out.push(b']');
    }
}

/// Appends the compact JSON of `value`.
pub fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing into a Vec cannot fail, and map keys here are always strings.
    let _ = serde_json::to_writer(out, value);
}

/// Appends an integer as serde_json writes it (with the same formatter, `itoa`).
pub fn write_int(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Appends an `f64` as serde_json writes it: with the same formatter (`zmij`) when it is
/// finite, `null` when it is not.
pub fn write_float(out: &mut Vec<u8>, value: f64) {
    if value.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(value).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

/// Appends `text` as a JSON string's contents, escaped as serde_json escapes it but without
/// the quotes: the escaped text of a string that is built piece by piece is the concatenation
/// of its pieces' escaped texts.
pub fn push_escaped(out: &mut String, text: &str) {
    let mut rest = text;
    loop {
        let at = first_escape(rest.as_bytes());
        // `at` is at an ASCII byte (or the end), so a character boundary.
        let (clean, tail) = rest.split_at(at);
        out.push_str(clean);
        let Some(&byte) = tail.as_bytes().first() else {
            return;
        };
        // Escapes are ASCII.
        out.push_str(std::str::from_utf8(&escape(byte)).unwrap_or_default());
        rest = &tail[1..];
    }
}

/// Appends `text` as a JSON string, quoted and escaped as serde_json does.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut rest = text.as_bytes();
    loop {
        let at = first_escape(rest);
        out.extend_from_slice(&rest[..at]);
        let Some(&byte) = rest.get(at) else {
            break;
        };
        out.extend_from_slice(&escape(byte));
        rest = &rest[at + 1..];
    }
    out.push(b'"');
}

/// Appends the compact JSON of `value`, as serde_json writes it (numbers are written by
/// serde_json itself).
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write(out, number),
        Value::String(text) => write_str(out, text),
        Value::Array(items) => write_list(out, items),
        Value::Object(map) => {
            out.push(b'{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                // Values come from parsed JSON, whose depth serde_json bounds.
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// Appends a JSON array of `items`.
fn write_list(out: &mut Vec<u8>, items: &[Value]) {
    out.push(b'[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_value(out, item);
    }
    out.push(b']');
}

/// The index of the first byte of `bytes` that a JSON string must escape (a control
/// character, `"` or `\`), or `bytes.len()` if none.
///
/// Eight bytes at a time: for a byte `b` of a word, the top bit of `(b - n) & !b` is set when
/// `b < n` (for `n <= 0x80`), so `n = 0x20` finds control characters and `n = 1` applied to
/// `word ^ "..."` finds bytes equal to a character. A borrow can set the bit of a byte above
/// a found one, never below, so the lowest set bit is the first such byte.
fn first_escape(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOPS: u64 = 0x8080_8080_8080_8080;
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default());
        let found = (below(word, 0x20)
            | below(word ^ (ONES * u64::from(b'"')), 1)
            | below(word ^ (ONES * u64::from(b'\\')), 1))
            & TOPS;
        if found != 0 {
            return offset + (found.trailing_zeros() / 8) as usize;
        }
        offset += 8;
    }
    let tail = chunks.remainder();
    offset
        + tail
            .iter()
            .position(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\')
            .unwrap_or(tail.len())
}

/// The escape of a byte [`first_escape`] stops at, as serde_json writes it (`\u00XX` with
/// lowercase hex for the control characters without a short form); six bytes, of which the
/// short forms use two (the rest is cut off by the caller's slice).
fn escape(byte: u8) -> EscapeBytes {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => Some(b'"'),
        b'\\' => Some(b'\\'),
        0x08 => Some(b'b'),
        0x0c => Some(b'f'),
        b'\n' => Some(b'n'),
        b'\r' => Some(b'r'),
        b'\t' => Some(b't'),
        _ => None,
    };
    match short {
        Some(letter) => EscapeBytes {
            bytes: [b'\\', letter, 0, 0, 0, 0],
            len: 2,
        },
        None => EscapeBytes {
            bytes: [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            len: 6,
        },
    }
}

/// An escape sequence: its first `len` bytes.
struct EscapeBytes {
    bytes: [u8; 6],
    len: usize,
}

impl std::ops::Deref for EscapeBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The JSON type name of a value with its article (`a string`, `an object`, `null`), for
/// messages.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn writes_what_serde_json_writes() {
        let mut out = Vec::new();
        let mut top = Object::new(&mut out);
        top.str("a\"b", "é\n\u{1}");
        top.value("n", &1.5f64);
        top.value("none", &None::<u32>);
        top.raw("raw", r#"{"x":[1]}"#);
        {
            let mut inner = top.object("inner");
            inner.value("v", &json!({"k": [true, null]}));
            inner.end();
        }
        {
            let mut list = top.array("list");
            list.value("s");
            {
                let mut item = list.object();
                item.str("k", "v");
                item.end();
            }
            list.value(&7u64);
            list.end();
        }
        top.array("empty").end();
        top.object("empty_object").end();
        top.end();
        let expected = json!({
            "a\"b": "é\n\u{1}", "n": 1.5, "none": null, "raw": {"x": [1]},
            "inner": {"v": {"k": [true, null]}}, "list": ["s", {"k": "v"}, 7],
            "empty": [], "empty_object": {}
        });
        assert_eq!(String::from_utf8(out).expect("utf-8"), expected.to_string());
    }

    /// Strings with what JSON escapes (every control character, quotes, backslashes) mixed
    /// into plain ASCII and multi-byte text, at every offset within an eight-byte word.
    fn text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            4 => "[a-z ]{0,12}",
            2 => proptest::char::range('\u{0}', '\u{7f}').prop_map(String::from),
            1 => Just("\"".to_owned()),
            1 => Just("\\".to_owned()),
            1 => Just("é€😀\u{7f}\u{80}".to_owned()),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
    }

    /// Arbitrary JSON values, nested a few levels.
    fn value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            (-1e12f64..1e12).prop_map(|f| json!(f)),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((text(), inner), 0..6)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn strings_are_written_as_serde_json_writes_them(text in text()) {
            let mut out = Vec::new();
            write_str(&mut out, &text);
            let expected = serde_json::to_string(&text).expect("json");
            proptest::prop_assert_eq!(String::from_utf8(out).expect("utf-8"), expected.clone());
            let mut escaped = String::new();
            push_escaped(&mut escaped, &text);
            proptest::prop_assert_eq!(escaped, &expected[1..expected.len() - 1]);
        }

        #[test]
        fn typed_entries_are_written_as_serde_json_writes_them(
            flag in proptest::prelude::any::<bool>(),
            signed in proptest::prelude::any::<i64>(),
            unsigned in proptest::prelude::any::<u64>(),
            code in proptest::prelude::any::<Option<i32>>(),
            float in proptest::prelude::any::<f64>(),
            millis in 0.0f64..1e9,
            text in proptest::option::of(text()),
            texts in proptest::collection::vec(text(), 0..4),
        ) {
            let mut out = Vec::new();
            let mut object = Object::new(&mut out);
            object.bool("b", flag);
            object.int("i", signed);
            object.int("u", unsigned);
            object.int_or_null("c", code);
            object.float("f", float);
            object.float("m", millis);
            object.str_or_null("t", text.as_deref());
            object.strs("l", &texts);
            object.end();
            let expected = serde_json::to_string(&json!({
                "b": flag, "i": signed, "u": unsigned, "c": code, "f": float, "m": millis,
                "t": text, "l": texts,
            }))
            .expect("json");
            proptest::prop_assert_eq!(String::from_utf8(out).expect("utf-8"), expected);
        }

        #[test]
        fn values_are_written_as_serde_json_writes_them(value in value()) {
            let mut out = Vec::new();
            write_value(&mut out, &value);
            let expected = serde_json::to_string(&value).expect("json");
            proptest::prop_assert_eq!(String::from_utf8(out).expect("utf-8"), expected);
        }
    }

    #[test]
    fn floats_that_are_not_finite_are_null_and_others_keep_their_shortest_form() {
        for (value, expected) in [
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
            (f64::NEG_INFINITY, "null"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.5, "1.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
        ] {
            let mut out = Vec::new();
            write_float(&mut out, value);
            assert_eq!(String::from_utf8(out).expect("utf-8"), expected);
            assert_eq!(serde_json::to_string(&value).expect("json"), expected);
        }
    }

    #[test]
    fn every_byte_that_needs_escaping_is_found_at_every_position() {
        for byte in 0u8..=0x7f {
            let needs = byte < 0x20 || byte == b'"' || byte == b'\\';
            for len in 1..20 {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = byte;
                    let expected = if needs { at } else { len };
                    assert_eq!(
                        first_escape(&bytes),
                        expected,
                        "byte {byte:#x} at {at} of {len}"
                    );
                }
            }
        }
        // Bytes of multi-byte characters never need escaping.
        let text = "é€😀".repeat(5);
        assert_eq!(first_escape(text.as_bytes()), text.len());
    }
}
