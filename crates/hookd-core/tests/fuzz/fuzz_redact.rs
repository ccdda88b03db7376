//! Property tests of the `redact` filter's streaming: however a response is cut into chunks,
//! the stream must say exactly what redacting the whole text says, and never let a secret out.
//!
//! `cargo test` runs each property with proptest's default of 256 cases; a longer run is
//! `PROPTEST_CASES=100000 cargo test --release -p hookd-core --test fuzz_redact`.
//!
//! What must hold:
//!
//! - for a text mixing filler (ASCII, multi-byte characters, near-misses such as `ghp_` or a
//!   lone `-----END PRIVATE KEY-----`) with realistic fake secrets of every default pattern and
//!   of the hook's own patterns, and any cut into chunks at character boundaries, the
//!   concatenation of every `push` and `finish` equals `redact_all` of the whole text (every
//!   match here is shorter than the holdback, which is the documented condition), with the
//!   filter's fast search (one alternation of all patterns) and with its fallback (a set);
//! - no secret's random part appears in any output, whole or in part (12 characters of it);
//! - between calls a stream never holds more than `max_held_bytes`, whatever the text;
//! - for arbitrary text and chunks, nothing panics and the bound holds.

use std::sync::Arc;

use hookd_core::redact::{Redactor, StreamRedactor};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A segment of text, and the secret part of it that must never be emitted (empty for filler).
type Segment = (String, String);

/// The filter under test: the defaults and two patterns of the hook's own; with `shared_group`
/// two more whose groups share a name, which makes the filter search with its fallback (a
/// set) instead of one alternation.
fn redactor(holdback: usize, shared_group: bool) -> Redactor {
    let mut patterns = vec![
        json!({"name": "ticket", "regex": "TCK-[0-9]{6}"}),
        json!({"name": "block", "begin": "BEGIN SECRET", "end": "END SECRET"}),
    ];
    if shared_group {
        patterns.push(json!({"name": "pw", "regex": "password=(?P<secret>[A-Za-z0-9]{6,20})"}));
        patterns.push(json!({"name": "pin", "regex": "pin=(?P<secret>[0-9]{4,8})"}));
    }
    let settings = json!({
        "builtin": "redact",
        "name": "redact-secrets",
        "patterns": patterns,
        "holdback": holdback,
    });
    let Value::Object(raw) = settings else {
        unreachable!()
    };
    Redactor::from_raw(&raw).expect("the test settings compile")
}

