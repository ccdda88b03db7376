//! Codex CLI's hook trust records, and which `hooks.json` files it would drop.
//!
//! Codex runs a non-managed command hook only when the user's `config.toml` holds, under
//! `hooks.state."<key>".trusted_hash`, the hash of the hook as it is now; otherwise it skips
//! the hook without a word. The key is `<absolute hooks.json path>:<event label>:<group
//! index>:<handler index>` (`/home/u/.codex/hooks.json:pre_tool_use:0:0`); the hash is
//! `sha256:` and the hex SHA-256 of the compact JSON, keys sorted, of the hook's normalized
//! identity: `{"event_name": <label>, "hooks": [<handler>], "matcher": <matcher>}`, the matcher
//! only where the event reads one, the handler with Codex's defaults filled in (`timeout`
//! 600 and at least 1, `async` false) and no unset field. Only the user layer's
//! `config.toml` holds trust, for user and project hooks alike.
//!
//! `hookctl install` writes a record for each relay entry, marked by a comment on its table
//! so that `sync` and `uninstall` change only the records hookd wrote; everything else in
//! `config.toml` (comments, layout) is left byte for byte.

use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use toml_edit::{DocumentMut, Item, Table};

use super::names::{codex_event_has_matcher, codex_event_label};
use crate::dialect::is_hookd_wiring;

/// The comment on each trust record hookd writes.
pub const RECORD_MARK: &str = "# hookd relay entry: trust record kept by hookctl install";

/// Codex's default hook timeout in seconds.
pub const CODEX_DEFAULT_TIMEOUT_S: u64 = 600;

/// The timeout Codex gives a handler of `event` whose `timeout` key is `written` (seconds),
/// which is also what its trust hash covers: at least 1 second, 600 by default, but for the
/// events Codex runs while it shuts a turn or the session down (`SessionEnd`, `Interrupt`)
/// 1 second by default and at most 3 (observed with Codex 0.171: a record hashed with the
/// written value is stale for Codex, which then skips the hook without a word).
pub fn codex_effective_timeout_s(event: &str, written: Option<u64>) -> u64 {
    match event {
        "SessionEnd" | "Interrupt" => written.unwrap_or(1).clamp(1, 3),
        _ => written.unwrap_or(CODEX_DEFAULT_TIMEOUT_S).max(1),
    }
}

/// Codex's trust hash of one command handler of `event` (Codex's name, `PreToolUse`) in a
/// group with `matcher`.
pub fn codex_trust_hash(
    event: &str,
    matcher: Option<&str>,
    handler: &Map<String, Value>,
) -> String {
    let label = codex_event_label(event).unwrap_or(event);
    // Keys in sorted order: the map keeps insertion order.
    let mut normalized = Map::new();
    normalized.insert(
        "async".to_owned(),
        Value::Bool(
            handler
                .get("async")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        ),
    );
    normalized.insert(
        "command".to_owned(),
        handler.get("command").cloned().unwrap_or(Value::Null),
    );
    if let Some(message) = handler.get("statusMessage").filter(|m| m.is_string()) {
        normalized.insert("statusMessage".to_owned(), message.clone());
    }
    let timeout = codex_effective_timeout_s(event, handler.get("timeout").and_then(Value::as_u64));
    normalized.insert("timeout".to_owned(), Value::from(timeout));
    normalized.insert("type".to_owned(), Value::from("command"));
    let mut identity = Map::new();
    identity.insert("event_name".to_owned(), Value::from(label));
    identity.insert(
        "hooks".to_owned(),
        Value::Array(vec![Value::Object(normalized)]),
    );
    if codex_event_has_matcher(event)
        && let Some(matcher) = matcher
    {
        identity.insert("matcher".to_owned(), Value::from(matcher));
    }
    let canonical = Value::Object(identity).to_string();
    let digest = Sha256::digest(canonical.as_bytes());
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    for byte in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    hex
}

