//! Claude Code's `hooks` settings as Gemini CLI's.
//!
//! Claude Code and Gemini CLI share the shape of a hooks object (event → definitions with a
//! `matcher` and a list of `hooks`), not its meaning. Converting a definition:
//!
//! - **Event**: by [`claude_event_to_gemini`]; `Stop` and `SubagentStop` both become
//!   `AfterAgent`, their definitions appended in file order (never one replacing the other).
//!   Claude events without a Gemini counterpart (`PermissionRequest`, ...) are held under
//!   their own name in a layer, and reported by `migrate`.
//! - **Matcher**: tool events get [`claude_matcher_to_gemini`]. `SessionStart`, `PreCompact`
//!   and `SessionEnd` match their trigger exactly in Gemini CLI, without alternation, so a
//!   Claude matcher is evaluated against the event's known values and the definition is
//!   repeated once per value it selects (`startup|resume` → one definition for `startup`, one
//!   for `resume`). `UserPromptSubmit` and `Stop` ignore matchers in both CLIs. Gemini CLI
//!   cannot filter `Notification` (it only sends tool-permission notifications) or
//!   `SubagentStop` by their matcher: see [`Purpose`].
//! - **Hook**: only `command` hooks can be run (`prompt`, `agent`, `http` and other types are
//!   reported, never dropped silently). `timeout` is in seconds in Claude Code and in
//!   milliseconds in Gemini CLI and hookd, so it is multiplied by 1000. `statusMessage`
//!   becomes `description`. In a layer, `if` is kept (hookd checks it before spawning, see
//!   [`crate::dialect::condition`]) and `onFailure: "block"` becomes `on_failure: "deny"`. `async:
//!   true` is kept (hookd's own key of the same meaning); `asyncRewake`, which a relay that
//!   has answered cannot honour, is reported and the event waits for the hook. Keys with
//!   no counterpart (`shell`, ...) are reported and dropped; `once`, which
//!   Claude Code ignores in settings files, is dropped silently.
//! - **Variables**: `$CLAUDE_PROJECT_DIR` is written `${...}` so that the shell, not Gemini
//!   CLI's textual expansion, expands it, exactly as in Claude Code (Gemini CLI and hookd
//!   insert shell-quoted text for the bare form, which turns `"$CLAUDE_PROJECT_DIR"/x` into
//!   literal quotes when the path has a space). `${CLAUDE_PLUGIN_ROOT}` exists only for a
//!   plugin's hooks: given the plugin's directory ([`ConvertOptions::plugin_root`]) it is set
//!   in the hook's `env`; otherwise such a hook is reported and left out.
//!
//! Nothing is dropped without a [`ConversionProblem`] saying so, except what means the same
//! in both CLIs.

use serde_json::{Map, Value};

use super::matchers::{
    claude_matcher_matches, claude_matcher_to_gemini, claude_matcher_verbatim,
    is_valid_claude_matcher,
};
use super::names::claude_event_to_gemini;
use crate::dialect::condition::Condition;
use crate::dialect::relay::is_relay_command;
use crate::dialect::{Conversion, ProblemKind, Purpose};
use crate::event::HookEventName;
use crate::json::json_type;

/// Options of [`convert_claude_hooks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertOptions<'a> {
    /// What the hooks are for.
    pub purpose: Purpose,
    /// The plugin's directory, when converting a Claude Code plugin's `hooks/hooks.json`:
    /// the value of `${CLAUDE_PLUGIN_ROOT}`.
    pub plugin_root: Option<&'a str>,
}

/// Converts the `hooks` of a Claude Code settings document (`settings.json`,
/// `settings.local.json`, or a plugin's `hooks/hooks.json`, which has the same shape) for
/// `purpose`, with no plugin directory.
pub fn convert_claude_settings(settings: &Value, purpose: Purpose) -> Conversion {
    convert_claude_hooks(
        settings,
        &ConvertOptions {
            purpose,
            plugin_root: None,
        },
    )
}

/// Converts the `hooks` of a Claude Code settings document (see the module documentation).
pub fn convert_claude_hooks(settings: &Value, options: &ConvertOptions<'_>) -> Conversion {
    let mut conversion = Conversion::default();
    let Some(root) = settings.as_object() else {
        conversion.problem(
            "(top level)",
            ProblemKind::Skipped,
            format!(
                "Claude Code settings must be a JSON object, not {}",
                json_type(settings)
            ),
        );
        return conversion;
    };
    let hooks = match root.get("hooks") {
        None | Some(Value::Null) => return conversion,
        Some(Value::Object(hooks)) => hooks,
        Some(other) => {
            conversion.problem(
                "hooks",
                ProblemKind::Skipped,
                format!("must be an object of events, not {}", json_type(other)),
            );
            return conversion;
        }
    };
    for (claude_event, definitions) in hooks {
        let location = format!("hooks.{claude_event}");
        let event = match claude_event_to_gemini(claude_event) {
            Some(HookEventName::Host(_)) if options.purpose == Purpose::Migrate => None,
            event => event,
        };
        let Some(event) = event else {
            conversion.problem(
                location,
                ProblemKind::Skipped,
                format!("Gemini CLI has no counterpart of Claude Code's {claude_event} event"),
            );
            continue;
        };
        let Value::Array(definitions) = definitions else {
            conversion.problem(
                location,
                ProblemKind::Skipped,
                format!(
                    "must be a list of hook definitions, not {}",
                    json_type(definitions)
                ),
            );
            continue;
        };
        if claude_event == "SubagentStop" && options.purpose == Purpose::Migrate {
            conversion.problem(
                location.clone(),
                ProblemKind::Changed,
                "Gemini CLI has no subagent events: these hooks run as AfterAgent hooks, when \
                 the main agent finishes",
            );
        }
        for (index, definition) in definitions.iter().enumerate() {
            let location = format!("{location}[{index}]");
            let converted = convert_definition(
                &mut conversion,
                &location,
                claude_event,
                definition,
                options,
            );
            if converted.is_empty() {
                continue;
            }
            let list = conversion
                .hooks
                .entry(event.as_str().to_owned())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                list.extend(converted);
            }
        }
    }
    conversion
}

