//! The allocation-free path for the two requests an agent sends most: a `chunk` of a stream
//! and an `event`, when no hook will run for them.
//!
//! [`scan_request`] reads what the daemon needs to decide that (the `type`, the `id`, a chunk's
//! `seq`; an event's name, its `cwd` and the input fields matchers look at) straight from the
//! frame's bytes, checking the whole frame as strictly as the full parser does, without
//! building a single `serde_json::Value` or allocating anything. The answers the daemon then
//! sends ([`write_empty_result`], [`write_plain_chunk_result`]) are written straight into the
//! connection's reused output buffer.
//!
//! The scanner only answers when it is sure to reach exactly what [`crate::parse_client_message`]
//! would: anything unusual (an escaped key, `type` or `id`; a duplicated field; a number that
//! might not fit a double; a `\u` escape of a surrogate; nesting deeper than
//! [`MAX_DEPTH`]; a `null` in a required field; invalid UTF-8; any syntax error) makes it
//! return `None`, and the full parser decides, so error messages never depend on which path
//! ran. Escapes inside string values (`\n`, `\"`, `\u00e9`, ...) are fine: model text is full
//! of them.

use bytes::{BufMut, BytesMut};

use crate::id::RequestId;

/// Nesting deeper than this makes the scanner give up (the full parser allows 128).
pub const MAX_DEPTH: usize = 100;

/// A request id borrowed from a frame: a number, or a string without escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdRef<'a> {
    /// A numeric id.
    Number(u64),
    /// A string id, as it appears between the quotes (it has no escapes).
    String(&'a str),
}

impl IdRef<'_> {
    /// The owned id.
    pub fn to_owned_id(self) -> RequestId {
        match self {
            IdRef::Number(number) => RequestId::Number(number),
            IdRef::String(text) => RequestId::String(text.to_owned()),
        }
    }
}

impl RequestId {
    /// The id as an [`IdRef`], to compare with ids scanned from frames without allocating.
    pub fn as_id_ref(&self) -> IdRef<'_> {
        match self {
            RequestId::Number(number) => IdRef::Number(*number),
            RequestId::String(text) => IdRef::String(text),
        }
    }
}

/// What [`scan_request`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScannedRequest<'a> {
    /// A valid `chunk` request (its `llm_response` is an object; it is not read).
    Chunk {
        /// The stream's id.
        id: IdRef<'a>,
        /// The chunk's `seq`.
        seq: u64,
    },
    /// A valid `event` request.
    Event(ScannedEvent<'a>),
}

/// The parts of a valid `event` request that decide whether any hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedEvent<'a> {
    /// The request's id.
    pub id: IdRef<'a>,
    /// The event's name (not checked against the known events).
    pub event: &'a str,
    /// The absolute project directory.
    pub cwd: &'a str,
    /// `input.tool_name`, when it is a string.
    pub tool_name: Option<&'a str>,
    /// `input.source`, when it is a string.
    pub source: Option<&'a str>,
    /// `input.reason`, when it is a string.
    pub reason: Option<&'a str>,
    /// `input.trigger`, when it is a string.
    pub trigger: Option<&'a str>,
}

impl<'a> ScannedEvent<'a> {
    /// The string value of one of the input fields matchers read (`tool_name`, `source`,
    /// `reason`, `trigger`); `None` for any other name or when the field is not a string.
    pub fn input_str(&self, field: &str) -> Option<&'a str> {
        match field {
            "tool_name" => self.tool_name,
            "source" => self.source,
            "reason" => self.reason,
            "trigger" => self.trigger,
            _ => None,
        }
    }
}

/// Scans a client frame body for a `chunk` or `event` request without allocating.
///
/// Returns `None` for any other type and whenever the frame is not certain to parse, with
/// [`crate::parse_client_message`], to the same request; the caller then uses that parser.
pub fn scan_request(body: &[u8]) -> Option<ScannedRequest<'_>> {
    let mut scanner = Scanner::new(body)?;
    let fields = scanner.top_level()?;
    match fields.type_name? {
        "chunk" => Some(ScannedRequest::Chunk {
            id: fields.id?,
            seq: fields.seq?,
        })
        .filter(|_| fields.llm_response_is_object),
        "event" => {
            let cwd = fields.cwd?;
            let valid = cwd.starts_with('/') && fields.optional_fields_valid;
            valid.then_some(ScannedRequest::Event(ScannedEvent {
                id: fields.id?,
                event: fields.event?,
                cwd,
                tool_name: fields.input.tool_name,
                source: fields.input.source,
                reason: fields.input.reason,
                trigger: fields.input.trigger,
            }))
        }
        _ => None,
    }
}

