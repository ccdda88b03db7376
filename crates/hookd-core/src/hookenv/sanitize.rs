//! Secret redaction of the environment hooks start from (spec §4.3, last bullet).
//!
//! Gemini CLI gives every hook its own environment minus what looks secret, when either the
//! settings ask for it (`security.environmentVariableRedaction.enabled`) or it runs inside
//! GitHub Actions (`GITHUB_SHA` set to a non-empty value, or `SURFACE` exactly `Github`: the
//! "strict" mode). Otherwise the environment is passed on whole. Only the base environment is
//! filtered: the `GEMINI_*` variables and the hook's own `env` entries are added afterwards,
//! untouched.
//!
//! When active, each variable is decided by the first rule that applies, its name and value
//! compared upper-cased:
//!
//! 1. a name starting `GEMINI_CLI_` is kept;
//! 2. a value that looks like a secret ([`looks_secret`]: private keys, certificates,
//!    credentials in a URL, GitHub, Google, AWS, Stripe and Slack tokens, JWTs) is dropped;
//! 3. a name starting `GIT_CONFIG_` is kept;
//! 4. a name in `security.environmentVariableRedaction.allowed` is kept;
//! 5. a name in `security.environmentVariableRedaction.blocked` is dropped;
//! 6. a name in [`ALWAYS_ALLOWED`] (`PATH`, `HOME`, `TERM`, ...) is kept;
//! 7. a name in [`NEVER_ALLOWED`] (`DATABASE_URL`, `CLIENT_ID`, ...) is dropped;
//! 8. in strict mode, everything else is dropped;
//! 9. otherwise a name containing one of [`SECRET_NAME_PARTS`] (`TOKEN`, `KEY`, `AUTH`, ...)
//!    is dropped, and the rest kept.
//!
//! Some Gemini CLI revisions read `allowed` in their settings schema but never hand it to this
//! check, so there it has no effect; hookd follows the specification and honours it.

use std::sync::LazyLock;

use regex::Regex;

/// The merged `security.environmentVariableRedaction` settings of a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvRedaction {
    /// `enabled`: redact even outside GitHub Actions (default off).
    pub enabled: bool,
    /// `allowed`: names always kept (rule 4), as written; compared upper-cased.
    pub allowed: Vec<String>,
    /// `blocked`: names always dropped (rule 5), as written; compared upper-cased.
    pub blocked: Vec<String>,
}

/// Names kept whatever their value's name says (rule 6): what programs need to run, and the
/// variables Gemini CLI's GitHub Action passes to the agent.
pub const ALWAYS_ALLOWED: [&str; 32] = [
    "PATH",
    "SYSTEMROOT",
    "COMSPEC",
    "PATHEXT",
    "WINDIR",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "SYSTEMDRIVE",
    "HOME",
    "LANG",
    "SHELL",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "TERM",
    "COLORTERM",
    "ADDITIONAL_CONTEXT",
    "AVAILABLE_LABELS",
    "BRANCH_NAME",
    "DESCRIPTION",
    "EVENT_NAME",
    "GITHUB_ENV",
    "IS_PULL_REQUEST",
    "ISSUES_TO_TRIAGE",
    "ISSUE_BODY",
    "ISSUE_NUMBER",
    "ISSUE_TITLE",
    "PULL_REQUEST_NUMBER",
    "REPOSITORY",
    "TITLE",
    "TRIGGERING_ACTOR",
];

/// Names always dropped unless allowed explicitly (rule 7).
pub const NEVER_ALLOWED: [&str; 12] = [
    "CLIENT_ID",
    "DB_URI",
    "CONNECTION_STRING",
    "AWS_DEFAULT_REGION",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "SLACK_WEBHOOK_URL",
    "TWILIO_ACCOUNT_SID",
    "DATABASE_URL",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_ACCOUNT",
    "FIREBASE_PROJECT_ID",
];

/// Parts of a name that mark it secret outside strict mode (rule 9).
pub const SECRET_NAME_PARTS: [&str; 10] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "AUTH",
    "CREDENTIAL",
    "CREDS",
    "PRIVATE",
    "CERT",
];

