//! Load-time environment expansion of settings files (spec §1.1).
//!
//! Gemini CLI passes every string value of a settings file through an environment-variable
//! resolver before anything else looks at it. Three forms are recognised:
//!
//! - `$NAME`, where `NAME` is one or more ASCII word characters (`[A-Za-z0-9_]`, JavaScript's
//!   `\w` without the `u` flag), taken greedily;
//! - `${NAME}`, where `NAME` is everything up to the first `}` (at least one character);
//! - `${NAME:-default}`: the text before the first `:-` is the name, the rest the default.
//!
//! A defined variable (even one set to the empty string) is replaced by its value. An
//! undefined one is replaced by its default if the braces gave one, and otherwise left exactly
//! as written. Replacement text is never expanded again, and object keys are never expanded.
//!
//! Extension `hooks/hooks.json` files are not expanded this way; see [`crate::extension`].

use serde_json::Value;

/// Expands `$NAME`, `${NAME}` and `${NAME:-default}` in `text` using `lookup`.
pub fn expand_str(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        match reference_at(after) {
            Some((reference, consumed)) => {
                match resolve(&reference, lookup) {
                    Some(value) => out.push_str(&value),
                    None => out.push_str(&rest[dollar..dollar + 1 + consumed]),
                }
                rest = &after[consumed..];
            }
            None => {
                // Not a reference: keep the `$` and look for the next one right after it.
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Expands every string inside `value` in place: object values and array elements,
/// recursively. Numbers, booleans, null and object keys are left alone.
pub fn expand_value(value: &mut Value, lookup: &dyn Fn(&str) -> Option<String>) {
    match value {
        Value::String(s) => {
            let expanded = expand_str(s, lookup);
            if expanded != *s {
                *s = expanded;
            }
        }
        Value::Array(items) => {
            for item in items {
                expand_value(item, lookup);
            }
        }
        Value::Object(map) => {
            for (_, item) in map.iter_mut() {
                expand_value(item, lookup);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A parsed `$…` reference.
enum Reference<'a> {
    /// `$NAME` or `${NAME}`.
    Plain(&'a str),
    /// `${NAME:-default}`.
    WithDefault(&'a str, &'a str),
}

/// Recognises a reference in the text right after a `$`; returns it and how many bytes of
/// `after` it spans.
fn reference_at(after: &str) -> Option<(Reference<'_>, usize)> {
    let word_len = after
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    if word_len > 0 {
        return Some((Reference::Plain(&after[..word_len]), word_len));
    }
    let inner = after.strip_prefix('{')?;
    let close = inner.find('}')?;
    if close == 0 {
        return None;
    }
    let body = &inner[..close];
    let reference = match body.split_once(":-") {
        Some((name, default)) => Reference::WithDefault(name, default),
        None => Reference::Plain(body),
    };
    Some((reference, close + 2))
}

/// The replacement for a reference, or `None` to keep it verbatim.
fn resolve(reference: &Reference<'_>, lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    match reference {
        Reference::Plain(name) => lookup(name),
        Reference::WithDefault(name, default) => {
            Some(lookup(name).unwrap_or_else(|| (*default).to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".to_owned()),
            "EMPTY" => Some(String::new()),
            "A_1" => Some("one".to_owned()),
            "DOLLAR" => Some("$HOME".to_owned()),
            _ => None,
        }
    }

    fn check(input: &str, expected: &str) {
        assert_eq!(expand_str(input, &env), expected, "input: {input:?}");
    }

    #[test]
    fn expands_the_three_forms() {
        let cases = [
            ("$HOME/x.sh", "/home/u/x.sh"),
            ("${HOME}/x.sh", "/home/u/x.sh"),
            ("${NOPE:-/tmp}/x", "/tmp/x"),
            ("${HOME:-/tmp}/x", "/home/u/x"),
            // A defined empty variable wins over the default.
            ("[${EMPTY:-d}]", "[]"),
            ("[$EMPTY]", "[]"),
            ("${NOPE:-}", ""),
            // Undefined without a default stays verbatim.
            ("$GEMINI_PROJECT_DIR/h.sh", "$GEMINI_PROJECT_DIR/h.sh"),
            ("${GEMINI_PROJECT_DIR}/h.sh", "${GEMINI_PROJECT_DIR}/h.sh"),
            // `$NAME` is greedy over ASCII word characters only.
            ("$A_1.x", "one.x"),
            ("$A_1x", "$A_1x"),
            ("$HOMEé", "/home/ué"),
            // Not references.
            ("$", "$"),
            ("a$", "a$"),
            ("${}", "${}"),
            ("${HOME", "${HOME"),
            ("$-x", "$-x"),
            ("cost: 5$ and $$HOME", "cost: 5$ and $/home/u"),
            // Replacement values are not expanded again.
            ("$DOLLAR", "$HOME"),
            // Braces take everything up to the first `}`.
            ("${HO ME}", "${HO ME}"),
            ("${NOPE:-a:-b}", "a:-b"),
            ("${NOPE:-{x}y", "{xy"),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
    }

    #[test]
    fn expands_values_recursively_but_not_keys() {
        let mut value = json!({
            "$HOME": ["$HOME", 1, true, null, {"k": "${NOPE:-d}"}],
            "hooksConfig": {"disabled": "$A_1"},
        });
        expand_value(&mut value, &env);
        assert_eq!(
            value,
            json!({
                "$HOME": ["/home/u", 1, true, null, {"k": "d"}],
                "hooksConfig": {"disabled": "one"},
            })
        );
    }
}
