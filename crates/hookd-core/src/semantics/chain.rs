//! Sequential chaining (spec §4.7): how one hook's output changes what the next hook sees.
//!
//! In a sequential plan, after each hook that succeeded **and** produced an output, the input
//! for the next hook is derived from it:
//!
//! - BeforeAgent: a string `hookSpecificOutput.additionalContext` is appended to `prompt`
//!   after a blank line (`prompt + "\n\n" + context`, unescaped);
//! - BeforeModel: a truthy `hookSpecificOutput.llm_request` is shallow-merged over
//!   `llm_request` (a partial `config` replaces the whole `config`);
//! - BeforeTool: a truthy `hookSpecificOutput.tool_input` is shallow-merged over `tool_input`;
//! - every other event: nothing.
//!
//! Failed hooks (exit code 1 with JSON included) never change the input, although their
//! output is still aggregated. Chaining only changes what later hooks see; the aggregation
//! still merges the raw outputs.
//!
//! Gemini CLI uses JavaScript's `in` operator on `hookSpecificOutput` here, which throws a
//! `TypeError` when a hook printed a non-empty string, a non-zero number or `true` in that
//! place; the throw aborts the whole firing. [`try_apply_chain`] reports that case as an
//! error so a runner can reproduce it; [`apply_chain`] ignores it and leaves the input as it
//! was.
//!
//! This module also holds the few JavaScript value semantics ([`js`]) that the chaining and
//! the aggregation both reproduce.

use serde_json::{Map, Value};

use crate::event::HookEventName;
use crate::result::HookResult;

/// The `TypeError` Gemini CLI's JavaScript throws on some malformed hook outputs, with V8's
/// message. Where it is thrown, Gemini CLI abandons the whole firing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JsTypeError(pub String);

/// Derives the next hook's input from `result` (spec §4.7), ignoring the case where Gemini CLI
/// would throw (see [`try_apply_chain`]).
pub fn apply_chain(event: HookEventName, input: &mut Map<String, Value>, result: &HookResult) {
    // Ignoring the error is the documented contract: the input is left unchanged.
    let _ = try_apply_chain(event, input, result);
}

/// Derives the next hook's input from `result` (spec §4.7).
///
/// # Errors
///
/// Returns the `TypeError` Gemini CLI throws when `hookSpecificOutput` is a truthy primitive
/// for BeforeAgent, BeforeModel or BeforeTool; `input` is then unchanged.
pub fn try_apply_chain(
    event: HookEventName,
    input: &mut Map<String, Value>,
    result: &HookResult,
) -> Result<(), JsTypeError> {
    if !result.success {
        return Ok(());
    }
    let Some(output) = result
        .output
        .as_ref()
        .filter(|output| js::is_truthy(output))
    else {
        return Ok(());
    };
    let Some(specific) = output
        .get("hookSpecificOutput")
        .filter(|specific| js::is_truthy(specific))
    else {
        return Ok(());
    };
    let field = match event {
        HookEventName::BeforeAgent => "additionalContext",
        HookEventName::BeforeModel => "llm_request",
        HookEventName::BeforeTool => "tool_input",
        _ => return Ok(()),
    };
    let Some(value) = js::in_operator(field, specific)? else {
        return Ok(());
    };
    match event {
        HookEventName::BeforeAgent => {
            if let (Value::String(context), Some(prompt)) = (value, input.get_mut("prompt")) {
                let appended = format!("{}\n\n{context}", js::to_js_string(prompt));
                *prompt = Value::String(appended);
            }
        }
        _ => {
            let target = if event == HookEventName::BeforeModel {
                "llm_request"
            } else {
                "tool_input"
            };
            if js::is_truthy(value) {
                if let Some(current) = input.get_mut(target) {
                    let mut merged = Map::new();
                    js::spread_into(&mut merged, current);
                    js::spread_into(&mut merged, value);
                    *current = Value::Object(merged);
                }
            }
        }
    }
    Ok(())
}