/// The trust key of handler `handler` of group `group` of `event` in `hooks_file`.
pub fn codex_trust_key(hooks_file: &Path, event: &str, group: usize, handler: usize) -> String {
    let label = codex_event_label(event).unwrap_or(event);
    format!("{}:{label}:{group}:{handler}", hooks_file.display())
}

/// The entries hookd wrote into a `hooks.json` text (relay entries and a project's guarded
/// copies), as (Codex event, trust key, hash).
pub fn relay_records(hooks_file: &Path, text: &str) -> Vec<(String, String, String)> {
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(Value::Object(hooks)) = root.get("hooks") else {
        return Vec::new();
    };
    let mut records = Vec::new();
    for (event, groups) in hooks {
        let Some(groups) = groups.as_array() else {
            continue;
        };
        for (group_index, group) in groups.iter().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let Some(handlers) = group.get("hooks").and_then(Value::as_array) else {
                continue;
            };
            for (handler_index, handler) in handlers.iter().enumerate() {
                let Some(handler) = handler.as_object() else {
                    continue;
                };
                let relay = handler.get("type").and_then(Value::as_str) == Some("command")
                    && handler
                        .get("command")
                        .and_then(Value::as_str)
                        .is_some_and(is_hookd_wiring);
                if relay {
                    records.push((
                        event.clone(),
                        codex_trust_key(hooks_file, event, group_index, handler_index),
                        codex_trust_hash(event, matcher, handler),
                    ));
                }
            }
        }
    }
    records
}

/// Whether a trust record's table was written by hookd.
fn is_ours(table: &Table) -> bool {
    table
        .decor()
        .prefix()
        .and_then(|prefix| prefix.as_str())
        .is_some_and(|prefix| prefix.contains(RECORD_MARK))
}

/// The new text of the user's `config.toml` (`current`: its text, `None`: absent) once
/// `hooks_file` holds `hooks_text`: a trust record for every relay entry, none left for a
/// relay entry that is gone; `Ok(None)` when nothing changes.
pub fn trust_records_text(
    hooks_file: &Path,
    hooks_text: &str,
    current: Option<&str>,
) -> Result<Option<String>, String> {
    let records = relay_records(hooks_file, hooks_text);
    let text = current.unwrap_or("");
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|err| format!("it is not valid TOML ({err})"))?;
    let prefix = format!("{}:", hooks_file.display());
    let has_state = doc
        .get("hooks")
        .and_then(|hooks| hooks.get("state"))
        .is_some();
    if records.is_empty() && !has_state {
        return Ok(None);
    }
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_mut()
        .ok_or("its `hooks` is not a table")?;
    let state = hooks
        .entry("state")
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_mut()
        .ok_or("its `hooks.state` is not a table")?;
    // Records hookd wrote for entries that are gone.
    let stale: Vec<String> = state
        .iter()
        .filter(|(key, item)| {
            key.starts_with(&prefix)
                && item.as_table().is_some_and(is_ours)
                && !records.iter().any(|(_, wanted, _)| wanted == key)
        })
        .map(|(key, _)| key.to_owned())
        .collect();
    for key in stale {
        state.remove(&key);
    }
    for (_, key, hash) in &records {
        match state.get_mut(key).and_then(Item::as_table_mut) {
            Some(record) => {
                if record.get("trusted_hash").and_then(Item::as_str) != Some(hash.as_str()) {
                    record.insert("trusted_hash", toml_edit::value(hash.as_str()));
                }
            }
            None => {
                let mut record = Table::new();
                record.decor_mut().set_prefix(format!("\n{RECORD_MARK}\n"));
                record.insert("trusted_hash", toml_edit::value(hash.as_str()));
                state.insert(key, Item::Table(record));
            }
        }
    }
    let state_empty = state.is_empty() && state.is_implicit();
    if state_empty {
        hooks.remove("state");
    }
    if hooks.is_empty() && hooks.is_implicit() {
        doc.remove("hooks");
    }
    let mut after = doc.to_string();
    if current.is_none() {
        after = after.trim_start().to_owned();
    }
    if after == text {
        return Ok(None);
    }
    Ok(Some(after))
}

