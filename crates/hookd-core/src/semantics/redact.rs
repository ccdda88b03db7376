//! The `redact` built-in filter: regex redaction of secrets in model output, over a whole text
//! or across the chunks of a streamed `AfterModel` response.
//!
//! A built-in hook runs inside hookd, with no process. It is a hook entry of type `builtin`,
//! allowed only under `AfterModel`:
//!
//! ```json
//! {"type": "builtin", "builtin": "redact", "name": "redact-secrets",
//!  "default_patterns": true,
//!  "patterns": [ {"name": "ticket", "regex": "TCK-[0-9]{6}"},
//!                {"name": "block", "begin": "BEGIN SECRET", "end": "END SECRET"} ],
//!  "holdback": 256, "replacement": "[REDACTED:{name}]"}
//! ```
//!
//! | key | values | meaning |
//! |---|---|---|
//! | `builtin` | `"redact"` (required) | which filter; `redact` is the only one |
//! | `default_patterns` | `true` (default), `false` | also apply the shipped set ([`default_patterns`]) |
//! | `patterns` | list of patterns (optional) | the hook's own patterns, tried before the defaults |
//! | `holdback` | bytes, 16–65536 (default 256) | how much text is held back at a chunk boundary |
//! | `replacement` | string (default `"[REDACTED:{name}]"`) | what replaces a secret; `{name}` becomes the pattern's name |
//!
//! A pattern is an object with a `name` and either
//!
//! - `regex`: a regular expression in the syntax of the Rust `regex` crate. Each match is
//!   replaced. When the regex has a group named `secret` (`(?P<secret>...)`) and it took part
//!   in the match, only that group is replaced and the rest of the match is kept;
//! - or `begin` and `end`, two regular expressions: a block. From a match of `begin` through
//!   the first match of `end` after it, everything is replaced by one replacement, however
//!   long the block is. A block whose `end` never comes is redacted to the end of the text.
//!
//! No regex may match empty text. Where several patterns match, the one starting first wins;
//! at the same start, the one listed first (the hook's patterns come before the defaults).
//!
//! # Streaming
//!
//! [`Redactor`] is the compiled filter ([`Redactor::redact_all`] for a whole text);
//! [`StreamRedactor`] applies it to a stream chunk by chunk. A secret may be cut in two by a
//! chunk boundary, so the stream holds back the last `holdback` bytes of what it has seen: a
//! match is only acted on when it starts at least `holdback` bytes before the end of the text
//! seen so far, and text is only emitted when no match can start in it any more. The text is
//! looked at once 1.5 × `holdback` bytes are waiting, so a chunk's text may come out with a
//! later chunk; [`finish`] releases the rest.
//!
//! What is guaranteed: whatever the chunks, the concatenation of everything [`push`] and
//! [`finish`] return equals [`Redactor::redact_all`] of the whole text, provided every
//! `regex` match (and every block's `begin` and `end` match) is shorter than `holdback` bytes.
//! The body of a block may be any length: it is never emitted, and only the last `holdback`
//! bytes of it are kept, to find `end`. A secret longer than `holdback` may be emitted in part;
//! raise `holdback` for long tokens (a JWT with many claims, for example).
//!
//! Memory is bounded: between calls a stream holds at most `2 × holdback + 4` bytes
//! ([`Redactor::max_held_bytes`]; the 4 are one already-emitted character kept so that `\b`
//! and other look-behinds see it). A match that runs into the end of what has arrived (a
//! token whose characters keep coming) is held up to `2 × holdback` bytes; beyond that it is
//! redacted as far as it goes, and the token characters (`A-Z a-z 0-9 - _ . + / = ~ %`) that
//! follow it directly are dropped too, so the rest of an overlong token is not emitted.
//!
//! Output is always valid UTF-8, and a character is never split.
//!
//! [`push`]: StreamRedactor::push
//! [`finish`]: StreamRedactor::finish
//!
//! # Speed
//!
//! All patterns are searched for at once, with one regex that is their alternation (using the
//! `regex` crate's literal prefilters); a pattern's own regex runs only from where that search
//! found a match. Because the stream waits for 1.5 × `holdback` bytes before it looks, each
//! byte is searched at most 3 times, whatever the holdback and the chunk size. Measured with
//! the default set, release build, on a 2-core machine shared with other work
//! (`cargo test --release -p hookd-core redact -- --ignored --nocapture`): about 0.15 µs per
//! 200-byte chunk of secret-free text (holdback 256 or 65536), about 3 µs per chunk when
//! every chunk holds two secrets; compiling the default set takes about 1 ms.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde_json::{Map, Value};

use crate::json::json_type;

/// The value of the `builtin` key that selects this filter.
pub const BUILTIN_NAME: &str = "redact";

/// The default `holdback`, in bytes.
pub const DEFAULT_HOLDBACK: usize = 256;

/// The smallest `holdback` allowed, in bytes.
pub const MIN_HOLDBACK: usize = 16;

/// The largest `holdback` allowed, in bytes.
pub const MAX_HOLDBACK: usize = 65_536;

/// The default `replacement` template.
pub const DEFAULT_REPLACEMENT: &str = "[REDACTED:{name}]";

/// The most compiled memory one regex may take (the `regex` crate's limit, set explicitly so
/// that a hostile settings file cannot make hookd build an enormous automaton).
pub const REGEX_SIZE_LIMIT: usize = 256 * 1024;

/// The most compiled memory all the patterns of one filter may take together (their
/// combined automaton, searched first on every text).
pub const GATE_SIZE_LIMIT: usize = 2 * 1024 * 1024;

/// The most patterns of its own one `redact` hook may list.
pub const MAX_PATTERNS: usize = 32;

/// The longest regex (`regex`, `begin` or `end`) of a pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 512;

/// A problem with a `redact` hook's settings: the key (relative to the hook entry, such as
/// `patterns[1].regex`) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct RedactConfigError {
    /// The key, relative to the hook entry (`holdback`, `patterns[1].regex`, ...).
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

impl RedactConfigError {
    fn new(key: impl Into<String>, message: impl Into<String>) -> RedactConfigError {
        RedactConfigError {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// What a pattern matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternKind {
    /// Every match of the regex is replaced (only its `secret` group, when it has one).
    Regex(String),
    /// Everything from a match of `begin` through the next match of `end` is replaced once.
    Block {
        /// Where the block starts.
        begin: String,
        /// Where it ends (searched for after the end of the `begin` match).
        end: String,
    },
}

/// One named pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternConfig {
    /// The name, shown by `{name}` in the replacement.
    pub name: String,
    /// What it matches.
    pub kind: PatternKind,
}

impl PatternConfig {
    fn regex(name: &str, regex: &str) -> PatternConfig {
        PatternConfig {
            name: name.to_owned(),
            kind: PatternKind::Regex(regex.to_owned()),
        }
    }

