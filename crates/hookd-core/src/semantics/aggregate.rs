//! Merging the outputs of all hooks of one firing into one result (spec §5).
//!
//! `all_outputs` holds every output a hook produced (failed hooks included), `errors` every
//! error, `total_duration` the sum of durations, and `success` is true when there are no
//! errors. With at least one output, the outputs are merged by the event's strategy (even a
//! single output, so that defaults apply) and the merge is normalised to the seven top-level
//! keys `continue, stopReason, suppressOutput, systemMessage, decision, reason,
//! hookSpecificOutput`, in that order, absent ones omitted. A key a hook set to `null` stays
//! `null`: Gemini CLI's output class copies the seven fields as they are and `JSON.stringify`
//! keeps nulls (it only drops undefined ones).
//!
//! Strategies:
//!
//! - **OR-merge** (BeforeTool, AfterTool, BeforeAgent, AfterAgent, SessionStart): `continue`
//!   defaults to true and any strict `false` wins; the last `block`/`deny` decision wins, and
//!   `ask` counts only while no block has been seen; `allow` is the default only when there was
//!   no block, no ask and no `continue: false`; truthy stop reasons, reasons and system
//!   messages are joined with `\n`; any truthy `suppressOutput` wins; `clearContext: true` is
//!   sticky; the rest of `hookSpecificOutput` is shallow-merged, and string
//!   `additionalContext`s are joined with `\n`.
//! - **Field replacement** (BeforeModel, AfterModel): later top-level fields replace earlier
//!   ones (so a later `allow` or `"decision": null` undoes a block), `hookSpecificOutput` is
//!   shallow-merged and always present.
//! - **Tool selection** (BeforeToolSelection): only `hookSpecificOutput.toolConfig` counts:
//!   `NONE` anywhere wins and empties the list, else `ANY` anywhere, else `AUTO`; the names
//!   are the union of every `allowedFunctionNames`, sorted by UTF-16 code units. Any output at
//!   all yields a result, so outputs without a tool config give `AUTO` with no names.
//! - **Simple** (Notification, SessionEnd, PreCompress): plain last-wins shallow merge.
//!
//! hookd's departures:
//!
//! - tool lists: an `allowedFunctionNames` string is split on commas (items trimmed, empty ones
//!   dropped) where Gemini CLI iterates it character by character; and a tool config in the
//!   seeds' nested shape `toolConfig.functionCallingConfig.{mode, allowedFunctionNames}` is
//!   read when `toolConfig` itself has neither key.
//! - chunk text: an AfterModel output with a string `content` (and no `llm_response` of its own)
//!   replaces this chunk's text: before merging, `hookSpecificOutput.llm_response` is
//!   synthesised from the input's `llm_response`, so the final output carries the replacement
//!   where Gemini CLI's client reads it. `all_outputs` keeps what the hooks printed.
//!
//! Where Gemini CLI's merge throws a JavaScript `TypeError` (a truthy primitive
//! `hookSpecificOutput` in an OR-merge event, a non-iterable `allowedFunctionNames`), it
//! abandons the firing and reports only that error, with no outputs and a zero duration;
//! hookd does the same, so such hooks decide as they would under Gemini CLI.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::chain::JsTypeError;
use crate::chain::js::{compare_utf16, in_operator, is_truthy, spread_into, to_js_string};
use crate::command::js_trim;
use crate::event::{HookEventName, MergeStrategy};
use crate::result::HookResult;

/// The normalised output's keys, in order.
pub const OUTPUT_KEYS: [&str; 7] = [
    "continue",
    "stopReason",
    "suppressOutput",
    "systemMessage",
    "decision",
    "reason",
    "hookSpecificOutput",
];

/// The merged result of one firing.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// `true` when no hook reported an error.
    pub success: bool,
    /// The merged, normalised output; absent when no hook produced one.
    pub final_output: Option<Value>,
    /// Every output, as the hooks printed them, in plan order.
    pub all_outputs: Vec<Value>,
    /// Every error, in plan order.
    pub errors: Vec<String>,
    /// The sum of the hooks' durations.
    pub total_duration: Duration,
}

/// Aggregates the results of one firing of `event`; `input` is the firing's payload (read for
/// hookd's chunk text AfterModel content replacement).
pub fn aggregate(
    event: HookEventName,
    results: &[HookResult],
    input: &Map<String, Value>,
) -> Aggregate {
    let mut all_outputs = Vec::new();
    let mut errors = Vec::new();
    let mut total_duration = Duration::ZERO;
    for result in results {
        total_duration += result.duration;
        if let Some(error) = &result.error {
            errors.push(error.clone());
        }
        if let Some(output) = result.output.as_ref().filter(|output| is_truthy(output)) {
            all_outputs.push(output.clone());
        }
    }

    let final_output = if all_outputs.is_empty() {
        None
    } else {
        match merge(event, &all_outputs, input) {
            Ok(merged) => Some(normalise(merged)),
            Err(type_error) => {
                return Aggregate {
                    success: false,
                    final_output: None,
                    all_outputs: Vec::new(),
                    errors: vec![type_error.0],
                    total_duration: Duration::ZERO,
                };
            }
        }
    };
    Aggregate {
        success: errors.is_empty(),
        final_output,
        all_outputs,
        errors,
        total_duration,
    }
}

/// Merges non-empty `outputs` by the event's strategy.
fn merge(
    event: HookEventName,
    outputs: &[Value],
    input: &Map<String, Value>,
) -> Result<Map<String, Value>, JsTypeError> {
    match event.merge_strategy() {
        MergeStrategy::OrMerge => or_merge(outputs),
        MergeStrategy::FieldReplacement if event == HookEventName::AfterModel => {
            let rewritten: Vec<Value> = outputs
                .iter()
                .map(|output| with_content_replacement(output, input))
                .collect();
            Ok(field_replacement(rewritten))
        }
        MergeStrategy::FieldReplacement => Ok(field_replacement(outputs.to_vec())),
        MergeStrategy::ToolSelection => tool_selection(outputs),
        MergeStrategy::Simple => Ok(simple_merge(outputs)),
    }
}

