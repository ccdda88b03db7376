//! JSON nested deeper than serde_json's default recursion limit (128 levels).
//!
//! A tool call's arguments are shaped by the model: an MCP tool's filter argument can nest
//! hundreds of levels, and the hosts' own parsers accept that (Node's `JSON.parse` has no fixed
//! limit; its `JSON.stringify` stops near 4,000 levels at its default stack). A payload hookd
//! refused for its nesting would leave the host's gate to a failure policy, so hookd reads up
//! to [`MAX_JSON_DEPTH`] levels: [`json_depth`] measures a text without recursion, and
//! [`from_slice_deep`] parses it with serde_json's recursion limit off. Everything that then
//! walks the value (parsing, translating, encoding, dropping) recurses once per level, so the
//! threads that handle such values have [`DEEP_STACK_BYTES`] of stack (reserved address
//! space: only the pages a deep value really touches are used).

use serde::de::DeserializeOwned;

/// The deepest JSON hookd evaluates: five times what the hosts' own `JSON.stringify` can
/// produce. Deeper text is refused as too deep, and the relay answers it by its policy.
pub const MAX_JSON_DEPTH: usize = 20_000;

/// The stack of a thread that handles values up to [`MAX_JSON_DEPTH`] levels deep, with room
/// to spare for unoptimised builds.
pub const DEEP_STACK_BYTES: usize = 512 * 1024 * 1024;

/// The nesting depth of a JSON text: the most `[`/`{` open at once outside strings (0 for a
/// scalar). Iterative and linear; text that is not JSON gets a number too, never a panic.
pub fn json_depth(text: &[u8]) -> usize {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Why a deep text was not parsed.
#[derive(Debug, thiserror::Error)]
pub enum DeepJsonError {
    /// Deeper than [`MAX_JSON_DEPTH`].
    #[error("the JSON nests {depth} levels deep, more than the {MAX_JSON_DEPTH} hookd reads")]
    TooDeep {
        /// The text's depth.
        depth: usize,
    },
    /// Not valid JSON for the type.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Parses `text` as `T` without serde_json's recursion limit, after checking that it nests
/// at most [`MAX_JSON_DEPTH`] levels. The caller's thread must have the stack for it
/// ([`DEEP_STACK_BYTES`] is enough).
pub fn from_slice_deep<T: DeserializeOwned>(text: &[u8]) -> Result<T, DeepJsonError> {
    let depth = json_depth(text);
    if depth > MAX_JSON_DEPTH {
        return Err(DeepJsonError::TooDeep { depth });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    deserializer.disable_recursion_limit();
    let value = T::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Whether a serde_json error is its recursion limit (the text may still be within
/// [`MAX_JSON_DEPTH`]).
pub fn is_recursion_limit(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn depth_counts_open_brackets_outside_strings() {
        let cases: [(&str, usize); 8] = [
            ("1", 0),
            ("{}", 1),
            (r#"{"a":[1,{"b":2}]}"#, 3),
            (r#"{"a":"[[[[{{{"}"#, 1),
            (r#"{"a":"\"[[[","b":[]}"#, 2),
            (r#"["\\",[[]]]"#, 3),
            ("]]]]", 0),
            ("[[[", 3),
        ];
        for (text, expected) in cases {
            assert_eq!(json_depth(text.as_bytes()), expected, "{text}");
        }
    }

    #[test]
    fn deep_text_parses_up_to_the_limit_and_not_beyond() {
        let within = std::thread::Builder::new()
            .stack_size(DEEP_STACK_BYTES)
            .spawn(|| {
                let text = nested(MAX_JSON_DEPTH);
                assert!(
                    serde_json::from_str::<Value>(&text).is_err_and(|e| is_recursion_limit(&e))
                );
                let value: Value = from_slice_deep(text.as_bytes()).expect("within the limit");
                let again = serde_json::to_string(&value).expect("encode");
                assert_eq!(again, text);
                let deeper = nested(MAX_JSON_DEPTH + 1);
                assert!(matches!(
                    from_slice_deep::<Value>(deeper.as_bytes()),
                    Err(DeepJsonError::TooDeep { depth }) if depth == MAX_JSON_DEPTH + 1
                ));
                assert!(from_slice_deep::<Value>(b"[1] x").is_err());
            })
            .expect("spawn");
        within.join().expect("deep parse");
    }
}
