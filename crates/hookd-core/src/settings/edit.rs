//! Editing `hooksConfig.disabled` in the text of a settings file, keeping everything else.
//!
//! `hookctl enable` and `hookctl disable` change one array in a file the user also edits by
//! hand, so the edit must leave every other byte alone: keys, their order, formatting and
//! comments. The file is JSON with comments ([`crate::jsonc`]). Comments are blanked out with
//! [`jsonc::strip_comments`], which keeps every byte offset, so the structure is found in the
//! blanked text and the splice is applied to the original one.
//!
//! The edits are the smallest that do the job:
//!
//! - adding a name appends one element to an existing array (on its own line when the array's
//!   elements are on their own lines), or adds a `"disabled"` member to an existing
//!   `hooksConfig` object, or a `"hooksConfig"` member to the top-level object, indented like
//!   its neighbours;
//! - removing a name deletes that element and one adjacent comma;
//! - clearing replaces the array with `[]`.
//!
//! When a key appears twice, the last occurrence is edited, because it is the one `JSON.parse`
//! (and so Gemini CLI and hookd) uses. A `disabled` value that is a single string is treated
//! as a one-element list, as Gemini CLI's merge treats it. Text that is not JSON, or whose top
//! level is not an object, is refused rather than rewritten, so a file being edited by hand is
//! never clobbered.
//!
//! [`set_member`] replaces (or adds) one top-level member the same way; `hookctl install` uses
//! it to swap a settings file's `hooks` for its relay entries.

use std::borrow::Cow;

use serde_json::Value;

use crate::jsonc::{self, JsoncError};

/// Why a settings text could not be edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The text is not JSON with comments.
    #[error("the file is not valid JSON: {0}")]
    Syntax(JsoncError),
    /// The text is JSON, but its top level is not an object.
    #[error("the file's top level is not a JSON object")]
    NotAnObject,
}

/// The outcome of an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The new text (the old one when nothing changed).
    pub text: String,
    /// Whether the text changed.
    pub changed: bool,
}

impl Edit {
    fn unchanged(text: &str) -> Edit {
        Edit {
            text: text.to_owned(),
            changed: false,
        }
    }

    fn splice(text: &str, start: usize, end: usize, with: &str) -> Edit {
        let mut out = String::with_capacity(text.len() + with.len());
        out.push_str(&text[..start]);
        out.push_str(with);
        out.push_str(&text[end..]);
        Edit {
            changed: out != text,
            text: out,
        }
    }
}