    fn block(name: &str, begin: &str, end: &str) -> PatternConfig {
        PatternConfig {
            name: name.to_owned(),
            kind: PatternKind::Block {
                begin: begin.to_owned(),
                end: end.to_owned(),
            },
        }
    }
}

/// The settings of one `redact` hook, as read from its entry (regexes not compiled yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactConfig {
    /// Whether the shipped patterns ([`default_patterns`]) apply too.
    pub default_patterns: bool,
    /// The hook's own patterns, in order.
    pub patterns: Vec<PatternConfig>,
    /// How many bytes a stream holds back at a chunk boundary.
    pub holdback: usize,
    /// The replacement template; `{name}` is replaced by the pattern's name.
    pub replacement: String,
}

impl Default for RedactConfig {
    fn default() -> Self {
        RedactConfig {
            default_patterns: true,
            patterns: Vec::new(),
            holdback: DEFAULT_HOLDBACK,
            replacement: DEFAULT_REPLACEMENT.to_owned(),
        }
    }
}

impl RedactConfig {
    /// Reads the filter's keys from a hook entry (`builtin`, `default_patterns`, `patterns`,
    /// `holdback`, `replacement`; other keys belong to the hook and are left alone). Regexes are
    /// checked by [`Redactor::compile`].
    pub fn from_raw(raw: &Map<String, Value>) -> Result<RedactConfig, RedactConfigError> {
        match raw.get("builtin") {
            Some(Value::String(name)) if name == BUILTIN_NAME => {}
            Some(Value::String(name)) => {
                return Err(RedactConfigError::new(
                    "builtin",
                    format!("unknown built-in filter {name:?}; the only one is \"redact\""),
                ));
            }
            None | Some(Value::Null) => {
                return Err(RedactConfigError::new(
                    "builtin",
                    "missing; a builtin hook names its filter, \"redact\"",
                ));
            }
            Some(other) => {
                return Err(RedactConfigError::new(
                    "builtin",
                    format!("must be the string \"redact\", not {}", json_type(other)),
                ));
            }
        }
        let mut config = RedactConfig::default();
        match raw.get("default_patterns") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(flag)) => config.default_patterns = *flag,
            Some(other) => {
                return Err(RedactConfigError::new(
                    "default_patterns",
                    format!("must be true or false, not {}", json_type(other)),
                ));
            }
        }
        match raw.get("patterns") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) if items.len() > MAX_PATTERNS => {
                return Err(RedactConfigError::new(
                    "patterns",
                    format!(
                        "{} patterns; a redact hook may list at most {MAX_PATTERNS}",
                        items.len()
                    ),
                ));
            }
            Some(Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    config.patterns.push(parse_pattern(item, index)?);
                }
            }
            Some(other) => {
                return Err(RedactConfigError::new(
                    "patterns",
                    format!("must be a list of patterns, not {}", json_type(other)),
                ));
            }
        }
        match raw.get("holdback") {
            None | Some(Value::Null) => {}
            Some(Value::Number(number)) => {
                match number.as_u64().and_then(|n| usize::try_from(n).ok()) {
                    Some(bytes) if (MIN_HOLDBACK..=MAX_HOLDBACK).contains(&bytes) => {
                        config.holdback = bytes;
                    }
                    _ => {
                        return Err(RedactConfigError::new(
                            "holdback",
                            format!(
                                "must be a whole number of bytes from {MIN_HOLDBACK} to \
                             {MAX_HOLDBACK}, not {number}"
                            ),
                        ));
                    }
                }
            }
            Some(other) => {
                return Err(RedactConfigError::new(
                    "holdback",
                    format!("must be a number of bytes, not {}", json_type(other)),
                ));
            }
        }
        match raw.get("replacement") {
            None | Some(Value::Null) => {}
            Some(Value::String(template)) => config.replacement = template.clone(),
            Some(other) => {
                return Err(RedactConfigError::new(
                    "replacement",
                    format!("must be a string, not {}", json_type(other)),
                ));
            }
        }
        if !config.default_patterns && config.patterns.is_empty() {
            return Err(RedactConfigError::new(
                "patterns",
                "no patterns: list some, or leave default_patterns on",
            ));
        }
        Ok(config)
    }
}

/// Reads `patterns[index]`.
fn parse_pattern(value: &Value, index: usize) -> Result<PatternConfig, RedactConfigError> {
    let key = format!("patterns[{index}]");
    let Value::Object(map) = value else {
        return Err(RedactConfigError::new(
            key,
            format!(
                "must be an object with a name and a regex (or begin and end), not {}",
                json_type(value)
            ),
        ));
    };
    // A misspelt key would silently weaken a security filter, so unknown keys are refused.
    if let Some(unknown) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "name" | "regex" | "begin" | "end"))
    {
        return Err(RedactConfigError::new(
            format!("{key}.{unknown}"),
            "unknown key; a pattern has name and regex, or name, begin and end",
        ));
    }
    let string = |field: &str| -> Result<Option<String>, RedactConfigError> {
        match map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(RedactConfigError::new(
                format!("{key}.{field}"),
                format!("must be a string, not {}", json_type(other)),
            )),
        }
    };
    let name = match string("name")? {
        Some(name) if !name.is_empty() => name,
        _ => {
            return Err(RedactConfigError::new(
                format!("{key}.name"),
                "missing; every pattern has a name",
            ));
        }
    };
    let kind = match (string("regex")?, string("begin")?, string("end")?) {
        (Some(regex), None, None) => PatternKind::Regex(regex),
        (None, Some(begin), Some(end)) => PatternKind::Block { begin, end },
        (Some(_), _, _) => {
            return Err(RedactConfigError::new(
                key,
                "give either regex, or begin and end, not both",
            ));
        }
        (None, Some(_), None) => {
            return Err(RedactConfigError::new(
                format!("{key}.end"),
                "missing; a block pattern has begin and end",
            ));
        }
        (None, None, Some(_)) => {
            return Err(RedactConfigError::new(
                format!("{key}.begin"),
                "missing; a block pattern has begin and end",
            ));
        }
        (None, None, None) => {
            return Err(RedactConfigError::new(
                format!("{key}.regex"),
                "missing; a pattern has a regex, or begin and end",
            ));
        }
    };
    let texts = match &kind {
        PatternKind::Regex(regex) => vec![("regex", regex)],
        PatternKind::Block { begin, end } => vec![("begin", begin), ("end", end)],
    };
    for (field, text) in texts {
        if text.len() > MAX_PATTERN_BYTES {
            return Err(RedactConfigError::new(
                format!("{key}.{field}"),
                format!(
                    "{} bytes long; a pattern may be at most {MAX_PATTERN_BYTES}",
                    text.len()
                ),
            ));
        }
    }
    Ok(PatternConfig { name, kind })
}