/// Keeps the seven output keys in their order; everything else is dropped.
fn normalise(merged: Map<String, Value>) -> Value {
    let rank = |key: &str| OUTPUT_KEYS.iter().position(|output_key| *output_key == key);
    // Nearly always only output keys, already in their order: nothing to do.
    let mut ranks = merged.keys().map(|key| rank(key));
    let mut last = None;
    let in_order = ranks.all(|key_rank| {
        let follows = key_rank.is_some() && key_rank > last;
        last = key_rank;
        follows
    });
    if in_order {
        return Value::Object(merged);
    }
    let mut kept: Vec<(usize, String, Value)> = merged
        .into_iter()
        .filter_map(|(key, value)| rank(&key).map(|key_rank| (key_rank, key, value)))
        .collect();
    kept.sort_unstable_by_key(|(key_rank, ..)| *key_rank);
    Value::Object(
        kept.into_iter()
            .map(|(_, key, value)| (key, value))
            .collect(),
    )
}

/// A top-level field of an output (arrays and other non-objects have none).
fn field<'a>(output: &'a Value, key: &str) -> Option<&'a Value> {
    output.as_object().and_then(|map| map.get(key))
}

/// A top-level field when it is truthy.
fn truthy_field<'a>(output: &'a Value, key: &str) -> Option<&'a Value> {
    field(output, key).filter(|value| is_truthy(value))
}

/// §5.1: OR-merge of decisions, concatenated messages and contexts.
fn or_merge(outputs: &[Value]) -> Result<Map<String, Value>, JsTypeError> {
    let mut merged = Map::new();
    merged.insert("continue".to_owned(), Value::Bool(true));
    merged.insert("suppressOutput".to_owned(), Value::Bool(false));
    let mut specific_merged: Option<Map<String, Value>> = None;
    let mut stop_reasons = Vec::new();
    let mut reasons = Vec::new();
    let mut system_messages = Vec::new();
    let mut contexts = Vec::new();
    let mut has_block = false;
    let mut has_ask = false;
    let mut has_continue_false = false;

    for output in outputs {
        if field(output, "continue") == Some(&Value::Bool(false)) {
            has_continue_false = true;
            merged.insert("continue".to_owned(), Value::Bool(false));
            if let Some(stop_reason) = truthy_field(output, "stopReason") {
                stop_reasons.push(to_js_string(stop_reason));
            }
        }

        match field(output, "decision").and_then(Value::as_str) {
            Some(decision @ ("block" | "deny")) => {
                has_block = true;
                merged.insert("decision".to_owned(), json!(decision));
            }
            Some("ask") => {
                has_ask = true;
                if !has_block {
                    merged.insert("decision".to_owned(), json!("ask"));
                }
            }
            _ => {}
        }

        if let Some(reason) = truthy_field(output, "reason") {
            reasons.push(to_js_string(reason));
        }
        if let Some(message) = truthy_field(output, "systemMessage") {
            system_messages.push(to_js_string(message));
        }
        if truthy_field(output, "suppressOutput").is_some() {
            merged.insert("suppressOutput".to_owned(), Value::Bool(true));
        }

        let specific = field(output, "hookSpecificOutput");
        if specific.and_then(|s| s.get("clearContext")) == Some(&Value::Bool(true)) {
            specific_merged
                .get_or_insert_with(Map::new)
                .insert("clearContext".to_owned(), Value::Bool(true));
        }
        if let Some(specific) = specific.filter(|s| is_truthy(s)) {
            // Everything but clearContext, which only the sticky rule above may set.
            let mut rest = Map::new();
            spread_into(&mut rest, specific);
            let target = specific_merged.get_or_insert_with(Map::new);
            for (key, value) in rest {
                if key != "clearContext" {
                    target.insert(key, value);
                }
            }
            if let Some(Value::String(context)) = in_operator("additionalContext", specific)? {
                contexts.push(context.clone());
            }
        }
    }

    if !has_block && !has_ask && !has_continue_false {
        merged.insert("decision".to_owned(), json!("allow"));
    }
    for (key, list) in [
        ("stopReason", stop_reasons),
        ("reason", reasons),
        ("systemMessage", system_messages),
    ] {
        if !list.is_empty() {
            merged.insert(key.to_owned(), Value::String(list.join("\n")));
        }
    }
    if !contexts.is_empty() {
        specific_merged.get_or_insert_with(Map::new).insert(
            "additionalContext".to_owned(),
            Value::String(contexts.join("\n")),
        );
    }
    if let Some(specific) = specific_merged {
        merged.insert("hookSpecificOutput".to_owned(), Value::Object(specific));
    }
    Ok(merged)
}