/// JavaScript value semantics that Gemini CLI's hook engine relies on, reproduced on JSON.
pub mod js {
    use std::cmp::Ordering;

    use serde_json::{Map, Value};

    use super::JsTypeError;

    /// JavaScript truthiness: `false`, `0`, `""` and `null` are falsy; objects and arrays
    /// (even empty ones) are truthy.
    pub fn is_truthy(value: &Value) -> bool {
        match value {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            Value::String(s) => !s.is_empty(),
            Value::Array(_) | Value::Object(_) => true,
        }
    }

    /// `{...target, ...value}`: copies `value`'s own enumerable properties into `target`.
    ///
    /// An object's keys keep their first position and take the later value; an array spreads
    /// its indices, a string its UTF-16 code units (a lone surrogate becomes U+FFFD), and
    /// anything else nothing. JavaScript would move integer-like keys to the front of the
    /// object; hookd keeps insertion order.
    pub fn spread_into(target: &mut Map<String, Value>, value: &Value) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    target.insert(key.clone(), value.clone());
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    target.insert(index.to_string(), item.clone());
                }
            }
            Value::String(s) => {
                let units: Vec<u16> = s.encode_utf16().collect();
                for (index, unit) in units.iter().enumerate() {
                    let text: String = char::decode_utf16([*unit])
                        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                        .collect();
                    target.insert(index.to_string(), Value::String(text));
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// `key in value`, returning the property's value when present.
    ///
    /// # Errors
    ///
    /// JavaScript throws a `TypeError` when `value` is a primitive; this returns it with V8's
    /// message. (`null` would throw too, but callers only ask truthy values.)
    pub fn in_operator<'a>(key: &str, value: &'a Value) -> Result<Option<&'a Value>, JsTypeError> {
        match value {
            Value::Object(map) => Ok(map.get(key)),
            // Arrays only have index keys (and `length`, which no caller asks for).
            Value::Array(_) => Ok(None),
            primitive => Err(JsTypeError(format!(
                "Cannot use 'in' operator to search for '{key}' in {}",
                to_js_string(primitive)
            ))),
        }
    }

    /// `String(value)`, as string concatenation and `Array.prototype.join` convert values.
    pub fn to_js_string(value: &Value) -> String {
        match value {
            Value::Null => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => number_to_string(n.as_f64().unwrap_or(0.0)),
            Value::String(s) => s.clone(),
            Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    Value::Null => String::new(),
                    other => to_js_string(other),
                })
                .collect::<Vec<_>>()
                .join(","),
            Value::Object(_) => "[object Object]".to_owned(),
        }
    }

    /// JavaScript's `Number.prototype.toString()` for a finite number.
    pub fn number_to_string(x: f64) -> String {
        if x == 0.0 || !x.is_finite() {
            // JSON numbers are finite; zero (either sign) prints as "0".
            return "0".to_owned();
        }
        if x < 0.0 {
            return format!("-{}", number_to_string(-x));
        }
        // `{:e}` gives the shortest digits that round-trip, like JavaScript.
        let scientific = format!("{x:e}");
        let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
        let n = exponent + 1;
        if k <= n && n <= 21 {
            format!("{digits}{}", "0".repeat((n - k) as usize))
        } else if 0 < n && n <= 21 {
            let (int, frac) = digits.split_at(n as usize);
            format!("{int}.{frac}")
        } else if -6 < n && n <= 0 {
            format!("0.{}{digits}", "0".repeat((-n) as usize))
        } else {
            let sign = if n - 1 < 0 { '-' } else { '+' };
            let (first, rest) = digits.split_at(1);
            let dot = if rest.is_empty() { "" } else { "." };
            format!("{first}{dot}{rest}e{sign}{}", (n - 1).abs())
        }
    }

    /// Compares two strings by UTF-16 code units, as JavaScript's default sort does.
    pub fn compare_utf16(a: &str, b: &str) -> Ordering {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::js::*;
    use super::*;
    use crate::model::Source;
    use crate::result::{HookOutcome, OutputFormat};

    fn result(success: bool, output: Option<Value>) -> HookResult {
        HookResult {
            name: "h".to_owned(),
            source: Source::Project,
            event: HookEventName::BeforeTool,
            success,
            output,
            output_format: Some(OutputFormat::Json),
            stdout: String::new(),
            stderr: String::new(),
            exit_code: Some(if success { 0 } else { 1 }),
            duration: Duration::ZERO,
            error: None,
            outcome: HookOutcome::Exited {
                code: if success { 0 } else { 1 },
            },
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

    /// Applies each (success, output) in order and compares the final input.
    fn check(
        event: HookEventName,
        input: Value,
        steps: &[(bool, Value)],
        expected: Result<Value, &str>,
    ) {
        let mut input = object(input);
        let mut outcome = Ok(());
        for (success, output) in steps {
            outcome = try_apply_chain(event, &mut input, &result(*success, Some(output.clone())));
            if outcome.is_err() {
                break;
            }
        }
        match expected {
            Ok(value) => {
                assert_eq!(outcome, Ok(()), "{event}");
                assert_eq!(
                    serde_json::to_string(&input).expect("serialises"),
                    serde_json::to_string(&value).expect("serialises"),
                    "{event}"
                );
            }
            Err(message) => assert_eq!(outcome, Err(JsTypeError(message.to_owned())), "{event}"),
        }
    }

    /// (event, initial input, (success, output) per hook, final input or the TypeError).
    type ChainCase = (
        HookEventName,
        Value,
        Vec<(bool, Value)>,
        Result<Value, &'static str>,
    );

    #[test]
    fn chaining_per_event() {
        use HookEventName::*;
        let cases: Vec<ChainCase> = vec![
            // BeforeTool: shallow merge of tool_input, accumulating across hooks.
            (
                BeforeTool,
                json!({"tool_name": "t", "tool_input": {"x": 0}}),
                vec![
                    (
                        true,
                        json!({"hookSpecificOutput": {"tool_input": {"a": 1}}}),
                    ),
                    (
                        true,
                        json!({"hookSpecificOutput": {"tool_input": {"b": 2}}}),
                    ),
                ],
                Ok(json!({"tool_name": "t", "tool_input": {"x": 0, "a": 1, "b": 2}})),
            ),
            // Later keys override earlier ones but keep their position.
            (
                BeforeTool,
                json!({"tool_input": {"a": 1, "b": 1}}),
                vec![(
                    true,
                    json!({"hookSpecificOutput": {"tool_input": {"a": 2, "c": 3}}}),
                )],
                Ok(json!({"tool_input": {"a": 2, "b": 1, "c": 3}})),
            ),
            // Failed hooks (exit 1 with JSON) do not chain.
            (
                BeforeTool,
                json!({"tool_input": {}}),
                vec![(
                    false,
                    json!({"hookSpecificOutput": {"tool_input": {"a": 1}}}),
                )],
                Ok(json!({"tool_input": {}})),
            ),
            // A falsy tool_input does nothing; a missing tool_input in the input is not added.
            (
                BeforeTool,
                json!({"tool_input": {"k": 1}}),
                vec![(true, json!({"hookSpecificOutput": {"tool_input": null}}))],
                Ok(json!({"tool_input": {"k": 1}})),
            ),
            (
                BeforeTool,
                json!({"tool_name": "t"}),
                vec![(
                    true,
                    json!({"hookSpecificOutput": {"tool_input": {"a": 1}}}),
                )],
                Ok(json!({"tool_name": "t"})),
            ),
            // A string tool_input spreads its characters (JavaScript object spread).
            (
                BeforeTool,
                json!({"tool_input": {"k": 1}}),
                vec![(true, json!({"hookSpecificOutput": {"tool_input": "ab"}}))],
                Ok(json!({"tool_input": {"k": 1, "0": "a", "1": "b"}})),
            ),
            // No hookSpecificOutput, or an empty string one: nothing.
            (
                BeforeTool,
                json!({"tool_input": {}}),
                vec![
                    (true, json!({"decision": "allow"})),
                    (true, json!({"hookSpecificOutput": ""})),
                ],
                Ok(json!({"tool_input": {}})),
            ),
            // A truthy primitive hookSpecificOutput throws in Gemini CLI.
            (
                BeforeTool,
                json!({"tool_input": {}}),
                vec![(true, json!({"hookSpecificOutput": "oops"}))],
                Err("Cannot use 'in' operator to search for 'tool_input' in oops"),
            ),
            (
                BeforeAgent,
                json!({"prompt": "p"}),
                vec![(true, json!({"hookSpecificOutput": 5}))],
                Err("Cannot use 'in' operator to search for 'additionalContext' in 5"),
            ),
            // An array hookSpecificOutput has no such key.
            (
                BeforeTool,
                json!({"tool_input": {}}),
                vec![(true, json!({"hookSpecificOutput": [1]}))],
                Ok(json!({"tool_input": {}})),
            ),
            // BeforeAgent: additionalContext appended after a blank line, raw.
            (
                BeforeAgent,
                json!({"prompt": "hello"}),
                vec![
                    (
                        true,
                        json!({"hookSpecificOutput": {"additionalContext": "<ctx1>"}}),
                    ),
                    (
                        true,
                        json!({"hookSpecificOutput": {"additionalContext": ""}}),
                    ),
                    (
                        true,
                        json!({"hookSpecificOutput": {"additionalContext": 7}}),
                    ),
                ],
                Ok(json!({"prompt": "hello\n\n<ctx1>\n\n"})),
            ),
            // BeforeModel: shallow merge of llm_request; a partial config replaces config.
            (
                BeforeModel,
                json!({"llm_request": {"model": "m", "config": {"temperature": 1, "topK": 3}, "messages": []}}),
                vec![(
                    true,
                    json!({"hookSpecificOutput": {"llm_request": {"config": {"temperature": 0}}}}),
                )],
                Ok(
                    json!({"llm_request": {"model": "m", "config": {"temperature": 0}, "messages": []}}),
                ),
            ),
            // Other events never chain.
            (
                AfterTool,
                json!({"tool_input": {"k": 1}}),
                vec![(
                    true,
                    json!({"hookSpecificOutput": {"tool_input": {"a": 1}}}),
                )],
                Ok(json!({"tool_input": {"k": 1}})),
            ),
            (
                AfterModel,
                json!({"llm_request": {"model": "m"}}),
                vec![(
                    true,
                    json!({"hookSpecificOutput": {"llm_request": {"model": "x"}}}),
                )],
                Ok(json!({"llm_request": {"model": "m"}})),
            ),
            (
                BeforeToolSelection,
                json!({"llm_request": {"model": "m"}}),
                vec![(true, json!({"hookSpecificOutput": "not even checked"}))],
                Ok(json!({"llm_request": {"model": "m"}})),
            ),
        ];
        for (event, input, steps, expected) in cases {
            check(event, input, &steps, expected);
        }
    }

    #[test]
    fn chaining_changes_what_hooks_see_not_the_aggregate() {
        // Three sequential BeforeTool hooks: {a:1}, then a failed {z:9}, then {b:2}.
        let mut input = object(json!({"tool_name": "t", "tool_input": {}}));
        let results = [
            result(
                true,
                Some(json!({"hookSpecificOutput": {"tool_input": {"a": 1}}})),
            ),
            result(
                false,
                Some(json!({"hookSpecificOutput": {"tool_input": {"z": 9}}})),
            ),
            result(
                true,
                Some(json!({"hookSpecificOutput": {"tool_input": {"b": 2}}})),
            ),
        ];
        let mut seen = Vec::new();
        for hook_result in &results {
            seen.push(input.get("tool_input").cloned());
            apply_chain(HookEventName::BeforeTool, &mut input, hook_result);
        }
        assert_eq!(
            seen,
            [
                Some(json!({})),
                Some(json!({"a": 1})),
                Some(json!({"a": 1}))
            ]
        );
        assert_eq!(input.get("tool_input"), Some(&json!({"a": 1, "b": 2})));

        // The aggregation merges the raw outputs: the last tool_input wins wholesale.
        let aggregate = crate::aggregate::aggregate(HookEventName::BeforeTool, &results, &input);
        let final_output = aggregate.final_output.expect("has outputs");
        assert_eq!(
            final_output.pointer("/hookSpecificOutput/tool_input"),
            Some(&json!({"b": 2}))
        );
    }

    #[test]
    fn apply_chain_ignores_the_type_error() {
        let mut input = object(json!({"tool_input": {"k": 1}}));
        apply_chain(
            HookEventName::BeforeTool,
            &mut input,
            &result(true, Some(json!({"hookSpecificOutput": true}))),
        );
        assert_eq!(Value::Object(input), json!({"tool_input": {"k": 1}}));
        // No output at all: nothing.
        let mut input = object(json!({"tool_input": {}}));
        apply_chain(HookEventName::BeforeTool, &mut input, &result(true, None));
        assert_eq!(Value::Object(input), json!({"tool_input": {}}));
    }

    #[test]
    fn js_semantics() {
        let truthy = [
            (json!(null), false),
            (json!(false), false),
            (json!(0), false),
            (json!(0.0), false),
            (json!(""), false),
            (json!(true), true),
            (json!(-1), true),
            (json!("0"), true),
            (json!([]), true),
            (json!({}), true),
        ];
        for (value, expected) in truthy {
            assert_eq!(is_truthy(&value), expected, "{value}");
        }

        // Checked against node's String(x).
        let numbers = [
            (json!(1e21), "1e+21"),
            (json!(1e-7), "1e-7"),
            (json!(123.456), "123.456"),
            (json!(0.000001), "0.000001"),
            (json!(1.5e300), "1.5e+300"),
            (json!(12345678901234567890_u64), "12345678901234567000"),
            (json!(9007199254740993_u64), "9007199254740992"),
            (json!(-0.0), "0"),
            (json!(100), "100"),
            (json!(1.0), "1"),
            (json!(5e-324), "5e-324"),
            (json!(0.30000000000000004), "0.30000000000000004"),
            (json!(-2.5), "-2.5"),
            (json!(123e18), "123000000000000000000"),
            (json!(1.25e-6), "0.00000125"),
        ];
        for (value, expected) in numbers {
            assert_eq!(to_js_string(&value), expected, "{value}");
        }

        let strings = [
            (json!("s"), "s"),
            (json!(true), "true"),
            (json!(null), "null"),
            (json!([1, null, "a", [2, 3]]), "1,,a,2,3"),
            (json!({"a": 1}), "[object Object]"),
        ];
        for (value, expected) in strings {
            assert_eq!(to_js_string(&value), expected, "{value}");
        }

        let mut spread = object(json!({"b": 1}));
        spread_into(&mut spread, &json!("x\u{1F600}"));
        spread_into(&mut spread, &json!(true));
        spread_into(&mut spread, &json!(["p"]));
        assert_eq!(
            Value::Object(spread),
            json!({"b": 1, "0": "p", "1": "\u{FFFD}", "2": "\u{FFFD}"})
        );

        // UTF-16 order: U+1F600 (surrogates D83D DE00) sorts before U+FF61.
        assert_eq!(
            compare_utf16("\u{1F600}", "\u{FF61}"),
            std::cmp::Ordering::Less
        );
        assert_eq!(compare_utf16("B", "a"), std::cmp::Ordering::Less);
    }
}
