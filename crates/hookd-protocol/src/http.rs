//! The names the daemon's loopback HTTP listener and its clients share.
//!
//! Some hosts (Claude Code's `"type": "http"` hooks) can POST a hook's input JSON to a URL
//! instead of starting a command. hookd's listener answers such POSTs at
//! `/v1/hooks/{host}/{Event}`: `{host}` is a dialect name as `hookd-relay --dialect` takes it,
//! `{Event}` the host's own event name. The installer writes these URLs and the daemon parses
//! them, so both build them here. `docs/protocol.md` describes the whole mapping.

/// The port the listener uses when the user names none (`hookd --http 127.0.0.1:47411`, the
/// systemd socket unit, and what `hookctl install --transport http` writes by default).
pub const DEFAULT_PORT: u16 = 47411;

/// Every hook URL's path starts with this.
pub const HOOK_PATH_PREFIX: &str = "/v1/hooks/";

/// The scheme of the `Authorization` header that carries the per-user secret
/// (`Authorization: Bearer <64 hex digits>`).
pub const AUTH_SCHEME: &str = "Bearer";

/// The path an event of `host` is posted to, e.g. `/v1/hooks/claude/PreToolUse`.
pub fn hook_path(host: &str, event: &str) -> String {
    format!("{HOOK_PATH_PREFIX}{host}/{event}")
}

/// The `(host, event)` a hook path names, or `None` when the path is not exactly
/// `/v1/hooks/{host}/{Event}` with two non-empty segments of ASCII letters, digits, `-` and
/// `_` (no query, no further segments, no escapes: hookd writes these URLs itself, so
/// anything else is not one of them).
pub fn parse_hook_path(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix(HOOK_PATH_PREFIX)?;
    let (host, event) = rest.split_once('/')?;
    let segment_ok = |segment: &str| {
        !segment.is_empty()
            && segment.len() <= 64
            && segment
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
    };
    (segment_ok(host) && segment_ok(event)).then_some((host, event))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_path_names_host_and_event() {
        assert_eq!(
            hook_path("claude", "PreToolUse"),
            "/v1/hooks/claude/PreToolUse"
        );
    }

    #[test]
    fn parse_hook_path_reads_back_what_hook_path_writes() {
        assert_eq!(
            parse_hook_path(&hook_path("claude", "PreToolUse")),
            Some(("claude", "PreToolUse"))
        );
    }

    #[test]
    fn parse_hook_path_refuses_everything_else() {
        for path in [
            "/",
            "/v1/hooks/",
            "/v1/hooks/claude",
            "/v1/hooks/claude/",
            "/v1/hooks//PreToolUse",
            "/v1/hooks/claude/PreToolUse/x",
            "/v1/hooks/claude/PreToolUse?x=1",
            "/v1/hooks/claude/Pre%54oolUse",
            "/v1/hooks/../claude/PreToolUse",
            "/v2/hooks/claude/PreToolUse",
            "v1/hooks/claude/PreToolUse",
        ] {
            assert_eq!(parse_hook_path(path), None, "{path}");
        }
        let long = format!("/v1/hooks/claude/{}", "A".repeat(65));
        assert_eq!(parse_hook_path(&long), None);
    }
}
