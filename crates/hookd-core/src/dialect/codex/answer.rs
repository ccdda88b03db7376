//! The daemon's aggregate as Codex CLI's answer, with only answers Codex reads as meant.
//!
//! Codex CLI reads the answer shapes of Claude Code, so the answer starts as Claude Code's
//! ([`crate::dialect::answer_for_claude_input`]) and is then made safe for Codex's stricter
//! parser, which treats every answer it does not accept as a *failed* hook and lets the tool
//! run (fail open):
//!
//! | hookd decision | Claude Code answer | Codex CLI answer |
//! |---|---|---|
//! | `PreToolUse` deny | `permissionDecision: "deny"` | the same, the reason never empty |
//! | `PreToolUse` ask | `permissionDecision: "ask"` | **deny**, the reason saying a confirmation was asked for (Codex has no `ask`; letting the call run would skip the confirmation) |
//! | `PreToolUse` allow, no rewrite | `permissionDecision: "allow"` | nothing (no opinion: a bare `allow` is a failed hook in Codex) |
//! | `PreToolUse` rewrite | `updatedInput` (+ `allow` if given) | `permissionDecision: "allow"` + `updatedInput` |
//! | `PreToolUse` stop (`continue: false`) | `continue: false` | **deny** with the stop reason (Codex rejects `continue` here) |
//! | `PermissionRequest` | `decision.behavior` | the same; `updatedInput`, `updatedPermissions`, `interrupt` dropped, an `allow` that carried them becomes no verdict |
//! | `Stop`/`SubagentStop` block while `stop_hook_active` | `decision: "block"` | nothing: the turn ends (Codex has no loop limit) |
//! | exit 2 | reason on stderr | the same, stderr never empty |
//!
//! `suppressOutput` is dropped where Codex rejects it (`PreToolUse`, `PostToolUse`,
//! `PermissionRequest`); `SessionEnd`, `PreCompact` and `PostCompact` answer with the
//! universal fields only.

use serde_json::{Map, Value};

use crate::dialect::{HostAnswer, answer_for_claude, answer_for_claude_input};
use crate::event::HookEventName;
use crate::result::HookResult;

/// Takes back the rewritten input of a Codex-dialect `PreToolUse` hook that did not say
/// `permissionDecision: "allow"` itself: Codex applies `updatedInput` only together with an
/// explicit allow (alone, or with a legacy `decision: "approve"`, it is a failed hook and the
/// command runs as the model wrote it), so hookd must not rewrite the command either.
pub fn drop_unapproved_rewrite(result: &mut HookResult) {
    if result.event != HookEventName::BeforeTool {
        return;
    }
    let rewrites = result
        .output
        .as_ref()
        .and_then(|output| output.get("hookSpecificOutput"))
        .is_some_and(|specific| specific.get("tool_input").is_some());
    if !rewrites {
        return;
    }
    let said_allow = serde_json::from_str::<Value>(result.stdout.trim())
        .ok()
        .and_then(|own| {
            own.get("hookSpecificOutput")?
                .get("permissionDecision")?
                .as_str()
                .map(|decision| decision == "allow")
        })
        .unwrap_or(false);
    if said_allow {
        return;
    }
    if let Some(Value::Object(specific)) = result
        .output
        .as_mut()
        .and_then(|output| output.get_mut("hookSpecificOutput"))
    {
        specific.remove("tool_input");
    }
}

/// The reason given when nothing better is known.
const NO_REASON: &str = "blocked by a hookd hook";

/// Codex CLI's answer for `host_event` (`host_input`: the object Codex sent, empty when the
/// relay answers without it).
pub fn answer_for_codex(
    host_event: &str,
    host_input: &Map<String, Value>,
    final_output: Option<&Value>,
    errors: &[String],
) -> HostAnswer {
    let claude = if host_input.is_empty() {
        answer_for_claude(host_event, final_output, errors)
    } else {
        answer_for_claude_input(host_input, final_output, errors)
    };
    let stop_hook_active = host_input.get("stop_hook_active") == Some(&Value::Bool(true));
    codex_answer_from_claude(host_event, stop_hook_active, claude)
}

/// Claude Code's answer made safe for Codex CLI (see the module documentation).
pub fn codex_answer_from_claude(
    host_event: &str,
    stop_hook_active: bool,
    claude: HostAnswer,
) -> HostAnswer {
    if claude.exit_code == 2 {
        let stderr = if claude.stderr.trim().is_empty() {
            format!("{NO_REASON}\n")
        } else {
            claude.stderr
        };
        return HostAnswer {
            stdout: String::new(),
            stderr,
            exit_code: 2,
        };
    }
    let mut out = match serde_json::from_str::<Value>(&claude.stdout) {
        Ok(Value::Object(out)) => out,
        _ => Map::new(),
    };
    match host_event {
        "PreToolUse" => pre_tool_use(&mut out),
        "PermissionRequest" => permission_request(&mut out),
        "PostToolUse" => {
            out.remove("suppressOutput");
        }
        "Stop" | "SubagentStop"
            if stop_hook_active && out.get("decision").and_then(Value::as_str) == Some("block") =>
        {
            out.remove("decision");
            out.remove("reason");
        }
        "SessionEnd" | "PreCompact" | "PostCompact" => {
            out.remove("hookSpecificOutput");
            out.remove("decision");
            out.remove("reason");
        }
        _ => {}
    }
    HostAnswer {
        stdout: if out.is_empty() {
            String::new()
        } else {
            format!("{}\n", Value::Object(out))
        },
        stderr: claude.stderr,
        exit_code: claude.exit_code,
    }
}