/// §5.2: later fields replace earlier ones; `hookSpecificOutput` is shallow-merged.
///
/// The outputs are taken by value and their fields moved, not copied: a streamed AfterModel
/// response merges one output per chunk, each carrying the chunk's rewritten response. The
/// result is what spreading copies would give (`{...merged, ...output, hookSpecificOutput:
/// {...merged.hookSpecificOutput, ...output.hookSpecificOutput}}`, each key keeping its first
/// position).
fn field_replacement(mut outputs: Vec<Value>) -> Map<String, Value> {
    const SPECIFIC: &str = "hookSpecificOutput";
    // One object output whose hookSpecificOutput is an object or absent (a hook per chunk,
    // the common case) merges into itself, with an empty hookSpecificOutput added last when it
    // had none.
    if let [Value::Object(output)] = outputs.as_mut_slice() {
        match output.get(SPECIFIC) {
            Some(Value::Object(_)) => return std::mem::take(output),
            None => {
                let mut merged = std::mem::take(output);
                merged.insert(SPECIFIC.to_owned(), Value::Object(Map::new()));
                return merged;
            }
            Some(_) => {}
        }
    }
    let mut merged = Map::new();
    for mut output in outputs {
        let mut specific = Map::new();
        // Taken out where they stand; the placeholders left behind keep the keys' positions
        // and are overwritten below.
        if let Some(previous) = merged.get_mut(SPECIFIC) {
            spread_owned_into(&mut specific, std::mem::take(previous));
        }
        if let Some(current) = output.as_object_mut().and_then(|map| map.get_mut(SPECIFIC)) {
            spread_owned_into(&mut specific, std::mem::take(current));
        }
        spread_owned_into(&mut merged, output);
        merged.insert(SPECIFIC.to_owned(), Value::Object(specific));
    }
    merged
}

/// [`spread_into`], moving an object's fields instead of copying them.
fn spread_owned_into(target: &mut Map<String, Value>, value: Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                target.insert(key, value);
            }
        }
        other => spread_into(target, &other),
    }
}

/// §5.4: plain last-wins shallow merge.
fn simple_merge(outputs: &[Value]) -> Map<String, Value> {
    let mut merged = Map::new();
    for output in outputs {
        spread_into(&mut merged, output);
    }
    merged
}

/// §5.3 (with tool lists): the union of tool configs.
fn tool_selection(outputs: &[Value]) -> Result<Map<String, Value>, JsTypeError> {
    let mut names: Vec<Value> = Vec::new();
    let mut has_none = false;
    let mut has_any = false;

    for output in outputs {
        let Some(tool_config) = field(output, "hookSpecificOutput")
            .and_then(|specific| specific.get("toolConfig"))
            .filter(|config| is_truthy(config))
        else {
            continue;
        };
        let tool_config = effective_tool_config(tool_config);
        match tool_config.get("mode").and_then(Value::as_str) {
            Some("NONE") => has_none = true,
            Some("ANY") => has_any = true,
            _ => {}
        }
        match tool_config
            .get("allowedFunctionNames")
            .filter(|allowed| is_truthy(allowed))
        {
            None => {}
            Some(Value::Array(items)) => {
                for item in items {
                    add_to_set(&mut names, item);
                }
            }
            Some(Value::String(list)) => {
                for item in list.split(',').map(js_trim).filter(|item| !item.is_empty()) {
                    add_to_set(&mut names, &json!(item));
                }
            }
            Some(_) => {
                return Err(JsTypeError(
                    "toolConfig.allowedFunctionNames is not iterable".to_owned(),
                ));
            }
        }
    }

    let mode = if has_none {
        names.clear();
        "NONE"
    } else if has_any {
        "ANY"
    } else {
        "AUTO"
    };
    // JavaScript's default sort: stable, by the values' string forms in UTF-16 order.
    names.sort_by(|a, b| compare_utf16(&to_js_string(a), &to_js_string(b)));

    let mut merged = Map::new();
    merged.insert(
        "hookSpecificOutput".to_owned(),
        json!({
            "hookEventName": "BeforeToolSelection",
            "toolConfig": {"mode": mode, "allowedFunctionNames": names},
        }),
    );
    Ok(merged)
}

/// tool lists: reads the seeds' nested `toolConfig.functionCallingConfig` when `toolConfig` itself
/// has neither `mode` nor `allowedFunctionNames`.
fn effective_tool_config(tool_config: &Value) -> &Value {
    match tool_config {
        Value::Object(map)
            if !map.contains_key("mode") && !map.contains_key("allowedFunctionNames") =>
        {
            match map.get("functionCallingConfig") {
                Some(nested @ Value::Object(_)) => nested,
                _ => tool_config,
            }
        }
        _ => tool_config,
    }
}

/// Adds `value` to a JavaScript `Set` kept as a list: primitives are compared by value
/// (numbers numerically), while objects and arrays are always distinct, as separately parsed
/// JSON objects are distinct references.
fn add_to_set(set: &mut Vec<Value>, value: &Value) {
    let same = |existing: &Value| match (existing, value) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        (a, b) => a == b,
    };
    if !set.iter().any(same) {
        set.push(value.clone());
    }
}

/// chunk text: an AfterModel output with a string `content` and no `llm_response` of its own gets
/// `hookSpecificOutput.llm_response` synthesised from the input's `llm_response`, with this
/// chunk's text replaced by `content`.
fn with_content_replacement(output: &Value, input: &Map<String, Value>) -> Value {
    let Some(Value::String(content)) = field(output, "content") else {
        return output.clone();
    };
    let mut rewritten = output.clone();
    let Some(map) = rewritten.as_object_mut() else {
        return output.clone();
    };
    let specific = map
        .entry("hookSpecificOutput")
        .or_insert_with(|| Value::Object(Map::new()));
    if specific.is_null() {
        *specific = Value::Object(Map::new());
    }
    let Value::Object(specific) = specific else {
        // A non-object hookSpecificOutput cannot carry a response; leave the output alone.
        return output.clone();
    };
    if specific
        .get("llm_response")
        .is_some_and(|own| !own.is_null())
    {
        return output.clone();
    }
    specific.insert(
        "llm_response".to_owned(),
        replaced_response(input.get("llm_response"), content),
    );
    rewritten
}

