//! How a host file's hooks divide ([`split_hooks`]): what hookd takes over, converted one
//! definition at a time and recorded next to what it became, and what stays with the host
//! because hookd cannot run it.

use hookd_core::dialect;
use serde_json::{Map, Value, json};

use super::Host;
use super::guarded::is_wiring_hook;
use super::manifest::MovedDefinition;

/// Appends a definition to `event`'s list (unless an identical one is there).
pub(super) fn push_definition(hooks: &mut Map<String, Value>, event: &str, definition: Value) {
    let slot = hooks
        .entry(event.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    if let Value::Array(list) = slot
        && !list.contains(&definition)
    {
        list.push(definition);
    }
}

/// How the host's hooks divide: what hookd takes over (one record per host definition), what
/// stays in the host file because hookd cannot run it (host event → definitions), and the
/// conversion's problems.
#[derive(Debug, Default)]
pub(super) struct Split {
    pub(super) moved: Vec<MovedDefinition>,
    pub(super) kept: Map<String, Value>,
    pub(super) problems: Vec<String>,
}

impl Split {
    /// What stays in the host file when nothing is moved (for `sync`): the kept definitions
    /// and the movable ones, as they are.
    pub(super) fn kept_and_unmoved(self) -> Map<String, Value> {
        let mut kept = self.kept;
        for record in self.moved {
            push_definition(&mut kept, &record.host_event, record.host_definition);
        }
        kept
    }
}

/// Divides the host file's hooks (relay entries are neither moved nor kept: install writes
/// them anew). Claude Code hooks that are not `command` hooks (`prompt`, `agent`, ...) and
/// hooks of Claude events Gemini CLI has no counterpart for stay where they are, run by
/// Claude Code itself; the rest are converted, one definition at a time, so each moved
/// definition is recorded next to what it became.
pub(super) fn split_hooks(host: Host, root: &Map<String, Value>) -> Split {
    let hooks = root
        .get("hooks")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut split = Split::default();
    for (event, definitions) in hooks {
        let Value::Array(definitions) = definitions else {
            // Not a list: hookd reports it where Gemini CLI would; Claude's stays.
            if host.is_native() {
                split.moved.push(MovedDefinition::new(
                    &event,
                    definitions.clone(),
                    vec![(event.clone(), definitions)],
                ));
            } else {
                split.kept.insert(event, definitions);
            }
            continue;
        };
        if !host.is_native() && host.relay().event_to_hookd(&event).is_none() {
            split.kept.insert(event, Value::Array(definitions));
            continue;
        }
        for definition in definitions {
            let (moves, stays) = divide_definition(host, definition);
            if let Some(stays) = stays {
                split.problems.extend(stays_with_host(host, &event, &stays));
                push_definition(&mut split.kept, &event, stays);
            }
            let Some(moves) = moves else {
                continue;
            };
            let settings = json!({"hooks": {event.clone(): [moves.clone()]}});
            match host
                .files()
                .convert_settings(&settings, dialect::Purpose::Layer)
            {
                None => split.moved.push(MovedDefinition::new(
                    &event,
                    moves.clone(),
                    vec![(event.clone(), moves)],
                )),
                Some(conversion) => {
                    split
                        .problems
                        .extend(conversion.problems.iter().map(ToString::to_string));
                    let mut converted = Vec::new();
                    for (gemini_event, list) in conversion.hooks {
                        for definition in list.as_array().into_iter().flatten() {
                            converted.push((gemini_event.clone(), definition.clone()));
                        }
                    }
                    if converted.is_empty() {
                        // Nothing hookd can run came of it: it stays with Claude Code.
                        push_definition(&mut split.kept, &event, moves);
                    } else {
                        split
                            .moved
                            .push(MovedDefinition::new(&event, moves, converted));
                    }
                }
            }
        }
    }
    split
}

/// One line per hook of a definition that stays in the host's file, saying why hookd cannot
/// run it.
pub(super) fn stays_with_host(host: Host, event: &str, definition: &Value) -> Vec<String> {
    let hooks = definition.get("hooks").and_then(Value::as_array);
    hooks
        .into_iter()
        .flatten()
        .map(|hook| {
            let kind = hook.get("type").and_then(Value::as_str).unwrap_or("");
            let product = host.product();
            let why = match kind {
                "prompt" => {
                    format!("a prompt hook asks {product}'s model, which hookd cannot reach")
                }
                "agent" => format!("an agent hook runs a subagent inside {product}"),
                "mcp_tool" => {
                    format!("an mcp_tool hook calls an MCP server {product} is connected to")
                }
                "http" => "hookd runs command hooks only, not http hooks".to_owned(),
                _ => "hookd runs command hooks only".to_owned(),
            };
            format!("{event} {kind:?} hook stays in {product}'s settings: {why}")
        })
        .collect()
}

/// One definition's part hookd takes over and the part that stays in the host file; relay
/// entries are in neither.
pub(super) fn divide_definition(host: Host, definition: Value) -> (Option<Value>, Option<Value>) {
    let Value::Object(definition) = definition else {
        // Not a definition: hookd reports it where Gemini CLI would.
        return (Some(definition), None);
    };
    let Some(Value::Array(hooks)) = definition.get("hooks") else {
        return (Some(Value::Object(definition)), None);
    };
    let mut moving = Vec::new();
    let mut staying = Vec::new();
    for hook in hooks {
        if is_wiring_hook(hook) {
            continue;
        }
        let runs_command = hook.get("type").and_then(Value::as_str) == Some("command");
        if !host.is_native() && !runs_command {
            staying.push(hook.clone());
        } else {
            moving.push(hook.clone());
        }
    }
    let with_hooks = |hooks: Vec<Value>| {
        (!hooks.is_empty()).then(|| {
            let mut part = definition.clone();
            part.insert("hooks".to_owned(), Value::Array(hooks));
            Value::Object(part)
        })
    };
    (with_hooks(moving), with_hooks(staying))
}

/// Appends `definitions` (event, definition) to `into`; returns those added (an identical
/// definition already there is not added twice).
pub(super) fn append_hooks(
    into: &mut Map<String, Value>,
    definitions: &[(String, Value)],
) -> Vec<(String, Value)> {
    let mut added = Vec::new();
    for (event, definition) in definitions {
        let slot = into
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            *slot = Value::Array(Vec::new());
        }
        if let Value::Array(existing) = slot
            && !existing.contains(definition)
        {
            existing.push(definition.clone());
            added.push((event.clone(), definition.clone()));
        }
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_hooks_hookd_cannot_run_stay_with_claude() {
        let root = json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "/opt/bin/hookctl relay PreToolUse --dialect claude"},
                {"type": "command", "command": "guard.sh", "timeout": 5},
                {"type": "prompt", "prompt": "Is this safe?"}
            ]}],
            "PermissionRequest": [{"hooks": [{"type": "command", "command": "perm.sh"}]}]
        }});
        let Value::Object(root) = root else {
            unreachable!()
        };
        let split = split_hooks(Host::CLAUDE, &root);
        assert_eq!(
            Value::Object(split.kept.clone()),
            json!({
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this safe?"}]}]
            })
        );
        // Claude Code's own events move too, under their own name.
        assert_eq!(
            split.problems,
            [
                "PreToolUse \"prompt\" hook stays in Claude Code's settings: a prompt hook asks \
              Claude Code's model, which hookd cannot reach"
            ]
        );
        assert_eq!(split.moved.len(), 2);
        assert_eq!(split.moved[1].host_event, "PermissionRequest");
        assert_eq!(split.moved[1].hookd[0].0, "PermissionRequest");
        let record = &split.moved[0];
        assert_eq!(record.host_event, "PreToolUse");
        assert_eq!(
            record.host_definition,
            json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]})
        );
        let (event, moved) = &record.hookd[0];
        assert_eq!(event, "BeforeTool");
        assert_eq!(moved["matcher"], json!("^run_shell_command$"), "{moved}");
        assert_eq!(moved["hooks"][0]["timeout"], json!(5000), "{moved}");
        assert_eq!(moved["hooks"][0]["dialect"], json!("claude"), "{moved}");
    }
}
