//! What a Claude-dialect hook's run means, by Claude Code's rules, in Gemini output fields.
//!
//! Claude Code reads a hook's exit code first:
//!
//! | exit | Claude Code | Gemini output here |
//! |---|---|---|
//! | 0 | JSON on stdout is the answer; plain stdout is context for `UserPromptSubmit` and `SessionStart`, shown in the transcript only for the others | the JSON translated (below); plain text: `additionalContext` for those two events, no output for the others |
//! | 2 | blocks, with stderr as the reason; stdout is ignored | `PreToolUse`: `decision: "deny"`; `PostToolUse`, `UserPromptSubmit`, `Stop`, `SubagentStop`, `PreCompact`: `decision: "block"`; both with `reason` = stderr; `SessionStart`, `SessionEnd`, `Notification` (which cannot block): `systemMessage` = stderr |
//! | other | a non-blocking error: stderr is shown, stdout is ignored | `systemMessage: "Warning: <stderr>"`, no decision, so the hook's failure policy applies |
//!
//! JSON fields: `continue`, `stopReason`, `suppressOutput` and `systemMessage` keep their
//! names. `PreToolUse`'s `hookSpecificOutput.permissionDecision` (`allow`/`deny`/`ask`; the
//! deprecated top-level `approve`/`block` when it is absent) becomes `decision`, with
//! `permissionDecisionReason` as `reason`; `defer` decides nothing for Gemini's merge and is
//! kept as `hookSpecificOutput.permissionDecision` for Claude Code's. The decision is also kept
//! as `hookSpecificOutput.permissionDecision`, so that [`super::answer_for_claude_input`] can
//! tell an explicit `allow` from Gemini's default one. `updatedInput` becomes
//! `hookSpecificOutput.tool_input` with Gemini's key names. For the other events `decision:
//! "block"` stays `block` (`approve` becomes the neutral `allow`), with `reason`;
//! `hookSpecificOutput.additionalContext` is kept. Fields Claude Code does not define for the
//! event are dropped.
//!
//! A run that did not exit (timeout, spawn failure, cancellation, refusal) is interpreted as
//! for any hook ([`crate::output::interpret`]); a signal counts as a non-zero exit. For the
//! model events, which Claude Code does not have, Gemini's rules apply throughout.

use serde_json::{Map, Value};

use super::events::{
    BlockStyle, claude_block_style, claude_plain_stdout_field, claude_specific_fields,
};
use super::names::claude_tool_input_to_gemini;
use super::payload::{claude_tool_name, effective_claude_event};
use crate::command::js_trim;
use crate::event::HookEventName;
use crate::model::HookEntry;
use crate::output::{Interpretation, interpret};
use crate::result::{HookOutcome, HookResult, HookRun, OutputFormat};

/// Interprets one run of a Claude-dialect hook; `input` is the Gemini payload of the firing
/// (the hook itself read its Claude translation). Like [`crate::output::hook_result`], the
/// record's `failure` is classified and no failure policy is applied.
pub fn claude_hook_result(
    entry: &HookEntry,
    run: HookRun,
    input: &Map<String, Value>,
) -> HookResult {
    let mut interpretation =
        interpret_claude(entry.event, entry.config.display_name(), &run, input);
    if let Some(output) = on_failure_block(entry, &run, input) {
        interpretation.output = Some(output);
        interpretation.output_format = Some(OutputFormat::Text);
    }
    crate::output::record(entry, run, interpretation)
}

