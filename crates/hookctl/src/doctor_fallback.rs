//! `hookctl doctor`'s `fallback` check: what happens to moved hooks while no daemon answers,
//! and which fallbacks the relay took recently (from its log).
//!
//! While hookd is not running, each relayed event runs its hooks in a one-shot engine
//! (`hookd --oneshot`, found beside the relay or on `PATH`): the guards still decide, at the
//! cost of a process per event. Without that engine, every relayed event is blocked; with
//! `--unreachable allow` in the entries (or `HOOKD_RELAY_UNREACHABLE=allow`), every moved hook
//! is skipped. The relay writes what it did to `relay.log` in its state directory, at most
//! one line a minute; the lines of the last day are summed up here.

use std::path::{Path, PathBuf};

use super::{Finding, find_program, relay_program};
use crate::install::InstalledRelays;

/// How far back the relay's log counts as "recently".
const RECENT_SECONDS: u64 = 24 * 60 * 60;

/// What the relay's log says about the last day.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct RecentFallbacks {
    /// Lines where the engine ran the hooks.
    pub ran: usize,
    /// Lines where the hooks' failure policies decided (a daemon that stopped answering).
    pub planned: usize,
    /// Lines where nothing could decide and the relay blocked.
    pub blocked: usize,
    /// Lines where the relay allowed without hooks (`--unreachable allow`).
    pub allowed: usize,
    /// The newest line.
    pub last: Option<String>,
}

impl RecentFallbacks {
    /// Reads the log lines (oldest first) newer than `since` (a UTC timestamp as the relay
    /// writes them; the fixed format compares as text).
    pub(super) fn read(lines: &[String], since: &str) -> RecentFallbacks {
        let mut recent = RecentFallbacks::default();
        for line in lines {
            let Some(stamp) = line.split_whitespace().next() else {
                continue;
            };
            if stamp.len() != since.len() || stamp < since {
                continue;
            }
            if line.contains("ran the hooks with hookd --oneshot") {
                recent.ran += 1;
            } else if line.contains("decided by the hooks' failure policies") {
                recent.planned += 1;
            } else if line.contains("blocking: no engine could decide") {
                recent.blocked += 1;
            } else if line.contains("allowing without hooks") {
                recent.allowed += 1;
            } else {
                continue;
            }
            recent.last = Some(line.clone());
        }
        recent
    }

    fn total(&self) -> usize {
        self.ran + self.planned + self.blocked + self.allowed
    }
}

