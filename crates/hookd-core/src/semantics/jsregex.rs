//! JavaScript regular expressions (no flags) made safe to run on the daemon thread.
//!
//! Tool matchers are JavaScript `RegExp`s (spec §2). A backtracking engine can take
//! exponential time on patterns such as `(.*){20}!` or `(a+)+$`, so a matcher taken from a
//! settings file must never be run by one without a bound. This module reads a pattern that
//! JavaScript accepts (the caller has checked that with `regress`) into a small syntax tree and
//! then:
//!
//! - translates it, when it uses only regular constructs, into the syntax of the `regex`
//!   crate, whose search time is linear in the tool name. Every JavaScript-specific meaning is
//!   spelled out: `\d` is `[0-9]`, `\w` is `[0-9A-Za-z_]`, `\s` is JavaScript's list of white
//!   space, `\b` is the ASCII word boundary, `.` excludes the four JavaScript line terminators,
//!   and `^`/`$` are the start and end of the text (no `m` flag). Captures become plain groups,
//!   since only whether the pattern matches is ever asked;
//! - for a pattern that needs backtracking (look-around or a back-reference), computes an upper
//!   bound of the work a backtracking search can do on a tool name of at most
//!   [`BACKTRACK_MAX_INPUT`] bytes ([`backtrack_cost`]); the caller runs such a pattern with
//!   `regress` only when the bound is below [`BACKTRACK_BUDGET`].
//!
//! The bound counts, for every node, how many ways it can end (`ways`) and how many steps
//! exploring all of them takes (`cost`): a sequence multiplies the ways of its first part into
//! the cost of the rest, an alternation adds, a repetition sums the powers of its body's ways up
//! to its iteration count (at most the input length plus its minimum, since an iteration that
//! matches nothing ends the loop), and a look-around is atomic (one way out). A backtracking
//! search explores no more than this from each start position, so the product with the number
//! of start positions bounds it.
//!
//! Characters outside the Basic Multilingual Plane in a pattern (JavaScript sees them as two
//! code units) and unusual escapes inside classes are kept opaque: such a pattern is not
//! translated, only bounded.

use std::fmt::Write as _;

/// The longest tool name, in bytes, that a backtracking pattern is run on. Longer names are
/// treated as matched by such a pattern (the hook runs; see [`crate::matcher`]).
pub const BACKTRACK_MAX_INPUT: usize = 64;

/// The most steps a backtracking pattern may need, by [`backtrack_cost`], to be run at all.
/// Measured with `regress` on the patterns whose bound is tightest (`(?=x).*.*!` on 64 `x`s),
/// a bound step costs about 0.3 ns, so this is about 0.3 ms at worst.
pub const BACKTRACK_BUDGET: f64 = 1_000_000.0;

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// Matches the empty string.
    Empty,
    /// One literal character of the Basic Multilingual Plane.
    Char(char),
    /// One character that this module cannot express in `regex` syntax (a surrogate escape,
    /// an astral character, an odd class).
    Opaque,
    /// `.`.
    Dot,
    /// `[...]`.
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
    /// `^`.
    Start,
    /// `$`.
    End,
    /// `\b` (`true`) or `\B` (`false`).
    WordBoundary(bool),
    /// A look-ahead or look-behind.
    Look(Box<Node>),
    /// `\1`, `\k<name>`.
    BackRef,
    /// A sequence.
    Concat(Vec<Node>),
    /// `a|b`.
    Alt(Vec<Node>),
    /// A quantified node; `max` `None` is unbounded.
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

/// One member of a character class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClassItem {
    /// An inclusive range (a single character is a range of one).
    Range(char, char),
    /// `\d` or, negated, `\D`.
    Digit(bool),
    /// `\w` or `\W`.
    Word(bool),
    /// `\s` or `\S`.
    Space(bool),
}

/// JavaScript's white space and line terminators, as `regex` class members.
const JS_SPACE: &str =
    r"\t\n\x0B\x0C\r \xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// Why a pattern cannot be handled here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported(pub(crate) &'static str);

/// Parses a pattern JavaScript accepts (no flags, Annex B syntax).
pub(crate) fn parse(pattern: &str) -> Result<Node, Unsupported> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut parser = Parser { chars, pos: 0 };
    let node = parser.alternation(0)?;
    if parser.pos != parser.chars.len() {
        return Err(Unsupported("unbalanced parenthesis"));
    }
    Ok(node)
}