/// The input's `llm_response` with its text replaced by `content`: `text` (when present) is
/// set, and the first candidate's parts become `[content]`, creating the candidate (role
/// `model`) when there is none. Stream sessions use it too, to give hooks a chunk whose text
/// their builtin filters changed (through [`replace_response_text`], on the chunk they own).
pub fn replaced_response(original: Option<&Value>, content: &str) -> Value {
    match original {
        Some(Value::Object(original)) => {
            let mut response = original.clone();
            replace_response_text(&mut response, content);
            Value::Object(response)
        }
        _ => json!({"candidates": [response_candidate(content)]}),
    }
}

/// [`replaced_response`] on a response object owned by the caller: its text replaced in place.
pub fn replace_response_text(response: &mut Map<String, Value>, content: &str) {
    if let Some(text) = response.get_mut("text") {
        *text = Value::String(content.to_owned());
    }
    match response.get_mut("candidates") {
        Some(Value::Array(candidates)) if !candidates.is_empty() => {
            match candidates[0].as_object_mut() {
                Some(first) => match first.get_mut("content") {
                    Some(Value::Object(first_content)) => {
                        let parts = replaced_parts(first_content.get("parts"), content);
                        first_content.insert("parts".to_owned(), parts);
                    }
                    _ => {
                        first.insert(
                            "content".to_owned(),
                            json!({"role": "model", "parts": [content]}),
                        );
                    }
                },
                None => candidates[0] = response_candidate(content),
            }
        }
        _ => {
            response.insert(
                "candidates".to_owned(),
                Value::Array(vec![response_candidate(content)]),
            );
        }
    }
}

/// A candidate's parts with their text replaced by `content`. In the hook format (string
/// parts) that is `[content]`. When the parts are Gemini API part objects (`{"text": ...}`,
/// as a client streaming the API's chunks sends them) the answer keeps that form: one
/// `{"text": content}` part first, then the parts that carry no text (function calls...),
/// so replacing the text does not drop them.
fn replaced_parts(original: Option<&Value>, content: &str) -> Value {
    let objects = match original {
        Some(Value::Array(parts)) if parts.iter().any(Value::is_object) => parts,
        _ => return Value::Array(vec![Value::String(content.to_owned())]),
    };
    let mut parts = vec![json!({"text": content})];
    parts.extend(
        objects
            .iter()
            .filter(|part| part.is_object() && crate::payload::part_text(part).is_none())
            .cloned(),
    );
    Value::Array(parts)
}

