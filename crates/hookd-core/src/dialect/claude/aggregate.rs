//! Claude Code's rules for merging the hooks of one firing, for the events it relays.
//!
//! Claude Code runs every matching hook of an event in parallel and merges their answers
//! itself. hookd's answer to a relayed event is one hook's answer among Claude Code's own, so
//! the hooks hookd runs for it are merged the way Claude Code would merge them had they been
//! in its settings file, not by Gemini CLI's OR-merge (which joins every hook's reason):
//!
//! | field | Gemini CLI's OR-merge | Claude Code's rule (here) |
//! |---|---|---|
//! | decision | the last `block`/`deny`, else `ask`, else `allow` | `deny` > `defer` > `ask` > `allow` (`block` counts as `deny`; a winning `defer` is kept as `hookSpecificOutput.permissionDecision`) |
//! | `reason` | every truthy reason joined with `\n` | the reason of the first hook (plan order) whose decision won; none when no hook decided |
//! | `stopReason` | every truthy stop reason joined | the last truthy one |
//! | `systemMessage`, `additionalContext` | joined with `\n` | joined with `\n` (Claude Code shows each) |
//! | `continue: false`, `suppressOutput`, `updatedInput` | as Gemini | as Gemini (any `continue: false` stops; the last input wins) |
//!
//! Claude Code takes, among several blocking answers, the one its loop reads last (hooks that
//! exit 2) or first (JSON `deny`), in the order the parallel hooks finish; hookd takes the
//! first in plan order, so the same hooks always give the same answer. Only OR-merged events
//! (the tool, agent, prompt and session events) differ; the others merge as before.

use serde_json::{Map, Value};

use crate::aggregate::{Aggregate, aggregate};
use crate::event::{HookEventName, MergeStrategy};
use crate::result::HookResult;

/// Aggregates one firing of `event` by Claude Code's rules (see the module documentation).
pub fn aggregate_claude(
    event: HookEventName,
    results: &[HookResult],
    input: &Map<String, Value>,
) -> Aggregate {
    let mut merged = aggregate(event, results, input);
    if event.merge_strategy() != MergeStrategy::OrMerge {
        return merged;
    }
    let Some(Value::Object(output)) = merged.final_output.as_mut() else {
        return merged;
    };
    // Claude Code's precedence over what each hook decided (Gemini's merge has no `defer`).
    let winner = merged
        .all_outputs
        .iter()
        .map(Verdict::of_output)
        .max()
        .unwrap_or(Verdict::None);
    if winner == Verdict::Defer {
        // Deferred: no ask or allow of another hook counts.
        output.insert("decision".to_owned(), Value::from("allow"));
        if let Some(Value::Object(specific)) = output.get_mut("hookSpecificOutput") {
            specific.insert("permissionDecision".to_owned(), Value::from("defer"));
        }
    } else if let Some(Value::Object(specific)) = output.get_mut("hookSpecificOutput") {
        // A `defer` the shallow merge kept from a hook that lost.
        if specific.get("permissionDecision").and_then(Value::as_str) == Some("defer") {
            specific.remove("permissionDecision");
        }
    }
    match winning_reason(&merged.all_outputs, winner) {
        Some(reason) => {
            output.insert("reason".to_owned(), Value::from(reason));
        }
        None => {
            output.remove("reason");
        }
    }
    let last_stop_reason = merged
        .all_outputs
        .iter()
        .filter_map(|one| one.get("stopReason").and_then(Value::as_str))
        .rfind(|text| !text.is_empty());
    if let Some(stop_reason) = last_stop_reason {
        output.insert("stopReason".to_owned(), Value::from(stop_reason));
    }
    merged
}

/// One hook's (or the merge's) decision, by Claude Code's precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Verdict {
    None,
    Allow,
    Ask,
    Defer,
    Deny,
}

impl Verdict {
    fn of_decision(decision: &str) -> Verdict {
        match decision {
            "deny" | "block" => Verdict::Deny,
            "ask" => Verdict::Ask,
            "allow" | "approve" => Verdict::Allow,
            _ => Verdict::None,
        }
    }

    /// What one hook's output decided. An `allow` is a decision only when the hook said so
    /// (Gemini's merge writes a default `allow` that decides nothing).
    fn of_output(output: &Value) -> Verdict {
        let permission = output
            .get("hookSpecificOutput")
            .and_then(|specific| specific.get("permissionDecision"))
            .and_then(Value::as_str);
        match output.get("decision").and_then(Value::as_str) {
            Some(decision) if Verdict::of_decision(decision) > Verdict::Allow => {
                Verdict::of_decision(decision)
            }
            _ if permission == Some("defer") => Verdict::Defer,
            Some(decision) if Verdict::of_decision(decision) == Verdict::Allow => Verdict::Allow,
            _ if permission == Some("allow") => Verdict::Allow,
            _ => Verdict::None,
        }
    }
}

