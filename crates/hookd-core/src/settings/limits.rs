//! Per-file limits on what a settings file may ask hookd to build.
//!
//! A settings file can come from a cloned repository, and everything it defines is compiled
//! when the registry is built and consulted on every event. These limits keep both bounded:
//! a file over one of them is refused as a whole (the daemon keeps its last good version, see
//! the server's `lastgood`), with an error that names the file and the limit.
//!
//! Measured on a release build: planning an event no hook matches costs about 30 to 850 µs with
//! 1,000 hooks in a file, and 60 to 85 ms with 50,000 (and 1 to 4 s to build).

use serde_json::Value;

use crate::redact;

/// The most hooks (entries of `hooks` lists, across every event) one settings file may define.
pub const MAX_HOOKS_PER_FILE: usize = 1_000;

/// The most built-in filters (`"type": "builtin"` hooks) one settings file may define; each
/// may compile up to a few MiB of automata.
pub const MAX_FILTERS_PER_FILE: usize = 4;

/// Why a settings file (its parsed top level) is over a limit; `None` when it is within them.
/// Works on Gemini CLI's, hookd's and Claude Code's settings and on extensions' hooks files,
/// which all keep hooks under `hooks.<event>[].hooks[]`.
pub fn violation(root: &Value) -> Option<String> {
    let events = root.get("hooks").and_then(Value::as_object)?;
    let hooks = events
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|definition| definition.get("hooks").and_then(Value::as_array))
        .flatten();
    let mut count = 0usize;
    let mut filters = 0usize;
    for hook in hooks {
        count += 1;
        if hook.get("type").and_then(Value::as_str) != Some("builtin") {
            continue;
        }
        filters += 1;
        if let Some(patterns) = hook.get("patterns").and_then(Value::as_array) {
            if patterns.len() > redact::MAX_PATTERNS {
                return Some(format!(
                    "a redact hook lists {} patterns; at most {} are allowed",
                    patterns.len(),
                    redact::MAX_PATTERNS
                ));
            }
            let too_long = patterns
                .iter()
                .filter_map(Value::as_object)
                .flat_map(|pattern| ["regex", "begin", "end"].map(|key| pattern.get(key)))
                .filter_map(|text| text.and_then(Value::as_str))
                .find(|text| text.len() > redact::MAX_PATTERN_BYTES);
            if let Some(text) = too_long {
                return Some(format!(
                    "a redact pattern is {} bytes long; at most {} are allowed",
                    text.len(),
                    redact::MAX_PATTERN_BYTES
                ));
            }
        }
    }
    if count > MAX_HOOKS_PER_FILE {
        return Some(format!(
            "it defines {count} hooks; a settings file may define at most {MAX_HOOKS_PER_FILE}"
        ));
    }
    if filters > MAX_FILTERS_PER_FILE {
        return Some(format!(
            "it defines {filters} built-in filters; a settings file may define at most \
             {MAX_FILTERS_PER_FILE}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file(hooks: usize, filters: usize, patterns: usize, pattern_len: usize) -> Value {
        let mut list: Vec<Value> = (0..hooks)
            .map(|i| json!({"type": "command", "command": format!("true {i}")}))
            .collect();
        let filter_patterns: Vec<Value> = (0..patterns)
            .map(|i| json!({"name": format!("p{i}"), "regex": "x".repeat(pattern_len)}))
            .collect();
        list.extend(
            (0..filters).map(
                |_| json!({"type": "builtin", "builtin": "redact", "patterns": filter_patterns}),
            ),
        );
        json!({"hooks": {"BeforeTool": [{"matcher": "x", "hooks": list}]}})
    }

    #[test]
    fn files_over_a_limit_are_named_with_the_limit() {
        // (hooks, filters, patterns per filter, pattern bytes, expected message part)
        let cases: &[(usize, usize, usize, usize, Option<&str>)] = &[
            (10, 1, 3, 10, None),
            (MAX_HOOKS_PER_FILE, 0, 0, 0, None),
            (MAX_HOOKS_PER_FILE + 1, 0, 0, 0, Some("1001 hooks")),
            (0, MAX_FILTERS_PER_FILE, 1, 1, None),
            (
                0,
                MAX_FILTERS_PER_FILE + 1,
                1,
                1,
                Some("5 built-in filters"),
            ),
            (0, 1, redact::MAX_PATTERNS, 1, None),
            (0, 1, redact::MAX_PATTERNS + 1, 1, Some("33 patterns")),
            (0, 1, 1, redact::MAX_PATTERN_BYTES, None),
            (0, 1, 1, redact::MAX_PATTERN_BYTES + 1, Some("513 bytes")),
        ];
        for &(hooks, filters, patterns, len, expected) in cases {
            let found = violation(&file(hooks, filters, patterns, len));
            match expected {
                None => assert_eq!(found, None),
                Some(part) => assert!(
                    found.as_deref().is_some_and(|m| m.contains(part)),
                    "{hooks} {filters} {patterns} {len}: {found:?}"
                ),
            }
        }
        assert_eq!(violation(&json!({"hooks": 5})), None);
        assert_eq!(violation(&json!([])), None);
    }
}