/// How one definition's matcher is carried over.
struct MatcherPlan {
    /// One Gemini definition per entry, with this matcher (`None`: no matcher).
    matchers: Vec<Option<String>>,
    /// The Claude matcher kept on each hook for [`super::claude_hook_applies`].
    claude_matcher: Option<String>,
}

/// Converts one Claude definition into zero or more Gemini definitions.
fn convert_definition(
    conversion: &mut Conversion,
    location: &str,
    claude_event: &str,
    definition: &Value,
    options: &ConvertOptions<'_>,
) -> Vec<Value> {
    let Some(definition) = definition.as_object() else {
        conversion.problem(
            location,
            ProblemKind::Skipped,
            format!(
                "a hook definition must be an object, not {}",
                json_type(definition)
            ),
        );
        return Vec::new();
    };
    let matcher = match definition.get("matcher") {
        None | Some(Value::Null) => "",
        Some(Value::String(matcher)) => matcher.as_str(),
        Some(other) => {
            conversion.problem(
                location,
                ProblemKind::Skipped,
                format!("matcher must be a string, not {}", json_type(other)),
            );
            return Vec::new();
        }
    };
    let Some(Value::Array(hooks)) = definition.get("hooks") else {
        conversion.problem(
            location,
            ProblemKind::Skipped,
            "the definition has no list of hooks",
        );
        return Vec::new();
    };
    let plan = match plan_matcher(conversion, location, claude_event, matcher, options.purpose) {
        Ok(plan) => plan,
        Err(message) => {
            conversion.problem(location, ProblemKind::Skipped, message);
            return Vec::new();
        }
    };
    let mut converted: Vec<Value> = Vec::new();
    for (index, hook) in hooks.iter().enumerate() {
        let location = format!("{location}.hooks[{index}]");
        if let Some(mut hook) = convert_hook(conversion, &location, claude_event, hook, options) {
            if let Some(matcher) = &plan.claude_matcher {
                hook.insert("claude_matcher".to_owned(), Value::from(matcher.as_str()));
            }
            converted.push(Value::Object(hook));
        }
    }
    if converted.is_empty() {
        return Vec::new();
    }
    plan.matchers
        .into_iter()
        .map(|matcher| {
            let mut gemini = Map::new();
            if let Some(matcher) = matcher {
                gemini.insert("matcher".to_owned(), Value::from(matcher));
            }
            gemini.insert("hooks".to_owned(), Value::Array(converted.clone()));
            Value::Object(gemini)
        })
        .collect()
}

/// The values Claude Code matches the matcher of a trigger event against.
fn trigger_values(claude_event: &str) -> &'static [&'static str] {
    match claude_event {
        "SessionStart" => &["startup", "resume", "clear", "compact"],
        "PreCompact" => &["manual", "auto"],
        "SessionEnd" => &["clear", "exit", "logout", "prompt_input_exit", "other"],
        _ => &[],
    }
}

fn plan_matcher(
    conversion: &mut Conversion,
    location: &str,
    claude_event: &str,
    matcher: &str,
    purpose: Purpose,
) -> Result<MatcherPlan, String> {
    let everything = MatcherPlan {
        matchers: vec![None],
        claude_matcher: None,
    };
    let trimmed = matcher.trim();
    if trimmed.is_empty() || trimmed == "*" {
        return Ok(everything);
    }
    if matches!(claude_event, "UserPromptSubmit" | "Stop") {
        // Claude Code ignores these matchers too.
        return Ok(everything);
    }
    if !is_valid_claude_matcher(matcher) {
        return Err(format!(
            "matcher {matcher:?} is not a valid regular expression, so Claude Code never runs \
             these hooks"
        ));
    }
    match claude_event {
        "PreToolUse" | "PostToolUse" => Ok(MatcherPlan {
            matchers: vec![Some(claude_matcher_to_gemini(matcher))],
            claude_matcher: None,
        }),
        "SessionStart" | "PreCompact" | "SessionEnd" => {
            let values = trigger_values(claude_event);
            let selected: Vec<&str> = values
                .iter()
                .copied()
                .filter(|value| claude_matcher_matches(matcher, value))
                .collect();
            if selected.is_empty() {
                return Err(format!(
                    "matcher {matcher:?} selects none of {claude_event}'s values ({})",
                    values.join(", ")
                ));
            }
            if selected.len() == values.len() {
                return Ok(everything);
            }
            Ok(MatcherPlan {
                matchers: selected
                    .into_iter()
                    .map(|value| Some(value.to_owned()))
                    .collect(),
                claude_matcher: None,
            })
        }
        "Notification" => match purpose {
            Purpose::Layer => Ok(MatcherPlan {
                matchers: vec![None],
                claude_matcher: Some(trimmed.to_owned()),
            }),
            Purpose::Migrate if claude_matcher_matches(matcher, "permission_prompt") => {
                Ok(everything)
            }
            Purpose::Migrate => Err(format!(
                "Gemini CLI only notifies hooks of tool permission prompts and cannot filter \
                 notifications; matcher {matcher:?} does not select permission_prompt, so the \
                 hook would run at the wrong times"
            )),
        },
        // Claude Code's own events keep Claude's matcher, in hookd's form, on the field
        // Claude Code matches (`HookEventName::matcher_field`).
        _ if super::claude_own_event(claude_event).is_some_and(|e| e.matcher_field().is_some()) => {
            Ok(MatcherPlan {
                matchers: vec![Some(claude_matcher_verbatim(matcher))],
                claude_matcher: None,
            })
        }
        "SubagentStop" => match purpose {
            Purpose::Layer => Ok(MatcherPlan {
                matchers: vec![None],
                claude_matcher: Some(trimmed.to_owned()),
            }),
            Purpose::Migrate => {
                conversion.problem(
                    location,
                    ProblemKind::Changed,
                    format!(
                        "Gemini CLI cannot filter by agent type; matcher {matcher:?} is dropped \
                         and the hooks run whenever the agent finishes"
                    ),
                );
                Ok(everything)
            }
        },
        _ => Ok(everything),
    }
}