/// A cheap look at a frame that may be a `chunk`: the `id` of a top-level object whose
/// `type` is `"chunk"`, read from the first top-level fields only (it stops once it has both,
/// skipping the values in between, which for a client that writes `type` and `id` first is a
/// few dozen bytes).
///
/// A hint, not a parse: it checks nothing else, so a frame it names may still be malformed or
/// not a chunk at all. A caller may use it to skip [`scan_request`] for a chunk whose stream
/// it knows is not answered on the allocation-free path, never to answer the frame. Only the
/// first [`PEEK_BYTES`] are looked at (and checked for UTF-8): a frame whose `type` and `id`
/// come later is not named.
pub fn peek_chunk_id(body: &[u8]) -> Option<IdRef<'_>> {
    let prefix = &body[..body.len().min(PEEK_BYTES)];
    let text = match std::str::from_utf8(prefix) {
        Ok(text) => text,
        // Cut inside a character (or invalid further on): the valid part is enough to peek.
        Err(error) => std::str::from_utf8(&prefix[..error.valid_up_to()]).ok()?,
    };
    let mut scanner = Scanner::from_text(text);
    let mut is_chunk = false;
    let mut id = None;
    scanner.eat(b'{')?;
    loop {
        scanner.whitespace();
        let key = scanner.string()?;
        scanner.eat(b':')?;
        match key.plain() {
            Some("type") => match scanner.value(1)? {
                Scanned::String(name) if name.plain() == Some("chunk") => is_chunk = true,
                _ => return None,
            },
            Some("id") => {
                id = match scanner.value(1)? {
                    Scanned::U64(number) => Some(IdRef::Number(number)),
                    Scanned::String(text) => Some(IdRef::String(text.plain()?)),
                    _ => return None,
                };
            }
            _ => {
                scanner.value(1)?;
            }
        }
        if is_chunk && id.is_some() {
            return id;
        }
        scanner.eat(b',')?;
    }
}

/// Appends the frame (length prefix and body) of the `result` of an event no hook ran for,
/// exactly as [`crate::encode`] writes it.
pub fn write_empty_result(out: &mut BytesMut, id: IdRef<'_>, generation: u64) {
    write_frame(out, |out| {
        out.put_slice(br#"{"type":"result","id":"#);
        write_id(out, id);
        out.put_slice(
            br#","success":true,"final_output":null,"all_outputs":[],"errors":[],"total_duration_ms":0.0,"hooks":[],"generation":"#,
        );
        write_u64(out, generation);
        out.put_u8(b'}');
    });
}

/// Appends the frame (length prefix and body) of the `chunk_result` of a chunk no hook ran
/// for, exactly as [`crate::encode`] writes it.
pub fn write_plain_chunk_result(out: &mut BytesMut, id: IdRef<'_>, seq: u64) {
    write_frame(out, |out| {
        out.put_slice(br#"{"type":"chunk_result","id":"#);
        write_id(out, id);
        out.put_slice(br#","seq":"#);
        write_u64(out, seq);
        out.put_slice(
            br#","result":{"success":true,"final_output":null,"all_outputs":[],"errors":[],"total_duration_ms":0.0,"hooks":[]}}"#,
        );
    });
}

/// Appends a length prefix and the body `body` writes.
fn write_frame(out: &mut BytesMut, body: impl FnOnce(&mut BytesMut)) {
    let start = out.len();
    out.put_u32(0);
    body(out);
    // These bodies are a few hundred bytes at most (ids come from frames that fit the limit,
    // which the prefix can express).
    let len = u32::try_from(out.len() - start - 4).unwrap_or(u32::MAX);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Writes an id as JSON. A scanned string id has no escapes and no control characters, so
/// its raw text between quotes is what `serde_json` writes for it.
fn write_id(out: &mut BytesMut, id: IdRef<'_>) {
    match id {
        IdRef::Number(number) => write_u64(out, number),
        IdRef::String(text) => {
            out.put_u8(b'"');
            out.put_slice(text.as_bytes());
            out.put_u8(b'"');
        }
    }
}

/// Writes `n` in decimal.
fn write_u64(out: &mut BytesMut, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&digits[start..]);
}

/// A string read by the scanner.
#[derive(Debug, Clone, Copy)]
struct Str<'a> {
    /// The text between the quotes, escapes as written.
    raw: &'a str,
    /// Whether it contains an escape (then `raw` is not its value).
    escaped: bool,
}

impl<'a> Str<'a> {
    /// The value, when it is written without escapes.
    fn plain(self) -> Option<&'a str> {
        (!self.escaped).then_some(self.raw)
    }
}

/// The kind of a scanned value, as far as the request fields care.
#[derive(Debug, Clone, Copy)]
enum Scanned<'a> {
    Null,
    Bool,
    /// A non-negative integer that fits in 64 bits, written without sign, fraction or exponent.
    U64(u64),
    /// Any other number.
    OtherNumber,
    String(Str<'a>),
    Array,
    Object,
}

/// The matcher fields of an event's input.
#[derive(Debug, Default, Clone, Copy)]
struct InputFields<'a> {
    tool_name: Option<&'a str>,
    source: Option<&'a str>,
    reason: Option<&'a str>,
    trigger: Option<&'a str>,
}