/// The shipped patterns for common secrets, in the order they are tried.
///
/// | name | matches |
/// |---|---|
/// | `private-key` | a PEM private key block, `-----BEGIN ... PRIVATE KEY-----` through `-----END ... PRIVATE KEY-----` (also PGP's `PRIVATE KEY BLOCK`) |
/// | `aws-access-key-id` | `AKIA`/`ASIA` and 16 upper-case letters or digits |
/// | `github-token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36 or more letters or digits; `github_pat_` and 36 or more |
/// | `slack-token` | `xoxb-`, `xoxa-`, `xoxp-`, `xoxr-`, `xoxs-` and 10 or more letters, digits or `-` |
/// | `google-api-key` | `AIza` and 35 letters, digits, `_` or `-` |
/// | `anthropic-api-key` | `sk-ant-` and 32 or more letters, digits, `_` or `-` |
/// | `openai-api-key` | `sk-` and 32 or more letters, digits, `_` or `-` (covers `sk-proj-...`) |
/// | `stripe-key` | `sk_live_`, `rk_live_` and 20 or more letters or digits |
/// | `jwt` | `eyJ...` `.eyJ...` `.` and the signature |
/// | `bearer-token` | the token of an `Authorization: Bearer <token>` header (any case; `:` or `=`, quotes allowed), the header itself kept |
///
/// Token patterns must start at a word boundary, so `task-...` is not an `sk-` key.
pub fn default_patterns() -> Vec<PatternConfig> {
    // `(?-u:\b)` is an ASCII word boundary: the `regex` crate's fast DFA cannot handle the
    // Unicode one on non-ASCII text and would fall back to a much slower engine.
    vec![
        PatternConfig::block(
            "private-key",
            r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----",
            r"-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----",
        ),
        PatternConfig::regex(
            "aws-access-key-id",
            r"(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)",
        ),
        PatternConfig::regex(
            "github-token",
            r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{36,})",
        ),
        PatternConfig::regex("slack-token", r"(?-u:\b)xox[baprs]-[A-Za-z0-9-]{10,}"),
        PatternConfig::regex("google-api-key", r"(?-u:\b)AIza[A-Za-z0-9_-]{35}"),
        PatternConfig::regex("anthropic-api-key", r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{32,}"),
        PatternConfig::regex("openai-api-key", r"(?-u:\b)sk-[A-Za-z0-9_-]{32,}"),
        PatternConfig::regex("stripe-key", r"(?-u:\b)[rs]k_live_[A-Za-z0-9]{20,}"),
        PatternConfig::regex(
            "jwt",
            r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        ),
        PatternConfig::regex(
            "bearer-token",
            r#"(?i)(?-u:\b)authorization["']?[ \t]*[:=][ \t]*["']?bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{8,})"#,
        ),
    ]
}

/// One compiled pattern.
#[derive(Debug)]
struct Compiled {
    /// The token regex, or the block's `begin`.
    start: Regex,
    /// The block's `end`; `None` for a token pattern.
    end: Option<Regex>,
    /// Whether `start` has a group named `secret` (token patterns only).
    has_secret_group: bool,
    /// The replacement text, `{name}` already filled in.
    replacement: String,
}

/// A compiled `redact` filter: every pattern of one hook, ready to run. Shared by all the
/// streams of that hook (`Arc`); it holds no per-stream state.
pub struct Redactor {
    config: RedactConfig,
    /// Every pattern's `start` regex at once: one pass tells where the first match starts.
    gate: Gate,
    patterns: Vec<Compiled>,
    /// What the compiled regexes take in memory, as [`Redactor::compiled_bytes`] counts it.
    compiled_bytes: usize,
}

/// What each compiled regex is counted as beyond its automaton: the search strategy and its
/// literal prefilter (see [`compiled_regex_bytes`]).
pub const REGEX_FIXED_BYTES: usize = 16 * 1024;

/// How many times its Thompson automaton a compiled regex is counted as: the forward and the
/// reverse automaton a search runs, what the `regex` crate builds beside them, and the search
/// caches it grows on ordinary text. Measured by counting allocations: 3 times the automaton
/// once compiled and 4 to 5 times after its first searches, on the default patterns and on
/// heavy Unicode ones (`(\w+\s?){3}x`).
pub const AUTOMATON_FACTOR: usize = 5;

/// The memory counted for the regexes `patterns` compiled into one automaton under
/// `size_limit`: [`AUTOMATON_FACTOR`] times the Thompson automaton the `regex` crate builds
/// for them (measured by building it once more here: the `regex` crate does not tell), plus
/// [`REGEX_FIXED_BYTES`]. A pattern the measurement cannot build (it compiled for `regex`, so
/// this does not happen) counts as the most its automaton may take.
fn compiled_regex_bytes(patterns: &[&str], size_limit: usize) -> usize {
    use regex_automata::nfa::thompson;
    let built = thompson::Compiler::new()
        .configure(thompson::Config::new().nfa_size_limit(Some(size_limit)))
        .build_many(patterns);
    let automaton = match built {
        Ok(nfa) => nfa.memory_usage(),
        Err(_) => size_limit,
    };
    AUTOMATON_FACTOR * automaton + REGEX_FIXED_BYTES
}

/// All the patterns' `start` regexes in one automaton, searched before any pattern alone.
#[derive(Debug)]
enum Gate {
    /// One alternation `(?:p0)|(?:p1)|...`: finds where the first match starts, and uses the
    /// `regex` crate's literal prefilters (about 15 times faster than a set on the default
    /// patterns).
    Alternation(Regex),
    /// The fallback when the alternation does not compile (two patterns with a group of the
    /// same name): tells only whether some pattern matches.
    Set(RegexSet),
}

impl Gate {
    /// The gate of `starts`, and the memory it is counted as.
    fn compile(starts: &[&str]) -> Result<(Gate, usize), RedactConfigError> {
        let size_limit = GATE_SIZE_LIMIT;
        // Each pattern compiled alone, so `(?:p)` means the same as `p`, except where a `#`
        // comment of verbose mode (`(?x)`) would swallow the `)` and the patterns after it.
        if !starts.iter().any(|start| may_have_comment(start)) {
            let alternation = starts
                .iter()
                .map(|start| format!("(?:{start})"))
                .collect::<Vec<_>>()
                .join("|");
            if let Ok(regex) = RegexBuilder::new(&alternation)
                .size_limit(size_limit)
                .build()
            {
                let bytes = compiled_regex_bytes(&[alternation.as_str()], size_limit);
                return Ok((Gate::Alternation(regex), bytes));
            }
        }
        RegexSetBuilder::new(starts)
            .size_limit(size_limit)
            .build()
            .map(|set| (Gate::Set(set), compiled_regex_bytes(starts, size_limit)))
            .map_err(|error| match error {
                regex::Error::CompiledTooBig(limit) => RedactConfigError::new(
                    "patterns",
                    format!(
                        "the patterns together are too large: their combined compiled form \
                         exceeds {limit} bytes"
                    ),
                ),
                other => RedactConfigError::new("patterns", regex_error_message(&other)),
            })
    }

    /// A position at or after `pos` before which no pattern matches, when some pattern
    /// matches at all (the first match's start, or just `pos` for a set).
    fn first_start(&self, hay: &str, pos: usize) -> Option<usize> {
        match self {
            Gate::Alternation(regex) => regex.find_at(hay, pos).map(|found| found.start()),
            Gate::Set(set) => set.is_match_at(hay, pos).then_some(pos),
        }
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Two redactors are equal when they were compiled from the same settings.
impl PartialEq for Redactor {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
    }
}

/// Compiles one regex of a pattern; `key` names it in errors.
fn compile_regex(pattern: &str, key: &str) -> Result<Regex, RedactConfigError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(RedactConfigError::new(
            key,
            format!(
                "{} bytes long; a pattern may be at most {MAX_PATTERN_BYTES}",
                pattern.len()
            ),
        ));
    }
    let regex = RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|error| RedactConfigError::new(key, regex_error_message(&error)))?;
    if regex.is_match("") {
        return Err(RedactConfigError::new(
            key,
            "matches empty text; a pattern must match at least one character",
        ));
    }
    Ok(regex)
}