/// A non-empty text, else `fallback`.
fn non_empty(text: Option<&str>, fallback: &str) -> String {
    match text.map(str::trim) {
        Some(text) if !text.is_empty() => text.to_owned(),
        _ => fallback.to_owned(),
    }
}

fn pre_tool_use(out: &mut Map<String, Value>) {
    out.remove("suppressOutput");
    let stop = out.remove("continue") == Some(Value::Bool(false));
    let stop_reason = out
        .remove("stopReason")
        .and_then(|reason| reason.as_str().map(str::to_owned));
    let mut specific = match out.remove("hookSpecificOutput") {
        Some(Value::Object(specific)) => specific,
        _ => Map::new(),
    };
    let decision = specific
        .get("permissionDecision")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let reason = specific
        .get("permissionDecisionReason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let deny = |specific: &mut Map<String, Value>, reason: String| {
        specific.remove("updatedInput");
        specific.insert("permissionDecision".to_owned(), Value::from("deny"));
        specific.insert("permissionDecisionReason".to_owned(), Value::from(reason));
    };
    match decision.as_deref() {
        Some("deny") => deny(&mut specific, non_empty(reason.as_deref(), NO_REASON)),
        Some("ask") => deny(
            &mut specific,
            format!(
                "hookd: this call needs the user's confirmation, which Codex CLI cannot ask \
                 for: {}",
                non_empty(reason.as_deref(), "no reason given")
            ),
        ),
        _ if stop => deny(
            &mut specific,
            non_empty(stop_reason.as_deref(), "hookd: the agent was told to stop"),
        ),
        _ if specific.contains_key("updatedInput") => {
            specific.insert("permissionDecision".to_owned(), Value::from("allow"));
        }
        _ => {
            specific.remove("permissionDecision");
            specific.remove("permissionDecisionReason");
        }
    }
    specific.retain(|key, _| key != "hookEventName");
    if !specific.is_empty() {
        let mut named = Map::new();
        named.insert("hookEventName".to_owned(), Value::from("PreToolUse"));
        named.extend(specific);
        out.insert("hookSpecificOutput".to_owned(), Value::Object(named));
    }
}

