//! `--transport http`: Claude Code and Copilot CLI reach hookd's loopback HTTP listener with
//! `"type": "http"` entries instead of starting `hookd-relay` for every event ([`plan`],
//! [`http_handler`]).
//!
//! Which entry each event gets, and what happens when hookd cannot answer, for Claude Code:
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
//! Copilot CLI (1.0.102) has no `onFailure`, and runs an HTTP hook on a loopback address only
//! when it was started with `COPILOT_HOOK_ALLOW_LOCALHOST=1`: without it the entry is skipped
//! without a word, and a `preToolUse` entry that times out or answers what is not JSON lets
//! the call run. No HTTP entry can guard there, so every event hookd has hooks for that can
//! block stays a command relay (with the relay's engine fallback), as does `sessionStart`,
//! which gives hookd the session's project directory. HTTP entries go to the events whose hooks
//! cannot block and, with `--events all`, to the common events without hooks
//! ([`COPILOT_ALWAYS_WIRED`]; `preToolUse` is left out, since Copilot denies every tool call
//! whose `preToolUse` entry gets no answer, which would stop all work while hookd is down).
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

/// The Copilot CLI events that get an HTTP entry without hooks (with `--events all`): those
/// whose entry lets Copilot go on when hookd cannot answer (checked with 1.0.102: connection
/// refused, a `503`).
pub const COPILOT_ALWAYS_WIRED: [&str; 4] = [
    "userPromptSubmitted",
    "postToolUse",
    "agentStop",
    "sessionEnd",
];

/// The environment variable without which Copilot CLI skips HTTP hooks on a loopback address.
pub const COPILOT_LOCALHOST_VAR: &str = "COPILOT_HOOK_ALLOW_LOCALHOST";

/// What a host's HTTP hooks do, the facts [`plan`] builds on.
struct HttpHost {
    /// The event that is always a command relay, hooks or not: it tells hookd the session's
    /// project directory and environment.
    session_start: &'static str,
    /// Events that are command relays when hookd has hooks for them.
    relay_only: &'static [&'static str],
    /// Events that get an entry without hooks with `--events all`.
    always_wired: &'static [&'static str],
    /// Whether the host honours `"onFailure": "block"`; without it, an event whose hooks can
    /// block stays a command relay.
    on_failure: bool,
}

/// The HTTP facts of `host`; `None` for a host without HTTP hooks.
fn http_host(host: Host) -> Option<HttpHost> {
    if host == Host::CLAUDE {
        Some(HttpHost {
            session_start: "SessionStart",
            relay_only: &NOT_OVER_HTTP,
            always_wired: &ALWAYS_WIRED,
            on_failure: true,
        })
    } else if host == Host::COPILOT {
        Some(HttpHost {
            session_start: "sessionStart",
            relay_only: &["sessionStart"],
            always_wired: &COPILOT_ALWAYS_WIRED,
            on_failure: false,
        })
    } else {
        None
    }
}

/// Whether `host` can be wired with `--transport http`.
pub fn has_http(host: Host) -> bool {
    http_host(host).is_some()
}

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

/// Whether a hook on `host`'s `event` can block it (judged by its Claude Code counterpart,
/// which is how hookd answers Copilot CLI).
fn can_block(host: Host, event: &str) -> bool {
    let claude = if host == Host::COPILOT {
        match hookd_core::dialect::copilot::copilot_event_to_claude(event) {
            Some(claude) => claude,
            // An event hookd does not translate: counted as one that can block.
            None => return true,
        }
    } else {
        event
    };
    hookd_core::dialect::claude_block_style(claude) != hookd_core::dialect::BlockStyle::None
}