/// Claude Code's `onFailure: "block"` (kept on a converted hook): a hook that could not start,
/// timed out, or exited with a code other than 0 and 2 blocks as an exit 2 would, with Claude
/// Code's words (`[<command>]: failed; blocking because onFailure is "block"`, then stderr).
/// Claude Code ignores it on `Stop`, `SubagentStop`, `TaskCompleted` and `TeammateIdle`.
fn on_failure_block(entry: &HookEntry, run: &HookRun, input: &Map<String, Value>) -> Option<Value> {
    if entry.config.raw.get("onFailure").and_then(Value::as_str) != Some("block") {
        return None;
    }
    let claude_event = effective_claude_event(entry.event, input)?;
    if matches!(
        claude_event,
        "Stop" | "SubagentStop" | "TaskCompleted" | "TeammateIdle"
    ) {
        return None;
    }
    let what = match &run.outcome {
        HookOutcome::Exited { code: 0 | 2 }
        | HookOutcome::Cancelled
        | HookOutcome::Refused { .. } => return None,
        HookOutcome::OutputTooLarge { code: Some(2), .. } => return None,
        HookOutcome::TimedOut { .. } => "timed out",
        _ => "failed",
    };
    let command = entry.config.command.as_deref().unwrap_or("");
    let stderr = js_trim(&run.stderr);
    let mut reason = format!("[{command}]: {what}; blocking because onFailure is \"block\"");
    if !stderr.is_empty() && what == "failed" {
        reason.push('\n');
        reason.push_str(stderr);
    }
    let context = Context {
        event: entry.event,
        claude_event,
        claude_tool: claude_tool_name(input),
    };
    let mut output = Map::new();
    let decision = match claude_block_style(context.claude_event) {
        BlockStyle::PermissionDecision | BlockStyle::PermissionRequest => "deny",
        BlockStyle::Decision | BlockStyle::ExitCode => "block",
        BlockStyle::None => {
            output.insert("systemMessage".to_owned(), Value::from(reason));
            return Some(Value::Object(output));
        }
    };
    output.insert("decision".to_owned(), Value::from(decision));
    output.insert("reason".to_owned(), Value::from(reason));
    Some(Value::Object(output))
}

/// What Claude Code would make of the run, and the tool the hook saw.
struct Context {
    event: HookEventName,
    claude_event: &'static str,
    claude_tool: Option<String>,
}

fn interpret_claude(
    event: HookEventName,
    name: &str,
    run: &HookRun,
    input: &Map<String, Value>,
) -> Interpretation {
    let Some(claude_event) = effective_claude_event(event, input) else {
        return interpret(event, run);
    };
    let context = Context {
        event,
        claude_event,
        claude_tool: claude_tool_name(input),
    };
    let text_result = |success: bool, output: Option<Value>, exit_code: i32| Interpretation {
        success,
        output_format: output.as_ref().map(|_| OutputFormat::Text),
        output,
        exit_code: Some(exit_code),
        error: None,
    };
    match &run.outcome {
        HookOutcome::Exited { code: 0 } => {
            let (output, output_format) = exit_zero(&context, &run.stdout);
            Interpretation {
                success: true,
                output,
                output_format,
                exit_code: Some(0),
                error: None,
            }
        }
        HookOutcome::Exited { code: 2 } => {
            text_result(false, blocking(&context, name, &run.stderr), 2)
        }
        HookOutcome::Exited { code } => text_result(false, warning(&run.stderr), *code),
        // Gemini CLI reports a signal as exit code 0; Claude Code treats it as an error.
        HookOutcome::Signalled { .. } => text_result(false, warning(&run.stderr), 0),
        HookOutcome::OutputTooLarge { code, .. } => {
            // Cut-off output cannot be trusted as JSON, but an exit 2 still blocks.
            let mut interpretation = interpret(event, run);
            interpretation.output = match code {
                Some(2) => blocking(&context, name, &run.stderr),
                _ => None,
            };
            interpretation.output_format =
                interpretation.output.as_ref().map(|_| OutputFormat::Text);
            interpretation
        }
        HookOutcome::TimedOut { .. }
        | HookOutcome::SpawnFailed { .. }
        | HookOutcome::Cancelled
        | HookOutcome::Refused { .. } => interpret(event, run),
    }
}

/// Exit 0: JSON on stdout, or plain text.
fn exit_zero(context: &Context, stdout: &str) -> (Option<Value>, Option<OutputFormat>) {
    let text = js_trim(stdout);
    if text.is_empty() {
        return (None, None);
    }
    if let Ok(Value::Object(claude)) = serde_json::from_str::<Value>(text) {
        return (
            Some(Value::Object(translate_output(context, &claude))),
            Some(OutputFormat::Json),
        );
    }
    match claude_plain_stdout_field(context.claude_event) {
        Some(field) => {
            let mut specific = Map::new();
            specific.insert(field.to_owned(), Value::from(text));
            (
                Some(Value::Object(with_specific(Map::new(), context, specific))),
                Some(OutputFormat::Text),
            )
        }
        None => (None, None),
    }
}