/// What the top level of a frame said.
#[derive(Debug, Default)]
struct TopLevel<'a> {
    type_name: Option<&'a str>,
    id: Option<IdRef<'a>>,
    seq: Option<u64>,
    llm_response_is_object: bool,
    event: Option<&'a str>,
    cwd: Option<&'a str>,
    input: InputFields<'a>,
    /// Whether `input`, `session_id`, `transcript_path`, `env`, `stream_hooks` and
    /// `plans_dir` are each absent, `null`, or of their kind.
    optional_fields_valid: bool,
}

/// The fields the scanner recognises at the top level (any of them twice: give up).
const KNOWN: [&str; 12] = [
    "type",
    "id",
    "seq",
    "llm_response",
    "event",
    "cwd",
    "input",
    "session_id",
    "transcript_path",
    "env",
    "stream_hooks",
    "plans_dir",
];

/// The input fields matchers read (any of them twice: give up).
const MATCHED: [&str; 4] = ["tool_name", "source", "reason", "trigger"];

/// A cursor over the frame; every method returns `None` to give up.
struct Scanner<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

/// How much of a frame [`peek_chunk_id`] looks at.
pub const PEEK_BYTES: usize = 256;

impl<'a> Scanner<'a> {
    /// A scanner at the start of `body`, which must be UTF-8.
    fn new(body: &'a [u8]) -> Option<Scanner<'a>> {
        std::str::from_utf8(body).ok().map(Scanner::from_text)
    }

    /// A scanner at the start of `text`.
    fn from_text(text: &'a str) -> Scanner<'a> {
        Scanner {
            bytes: text.as_bytes(),
            text,
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.whitespace();
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// The whole frame: one object, then only whitespace.
    fn top_level(&mut self) -> Option<TopLevel<'a>> {
        let mut top = TopLevel {
            optional_fields_valid: true,
            ..TopLevel::default()
        };
        let mut seen = 0u32;
        self.eat(b'{')?;
        self.whitespace();
        if self.peek()? == b'}' {
            self.pos += 1;
        } else {
            loop {
                self.whitespace();
                let key = self.string()?;
                self.eat(b':')?;
                let known = KNOWN.iter().position(|name| key.raw == *name);
                if key.escaped {
                    return None;
                }
                match known {
                    Some(index) => {
                        if seen & (1 << index) != 0 {
                            return None;
                        }
                        seen |= 1 << index;
                        self.known_field(key.raw, &mut top)?;
                    }
                    // These change which registry and which hooks answer: the full parser's.
                    None if matches!(key.raw, "project_dir" | "relayed_by") => return None,
                    None => {
                        self.value(1)?;
                    }
                }
                self.whitespace();
                match self.peek()? {
                    b',' => self.pos += 1,
                    b'}' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.whitespace();
        (self.pos == self.bytes.len()).then_some(top)
    }

    /// Reads one recognised top-level field's value into `top`.
    fn known_field(&mut self, key: &str, top: &mut TopLevel<'a>) -> Option<()> {
        if key == "input" {
            self.whitespace();
            if self.peek()? == b'{' {
                top.input = self.input_object()?;
                return Some(());
            }
        }
        let (value, all_strings) = self.value_and_strings(1)?;
        let optional_ok = |top: &mut TopLevel<'a>, ok: bool| {
            top.optional_fields_valid &= ok;
        };
        match key {
            "type" => {
                // Any other type is for the full parser: stop scanning now.
                let name = string_value(value)?.plain()?;
                if name != "chunk" && name != "event" {
                    return None;
                }
                top.type_name = Some(name);
            }
            "id" => {
                top.id = match value {
                    Scanned::U64(number) => Some(IdRef::Number(number)),
                    Scanned::String(text) => Some(IdRef::String(text.plain()?)),
                    _ => None,
                }
            }
            "seq" => {
                if let Scanned::U64(number) = value {
                    top.seq = Some(number);
                }
            }
            "llm_response" => top.llm_response_is_object = matches!(value, Scanned::Object),
            "event" => top.event = string_value(value).and_then(Str::plain),
            "cwd" => top.cwd = string_value(value).and_then(Str::plain),
            // An object input was read above.
            "input" => optional_ok(top, matches!(value, Scanned::Null)),
            "session_id" | "transcript_path" | "plans_dir" => {
                optional_ok(top, matches!(value, Scanned::Null | Scanned::String(_)))
            }
            "stream_hooks" => optional_ok(top, matches!(value, Scanned::Null | Scanned::Bool)),
            "env" => optional_ok(
                top,
                matches!(value, Scanned::Null) || matches!(value, Scanned::Object) && all_strings,
            ),
            _ => {}
        }
        Some(())
    }

    /// An event's `input` object: every value is checked, the matcher fields are kept.
    fn input_object(&mut self) -> Option<InputFields<'a>> {
        let mut fields = InputFields::default();
        let mut seen = 0u32;
        self.eat(b'{')?;
        self.whitespace();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(fields);
        }
        loop {
            self.whitespace();
            let key = self.string()?;
            self.eat(b':')?;
            if key.escaped {
                return None;
            }
            let value = self.value(2)?;
            if let Some(index) = MATCHED.iter().position(|name| key.raw == *name) {
                if seen & (1 << index) != 0 {
                    return None;
                }
                seen |= 1 << index;
                // A string with escapes would need decoding: give up. Other kinds count as
                // absent, as `MatchContext::from_input` treats them.
                let text = match value {
                    Scanned::String(text) => Some(text.plain()?),
                    _ => None,
                };
                match index {
                    0 => fields.tool_name = text,
                    1 => fields.source = text,
                    2 => fields.reason = text,
                    _ => fields.trigger = text,
                }
            }
            self.whitespace();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(fields);
                }
                _ => return None,
            }
        }
    }
}

/// The string of a value, if it is one.
fn string_value(value: Scanned<'_>) -> Option<Str<'_>> {
    match value {
        Scanned::String(text) => Some(text),
        _ => None,
    }
}

/// Where the container walk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// Just after `[` or `{`: an element or the end.
    Opened,
    /// After a comma: an element.
    Element,
    /// After an element: a comma or the end.
    Separator,
}

impl<'a> Scanner<'a> {
    /// Skips one value of any kind, checking it; `depth` is the nesting of the value itself
    /// (1 for a top-level field's value).
    ///
    /// Arrays and objects are walked iteratively with a bit stack (a set bit: array), so
    /// nothing is allocated however deep they go, up to [`MAX_DEPTH`].
    fn value(&mut self, depth: usize) -> Option<Scanned<'a>> {
        self.value_and_strings(depth).map(|(value, _)| value)
    }