/// The entries of an HTTP install for the events hookd has hooks for (`wiring`, as
/// [`super::wiring`] computes it) and the `events` choice: see the module documentation for
/// the rule. A host without HTTP hooks gets relays only.
pub fn plan(host: Host, wiring: &[WireEntry], events: HttpEvents) -> Vec<Planned> {
    let Some(rules) = http_host(host) else {
        return wiring
            .iter()
            .map(|entry| Planned {
                entry: entry.clone(),
                kind: EntryKind::Relay,
            })
            .collect();
    };
    let mut planned = Vec::new();
    for event in host.relay().events() {
        let wired = wiring.iter().find(|entry| entry.event == event);
        let kind = if rules.relay_only.contains(&event) {
            if wired.is_none() && event != rules.session_start {
                continue;
            }
            EntryKind::Relay
        } else if wired.is_some() {
            let block = can_block(host, event);
            if block && (!rules.on_failure || ON_FAILURE_IGNORED.contains(&event)) {
                EntryKind::Relay
            } else {
                EntryKind::Http { block }
            }
        } else if events == HttpEvents::All && rules.always_wired.contains(&event) {
            EntryKind::Http { block: false }
        } else {
            continue;
        };
        let entry = match (kind, wired) {
            (EntryKind::Relay, Some(wired)) => wired.clone(),
            // The session's start without hooks: the relay only tells hookd the project.
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

/// The HTTP handler of one event: the secret rides in an `Authorization` header (Copilot CLI
/// sends the headers an entry names, checked with 1.0.102); the timeout is in the host's unit
/// (`timeout` for Claude Code, `timeoutSec` for Copilot CLI, both seconds).
pub fn http_handler(host: Host, port: u16, secret: &str, planned: &Planned) -> Value {
    let timeout_key = if host == Host::COPILOT {
        "timeoutSec"
    } else {
        "timeout"
    };
    let mut handler = json!({
        "type": "http",
        "url": hook_url(host, port, &planned.entry.event),
        "headers": {
            "Authorization": format!("{} {secret}", hookd_protocol::http::AUTH_SCHEME),
        },
    });
    handler[timeout_key] = Value::from(planned.entry.timeout_ms.div_ceil(1000).max(1));
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
pub fn describe_down(host: Host, planned: &[Planned]) -> String {
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
    let relays = names(&|kind| kind == EntryKind::Relay);
    let go_on = names(&|kind| kind == EntryKind::Http { block: false });
    if host == Host::COPILOT {
        return format!(
            "When hookd cannot answer: command relays ({relays}) run the hooks in hookd's \
             engine; the HTTP entries ({go_on}) let Copilot CLI go on: their events have no \
             hook that can block. Copilot CLI runs HTTP entries on a loopback address only when \
             it is started with {COPILOT_LOCALHOST_VAR}=1 in its environment, and skips them \
             without a word otherwise; so every event whose hooks can block stays a command \
             relay. Set it where copilot is started (for example `export \
             {COPILOT_LOCALHOST_VAR}=1` in your shell's profile). With hookd-http.socket \
             enabled, systemd starts hookd on the first request."
        );
    }
    format!(
        "When hookd cannot answer: HTTP entries with onFailure block ({}) block the call, as \
         their hooks could have; command relays ({relays}) run the hooks in hookd's engine; the \
         other HTTP entries ({go_on}) let Claude Code go on: their events have no hook that can \
         block. With hookd-http.socket enabled, systemd starts hookd on the first request \
         instead.",
        names(&|kind| kind == EntryKind::Http { block: true }),
    )
}

/// What `list` says an HTTP install of `host` sends through relays instead.
pub fn relayed_instead(host: Host) -> &'static str {
    if host == Host::COPILOT {
        "sessionStart and events whose hooks can block: hookd-relay, since Copilot CLI skips \
         HTTP entries unless started with COPILOT_HOOK_ALLOW_LOCALHOST=1"
    } else {
        "SessionStart and events whose hooks must fail closed where Claude Code ignores \
         onFailure: hookd-relay"
    }
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
    fn copilot_keeps_every_event_whose_hooks_can_block_behind_a_relay() {
        let wiring = vec![
            entry("preToolUse", None, 40_000),
            entry("postToolUse", None, 40_000),
            entry("sessionEnd", None, 40_000),
        ];
        let http = EntryKind::Http { block: false };
        for (events, expected) in [
            (
                HttpEvents::All,
                vec![
                    // The root and environment of the session: always a relay.
                    ("sessionStart", EntryKind::Relay, None, RELAY_MARGIN_MS),
                    ("userPromptSubmitted", http, None, UNHOOKED_TIMEOUT_MS),
                    // Copilot skips HTTP hooks without its variable, and runs a preToolUse
                    // call at a timeout: hooks that can block stay relays.
                    ("preToolUse", EntryKind::Relay, None, 40_000),
                    ("postToolUse", EntryKind::Relay, None, 40_000),
                    ("agentStop", http, None, UNHOOKED_TIMEOUT_MS),
                    ("sessionEnd", http, None, 40_000),
                ],
            ),
            (
                HttpEvents::Hooked,
                vec![
                    ("sessionStart", EntryKind::Relay, None, RELAY_MARGIN_MS),
                    ("preToolUse", EntryKind::Relay, None, 40_000),
                    ("postToolUse", EntryKind::Relay, None, 40_000),
                    ("sessionEnd", http, None, 40_000),
                ],
            ),
        ] {
            let planned = plan(Host::COPILOT, &wiring, events);
            assert_eq!(rows(&planned), expected, "{events:?}");
        }
        // Without hooks, no preToolUse entry: Copilot denies a call whose entry is not
        // answered, which would stop all work while hookd is down.
        let bare = plan(Host::COPILOT, &[], HttpEvents::All);
        assert!(
            bare.iter()
                .all(|planned| planned.entry.event != "preToolUse")
        );
        assert_eq!(bare.len(), COPILOT_ALWAYS_WIRED.len() + 1);
        // A host without HTTP hooks: relays, as wired.
        let gemini = plan(
            Host::GEMINI,
            &[entry("BeforeTool", None, 1)],
            HttpEvents::All,
        );
        assert_eq!(
            rows(&gemini),
            vec![("BeforeTool", EntryKind::Relay, None, 1)]
        );
        assert!(has_http(Host::COPILOT) && has_http(Host::CLAUDE) && !has_http(Host::CODEX));
    }

    #[test]
    fn a_copilot_handler_has_its_timeout_in_seconds_and_no_on_failure() {
        let planned = Planned {
            entry: entry("sessionEnd", None, 10_001),
            kind: EntryKind::Http { block: false },
        };
        let handler = http_handler(Host::COPILOT, 47411, "ab12", &planned);
        assert_eq!(
            handler,
            json!({
                "type": "http",
                "url": "http://127.0.0.1:47411/v1/hooks/copilot/sessionEnd",
                "headers": {"Authorization": "Bearer ab12"},
                "timeoutSec": 11,
            })
        );
        assert!(is_http_wiring(&handler));
        assert_eq!(entry_secret(&handler), Some("ab12"));
        assert!(describe_down(Host::COPILOT, &[planned]).contains(COPILOT_LOCALHOST_VAR));
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
