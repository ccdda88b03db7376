//! The guarded copies of moved hooks kept in a project's shared host file: they run only where
//! `hookd-relay` is not on `PATH`, so a teammate without hookd runs the project's hooks as the
//! CLI would, and nobody runs them twice; and how hookd's own wiring is recognised.

use hookd_core::dialect;
use serde_json::{Map, Value};

use super::manifest::MovedDefinition;

/// The guarded copies, for a project's shared host file, of the `moved` definitions whose
/// hooks hookd's file (`hookd_text`) still holds as they were moved: each hook's command runs
/// only where `hookd-relay` is not on `PATH` (a teammate's machine without hookd), so the
/// project's hooks run there as the CLI would run them, and nowhere twice. A moved hook
/// edited or removed in hookd's file since has no copy (the host's form of the edit is not
/// known).
pub(super) fn fallback_copies(moved: &[MovedDefinition], hookd_text: &str) -> Map<String, Value> {
    let hookd_root: Map<String, Value> = hookd_core::jsonc::parse(hookd_text)
        .ok()
        .and_then(|value| match value {
            Value::Object(root) => Some(root),
            _ => None,
        })
        .unwrap_or_default();
    let hookd_hooks = hookd_root.get("hooks").and_then(Value::as_object);
    let still_there = |event: &str, definition: &Value| {
        hookd_hooks
            .and_then(|hooks| hooks.get(event))
            .and_then(Value::as_array)
            .is_some_and(|list| list.contains(definition))
    };
    let mut copies = Map::new();
    for record in moved {
        if record.hookd.is_empty()
            || !record
                .hookd
                .iter()
                .all(|(event, definition)| still_there(event, definition))
        {
            continue;
        }
        let copy = guarded_definition(&record.host_definition);
        let list = copies
            .entry(record.host_event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list
            && !list.contains(&copy)
        {
            list.push(copy);
        }
    }
    copies
}

/// A host definition whose command hooks run only where `hookd-relay` is not on `PATH`: a
/// shell-form command becomes `command -v hookd-relay >/dev/null 2>&1 || { COMMAND\n}`, an
/// exec-form one (`command` and `args`, Claude Code) `sh -c GUARD COMMAND ARGS...`, which
/// execs the program with its arguments as given. Everything else is kept as it is.
pub(super) fn guarded_definition(definition: &Value) -> Value {
    let mut copy = definition.clone();
    let Some(Value::Array(hooks)) = copy.get_mut("hooks") else {
        return copy;
    };
    for hook in hooks.iter_mut() {
        let Value::Object(hook) = hook else {
            continue;
        };
        let Some(Value::String(command)) = hook.get("command").cloned() else {
            continue;
        };
        match hook.get("args").cloned() {
            Some(Value::Array(args)) => {
                let mut guarded = vec![
                    Value::from("-c"),
                    Value::from(dialect::FALLBACK_EXEC_SCRIPT),
                    Value::from(command),
                ];
                guarded.extend(args);
                hook.insert("command".to_owned(), Value::from("sh"));
                hook.insert("args".to_owned(), Value::Array(guarded));
            }
            _ => {
                hook.insert(
                    "command".to_owned(),
                    Value::from(dialect::fallback_command(&command)),
                );
            }
        }
    }
    copy
}

/// Whether a hook object of a host file is hookd's own wiring: a relay entry, an HTTP entry
/// to hookd's listener, or a guarded copy, in either form ([`guarded_definition`]).
pub(super) fn is_wiring_hook(hook: &Value) -> bool {
    if super::http::is_http_wiring(hook) {
        return true;
    }
    let command = hook.get("command").and_then(Value::as_str);
    if command.is_some_and(dialect::is_hookd_wiring) {
        return true;
    }
    let args = hook.get("args").and_then(Value::as_array);
    command == Some("sh")
        && args.is_some_and(|args| {
            args.len() >= 3 && args[0] == "-c" && args[1] == dialect::FALLBACK_EXEC_SCRIPT
        })
}
