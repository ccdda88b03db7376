//! What a policy decided ([`Decision`], read from the rules `deny`, `ask`, `context` and
//! `tool_input` of its package) and the hook answer it becomes ([`Decision::hook_output`]):
//! the same JSON a hook in hookd's own language prints, so that every host hears it in its
//! own shape through the dialect that relayed the event.

use serde_json::{Map, Value, json};

/// The decision of one evaluation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// Why the call is denied (the `deny` set), in the policy's order; empty: not denied.
    pub deny: Vec<String>,
    /// Why the user should be asked (the `ask` set); applies when nothing denies.
    pub ask: Vec<String>,
    /// Text added to the model's context (the `context` set).
    pub context: Vec<String>,
    /// The tool input to run instead (the `tool_input` object), where the event allows it.
    pub tool_input: Option<Map<String, Value>>,
}

/// Why a policy's result cannot be read as a decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule}: {message}")]
pub struct DecisionError {
    /// The rule (`deny`, `ask`, `context`, `tool_input`).
    pub rule: &'static str,
    /// What is wrong with its value.
    pub message: String,
}

impl Decision {
    /// The decision in `result`, the object hookd's entry rule builds from the policy's
    /// package: each of `deny`, `ask` and `context` is a set (an array here) of strings, or a
    /// boolean (`true`: with no reason); `tool_input` an object or `null`.
    pub fn from_result(result: &Value) -> Result<Decision, DecisionError> {
        Ok(Decision {
            deny: reasons(result, "deny")?,
            ask: reasons(result, "ask")?,
            context: reasons(result, "context")?,
            tool_input: match result.get("tool_input") {
                None | Some(Value::Null) => None,
                Some(Value::Object(object)) => Some(object.clone()),
                Some(other) => {
                    return Err(DecisionError {
                        rule: "tool_input",
                        message: format!("must be an object, not {}", type_name(other)),
                    });
                }
            },
        })
    }

    /// Whether the policy said nothing.
    pub fn is_empty(&self) -> bool {
        self.deny.is_empty()
            && self.ask.is_empty()
            && self.context.is_empty()
            && self.tool_input.is_none()
    }

    /// The hook answer for `event` (hookd's event name): `{}` when the policy said nothing;
    /// a deny (or ask) with its reasons joined by `"; "`; added context and a rewritten tool
    /// input under `hookSpecificOutput`, as a hook in hookd's own language writes them.
    pub fn hook_output(&self, event: &str) -> Value {
        let mut output = Map::new();
        if !self.deny.is_empty() {
            output.insert("decision".to_owned(), json!("deny"));
            output.insert("reason".to_owned(), Value::from(join(&self.deny)));
        } else if !self.ask.is_empty() {
            output.insert("decision".to_owned(), json!("ask"));
            output.insert("reason".to_owned(), Value::from(join(&self.ask)));
        }
        let mut specific = Map::new();
        if !self.context.is_empty() {
            specific.insert(
                "additionalContext".to_owned(),
                Value::from(self.context.join("\n")),
            );
        }
        if let Some(tool_input) = &self.tool_input
            && self.deny.is_empty()
        {
            specific.insert("tool_input".to_owned(), Value::Object(tool_input.clone()));
        }
        if !specific.is_empty() {
            specific.insert("hookEventName".to_owned(), Value::from(event));
            output.insert("hookSpecificOutput".to_owned(), Value::Object(specific));
        }
        Value::Object(output)
    }
}

/// The reasons of a `deny`, `ask` or `context` value.
fn reasons(result: &Value, rule: &'static str) -> Result<Vec<String>, DecisionError> {
    match result.get(rule) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(Vec::new()),
        Some(Value::Bool(true)) => Ok(vec![String::new()]),
        Some(Value::String(text)) => Ok(vec![text.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(text.clone()),
                other => Err(DecisionError {
                    rule,
                    message: format!(
                        "every element must be a string (a reason), not {}",
                        type_name(other)
                    ),
                }),
            })
            .collect(),
        Some(other) => Err(DecisionError {
            rule,
            message: format!(
                "must be a set of strings or a boolean, not {}",
                type_name(other)
            ),
        }),
    }
}

/// Non-empty reasons joined by `"; "`; `"denied by policy"` when none says why.
fn join(reasons: &[String]) -> String {
    let said: Vec<&str> = reasons
        .iter()
        .map(String::as_str)
        .filter(|reason| !reason.is_empty())
        .collect();
    if said.is_empty() {
        "denied by policy".to_owned()
    } else {
        said.join("; ")
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a set",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_become_hook_answers() {
        // (result, answer for BeforeTool)
        let cases = [
            (json!({}), json!({})),
            (json!({"deny": [], "ask": [], "context": []}), json!({})),
            (
                json!({"deny": ["no rm -rf", "no sudo"]}),
                json!({"decision": "deny", "reason": "no rm -rf; no sudo"}),
            ),
            (
                json!({"deny": true}),
                json!({"decision": "deny", "reason": "denied by policy"}),
            ),
            (
                json!({"deny": ["d"], "ask": ["a"]}),
                json!({"decision": "deny", "reason": "d"}),
            ),
            (
                json!({"ask": ["pushing to main"]}),
                json!({"decision": "ask", "reason": "pushing to main"}),
            ),
            (
                json!({"context": ["a", "b"]}),
                json!({"hookSpecificOutput": {"additionalContext": "a\nb",
                    "hookEventName": "BeforeTool"}}),
            ),
            (
                json!({"tool_input": {"command": "ls -la"}}),
                json!({"hookSpecificOutput": {"tool_input": {"command": "ls -la"},
                    "hookEventName": "BeforeTool"}}),
            ),
            // A denied call is not rewritten.
            (
                json!({"deny": ["x"], "tool_input": {"command": "ls"}}),
                json!({"decision": "deny", "reason": "x"}),
            ),
        ];
        for (result, expected) in cases {
            let decision = Decision::from_result(&result).unwrap();
            assert_eq!(decision.hook_output("BeforeTool"), expected, "{result}");
        }
    }

    #[test]
    fn results_of_the_wrong_shape_are_errors() {
        for (result, rule) in [
            (json!({"deny": [1]}), "deny"),
            (json!({"ask": {"a": 1}}), "ask"),
            (json!({"context": 3}), "context"),
            (json!({"tool_input": "ls"}), "tool_input"),
        ] {
            let err = Decision::from_result(&result).unwrap_err();
            assert_eq!(err.rule, rule, "{result}");
        }
    }
}
