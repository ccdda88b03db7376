//! The project root (and hook environment) of events that arrive over HTTP.
//!
//! A host's HTTP hook posts only the event's JSON: no environment, and a `cwd` the model moves
//! with `cd`. Claude Code never posts `SessionStart` over HTTP, so that event stays a command
//! relay, which sends the host's project root (`CLAUDE_PROJECT_DIR`) and its hook environment;
//! the daemon keeps them here per `(host, session_id)` ([`SessionRoots::record`]) and the HTTP
//! events of the session use them ([`SessionRoots::get`]). The table is bounded in entries and
//! bytes, the oldest entry evicted first.
//!
//! A session missing from the table (the daemon restarted mid-session, the entry evicted) gets
//! its root from the transcript path, which the host fixes for the session: Claude Code keeps
//! it at `.../projects/<slug>/<session>.jsonl`, where the slug is the session's original
//! directory with every character that is not an ASCII letter or digit turned into `-`. The
//! encoding loses information, so it is used to pick among candidates, never decoded: the
//! ancestor of `cwd` whose slug is `<slug>` is the root when exactly one is
//! ([`root_from_transcript`]).

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use hookd_protocol::WireEnv;

/// At most this many sessions are remembered.
pub(crate) const MAX_SESSIONS: usize = 1024;

/// At most this many bytes of roots and environments are remembered (names and values).
pub(crate) const MAX_BYTES: usize = 16 * 1024 * 1024;

/// What a session's relayed event told the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionRoot {
    /// The host's project root.
    pub(crate) project_dir: String,
    /// The host's hook environment, when the relay sent one.
    pub(crate) env: Option<Arc<WireEnv>>,
}

impl SessionRoot {
    /// The bytes the entry holds, for the table's bound.
    fn weight(&self, key: &(String, String)) -> usize {
        let env = self.env.as_ref().map_or(0, |env| {
            env.iter()
                .map(|(name, value)| name.len() + value.len() + 16)
                .sum()
        });
        key.0.len() + key.1.len() + self.project_dir.len() + env + 64
    }
}

/// The bounded table of sessions' roots.
#[derive(Debug, Default)]
pub(crate) struct SessionRoots {
    inner: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    entries: HashMap<(String, String), SessionRoot>,
    /// Keys, oldest first (a key recorded again moves to the back).
    order: VecDeque<(String, String)>,
    bytes: usize,
}

impl SessionRoots {
    /// Remembers what a relayed event of `host`'s session `session_id` said. An empty session
    /// id or an entry larger than the whole budget is not kept.
    pub(crate) fn record(&self, host: &str, session_id: &str, root: SessionRoot) {
        self.record_within(host, session_id, root, MAX_SESSIONS, MAX_BYTES);
    }

    /// [`SessionRoots::record`] with explicit bounds (for tests).
    pub(crate) fn record_within(
        &self,
        host: &str,
        session_id: &str,
        root: SessionRoot,
        max_sessions: usize,
        max_bytes: usize,
    ) {
        if session_id.is_empty() {
            return;
        }
        let key = (host.to_owned(), session_id.to_owned());
        let weight = root.weight(&key);
        if weight > max_bytes {
            return;
        }
        let mut table = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = table.entries.remove(&key) {
            table.bytes = table.bytes.saturating_sub(old.weight(&key));
            table.order.retain(|listed| listed != &key);
        }
        while !table.order.is_empty()
            && (table.entries.len() >= max_sessions || table.bytes + weight > max_bytes)
        {
            if let Some(oldest) = table.order.pop_front()
                && let Some(old) = table.entries.remove(&oldest)
            {
                table.bytes = table.bytes.saturating_sub(old.weight(&oldest));
            }
        }
        table.bytes += weight;
        table.order.push_back(key.clone());
        table.entries.insert(key, root);
    }

    /// Whether the session is known.
    pub(crate) fn contains(&self, host: &str, session_id: &str) -> bool {
        let table = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        table
            .entries
            .contains_key(&(host.to_owned(), session_id.to_owned()))
    }

    /// The root a session's relayed event recorded.
    pub(crate) fn get(&self, host: &str, session_id: &str) -> Option<SessionRoot> {
        let table = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        table
            .entries
            .get(&(host.to_owned(), session_id.to_owned()))
            .cloned()
    }

    /// How many sessions are remembered.
    pub(crate) fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .len()
    }
}