/// The string entries of `hooksConfig.disabled` as written in the file (before the load-time
/// environment expansion), in file order. A single string counts as a one-element list; an
/// absent or empty file has none.
pub fn disabled_names(text: &str) -> Result<Vec<String>, EditError> {
    if is_blank(text) {
        return Ok(Vec::new());
    }
    let root = match jsonc::parse(text) {
        Ok(Value::Object(root)) => root,
        Ok(_) => return Err(EditError::NotAnObject),
        Err(err) => return Err(EditError::Syntax(err)),
    };
    let disabled = root
        .get("hooksConfig")
        .and_then(Value::as_object)
        .and_then(|config| config.get("disabled"));
    Ok(match disabled {
        Some(Value::String(name)) => vec![name.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    })
}

/// Adds `name` to `hooksConfig.disabled`, unless an entry already equals it.
pub fn add_disabled(text: &str, name: &str) -> Result<Edit, EditError> {
    let quoted = quote(name);
    let Some(doc) = Document::parse(text)? else {
        let nl = newline(text);
        let fresh = format!(
            "{{{nl}  \"hooksConfig\": {{{nl}    \"disabled\": [{quoted}]{nl}  }}{nl}}}{nl}"
        );
        return Ok(Edit {
            changed: true,
            text: fresh,
        });
    };
    let nl = newline(text);
    let root = &doc.root;
    let Some(config) = root.member("hooksConfig") else {
        let member = format!("\"hooksConfig\": {{\"disabled\": [{quoted}]}}");
        return Ok(insert_member(text, root, &member, true));
    };
    let Node::Object { .. } = &config.value else {
        let (start, end) = config.value.span();
        return Ok(Edit::splice(
            text,
            start,
            end,
            &format!("{{\"disabled\": [{quoted}]}}"),
        ));
    };
    let Some(disabled) = config.value.member("disabled") else {
        let member = format!("\"disabled\": [{quoted}]");
        return Ok(insert_member(text, &config.value, &member, false));
    };
    match &disabled.value {
        Node::Array { start, end, items } => {
            if items
                .iter()
                .any(|item| item.string_value(text).as_deref() == Some(name))
            {
                return Ok(Edit::unchanged(text));
            }
            let Some(last) = items.last() else {
                return Ok(Edit::splice(text, *start, *end, &format!("[{quoted}]")));
            };
            let first = &items[0];
            let insertion = if text[*start..first.span().0].contains('\n') {
                format!(",{nl}{}{quoted}", indentation(text, first.span().0))
            } else {
                format!(", {quoted}")
            };
            let at = last.span().1;
            Ok(Edit::splice(text, at, at, &insertion))
        }
        node => {
            let (start, end) = node.span();
            let replacement = match node.string_value(text).as_deref() {
                Some(existing) if existing == name => return Ok(Edit::unchanged(text)),
                Some(_) => format!("[{}, {quoted}]", &text[start..end]),
                None => format!("[{quoted}]"),
            };
            Ok(Edit::splice(text, start, end, &replacement))
        }
    }
}

/// Removes every string entry of `hooksConfig.disabled` for which `matches` is true.
pub fn remove_disabled(text: &str, matches: &dyn Fn(&str) -> bool) -> Result<Edit, EditError> {
    let mut current = text.to_owned();
    // One element per round, re-reading the structure each time: lists are short, and every
    // round is the simple single-element case.
    while let Some(doc) = Document::parse(&current)? {
        let Some(disabled) = doc.disabled() else {
            break;
        };
        let edit = match &disabled.value {
            Node::Array { start, end, items } => {
                let Some(index) = items.iter().position(|item| {
                    item.string_value(&current)
                        .is_some_and(|value| matches(&value))
                }) else {
                    break;
                };
                let (item_start, item_end) = items[index].span();
                if let Some(next) = items.get(index + 1) {
                    Edit::splice(&current, item_start, next.span().0, "")
                } else if index > 0 {
                    Edit::splice(&current, items[index - 1].span().1, item_end, "")
                } else {
                    Edit::splice(&current, *start, *end, "[]")
                }
            }
            node => match node.string_value(&current) {
                Some(value) if matches(&value) => {
                    let (start, end) = node.span();
                    Edit::splice(&current, start, end, "[]")
                }
                _ => break,
            },
        };
        current = edit.text;
    }
    Ok(Edit {
        changed: current != text,
        text: current,
    })
}

/// Empties `hooksConfig.disabled` when it has entries.
pub fn clear_disabled(text: &str) -> Result<Edit, EditError> {
    let Some(doc) = Document::parse(text)? else {
        return Ok(Edit::unchanged(text));
    };
    let Some(disabled) = doc.disabled() else {
        return Ok(Edit::unchanged(text));
    };
    match &disabled.value {
        Node::Array { items, .. } if items.is_empty() => Ok(Edit::unchanged(text)),
        node @ (Node::Array { .. } | Node::Scalar { .. }) => {
            let (start, end) = node.span();
            Ok(Edit::splice(text, start, end, "[]"))
        }
        Node::Object { .. } => Ok(Edit::unchanged(text)),
    }
}

/// Sets the top-level member `key` to `value`: the member's value is replaced where it is,
/// or the member is added last; a blank text becomes an object holding only it. The value is
/// written pretty-printed, indented like the file's top-level members; every other byte of
/// the text is kept (used by `hookctl install` to replace a settings file's `hooks`).
pub fn set_member(text: &str, key: &str, value: &Value) -> Result<Edit, EditError> {
    let nl = newline(text);
    let Some(doc) = Document::parse(text)? else {
        let value = pretty(value, "  ", "  ", nl);
        let fresh = format!("{{{nl}  {}: {value}{nl}}}{nl}", quote(key));
        return Ok(Edit {
            changed: fresh != text,
            text: fresh,
        });
    };
    let Node::Object {
        start,
        end,
        members,
    } = &doc.root
    else {
        return Err(EditError::NotAnObject);
    };
    let indent = members
        .first()
        .map_or("", |first| indentation(text, first.key_start));
    let step = unit(indent);
    if let Some(member) = doc.root.member(key) {
        let (value_start, value_end) = member.value.span();
        let replacement = pretty(value, indent, &step, nl);
        return Ok(Edit::splice(text, value_start, value_end, &replacement));
    }
    let Some(last) = members.last() else {
        let value = pretty(value, "  ", "  ", nl);
        let replacement = format!("{{{nl}  {}: {value}{nl}}}", quote(key));
        return Ok(Edit::splice(text, *start, *end, &replacement));
    };
    let multiline = text[*start..members[0].key_start].contains('\n');
    let insertion = if multiline {
        format!(
            ",{nl}{indent}{}: {}",
            quote(key),
            pretty(value, indent, &step, nl)
        )
    } else {
        format!(", {}: {}", quote(key), pretty(value, "", &step, nl))
    };
    let at = last.value.span().1;
    Ok(Edit::splice(text, at, at, &insertion))
}

/// `value` pretty-printed with `step` per level, its lines after the first indented by
/// `indent`, with the file's line break.
fn pretty(value: &Value, indent: &str, step: &str, nl: &str) -> String {
    use serde::Serialize;
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(step.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    if value.serialize(&mut serializer).is_err() {
        return value.to_string();
    }
    String::from_utf8_lossy(&out).replace('\n', &format!("{nl}{indent}"))
}

/// Inserts `member` (a `"key": value` text) as the last member of `object`, indented like
/// the existing members. `nested` means the member's value is an object that should be
/// spread over lines when the surrounding object is.
fn insert_member(text: &str, object: &Node, member: &str, nested: bool) -> Edit {
    let Node::Object {
        start,
        end,
        members,
    } = object
    else {
        return Edit::unchanged(text);
    };
    let nl = newline(text);
    let Some(last) = members.last() else {
        // An empty object: write the member on its own lines when the object is the whole
        // document (the usual `{}` file), inline otherwise.
        let replacement = if nested {
            let member = spread(member, "  ", "  ", nl);
            format!("{{{nl}  {member}{nl}}}")
        } else {
            format!("{{{member}}}")
        };
        return Edit::splice(text, *start, *end, &replacement);
    };
    let first = &members[0];
    let multiline = text[*start..first.key_start].contains('\n');
    let insertion = if multiline {
        let indent = indentation(text, first.key_start);
        let member = if nested {
            spread(member, indent, &unit(indent), nl)
        } else {
            member.to_owned()
        };
        format!(",{nl}{indent}{member}")
    } else {
        format!(", {member}")
    };
    let at = last.value.span().1;
    Edit::splice(text, at, at, &insertion)
}

/// `"hooksConfig": {"disabled": [...]}` spread over lines at `indent`, one `step` deeper
/// inside.
fn spread(member: &str, indent: &str, step: &str, nl: &str) -> String {
    match member.split_once(": {") {
        Some((key, rest)) => {
            let inner = rest.strip_suffix('}').unwrap_or(rest);
            format!("{key}: {{{nl}{indent}{step}{inner}{nl}{indent}}}")
        }
        None => member.to_owned(),
    }
}

/// One level of indentation, guessed from the indentation of a top-level member: tabs stay
/// tabs, anything else is taken as the unit itself.
fn unit(indent: &str) -> String {
    if indent.is_empty() {
        "  ".to_owned()
    } else {
        indent.to_owned()
    }
}

/// The whitespace between the start of the line holding `at` and `at`, or `""` when
/// something else precedes `at` on its line.
fn indentation(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &text[line_start..at];
    if prefix.chars().all(|c| c == ' ' || c == '\t') {
        prefix
    } else {
        ""
    }
}

/// The file's line break: `\r\n` when it uses them, else `\n`.
fn newline(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

/// A JSON string literal for `value`.
fn quote(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| format!("\"{value}\""))
}

/// Whether the text holds nothing but whitespace and comments.
fn is_blank(text: &str) -> bool {
    jsonc::strip_comments(text).trim().is_empty()
}

/// The parsed structure of a settings text: spans into the original text.
struct Document {
    root: Node,
}

impl Document {
    /// Checks the text and maps its structure; `None` for a blank text.
    fn parse(text: &str) -> Result<Option<Document>, EditError> {
        if is_blank(text) {
            return Ok(None);
        }
        match jsonc::parse(text) {
            Ok(Value::Object(_)) => {}
            Ok(_) => return Err(EditError::NotAnObject),
            Err(err) => return Err(EditError::Syntax(err)),
        }
        let stripped = jsonc::strip_comments(text);
        let mut scanner = Scanner {
            bytes: stripped.as_bytes(),
            text: &stripped,
            at: 0,
        };
        // The text parsed above, so the scanner cannot fail; if it ever disagrees, refusing
        // the edit is the safe answer.
        match scanner.value() {
            Some(root @ Node::Object { .. }) => Ok(Some(Document { root })),
            _ => Err(EditError::NotAnObject),
        }
    }

    /// The `disabled` member of the `hooksConfig` object, if both exist.
    fn disabled(&self) -> Option<&Member> {
        self.root.member("hooksConfig")?.value.member("disabled")
    }
}

/// A JSON value with its byte span.
enum Node {
    /// An object and its members.
    Object {
        start: usize,
        end: usize,
        members: Vec<Member>,
    },
    /// An array and its items.
    Array {
        start: usize,
        end: usize,
        items: Vec<Node>,
    },
    /// A string, number, boolean or null.
    Scalar { start: usize, end: usize },
}

/// One `"key": value` member of an object.
struct Member {
    key: String,
    key_start: usize,
    value: Node,
}

impl Node {
    fn span(&self) -> (usize, usize) {
        match self {
            Node::Object { start, end, .. }
            | Node::Array { start, end, .. }
            | Node::Scalar { start, end } => (*start, *end),
        }
    }

    /// The last member named `key`, for an object.
    fn member(&self, key: &str) -> Option<&Member> {
        match self {
            Node::Object { members, .. } => members.iter().rev().find(|m| m.key == key),
            _ => None,
        }
    }

    /// The decoded value of a string scalar.
    fn string_value<'t>(&self, text: &'t str) -> Option<Cow<'t, str>> {
        let Node::Scalar { start, end } = self else {
            return None;
        };
        let literal = text.get(*start..*end)?;
        let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(literal).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }
}