/// How deep groups may nest before the parser gives up (the pattern is then refused).
const MAX_DEPTH: usize = 64;

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn eat(&mut self, expected: char) -> bool {
        if self.peek() == Some(expected) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn alternation(&mut self, depth: usize) -> Result<Node, Unsupported> {
        if depth > MAX_DEPTH {
            return Err(Unsupported("groups nested too deeply"));
        }
        let mut branches = vec![self.sequence(depth)?];
        while self.eat('|') {
            branches.push(self.sequence(depth)?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(branches)
        })
    }

    fn sequence(&mut self, depth: usize) -> Result<Node, Unsupported> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom(depth)?;
            let atom = self.quantified(atom)?;
            items.push(atom);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    /// Reads `{n}`, `{n,}` or `{n,m}` at the current position without consuming anything
    /// when it is not one (Annex B: then `{` is a literal).
    fn brace_quantifier(&self) -> Option<(u32, Option<u32>, usize)> {
        let mut i = self.pos;
        if self.chars.get(i) != Some(&'{') {
            return None;
        }
        i += 1;
        let number = |i: &mut usize| -> Option<u32> {
            let start = *i;
            let mut value: u32 = 0;
            while let Some(d) = self.chars.get(*i).and_then(|c| c.to_digit(10)) {
                value = value.saturating_mul(10).saturating_add(d);
                *i += 1;
            }
            (*i > start).then_some(value)
        };
        let min = number(&mut i)?;
        let max = if self.chars.get(i) == Some(&',') {
            i += 1;
            if self.chars.get(i) == Some(&'}') {
                None
            } else {
                Some(number(&mut i)?)
            }
        } else {
            Some(min)
        };
        (self.chars.get(i) == Some(&'}')).then_some((min, max, i + 1 - self.pos))
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, Unsupported> {
        let (min, max) = match self.peek() {
            Some('*') => {
                self.pos += 1;
                (0, None)
            }
            Some('+') => {
                self.pos += 1;
                (1, None)
            }
            Some('?') => {
                self.pos += 1;
                (0, Some(1))
            }
            Some('{') => match self.brace_quantifier() {
                Some((min, max, len)) => {
                    self.pos += len;
                    (min, max)
                }
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        // Lazy or greedy makes no difference to whether a match exists.
        self.eat('?');
        if matches!(self.peek(), Some('*' | '+' | '?')) || self.brace_quantifier().is_some() {
            return Err(Unsupported("nothing to repeat"));
        }
        Ok(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
        })
    }

    fn atom(&mut self, depth: usize) -> Result<Node, Unsupported> {
        let Some(c) = self.peek() else {
            return Err(Unsupported("unexpected end"));
        };
        self.pos += 1;
        match c {
            '^' => Ok(Node::Start),
            '$' => Ok(Node::End),
            '.' => Ok(Node::Dot),
            '(' => self.group(depth),
            '[' => self.class(),
            '\\' => self.escape(),
            '*' | '+' | '?' => Err(Unsupported("nothing to repeat")),
            c => Ok(literal(c)),
        }
    }

    fn group(&mut self, depth: usize) -> Result<Node, Unsupported> {
        let look = if self.peek() == Some('?') {
            match (self.peek_at(1), self.peek_at(2)) {
                (Some(':'), _) => {
                    self.pos += 2;
                    false
                }
                (Some('=' | '!'), _) => {
                    self.pos += 2;
                    true
                }
                (Some('<'), Some('=' | '!')) => {
                    self.pos += 3;
                    true
                }
                (Some('<'), _) => {
                    self.pos += 2;
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == '>' {
                            break;
                        }
                    }
                    false
                }
                _ => return Err(Unsupported("group modifiers")),
            }
        } else {
            false
        };
        let inner = self.alternation(depth + 1)?;
        if !self.eat(')') {
            return Err(Unsupported("unbalanced parenthesis"));
        }
        Ok(if look {
            Node::Look(Box::new(inner))
        } else {
            inner
        })
    }

    fn escape(&mut self) -> Result<Node, Unsupported> {
        let Some(c) = self.peek() else {
            return Err(Unsupported("trailing backslash"));
        };
        self.pos += 1;
        let class = |item| {
            Ok(Node::Class {
                negated: false,
                items: vec![item],
            })
        };
        match c {
            'd' | 'D' => class(ClassItem::Digit(c == 'D')),
            'w' | 'W' => class(ClassItem::Word(c == 'W')),
            's' | 'S' => class(ClassItem::Space(c == 'S')),
            'b' => Ok(Node::WordBoundary(true)),
            'B' => Ok(Node::WordBoundary(false)),
            '1'..='9' => {
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                Ok(Node::BackRef)
            }
            'k' if self.peek() == Some('<') => {
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    if c == '>' {
                        break;
                    }
                }
                Ok(Node::BackRef)
            }
            _ => {
                self.pos -= 1;
                Ok(self.character_escape(false)?.map_or(Node::Opaque, literal))
            }
        }
    }

    /// Reads the escape after a backslash that stands for one character; `None` when the
    /// character is not one this module can express.
    fn character_escape(&mut self, in_class: bool) -> Result<Option<char>, Unsupported> {
        let Some(c) = self.peek() else {
            return Err(Unsupported("trailing backslash"));
        };
        self.pos += 1;
        Ok(match c {
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{0B}'),
            'f' => Some('\u{0C}'),
            'b' if in_class => Some('\u{08}'),
            '0' if !self.peek().is_some_and(|c| c.is_ascii_digit()) => Some('\0'),
            '0'..='9' => {
                // An octal escape (Annex B); rare enough to leave opaque.
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                None
            }
            'x' => match self.hex(2) {
                Some(value) => char::from_u32(value),
                None => Some('x'),
            },
            'u' => match self.hex(4) {
                // A lone surrogate is a code unit `regex` cannot express.
                Some(value) => char::from_u32(value),
                None => Some('u'),
            },
            'c' => match self.peek() {
                Some(letter) if letter.is_ascii_alphabetic() => {
                    self.pos += 1;
                    char::from_u32(u32::from(letter) % 32)
                }
                // Annex B: a backslash that stands for itself; the `c` is read next.
                _ => {
                    self.pos -= 1;
                    Some('\\')
                }
            },
            'k' => Some('k'),
            c if (c as u32) > 0xFFFF => None,
            c => Some(c),
        })
    }

    fn hex(&mut self, digits: usize) -> Option<u32> {
        let text: String = self
            .chars
            .get(self.pos..self.pos + digits)?
            .iter()
            .collect();
        if text.len() != digits || !text.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let value = u32::from_str_radix(&text, 16).ok()?;
        self.pos += digits;
        Some(value)
    }

    fn class(&mut self) -> Result<Node, Unsupported> {
        let negated = self.eat('^');
        let mut items = Vec::new();
        let mut opaque = false;
        loop {
            let Some(c) = self.peek() else {
                return Err(Unsupported("unterminated class"));
            };
            if c == ']' {
                self.pos += 1;
                break;
            }
            let first = self.class_atom()?;
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|c| c != ']') {
                self.pos += 1;
                let last = self.class_atom()?;
                match (first, last) {
                    (ClassAtom::Char(a), ClassAtom::Char(b)) if a <= b => {
                        items.push(ClassItem::Range(a, b));
                    }
                    // Annex B: a range with a class escape at one end is both plus `-`; and
                    // anything opaque stays opaque.
                    _ => opaque = true,
                }
                continue;
            }
            match first {
                ClassAtom::Char(c) => items.push(ClassItem::Range(c, c)),
                ClassAtom::Item(item) => items.push(item),
                ClassAtom::Opaque => opaque = true,
            }
        }
        Ok(if opaque {
            Node::Opaque
        } else {
            Node::Class { negated, items }
        })
    }

    fn class_atom(&mut self) -> Result<ClassAtom, Unsupported> {
        let Some(c) = self.peek() else {
            return Err(Unsupported("unterminated class"));
        };
        self.pos += 1;
        if c != '\\' {
            return Ok(if (c as u32) > 0xFFFF {
                ClassAtom::Opaque
            } else {
                ClassAtom::Char(c)
            });
        }
        let Some(next) = self.peek() else {
            return Err(Unsupported("trailing backslash"));
        };
        let item = match next {
            'd' | 'D' => Some(ClassItem::Digit(next == 'D')),
            'w' | 'W' => Some(ClassItem::Word(next == 'W')),
            's' | 'S' => Some(ClassItem::Space(next == 'S')),
            _ => None,
        };
        if let Some(item) = item {
            self.pos += 1;
            return Ok(ClassAtom::Item(item));
        }
        if next == 'c' {
            // Annex B allows digits and `_` after `\c` inside a class; leave it opaque.
            if !self.peek_at(1).is_some_and(|c| c.is_ascii_alphabetic()) {
                self.pos += 1;
                return Ok(ClassAtom::Opaque);
            }
        }
        Ok(self
            .character_escape(true)?
            .map_or(ClassAtom::Opaque, ClassAtom::Char))
    }
}