/// Why Codex would skip relay entries of `hooks_file`: a trust record missing or stale in
/// the user's `config.toml` (`config_text`).
pub fn trust_problems(
    hooks_file: &Path,
    hooks_text: &str,
    config_text: Option<&str>,
) -> Vec<String> {
    let doc: Option<DocumentMut> = config_text.and_then(|text| text.parse().ok());
    let mut problems = Vec::new();
    for (event, key, hash) in relay_records(hooks_file, hooks_text) {
        let trusted = doc
            .as_ref()
            .and_then(|doc| doc.get("hooks"))
            .and_then(|hooks| hooks.get("state"))
            .and_then(|state| state.get(&key))
            .and_then(|record| record.get("trusted_hash"))
            .and_then(Item::as_str);
        match trusted {
            Some(trusted) if trusted == hash => {}
            Some(_) => problems.push(format!(
                "Codex CLI skips the {event} relay entry of {}: its trust record is stale (the \
                 entry changed); run `hookctl sync` or trust it in Codex's /hooks",
                hooks_file.display()
            )),
            None => problems.push(format!(
                "Codex CLI skips the {event} relay entry of {}: it has no trust record; run \
                 `hookctl sync` or trust it in Codex's /hooks",
                hooks_file.display()
            )),
        }
    }
    problems
}

/// Why Codex would drop a whole `hooks.json` text, by its parser's rules: not JSON, a
/// `hooks` that is not an object of arrays, a group that is not an object with a `hooks`
/// array, a handler without a known `type`, a command handler without a `command` string, a
/// `timeout` that is not a whole non-negative number, an `async` that is not a boolean.
pub fn codex_hooks_file_problems(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let root = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(root)) => root,
        Ok(_) => return vec!["hooks.json is not a JSON object".to_owned()],
        Err(err) => return vec![format!("hooks.json is not strict JSON ({err})")],
    };
    let Some(hooks) = root.get("hooks") else {
        return Vec::new();
    };
    let Some(hooks) = hooks.as_object() else {
        return vec!["`hooks` is not an object".to_owned()];
    };
    let mut problems = Vec::new();
    for (event, groups) in hooks {
        let Some(groups) = groups.as_array() else {
            problems.push(format!("hooks.{event} is not an array"));
            continue;
        };
        for (gi, group) in groups.iter().enumerate() {
            let at = format!("hooks.{event}[{gi}]");
            let Some(group) = group.as_object() else {
                problems.push(format!("{at} is not an object"));
                continue;
            };
            if group
                .get("matcher")
                .is_some_and(|m| !m.is_string() && !m.is_null())
            {
                problems.push(format!("{at}.matcher is not a string"));
            }
            let Some(handlers) = group.get("hooks").and_then(Value::as_array) else {
                problems.push(format!("{at}.hooks is not an array"));
                continue;
            };
            for (hi, handler) in handlers.iter().enumerate() {
                let at = format!("{at}.hooks[{hi}]");
                problems.extend(handler_problems(&at, handler));
            }
        }
    }
    problems
}