/// A minimal JSON scanner over comment-free text that is known to be valid.
struct Scanner<'t> {
    bytes: &'t [u8],
    text: &'t str,
    at: usize,
}

impl Scanner<'_> {
    fn skip_whitespace(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes.get(self.at).copied()
    }

    fn value(&mut self) -> Option<Node> {
        let start = {
            self.skip_whitespace();
            self.at
        };
        match self.peek()? {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                if self.peek()? == b'}' {
                    self.at += 1;
                    return Some(Node::Object {
                        start,
                        end: self.at,
                        members,
                    });
                }
                loop {
                    self.skip_whitespace();
                    let key_start = self.at;
                    let key_end = self.string_end()?;
                    let key: String =
                        serde_json::from_str(self.text.get(key_start..key_end)?).ok()?;
                    self.at = key_end;
                    if self.peek()? != b':' {
                        return None;
                    }
                    self.at += 1;
                    let value = self.value()?;
                    members.push(Member {
                        key,
                        key_start,
                        value,
                    });
                    match self.peek()? {
                        b',' => self.at += 1,
                        b'}' => {
                            self.at += 1;
                            return Some(Node::Object {
                                start,
                                end: self.at,
                                members,
                            });
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.peek()? == b']' {
                    self.at += 1;
                    return Some(Node::Array {
                        start,
                        end: self.at,
                        items,
                    });
                }
                loop {
                    items.push(self.value()?);
                    match self.peek()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(Node::Array {
                                start,
                                end: self.at,
                                items,
                            });
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => {
                let end = self.string_end()?;
                self.at = end;
                Some(Node::Scalar { start, end })
            }
            _ => {
                // A number or a literal: everything up to the next delimiter.
                while self.bytes.get(self.at).is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    self.at += 1;
                }
                (self.at > start).then_some(Node::Scalar {
                    start,
                    end: self.at,
                })
            }
        }
    }

    /// The offset just past the string literal starting at the current position.
    fn string_end(&self) -> Option<usize> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let mut i = self.at + 1;
        while let Some(&b) = self.bytes.get(i) {
            match b {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an edit should produce: the new text, or `None` for "unchanged".
    fn check(op: &str, input: &str, expected: Option<&str>) {
        let edit = match op.split_once(' ') {
            Some(("add", name)) => add_disabled(input, name),
            Some(("remove", name)) => remove_disabled(input, &|entry| entry == name),
            _ if op == "clear" => clear_disabled(input),
            _ => panic!("unknown op {op}"),
        }
        .unwrap_or_else(|err| panic!("{op} on {input:?} failed: {err}"));
        match expected {
            Some(expected) => {
                assert_eq!(edit.text, expected, "{op} on {input:?}");
                assert!(edit.changed, "{op} on {input:?} should change");
                // Every result is still a valid settings file.
                assert!(jsonc::parse(&edit.text).is_ok(), "{op}: {}", edit.text);
            }
            None => {
                assert_eq!(edit.text, input, "{op} on {input:?}");
                assert!(!edit.changed);
            }
        }
    }

    #[test]
    fn adding_names() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            // A missing or blank file becomes a fresh settings object.
            (
                "add a",
                "",
                Some("{\n  \"hooksConfig\": {\n    \"disabled\": [\"a\"]\n  }\n}\n"),
            ),
            (
                "add a",
                "// only a comment\n",
                Some("{\n  \"hooksConfig\": {\n    \"disabled\": [\"a\"]\n  }\n}\n"),
            ),
            // An empty object.
            (
                "add a",
                "{}",
                Some("{\n  \"hooksConfig\": {\n    \"disabled\": [\"a\"]\n  }\n}"),
            ),
            // No hooksConfig: a new last member, indented like the others, comments kept.
            (
                "add a",
                "{\n  // my settings\n  \"theme\": \"dark\", /* keep */\n  \"hooks\": {}\n}\n",
                Some(
                    "{\n  // my settings\n  \"theme\": \"dark\", /* keep */\n  \"hooks\": {},\n  \"hooksConfig\": {\n    \"disabled\": [\"a\"]\n  }\n}\n",
                ),
            ),
            (
                "add a",
                "{\n\t\"theme\": 1\n}",
                Some("{\n\t\"theme\": 1,\n\t\"hooksConfig\": {\n\t\t\"disabled\": [\"a\"]\n\t}\n}"),
            ),
            (
                "add a",
                "{\"theme\": 1}",
                Some("{\"theme\": 1, \"hooksConfig\": {\"disabled\": [\"a\"]}}"),
            ),
            // hooksConfig without disabled.
            (
                "add a",
                "{\n  \"hooksConfig\": {\n    \"enabled\": true\n  }\n}",
                Some(
                    "{\n  \"hooksConfig\": {\n    \"enabled\": true,\n    \"disabled\": [\"a\"]\n  }\n}",
                ),
            ),
            (
                "add a",
                "{\"hooksConfig\": {}}",
                Some("{\"hooksConfig\": {\"disabled\": [\"a\"]}}"),
            ),
            // hooksConfig of the wrong type is replaced.
            (
                "add a",
                "{\"hooksConfig\": 3}",
                Some("{\"hooksConfig\": {\"disabled\": [\"a\"]}}"),
            ),
            // An existing array: inline or one element per line.
            (
                "add b",
                "{\"hooksConfig\": {\"disabled\": [\"a\"]}}",
                Some("{\"hooksConfig\": {\"disabled\": [\"a\", \"b\"]}}"),
            ),
            (
                "add b",
                "{\"hooksConfig\": {\"disabled\": []}}",
                Some("{\"hooksConfig\": {\"disabled\": [\"b\"]}}"),
            ),
            (
                "add b",
                "{\"hooksConfig\": {\"disabled\": [\n      \"a\" // why\n    ]}}",
                Some(
                    "{\"hooksConfig\": {\"disabled\": [\n      \"a\",\n      \"b\" // why\n    ]}}",
                ),
            ),
            // Already there: nothing to do.
            (
                "add a",
                "{\"hooksConfig\": {\"disabled\": [\"x\", \"a\"]}}",
                None,
            ),
            ("add a", "{\"hooksConfig\": {\"disabled\": \"a\"}}", None),
            // A single string becomes a list.
            (
                "add b",
                "{\"hooksConfig\": {\"disabled\": \"a\"}}",
                Some("{\"hooksConfig\": {\"disabled\": [\"a\", \"b\"]}}"),
            ),
            // Names are JSON-escaped.
            (
                "add say \"hi\"",
                "{\"hooksConfig\": {\"disabled\": []}}",
                Some("{\"hooksConfig\": {\"disabled\": [\"say \\\"hi\\\"\"]}}"),
            ),
            // The last of duplicate keys is the one edited, as JSON.parse uses it.
            (
                "add a",
                "{\"hooksConfig\": {\"disabled\": [\"x\"]}, \"hooksConfig\": {}}",
                Some(
                    "{\"hooksConfig\": {\"disabled\": [\"x\"]}, \"hooksConfig\": {\"disabled\": [\"a\"]}}",
                ),
            ),
            // Comment markers inside strings are data, and CRLF files stay CRLF.
            (
                "add a",
                "{\r\n  \"url\": \"http://x\"\r\n}\r\n",
                Some(
                    "{\r\n  \"url\": \"http://x\",\r\n  \"hooksConfig\": {\r\n    \"disabled\": [\"a\"]\r\n  }\r\n}\r\n",
                ),
            ),
        ];
        for (op, input, expected) in cases {
            check(op, input, *expected);
        }
    }

    #[test]
    fn removing_names() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "remove a",
                "{\"hooksConfig\": {\"disabled\": [\"a\"]}}",
                Some("{\"hooksConfig\": {\"disabled\": []}}"),
            ),
            (
                "remove a",
                "{\"hooksConfig\": {\"disabled\": [\"a\", \"b\"]}}",
                Some("{\"hooksConfig\": {\"disabled\": [\"b\"]}}"),
            ),
            (
                "remove b",
                "{\"hooksConfig\": {\"disabled\": [\"a\", \"b\"]}}",
                Some("{\"hooksConfig\": {\"disabled\": [\"a\"]}}"),
            ),
            // Every copy goes.
            (
                "remove a",
                "{\"hooksConfig\": {\"disabled\": [\"a\", \"b\", \"a\"]}}",
                Some("{\"hooksConfig\": {\"disabled\": [\"b\"]}}"),
            ),
            // One element per line; the comments of other lines stay.
            (
                "remove a",
                "{\n  \"hooksConfig\": {\n    \"disabled\": [\n      \"a\",\n      \"b\" // keep b\n    ]\n  }\n}",
                Some(
                    "{\n  \"hooksConfig\": {\n    \"disabled\": [\n      \"b\" // keep b\n    ]\n  }\n}",
                ),
            ),
            (
                "remove a",
                "{\"hooksConfig\": {\"disabled\": \"a\"}}",
                Some("{\"hooksConfig\": {\"disabled\": []}}"),
            ),
            // Not there, or nothing to remove from.
            (
                "remove a",
                "{\"hooksConfig\": {\"disabled\": [\"b\"]}}",
                None,
            ),
            ("remove a", "{\"hooksConfig\": {\"disabled\": \"b\"}}", None),
            ("remove a", "{\"hooks\": {}}", None),
            ("remove a", "", None),
            // Non-string entries are left alone.
            (
                "remove a",
                "{\"hooksConfig\": {\"disabled\": [1, \"a\", null]}}",
                Some("{\"hooksConfig\": {\"disabled\": [1, null]}}"),
            ),
        ];
        for (op, input, expected) in cases {
            check(op, input, *expected);
        }
    }

    #[test]
    fn clearing() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "clear",
                "{\"hooksConfig\": {\"disabled\": [\"a\", \"b\"]}} // end",
                Some("{\"hooksConfig\": {\"disabled\": []}} // end"),
            ),
            (
                "clear",
                "{\"hooksConfig\": {\"disabled\": \"a\"}}",
                Some("{\"hooksConfig\": {\"disabled\": []}}"),
            ),
            ("clear", "{\"hooksConfig\": {\"disabled\": []}}", None),
            ("clear", "{\"hooksConfig\": {}}", None),
            ("clear", "{}", None),
            ("clear", "", None),
        ];
        for (op, input, expected) in cases {
            check(op, input, *expected);
        }
    }

    #[test]
    fn setting_a_member() {
        let value = serde_json::json!({"A": [1]});
        // (text, expected)
        let cases = [
            (
                "",
                "{\n  \"hooks\": {\n    \"A\": [\n      1\n    ]\n  }\n}\n",
            ),
            (
                "{}",
                "{\n  \"hooks\": {\n    \"A\": [\n      1\n    ]\n  }\n}",
            ),
            (
                "// c\n{\n    \"x\": 1, // keep\n    \"hooks\": {\"old\": []}\n}\n",
                "// c\n{\n    \"x\": 1, // keep\n    \"hooks\": {\n        \"A\": [\n            1\n        ]\n    }\n}\n",
            ),
            (
                "{\r\n  \"x\": 1\r\n}",
                "{\r\n  \"x\": 1,\r\n  \"hooks\": {\r\n    \"A\": [\r\n      1\r\n    ]\r\n  }\r\n}",
            ),
            (
                "{\"x\": 1}",
                "{\"x\": 1, \"hooks\": {\n  \"A\": [\n    1\n  ]\n}}",
            ),
        ];
        for (text, expected) in cases {
            let edit = set_member(text, "hooks", &value).expect("edits");
            assert_eq!(edit.text, expected, "{text:?}");
            assert_eq!(
                jsonc::parse(&edit.text).expect("valid")["hooks"],
                value,
                "{text:?}"
            );
        }
        assert!(set_member("[1]", "hooks", &value).is_err());
        assert!(set_member("{", "hooks", &value).is_err());
    }

    #[test]
    fn refuses_what_is_not_a_settings_object() {
        for (input, not_object) in [
            ("{\"a\": 1,}", false),
            ("{", false),
            ("[1]", true),
            ("null", true),
        ] {
            for result in [
                add_disabled(input, "a"),
                remove_disabled(input, &|_| true),
                clear_disabled(input),
            ] {
                match result {
                    Err(EditError::NotAnObject) => assert!(not_object, "{input}"),
                    Err(EditError::Syntax(_)) => assert!(!not_object, "{input}"),
                    Ok(edit) => panic!("{input:?} was edited into {:?}", edit.text),
                }
            }
        }
    }

    #[test]
    fn reads_the_disabled_names() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("{}", &[]),
            ("{\"hooksConfig\": {\"disabled\": \"a\"}}", &["a"]),
            (
                "{\"hooksConfig\": {\"disabled\": [\"a\", 2, \"$B\"]}} // c",
                &["a", "$B"],
            ),
            ("{\"hooksConfig\": []}", &[]),
        ];
        for (input, expected) in cases {
            assert_eq!(disabled_names(input).unwrap(), *expected, "{input}");
        }
        assert_eq!(disabled_names("[]"), Err(EditError::NotAnObject));
    }
}