/// `count` random characters from `alphabet`.
fn chars_from(
    alphabet: &'static str,
    count: std::ops::Range<usize>,
) -> impl Strategy<Value = String> {
    let chars: Vec<char> = alphabet.chars().collect();
    prop::collection::vec(prop::sample::select(chars), count).prop_map(String::from_iter)
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGIT: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const WORD: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
const URL_SAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// A realistic fake secret of one of the default patterns or of the hook's own: (text, the
/// random part that must not be emitted).
fn secret() -> impl Strategy<Value = Segment> {
    prop_oneof![
        (
            prop::sample::select(vec!["AKIA", "ASIA"]),
            chars_from(UPPER_DIGIT, 16..17)
        )
            .prop_map(|(prefix, body)| (format!("{prefix}{body}"), body)),
        (
            prop::sample::select(vec!["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]),
            chars_from(ALNUM, 36..48)
        )
            .prop_map(|(prefix, body)| (format!("{prefix}{body}"), body)),
        chars_from(WORD, 36..50).prop_map(|body| (format!("github_pat_{body}"), body)),
        (
            prop::sample::select(vec!["xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"]),
            chars_from(ALNUM, 12..40)
        )
            .prop_map(|(prefix, body)| (format!("{prefix}{body}"), body)),
        chars_from(URL_SAFE, 35..36).prop_map(|body| (format!("AIza{body}"), body)),
        chars_from(URL_SAFE, 32..60).prop_map(|body| (format!("sk-ant-api03-{body}"), body)),
        chars_from(URL_SAFE, 32..60).prop_map(|body| (format!("sk-proj-{body}"), body)),
        (
            prop::sample::select(vec!["sk_live_", "rk_live_"]),
            chars_from(ALNUM, 24..40)
        )
            .prop_map(|(prefix, body)| (format!("{prefix}{body}"), body)),
        (
            chars_from(URL_SAFE, 10..20),
            chars_from(URL_SAFE, 12..30),
            chars_from(URL_SAFE, 0..30)
        )
            .prop_map(|(header, payload, signature)| (
                format!("eyJ{header}.eyJ{payload}.{signature}"),
                payload
            )),
        (
            prop::sample::select(vec![
                "Authorization: Bearer ",
                "authorization:bearer ",
                "\"Authorization\": \"Bearer ",
                "AUTHORIZATION=BEARER\t"
            ]),
            chars_from(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/=-",
                16..40
            )
        )
            .prop_map(|(header, token)| (format!("{header}{token}"), token)),
        (
            prop::sample::select(vec!["", " RSA", " EC", " OPENSSH", " ENCRYPTED", " PGP"]),
            prop::collection::vec(chars_from(BASE64, 12..64), 1..6),
            any::<bool>()
        )
            .prop_map(|(kind, lines, terminated)| {
                let block = if kind == " PGP" { " BLOCK" } else { "" };
                let body = lines.join("\n");
                let end = if terminated {
                    format!("\n-----END{kind} PRIVATE KEY{block}-----")
                } else {
                    String::new()
                };
                (
                    format!("-----BEGIN{kind} PRIVATE KEY{block}-----\n{body}{end}"),
                    lines[0].clone(),
                )
            }),
        chars_from("0123456789", 6..7).prop_map(|digits| (format!("TCK-{digits}"), digits)),
        chars_from(ALNUM, 12..20).prop_map(|word| (format!("password={word}"), word)),
        chars_from(ALNUM, 12..200)
            .prop_map(|body| (format!("BEGIN SECRET {body} END SECRET"), body)),
    ]
}

/// Filler: words and near-misses joined by separators that no token pattern accepts, so no
/// match is longer than the holdback; multi-byte characters included.
fn filler() -> impl Strategy<Value = Segment> {
    let word = prop_oneof![
        chars_from(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
            1..12
        ),
        prop::sample::select(vec![
            "ghp_",
            "ghp_short",
            "AKIA",
            "AKIAshort",
            "sk-",
            "sk-learn",
            "task-force",
            "eyJ",
            "eyJhbGci.eyJ",
            "xoxb-1",
            "AIza",
            "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
            "Bearer",
            "Authorization:",
            "-----BEGIN",
            "-----BEGIN PUBLIC KEY-----",
            "-----END PRIVATE KEY-----",
            "END SECRET",
            "BEGIN",
            "SECRET",
            "TCK-12",
            "déjà",
            "中文",
            "🔑",
            "ü",
        ])
        .prop_map(str::to_owned),
    ];
    let separator =
        prop::sample::select(vec![" ", " ", " ", "\n", ", ", "; ", "\t", "é", "🔑", "中"]);
    prop::collection::vec((word, separator), 0..12).prop_map(|parts| {
        let text = parts
            .into_iter()
            .map(|(word, separator)| format!("{word}{separator}"))
            .collect::<String>();
        (text, String::new())
    })
}

/// A text of filler and secrets (each secret after a line break and before a space), and the
/// secrets with their parts that must not be emitted.
fn text() -> impl Strategy<Value = (String, Vec<Segment>)> {
    prop::collection::vec(prop_oneof![2 => filler(), 1 => secret()], 0..24).prop_map(|segments| {
        let mut text = String::new();
        let mut secrets = Vec::new();
        for (segment, secret) in segments {
            if secret.is_empty() {
                text.push_str(&segment);
            } else {
                // A line break before: `Bearer` and a word of 8 or more token characters is a
                // bearer token wherever it is, so filler ending in `Authorization: Bearer `
                // right before a secret header would take the next word for the token.
                text.push('\n');
                text.push_str(&segment);
                text.push(' ');
                secrets.push((segment, secret));
            }
        }
        (text, secrets)
    })
}

/// Cuts `text` at `cuts` (byte offsets, moved down to character boundaries).
fn chunks<'t>(text: &'t str, cuts: &[usize]) -> Vec<&'t str> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|cut| {
            let mut cut = cut % (text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            cut
        })
        .collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    points.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

/// Streams the chunks, checking the memory bound after each; returns every output.
fn stream(redactor: &Arc<Redactor>, chunks: &[&str]) -> Vec<String> {
    let mut stream = StreamRedactor::new(redactor.clone());
    let mut outputs = Vec::new();
    for chunk in chunks {
        outputs.push(stream.push(chunk));
        assert!(
            stream.held_bytes() <= redactor.max_held_bytes(),
            "held {} > {}",
            stream.held_bytes(),
            redactor.max_held_bytes()
        );
    }
    outputs.push(stream.finish());
    outputs
}

proptest! {
    #[test]
    fn streaming_equals_redacting_the_whole_text(
        (text, secrets) in text(),
        cuts in prop::collection::vec(any::<usize>(), 0..40),
        holdback in prop::sample::select(vec![96usize, 128, 256, 1024]),
        shared_group in any::<bool>(),
    ) {
        let redactor = Arc::new(redactor(holdback, shared_group));
        let whole = redactor.redact_all(&text).into_owned();
        let outputs = stream(&redactor, &chunks(&text, &cuts));
        prop_assert_eq!(outputs.concat(), whole.clone());
        for (segment, secret) in &secrets {
            if segment.starts_with("password=") && !shared_group {
                continue;
            }
            let part = &secret[..secret.len().min(12)];
            prop_assert!(!whole.contains(part), "{part:?} in {whole:?}");
            for output in &outputs {
                prop_assert!(!output.contains(part), "{part:?} in {output:?}");
            }
        }
    }

    #[test]
    fn any_text_in_any_chunks_is_handled_within_the_bound(
        text in "\\PC{0,600}",
        cuts in prop::collection::vec(any::<usize>(), 0..60),
        holdback in prop::sample::select(vec![16usize, 17, 64, 256]),
    ) {
        let redactor = Arc::new(redactor(holdback, false));
        let _ = redactor.redact_all(&text);
        let _ = stream(&redactor, &chunks(&text, &cuts));
    }

    #[test]
    fn a_token_cut_anywhere_is_never_emitted_in_part(
        (segment, body) in secret(),
        before in "[a-z ]{0,300}",
        cut in any::<usize>(),
    ) {
        let text = format!("{before} {segment} tail");
        let redactor = Arc::new(redactor(256, true));
        let outputs = stream(&redactor, &chunks(&text, &[cut]));
        let part = &body[..body.len().min(8)];
        for output in &outputs {
            prop_assert!(!output.contains(part), "{part:?} in {output:?}");
        }
    }
}

#[test]
fn the_bound_holds_for_an_unterminated_block_and_a_stream_without_newlines() {
    let redactor = Arc::new(redactor(256, false));
    let inputs = [
        format!("BEGIN SECRET {}", "x".repeat(300_000)),
        "lorem ipsum dolor ".repeat(20_000),
        format!("sk-ant-{}", "A".repeat(300_000)),
    ];
    for input in &inputs {
        let pieces: Vec<&str> = input
            .as_bytes()
            .chunks(997)
            .map(|chunk| std::str::from_utf8(chunk).expect("ASCII input"))
            .collect();
        let outputs = stream(&redactor, &pieces);
        let out = outputs.concat();
        assert!(out.len() <= input.len());
        assert!(
            !out.contains("xxxx") && !out.contains("AAAA"),
            "{}",
            &out[..out.len().min(80)]
        );
    }
}