/// A one-line message for a regex that does not compile.
fn regex_error_message(error: &regex::Error) -> String {
    match error {
        // The syntax error's text shows the pattern with a caret under the problem, over
        // several lines; its last line says what the problem is.
        regex::Error::Syntax(text) => {
            let last = text.lines().last().unwrap_or(text.as_str()).trim();
            format!(
                "invalid regex: {}",
                last.strip_prefix("error: ").unwrap_or(last)
            )
        }
        regex::Error::CompiledTooBig(limit) => {
            format!("regex too large: its compiled form exceeds {limit} bytes")
        }
        other => format!("invalid regex: {other}"),
    }
}

impl Redactor {
    /// Compiles the hook's patterns (its own first, then the defaults when enabled).
    ///
    /// Errors name the key: `patterns[1].regex`, `patterns[0].end`, ...
    pub fn compile(config: &RedactConfig) -> Result<Redactor, RedactConfigError> {
        if !(MIN_HOLDBACK..=MAX_HOLDBACK).contains(&config.holdback) {
            return Err(RedactConfigError::new(
                "holdback",
                format!(
                    "must be from {MIN_HOLDBACK} to {MAX_HOLDBACK} bytes, not {}",
                    config.holdback
                ),
            ));
        }
        let defaults = if config.default_patterns {
            default_patterns()
        } else {
            Vec::new()
        };
        let mut patterns = Vec::new();
        let mut starts = Vec::new();
        let mut compiled_bytes = 0;
        for (index, pattern) in config.patterns.iter().chain(&defaults).enumerate() {
            let key = if index < config.patterns.len() {
                format!("patterns[{index}]")
            } else {
                // The shipped patterns are tested to compile; this only names the culprit.
                format!("default_patterns.{}", pattern.name)
            };
            let (start_text, start, end) = match &pattern.kind {
                PatternKind::Regex(regex) => {
                    (regex, compile_regex(regex, &format!("{key}.regex"))?, None)
                }
                PatternKind::Block { begin, end } => (
                    begin,
                    compile_regex(begin, &format!("{key}.begin"))?,
                    Some(compile_regex(end, &format!("{key}.end"))?),
                ),
            };
            let has_secret_group =
                end.is_none() && start.capture_names().any(|name| name == Some("secret"));
            compiled_bytes += compiled_regex_bytes(&[start_text.as_str()], REGEX_SIZE_LIMIT);
            if let PatternKind::Block { end, .. } = &pattern.kind {
                compiled_bytes += compiled_regex_bytes(&[end.as_str()], REGEX_SIZE_LIMIT);
            }
            starts.push(start_text.as_str());
            patterns.push(Compiled {
                start,
                end,
                has_secret_group,
                replacement: config.replacement.replace("{name}", &pattern.name),
            });
        }
        let (gate, gate_bytes) = Gate::compile(&starts)?;
        Ok(Redactor {
            config: config.clone(),
            gate,
            patterns,
            compiled_bytes: compiled_bytes + gate_bytes,
        })
    }

    /// Reads and compiles a hook entry's filter settings in one step.
    pub fn from_raw(raw: &Map<String, Value>) -> Result<Redactor, RedactConfigError> {
        Redactor::compile(&RedactConfig::from_raw(raw)?)
    }

    /// The settings this filter was compiled from.
    pub fn config(&self) -> &RedactConfig {
        &self.config
    }

    /// The memory this filter's compiled regexes are counted as, in bytes: each regex's
    /// automaton as measured when it was compiled, times [`AUTOMATON_FACTOR`], plus
    /// [`REGEX_FIXED_BYTES`], the gate's included. What the daemon's budget of compiled filters
    /// adds up (`docs/limits.md`).
    pub fn compiled_bytes(&self) -> usize {
        self.compiled_bytes
    }

    /// How many bytes a stream holds back at a chunk boundary (the `holdback` setting).
    pub fn holdback(&self) -> usize {
        self.config.holdback
    }

    /// The most bytes a [`StreamRedactor`] of this filter holds between calls:
    /// `2 × holdback + 4`.
    pub fn max_held_bytes(&self) -> usize {
        2 * self.config.holdback + 4
    }

    /// Redacts a whole text at once. A block whose `end` is missing is redacted to the end of
    /// the text. Borrows the text when there is nothing to redact.
    pub fn redact_all<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.gate.first_start(text, 0).is_none() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        self.scan(text, 0, Mode::Text, true, &mut out);
        Cow::Owned(out)
    }

    /// Applies the patterns to `hay[pos..]` in `mode`, appending what may be emitted to `out`;
    /// returns the position up to which the text has been dealt with, and the mode there.
    ///
    /// With `at_end` the text is complete. Otherwise more may follow, and only decisions that
    /// more text cannot change are taken: a match is acted on when it starts before `safe`
    /// (`holdback` bytes before the end) and ends before the end, and text is emitted up to
    /// `safe` at most, because a match shorter than `holdback` starting before `safe` lies
    /// wholly in `hay` with a character after it for look-arounds.
    fn scan(
        &self,
        hay: &str,
        mut pos: usize,
        mut mode: Mode,
        at_end: bool,
        out: &mut String,
    ) -> (usize, Mode) {
        let len = hay.len();
        let holdback = self.config.holdback;
        let safe = if at_end {
            len
        } else {
            floor_char_boundary(hay, len.saturating_sub(holdback))
        };
        // A match still open at the end of the text is held up to this many bytes.
        let open_limit = 2 * holdback;
        let mut candidates = Candidates::default();
        loop {
            match mode {
                Mode::Text => match candidates.next(self, hay, pos) {
                    Some((index, start, end)) if at_end || (start < safe && end < len) => {
                        out.push_str(&hay[pos..start]);
                        self.emit_replacement(index, hay, start, end, out);
                        pos = end;
                        if self.patterns[index].end.is_some() {
                            mode = Mode::Block(index);
                        }
                    }
                    Some((index, start, _)) if start < safe => {
                        // The match runs into the end of what has arrived: it may grow.
                        out.push_str(&hay[pos..start]);
                        if len - start <= open_limit {
                            pos = start;
                        } else {
                            out.push_str(&self.patterns[index].replacement);
                            pos = len;
                            mode = if self.patterns[index].end.is_some() {
                                Mode::Block(index)
                            } else {
                                Mode::Tail
                            };
                        }
                        break;
                    }
                    _ => {
                        let to = safe.max(pos);
                        out.push_str(&hay[pos..to]);
                        pos = to;
                        break;
                    }
                },
                Mode::Block(index) => {
                    let Some(end_regex) = self.patterns.get(index).and_then(|p| p.end.as_ref())
                    else {
                        mode = Mode::Text;
                        continue;
                    };
                    // The block's body is dropped, never emitted.
                    match find_non_empty(end_regex, hay, pos) {
                        Some((start, end)) if at_end || (start < safe && end < len) => {
                            pos = end;
                            mode = Mode::Text;
                        }
                        Some((start, _)) if start < safe => {
                            if len - start <= open_limit {
                                pos = start;
                            } else {
                                pos = len;
                                mode = Mode::Text;
                            }
                            break;
                        }
                        _ => {
                            pos = safe.max(pos);
                            break;
                        }
                    }
                }
                Mode::Tail => {
                    pos += hay[pos..].bytes().take_while(|b| is_token_byte(*b)).count();
                    if pos == len && !at_end {
                        break;
                    }
                    mode = Mode::Text;
                }
            }
        }
        (pos, mode)
    }

    /// Appends the replacement for pattern `index` matching `hay[start..end]`.
    fn emit_replacement(
        &self,
        index: usize,
        hay: &str,
        start: usize,
        end: usize,
        out: &mut String,
    ) {
        let pattern = &self.patterns[index];
        if pattern.has_secret_group {
            let group = pattern
                .start
                .captures_at(hay, start)
                .and_then(|captures| captures.name("secret"))
                .filter(|group| start <= group.start() && group.end() <= end);
            if let Some(group) = group {
                out.push_str(&hay[start..group.start()]);
                out.push_str(&pattern.replacement);
                out.push_str(&hay[group.end()..end]);
                return;
            }
        }
        out.push_str(&pattern.replacement);
    }
}