/// Exit 2: a block with stderr as the reason, where the event can be blocked.
fn blocking(context: &Context, name: &str, stderr: &str) -> Option<Value> {
    let text = js_trim(stderr);
    let decision = match claude_block_style(context.claude_event) {
        BlockStyle::PermissionDecision | BlockStyle::PermissionRequest => "deny",
        BlockStyle::Decision | BlockStyle::ExitCode => "block",
        BlockStyle::None => {
            let mut output = Map::new();
            output.insert("systemMessage".to_owned(), Value::from(text));
            return (!text.is_empty()).then_some(Value::Object(output));
        }
    };
    let reason = if text.is_empty() {
        format!("{name} exited with code 2")
    } else {
        text.to_owned()
    };
    let mut output = Map::new();
    output.insert("decision".to_owned(), Value::from(decision));
    output.insert("reason".to_owned(), Value::from(reason));
    Some(Value::Object(output))
}

/// Any other non-zero exit: stderr as a warning, no decision.
fn warning(stderr: &str) -> Option<Value> {
    let text = js_trim(stderr);
    let mut output = Map::new();
    output.insert(
        "systemMessage".to_owned(),
        Value::from(format!("Warning: {text}")),
    );
    (!text.is_empty()).then_some(Value::Object(output))
}

/// A Claude JSON answer in Gemini's fields (see the module documentation).
fn translate_output(context: &Context, claude: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(flag @ Value::Bool(_)) = claude.get("continue") {
        out.insert("continue".to_owned(), flag.clone());
    }
    if let Some(text @ Value::String(_)) = claude.get("stopReason") {
        out.insert("stopReason".to_owned(), text.clone());
    }
    if let Some(flag @ Value::Bool(_)) = claude.get("suppressOutput") {
        out.insert("suppressOutput".to_owned(), flag.clone());
    }
    if let Some(text @ Value::String(_)) = claude.get("systemMessage") {
        out.insert("systemMessage".to_owned(), text.clone());
    }

    let specific_in = claude.get("hookSpecificOutput").and_then(Value::as_object);
    let specific_field = |key: &str| specific_in.and_then(|specific| specific.get(key));
    let top_decision = claude.get("decision").and_then(Value::as_str);
    let top_reason = claude.get("reason").filter(|reason| reason.is_string());
    let mut specific = Map::new();
    let (decision, reason) = match claude_block_style(context.claude_event) {
        BlockStyle::PermissionDecision => {
            let decision = match specific_field("permissionDecision").and_then(Value::as_str) {
                Some(decision @ ("allow" | "deny" | "ask")) => Some(decision),
                // `defer` decides nothing for Gemini's merge; kept for Claude Code's.
                Some("defer") if context.claude_event == "PreToolUse" => {
                    specific.insert("permissionDecision".to_owned(), Value::from("defer"));
                    None
                }
                Some(_) => None,
                None => match top_decision {
                    Some("approve") => Some("allow"),
                    Some("block") => Some("deny"),
                    _ => None,
                },
            };
            if let Some(decision) = decision {
                specific.insert("permissionDecision".to_owned(), Value::from(decision));
            }
            if let Some(Value::Object(updated)) = specific_field("updatedInput") {
                let tool = context.claude_tool.as_deref().unwrap_or("");
                specific.insert(
                    "tool_input".to_owned(),
                    Value::Object(claude_tool_input_to_gemini(tool, updated)),
                );
            }
            let reason = specific_field("permissionDecisionReason")
                .filter(|reason| reason.is_string())
                .or(top_reason);
            (decision, reason)
        }
        BlockStyle::PermissionRequest => {
            let answer = specific_field("decision").and_then(Value::as_object);
            let behavior = answer
                .and_then(|answer| answer.get("behavior"))
                .and_then(Value::as_str);
            let decision = match behavior {
                Some("allow") => Some("allow"),
                Some("deny") => Some("deny"),
                _ => None,
            };
            let message = answer
                .and_then(|answer| answer.get("message"))
                .filter(|message| message.is_string());
            (decision, message.or(top_reason))
        }
        BlockStyle::Decision | BlockStyle::ExitCode => {
            let decision = match top_decision {
                Some("block") => Some("block"),
                Some("approve") => Some("allow"),
                _ => None,
            };
            (decision, top_reason)
        }
        BlockStyle::None => (None, None),
    };
    if let Some(decision) = decision {
        out.insert("decision".to_owned(), Value::from(decision));
    }
    if let Some(reason) = reason {
        out.insert("reason".to_owned(), reason.clone());
    }
    // The event's other fields keep Claude Code's names and values; the ones read above
    // (the decision, its reason, the rewritten input) are already in Gemini's terms.
    for field in claude_specific_fields(context.claude_event) {
        if matches!(
            *field,
            "permissionDecision" | "permissionDecisionReason" | "updatedInput"
        ) {
            continue;
        }
        match specific_field(field) {
            Some(text @ Value::String(_)) if *field == "additionalContext" => {
                specific.insert((*field).to_owned(), text.clone());
            }
            Some(_) if *field == "additionalContext" => {}
            Some(value) => {
                specific.insert((*field).to_owned(), value.clone());
            }
            None => {}
        }
    }
    with_specific(out, context, specific)
}