/// Converts one Claude hook entry into a Gemini one, or reports why it cannot be.
fn convert_hook(
    conversion: &mut Conversion,
    location: &str,
    claude_event: &str,
    hook: &Value,
    options: &ConvertOptions<'_>,
) -> Option<Map<String, Value>> {
    let Some(hook) = hook.as_object() else {
        conversion.problem(
            location,
            ProblemKind::Skipped,
            format!("a hook must be an object, not {}", json_type(hook)),
        );
        return None;
    };
    match hook.get("type") {
        Some(Value::String(kind)) if kind == "command" => {}
        Some(Value::String(kind)) => {
            conversion.problem(
                location,
                ProblemKind::Skipped,
                format!(
                    "Claude Code's {kind:?} hooks have no counterpart: Gemini CLI and hookd run \
                     only command hooks"
                ),
            );
            return None;
        }
        _ => {
            conversion.problem(location, ProblemKind::Skipped, "the hook has no type");
            return None;
        }
    }
    let command = match hook.get("command") {
        Some(Value::String(command)) if !command.trim().is_empty() => command.as_str(),
        _ => {
            conversion.problem(location, ProblemKind::Skipped, "the hook has no command");
            return None;
        }
    };
    if options.purpose == Purpose::Migrate && is_relay_command(command) {
        conversion.problem(
            location,
            ProblemKind::Skipped,
            "this is hookd's relay wiring for Claude Code, not a hook; Gemini CLI needs its own \
             relay entries",
        );
        return None;
    }
    // Exec form: `command` is the program and `args` its arguments, spawned with no shell.
    // hookd runs a command line, so each word is quoted (placeholders left to expand).
    let exec_form = match hook.get("args") {
        None | Some(Value::Null) => None,
        Some(Value::Array(args)) if args.iter().all(Value::is_string) => {
            let words: Vec<&str> = args.iter().filter_map(Value::as_str).collect();
            // hookd's guarded copy of an exec-form hook (`sh -c GUARD PROGRAM ARGS...`) reads
            // as the guarded copy of the program's line, which hookd recognises.
            let guarded = command == "sh"
                && words.len() >= 3
                && words[0] == "-c"
                && words[1] == crate::dialect::FALLBACK_EXEC_SCRIPT;
            let words = if guarded { &words[2..] } else { &words[..] };
            let (program, arguments) = if guarded {
                (words[0], &words[1..])
            } else {
                (command, words)
            };
            let mut line = String::from("exec ");
            line.push_str(&quote_exec_word(program));
            for arg in arguments {
                line.push(' ');
                line.push_str(&quote_exec_word(arg));
            }
            Some(if guarded {
                crate::dialect::fallback_command(&line)
            } else {
                line
            })
        }
        Some(other) => {
            conversion.problem(
                location,
                ProblemKind::Skipped,
                format!("args must be a list of strings, not {other}"),
            );
            return None;
        }
    };
    let command = exec_form.as_deref().unwrap_or(command);
    let uses_plugin_root = mentions_variable(command, "CLAUDE_PLUGIN_ROOT");
    if uses_plugin_root && options.plugin_root.is_none() {
        conversion.problem(
            location,
            ProblemKind::Skipped,
            "the command uses ${CLAUDE_PLUGIN_ROOT}, which only a Claude Code plugin defines",
        );
        return None;
    }
    let command = match options.purpose {
        Purpose::Layer => rename_variable(command, "CLAUDE_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
        Purpose::Migrate => rename_variable(command, "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"),
    };

    let rewake = hook
        .get("asyncRewake")
        .is_some_and(|value| value != &Value::Bool(false));
    let mut gemini = Map::new();
    gemini.insert("type".to_owned(), Value::from("command"));
    gemini.insert("command".to_owned(), Value::from(command));
    for (key, value) in hook {
        match key.as_str() {
            "type" | "command" | "args" => {}
            "timeout" => match timeout_ms(value) {
                Some(ms) => {
                    gemini.insert("timeout".to_owned(), Value::from(ms));
                }
                None => conversion.problem(
                    location,
                    ProblemKind::Changed,
                    format!(
                        "timeout must be a positive number of seconds, not {value}; {}",
                        match options.purpose {
                            // A layer's hook keeps the Claude dialect, and its default.
                            Purpose::Layer => "Claude Code's default of 600 seconds applies",
                            Purpose::Migrate => "the default of 60 seconds applies",
                        }
                    ),
                ),
            },
            "statusMessage" => {
                if let Value::String(message) = value {
                    gemini.insert("description".to_owned(), Value::from(message.as_str()));
                }
            }
            "async" if value == &Value::Bool(false) => {}
            // `asyncRewake` (below) decides for a hook that has both.
            "async" if rewake => {}
            // hookd's own `async` key means the same: run in the background, outside the
            // decision (`crate::exec::parse_async`). Gemini CLI ignores it in a migrated file.
            "async" if value == &Value::Bool(true) => {
                gemini.insert("async".to_owned(), Value::Bool(true));
                if options.purpose == Purpose::Migrate {
                    conversion.problem(
                        location,
                        ProblemKind::Changed,
                        "async is kept for hookd, which runs the hook in the background; \
                         Gemini CLI itself ignores it and waits for the hook",
                    );
                }
            }
            "async" => conversion.problem(
                location,
                ProblemKind::Changed,
                format!("async must be true or false, not {value}; the event waits for the hook"),
            ),
            "asyncRewake" if value == &Value::Bool(false) => {}
            // A background hook whose exit 2 wakes the model later: a relay has answered
            // Claude Code by then and cannot wake it. Run in the event instead, so an exit 2
            // reaches the model at once, as a blocking answer, rather than never.
            "asyncRewake" => conversion.problem(
                location,
                ProblemKind::Changed,
                "asyncRewake cannot wake Claude Code through the relay once it has answered; \
                 the event waits for the hook, so its exit 2 reaches the model at once",
            ),
            // A settings file's `once` hook runs on every matching event in Claude Code
            // 2.1.328 (interop scenario `claude-once`), as it does here.
            "once" => {}
            // hookd checks `if` itself (`crate::dialect::condition`), for both dialects; Gemini CLI
            // does not.
            "if" => match (options.purpose, Condition::parse(value)) {
                (Purpose::Layer, Ok(_)) => {
                    gemini.insert("if".to_owned(), value.clone());
                }
                (Purpose::Layer, Err(error)) => conversion.problem(
                    location,
                    ProblemKind::Changed,
                    format!("{error}: the hook runs on every matching event"),
                ),
                (Purpose::Migrate, _) => conversion.problem(
                    location,
                    ProblemKind::Changed,
                    format!(
                        "the condition `if`: {value} is not supported by Gemini CLI: the hook \
                         runs on every matching event (hookd checks it)"
                    ),
                ),
            },
            // Claude Code's `onFailure` is hookd's `on_failure` (hookd's failure policy).
            "onFailure" => match value.as_str() {
                Some("block") if options.purpose == Purpose::Layer => {
                    // `onFailure` stays too: a Claude hook's failure is worded as Claude
                    // Code words it (`super::claude_hook_result`).
                    gemini.insert("on_failure".to_owned(), Value::from("deny"));
                    gemini.insert("onFailure".to_owned(), Value::from("block"));
                }
                Some("continue") => {}
                _ => conversion.problem(
                    location,
                    ProblemKind::Changed,
                    format!("onFailure {value} is dropped: a failed hook does not block"),
                ),
            },
            "shell" if value.as_str() == Some("bash") => {}
            "shell" => conversion.problem(
                location,
                ProblemKind::Changed,
                format!("shell {value} is not supported: the command runs with bash"),
            ),
            other => conversion.problem(
                location,
                ProblemKind::Changed,
                format!("key {other:?} has no counterpart and is dropped"),
            ),
        }
    }
    if let (true, Some(root)) = (uses_plugin_root, options.plugin_root) {
        let mut env = Map::new();
        env.insert("CLAUDE_PLUGIN_ROOT".to_owned(), Value::from(root));
        gemini.insert("env".to_owned(), Value::Object(env));
    }
    if options.purpose == Purpose::Layer {
        gemini.insert("dialect".to_owned(), Value::from("claude"));
        gemini.insert("claude_event".to_owned(), Value::from(claude_event));
    }
    Some(gemini)
}

/// One word of an exec-form hook as shell text that stands for exactly that word: single
/// quotes around everything, except Claude Code's path placeholders (`${CLAUDE_PROJECT_DIR}`,
/// `${CLAUDE_PLUGIN_ROOT}`, `${CLAUDE_PLUGIN_DATA}`), which are double-quoted so the shell
/// substitutes them as plain text, as Claude Code does per element.
fn quote_exec_word(word: &str) -> String {
    const PLACEHOLDERS: [&str; 3] = [
        "${CLAUDE_PROJECT_DIR}",
        "${CLAUDE_PLUGIN_ROOT}",
        "${CLAUDE_PLUGIN_DATA}",
    ];
    let single = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let mut out = String::new();
    let mut rest = word;
    loop {
        let next = PLACEHOLDERS
            .iter()
            .filter_map(|placeholder| rest.find(placeholder).map(|at| (at, *placeholder)))
            .min_by_key(|(at, _)| *at);
        let Some((at, placeholder)) = next else {
            break;
        };
        if at > 0 {
            out.push_str(&single(&rest[..at]));
        }
        out.push('"');
        out.push_str(placeholder);
        out.push('"');
        rest = &rest[at + placeholder.len()..];
    }
    if !rest.is_empty() || out.is_empty() {
        out.push_str(&single(rest));
    }
    out
}

/// Claude's timeout in seconds as milliseconds: a positive, finite number, rounded.
fn timeout_ms(value: &Value) -> Option<u64> {
    let seconds = value.as_f64()?;
    if !seconds.is_finite() || seconds <= 0.0 {
        return None;
    }
    // `as` saturates for absurdly large values, which is what we want.
    Some((seconds * 1000.0).round().max(1.0) as u64)
}

/// Whether `command` mentions `$NAME` or `${NAME...}` (the name ending at a word boundary).
fn mentions_variable(command: &str, name: &str) -> bool {
    command.contains(&format!("${{{name}")) || find_bare(command, name, 0).is_some()
}

/// The byte offset of the next bare `$NAME` at or after `from` that is not followed by
/// another name character.
fn find_bare(command: &str, name: &str, from: usize) -> Option<usize> {
    let needle = format!("${name}");
    let mut at = from;
    while let Some(found) = command.get(at..)?.find(&needle) {
        let start = at + found;
        let end = start + needle.len();
        let continues = command[end..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if !continues {
            return Some(start);
        }
        at = end;
    }
    None
}

/// `command` with `$FROM` (bare, at a word boundary) and `${FROM}` both written `${TO}`;
/// braced forms with an operator (`${FROM:-x}`) keep it.
fn rename_variable(command: &str, from: &str, to: &str) -> String {
    let mut renamed = String::with_capacity(command.len() + 8);
    let mut rest_from = 0;
    let mut at = 0;
    while let Some(start) = find_bare(command, from, at) {
        renamed.push_str(&command[rest_from..start]);
        renamed.push_str(&format!("${{{to}}}"));
        rest_from = start + from.len() + 1;
        at = rest_from;
    }
    renamed.push_str(&command[rest_from..]);
    renamed.replace(&format!("${{{from}"), &format!("${{{to}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(conversion: &Conversion) -> Vec<String> {
        conversion
            .problems
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn variables_are_renamed_at_word_boundaries() {
        let cases = [
            ("$CLAUDE_PROJECT_DIR/x.sh", "${GEMINI_PROJECT_DIR}/x.sh"),
            (
                "\"$CLAUDE_PROJECT_DIR\"/.claude/h.sh",
                "\"${GEMINI_PROJECT_DIR}\"/.claude/h.sh",
            ),
            ("${CLAUDE_PROJECT_DIR}/x", "${GEMINI_PROJECT_DIR}/x"),
            ("${CLAUDE_PROJECT_DIR:-.}/x", "${GEMINI_PROJECT_DIR:-.}/x"),
            (
                "$CLAUDE_PROJECT_DIRX $CLAUDE_PROJECT_DIR",
                "$CLAUDE_PROJECT_DIRX ${GEMINI_PROJECT_DIR}",
            ),
            (
                "a $CLAUDE_PROJECT_DIR b $CLAUDE_PROJECT_DIR",
                "a ${GEMINI_PROJECT_DIR} b ${GEMINI_PROJECT_DIR}",
            ),
            ("echo none", "echo none"),
        ];
        for (command, expected) in cases {
            assert_eq!(
                rename_variable(command, "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"),
                expected
            );
        }
        assert!(mentions_variable(
            "${CLAUDE_PLUGIN_ROOT}/x",
            "CLAUDE_PLUGIN_ROOT"
        ));
        assert!(mentions_variable(
            "$CLAUDE_PLUGIN_ROOT/x",
            "CLAUDE_PLUGIN_ROOT"
        ));
        assert!(!mentions_variable(
            "$CLAUDE_PLUGIN_ROOTS/x",
            "CLAUDE_PLUGIN_ROOT"
        ));
    }

    #[test]
    fn timeouts_become_milliseconds() {
        let cases = [
            (json!(30), Some(30_000)),
            (json!(1.5), Some(1_500)),
            (json!(0.0001), Some(1)),
            (json!(0), None),
            (json!(-5), None),
            (json!("30"), None),
        ];
        for (value, expected) in cases {
            assert_eq!(timeout_ms(&value), expected, "{value}");
        }
    }

    /// A settings file with one of everything, converted both ways.
    #[test]
    fn settings_convert_for_both_purposes() {
        let settings = json!({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [
                        {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "timeout": 30},
                        {"type": "prompt", "prompt": "Is this safe? $ARGUMENTS"},
                        {"type": "command", "command": "hookctl relay PreToolUse --dialect claude"}
                    ]},
                    {"matcher": "Edit|MultiEdit|Write", "hooks": [
                        {"type": "command", "command": "fmt.sh", "statusMessage": "Formatting", "async": true}
                    ]},
                    {"matcher": "[bad", "hooks": [{"type": "command", "command": "never.sh"}]}
                ],
                "Stop": [{"hooks": [{"type": "command", "command": "stop.sh"}]}],
                "SubagentStop": [{"matcher": "reviewer", "hooks": [{"type": "command", "command": "sub.sh"}]}],
                "SessionStart": [{"matcher": "startup|resume", "hooks": [{"type": "command", "command": "ctx.sh", "timeout": "soon"}]}],
                "PreCompact": [{"matcher": "*", "hooks": [{"type": "command", "command": "save.sh"}]}],
                "Notification": [
                    {"matcher": "permission_prompt", "hooks": [{"type": "command", "command": "ding.sh"}]},
                    {"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "nudge.sh"}]}
                ],
                "UserPromptSubmit": [{"matcher": "ignored", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/p.sh"}]}],
                "PermissionRequest": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "x"}]}],
                "SessionEnd": {"hooks": []}
            }
        });

        let migrated = convert_claude_settings(&settings, Purpose::Migrate);
        assert_eq!(
            Value::Object(migrated.hooks.clone()),
            json!({
                "BeforeTool": [
                    {"matcher": "^run_shell_command$", "hooks": [
                        {"type": "command", "command": "\"${GEMINI_PROJECT_DIR}\"/.claude/hooks/guard.sh", "timeout": 30000}
                    ]},
                    {"matcher": "^(?:replace|write_file)$", "hooks": [
                        {"type": "command", "command": "fmt.sh", "description": "Formatting", "async": true}
                    ]}
                ],
                "AfterAgent": [
                    {"hooks": [{"type": "command", "command": "stop.sh"}]},
                    {"hooks": [{"type": "command", "command": "sub.sh"}]}
                ],
                "SessionStart": [
                    {"matcher": "startup", "hooks": [{"type": "command", "command": "ctx.sh"}]},
                    {"matcher": "resume", "hooks": [{"type": "command", "command": "ctx.sh"}]}
                ],
                "PreCompress": [{"hooks": [{"type": "command", "command": "save.sh"}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "ding.sh"}]}]
            })
        );
        assert_eq!(migrated.definition_count(), 8);
        assert_eq!(
            problems(&migrated),
            [
                "hooks.PreToolUse[0].hooks[1]: not converted: Claude Code's \"prompt\" hooks have no counterpart: Gemini CLI and hookd run only command hooks",
                "hooks.PreToolUse[0].hooks[2]: not converted: this is hookd's relay wiring for Claude Code, not a hook; Gemini CLI needs its own relay entries",
                "hooks.PreToolUse[1].hooks[0]: converted with a change: async is kept for hookd, which runs the hook in the background; Gemini CLI itself ignores it and waits for the hook",
                "hooks.PreToolUse[2]: not converted: matcher \"[bad\" is not a valid regular expression, so Claude Code never runs these hooks",
                "hooks.SubagentStop: converted with a change: Gemini CLI has no subagent events: these hooks run as AfterAgent hooks, when the main agent finishes",
                "hooks.SubagentStop[0]: converted with a change: Gemini CLI cannot filter by agent type; matcher \"reviewer\" is dropped and the hooks run whenever the agent finishes",
                "hooks.SessionStart[0].hooks[0]: converted with a change: timeout must be a positive number of seconds, not \"soon\"; the default of 60 seconds applies",
                "hooks.Notification[1]: not converted: Gemini CLI only notifies hooks of tool permission prompts and cannot filter notifications; matcher \"idle_prompt\" does not select permission_prompt, so the hook would run at the wrong times",
                "hooks.UserPromptSubmit[0].hooks[0]: not converted: the command uses ${CLAUDE_PLUGIN_ROOT}, which only a Claude Code plugin defines",
                "hooks.PermissionRequest: not converted: Gemini CLI has no counterpart of Claude Code's PermissionRequest event",
                "hooks.SessionEnd: not converted: must be a list of hook definitions, not an object",
            ]
        );
        assert_eq!(migrated.problems_of(ProblemKind::Skipped).count(), 7);

        let layer = convert_claude_hooks(
            &settings,
            &ConvertOptions {
                purpose: Purpose::Layer,
                plugin_root: Some("/opt/plugins/fmt"),
            },
        );
        assert_eq!(
            Value::Object(layer.hooks.clone()),
            json!({
                "BeforeTool": [
                    {"matcher": "^run_shell_command$", "hooks": [
                        {"type": "command", "command": "\"${CLAUDE_PROJECT_DIR}\"/.claude/hooks/guard.sh", "timeout": 30000, "dialect": "claude", "claude_event": "PreToolUse"},
                        {"type": "command", "command": "hookctl relay PreToolUse --dialect claude", "dialect": "claude", "claude_event": "PreToolUse"}
                    ]},
                    {"matcher": "^(?:replace|write_file)$", "hooks": [
                        {"type": "command", "command": "fmt.sh", "description": "Formatting", "async": true, "dialect": "claude", "claude_event": "PreToolUse"}
                    ]}
                ],
                "AfterAgent": [
                    {"hooks": [{"type": "command", "command": "stop.sh", "dialect": "claude", "claude_event": "Stop"}]},
                    {"hooks": [{"type": "command", "command": "sub.sh", "dialect": "claude", "claude_event": "SubagentStop", "claude_matcher": "reviewer"}]}
                ],
                "SessionStart": [
                    {"matcher": "startup", "hooks": [{"type": "command", "command": "ctx.sh", "dialect": "claude", "claude_event": "SessionStart"}]},
                    {"matcher": "resume", "hooks": [{"type": "command", "command": "ctx.sh", "dialect": "claude", "claude_event": "SessionStart"}]}
                ],
                "PreCompress": [{"hooks": [{"type": "command", "command": "save.sh", "dialect": "claude", "claude_event": "PreCompact"}]}],
                "Notification": [
                    {"hooks": [{"type": "command", "command": "ding.sh", "dialect": "claude", "claude_event": "Notification", "claude_matcher": "permission_prompt"}]},
                    {"hooks": [{"type": "command", "command": "nudge.sh", "dialect": "claude", "claude_event": "Notification", "claude_matcher": "idle_prompt"}]}
                ],
                "BeforeAgent": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/p.sh", "env": {"CLAUDE_PLUGIN_ROOT": "/opt/plugins/fmt"}, "dialect": "claude", "claude_event": "UserPromptSubmit"}]}],
                // Claude Code's own events are held under their own name; the matcher keeps
                // Claude's tool names.
                "PermissionRequest": [{"matcher": "^(?:Bash|Write)$", "hooks": [{"type": "command", "command": "x", "dialect": "claude", "claude_event": "PermissionRequest"}]}]
            })
        );
        // The layer keeps relay entries (the registry skips them) and reports no lost
        // matcher: the hooks carry it.
        let layer_problems = problems(&layer);
        assert_eq!(layer_problems.len(), 4, "{layer_problems:#?}");
        assert!(
            !layer_problems
                .iter()
                .any(|p| p.contains("relay") || p.contains("agent type"))
        );
    }

    #[test]
    fn converted_layers_parse_as_gemini_settings() {
        let settings = json!({"hooks": {
            "PreToolUse": [{"matcher": "Read|Grep", "hooks": [{"type": "command", "command": "x.sh", "timeout": 2}]}],
            "SessionEnd": [{"matcher": "clear|logout", "hooks": [{"type": "command", "command": "y.sh"}]}]
        }});
        let layer = convert_claude_settings(&settings, Purpose::Layer);
        let mut root = Map::new();
        root.insert("hooks".to_owned(), Value::Object(layer.hooks));
        let parsed = crate::settings::parse_settings(
            crate::model::Source::Project,
            std::path::Path::new("/srv/p/.claude/settings.json"),
            &Value::Object(root).to_string(),
            &|_: &str| None,
        );
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let layer = parsed.layer.expect("a layer");
        let hooks: Vec<(String, Option<String>, u64, crate::dialect::Dialect)> = layer
            .hooks
            .iter()
            .flat_map(|event| {
                event.definitions.iter().flat_map(move |definition| {
                    definition.hooks.iter().map(move |hook| {
                        (
                            event.event.to_string(),
                            definition.matcher.clone(),
                            hook.timeout_ms(),
                            hook.dialect(),
                        )
                    })
                })
            })
            .collect();
        let claude = crate::dialect::Dialect::CLAUDE;
        assert_eq!(
            hooks,
            [
                (
                    "BeforeTool".to_owned(),
                    Some("^(?:read_file|grep_search)$".to_owned()),
                    2000,
                    claude
                ),
                (
                    "SessionEnd".to_owned(),
                    Some("clear".to_owned()),
                    600_000,
                    claude
                ),
                (
                    "SessionEnd".to_owned(),
                    Some("logout".to_owned()),
                    600_000,
                    claude
                ),
            ]
        );
    }

    #[test]
    fn odd_documents_are_reported() {
        let cases = [
            (
                json!([]),
                vec![
                    "(top level): not converted: Claude Code settings must be a JSON object, not an array",
                ],
            ),
            (json!({}), vec![]),
            (json!({"hooks": null}), vec![]),
            (
                json!({"hooks": "x"}),
                vec!["hooks: not converted: must be an object of events, not a string"],
            ),
            (
                json!({"hooks": {"Stop": [3, {"hooks": 1}, {"matcher": 2, "hooks": []}, {"hooks": [null, {"type": "command"}, {"command": "x"}]}]}}),
                vec![
                    "hooks.Stop[0]: not converted: a hook definition must be an object, not a number",
                    "hooks.Stop[1]: not converted: the definition has no list of hooks",
                    "hooks.Stop[2]: not converted: matcher must be a string, not a number",
                    "hooks.Stop[3].hooks[0]: not converted: a hook must be an object, not null",
                    "hooks.Stop[3].hooks[1]: not converted: the hook has no command",
                    "hooks.Stop[3].hooks[2]: not converted: the hook has no type",
                ],
            ),
            (
                json!({"hooks": {"PreCompact": [{"matcher": "weekly", "hooks": [{"type": "command", "command": "x", "once": true, "if": "Bash(git *)", "shell": "powershell", "color": "red"}]}]}}),
                vec![
                    "hooks.PreCompact[0]: not converted: matcher \"weekly\" selects none of PreCompact's values (manual, auto)",
                ],
            ),
            (
                json!({"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "x", "once": true, "if": "Bash(git *)", "shell": "powershell", "color": "red", "async": false}]}]}}),
                vec![
                    "hooks.PreCompact[0].hooks[0]: converted with a change: the condition `if`: \"Bash(git *)\" is not supported by Gemini CLI: the hook runs on every matching event (hookd checks it)",
                    "hooks.PreCompact[0].hooks[0]: converted with a change: shell \"powershell\" is not supported: the command runs with bash",
                    "hooks.PreCompact[0].hooks[0]: converted with a change: key \"color\" has no counterpart and is dropped",
                ],
            ),
        ];
        for (settings, expected) in cases {
            let conversion = convert_claude_settings(&settings, Purpose::Migrate);
            assert_eq!(problems(&conversion), expected, "{settings}");
        }
    }

    #[test]
    fn async_is_kept_and_async_rewake_waits() {
        // (hook keys beside type and command, converted hook's `async`, layer problems)
        let cases = [
            (json!({}), None, vec![]),
            (json!({"async": false}), None, vec![]),
            (json!({"async": true}), Some(true), vec![]),
            (
                json!({"async": "yes"}),
                None,
                vec![
                    "hooks.Stop[0].hooks[0]: converted with a change: async must be true or false, not \"yes\"; the event waits for the hook",
                ],
            ),
            (
                json!({"asyncRewake": true}),
                None,
                vec![
                    "hooks.Stop[0].hooks[0]: converted with a change: asyncRewake cannot wake Claude Code through the relay once it has answered; the event waits for the hook, so its exit 2 reaches the model at once",
                ],
            ),
            (
                json!({"async": true, "asyncRewake": true}),
                None,
                vec![
                    "hooks.Stop[0].hooks[0]: converted with a change: asyncRewake cannot wake Claude Code through the relay once it has answered; the event waits for the hook, so its exit 2 reaches the model at once",
                ],
            ),
            (
                json!({"async": true, "asyncRewake": false}),
                Some(true),
                vec![],
            ),
        ];
        for (keys, expected_async, expected_problems) in cases {
            let mut hook = json!({"type": "command", "command": "x.sh"});
            if let (Some(hook), Some(keys)) = (hook.as_object_mut(), keys.as_object()) {
                hook.extend(keys.clone());
            }
            let settings = json!({"hooks": {"Stop": [{"hooks": [hook]}]}});
            let layer = convert_claude_settings(&settings, Purpose::Layer);
            let converted = &layer.hooks["AfterAgent"][0]["hooks"][0];
            assert_eq!(
                converted.get("async").and_then(Value::as_bool),
                expected_async,
                "{keys}"
            );
            assert_eq!(problems(&layer), expected_problems, "{keys}");
        }
    }

    #[test]
    fn exec_form_args_become_one_quoted_command_line() {
        // (command, args, command line)
        let cases = [
            (
                "/usr/bin/guard",
                json!(["--strict"]),
                "exec '/usr/bin/guard' '--strict'",
            ),
            (
                "${CLAUDE_PLUGIN_ROOT}/bin/fmt",
                json!(["it's", "$HOME", "a b", ""]),
                r#"exec "${CLAUDE_PLUGIN_ROOT}"'/bin/fmt' 'it'\''s' '$HOME' 'a b' ''"#,
            ),
            (
                "node",
                json!(["${CLAUDE_PROJECT_DIR}/x.js", "pre${CLAUDE_PLUGIN_DATA}"]),
                r#"exec 'node' "${CLAUDE_PROJECT_DIR}"'/x.js' 'pre'"${CLAUDE_PLUGIN_DATA}""#,
            ),
            // hookd's guarded copy of an exec-form hook: the copy of the program's line.
            (
                "sh",
                json!([
                    "-c",
                    crate::dialect::FALLBACK_EXEC_SCRIPT,
                    "node",
                    "${CLAUDE_PROJECT_DIR}/x.js"
                ]),
                "command -v hookd-relay >/dev/null 2>&1 || { exec 'node' \"${CLAUDE_PROJECT_DIR}\"'/x.js'\n}",
            ),
            // Anything else run by `sh -c` is a hook.
            (
                "sh",
                json!(["-c", "exit 0", "x"]),
                "exec 'sh' '-c' 'exit 0' 'x'",
            ),
        ];
        for (command, args, line) in cases {
            let settings = json!({"hooks": {"Stop": [{"hooks": [
                {"type": "command", "command": command, "args": args}
            ]}]}});
            let layer = convert_claude_hooks(
                &settings,
                &ConvertOptions {
                    purpose: Purpose::Layer,
                    plugin_root: Some("/opt/p"),
                },
            );
            assert_eq!(
                layer.hooks["AfterAgent"][0]["hooks"][0]["command"],
                json!(line),
                "{command}"
            );
            assert!(layer.problems.is_empty(), "{:?}", layer.problems);
        }
        let bad = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "args": "-v"}]}]}});
        let layer = convert_claude_settings(&bad, Purpose::Layer);
        assert!(layer.hooks.is_empty());
        assert_eq!(layer.problems_of(ProblemKind::Skipped).count(), 1);
    }

    #[test]
    fn layers_keep_if_and_on_failure() {
        let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "x", "if": "Bash(git *)", "onFailure": "block"},
            {"type": "command", "command": "y", "if": "Bash(git *", "onFailure": "continue"}
        ]}]}});
        let layer = convert_claude_settings(&settings, Purpose::Layer);
        let hooks = &layer.hooks["BeforeTool"][0]["hooks"];
        assert_eq!(hooks[0]["if"], json!("Bash(git *)"));
        assert_eq!(hooks[0]["on_failure"], json!("deny"));
        assert_eq!(hooks[1].get("if"), None);
        assert_eq!(hooks[1].get("on_failure"), None);
        assert_eq!(
            problems(&layer),
            [
                "hooks.PreToolUse[0].hooks[1]: converted with a change: `if` \"Bash(git *\" is not a permission rule such as \"Bash(git *)\": the hook runs on every matching event"
            ]
        );
    }
}