/// Where a stream is: in ordinary text, inside block pattern `.0`, or in the rest of an
/// overlong token that was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Block(usize),
    Tail,
}

/// The patterns that can still match in one scan, each with its next match once searched.
///
/// The gate is run once per scan: when it finds nothing, no pattern is searched, and
/// otherwise none is searched before the first match it found. A pattern's match is searched
/// again only once the scan has moved past its start.
#[derive(Default)]
struct Candidates {
    loaded: bool,
    /// No pattern matches between the scan's first position and this one.
    floor: usize,
    /// (pattern index, its leftmost non-empty match at or after the last position asked).
    list: Vec<(usize, Option<(usize, usize)>)>,
}

impl Candidates {
    /// The leftmost match at or after `pos` of any pattern (the first pattern at a tie):
    /// (pattern index, start, end).
    fn next(
        &mut self,
        redactor: &Redactor,
        hay: &str,
        pos: usize,
    ) -> Option<(usize, usize, usize)> {
        if !self.loaded {
            self.loaded = true;
            if let Some(first) = redactor.gate.first_start(hay, pos) {
                self.floor = first;
                self.list = (0..redactor.patterns.len())
                    .map(|index| (index, None))
                    .collect();
            }
        }
        let from = pos.max(self.floor);
        let mut best: Option<(usize, usize, usize)> = None;
        self.list.retain_mut(|(index, found)| {
            if found.is_none_or(|(start, _)| start < pos) {
                *found = find_non_empty(&redactor.patterns[*index].start, hay, from);
            }
            let Some((start, end)) = *found else {
                return false;
            };
            if best.is_none_or(|(_, best_start, _)| start < best_start) {
                best = Some((*index, start, end));
            }
            true
        });
        best
    }
}

/// Whether a regex might contain a verbose-mode comment: a `#` and a flag group turning on
/// `x` (conservative: a literal `#` with an `x` flag anywhere counts).
fn may_have_comment(pattern: &str) -> bool {
    pattern.contains('#')
        && pattern.match_indices("(?").any(|(index, _)| {
            pattern[index + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
                .any(|c| c == 'x')
        })
}

/// The leftmost non-empty match of `regex` at or after `from`.
fn find_non_empty(regex: &Regex, hay: &str, mut from: usize) -> Option<(usize, usize)> {
    loop {
        let found = regex.find_at(hay, from)?;
        if found.end() > found.start() {
            return Some((found.start(), found.end()));
        }
        // Compiled patterns never match empty text on their own, but a look-around may still
        // make one match empty somewhere; look again from the next character.
        from = found.start() + hay[found.start()..].chars().next()?.len_utf8();
    }
}

/// The bytes of token-like text, dropped after an overlong token that had to be cut.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
        || matches!(byte, b'-' | b'_' | b'.' | b'+' | b'/' | b'=' | b'~' | b'%')
}

/// The largest character boundary of `text` at or below `index`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// Applies a [`Redactor`] to one stream, chunk by chunk (one per streamed response and per
/// hook). See the module documentation for what it guarantees.
#[derive(Debug)]
pub struct StreamRedactor {
    redactor: Arc<Redactor>,
    /// Text not emitted yet, after at most one already-emitted character (look-behind context).
    buffer: String,
    /// Where the text not dealt with yet starts in `buffer`.
    pos: usize,
    mode: Mode,
}

impl StreamRedactor {
    /// A stream at its start.
    pub fn new(redactor: Arc<Redactor>) -> StreamRedactor {
        StreamRedactor {
            redactor,
            buffer: String::new(),
            pos: 0,
            mode: Mode::Text,
        }
    }

    /// Takes the next chunk and returns the text that is safe to emit now (may be empty).
    pub fn push(&mut self, chunk: &str) -> String {
        self.buffer.push_str(chunk);
        // A scan reads all the text not dealt with yet and can release all but the last
        // `holdback` bytes of it; waiting until there is 1.5 × holdback keeps the text read
        // per byte released at 3 at most, whatever the holdback and the chunk size.
        let holdback = self.redactor.holdback();
        if self.buffer.len() - self.pos < holdback + holdback / 2 {
            return String::new();
        }
        let mut out = String::new();
        let (pos, mode) = self
            .redactor
            .scan(&self.buffer, self.pos, self.mode, false, &mut out);
        self.pos = pos;
        self.mode = mode;
        self.compact();
        out
    }