/// JavaScript's `\s`: its whitespace and line terminators (not Unicode's `White_Space`, which
/// differs in U+0085 and U+FEFF).
const JS_SPACE: &str = r"\t\n\x0B\x0C\r \u{A0}\u{1680}\u{2000}-\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}";

/// The secret-looking values (rule 2), written for upper-cased text: Gemini CLI upper-cases a
/// value and then matches case-insensitively, which is matching these against the upper-cased
/// value.
///
/// Gemini CLI bounds the URL credential's two parts to 1,024 characters and a JWT's three
/// parts to 10,240, a guard for JavaScript's backtracking matcher; this linear-time matcher
/// does not need it, and the bounded forms would take tens of milliseconds and megabytes to
/// compile. The only difference: a value with a part longer than the bound is redacted here
/// and kept by Gemini CLI, so hookd never keeps what Gemini CLI would drop.
static SECRET_VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let patterns = [
        r"-----BEGIN (RSA|OPENSSH|EC|PGP) PRIVATE KEY-----".to_owned(),
        r"-----BEGIN CERTIFICATE-----".to_owned(),
        // Credentials in a URL.
        format!(r"(HTTPS?|FTP|SMTP)://[^:{JS_SPACE}]+:[^@{JS_SPACE}]+@"),
        // GitHub tokens.
        r"(GHP|GHO|GHU|GHS|GHR|GITHUB_PAT)_[A-Z0-9_]{36,}".to_owned(),
        // Google API keys (the class holds a backslash and a hyphen).
        r"AIZASY[A-Z0-9_\\\-]{33}".to_owned(),
        // AWS access key ids.
        r"AKIA[A-Z0-9]{16}".to_owned(),
        // JWTs and other OAuth tokens.
        r"EYJ[A-Z0-9_\-]*\.[A-Z0-9_\-]*\.[A-Z0-9_\-]*".to_owned(),
        // Stripe keys.
        r"(S|R)K_(LIVE|TEST)_[0-9A-Z]{24}".to_owned(),
        // Slack tokens.
        r"XOX[ABPR]-[A-Z0-9\-]+".to_owned(),
    ];
    Regex::new(&patterns.join("|")).ok()
});

/// Whether redaction applies to a base environment under `settings`: enabled in the
/// settings, or strict (GitHub Actions).
pub fn is_active(base: &[(String, String)], settings: &EnvRedaction) -> bool {
    settings.enabled || is_strict(base)
}

/// GitHub Actions' strict mode: `GITHUB_SHA` non-empty or `SURFACE` exactly `Github` (names
/// compared as given, as Node's `process.env` does on Unix).
pub fn is_strict(base: &[(String, String)]) -> bool {
    base.iter().any(|(name, value)| {
        (name == "GITHUB_SHA" && !value.is_empty()) || (name == "SURFACE" && value == "Github")
    })
}

/// Whether a value looks like a secret (rule 2). A value that cannot be checked (the pattern
/// failed to build, which the tests rule out) counts as secret: redaction fails closed.
pub fn looks_secret(value: &str) -> bool {
    if value.is_empty() {
        return false;
    }
    match SECRET_VALUE.as_ref() {
        Some(pattern) => pattern.is_match(&value.to_uppercase()),
        None => true,
    }
}

/// Whether the variable `name=value` is dropped from a base environment under `settings`, in
/// `strict` mode or not (rules 1-9; call only when redaction [`is_active`]).
pub fn is_redacted(name: &str, value: &str, settings: &EnvRedaction, strict: bool) -> bool {
    let name = name.to_uppercase();
    let listed = |names: &[String]| names.iter().any(|listed| listed.to_uppercase() == name);
    if name.starts_with("GEMINI_CLI_") {
        return false;
    }
    if looks_secret(value) {
        return true;
    }
    if name.starts_with("GIT_CONFIG_") || listed(&settings.allowed) {
        return false;
    }
    if listed(&settings.blocked) {
        return true;
    }
    if ALWAYS_ALLOWED.contains(&name.as_str()) {
        return false;
    }
    if NEVER_ALLOWED.contains(&name.as_str()) || strict {
        return true;
    }
    SECRET_NAME_PARTS.iter().any(|part| name.contains(part))
}