enum ClassAtom {
    Char(char),
    Item(ClassItem),
    Opaque,
}

fn literal(c: char) -> Node {
    if (c as u32) > 0xFFFF {
        Node::Opaque
    } else {
        Node::Char(c)
    }
}

impl Node {
    /// Whether the node needs a backtracking engine: look-around, back-references or
    /// something this module keeps opaque.
    pub(crate) fn needs_backtracking(&self) -> bool {
        match self {
            Node::Look(_) | Node::BackRef | Node::Opaque => true,
            Node::Concat(nodes) | Node::Alt(nodes) => nodes.iter().any(Node::needs_backtracking),
            Node::Repeat { node, .. } => node.needs_backtracking(),
            _ => false,
        }
    }

    /// The pattern in `regex` crate syntax with JavaScript's meaning; `None` when it needs
    /// backtracking.
    pub(crate) fn to_rust(&self) -> Option<String> {
        if self.needs_backtracking() {
            return None;
        }
        let mut out = String::new();
        self.write_rust(&mut out);
        Some(out)
    }

    fn write_rust(&self, out: &mut String) {
        match self {
            Node::Empty => {}
            Node::Char(c) => write_char(out, *c),
            Node::Dot => out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
            Node::Class { negated, items } => {
                if items.is_empty() {
                    // `[]` matches nothing, `[^]` any one character.
                    out.push_str(if *negated {
                        r"[\x{0}-\x{10FFFF}]"
                    } else {
                        "[a&&b]"
                    });
                    return;
                }
                out.push('[');
                if *negated {
                    out.push('^');
                }
                for item in items {
                    match item {
                        ClassItem::Range(a, b) => {
                            write_char(out, *a);
                            if a != b {
                                out.push('-');
                                write_char(out, *b);
                            }
                        }
                        ClassItem::Digit(false) => out.push_str("0-9"),
                        ClassItem::Digit(true) => out.push_str("[^0-9]"),
                        ClassItem::Word(false) => out.push_str("0-9A-Za-z_"),
                        ClassItem::Word(true) => out.push_str("[^0-9A-Za-z_]"),
                        ClassItem::Space(false) => out.push_str(JS_SPACE),
                        ClassItem::Space(true) => {
                            out.push_str("[^");
                            out.push_str(JS_SPACE);
                            out.push(']');
                        }
                    }
                }
                out.push(']');
            }
            Node::Start => out.push('^'),
            Node::End => out.push('$'),
            Node::WordBoundary(true) => out.push_str(r"(?-u:\b)"),
            Node::WordBoundary(false) => out.push_str(r"(?-u:\B)"),
            Node::Concat(nodes) => {
                for node in nodes {
                    out.push_str("(?:");
                    node.write_rust(out);
                    out.push(')');
                }
            }
            Node::Alt(nodes) => {
                for (index, node) in nodes.iter().enumerate() {
                    if index > 0 {
                        out.push('|');
                    }
                    out.push_str("(?:");
                    node.write_rust(out);
                    out.push(')');
                }
            }
            Node::Repeat { node, min, max } => {
                out.push_str("(?:");
                node.write_rust(out);
                out.push(')');
                let _ = match max {
                    Some(max) => write!(out, "{{{min},{max}}}"),
                    None => write!(out, "{{{min},}}"),
                };
            }
            Node::Look(_) | Node::BackRef | Node::Opaque => {}
        }
    }
}