    /// [`Scanner::value`], also saying, for an object, whether each of its own values is a
    /// string (for `env`).
    fn value_and_strings(&mut self, depth: usize) -> Option<(Scanned<'a>, bool)> {
        self.whitespace();
        let first = self.peek()?;
        if first != b'[' && first != b'{' {
            return self.scalar().map(|value| (value, false));
        }
        let kind = if first == b'[' {
            Scanned::Array
        } else {
            Scanned::Object
        };
        let mut all_strings = true;
        let mut stack: u128 = 0;
        let mut level = 0usize;
        let mut walk = Walk::Opened;
        self.open(&mut stack, &mut level, depth)?;
        loop {
            self.whitespace();
            let in_array = stack & 1 == 1;
            let closing = if in_array { b']' } else { b'}' };
            let byte = self.peek()?;
            match walk {
                Walk::Opened | Walk::Separator if byte == closing => {
                    self.pos += 1;
                    stack >>= 1;
                    level -= 1;
                    if level == 0 {
                        return Some((kind, all_strings));
                    }
                    walk = Walk::Separator;
                }
                Walk::Separator if byte == b',' => {
                    self.pos += 1;
                    walk = Walk::Element;
                }
                Walk::Separator => return None,
                Walk::Opened | Walk::Element => {
                    if !in_array {
                        self.string()?;
                        self.eat(b':')?;
                        self.whitespace();
                    }
                    let byte = self.peek()?;
                    if byte == b'[' || byte == b'{' {
                        all_strings &= level != 1;
                        self.open(&mut stack, &mut level, depth)?;
                        walk = Walk::Opened;
                    } else {
                        let scalar = self.scalar()?;
                        if level == 1 && !matches!(scalar, Scanned::String(_)) {
                            all_strings = false;
                        }
                        walk = Walk::Separator;
                    }
                }
            }
        }
    }