    /// Ends the stream: returns the rest of the text, redacted (a block still open is
    /// redacted to the end). The stream is then back at its start and may be reused.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.redactor
            .scan(&self.buffer, self.pos, self.mode, true, &mut out);
        self.buffer = String::new();
        self.pos = 0;
        self.mode = Mode::Text;
        out
    }

    /// How many bytes the stream holds (at most [`Redactor::max_held_bytes`] between calls).
    pub fn held_bytes(&self) -> usize {
        self.buffer.len()
    }

    /// Drops what has been dealt with, keeping one character before `pos` for look-behinds.
    fn compact(&mut self) {
        let keep_from = self.buffer[..self.pos]
            .char_indices()
            .next_back()
            .map_or(0, |(index, _)| index);
        if keep_from > 0 {
            self.buffer.drain(..keep_from);
            self.pos -= keep_from;
        }
        // A huge chunk grows the buffer; do not keep that memory for the rest of the stream.
        let limit = self.redactor.max_held_bytes();
        if self.buffer.capacity() > 4 * limit {
            self.buffer.shrink_to(2 * limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor(settings: Value) -> Redactor {
        let Value::Object(raw) = settings else {
            panic!("settings must be an object")
        };
        Redactor::from_raw(&raw).unwrap()
    }

    fn defaults() -> Redactor {
        redactor(json!({"builtin": "redact"}))
    }

    #[test]
    fn compiled_bytes_grow_with_the_patterns_and_stay_within_their_limits() {
        let heavy: Vec<Value> = (0..12)
            .map(|i| json!({"name": format!("p{i}"), "regex": format!(r"(\w+\s?){{3}}x{i}")}))
            .collect();
        // (settings, the regexes compiled besides the gate)
        let cases = [
            (
                json!({"builtin": "redact", "default_patterns": false,
                    "patterns": [{"name": "t", "regex": "TCK-[0-9]{6}"}]}),
                1,
            ),
            (json!({"builtin": "redact"}), default_patterns().len()),
            (
                json!({"builtin": "redact", "default_patterns": false, "patterns": heavy}),
                12,
            ),
        ];
        let mut last = 0;
        for (settings, regexes) in cases {
            let bytes = redactor(settings.clone()).compiled_bytes();
            // At least the fixed part of each regex and the gate; at most what the size
            // limits let their automata take.
            let floor = (regexes + 1) * REGEX_FIXED_BYTES;
            let ceiling = 2 * regexes * (AUTOMATON_FACTOR * REGEX_SIZE_LIMIT + REGEX_FIXED_BYTES)
                + AUTOMATON_FACTOR * GATE_SIZE_LIMIT
                + REGEX_FIXED_BYTES;
            assert!(
                (floor..=ceiling).contains(&bytes),
                "{settings}: {bytes} not in {floor}..={ceiling}"
            );
            assert!(bytes > last, "{settings}: {bytes} after {last}");
            last = bytes;
        }
    }

    /// Redacts `text` whole and in every two-chunk split, checking they agree.
    fn check(redactor: &Redactor, text: &str, expected: &str) {
        assert_eq!(redactor.redact_all(text), expected, "redact_all({text:?})");
        let shared = Arc::new(Redactor::compile(redactor.config()).unwrap());
        for split in (0..=text.len()).filter(|i| text.is_char_boundary(*i)) {
            let mut stream = StreamRedactor::new(shared.clone());
            let mut out = stream.push(&text[..split]);
            out += &stream.push(&text[split..]);
            out += &stream.finish();
            assert_eq!(out, expected, "split at {split} of {text:?}");
        }
    }

    #[test]
    fn default_patterns_redact_realistic_secrets_and_spare_near_misses() {
        let r = defaults();
        // (input, expected)
        let cases = [
            // AWS access key ids.
            (
                "id AKIAIOSFODNN7EXAMPLE ok",
                "id [REDACTED:aws-access-key-id] ok",
            ),
            ("ASIAY34FZKBOKMUTVV7A", "[REDACTED:aws-access-key-id]"),
            ("AKIAIOSFODNN7EXAMPL", "AKIAIOSFODNN7EXAMPL"), // 15 after the prefix
            ("AKIAIOSFODNN7EXAMPLEX", "AKIAIOSFODNN7EXAMPLEX"), // too long to be one
            ("akiaiosfodnn7example", "akiaiosfodnn7example"),
            // GitHub.
            (
                "token ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ ",
                "token [REDACTED:github-token] ",
            ),
            (
                "gho_16C7e42F292c6912E7710c838347Ae178B4a",
                "[REDACTED:github-token]",
            ),
            (
                "ghs_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
                "[REDACTED:github-token]",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01",
                "[REDACTED:github-token]",
            ),
            ("ghp_short123", "ghp_short123"),
            (
                "ghx_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ",
                "ghx_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ",
            ),
            // Slack.
            (
                "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
                "[REDACTED:slack-token]",
            ),
            ("xoxp-1234567890-abc", "[REDACTED:slack-token]"),
            (
                "xoxo-123456789012-1234567890123",
                "xoxo-123456789012-1234567890123",
            ),
            ("xoxb-123", "xoxb-123"),
            // Google.
            (
                "key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&q=1",
                "key=[REDACTED:google-api-key]&q=1",
            ),
            ("AIzaSyDdI0hCZtE6vySj", "AIzaSyDdI0hCZtE6vySj"),
            // Anthropic and OpenAI.
            (
                "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AA",
                "[REDACTED:anthropic-api-key]",
            ),
            (
                "OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdEFGH",
                "OPENAI_API_KEY=[REDACTED:openai-api-key]",
            ),
            (
                "sk-4Ab3Cd2Ef1Gh0IjKlMnOpQrStUvWxYz0123456789abcd",
                "[REDACTED:openai-api-key]",
            ),
            ("use sk-learn for that", "use sk-learn for that"),
            (
                "the task-management-and-scheduling-subsystem",
                "the task-management-and-scheduling-subsystem",
            ),
            // Stripe.
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:stripe-key]"),
            ("rk_live_51H8xYzAbCdEfGhIjKlMnOpQr", "[REDACTED:stripe-key]"),
            (
                "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
                "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
            ),
            // JWT.
            (
                "jwt: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U.",
                "jwt: [REDACTED:jwt].",
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.notjwt.x",
                "eyJhbGciOiJIUzI1NiJ9.notjwt.x",
            ),
            // Bearer tokens: the header stays, the token goes.
            (
                "Authorization: Bearer abc.DEF-123_456~xyz\r\n",
                "Authorization: Bearer [REDACTED:bearer-token]\r\n",
            ),
            (
                r#"{"authorization": "bearer 0123456789abcdef"}"#,
                r#"{"authorization": "bearer [REDACTED:bearer-token]"}"#,
            ),
            (
                "Authorization: Basic dXNlcjpwYXNz",
                "Authorization: Basic dXNlcjpwYXNz",
            ),
            ("Authorization: Bearer short", "Authorization: Bearer short"),
            // PEM private keys, whole blocks.
            (
                "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2\n-----END RSA PRIVATE KEY-----\ndone",
                "key:\n[REDACTED:private-key]\ndone",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
                "[REDACTED:private-key]",
            ),
            (
                "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----",
                "[REDACTED:private-key]",
            ),
            (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
                "[REDACTED:private-key]",
            ),
            (
                "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI unterminated",
                "[REDACTED:private-key]",
            ),
            (
                "-----BEGIN PUBLIC KEY-----\nMIIBIj\n-----END PUBLIC KEY-----",
                "-----BEGIN PUBLIC KEY-----\nMIIBIj\n-----END PUBLIC KEY-----",
            ),
            (
                "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----",
                "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----",
            ),
            // Nothing at all, and non-ASCII around a secret.
            ("", ""),
            ("plain text, nothing secret", "plain text, nothing secret"),
            (
                "clé «AKIAIOSFODNN7EXAMPLE» 🔑",
                "clé «[REDACTED:aws-access-key-id]» 🔑",
            ),
        ];
        for (input, expected) in cases {
            check(&r, input, expected);
        }
    }

    #[test]
    fn redact_all_borrows_when_nothing_matches() {
        assert!(matches!(
            defaults().redact_all("nothing to see"),
            Cow::Borrowed("nothing to see")
        ));
    }

    #[test]
    fn own_patterns_come_before_the_defaults_and_fill_the_template() {
        let r = redactor(json!({
            "builtin": "redact",
            "patterns": [
                {"name": "ticket", "regex": "TCK-[0-9]{6}"},
                {"name": "block", "begin": "BEGIN SECRET", "end": "END SECRET"},
                {"name": "gh", "regex": "ghp_[a-z]{4}"},
                {"name": "pw", "regex": "password=(?P<secret>\\S+)"}
            ],
            "replacement": "<{name}:{name}>"
        }));
        let cases = [
            ("see TCK-123456.", "see <ticket:ticket>."),
            ("a BEGIN SECRET b c END SECRET d", "a <block:block> d"),
            ("a BEGIN SECRET b c", "a <block:block>"),
            ("END SECRET alone", "END SECRET alone"),
            // Same start: the hook's own pattern wins over the default one.
            (
                "ghp_abcd1234567890123456789012345678901234",
                "<gh:gh>1234567890123456789012345678901234",
            ),
            ("password=hunter2 and", "password=<pw:pw> and"),
            // A block hides secrets inside it, and matching resumes after it.
            (
                "BEGIN SECRET TCK-000001 END SECRET TCK-000002",
                "<block:block> <ticket:ticket>",
            ),
        ];
        for (input, expected) in cases {
            check(&r, input, expected);
        }
        let no_defaults = redactor(json!({
            "builtin": "redact", "default_patterns": false,
            "patterns": [{"name": "t", "regex": "TCK-[0-9]+"}]
        }));
        check(
            &no_defaults,
            "TCK-1 AKIAIOSFODNN7EXAMPLE",
            "[REDACTED:t] AKIAIOSFODNN7EXAMPLE",
        );
    }

    #[test]
    fn patterns_that_cannot_share_one_alternation_still_work() {
        // The alternation of all patterns cannot have two groups of one name; the filter then
        // falls back to a set, with the same results.
        let r = redactor(json!({
            "builtin": "redact",
            "patterns": [
                {"name": "pw", "regex": "password=(?P<secret>\\S+)"},
                {"name": "pin", "regex": "pin=(?P<secret>[0-9]+)"}
            ]
        }));
        assert!(matches!(r.gate, Gate::Set(_)));
        assert!(matches!(defaults().gate, Gate::Alternation(_)));
        // A verbose-mode comment would swallow the patterns after it in an alternation.
        let verbose = redactor(json!({
            "builtin": "redact", "default_patterns": false,
            "patterns": [
                {"name": "a", "regex": "(?x) TCK - [0-9]+ # a ticket"},
                {"name": "b", "regex": "zz\n"}
            ]
        }));
        assert!(matches!(verbose.gate, Gate::Set(_)));
        check(&verbose, "TCK-12 zz\n", "[REDACTED:a] [REDACTED:b]");
        check(&verbose, "only zz\n", "only [REDACTED:b]");
        let cases = [
            (
                "password=hunter2 pin=1234 AKIAIOSFODNN7EXAMPLE",
                "password=[REDACTED:pw] pin=[REDACTED:pin] [REDACTED:aws-access-key-id]",
            ),
            ("nothing", "nothing"),
        ];
        for (input, expected) in cases {
            check(&r, input, expected);
        }
    }

    #[test]
    fn settings_errors_name_the_key() {
        // (settings, key)
        let cases = [
            (json!({}), "builtin"),
            (json!({"builtin": "scrub"}), "builtin"),
            (json!({"builtin": 1}), "builtin"),
            (
                json!({"builtin": "redact", "default_patterns": "yes"}),
                "default_patterns",
            ),
            (json!({"builtin": "redact", "patterns": {}}), "patterns"),
            // Over the limits: too many patterns, a pattern too long, one too large compiled,
            // and all of them together too large.
            (
                json!({"builtin": "redact", "patterns": (0..=MAX_PATTERNS)
                    .map(|i| json!({"name": format!("p{i}"), "regex": format!("x{i}")}))
                    .collect::<Vec<_>>()}),
                "patterns",
            ),
            (
                json!({"builtin": "redact", "patterns": [
                    {"name": "a", "regex": "x".repeat(MAX_PATTERN_BYTES + 1)}]}),
                "patterns[0].regex",
            ),
            (
                json!({"builtin": "redact", "patterns": [
                    {"name": "a", "begin": "x", "end": "y".repeat(MAX_PATTERN_BYTES + 1)}]}),
                "patterns[0].end",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "regex": r"\w{100}"}]}),
                "patterns[0].regex",
            ),
            (
                json!({"builtin": "redact", "patterns": (0..20)
                    .map(|i| json!({"name": format!("p{i}"), "regex": format!(r"\w{{5}}{i}")}))
                    .collect::<Vec<_>>()}),
                "patterns",
            ),
            (
                json!({"builtin": "redact", "patterns": ["x"]}),
                "patterns[0]",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"regex": "x"}]}),
                "patterns[0].name",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "", "regex": "x"}]}),
                "patterns[0].name",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a"}]}),
                "patterns[0].regex",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "regex": 3}]}),
                "patterns[0].regex",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "regex": "x"}, {"name": "b", "regex": "("}]}),
                "patterns[1].regex",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "regex": "x*"}]}),
                "patterns[0].regex",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "begin": "x"}]}),
                "patterns[0].end",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "end": "x"}]}),
                "patterns[0].begin",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "begin": "x", "end": "[z"}]}),
                "patterns[0].end",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "regex": "x", "begin": "y", "end": "z"}]}),
                "patterns[0]",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "regexp": "x"}]}),
                "patterns[0].regexp",
            ),
            (
                json!({"builtin": "redact", "default_patterns": false}),
                "patterns",
            ),
            (json!({"builtin": "redact", "holdback": 15}), "holdback"),
            (json!({"builtin": "redact", "holdback": 65_537}), "holdback"),
            (json!({"builtin": "redact", "holdback": 100.5}), "holdback"),
            (json!({"builtin": "redact", "holdback": -1}), "holdback"),
            (json!({"builtin": "redact", "holdback": "256"}), "holdback"),
            (
                json!({"builtin": "redact", "replacement": 1}),
                "replacement",
            ),
            (
                json!({"builtin": "redact", "patterns": [{"name": "a", "regex": "x{100000}{100000}"}]}),
                "patterns[0].regex",
            ),
        ];
        for (settings, key) in cases {
            let Value::Object(raw) = settings.clone() else {
                unreachable!()
            };
            let error = Redactor::from_raw(&raw).expect_err(&settings.to_string());
            assert_eq!(error.key, key, "{settings}: {error}");
            assert!(!error.message.contains('\n'), "{error}");
        }
        // Valid edges.
        for settings in [
            json!({"builtin": "redact", "holdback": 16}),
            json!({"builtin": "redact", "holdback": 65_536, "default_patterns": null}),
            json!({"builtin": "redact", "replacement": ""}),
            json!({"builtin": "redact", "patterns": []}),
        ] {
            let Value::Object(raw) = settings.clone() else {
                unreachable!()
            };
            assert!(Redactor::from_raw(&raw).is_ok(), "{settings}");
        }
    }

    #[test]
    fn a_secret_split_across_chunks_is_never_emitted_even_partly() {
        let token = "ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ";
        let shared = Arc::new(defaults());
        for split in 1..token.len() {
            let mut stream = StreamRedactor::new(shared.clone());
            let first = stream.push(&format!("text {}", &token[..split]));
            assert!(!first.contains("ghp_"), "{first:?}");
            assert!(!first.contains(&token[..split]), "{first:?}");
            let second = stream.push(&format!("{} more", &token[split..]));
            let rest = stream.finish();
            let all = format!("{first}{second}{rest}");
            assert_eq!(all, "text [REDACTED:github-token] more");
        }
    }

    #[test]
    fn text_is_emitted_once_it_is_more_than_holdback_bytes_old() {
        let shared = Arc::new(redactor(json!({"builtin": "redact", "holdback": 16})));
        let mut stream = StreamRedactor::new(shared);
        assert_eq!(stream.push("0123456789"), "");
        // Under 1.5 × holdback: not even looked at yet.
        assert_eq!(stream.push("abcdefghij"), "");
        assert_eq!(stream.push("klmn"), "01234567");
        assert_eq!(stream.push(""), "");
        assert_eq!(stream.finish(), "89abcdefghijklmn");
        // The stream starts over after finish.
        assert_eq!(stream.held_bytes(), 0);
        assert_eq!(stream.push("x"), "");
        assert_eq!(stream.finish(), "x");
    }

    #[test]
    fn a_block_longer_than_the_holdback_is_one_replacement_and_never_emitted() {
        // The markers (27 and 25 bytes) are shorter than the holdback; the body is 50 times
        // longer.
        let shared = Arc::new(redactor(json!({"builtin": "redact", "holdback": 64})));
        let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC".repeat(100);
        let text = format!(
            "before\n-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\nafter"
        );
        for chunk_len in [1, 3, 7, 64, 1000] {
            let mut stream = StreamRedactor::new(shared.clone());
            let mut out = String::new();
            for chunk in text.as_bytes().chunks(chunk_len) {
                out += &stream.push(std::str::from_utf8(chunk).unwrap());
                assert!(stream.held_bytes() <= shared.max_held_bytes());
                assert!(!out.contains("MIIE"), "{out:?}");
            }
            out += &stream.finish();
            assert_eq!(out, "before\n[REDACTED:private-key]\nafter", "{chunk_len}");
        }
    }

    #[test]
    fn memory_stays_bounded_on_huge_streams() {
        let shared = Arc::new(defaults());
        let bound = shared.max_held_bytes();
        // No newline, no secret; one long token run; an unterminated block; a token run
        // whose characters never stop.
        let unterminated = format!("-----BEGIN RSA PRIVATE KEY-----{}", "Ab0+".repeat(50_000));
        let endless_token = format!("ghp_{}", "a".repeat(200_000));
        let inputs = [
            "word ".repeat(40_000),
            "é".repeat(100_000),
            unterminated,
            endless_token,
        ];
        for input in &inputs {
            for chunk_len in [1, 200, 4096, 1 << 20] {
                let mut stream = StreamRedactor::new(shared.clone());
                let mut out = String::new();
                let mut rest = input.as_str();
                while !rest.is_empty() {
                    let mut cut = chunk_len.min(rest.len());
                    while !rest.is_char_boundary(cut) {
                        cut += 1;
                    }
                    out += &stream.push(&rest[..cut]);
                    rest = &rest[cut..];
                    assert!(
                        stream.held_bytes() <= bound,
                        "{} > {bound}",
                        stream.held_bytes()
                    );
                }
                out += &stream.finish();
                if input.starts_with("-----BEGIN") {
                    assert_eq!(out, "[REDACTED:private-key]");
                } else if input.starts_with("ghp_") {
                    // Longer than the holdback: cut, and the rest of the token dropped.
                    assert!(!out.contains("aaaa"), "{}", &out[..out.len().min(100)]);
                    assert!(out.starts_with("[REDACTED:github-token]"));
                } else {
                    assert_eq!(&out, input);
                }
            }
        }
    }

    #[test]
    fn look_behind_sees_the_text_before_the_chunk() {
        // `\b` before a token: "xAKIA..." is no key id, even when the chunk starts at "AKIA".
        let shared = Arc::new(redactor(json!({"builtin": "redact", "holdback": 16})));
        let text = format!("{}xAKIAIOSFODNN7EXAMPLE {}", "p".repeat(40), "q".repeat(40));
        for split in 0..=text.len() {
            let mut stream = StreamRedactor::new(shared.clone());
            let out = stream.push(&text[..split]) + &stream.push(&text[split..]) + &stream.finish();
            assert_eq!(out, text);
        }
    }

    #[test]
    fn floor_char_boundary_never_splits_a_character() {
        let text = "aé🔑";
        let expected = [0, 1, 1, 3, 3, 3, 3, 7, 7];
        for (index, want) in expected.into_iter().enumerate() {
            assert_eq!(floor_char_boundary(text, index), want, "{index}");
        }
    }

    #[test]
    fn redactors_compare_by_settings_and_are_shareable() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Redactor>();
        assert_eq!(defaults(), defaults());
        assert_ne!(
            defaults(),
            redactor(json!({"builtin": "redact", "holdback": 17}))
        );
        assert_eq!(defaults().holdback(), DEFAULT_HOLDBACK);
    }

    /// Speed of the default set; run with
    /// `cargo test --release -p hookd-core redact -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn measure_push_speed() {
        fn cut(text: &str, size: usize) -> Vec<&str> {
            let mut chunks = Vec::new();
            let mut rest = text;
            while !rest.is_empty() {
                let mut end = size.min(rest.len());
                while !rest.is_char_boundary(end) {
                    end += 1;
                }
                chunks.push(&rest[..end]);
                rest = &rest[end..];
            }
            chunks
        }
        let sentence = "The quick brown fox jumps over the lazy dog; it said: «déjà vu» 42. ";
        let plain = sentence.repeat(400_000 / sentence.len());
        let secrets = format!(
            "{sentence}{sentence}{sentence}key AKIAIOSFODNN7EXAMPLE and \
             ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ then Authorization: Bearer abc.DEF-123_456 "
        )
        .repeat(1000);
        // (what, text, chunk size, holdback)
        let cases = [
            ("plain text", &plain, 200, 256),
            ("plain text", &plain, 200, 256),
            ("plain text", &plain, 20, 256),
            ("plain text", &plain, 200, 65_536),
            ("a secret every 330 bytes", &secrets, 200, 256),
        ];
        for (what, text, size, holdback) in cases {
            let shared = Arc::new(redactor(json!({"builtin": "redact", "holdback": holdback})));
            let chunks = cut(text, size);
            let rounds = 20;
            let start = std::time::Instant::now();
            let mut emitted = 0;
            for _ in 0..rounds {
                let mut stream = StreamRedactor::new(shared.clone());
                for chunk in &chunks {
                    emitted += stream.push(chunk).len();
                }
                emitted += stream.finish().len();
            }
            let per_chunk = start.elapsed() / (rounds * chunks.len()) as u32;
            println!(
                "{what}, {size}-byte chunks, holdback {holdback}: {per_chunk:?} per chunk \
                 ({emitted} bytes emitted)"
            );
        }
        let start = std::time::Instant::now();
        let _ = defaults();
        println!("compiling the default set: {:?}", start.elapsed());
    }
}
