//! `--transport http`: Claude Code reaches hookd's loopback HTTP listener with `"type": "http"`
//! entries instead of starting `hookd-relay` for every event ([`plan`], [`http_entries`]).
//!
//! Which entry each event gets, and what happens when hookd cannot answer:
//!
//! - `SessionStart` is always a command relay: Claude Code never sends it over HTTP, and the
//!   relay gives hookd the session's project directory, which HTTP events cannot carry.
//!   `Setup` (not sent over HTTP either) is a relay when hookd has hooks for it.
//! - An event hookd has hooks for that can block gets an HTTP entry with
//!   `"onFailure": "block"`: when hookd is down, Claude Code blocks the call, where the relay
//!   would have run the hooks in hookd's engine. Claude Code alone would have run the hook,
//!   which could block; refusing the call is never weaker than that.
//! - Claude Code ignores `onFailure` on `Stop`, `SubagentStop`, `TaskCompleted` and
//!   `TeammateIdle`: an event of these with hooks stays a command relay, whose fallback runs
//!   the hooks in hookd's engine when the daemon cannot answer.
//! - An event with hooks that cannot block gets an HTTP entry that lets Claude Code go on
//!   when hookd is down: the hooks' side effects are skipped, no decision is lost.
//! - With `--events all` (the default), every common event without hooks ([`ALWAYS_WIRED`])
//!   gets an HTTP entry too, and every HTTP entry sees every tool, so that a hook added to
//!   hookd's files later runs in sessions already started (Claude Code reads its hooks once
//!   per session; hookd at once). Such an entry lets Claude Code go on when hookd is down: the
//!   CLI alone would not have run that hook at all.
//! - With `--events hooked`, only the events hookd has hooks for get an entry, each with its
//!   hooks' matcher, as command relays are wired: Claude Code posts nothing that no hook
//!   wants (each post costs it several milliseconds, docs/benchmarks.md), and a hook for a new
//!   event or tool waits for `hookctl sync` and a new session.
//!
//! With the socket unit (`hookd-http.socket`) the port is held by systemd, so "down" means
//! hookd is started by the first request instead.

use serde_json::{Map, Value, json};

use super::Host;
use super::args::HttpEvents;
use super::wiring::{RELAY_MARGIN_MS, WireEntry};

/// The events Claude Code sends over HTTP that get an entry even without hooks. Left out:
/// `WorktreeCreate`/`WorktreeRemove` (a hook replaces Claude Code's own worktree handling),
/// `FileChanged` (its matcher is the list of watched files), and the rarer events, which are
/// wired only once hookd has hooks for them.
pub const ALWAYS_WIRED: [&str; 12] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "SubagentStart",
    "PreCompact",
    "PostCompact",
    "Notification",
    "SessionEnd",
];

/// The events Claude Code never sends over HTTP (it skips such entries).
pub const NOT_OVER_HTTP: [&str; 2] = ["SessionStart", "Setup"];

/// The events whose `onFailure` Claude Code ignores (besides [`NOT_OVER_HTTP`]).
pub const ON_FAILURE_IGNORED: [&str; 4] = ["Stop", "SubagentStop", "TaskCompleted", "TeammateIdle"];

/// How long an entry without hooks waits. hookd answers an event with no hook at once; the
/// bound matters when hookd is stopped or wedged (Claude Code would otherwise wait on every
/// such event, `Stop` and `SessionEnd` included, for its default of 600 s) and for a hook
/// added later, which a running session gives this long until `sync` writes its own timeout
/// for the next sessions.
pub const UNHOOKED_TIMEOUT_MS: u64 = 10_000;

/// The header value the diff and reports show instead of the secret.
pub const REDACTED: &str = "<hookd http secret>";

/// How an event reaches hookd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A `hookd-relay` command entry.
    Relay,
    /// An HTTP entry; `block`: with `"onFailure": "block"`.
    Http {
        /// Whether Claude Code blocks when hookd cannot answer.
        block: bool,
    },
}

/// One planned entry of an HTTP install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The event, and for a relay its matcher and timeout.
    pub entry: WireEntry,
    /// Relay or HTTP.
    pub kind: EntryKind,
}