/// Writes one literal character so that `regex` reads it as that character, in or out of a
/// class.
fn write_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() || c == '_' {
        out.push(c);
    } else {
        let _ = write!(out, r"\x{{{:X}}}", c as u32);
    }
}

/// `(ways, cost)` of a node for inputs of `n` bytes; see the module documentation. With
/// `after_start`, the search began past the first position, where `^` fails (outside a
/// look-behind, positions only grow).
fn ways_and_cost(node: &Node, n: f64, after_start: bool) -> (f64, f64) {
    match node {
        Node::Start if after_start => (0.0, 1.0),
        Node::Empty
        | Node::Char(_)
        | Node::Opaque
        | Node::Dot
        | Node::Class { .. }
        | Node::Start
        | Node::End
        | Node::WordBoundary(_) => (1.0, 1.0),
        Node::BackRef => (1.0, 1.0 + n),
        Node::Look(inner) => (1.0, 1.0 + ways_and_cost(inner, n, false).1),
        Node::Concat(nodes) => nodes.iter().fold((1.0, 0.0), |(ways, cost), node| {
            let (w, c) = ways_and_cost(node, n, after_start);
            (ways * w, cost + ways * c)
        }),
        Node::Alt(nodes) => nodes.iter().fold((0.0, 1.0), |(ways, cost), node| {
            let (w, c) = ways_and_cost(node, n, after_start);
            (ways + w, cost + c)
        }),
        Node::Repeat { node, min, max } => {
            let (w, c) = ways_and_cost(node, n, after_start);
            // Past the minimum, every iteration must consume a character.
            let limit = f64::from(*min) + n + 1.0;
            let iterations = max.map_or(limit, |max| f64::from(max).min(limit));
            let mut ways: f64 = 0.0;
            let mut cost: f64 = 1.0;
            let mut power: f64 = 1.0;
            let mut k: f64 = 0.0;
            while k <= iterations && cost.is_finite() {
                if k >= f64::from(*min) {
                    ways += power;
                }
                cost += power * c;
                power *= w;
                k += 1.0;
                if power == 1.0 && w == 1.0 && k > 64.0 {
                    // Closed form for the common case of a body with one way out.
                    let rest = iterations - k + 1.0;
                    ways += rest.max(0.0);
                    cost += rest.max(0.0) * c;
                    break;
                }
            }
            (ways, cost)
        }
    }
}