    /// Enters the container at the cursor.
    fn open(&mut self, stack: &mut u128, level: &mut usize, depth: usize) -> Option<()> {
        let byte = self.peek()?;
        self.pos += 1;
        if depth + *level > MAX_DEPTH {
            return None;
        }
        *stack = (*stack << 1) | u128::from(byte == b'[');
        *level += 1;
        Some(())
    }

    /// A value that is not an array or an object.
    fn scalar(&mut self) -> Option<Scanned<'a>> {
        match self.peek()? {
            b'"' => self.string().map(Scanned::String),
            b'n' => self.literal(b"null").map(|()| Scanned::Null),
            b't' => self.literal(b"true").map(|()| Scanned::Bool),
            b'f' => self.literal(b"false").map(|()| Scanned::Bool),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.pos.checked_add(word.len())?;
        (self.bytes.get(self.pos..end)? == word).then(|| self.pos = end)
    }

    /// A string at the cursor (on its opening quote). Gives up on control characters, bad
    /// escapes and escaped surrogates (whose rules differ between parsers).
    fn string(&mut self) -> Option<Str<'a>> {
        if self.peek()? != b'"' {
            return None;
        }
        self.pos += 1;
        let start = self.pos;
        let mut escaped = false;
        loop {
            let byte = self.peek()?;
            match byte {
                b'"' => {
                    let raw = self.text.get(start..self.pos)?;
                    self.pos += 1;
                    return Some(Str { raw, escaped });
                }
                b'\\' => {
                    escaped = true;
                    self.pos += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 1,
                        b'u' => {
                            self.pos += 1;
                            let end = self.pos.checked_add(4)?;
                            let hex = self.text.get(self.pos..end)?;
                            let code = u16::from_str_radix(hex, 16).ok()?;
                            if !hex.bytes().all(|b| b.is_ascii_hexdigit())
                                || (0xD800..=0xDFFF).contains(&code)
                            {
                                return None;
                            }
                            self.pos = end;
                        }
                        _ => return None,
                    }
                }
                0x00..=0x1F => return None,
                _ => self.pos += 1,
            }
        }
    }

    /// A number, by JSON's grammar. Gives up on one whose magnitude might overflow a double
    /// (the full parser refuses those).
    fn number(&mut self) -> Option<Scanned<'a>> {
        let start = self.pos;
        let negative = self.peek()? == b'-';
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = self.peek() {
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        let int_digits = self.pos - int_start;
        let mut plain = !negative;
        if self.peek() == Some(b'.') {
            plain = false;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return None;
            }
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        let mut exponent: i64 = 0;
        if let Some(b'e' | b'E') = self.peek() {
            plain = false;
            self.pos += 1;
            let sign = match self.peek()? {
                b'-' => {
                    self.pos += 1;
                    -1
                }
                b'+' => {
                    self.pos += 1;
                    1
                }
                _ => 1,
            };
            let digits_start = self.pos;
            while let Some(digit @ b'0'..=b'9') = self.peek() {
                exponent = exponent
                    .saturating_mul(10)
                    .saturating_add(i64::from(digit - b'0'));
                self.pos += 1;
            }
            let digits = self.pos - digits_start;
            if digits == 0 || digits > 4 {
                return None;
            }
            exponent *= sign;
        }
        // Below about 1e300 in magnitude nothing overflows; tiny values become 0.
        if i64::try_from(int_digits).ok()?.saturating_add(exponent) > 300 {
            return None;
        }
        if plain {
            let digits = self.text.get(start..self.pos)?;
            if let Ok(number) = digits.parse::<u64>() {
                return Some(Scanned::U64(number));
            }
        }
        Some(Scanned::OtherNumber)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::encode::encode;
    use crate::parse::parse_client_message;
    use crate::request::ClientMessage;
    use crate::response::{ChunkResultMessage, EventResult, ResultMessage, ServerMessage};

    /// Whenever the scanner answers, the full parser must reach the same request.
    fn check_agrees(input: &[u8]) -> Option<ScannedRequest<'_>> {
        let scanned = scan_request(input);
        let parsed = parse_client_message(input);
        match (scanned, &parsed) {
            (None, _) => {}
            (Some(ScannedRequest::Chunk { id, seq }), Ok(ClientMessage::Chunk(request))) => {
                assert_eq!(id.to_owned_id(), request.id, "{}", show(input));
                assert_eq!(seq, request.seq, "{}", show(input));
            }
            (Some(ScannedRequest::Event(event)), Ok(ClientMessage::Event(request))) => {
                assert_eq!(event.id.to_owned_id(), request.id, "{}", show(input));
                assert_eq!(event.event, request.event, "{}", show(input));
                assert_eq!(event.cwd, request.cwd, "{}", show(input));
                for field in MATCHED {
                    assert_eq!(
                        event.input_str(field),
                        request.input.get(field).and_then(Value::as_str),
                        "{field} of {}",
                        show(input)
                    );
                }
            }
            (Some(scanned), parsed) => {
                panic!(
                    "scanned {scanned:?} but parsed {parsed:?} from {}",
                    show(input)
                )
            }
        }
        scanned
    }

    fn show(input: &[u8]) -> String {
        String::from_utf8_lossy(input).into_owned()
    }

    /// `input` is scanned (and agrees with the parser) exactly when `expected` says so.
    fn check(input: &str, expected: bool) {
        let scanned = check_agrees(input.as_bytes());
        assert_eq!(scanned.is_some(), expected, "{input}: {scanned:?}");
    }

    #[test]
    fn a_chunk_id_is_peeked_from_the_first_fields() {
        let peeked = |body: &str| peek_chunk_id(body.as_bytes()).map(IdRef::to_owned_id);
        assert_eq!(
            peeked(r#"{"type":"chunk","id":7,"seq":0,"llm_response":{}}"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            peeked(r#"{ "id" : "s-1", "seq": 3, "type" : "chunk" , "llm_response": {}}"#),
            Some(RequestId::String("s-1".to_owned()))
        );
        // It stops at the second field: what follows is not looked at.
        assert_eq!(
            peeked(r#"{"type":"chunk","id":9, not json at all"#),
            Some(RequestId::Number(9))
        );
        // Not a chunk, or no usable id before the end.
        assert_eq!(peeked(r#"{"type":"event","id":7}"#), None);
        assert_eq!(peeked(r#"{"id":7,"type":"stream_close"}"#), None);
        assert_eq!(peeked(r#"{"type":"chunk","seq":1}"#), None);
        assert_eq!(peeked(r#"{"type":"chunk","id":"a\"b"}"#), None);
        assert_eq!(peeked(r#"{"type":"chunk","id":-1}"#), None);
        assert_eq!(peeked(r#"["type","chunk"]"#), None);
        assert_eq!(peeked(""), None);
        // Only the first PEEK_BYTES are looked at: fields further on are not found, and a
        // character cut at the bound or an invalid byte past it does not matter.
        let late = format!(
            r#"{{"llm_response":{{"text":"{}"}},"seq":2,"id":1,"type":"chunk"}}"#,
            "x".repeat(PEEK_BYTES)
        );
        assert_eq!(peeked(&late), None);
        assert!(matches!(
            parse_client_message(late.as_bytes()),
            Ok(ClientMessage::Chunk(_))
        ));
        let mut cut = br#"{"type":"chunk","id":3,"seq":0,"llm_response":{"text":""#.to_vec();
        while cut.len() < PEEK_BYTES - 1 {
            cut.push(b'a');
        }
        cut.extend_from_slice("é\"}}".as_bytes());
        assert_eq!(
            peek_chunk_id(&cut).map(IdRef::to_owned_id),
            Some(RequestId::Number(3))
        );
        cut.truncate(PEEK_BYTES + 8);
        cut.push(0xff);
        assert_eq!(
            peek_chunk_id(&cut).map(IdRef::to_owned_id),
            Some(RequestId::Number(3))
        );
        // Whenever the full parser reads a chunk, the peek names the same id.
        for body in [
            r#"{"type":"chunk","id":7,"seq":0,"llm_response":{}}"#,
            r#"{"llm_response":{"text":"x"},"seq":2,"id":"q","type":"chunk"}"#,
        ] {
            let Ok(ClientMessage::Chunk(request)) = parse_client_message(body.as_bytes()) else {
                panic!("{body} parses as a chunk");
            };
            assert_eq!(peeked(body), Some(request.id), "{body}");
        }
    }

    #[test]
    fn chunks_are_scanned() {
        let cases = [
            (r#"{"type":"chunk","id":7,"seq":0,"llm_response":{}}"#, true),
            (
                r#" { "llm_response" : {"text":"a\"b\\c\nd\u00e9 \/ x","candidates":[{"content":{"parts":["x",1,-2.5e-3,true,null,[],{}]}}]} , "seq" : 18446744073709551615 , "id" : "s-1" , "type" : "chunk" } "#,
                true,
            ),
            (
                r#"{"type":"chunk","id":"é/ü","seq":1,"llm_response":{},"extra":[1,{"a":[]}]}"#,
                true,
            ),
            // Each of these falls back to the full parser.
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":[]}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":-1,"llm_response":{}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":1.0,"llm_response":{}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":1e2,"llm_response":{}}"#,
                false,
            ),
            (r#"{"type":"chunk","id":7,"llm_response":{}}"#, false),
            (
                r#"{"type":"chunk","id":null,"seq":0,"llm_response":{}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":-0,"seq":0,"llm_response":{}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":"a\nb","seq":0,"llm_response":{}}"#,
                false,
            ),
            (
                r#"{"type":"ch\u0075nk","id":7,"seq":0,"llm_response":{}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"id":8,"seq":0,"llm_response":{}}"#,
                false,
            ),
            (
                r#"{"t\u0079pe":"chunk","id":7,"seq":0,"llm_response":{}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":{"x":"\ud800"}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":{"x":1e400}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":{"x":1e-400}}"#,
                true,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":{"x":01}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":{"x":[1,]}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":{"x":"a	b"}}"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":{}} x"#,
                false,
            ),
            (
                r#"{"type":"chunk","id":7,"seq":0,"llm_response":{}}}"#,
                false,
            ),
            (r#"["chunk",7,0,{}]"#, false),
            (r#"{"type":"ping","id":7}"#, false),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
        // Nesting up to the scanner's depth, not beyond.
        let nested = |depth: usize| {
            format!(
                r#"{{"type":"chunk","id":1,"seq":2,"llm_response":{}{}}}"#,
                "{\"a\":[".repeat(depth / 2),
                "]}".repeat(depth / 2)
            )
        };
        check(&nested(90), true);
        check(&nested(140), false);
    }

    #[test]
    fn events_are_scanned() {
        let cases = [
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p"}"#,
                true,
            ),
            (
                r#"{"type":"event","id":"e","event":"BeforeTool","cwd":"/p","input":{"tool_name":"read_file","tool_input":{"path":"a\"b"}},"session_id":"s\n","transcript_path":null,"env":{"A":"b"},"stream_hooks":true,"plans_dir":"/x"}"#,
                true,
            ),
            (
                r#"{"type":"event","id":1,"event":"SessionStart","cwd":"/p","input":{"source":"startup","reason":5,"trigger":null}}"#,
                true,
            ),
            (
                r#"{"type":"event","id":1,"event":"Nope","cwd":"/p","input":null,"env":null}"#,
                true,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"rel"}"#,
                false,
            ),
            (r#"{"type":"event","id":1,"event":"BeforeTool"}"#, false),
            (r#"{"type":"event","id":1,"cwd":"/p"}"#, false),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","input":[]}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","env":{"A":1}}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","env":{"A":{}}}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","env":[]}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","stream_hooks":1}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","session_id":1}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","input":{"tool_name":"a","tool_name":"b"}}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","input":{"tool_name":"r\u0065ad"}}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","input":{"tool\u005fname":"x"}}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"Before\u0054ool","cwd":"/p"}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p\u0031"}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p/sub","project_dir":"/p"}"#,
                false,
            ),
            (
                r#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","relayed_by":"claude"}"#,
                false,
            ),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
    }

    #[test]
    fn answers_are_written_exactly_as_encode_writes_them() {
        let empty = EventResult {
            success: true,
            final_output: None,
            all_outputs: Vec::new(),
            errors: Vec::new(),
            total_duration_ms: 0.0,
            hooks: Vec::new(),
        };
        for id in [
            RequestId::Number(0),
            RequestId::Number(u64::MAX),
            RequestId::from(""),
            RequestId::from("é/ü 7"),
        ] {
            for number in [0, 9, 10, 12345, u64::MAX] {
                let mut out = BytesMut::new();
                write_empty_result(&mut out, id.as_id_ref(), number);
                let expected = encode(&ServerMessage::Result(ResultMessage {
                    id: id.clone(),
                    result: empty.clone(),
                    generation: number,
                }));
                assert_eq!(&out[..4], &(expected.len() as u32).to_be_bytes());
                assert_eq!(&out[4..], &expected[..]);

                let mut out = BytesMut::from(&b"before"[..]);
                write_plain_chunk_result(&mut out, id.as_id_ref(), number);
                let expected = encode(&ServerMessage::ChunkResult(ChunkResultMessage {
                    id: id.clone(),
                    seq: number,
                    content: None,
                    result: empty.clone(),
                }));
                assert_eq!(&out[..6], b"before");
                assert_eq!(&out[6..10], &(expected.len() as u32).to_be_bytes());
                assert_eq!(&out[10..], &expected[..]);
            }
        }
    }

    use crate::parse::tests::XorShift;

    #[test]
    fn mutated_frames_never_make_the_scanner_disagree_with_the_parser() {
        let seeds: &[&[u8]] = &[
            br#"{"type":"chunk","id":7,"seq":3,"llm_response":{"text":"a\nb","candidates":[{"content":{"role":"model","parts":["x\"y",{"functionCall":{"name":"f","args":{"n":-1.5e3}}}]},"finishReason":null}]}}"#,
            br#"{"type":"chunk","id":"s","seq":0,"llm_response":{}}"#,
            br#"{"type":"event","id":1,"event":"BeforeTool","cwd":"/p","input":{"tool_name":"run_shell_command","tool_input":{"command":"ls"}},"env":{"A":"b"},"stream_hooks":false}"#,
            br#"{"type":"event","id":"x","event":"SessionStart","cwd":"/p","input":{"source":"startup"},"session_id":"s","plans_dir":null}"#,
        ];
        let alphabet = b"{}[]\":,0123456789-+.eE truefalsnl\\/u\xff\x00\x1fabcidtype";
        let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
        let mut scanned = 0;
        for seed in seeds {
            assert!(check_agrees(seed).is_some(), "{}", show(seed));
            for _ in 0..5_000 {
                let mut bytes = seed.to_vec();
                for _ in 0..=rng.below(3) {
                    let at = rng.below(bytes.len() + 1);
                    match rng.below(4) {
                        0 if at < bytes.len() => {
                            bytes.remove(at);
                        }
                        1 if at < bytes.len() => bytes[at] = alphabet[rng.below(alphabet.len())],
                        2 => bytes.insert(at, alphabet[rng.below(alphabet.len())]),
                        _ => bytes.truncate(at),
                    }
                }
                if check_agrees(&bytes).is_some() {
                    scanned += 1;
                }
            }
        }
        // The mutations must leave plenty of frames the scanner still takes.
        assert!(
            scanned > 1_000,
            "only {scanned} mutated frames were scanned"
        );
    }
}