/// Whether a Claude Code hook on `event` can block it.
fn can_block(event: &str) -> bool {
    hookd_core::dialect::claude_block_style(event) != hookd_core::dialect::BlockStyle::None
}

/// The entries of an HTTP install for the events hookd has hooks for (`wiring`, as
/// [`super::wiring`] computes it) and the `events` choice: see the module documentation for
/// the rule.
pub fn plan(host: Host, wiring: &[WireEntry], events: HttpEvents) -> Vec<Planned> {
    let mut planned = Vec::new();
    for event in host.relay().events() {
        let wired = wiring.iter().find(|entry| entry.event == event);
        let kind = if NOT_OVER_HTTP.contains(&event) {
            if wired.is_none() && event != "SessionStart" {
                continue;
            }
            EntryKind::Relay
        } else if let Some(wired) = wired {
            if can_block(event) && ON_FAILURE_IGNORED.contains(&event) {
                EntryKind::Relay
            } else {
                EntryKind::Http {
                    block: can_block(&wired.event),
                }
            }
        } else if events == HttpEvents::All && ALWAYS_WIRED.contains(&event) {
            EntryKind::Http { block: false }
        } else {
            continue;
        };
        let entry = match (kind, wired) {
            (EntryKind::Relay, Some(wired)) => wired.clone(),
            // SessionStart without hooks: the relay only tells hookd the project.
            (EntryKind::Relay, None) => WireEntry {
                event: event.to_owned(),
                matcher: None,
                timeout_ms: RELAY_MARGIN_MS,
            },
            // With `all`, an HTTP entry sees every firing, so that hooks on other tools added
            // later run; with `hooked`, only what its hooks match.
            (EntryKind::Http { .. }, wired) => WireEntry {
                event: event.to_owned(),
                matcher: match events {
                    HttpEvents::All => None,
                    HttpEvents::Hooked => wired.and_then(|wired| wired.matcher.clone()),
                },
                timeout_ms: wired.map_or(UNHOOKED_TIMEOUT_MS, |wired| wired.timeout_ms),
            },
        };
        planned.push(Planned { entry, kind });
    }
    planned
}

/// The URL of an event's HTTP entry.
pub fn hook_url(host: Host, port: u16, event: &str) -> String {
    format!(
        "http://127.0.0.1:{port}{}",
        hookd_protocol::http::hook_path(host.as_str(), event)
    )
}

/// The HTTP handler of one event.
pub fn http_handler(host: Host, port: u16, secret: &str, planned: &Planned) -> Value {
    let mut handler = json!({
        "type": "http",
        "url": hook_url(host, port, &planned.entry.event),
        "headers": {
            "Authorization": format!("{} {secret}", hookd_protocol::http::AUTH_SCHEME),
        },
        "timeout": planned.entry.timeout_ms.div_ceil(1000),
    });
    if planned.kind == (EntryKind::Http { block: true }) {
        handler["onFailure"] = Value::from("block");
    }
    handler
}

/// Whether a hook object of a host file is hookd's HTTP wiring: `"type": "http"` with a
/// loopback URL whose path is hookd's hook path.
pub fn is_http_wiring(hook: &Value) -> bool {
    if hook.get("type").and_then(Value::as_str) != Some("http") {
        return false;
    }
    hook.get("url")
        .and_then(Value::as_str)
        .and_then(http_wiring_port)
        .is_some()
}

/// The port of a hookd HTTP URL (`http://127.0.0.1:PORT/v1/hooks/...`, also `localhost` and
/// `[::1]`); `None` for any other URL.
pub fn http_wiring_port(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://")?;
    let slash = rest.find('/')?;
    let (authority, path) = rest.split_at(slash);
    hookd_protocol::http::parse_hook_path(path)?;
    let port = ["127.0.0.1:", "localhost:", "[::1]:"]
        .iter()
        .find_map(|host| authority.strip_prefix(host))?;
    port.parse().ok()
}

/// The secret an HTTP entry sends (its `Authorization` header's token).
pub fn entry_secret(hook: &Value) -> Option<&str> {
    hook.get("headers")?
        .get("Authorization")?
        .as_str()?
        .strip_prefix(hookd_protocol::http::AUTH_SCHEME)?
        .strip_prefix(' ')
}