/// `output` with `hookSpecificOutput` (named for the Gemini event) when it has fields.
fn with_specific(
    mut output: Map<String, Value>,
    context: &Context,
    specific: Map<String, Value>,
) -> Map<String, Value> {
    if !specific.is_empty() {
        let mut named = Map::new();
        named.insert(
            "hookEventName".to_owned(),
            Value::from(context.event.as_str()),
        );
        named.extend(specific);
        output.insert("hookSpecificOutput".to_owned(), Value::Object(named));
    }
    output
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::model::{HookConfig, HookType, Origin, Source};
    use crate::policy::FailureKind;
    use crate::result::StreamName;
    use crate::trust::HookTrust;

    fn entry(event: HookEventName) -> HookEntry {
        HookEntry {
            event,
            config: HookConfig {
                hook_type: HookType::Command,
                command: Some("./guard.sh".to_owned()),
                name: Some("guard".to_owned()),
                description: None,
                timeout_ms: None,
                env: Vec::new(),
                raw: Map::new(),
            },
            source: Source::Project,
            origin: Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: HookTrust::NotRequired,
            builtin: None,
            identity: Default::default(),
        }
    }

    fn run(outcome: HookOutcome, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            outcome,
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
            duration: Duration::from_millis(3),
        }
    }

    fn exited(code: i32) -> HookOutcome {
        HookOutcome::Exited { code }
    }

    /// The Gemini payload of a firing translated from this Claude event.
    fn input(claude_event: &str, tool: Option<&str>) -> Map<String, Value> {
        let mut input = Map::new();
        input.insert("claude_event".to_owned(), json!(claude_event));
        if let Some(tool) = tool {
            input.insert("tool_name".to_owned(), json!(tool));
        }
        input
    }

    const JSON: Option<OutputFormat> = Some(OutputFormat::Json);
    const TEXT: Option<OutputFormat> = Some(OutputFormat::Text);

    /// ((event, Claude event), run, (success, output, format, exit code))
    type ResultCase = (
        (HookEventName, &'static str),
        HookRun,
        (bool, Option<Value>, Option<OutputFormat>, Option<i32>),
    );

    #[test]
    fn exit_codes_and_outputs_follow_claude_rules() {
        let pre = (HookEventName::BeforeTool, "PreToolUse");
        let post = (HookEventName::AfterTool, "PostToolUse");
        let prompt = (HookEventName::BeforeAgent, "UserPromptSubmit");
        let stop = (HookEventName::AfterAgent, "Stop");
        let subagent = (HookEventName::AfterAgent, "SubagentStop");
        let start = (HookEventName::SessionStart, "SessionStart");
        let end = (HookEventName::SessionEnd, "SessionEnd");
        let compact = (HookEventName::PreCompress, "PreCompact");
        let notify = (HookEventName::Notification, "Notification");
        // ((event, claude event), run, (success, output, format, exit code))
        let cases: Vec<ResultCase> = vec![
            // Exit 0, nothing printed: nothing.
            (
                pre,
                run(exited(0), "", "ignored"),
                (true, None, None, Some(0)),
            ),
            // Exit 0, plain text: context for two events, nothing for the others.
            (
                prompt,
                run(exited(0), "Current time: 12:00\n", ""),
                (
                    true,
                    Some(
                        json!({"hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "Current time: 12:00"}}),
                    ),
                    TEXT,
                    Some(0),
                ),
            ),
            (
                start,
                run(exited(0), "branch main", ""),
                (
                    true,
                    Some(
                        json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "branch main"}}),
                    ),
                    TEXT,
                    Some(0),
                ),
            ),
            (
                pre,
                run(exited(0), "checked", ""),
                (true, None, None, Some(0)),
            ),
            (
                stop,
                run(exited(0), "[1, 2]", ""),
                (true, None, None, Some(0)),
            ),
            // PreToolUse decisions.
            (
                pre,
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no rm"}}"#,
                    "",
                ),
                (
                    true,
                    Some(
                        json!({"decision": "deny", "reason": "no rm", "hookSpecificOutput": {"hookEventName": "BeforeTool", "permissionDecision": "deny"}}),
                    ),
                    JSON,
                    Some(0),
                ),
            ),
            (
                pre,
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}, "systemMessage": "m"}"#,
                    "",
                ),
                (
                    true,
                    Some(
                        json!({"systemMessage": "m", "decision": "ask", "reason": "sure?", "hookSpecificOutput": {"hookEventName": "BeforeTool", "permissionDecision": "ask"}}),
                    ),
                    JSON,
                    Some(0),
                ),
            ),
            (
                pre,
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"pattern": "x", "path": "/src", "glob": "*.rs"}, "additionalContext": "c"}}"#,
                    "",
                ),
                (
                    true,
                    Some(
                        json!({"decision": "allow", "hookSpecificOutput": {"hookEventName": "BeforeTool", "permissionDecision": "allow", "tool_input": {"pattern": "x", "dir_path": "/src", "include_pattern": "*.rs"}, "additionalContext": "c"}}),
                    ),
                    JSON,
                    Some(0),
                ),
            ),
            (
                pre,
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"permissionDecision": "defer"}}"#,
                    "",
                ),
                // No Gemini decision; kept for Claude Code's merge.
                (
                    true,
                    Some(
                        json!({"hookSpecificOutput": {"hookEventName": "BeforeTool", "permissionDecision": "defer"}}),
                    ),
                    JSON,
                    Some(0),
                ),
            ),
            // The deprecated top-level fields.
            (
                pre,
                run(
                    exited(0),
                    r#"{"decision": "block", "reason": "old style"}"#,
                    "",
                ),
                (
                    true,
                    Some(
                        json!({"decision": "deny", "reason": "old style", "hookSpecificOutput": {"hookEventName": "BeforeTool", "permissionDecision": "deny"}}),
                    ),
                    JSON,
                    Some(0),
                ),
            ),
            (
                pre,
                run(
                    exited(0),
                    r#"{"decision": "approve", "suppressOutput": true}"#,
                    "",
                ),
                (
                    true,
                    Some(
                        json!({"suppressOutput": true, "decision": "allow", "hookSpecificOutput": {"hookEventName": "BeforeTool", "permissionDecision": "allow"}}),
                    ),
                    JSON,
                    Some(0),
                ),
            ),
            // continue:false and stopReason.
            (
                pre,
                run(
                    exited(0),
                    r#"{"continue": false, "stopReason": "halt"}"#,
                    "",
                ),
                (
                    true,
                    Some(json!({"continue": false, "stopReason": "halt"})),
                    JSON,
                    Some(0),
                ),
            ),
            // Other events' decisions.
            (
                post,
                run(
                    exited(0),
                    r#"{"decision": "block", "reason": "lint failed", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "see log"}}"#,
                    "",
                ),
                (
                    true,
                    Some(
                        json!({"decision": "block", "reason": "lint failed", "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "see log"}}),
                    ),
                    JSON,
                    Some(0),
                ),
            ),
            (
                prompt,
                run(
                    exited(0),
                    r#"{"decision": "block", "reason": "secrets"}"#,
                    "",
                ),
                (
                    true,
                    Some(json!({"decision": "block", "reason": "secrets"})),
                    JSON,
                    Some(0),
                ),
            ),
            (
                stop,
                run(
                    exited(0),
                    r#"{"decision": "block", "reason": "tests fail"}"#,
                    "",
                ),
                (
                    true,
                    Some(json!({"decision": "block", "reason": "tests fail"})),
                    JSON,
                    Some(0),
                ),
            ),
            (
                subagent,
                run(
                    exited(0),
                    r#"{"decision": "approve", "reason": "fine"}"#,
                    "",
                ),
                (
                    true,
                    Some(json!({"decision": "allow", "reason": "fine"})),
                    JSON,
                    Some(0),
                ),
            ),
            (
                start,
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "ctx"}, "decision": "block"}"#,
                    "",
                ),
                (
                    true,
                    Some(
                        json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "ctx"}}),
                    ),
                    JSON,
                    Some(0),
                ),
            ),
            (
                notify,
                run(
                    exited(0),
                    r#"{"systemMessage": "pinged", "decision": "block"}"#,
                    "",
                ),
                (
                    true,
                    Some(json!({"systemMessage": "pinged"})),
                    JSON,
                    Some(0),
                ),
            ),
            // Exit 2: stderr blocks where the event can be blocked; stdout is ignored.
            (
                pre,
                run(exited(2), r#"{"decision": "approve"}"#, "rm -rf refused\n"),
                (
                    false,
                    Some(json!({"decision": "deny", "reason": "rm -rf refused"})),
                    TEXT,
                    Some(2),
                ),
            ),
            (
                pre,
                run(exited(2), "", ""),
                (
                    false,
                    Some(json!({"decision": "deny", "reason": "guard exited with code 2"})),
                    TEXT,
                    Some(2),
                ),
            ),
            (
                post,
                run(exited(2), "", "bad"),
                (
                    false,
                    Some(json!({"decision": "block", "reason": "bad"})),
                    TEXT,
                    Some(2),
                ),
            ),
            (
                prompt,
                run(exited(2), "", "bad"),
                (
                    false,
                    Some(json!({"decision": "block", "reason": "bad"})),
                    TEXT,
                    Some(2),
                ),
            ),
            (
                stop,
                run(exited(2), "", "keep going"),
                (
                    false,
                    Some(json!({"decision": "block", "reason": "keep going"})),
                    TEXT,
                    Some(2),
                ),
            ),
            (
                subagent,
                run(exited(2), "", "more"),
                (
                    false,
                    Some(json!({"decision": "block", "reason": "more"})),
                    TEXT,
                    Some(2),
                ),
            ),
            (
                compact,
                run(exited(2), "", "not now"),
                (
                    false,
                    Some(json!({"decision": "block", "reason": "not now"})),
                    TEXT,
                    Some(2),
                ),
            ),
            (
                start,
                run(exited(2), "", "note"),
                (false, Some(json!({"systemMessage": "note"})), TEXT, Some(2)),
            ),
            (
                end,
                run(exited(2), "", "note"),
                (false, Some(json!({"systemMessage": "note"})), TEXT, Some(2)),
            ),
            (notify, run(exited(2), "", ""), (false, None, None, Some(2))),
            // Other non-zero exits: a warning, never a decision, even with JSON on stdout.
            (
                pre,
                run(
                    exited(1),
                    r#"{"hookSpecificOutput": {"permissionDecision": "deny"}}"#,
                    "boom",
                ),
                (
                    false,
                    Some(json!({"systemMessage": "Warning: boom"})),
                    TEXT,
                    Some(1),
                ),
            ),
            (
                pre,
                run(exited(127), "", ""),
                (false, None, None, Some(127)),
            ),
            (
                pre,
                run(HookOutcome::Signalled { signal: 9 }, "{}", "killed"),
                (
                    false,
                    Some(json!({"systemMessage": "Warning: killed"})),
                    TEXT,
                    Some(0),
                ),
            ),
        ];
        for ((event, claude_event), hook_run, (success, output, format, code)) in cases {
            let tool = matches!(event, HookEventName::BeforeTool | HookEventName::AfterTool)
                .then_some("grep_search");
            let description = format!("{claude_event}: {hook_run:?}");
            let result = claude_hook_result(&entry(event), hook_run, &input(claude_event, tool));
            assert_eq!(result.success, success, "{description}");
            assert_eq!(result.output, output, "{description}");
            assert_eq!(result.output_format, format, "{description}");
            assert_eq!(result.exit_code, code, "{description}");
            assert_eq!(result.error, None, "{description}");
            assert_eq!(result.name, "guard");
        }
    }

    #[test]
    fn claude_only_events_keep_their_fields_and_block_as_claude_says() {
        let claude = |name: &str| -> HookEventName { name.parse().expect(name) };
        // (Claude-only event, run, Gemini output)
        let cases: Vec<(&str, HookRun, Option<Value>)> = vec![
            (
                "PermissionRequest",
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "not on main"}}}"#,
                    "",
                ),
                Some(json!({"decision": "deny", "reason": "not on main",
                    "hookSpecificOutput": {"hookEventName": "PermissionRequest",
                        "decision": {"behavior": "deny", "message": "not on main"}}})),
            ),
            (
                "PermissionRequest",
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"decision": {"behavior": "allow", "updatedInput": {"command": "ls"}}}}"#,
                    "",
                ),
                Some(json!({"decision": "allow",
                    "hookSpecificOutput": {"hookEventName": "PermissionRequest",
                        "decision": {"behavior": "allow", "updatedInput": {"command": "ls"}}}})),
            ),
            (
                "PermissionRequest",
                run(exited(2), "", "no"),
                Some(json!({"decision": "deny", "reason": "no"})),
            ),
            (
                "TaskCompleted",
                run(exited(2), "", "tests fail"),
                Some(json!({"decision": "block", "reason": "tests fail"})),
            ),
            (
                "ConfigChange",
                run(
                    exited(0),
                    r#"{"decision": "block", "reason": "locked"}"#,
                    "",
                ),
                Some(json!({"decision": "block", "reason": "locked"})),
            ),
            // Cannot block: stderr is for the user.
            (
                "StopFailure",
                run(exited(2), "", "rate limited"),
                Some(json!({"systemMessage": "rate limited"})),
            ),
            (
                "PostToolUseFailure",
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"additionalContext": "retry with sudo", "bogus": 1}}"#,
                    "",
                ),
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                    "additionalContext": "retry with sudo"}}),
                ),
            ),
            (
                "PermissionDenied",
                run(exited(0), r#"{"hookSpecificOutput": {"retry": true}}"#, ""),
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": true}}),
                ),
            ),
            (
                "WorktreeCreate",
                run(exited(0), "/srv/wt/feature\n", ""),
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "WorktreeCreate",
                    "worktreePath": "/srv/wt/feature"}}),
                ),
            ),
            (
                "MessageDisplay",
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"displayContent": "[redacted]"}}"#,
                    "",
                ),
                Some(
                    json!({"hookSpecificOutput": {"hookEventName": "MessageDisplay",
                    "displayContent": "[redacted]"}}),
                ),
            ),
            (
                "PreModelSwitch",
                run(
                    exited(0),
                    r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "budget"}}"#,
                    "",
                ),
                Some(json!({"decision": "deny", "reason": "budget",
                    "hookSpecificOutput": {"hookEventName": "PreModelSwitch", "permissionDecision": "deny"}})),
            ),
            // Plain stdout is transcript text only for most events.
            ("CwdChanged", run(exited(0), "moved", ""), None),
        ];
        for (name, hook_run, expected) in cases {
            let event = claude(name);
            let mut payload = Map::new();
            payload.insert("hook_event_name".to_owned(), json!(name));
            let result = claude_hook_result(&entry(event), hook_run, &payload);
            assert_eq!(result.output, expected, "{name}");
        }
    }

    #[test]
    fn on_failure_block_blocks_as_claude_words_it() {
        let blocking = |event: HookEventName| {
            let mut entry = entry(event);
            entry
                .config
                .raw
                .insert("onFailure".to_owned(), json!("block"));
            entry
        };
        let deny = |reason: &str| Some(json!({"decision": "deny", "reason": reason}));
        // (event, Claude event, run, output)
        let cases: Vec<(HookEventName, &str, HookRun, Option<Value>)> = vec![
            (
                HookEventName::BeforeTool,
                "PreToolUse",
                run(exited(1), "", "boom"),
                deny("[./guard.sh]: failed; blocking because onFailure is \"block\"\nboom"),
            ),
            (
                HookEventName::BeforeTool,
                "PreToolUse",
                run(HookOutcome::TimedOut { timeout_ms: 5 }, "", "late"),
                deny("[./guard.sh]: timed out; blocking because onFailure is \"block\""),
            ),
            (
                HookEventName::AfterTool,
                "PostToolUse",
                run(exited(3), "", ""),
                Some(json!({"decision": "block",
                    "reason": "[./guard.sh]: failed; blocking because onFailure is \"block\""})),
            ),
            // A run that answered is not a failure; Stop ignores onFailure.
            (
                HookEventName::BeforeTool,
                "PreToolUse",
                run(exited(0), "", ""),
                None,
            ),
            (
                HookEventName::AfterAgent,
                "Stop",
                run(exited(1), "", "boom"),
                Some(json!({"systemMessage": "Warning: boom"})),
            ),
        ];
        for (event, claude_event, hook_run, expected) in cases {
            let result = claude_hook_result(
                &blocking(event),
                hook_run,
                &input(claude_event, Some("run_shell_command")),
            );
            assert_eq!(result.output, expected, "{claude_event}");
        }
    }

    #[test]
    fn failures_keep_their_errors_and_kinds() {
        let e = entry(HookEventName::BeforeTool);
        let pre = input("PreToolUse", Some("run_shell_command"));
        let timed_out = claude_hook_result(
            &e,
            run(
                HookOutcome::TimedOut { timeout_ms: 500 },
                "{\"decision\":\"block\"}",
                "",
            ),
            &pre,
        );
        assert_eq!(timed_out.output, None);
        assert_eq!(
            timed_out.error.as_deref(),
            Some("Hook timed out after 500ms")
        );
        assert_eq!(timed_out.failure, Some(FailureKind::TimedOut));

        let too_large = claude_hook_result(
            &e,
            run(
                HookOutcome::OutputTooLarge {
                    stream: StreamName::Stderr,
                    cap_bytes: 10,
                    code: Some(2),
                },
                "",
                "0123456789[truncated]",
            ),
            &pre,
        );
        assert_eq!(
            too_large.output,
            Some(json!({"decision": "deny", "reason": "0123456789[truncated]"}))
        );
        assert!(too_large.error.is_some());

        let failed = claude_hook_result(&e, run(exited(1), "", "boom"), &pre);
        assert_eq!(failed.failure, Some(FailureKind::ExitedWithoutDecision));
        let allowed = claude_hook_result(&e, run(exited(0), "{}", ""), &pre);
        assert_eq!(allowed.failure, None);

        // A payload Gemini CLI built itself (no claude_event) is read by the event's name.
        let native = claude_hook_result(&e, run(exited(2), "", "no"), &Map::new());
        assert_eq!(
            native.output,
            Some(json!({"decision": "deny", "reason": "no"}))
        );
        // The model events keep Gemini's rules.
        let model = claude_hook_result(
            &entry(HookEventName::BeforeModel),
            run(exited(2), "", "no"),
            &Map::new(),
        );
        assert_eq!(
            model.output,
            Some(json!({"decision": "deny", "reason": "no"}))
        );
    }
}
