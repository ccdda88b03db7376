//! Writing compact JSON straight into a buffer, entry by entry.
//!
//! What serde_json's compact serializer writes, for the cases where building the value first
//! would cost more than the writing: a hook's stdin payload (`payload`), and the daemon's
//! per-event and per-chunk results. Keys and strings are escaped by serde_json itself, so the
//! bytes are the ones serialising an equal value gives.

use serde::Serialize;

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
        write(self.out, key);
        self.out.push(b':');
    }

    /// An entry whose value is a string.
    pub fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        write(self.out, value);
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

/// Appends `text` as a JSON string's contents, escaped as serde_json escapes it but without
/// the quotes: the escaped text of a string that is built piece by piece is the concatenation
/// of its pieces' escaped texts.
pub fn push_escaped(out: &mut String, text: &str) {
    let mut quoted = Vec::with_capacity(text.len() + 2);
    write(&mut quoted, text);
    // serde_json writes valid UTF-8, quotes first and last.
    if let Ok(quoted) = std::str::from_utf8(&quoted) {
        if let Some(inner) = quoted.get(1..quoted.len() - 1) {
            out.push_str(inner);
        }
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
}