/// What each kind of entry does when hookd cannot answer, for `install`'s report.
pub fn describe_down(planned: &[Planned]) -> String {
    let names = |wanted: &dyn Fn(EntryKind) -> bool| -> String {
        let list: Vec<&str> = planned
            .iter()
            .filter(|planned| wanted(planned.kind))
            .map(|planned| planned.entry.event.as_str())
            .collect();
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        }
    };
    format!(
        "When hookd cannot answer: HTTP entries with onFailure block ({}) block the call, as \
         their hooks could have; command relays ({}) run the hooks in hookd's engine; the other \
         HTTP entries ({}) let Claude Code go on: their events have no hook that can block. \
         With hookd-http.socket enabled, systemd starts hookd on the first request instead.",
        names(&|kind| kind == EntryKind::Http { block: true }),
        names(&|kind| kind == EntryKind::Relay),
        names(&|kind| kind == EntryKind::Http { block: false }),
    )
}

/// Adds `handler` as `event`'s one definition to `hooks`, with `matcher` when it is not
/// "every tool".
pub fn insert_handler(
    hooks: &mut Map<String, Value>,
    event: &str,
    matcher: Option<&str>,
    handler: Value,
) {
    let mut definition = json!({ "hooks": [handler] });
    if let Some(matcher) = matcher.filter(|matcher| !matcher.is_empty() && *matcher != "*") {
        definition["matcher"] = Value::from(matcher);
    }
    hooks.insert(event.to_owned(), Value::Array(vec![definition]));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(event: &str, matcher: Option<&str>, timeout_ms: u64) -> WireEntry {
        WireEntry {
            event: event.to_owned(),
            matcher: matcher.map(str::to_owned),
            timeout_ms,
        }
    }

    /// Each planned entry as (event, kind, matcher, timeout).
    fn rows(planned: &[Planned]) -> Vec<(&str, EntryKind, Option<&str>, u64)> {
        planned
            .iter()
            .map(|planned| {
                (
                    planned.entry.event.as_str(),
                    planned.kind,
                    planned.entry.matcher.as_deref(),
                    planned.entry.timeout_ms,
                )
            })
            .collect()
    }

    #[test]
    fn each_event_gets_the_entry_that_is_never_weaker() {
        let wiring = vec![
            entry("PreToolUse", Some("Bash"), 70_000),
            entry("Notification", None, 70_000),
            entry("Stop", None, 70_000),
            entry("SessionStart", Some("startup"), 70_000),
            entry("ConfigChange", None, 70_000),
            entry("InstructionsLoaded", None, 70_000),
        ];
        let planned = plan(Host::CLAUDE, &wiring, HttpEvents::All);
        let got = rows(&planned);
        let http = |block| EntryKind::Http { block };
        let expected = vec![
            // Hooks that can block: block when hookd is down; every tool is sent.
            ("PreToolUse", http(true), None, 70_000),
            ("PostToolUse", http(false), None, UNHOOKED_TIMEOUT_MS),
            ("UserPromptSubmit", http(false), None, UNHOOKED_TIMEOUT_MS),
            // onFailure is ignored on Stop: its hooks stay behind a relay.
            ("Stop", EntryKind::Relay, None, 70_000),
            ("SubagentStop", http(false), None, UNHOOKED_TIMEOUT_MS),
            // SessionStart is never sent over HTTP: a relay, with its matcher.
            ("SessionStart", EntryKind::Relay, Some("startup"), 70_000),
            ("SessionEnd", http(false), None, UNHOOKED_TIMEOUT_MS),
            ("PreCompact", http(false), None, UNHOOKED_TIMEOUT_MS),
            // Cannot block: goes on when hookd is down.
            ("Notification", http(false), None, 70_000),
            ("PostToolUseFailure", http(false), None, UNHOOKED_TIMEOUT_MS),
            ("PermissionRequest", http(false), None, UNHOOKED_TIMEOUT_MS),
            ("SubagentStart", http(false), None, UNHOOKED_TIMEOUT_MS),
            ("PostCompact", http(false), None, UNHOOKED_TIMEOUT_MS),
            ("ConfigChange", http(true), None, 70_000),
            ("InstructionsLoaded", http(false), None, 70_000),
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn hooked_wires_only_events_with_hooks_and_keeps_their_matchers() {
        let wiring = vec![
            entry("PreToolUse", Some("Bash"), 70_000),
            entry("Notification", None, 70_000),
            entry("Stop", None, 70_000),
            entry("UserPromptSubmit", Some("*"), 30_000),
        ];
        let planned = plan(Host::CLAUDE, &wiring, HttpEvents::Hooked);
        let got = rows(&planned);
        let http = |block| EntryKind::Http { block };
        let expected = vec![
            ("PreToolUse", http(true), Some("Bash"), 70_000),
            ("UserPromptSubmit", http(true), Some("*"), 30_000),
            ("Stop", EntryKind::Relay, None, 70_000),
            ("SessionStart", EntryKind::Relay, None, RELAY_MARGIN_MS),
            ("Notification", http(false), None, 70_000),
        ];
        assert_eq!(got, expected);
        // No hooks at all: only SessionStart's relay, which tells hookd the project.
        let bare = plan(Host::CLAUDE, &[], HttpEvents::Hooked);
        assert_eq!(bare.len(), 1);
        assert_eq!(bare[0].entry.event, "SessionStart");
    }

    #[test]
    fn a_handler_carries_its_matcher_unless_it_is_every_tool() {
        let mut hooks = Map::new();
        insert_handler(
            &mut hooks,
            "PreToolUse",
            Some("Bash"),
            json!({"type": "http"}),
        );
        insert_handler(
            &mut hooks,
            "PostToolUse",
            Some("*"),
            json!({"type": "http"}),
        );
        insert_handler(&mut hooks, "Stop", None, json!({"type": "http"}));
        assert_eq!(hooks["PreToolUse"][0]["matcher"], "Bash");
        assert!(hooks["PostToolUse"][0].get("matcher").is_none());
        assert!(hooks["Stop"][0].get("matcher").is_none());
    }

    #[test]
    fn session_start_is_relayed_even_without_hooks() {
        let planned = plan(Host::CLAUDE, &[], HttpEvents::All);
        let relays: Vec<&str> = planned
            .iter()
            .filter(|planned| planned.kind == EntryKind::Relay)
            .map(|planned| planned.entry.event.as_str())
            .collect();
        assert_eq!(relays, vec!["SessionStart"]);
        assert_eq!(planned.len(), ALWAYS_WIRED.len() + 1);
    }

    #[test]
    fn http_wiring_is_recognised_exactly() {
        let planned = Planned {
            entry: entry("PreToolUse", None, 70_000),
            kind: EntryKind::Http { block: true },
        };
        let handler = http_handler(Host::CLAUDE, 47411, "ab12", &planned);
        assert_eq!(
            handler,
            json!({
                "type": "http",
                "url": "http://127.0.0.1:47411/v1/hooks/claude/PreToolUse",
                "headers": {"Authorization": "Bearer ab12"},
                "timeout": 70,
                "onFailure": "block",
            })
        );
        assert!(is_http_wiring(&handler));
        assert_eq!(entry_secret(&handler), Some("ab12"));
        for (url, port) in [
            ("http://[::1]:9/v1/hooks/claude/Stop", Some(9)),
            ("http://localhost:80/v1/hooks/claude/Stop", Some(80)),
            ("http://example.com:80/v1/hooks/claude/Stop", None),
            ("https://127.0.0.1:80/v1/hooks/claude/Stop", None),
            ("http://127.0.0.1:80/other/claude/Stop", None),
            ("http://127.0.0.1:x/v1/hooks/claude/Stop", None),
            ("http://127.0.0.1:80@evil/v1/hooks/claude/Stop", None),
        ] {
            assert_eq!(http_wiring_port(url), port, "{url}");
        }
        assert!(!is_http_wiring(
            &json!({"type": "command", "url": "http://127.0.0.1:1/v1/hooks/claude/Stop"})
        ));
    }
}