fn permission_request(out: &mut Map<String, Value>) {
    out.remove("suppressOutput");
    let stop = out.remove("continue") == Some(Value::Bool(false));
    let stop_reason = out
        .remove("stopReason")
        .and_then(|reason| reason.as_str().map(str::to_owned));
    let mut specific = match out.remove("hookSpecificOutput") {
        Some(Value::Object(specific)) => specific,
        _ => Map::new(),
    };
    let given = specific.remove("decision");
    let behavior = given
        .as_ref()
        .and_then(|decision| decision.get("behavior"))
        .and_then(Value::as_str);
    let reserved = given.as_ref().is_some_and(|decision| {
        ["updatedInput", "updatedPermissions", "interrupt"]
            .iter()
            .any(|key| decision.get(*key).is_some())
    });
    let message = given
        .as_ref()
        .and_then(|decision| decision.get("message"))
        .and_then(Value::as_str);
    let mut answer = Map::new();
    if behavior == Some("deny") || stop {
        answer.insert("behavior".to_owned(), Value::from("deny"));
        answer.insert(
            "message".to_owned(),
            Value::from(non_empty(message.or(stop_reason.as_deref()), NO_REASON)),
        );
    } else if behavior == Some("allow") && !reserved {
        answer.insert("behavior".to_owned(), Value::from("allow"));
    }
    if !answer.is_empty() {
        let mut named = Map::new();
        named.insert("hookEventName".to_owned(), Value::from("PermissionRequest"));
        named.insert("decision".to_owned(), Value::Object(answer));
        out.insert("hookSpecificOutput".to_owned(), Value::Object(named));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// (event, tool, stop_hook_active, hookd aggregate, expected stdout, expected exit)
    type Case = (&'static str, &'static str, bool, Value, Option<Value>, i32);

    #[test]
    fn answers_are_ones_codex_reads_as_meant() {
        let cases: Vec<Case> = vec![
            // A deny keeps a non-empty reason.
            (
                "PreToolUse",
                "Bash",
                false,
                json!({"decision": "deny", "reason": "no rm"}),
                Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "deny", "permissionDecisionReason": "no rm"}})),
                0,
            ),
            // A deny without a reason still has one.
            (
                "PreToolUse",
                "Bash",
                false,
                json!({"decision": "deny"}),
                Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "No reason provided"}})),
                0,
            ),
            // ask: Codex has none; the call is denied, never run silently.
            (
                "PreToolUse",
                "Bash",
                false,
                json!({"decision": "ask", "reason": "sure?"}),
                Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "hookd: this call needs the user's confirmation, which Codex CLI cannot ask for: sure?"}})),
                0,
            ),
            // The default allow and an explicit bare allow: no opinion.
            (
                "PreToolUse",
                "Bash",
                false,
                json!({"decision": "allow"}),
                None,
                0,
            ),
            (
                "PreToolUse",
                "Bash",
                false,
                json!({"decision": "allow", "hookSpecificOutput": {"permissionDecision": "allow"}}),
                None,
                0,
            ),
            // A rewrite is an allow with the new input, in Codex's key names.
            (
                "PreToolUse",
                "Bash",
                false,
                json!({"decision": "allow", "hookSpecificOutput": {"tool_input": {"command": "ls -a"}}}),
                Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "updatedInput": {"command": "ls -a"}, "permissionDecision": "allow"}})),
                0,
            ),
            // A stop on a tool event denies the call.
            (
                "PreToolUse",
                "Bash",
                false,
                json!({"continue": false, "stopReason": "halt"}),
                Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "deny", "permissionDecisionReason": "halt"}})),
                0,
            ),
            // Context passes.
            (
                "SessionStart",
                "",
                false,
                json!({"hookSpecificOutput": {"additionalContext": "ctx"}}),
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "SessionStart",
                    "additionalContext": "ctx"}}),
                ),
                0,
            ),
            // Stop continuation, once: not again while stop_hook_active.
            (
                "Stop",
                "",
                false,
                json!({"decision": "block", "reason": "go on"}),
                Some(json!({"decision": "block", "reason": "go on"})),
                0,
            ),
            (
                "Stop",
                "",
                true,
                json!({"decision": "block", "reason": "go on"}),
                None,
                0,
            ),
            // PermissionRequest: deny with a message; an allow with reserved fields is none.
            (
                "PermissionRequest",
                "Bash",
                false,
                json!({"decision": "deny"}),
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                    "decision": {"behavior": "deny", "message": "No reason provided"}}}),
                ),
                0,
            ),
            (
                "PermissionRequest",
                "Bash",
                false,
                json!({"hookSpecificOutput": {"decision": {"behavior": "allow",
                    "updatedInput": {"command": "x"}}}}),
                None,
                0,
            ),
            (
                "PostToolUse",
                "Bash",
                false,
                json!({"decision": "block", "reason": "bad", "suppressOutput": true}),
                Some(json!({"decision": "block", "reason": "bad"})),
                0,
            ),
        ];
        for (event, tool, active, aggregate, expected, code) in cases {
            let mut input = Map::new();
            input.insert("hook_event_name".to_owned(), json!(event));
            if !tool.is_empty() {
                input.insert("tool_name".to_owned(), json!(tool));
            }
            input.insert("stop_hook_active".to_owned(), json!(active));
            let answer = answer_for_codex(event, &input, Some(&aggregate), &[]);
            let description = format!("{event} {aggregate}");
            assert_eq!(answer.exit_code, code, "{description}");
            match expected {
                Some(expected) => {
                    let printed: Value = serde_json::from_str(&answer.stdout).expect("JSON");
                    assert_eq!(printed, expected, "{description}");
                }
                None => assert_eq!(answer.stdout, "", "{description}"),
            }
        }
    }

    #[test]
    fn without_the_stdin_object_a_deny_is_still_a_codex_deny() {
        // The relay's own answer (daemon unreachable, policy deny) has no stdin object.
        let answer = answer_for_codex(
            "PreToolUse",
            &Map::new(),
            Some(&json!({"decision": "deny", "reason": "hookd is not running"})),
            &["no daemon".to_owned()],
        );
        let printed: Value = serde_json::from_str(&answer.stdout).expect("JSON");
        assert_eq!(
            printed["hookSpecificOutput"]["permissionDecision"], "deny",
            "{printed}"
        );
        assert_eq!(
            printed["hookSpecificOutput"]["permissionDecisionReason"],
            "hookd is not running"
        );
        assert_eq!(answer.exit_code, 0);
    }

    #[test]
    fn exit_two_always_has_a_reason_on_stderr() {
        for stderr in ["", "  \n", "why\n"] {
            let answer = codex_answer_from_claude(
                "PreCompact",
                false,
                HostAnswer {
                    stdout: String::new(),
                    stderr: stderr.to_owned(),
                    exit_code: 2,
                },
            );
            assert_eq!(answer.exit_code, 2);
            assert!(!answer.stderr.trim().is_empty(), "{stderr:?}");
        }
    }
}