/// Claude Code's name for a project directory under `~/.claude/projects/`: every character
/// that is not an ASCII letter or digit becomes `-`.
pub(crate) fn claude_slug(dir: &str) -> String {
    dir.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The project root from the transcript path (`.../projects/<slug>/<file>`): the one ancestor
/// of `cwd` (itself included) whose [`claude_slug`] is `<slug>`; `None` when none or more
/// than one is, or either path is not absolute.
pub(crate) fn root_from_transcript(transcript_path: &str, cwd: &str) -> Option<String> {
    let transcript = Path::new(transcript_path);
    let cwd = Path::new(cwd);
    if !transcript.is_absolute() || !cwd.is_absolute() {
        return None;
    }
    let project = transcript.parent()?;
    if project.parent()?.file_name()? != "projects" {
        return None;
    }
    let slug = project.file_name()?.to_str()?;
    let mut found = cwd
        .ancestors()
        .filter_map(Path::to_str)
        .filter(|dir| claude_slug(dir) == slug);
    let first = found.next()?;
    found.next().is_none().then(|| first.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(dir: &str, env: &[(&str, &str)]) -> SessionRoot {
        SessionRoot {
            project_dir: dir.to_owned(),
            env: Some(Arc::new(
                env.iter()
                    .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                    .collect(),
            )),
        }
    }

    #[test]
    fn slug_is_claude_codes_project_name() {
        assert_eq!(claude_slug("/srv/work/proj"), "-srv-work-proj");
        assert_eq!(claude_slug("/home/a.b/my_proj"), "-home-a-b-my-proj");
    }

    #[test]
    fn root_from_transcript_picks_the_one_matching_ancestor() {
        let transcript = "/home/u/.claude/projects/-w-proj/abc.jsonl";
        for (cwd, expected) in [
            ("/w/proj", Some("/w/proj")),
            ("/w/proj/sub", Some("/w/proj")),
            ("/w/proj/sub/deeper", Some("/w/proj")),
            ("/w/other", None),
            ("/w", None),
            ("relative/proj", None),
        ] {
            assert_eq!(
                root_from_transcript(transcript, cwd).as_deref(),
                expected,
                "{cwd}"
            );
        }
        // `/w/proj` and `/w-proj` share a slug; the ancestors of one `cwd` never do (the
        // slug keeps the length), so the one on the `cwd`'s path is the root.
        assert_eq!(
            root_from_transcript("/h/.claude/projects/-w-proj/s.jsonl", "/w-proj/sub").as_deref(),
            Some("/w-proj")
        );
        assert_eq!(
            root_from_transcript("/h/elsewhere/-w-proj/s.jsonl", "/w/proj"),
            None
        );
    }

    #[test]
    fn table_keeps_the_latest_and_evicts_the_oldest() {
        let roots = SessionRoots::default();
        roots.record_within("claude", "s1", root("/p1", &[]), 2, 1 << 20);
        roots.record_within("claude", "s2", root("/p2", &[]), 2, 1 << 20);
        roots.record_within("claude", "s1", root("/p1b", &[]), 2, 1 << 20);
        roots.record_within("claude", "s3", root("/p3", &[]), 2, 1 << 20);
        assert_eq!(roots.len(), 2);
        assert!(!roots.contains("claude", "s2"), "the oldest was evicted");
        assert_eq!(roots.get("claude", "s1").unwrap().project_dir, "/p1b");
        assert_eq!(roots.get("claude", "s3").unwrap().project_dir, "/p3");
        assert!(roots.get("codex", "s3").is_none(), "hosts are apart");
        roots.record_within("claude", "", root("/p", &[]), 2, 1 << 20);
        assert_eq!(roots.len(), 2);
    }

    #[test]
    fn table_stays_within_its_bytes() {
        let roots = SessionRoots::default();
        let big = "x".repeat(400);
        for at in 0..50 {
            roots.record_within(
                "claude",
                &format!("s{at}"),
                root("/p", &[("V", &big)]),
                1000,
                2000,
            );
        }
        assert!(roots.len() <= 4, "{}", roots.len());
        assert!(roots.contains("claude", "s49"));
        let huge = "x".repeat(5000);
        roots.record_within("claude", "h", root("/p", &[("V", &huge)]), 1000, 2000);
        assert!(
            !roots.contains("claude", "h"),
            "an entry over the budget is not kept"
        );
    }
}