/// A candidate whose content is `content`, from the model.
fn response_candidate(content: &str) -> Value {
    json!({"content": {"role": "model", "parts": [content]}})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::Source;
    use crate::result::{HookOutcome, OutputFormat};

    /// One hook result: (success, output, error, duration in ms).
    fn result(
        event: HookEventName,
        success: bool,
        output: Option<Value>,
        error: Option<&str>,
        millis: u64,
    ) -> HookResult {
        HookResult {
            name: "h".to_owned(),
            source: Source::User,
            event,
            success,
            output,
            output_format: Some(OutputFormat::Json),
            stdout: String::new(),
            stderr: String::new(),
            exit_code: Some(0),
            duration: Duration::from_millis(millis),
            error: error.map(str::to_owned),
            outcome: HookOutcome::Exited { code: 0 },
            failure: None,
            warning: None,
        }
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    /// Aggregates successful hooks printing `outputs` and compares the serialised final
    /// output (so key order counts); `expected` is `None` for no final output.
    fn check(event: HookEventName, input: Value, outputs: &[Value], expected: Option<Value>) {
        let results: Vec<HookResult> = outputs
            .iter()
            .map(|output| result(event, true, Some(output.clone()), None, 1))
            .collect();
        let aggregate = aggregate(event, &results, &object(input));
        let text = |value: &Option<Value>| serde_json::to_string(value).expect("serialises");
        assert_eq!(
            text(&aggregate.final_output),
            text(&expected),
            "{event}: {outputs:?}"
        );
        // all_outputs keep what the hooks printed.
        assert_eq!(aggregate.all_outputs, outputs, "{event}");
    }

    #[test]
    fn or_merge_follows_5_1() {
        let e = HookEventName::BeforeTool;
        let cases: Vec<(Vec<Value>, Value)> = vec![
            // A single empty output still gets the defaults.
            (
                vec![json!({})],
                json!({"continue": true, "suppressOutput": false, "decision": "allow"}),
            ),
            // Block then allow → block (OR).
            (
                vec![
                    json!({"decision": "block", "reason": "r1"}),
                    json!({"decision": "allow", "reason": "r2"}),
                ],
                json!({"continue": true, "suppressOutput": false, "decision": "block", "reason": "r1\nr2"}),
            ),
            // The last blocking string wins.
            (
                vec![json!({"decision": "deny"}), json!({"decision": "block"})],
                json!({"continue": true, "suppressOutput": false, "decision": "block"}),
            ),
            // Ask then block → block; block then ask → block.
            (
                vec![json!({"decision": "ask"}), json!({"decision": "block"})],
                json!({"continue": true, "suppressOutput": false, "decision": "block"}),
            ),
            (
                vec![json!({"decision": "deny"}), json!({"decision": "ask"})],
                json!({"continue": true, "suppressOutput": false, "decision": "deny"}),
            ),
            // Ask alone → ask, no default allow.
            (
                vec![
                    json!({"decision": "ask", "systemMessage": "sure?"}),
                    json!({"decision": "allow"}),
                ],
                json!({"continue": true, "suppressOutput": false, "systemMessage": "sure?", "decision": "ask"}),
            ),
            // Neutral decisions: approve, null, wrong case.
            (
                vec![
                    json!({"decision": "Deny"}),
                    json!({"decision": null}),
                    json!({"decision": "approve"}),
                ],
                json!({"continue": true, "suppressOutput": false, "decision": "allow"}),
            ),
            // continue:false alone leaves decision absent; stop reasons joined.
            (
                vec![
                    json!({"continue": false, "stopReason": "s1"}),
                    json!({"continue": false}),
                    json!({"continue": false, "stopReason": "s2"}),
                ],
                json!({"continue": false, "stopReason": "s1\ns2", "suppressOutput": false}),
            ),
            // continue must be strictly false; stopReason without continue:false is ignored.
            (
                vec![
                    json!({"continue": 0, "stopReason": "x"}),
                    json!({"continue": "false"}),
                ],
                json!({"continue": true, "suppressOutput": false, "decision": "allow"}),
            ),
            // continue:false with a block keeps the block.
            (
                vec![
                    json!({"continue": false}),
                    json!({"decision": "deny", "reason": "no"}),
                ],
                json!({"continue": false, "suppressOutput": false, "decision": "deny", "reason": "no"}),
            ),
            // Messages: only truthy ones, from every output; non-strings stringified.
            (
                vec![
                    json!({"systemMessage": "a", "reason": ""}),
                    json!({"systemMessage": "", "reason": 5}),
                    json!({"systemMessage": "b", "reason": {"x": 1}}),
                ],
                json!({"continue": true, "suppressOutput": false, "systemMessage": "a\nb",
                       "decision": "allow", "reason": "5\n[object Object]"}),
            ),
            // Any truthy suppressOutput wins.
            (
                vec![
                    json!({"suppressOutput": 1}),
                    json!({"suppressOutput": false}),
                ],
                json!({"continue": true, "suppressOutput": true, "decision": "allow"}),
            ),
            // hookSpecificOutput shallow merge: later keys win wholesale.
            (
                vec![
                    json!({"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"a": 1}}}),
                    json!({"hookSpecificOutput": {"tool_input": {"b": 2}, "tailToolCallRequest": {"name": "x"}}}),
                ],
                json!({"continue": true, "suppressOutput": false, "decision": "allow",
                       "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"b": 2},
                                              "tailToolCallRequest": {"name": "x"}}}),
            ),
            // clearContext is sticky and never set to false.
            (
                vec![
                    json!({"hookSpecificOutput": {"clearContext": true}}),
                    json!({"hookSpecificOutput": {"clearContext": false, "k": 1}}),
                ],
                json!({"continue": true, "suppressOutput": false, "decision": "allow",
                       "hookSpecificOutput": {"clearContext": true, "k": 1}}),
            ),
            (
                vec![json!({"hookSpecificOutput": {"clearContext": false}})],
                json!({"continue": true, "suppressOutput": false, "decision": "allow",
                       "hookSpecificOutput": {}}),
            ),
            (
                vec![json!({"hookSpecificOutput": {"clearContext": "true"}})],
                json!({"continue": true, "suppressOutput": false, "decision": "allow",
                       "hookSpecificOutput": {}}),
            ),
            // additionalContext: strings joined (empty ones too), non-strings ignored.
            (
                vec![
                    json!({"hookSpecificOutput": {"additionalContext": "one"}}),
                    json!({"hookSpecificOutput": {"additionalContext": 42}}),
                    json!({"hookSpecificOutput": {"additionalContext": ""}}),
                    json!({"hookSpecificOutput": {"additionalContext": "two"}}),
                ],
                json!({"continue": true, "suppressOutput": false, "decision": "allow",
                       "hookSpecificOutput": {"additionalContext": "one\n\ntwo"}}),
            ),
            // Only non-string contexts: the shallow-merged value stays.
            (
                vec![json!({"hookSpecificOutput": {"additionalContext": 42}})],
                json!({"continue": true, "suppressOutput": false, "decision": "allow",
                       "hookSpecificOutput": {"additionalContext": 42}}),
            ),
            // Extra top-level keys are dropped from the final output.
            (
                vec![json!({"format": "markdown", "decision": "allow"})],
                json!({"continue": true, "suppressOutput": false, "decision": "allow"}),
            ),
            // Plain-text outputs merge like any other.
            (
                vec![
                    json!({"decision": "allow", "systemMessage": "Warning: w"}),
                    json!({"decision": "deny", "reason": "stop"}),
                ],
                json!({"continue": true, "suppressOutput": false, "systemMessage": "Warning: w",
                       "decision": "deny", "reason": "stop"}),
            ),
            // Array outputs contribute nothing but count as outputs.
            (
                vec![json!([{"decision": "deny"}])],
                json!({"continue": true, "suppressOutput": false, "decision": "allow"}),
            ),
            // A falsy primitive hookSpecificOutput is skipped; an array spreads its indices.
            (
                vec![
                    json!({"hookSpecificOutput": ""}),
                    json!({"hookSpecificOutput": ["x"]}),
                ],
                json!({"continue": true, "suppressOutput": false, "decision": "allow",
                       "hookSpecificOutput": {"0": "x"}}),
            ),
        ];
        for (outputs, expected) in cases {
            check(e, json!({}), &outputs, Some(expected));
        }
        // The other OR-merge events behave the same.
        for event in [
            HookEventName::AfterTool,
            HookEventName::BeforeAgent,
            HookEventName::AfterAgent,
            HookEventName::SessionStart,
        ] {
            check(
                event,
                json!({}),
                &[json!({"decision": "block"}), json!({"decision": "allow"})],
                Some(json!({"continue": true, "suppressOutput": false, "decision": "block"})),
            );
        }
    }

    /// The field replacement as copying spreads state it: the oracle of the moving one.
    fn field_replacement_by_copies(outputs: &[Value]) -> Map<String, Value> {
        let mut merged = Map::new();
        for output in outputs {
            let mut specific = Map::new();
            if let Some(previous) = merged.get("hookSpecificOutput") {
                spread_into(&mut specific, previous);
            }
            if let Some(current) = field(output, "hookSpecificOutput") {
                spread_into(&mut specific, current);
            }
            spread_into(&mut merged, output);
            merged.insert("hookSpecificOutput".to_owned(), Value::Object(specific));
        }
        merged
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop::sample::select(vec!["hookSpecificOutput", "decision", "a", "b", "0"]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0i64..3).prop_map(Value::from),
            "[ab]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..4).prop_map(|entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(key, value)| (key.to_owned(), value))
                            .collect(),
                    )
                }),
            ]
        })
    }

    /// Normalisation as picking each output key in turn states it: the oracle of the
    /// in-place one.
    fn normalise_by_picking(mut merged: Map<String, Value>) -> Value {
        let mut output = Map::new();
        for key in OUTPUT_KEYS {
            if let Some(value) = merged.remove(key) {
                output.insert(key.to_owned(), value);
            }
        }
        Value::Object(output)
    }

    /// Merged outputs: output keys and others, in any order.
    fn merged_output() -> impl proptest::strategy::Strategy<Value = Map<String, Value>> {
        use proptest::prelude::*;
        let mut keys: Vec<&'static str> = OUTPUT_KEYS.to_vec();
        keys.extend(["content", "a", "hookSpecificOutputs"]);
        prop::collection::vec((prop::sample::select(keys), json_value()), 0..10).prop_map(
            |entries| {
                entries
                    .into_iter()
                    .map(|(key, value)| (key.to_owned(), value))
                    .collect()
            },
        )
    }

    proptest::proptest! {
        #[test]
        fn normalising_in_place_equals_picking_each_key(merged in merged_output()) {
            let expected = normalise_by_picking(merged.clone());
            let normalised = normalise(merged);
            // Same keys in the same order, same values.
            proptest::prop_assert_eq!(
                serde_json::to_string(&normalised).expect("json"),
                serde_json::to_string(&expected).expect("json")
            );
        }

        #[test]
        fn moving_field_replacement_equals_copying_spreads(
            outputs in proptest::collection::vec(json_value(), 0..4)
        ) {
            let moved = Value::Object(field_replacement(outputs.clone()));
            let copied = Value::Object(field_replacement_by_copies(&outputs));
            // Serialised, so that key order counts too.
            proptest::prop_assert_eq!(moved.to_string(), copied.to_string());
        }
    }

    #[test]
    fn field_replacement_follows_5_2() {
        let e = HookEventName::BeforeModel;
        let cases: Vec<(Vec<Value>, Value)> = vec![
            // hookSpecificOutput is always present.
            (vec![json!({})], json!({"hookSpecificOutput": {}})),
            // Block then allow → allow; block then {} → block.
            (
                vec![json!({"decision": "block"}), json!({"decision": "allow"})],
                json!({"decision": "allow", "hookSpecificOutput": {}}),
            ),
            (
                vec![json!({"decision": "block", "reason": "r"}), json!({})],
                json!({"decision": "block", "reason": "r", "hookSpecificOutput": {}}),
            ),
            // "decision": null clears, and stays null in the output.
            (
                vec![json!({"decision": "block"}), json!({"decision": null})],
                json!({"decision": null, "hookSpecificOutput": {}}),
            ),
            // No continue default; later fields win; normalised order.
            (
                vec![
                    json!({"reason": "a", "continue": false, "systemMessage": "m1"}),
                    json!({"systemMessage": "m2", "extra": 1}),
                ],
                json!({"continue": false, "systemMessage": "m2", "reason": "a", "hookSpecificOutput": {}}),
            ),
            // hookSpecificOutput shallow merge; llm_request replaced wholesale.
            (
                vec![
                    json!({"hookSpecificOutput": {"llm_request": {"model": "a", "config": {"t": 1}}, "x": 1}}),
                    json!({"hookSpecificOutput": {"llm_request": {"messages": []}}}),
                ],
                json!({"hookSpecificOutput": {"llm_request": {"messages": []}, "x": 1}}),
            ),
            // A string hookSpecificOutput spreads its characters.
            (
                vec![json!({"hookSpecificOutput": "ab"})],
                json!({"hookSpecificOutput": {"0": "a", "1": "b"}}),
            ),
            // An array output spreads indices that normalisation drops.
            (
                vec![json!([{"decision": "block"}])],
                json!({"hookSpecificOutput": {}}),
            ),
        ];
        for (outputs, expected) in cases {
            check(e, json!({}), &outputs, Some(expected));
        }
    }

    #[test]
    fn tool_selection_follows_5_3_and_d5() {
        let e = HookEventName::BeforeToolSelection;
        let tc = |mode: &str, names: Value| {
            json!({"hookSpecificOutput": {"hookEventName": "BeforeToolSelection",
                   "toolConfig": {"mode": mode, "allowedFunctionNames": names}}})
        };
        let out = |config: Value| json!({"hookSpecificOutput": {"toolConfig": config}});
        let cases: Vec<(Vec<Value>, Value)> = vec![
            // Union, sorted by code unit; ANY when any says ANY.
            (
                vec![
                    out(
                        json!({"mode": "ANY", "allowedFunctionNames": ["write_file", "read_file"]}),
                    ),
                    out(
                        json!({"mode": "AUTO", "allowedFunctionNames": ["glob", "read_file", "Zed"]}),
                    ),
                ],
                tc("ANY", json!(["Zed", "glob", "read_file", "write_file"])),
            ),
            // NONE wins and forces [].
            (
                vec![
                    out(json!({"mode": "ANY", "allowedFunctionNames": ["a"]})),
                    out(json!({"mode": "NONE", "allowedFunctionNames": ["b"]})),
                ],
                tc("NONE", json!([])),
            ),
            // Unknown or lowercase modes count as AUTO.
            (
                vec![out(
                    json!({"mode": "any", "allowedFunctionNames": ["b", "a"]}),
                )],
                tc("AUTO", json!(["a", "b"])),
            ),
            // Any output without a toolConfig → AUTO [].
            (vec![json!({})], tc("AUTO", json!([]))),
            (
                vec![json!({"decision": "deny", "systemMessage": "x", "continue": false})],
                tc("AUTO", json!([])),
            ),
            (
                vec![json!({"decision": "allow", "systemMessage": "plain"})],
                tc("AUTO", json!([])),
            ),
            (vec![json!(["array"])], tc("AUTO", json!([]))),
            // tool lists: a string allowedFunctionNames is split on commas.
            (
                vec![out(
                    json!({"mode": "ANY", "allowedFunctionNames": " read_file, glob,,"}),
                )],
                tc("ANY", json!(["glob", "read_file"])),
            ),
            // tool lists: the seeds' nested functionCallingConfig shape.
            (
                vec![out(json!({"functionCallingConfig": {"mode": "ANY",
                    "allowedFunctionNames": ["read_file", "write_file", "replace"]}}))],
                tc("ANY", json!(["read_file", "replace", "write_file"])),
            ),
            // ... only when toolConfig has neither key itself.
            (
                vec![out(
                    json!({"mode": "AUTO", "functionCallingConfig": {"mode": "NONE"}}),
                )],
                tc("AUTO", json!([])),
            ),
            // tool lists plain-text list output (as interpret produces it) merges like JSON.
            (
                vec![
                    tc("ANY", json!(["write_file", "read_file"])),
                    out(json!({"allowedFunctionNames": ["glob"]})),
                ],
                tc("ANY", json!(["glob", "read_file", "write_file"])),
            ),
            // UTF-16 order and JavaScript Set semantics for odd values.
            (
                vec![out(
                    json!({"allowedFunctionNames": ["\u{FF61}", "\u{1F600}", "b", "a", "b", 10, 9, 10.0, null, true, {}, {}]}),
                )],
                tc(
                    "AUTO",
                    json!([10, 9, {}, {}, "a", "b", null, true, "\u{1F600}", "\u{FF61}"]),
                ),
            ),
            // A falsy toolConfig is skipped.
            (
                vec![out(json!(null)), out(json!(""))],
                tc("AUTO", json!([])),
            ),
        ];
        for (outputs, expected) in cases {
            check(e, json!({}), &outputs, Some(expected));
        }
    }

    #[test]
    fn simple_merge_follows_5_4() {
        let cases: Vec<(Vec<Value>, Value)> = vec![
            (
                vec![
                    json!({"systemMessage": "a", "hookSpecificOutput": {"x": 1, "y": 2}}),
                    json!({"systemMessage": "b", "hookSpecificOutput": {"y": 3}}),
                ],
                json!({"systemMessage": "b", "hookSpecificOutput": {"y": 3}}),
            ),
            (
                vec![
                    json!({"decision": "block"}),
                    json!({"suppressOutput": true}),
                ],
                json!({"suppressOutput": true, "decision": "block"}),
            ),
            (
                vec![json!({"hookSpecificOutput": "s"})],
                json!({"hookSpecificOutput": "s"}),
            ),
        ];
        for event in [
            HookEventName::Notification,
            HookEventName::SessionEnd,
            HookEventName::PreCompress,
        ] {
            for (outputs, expected) in &cases {
                check(event, json!({}), outputs, Some(expected.clone()));
            }
        }
    }

    #[test]
    fn a_response_gets_its_text_replaced_whatever_its_shape() {
        let part = |text: &str| json!({"content": {"role": "model", "parts": [text]}});
        // (response, expected after replacing its text with "new")
        let cases = [
            (
                json!({"text": "old", "candidates": [{"content": {"role": "model", "parts": ["o", "ld"]}, "index": 0}, part("second")]}),
                json!({"text": "new", "candidates": [{"content": {"role": "model", "parts": ["new"]}, "index": 0}, part("second")]}),
            ),
            (json!({}), json!({"candidates": [part("new")]})),
            (
                json!({"candidates": []}),
                json!({"candidates": [part("new")]}),
            ),
            (
                json!({"candidates": "x", "k": 1}),
                json!({"candidates": [part("new")], "k": 1}),
            ),
            (
                json!({"candidates": ["x", "y"]}),
                json!({"candidates": [part("new"), "y"]}),
            ),
            (
                json!({"candidates": [{"content": "x", "index": 2}]}),
                json!({"candidates": [{"content": {"role": "model", "parts": ["new"]}, "index": 2}]}),
            ),
            // Gemini API part objects keep their form, and the parts without text stay.
            (
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "o"}, {"functionCall": {"name": "f"}}, {"text": "ld", "thought": true}]}}]}),
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "new"}, {"functionCall": {"name": "f"}}]}}]}),
            ),
        ];
        for (response, expected) in cases {
            let Value::Object(mut owned) = response.clone() else {
                panic!("an object");
            };
            replace_response_text(&mut owned, "new");
            assert_eq!(Value::Object(owned), expected, "{response}");
            assert_eq!(
                replaced_response(Some(&response), "new"),
                expected,
                "{response}"
            );
        }
        // No response, or one that is not an object: a minimal one.
        for original in [None, Some(json!("text")), Some(json!(null))] {
            assert_eq!(
                replaced_response(original.as_ref(), "new"),
                json!({"candidates": [part("new")]})
            );
        }
    }

    #[test]
    fn after_model_content_replacement_d6() {
        let e = HookEventName::AfterModel;
        let input = json!({
            "llm_request": {"model": "m"},
            "llm_response": {"text": "secret 123",
                             "candidates": [{"content": {"role": "model", "parts": ["secret ", "123"]},
                                             "finishReason": "STOP"}],
                             "usageMetadata": {"totalTokenCount": 3}},
            "content": "secret 123",
        });
        let cases: Vec<(Value, Vec<Value>, Value)> = vec![
            // The seed's redaction answer.
            (
                input.clone(),
                vec![json!({"decision": "allow", "content": "[redacted]"})],
                json!({"decision": "allow", "hookSpecificOutput": {"llm_response": {
                    "text": "[redacted]",
                    "candidates": [{"content": {"role": "model", "parts": ["[redacted]"]}, "finishReason": "STOP"}],
                    "usageMetadata": {"totalTokenCount": 3}}}}),
            ),
            // An explicit llm_response wins over content.
            (
                input.clone(),
                vec![
                    json!({"content": "x", "hookSpecificOutput": {"llm_response": {"candidates": []}}}),
                ],
                json!({"hookSpecificOutput": {"llm_response": {"candidates": []}}}),
            ),
            // A later hook's content replaces an earlier llm_response (field replacement).
            (
                input.clone(),
                vec![
                    json!({"hookSpecificOutput": {"llm_response": {"candidates": []}, "k": 1}}),
                    json!({"content": "later"}),
                ],
                json!({"hookSpecificOutput": {"llm_response": {
                    "text": "later",
                    "candidates": [{"content": {"role": "model", "parts": ["later"]}, "finishReason": "STOP"}],
                    "usageMetadata": {"totalTokenCount": 3}}, "k": 1}}),
            ),
            // No response in the input: a minimal one.
            (
                json!({}),
                vec![json!({"content": "c", "hookSpecificOutput": null})],
                json!({"hookSpecificOutput": {"llm_response": {"candidates": [{"content": {"role": "model", "parts": ["c"]}}]}}}),
            ),
            // No text key in the input: none added; missing candidate content created.
            (
                json!({"llm_response": {"candidates": [{"index": 0}]}}),
                vec![json!({"content": ""})],
                json!({"hookSpecificOutput": {"llm_response": {"candidates": [{"index": 0, "content": {"role": "model", "parts": [""]}}]}}}),
            ),
            // A non-string content is not a replacement.
            (
                input.clone(),
                vec![json!({"content": 5})],
                json!({"hookSpecificOutput": {}}),
            ),
        ];
        for (input, outputs, expected) in cases {
            check(e, input, &outputs, Some(expected));
        }
        // BeforeModel has no content replacement.
        check(
            HookEventName::BeforeModel,
            input,
            &[json!({"content": "x"})],
            Some(json!({"hookSpecificOutput": {}})),
        );
    }

    #[test]
    fn outputs_errors_and_durations() {
        let e = HookEventName::BeforeTool;
        let results = vec![
            result(e, true, Some(json!({"decision": "allow"})), None, 10),
            // Failed hooks' outputs are aggregated too.
            result(
                e,
                false,
                Some(json!({"decision": "deny", "reason": "exit 1 json"})),
                None,
                20,
            ),
            result(e, false, None, Some("Hook timed out after 5ms"), 30),
            result(e, true, None, None, 40),
        ];
        let aggregate = aggregate(e, &results, &Map::new());
        assert_eq!(
            aggregate,
            Aggregate {
                success: false,
                final_output: Some(json!({"continue": true, "suppressOutput": false,
                                           "decision": "deny", "reason": "exit 1 json"})),
                all_outputs: vec![
                    json!({"decision": "allow"}),
                    json!({"decision": "deny", "reason": "exit 1 json"}),
                ],
                errors: vec!["Hook timed out after 5ms".to_owned()],
                total_duration: Duration::from_millis(100),
            }
        );

        // No outputs → no final output; no errors → success.
        let aggregate = super::aggregate(e, &[result(e, true, None, None, 1)], &Map::new());
        assert_eq!(
            aggregate,
            Aggregate {
                success: true,
                final_output: None,
                all_outputs: Vec::new(),
                errors: Vec::new(),
                total_duration: Duration::from_millis(1),
            }
        );
        assert_eq!(super::aggregate(e, &[], &Map::new()).final_output, None);
    }

    #[test]
    fn javascript_type_errors_abandon_the_firing() {
        let cases = [
            (
                HookEventName::AfterTool,
                vec![
                    json!({"decision": "deny"}),
                    json!({"hookSpecificOutput": "text"}),
                ],
                "Cannot use 'in' operator to search for 'additionalContext' in text",
            ),
            (
                HookEventName::SessionStart,
                vec![json!({"hookSpecificOutput": true})],
                "Cannot use 'in' operator to search for 'additionalContext' in true",
            ),
            (
                HookEventName::BeforeToolSelection,
                vec![json!({"hookSpecificOutput": {"toolConfig": {"allowedFunctionNames": 3}}})],
                "toolConfig.allowedFunctionNames is not iterable",
            ),
            (
                HookEventName::BeforeToolSelection,
                vec![json!({"hookSpecificOutput": {"toolConfig": {"allowedFunctionNames": {}}}})],
                "toolConfig.allowedFunctionNames is not iterable",
            ),
        ];
        for (event, outputs, message) in cases {
            let results: Vec<HookResult> = outputs
                .iter()
                .map(|output| result(event, true, Some(output.clone()), Some("earlier"), 5))
                .collect();
            assert_eq!(
                aggregate(event, &results, &Map::new()),
                Aggregate {
                    success: false,
                    final_output: None,
                    all_outputs: Vec::new(),
                    errors: vec![message.to_owned()],
                    total_duration: Duration::ZERO,
                },
                "{event}"
            );
        }
        // The same shapes are harmless for events that never evaluate them.
        check(
            HookEventName::BeforeModel,
            json!({}),
            &[json!({"hookSpecificOutput": 5})],
            Some(json!({"hookSpecificOutput": {}})),
        );
    }
}
