//! JSON with comments, as Gemini CLI reads its settings files.
//!
//! Gemini CLI passes every settings file through `strip-json-comments` before `JSON.parse`.
//! That library replaces each comment by whitespace instead of deleting it: every
//! non-whitespace character of a `//` or `/* */` comment becomes a space, while whitespace
//! (including the newlines of a block comment) is kept. Positions in the stripped text
//! therefore equal positions in the original file, so the line and column of a syntax error
//! point into the file the user edits.
//!
//! We reproduce that exactly, with one refinement that cannot change a parse result: a
//! replaced character becomes as many spaces as it has UTF-8 bytes, so that byte columns (the
//! columns `serde_json` reports) stay aligned too. Whitespace that JavaScript's `\s` knows but
//! JSON does not (for example U+00A0) is kept inside comments as the library keeps it, so a
//! file Gemini CLI rejects is rejected here as well.
//!
//! No other JSON5 feature is accepted: trailing commas, single quotes and unquoted keys are
//! syntax errors, as they are for `JSON.parse`.

use serde_json::Value;

/// A syntax error in a JSON-with-comments text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (line {line}, column {column})")]
pub struct JsoncError {
    /// What is wrong, without the position.
    pub message: String,
    /// The 1-based line of the error in the original text.
    pub line: usize,
    /// The 1-based byte column of the error in the original text.
    pub column: usize,
}

/// Parses `text` after replacing its comments by whitespace.
pub fn parse(text: &str) -> Result<Value, JsoncError> {
    let stripped = strip_comments(text);
    serde_json::from_str(&stripped).map_err(|err| {
        let line = err.line();
        let column = err.column();
        let full = err.to_string();
        // serde_json appends the position to its message; we report it in separate fields.
        let suffix = format!(" at line {line} column {column}");
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
        JsoncError {
            message,
            line,
            column,
        }
    })
}

/// Replaces every `//` and `/* */` comment outside string literals by whitespace.
///
/// The result has exactly the same length in bytes and the same line structure as `text`.
/// An unterminated block comment runs to the end of the text, as in `strip-json-comments`.
pub fn strip_comments(text: &str) -> String {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        String,
        LineComment,
        BlockComment,
    }

    let mut out = String::with_capacity(text.len());
    let mut state = State::Code;
    let mut chars = text.char_indices().peekable();
    // Number of consecutive backslashes just before the current character inside a string;
    // a quote preceded by an odd number of them is escaped.
    let mut backslashes = 0usize;

    while let Some((_, c)) = chars.next() {
        match state {
            State::Code => {
                if c == '"' {
                    state = State::String;
                    backslashes = 0;
                    out.push(c);
                } else if c == '/' && matches!(chars.peek(), Some((_, '/'))) {
                    chars.next();
                    state = State::LineComment;
                    out.push_str("  ");
                } else if c == '/' && matches!(chars.peek(), Some((_, '*'))) {
                    chars.next();
                    state = State::BlockComment;
                    out.push_str("  ");
                } else {
                    out.push(c);
                }
            }
            State::String => {
                out.push(c);
                if c == '\\' {
                    backslashes += 1;
                } else {
                    if c == '"' && backslashes % 2 == 0 {
                        state = State::Code;
                    }
                    backslashes = 0;
                }
            }
            State::LineComment => {
                if c == '\n' || (c == '\r' && matches!(chars.peek(), Some((_, '\n')))) {
                    // The line break ends the comment and is kept as it is.
                    state = State::Code;
                    out.push(c);
                } else {
                    blank(&mut out, c);
                }
            }
            State::BlockComment => {
                if c == '*' && matches!(chars.peek(), Some((_, '/'))) {
                    chars.next();
                    state = State::Code;
                    out.push_str("  ");
                } else {
                    blank(&mut out, c);
                }
            }
        }
    }
    out
}

/// Appends the replacement of one comment character: whitespace stays, anything else becomes
/// one space per UTF-8 byte.
fn blank(out: &mut String, c: char) {
    if is_js_whitespace(c) {
        out.push(c);
    } else {
        out.extend(std::iter::repeat_n(' ', c.len_utf8()));
    }
}

/// JavaScript's `\s`: the characters `strip-json-comments` leaves inside a comment.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check_strip(input: &str, expected: &str) {
        let stripped = strip_comments(input);
        assert_eq!(stripped, expected, "input: {input:?}");
        assert_eq!(
            stripped.len(),
            input.len(),
            "length must be kept: {input:?}"
        );
    }

    #[test]
    fn strips_comments_into_whitespace() {
        let cases = [
            ("{}", "{}"),
            ("// hi\n{}", "     \n{}"),
            ("{} // tail", "{}        "),
            ("/* a */{}", "       {}"),
            ("/* a\nb */{}", "    \n    {}"),
            ("// crlf\r\n{}", "       \r\n{}"),
            // Comment markers inside strings are data.
            (r#"{"a": "//x"}"#, r#"{"a": "//x"}"#),
            (r#"{"a": "/*x*/"}"#, r#"{"a": "/*x*/"}"#),
            // An escaped quote does not end the string; an escaped backslash does not escape.
            (r#"{"a": "\"//"}"#, r#"{"a": "\"//"}"#),
            (r#"{"a": "\\"}//c"#, r#"{"a": "\\"}   "#),
            // An unterminated block comment runs to the end.
            ("{}/* open", "{}       "),
            // Multi-byte characters become one space per byte.
            ("//é\n{}", "    \n{}"),
            // JavaScript whitespace that JSON rejects is kept, as strip-json-comments does.
            ("/*\u{A0}*/{}", "  \u{A0}  {}"),
            // A lone slash is not a comment.
            ("/", "/"),
        ];
        for (input, expected) in cases {
            check_strip(input, expected);
        }
    }

    fn check_parse(input: &str, expected: Result<Value, (usize, usize)>) {
        let got = parse(input).map_err(|e| (e.line, e.column));
        assert_eq!(got, expected, "input: {input:?}");
    }

    #[test]
    fn parses_or_reports_original_positions() {
        check_parse("// c\n{\"a\": 1 /* x */}", Ok(json!({"a": 1})));
        check_parse("[1, /* two */ 2]", Ok(json!([1, 2])));
        // Trailing commas stay errors, positioned in the original text.
        check_parse("{\n  \"a\": 1,\n}", Err((3, 1)));
        // A comment before the error does not move its column.
        check_parse("/* xx */ {\"a\" 1}", Err((1, 15)));
        check_parse("", Err((1, 0)));
        // U+00A0 kept from a comment is not JSON whitespace.
        assert!(parse("/*\u{A0}*/{}").is_err());
    }

    #[test]
    fn error_message_has_no_duplicated_position() {
        let err = parse("{\"a\" 1}").unwrap_err();
        assert!(!err.message.contains("line"), "{}", err.message);
        assert_eq!((err.line, err.column), (1, 6));
    }
}