fn handler_problems(at: &str, handler: &Value) -> Vec<String> {
    let Some(handler) = handler.as_object() else {
        return vec![format!("{at} is not an object")];
    };
    let mut problems = Vec::new();
    match handler.get("type").and_then(Value::as_str) {
        None => problems.push(format!("{at} has no `type`")),
        Some("command") => {
            if !handler.get("command").is_some_and(Value::is_string) {
                problems.push(format!("{at}.command is not a string"));
            }
        }
        Some("prompt" | "agent" | "mcp_tool") => {}
        Some(other) => problems.push(format!("{at}.type {other:?} is unknown to Codex CLI")),
    }
    if let Some(timeout) = handler.get("timeout")
        && !timeout.is_null()
        && timeout.as_u64().is_none()
    {
        problems.push(format!(
            "{at}.timeout {timeout} is not a whole number of seconds"
        ));
    }
    if handler
        .get("async")
        .is_some_and(|a| !a.is_boolean() && !a.is_null())
    {
        problems.push(format!("{at}.async is not a boolean"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;

    fn handler(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    #[test]
    fn trust_hash_is_codex_normalized_identity() {
        // The canonical text Codex hashes, spelled out: defaults filled, keys sorted.
        let expected_text = r#"{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"hookctl relay PreToolUse --dialect codex","timeout":600,"type":"command"}]}"#;
        let expected = format!("sha256:{:x}", Sha256::digest(expected_text.as_bytes()));
        let got = codex_trust_hash(
            "PreToolUse",
            None,
            &handler(
                json!({"type": "command", "command": "hookctl relay PreToolUse --dialect codex"}),
            ),
        );
        assert_eq!(got, expected);
        // The same hook written with its defaults has the same hash; a changed command not.
        let explicit = codex_trust_hash(
            "PreToolUse",
            None,
            &handler(
                json!({"type": "command", "command": "hookctl relay PreToolUse --dialect codex", "timeout": 600, "async": false}),
            ),
        );
        assert_eq!(explicit, expected);
        let changed = codex_trust_hash(
            "PreToolUse",
            None,
            &handler(json!({"type": "command", "command": "hookctl relay PreToolUse"})),
        );
        assert_ne!(changed, expected);
        // A matcher counts where the event reads one, and not for Stop.
        let h = handler(json!({"type": "command", "command": "x", "timeout": 0}));
        assert_ne!(
            codex_trust_hash("PreToolUse", Some("Bash"), &h),
            codex_trust_hash("PreToolUse", None, &h)
        );
        assert_eq!(
            codex_trust_hash("Stop", Some("Bash"), &h),
            codex_trust_hash("Stop", None, &h)
        );
        let stop_text = r#"{"event_name":"stop","hooks":[{"async":false,"command":"x","timeout":1,"type":"command"}]}"#;
        assert_eq!(
            codex_trust_hash("Stop", None, &h),
            format!("sha256:{:x}", Sha256::digest(stop_text.as_bytes()))
        );
    }

    #[test]
    fn shutdown_events_are_hashed_with_the_clamped_timeout() {
        // (event, written timeout, the timeout in the hashed identity)
        let cases = [
            ("SessionEnd", Some(610), 3),
            ("SessionEnd", Some(2), 2),
            ("SessionEnd", Some(0), 1),
            ("SessionEnd", None, 1),
            ("Interrupt", Some(60), 3),
            ("PreToolUse", Some(610), 610),
            ("PreToolUse", None, 600),
            ("Stop", Some(0), 1),
        ];
        for (event, written, effective) in cases {
            assert_eq!(
                codex_effective_timeout_s(event, written),
                effective,
                "{event} {written:?}"
            );
            let mut raw = json!({"type": "command", "command": "x"});
            if let Some(written) = written {
                raw["timeout"] = json!(written);
            }
            let label = codex_event_label(event).expect("label");
            let text = format!(
                r#"{{"event_name":"{label}","hooks":[{{"async":false,"command":"x","timeout":{effective},"type":"command"}}]}}"#
            );
            assert_eq!(
                codex_trust_hash(event, None, &handler(raw)),
                format!("sha256:{:x}", Sha256::digest(text.as_bytes())),
                "{event} {written:?}"
            );
        }
    }

    #[test]
    fn keys_name_the_file_event_and_position() {
        assert_eq!(
            codex_trust_key(Path::new("/h/.codex/hooks.json"), "PreToolUse", 1, 0),
            "/h/.codex/hooks.json:pre_tool_use:1:0"
        );
        assert_eq!(
            codex_trust_key(Path::new("/p/.codex/hooks.json"), "UserPromptSubmit", 0, 2),
            "/p/.codex/hooks.json:user_prompt_submit:0:2"
        );
    }

    fn hooks_text() -> String {
        json!({"hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./mine.sh"}]},
                {"hooks": [{"type": "command", "command": "hookctl relay PreToolUse --dialect codex", "timeout": 60}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "hookctl relay Stop --dialect codex", "timeout": 600}]}]
        }})
        .to_string()
    }

    #[test]
    fn records_are_written_and_removed_leaving_the_rest_byte_for_byte() {
        let file = PathBuf::from("/h/.codex/hooks.json");
        let original = "# my settings\nmodel = \"x\"  # keep\n\n[hooks.state.\"/h/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:mine\"\n";
        let with = trust_records_text(&file, &hooks_text(), Some(original))
            .expect("edit")
            .expect("changed");
        assert!(with.starts_with(original), "{with}");
        let relay = &relay_records(&file, &hooks_text());
        assert_eq!(relay.len(), 2);
        assert_eq!(relay[0].1, "/h/.codex/hooks.json:pre_tool_use:1:0");
        assert!(trust_problems(&file, &hooks_text(), Some(&with)).is_empty());
        assert_eq!(
            trust_problems(&file, &hooks_text(), Some(original)).len(),
            2
        );
        // Again: nothing to change.
        assert_eq!(
            trust_records_text(&file, &hooks_text(), Some(&with)),
            Ok(None)
        );
        // A changed relay command line: its record is updated, and stale before that.
        let edited = hooks_text().replace(
            "relay PreToolUse --dialect codex",
            "relay PreToolUse --dialect codex --socket /s",
        );
        assert_ne!(edited, hooks_text());
        assert_eq!(trust_problems(&file, &edited, Some(&with)).len(), 1);
        let updated = trust_records_text(&file, &edited, Some(&with))
            .expect("edit")
            .expect("changed");
        assert!(trust_problems(&file, &edited, Some(&updated)).is_empty());
        // Uninstalled (only the user's hook left): back to the original bytes.
        let mine = json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./mine.sh"}]}]}})
        .to_string();
        let restored = trust_records_text(&file, &mine, Some(&updated))
            .expect("edit")
            .expect("changed");
        assert_eq!(restored, original);
        // From no config.toml at all, and back to nothing.
        let created = trust_records_text(&file, &hooks_text(), None)
            .expect("edit")
            .expect("changed");
        assert!(created.contains("trusted_hash"), "{created}");
        let gone = trust_records_text(&file, "", Some(&created)).expect("edit");
        assert_eq!(gone, Some(String::new()));
        // Not TOML: refused.
        assert!(trust_records_text(&file, &hooks_text(), Some("= =")).is_err());
    }

    #[test]
    fn files_codex_would_drop() {
        // (hooks.json text, problems?)
        let cases = [
            ("", false),
            (r#"{"hooks": {}}"#, false),
            (
                r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 5}]}]}}"#,
                false,
            ),
            (
                r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 5.5}]}]}}"#,
                true,
            ),
            (
                r#"{"hooks": {"PreToolUse": [{"hooks": [{"command": "x"}]}]}}"#,
                true,
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "prompt"}]}]}}"#,
                false,
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "async": "yes"}]}]}}"#,
                true,
            ),
            (r#"{"hooks": {"Stop": {"hooks": []}}}"#, true),
            (r#"{"hooks": [] }"#, true),
            ("{\"hooks\": {}, // comment\n}", true),
            ("[1]", true),
        ];
        for (text, expected) in cases {
            let problems = codex_hooks_file_problems(text);
            assert_eq!(!problems.is_empty(), expected, "{text}: {problems:?}");
        }
    }
}