/// The lines of the relay's log and its previous file, oldest first (each file read up to
/// its rotation size).
fn log_lines(state_dir: &Path) -> Vec<String> {
    use std::io::Read;
    let mut lines = Vec::new();
    for name in [
        format!("{}.1", crate::relay::LOG_FILE),
        crate::relay::LOG_FILE.to_owned(),
    ] {
        let Ok(file) = std::fs::File::open(state_dir.join(name)) else {
            continue;
        };
        let mut text = String::new();
        if file.take(2 * 1024 * 1024).read_to_string(&mut text).is_ok() {
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    lines
}

/// The `hookd` a relay at `relay` would run as its engine.
fn engine_for(relay: &Path) -> Option<PathBuf> {
    crate::relay::find_engine(|name| std::env::var_os(name), Some(relay.to_path_buf()))
}

/// `fallback`: moved guards while no daemon runs (`daemon_up` false), the relay entries'
/// unreachable policy, and the fallbacks in the relay's log of the last day.
pub(super) fn check_fallback(
    installed: &[InstalledRelays],
    daemon_up: bool,
    findings: &mut Vec<Finding>,
) {
    const CHECK: &str = "fallback";
    let allowing: Vec<String> = installed
        .iter()
        .filter(|install| {
            install.commands.iter().any(|command| {
                let words: Vec<&str> = command.split_whitespace().collect();
                words
                    .windows(2)
                    .any(|pair| pair[0] == "--unreachable" && pair[1].trim_matches('\'') == "allow")
                    || command.contains("--unreachable=allow")
            })
        })
        .map(|install| install.host_file.display().to_string())
        .collect();
    if !allowing.is_empty() {
        findings.push(Finding::problem(
            CHECK,
            format!(
                "the relay entries in {} say --unreachable allow: while hookd is not running, \
                 their hooks are skipped and every call goes through",
                allowing.join(", ")
            ),
            "remove `--unreachable allow` from those entries (`hookctl sync` rewrites them): the \
             default runs the hooks without the daemon",
        ));
    }
    let env_allow = std::env::var(crate::relay::UNREACHABLE_ENV_VAR)
        .is_ok_and(|value| value.trim().eq_ignore_ascii_case("allow"));
    if env_allow {
        findings.push(Finding::problem(
            CHECK,
            format!(
                "{}=allow in this environment: a relay started from it skips every hook while \
                 hookd is not running",
                crate::relay::UNREACHABLE_ENV_VAR
            ),
            format!(
                "unset {} (the default runs the hooks without the daemon)",
                crate::relay::UNREACHABLE_ENV_VAR
            ),
        ));
    }
    if !daemon_up && !installed.is_empty() {
        let relays: Vec<PathBuf> = installed
            .iter()
            .flat_map(|install| install.commands.iter())
            .filter_map(|command| relay_program(command))
            .filter_map(|program| find_program(&program))
            .collect();
        let engine = relays.iter().find_map(|relay| engine_for(relay));
        let hosts: Vec<&str> = installed
            .iter()
            .map(|install| install.description.as_str())
            .collect();
        match engine {
            Some(engine) => findings.push(Finding::problem(
                CHECK,
                format!(
                    "moved guards while no daemon runs ({}): each relayed event runs its hooks \
                     in a one-shot engine ({} --oneshot), so they still decide, at the cost of a \
                     process per event",
                    hosts.join("; "),
                    engine.display()
                ),
                "start hookd (`hookd &`, or `hookctl service install`)",
            )),
            None => findings.push(Finding::problem(
                CHECK,
                format!(
                    "moved guards while no daemon runs ({}), and no hookd beside the relay or \
                     on PATH to run them: every relayed event is blocked",
                    hosts.join("; ")
                ),
                "install hookd next to hookd-relay (`cargo install --locked --path crates/hookd`) \
                 and start it",
            )),
        }
    }
    let Some(state_dir) = crate::relay::state_dir(|name| std::env::var_os(name)) else {
        return;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let since = crate::relay::utc_timestamp(now.saturating_sub(RECENT_SECONDS));
    let recent = RecentFallbacks::read(&log_lines(&state_dir), &since);
    if recent.total() == 0 {
        findings.push(Finding::ok(
            CHECK,
            "no fallbacks taken in the last day (the relay's log)",
        ));
        return;
    }
    let log = state_dir.join(crate::relay::LOG_FILE);
    let summary = format!(
        "fallbacks taken recently, in {} minute(s) of the last day ({}): hooks run by the \
         one-shot engine {}, decided by failure policies {}, blocked with no engine {}, \
         allowed without hooks {}; the latest: {}",
        recent.total(),
        log.display(),
        recent.ran,
        recent.planned,
        recent.blocked,
        recent.allowed,
        recent.last.as_deref().unwrap_or_default()
    );
    if recent.blocked + recent.allowed > 0 {
        findings.push(Finding::problem(
            CHECK,
            summary,
            "keep hookd running, with hookd installed beside hookd-relay, and no \
             `--unreachable allow`",
        ));
    } else {
        findings.push(Finding::note(CHECK, summary));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_of_the_last_day_is_counted_by_kind() {
        let lines: Vec<String> = [
            "2026-11-26T10:00:00Z hookctl relay: gemini BeforeTool: x; ran the hooks with hookd --oneshot",
            "2026-11-27T10:00:00Z hookctl relay: gemini BeforeTool: x; ran the hooks with hookd --oneshot",
            "2026-11-27T10:01:00Z hookctl relay: claude PreToolUse: x; decided by the hooks' failure policies (hookd --oneshot --plan-only)",
            "2026-11-27T10:02:00Z hookctl relay: claude PreToolUse: x, and y; blocking: no engine could decide",
            "2026-11-27T10:03:00Z hookctl relay: gemini AfterTool: x; allowing without hooks (--unreachable allow)",
            "2026-11-27T10:04:00Z hookctl relay: gemini AfterTool: x; denying (--unreachable deny)",
            "garbage",
            "",
        ]
        .iter()
        .map(|line| (*line).to_owned())
        .collect();
        let recent = RecentFallbacks::read(&lines, "2026-11-27T00:00:00Z");
        assert_eq!(
            (recent.ran, recent.planned, recent.blocked, recent.allowed),
            (1, 1, 1, 1)
        );
        assert!(
            recent
                .last
                .as_deref()
                .is_some_and(|line| line.contains("allowing without hooks")),
            "{recent:?}"
        );
        assert_eq!(
            RecentFallbacks::read(&lines, "2026-11-28T00:00:00Z"),
            RecentFallbacks::default()
        );
    }
}