/// An upper bound of the steps a backtracking search for `node` can take on an input of at
/// most `max_input` bytes, trying every start position. Infinite when it overflows.
pub(crate) fn backtrack_cost(node: &Node, max_input: usize) -> f64 {
    let n = max_input as f64;
    let (_, at_start) = ways_and_cost(node, n, false);
    let (_, later) = ways_and_cost(node, n, true);
    at_start + later * n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_patterns_translate() {
        let cases: &[(&str, Option<&str>)] = &[
            ("run", Some("(?:r)(?:u)(?:n)")),
            ("a|b", Some("(?:a)|(?:b)")),
            ("a{2,}", Some("(?:a){2,}")),
            ("a{,2}", Some(r"(?:a)(?:\x{7B})(?:\x{2C})(?:2)(?:\x{7D})")),
            ("x\\d", Some("(?:x)(?:[0-9])")),
            ("[]", Some("[a&&b]")),
            ("(?<=a)b", None),
            ("(?!a)b", None),
            ("(a)\\1", None),
            ("\\ud83d", None),
            ("[\\d-z]", None),
        ];
        for (pattern, expected) in cases {
            let node = parse(pattern).expect(pattern);
            assert_eq!(node.to_rust().as_deref(), *expected, "{pattern}");
        }
    }

    #[test]
    fn the_cost_bound_grows_with_nested_and_repeated_quantifiers() {
        let cost =
            |pattern: &str| backtrack_cost(&parse(pattern).expect(pattern), BACKTRACK_MAX_INPUT);
        assert!(cost("(?=a)b") < 1_000.0);
        assert!(cost("^(?!.*_test).*$") < BACKTRACK_BUDGET);
        assert!(cost("(?=(a+)+$)") > 1e30);
        assert!(cost("(?=(.*){20}!)") > 1e30);
        assert!(cost("(.)\\1") < BACKTRACK_BUDGET);
        assert!(cost("^(\\w)\\w*_\\1") < BACKTRACK_BUDGET);
        assert!(cost("(?=(.*){3}!)") > BACKTRACK_BUDGET);
    }
}