/// The reason of the first output whose decision is `winner`, when it has one.
fn winning_reason(outputs: &[Value], winner: Verdict) -> Option<&str> {
    if winner == Verdict::None {
        return None;
    }
    outputs
        .iter()
        .find(|output| Verdict::of_output(output) == winner)
        .and_then(|output| output.get("reason"))
        .and_then(Value::as_str)
        .filter(|reason| !reason.is_empty())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::model::Source;
    use crate::result::{HookOutcome, OutputFormat};

    fn result(output: &Value) -> HookResult {
        HookResult {
            name: "h".to_owned(),
            source: Source::User,
            event: HookEventName::BeforeTool,
            success: true,
            exit_code: Some(0),
            duration: Duration::ZERO,
            output: Some(output.clone()),
            output_format: Some(OutputFormat::Json),
            stdout: String::new(),
            stderr: String::new(),
            error: None,
            outcome: HookOutcome::Exited { code: 0 },
            failure: None,
            warning: None,
        }
    }

    fn merged(event: HookEventName, outputs: &[Value]) -> Value {
        let results: Vec<HookResult> = outputs.iter().map(result).collect();
        aggregate_claude(event, &results, &Map::new())
            .final_output
            .unwrap_or(Value::Null)
    }

    #[test]
    fn only_the_winning_decision_gives_its_reason() {
        let allow = json!({"decision": "allow", "reason": "REASON-allowed",
            "hookSpecificOutput": {"permissionDecision": "allow"}});
        let deny = json!({"decision": "deny", "reason": "REASON-deny"});
        let deny2 = json!({"decision": "block", "reason": "REASON-deny-2"});
        let ask = json!({"decision": "ask", "reason": "REASON-ask"});
        let context = json!({"hookSpecificOutput": {"additionalContext": "ctx"}});
        let silent_deny = json!({"decision": "deny"});
        let defer = json!({"reason": "REASON-defer",
            "hookSpecificOutput": {"permissionDecision": "defer"}});
        // (outputs, decision, reason)
        let cases: Vec<(Vec<Value>, &str, Option<&str>)> = vec![
            (
                vec![allow.clone(), deny.clone()],
                "deny",
                Some("REASON-deny"),
            ),
            (
                vec![deny.clone(), allow.clone()],
                "deny",
                Some("REASON-deny"),
            ),
            (
                vec![deny.clone(), deny2.clone()],
                "block",
                Some("REASON-deny"),
            ),
            (
                vec![deny2.clone(), deny.clone()],
                "deny",
                Some("REASON-deny-2"),
            ),
            (vec![allow.clone(), ask.clone()], "ask", Some("REASON-ask")),
            (vec![ask.clone(), deny.clone()], "deny", Some("REASON-deny")),
            (
                vec![context.clone(), allow.clone()],
                "allow",
                Some("REASON-allowed"),
            ),
            // Nothing decided: Gemini's default allow carries no reason.
            (
                vec![
                    context.clone(),
                    json!({"reason": "said but decided nothing"}),
                ],
                "allow",
                None,
            ),
            // The winning hook gave no reason: none, not another hook's.
            (vec![allow.clone(), silent_deny], "deny", None),
            // defer beats ask and allow, loses to deny.
            (
                vec![ask.clone(), defer.clone()],
                "allow",
                Some("REASON-defer"),
            ),
            (
                vec![defer.clone(), deny.clone()],
                "deny",
                Some("REASON-deny"),
            ),
        ];
        for (outputs, decision, reason) in cases {
            let out = merged(HookEventName::BeforeTool, &outputs);
            let deferred = outputs.contains(&defer) && decision != "deny";
            assert_eq!(
                out["hookSpecificOutput"].get("permissionDecision") == Some(&json!("defer")),
                deferred,
                "{outputs:?}"
            );
            assert_eq!(out["decision"], json!(decision), "{outputs:?}");
            assert_eq!(
                out.get("reason").and_then(Value::as_str),
                reason,
                "{outputs:?}"
            );
        }
    }

    #[test]
    fn contexts_and_messages_still_join_and_the_last_stop_reason_wins() {
        let out = merged(
            HookEventName::AfterAgent,
            &[
                json!({"continue": false, "stopReason": "first", "systemMessage": "a",
                    "hookSpecificOutput": {"additionalContext": "x"}}),
                json!({"stopReason": "second", "systemMessage": "b",
                    "hookSpecificOutput": {"additionalContext": "y"}}),
            ],
        );
        assert_eq!(out["continue"], json!(false));
        assert_eq!(out["stopReason"], json!("second"));
        assert_eq!(out["systemMessage"], json!("a\nb"));
        assert_eq!(
            out["hookSpecificOutput"]["additionalContext"],
            json!("x\ny")
        );
    }

    #[test]
    fn other_merge_strategies_are_untouched() {
        let outputs = [
            json!({"decision": "deny", "reason": "a"}),
            json!({"reason": "b"}),
        ];
        let results: Vec<HookResult> = outputs.iter().map(result).collect();
        for event in [HookEventName::BeforeModel, HookEventName::Notification] {
            let gemini = aggregate(event, &results, &Map::new());
            let claude = aggregate_claude(event, &results, &Map::new());
            assert_eq!(gemini, claude, "{event}");
        }
    }
}