/// The variables of `base` hooks get under `settings`, in their order: all of them when
/// redaction is not active, else those that are not redacted.
pub fn kept<'a>(
    base: &'a [(String, String)],
    settings: &'a EnvRedaction,
) -> impl Iterator<Item = &'a (String, String)> {
    let active = is_active(base, settings);
    let strict = active && is_strict(base);
    base.iter()
        .filter(move |(name, value)| !active || !is_redacted(name, value, settings, strict))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// [`kept`], owned.
    fn sanitize(base: &[(String, String)], settings: &EnvRedaction) -> Vec<(String, String)> {
        kept(base, settings).cloned().collect()
    }

    /// Owned `(name, value)` pairs.
    pub(crate) fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    fn settings(enabled: bool, allowed: &[&str], blocked: &[&str]) -> EnvRedaction {
        EnvRedaction {
            enabled,
            allowed: allowed.iter().map(|name| (*name).to_owned()).collect(),
            blocked: blocked.iter().map(|name| (*name).to_owned()).collect(),
        }
    }

    #[test]
    fn the_secret_value_pattern_builds() {
        assert!(SECRET_VALUE.is_some());
    }

    #[test]
    fn nothing_is_redacted_unless_enabled_or_strict() {
        let base = pairs(&[("API_TOKEN", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB")]);
        assert_eq!(sanitize(&base, &EnvRedaction::default()), base);
        // An empty GITHUB_SHA or another SURFACE is not GitHub Actions.
        for strictless in [
            ("GITHUB_SHA", ""),
            ("SURFACE", "github"),
            ("github_sha", "1"),
        ] {
            let mut base = base.clone();
            base.push((strictless.0.to_owned(), strictless.1.to_owned()));
            assert!(!is_strict(&base), "{strictless:?}");
            assert_eq!(sanitize(&base, &EnvRedaction::default()), base);
        }
        for strict in [("GITHUB_SHA", "abc123"), ("SURFACE", "Github")] {
            let mut base = base.clone();
            base.push((strict.0.to_owned(), strict.1.to_owned()));
            assert!(is_strict(&base), "{strict:?}");
        }
        assert!(is_active(&[], &settings(true, &[], &[])));
    }

    #[test]
    fn each_rule_applies_in_order() {
        /// (name, value, allowed, blocked, strict, redacted, why)
        type Case = (
            &'static str,
            &'static str,
            &'static [&'static str],
            &'static [&'static str],
            bool,
            bool,
            &'static str,
        );
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("GEMINI_CLI_TOKEN", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", &[], &["GEMINI_CLI_TOKEN"], true, false, "1: GEMINI_CLI_ first"),
            ("gemini_cli_x", "v", &[], &[], true, false, "1: names compared upper-cased"),
            ("PATH", "/bin:-----BEGIN CERTIFICATE-----", &[], &[], false, true, "2: a secret value beats every list"),
            ("MY_VAR", "AKIA0123456789ABCDEF", &["MY_VAR"], &[], false, true, "2 before 4"),
            ("GIT_CONFIG_COUNT", "1", &[], &["GIT_CONFIG_COUNT"], true, false, "3 before 5"),
            ("GIT_CONFIG_KEY_0", "user.name", &[], &[], true, false, "3 before 8 and 9"),
            ("MY_VAR", "x", &["MY_VAR"], &[], true, false, "4 before 8"),
            ("API_TOKEN", "plain", &["api_token"], &[], true, false, "4: allowed, case-insensitively"),
            ("HOME", "/home/x", &["HOME"], &["HOME"], false, false, "4 before 5"),
            ("HOME", "/home/x", &[], &["home"], false, true, "5 before 6"),
            ("PATH", "/bin", &[], &[], true, false, "6 in strict mode"),
            ("term", "xterm", &[], &[], true, false, "6: TERM upper-cased"),
            ("DATABASE_URL", "postgres://db/x", &[], &[], false, true, "7 outside strict mode"),
            ("DATABASE_URL", "postgres://db/x", &["DATABASE_URL"], &[], false, false, "4 before 7"),
            ("EDITOR", "vim", &[], &[], true, true, "8: strict drops the rest"),
            ("EDITOR", "vim", &[], &[], false, false, "9: an ordinary name is kept"),
            ("MONKEY", "banana", &[], &[], false, true, "9: KEY anywhere in the name"),
            ("Author", "x", &[], &[], false, true, "9: AUTH, case-insensitively"),
            ("SSL_CERT_FILE", "/etc/ssl/cert.pem", &[], &[], false, true, "9: CERT"),
            ("NPM_CONFIG_CACHE", "/tmp/npm", &[], &[], false, false, "9: no secret part"),
        ];
        for &(name, value, allowed, blocked, strict, redacted, why) in cases {
            let settings = settings(true, allowed, blocked);
            assert_eq!(
                is_redacted(name, value, &settings, strict),
                redacted,
                "{why}: {name}={value}"
            );
        }
    }

    #[test]
    fn secret_looking_values() {
        let ghp = format!("ghp_{}", "a".repeat(36));
        let google = format!("AIzaSy{}", "B-\\_9".repeat(6) + "abc");
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
        let secrets = [
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE...",
            "-----begin openssh private key-----",
            "x -----BEGIN CERTIFICATE----- y",
            "https://user:pass@example.com/repo.git",
            "SMTP://me:pw@mail",
            ghp.as_str(),
            "github_pat_0123456789abcdefghijklmnopqrstuvwxyz",
            google.as_str(),
            "akiaABCDEFGHIJKLMNOP",
            jwt,
            "eyJ..",
            "sk_live_0123456789abcdefghijklmn",
            "rk_test_0123456789ABCDEFGHIJKLMN",
            "xoxb-123-456-abc",
        ];
        for value in secrets {
            assert!(looks_secret(value), "{value}");
        }
        // Past Gemini CLI's bounds (see SECRET_VALUE): redacted here.
        assert!(looks_secret(&format!(
            "https://{}:pw@host",
            "u".repeat(2000)
        )));
        assert!(looks_secret(&format!("eyJ{}.a.b", "x".repeat(20_000))));
        let plain = [
            "",
            "/usr/local/bin:/usr/bin",
            "https://example.com/path",
            // A space between the user and the password is not a credential.
            "https://user name:pass@example.com",
            "https://user:pass word@example.com",
            "-----BEGIN DSA PRIVATE KEY-----",
            &format!("ghp_{}", "a".repeat(35)),
            &format!("AIzaSy{}", "b".repeat(32)),
            "AKIA0123",
            "eyJ.only-one-dot",
            "sk_live_short",
            "xoxc-123",
        ];
        for value in plain {
            assert!(!looks_secret(value), "{value}");
        }
        // Upper-casing first: a long s (U+017F) upper-cases to S.
        assert!(looks_secret("\u{17f}k_live_0123456789abcdefghijklmn"));
    }

    #[test]
    fn sanitize_keeps_the_order_of_what_it_keeps() {
        let base = pairs(&[
            ("HOME", "/home/x"),
            ("GITHUB_SHA", "abc"),
            ("GEMINI_CLI_IDE", "1"),
            ("EDITOR", "vim"),
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "ghs_0123456789abcdefghijklmnopqrstuvwxyz"),
            ("MY_TOOL_HOME", "/opt/tool"),
        ]);
        // Strict (GITHUB_SHA): only the kept names, in their order.
        assert_eq!(
            sanitize(&base, &settings(false, &["MY_TOOL_HOME"], &[])),
            pairs(&[
                ("HOME", "/home/x"),
                ("GEMINI_CLI_IDE", "1"),
                ("PATH", "/bin"),
                ("MY_TOOL_HOME", "/opt/tool"),
            ])
        );
        // Enabled outside GitHub: ordinary names stay, secret ones go.
        let base: Vec<_> = base
            .into_iter()
            .filter(|(name, _)| name != "GITHUB_SHA")
            .collect();
        assert_eq!(
            sanitize(&base, &settings(true, &[], &["EDITOR"])),
            pairs(&[
                ("HOME", "/home/x"),
                ("GEMINI_CLI_IDE", "1"),
                ("PATH", "/bin"),
                ("MY_TOOL_HOME", "/opt/tool"),
            ])
        );
    }
}
