//! The environment a hook process gets (spec §4.3) and the default plans directory.
//!
//! The environment is the base environment the caller passes in (the client's environment
//! when it sent one, else the daemon's) less what secret redaction removes from it
//! ([`crate::sanitize`]: off unless the settings enable it or the base environment is GitHub
//! Actions') and less the variables other hosts set for their hooks, then the variables the
//! hook's own host sets for every hook ([`HostVariables`], given by the hook's dialect: Gemini
//! CLI's five, Claude Code's `CLAUDE_PROJECT_DIR`, none for Codex CLI), then the hook's own
//! `env` entries; a later entry overrides an earlier one with the same name. The variables
//! systemd hands to the daemon for socket activation and the watchdog are always removed: they
//! describe the daemon's own process and would mislead a hook.
//!
//! The default plans directory is `<home>/.gemini/tmp/<projectId>/<sessionId>/plans`. In
//! Gemini CLI `<projectId>` is not a pure function of the path: it is a short slug kept in
//! `<home>/.gemini/projects.json` (mapping the resolved project path to its slug), verified
//! against `.project_root` marker files on disk, and a new project claims the slug of its
//! directory name, suffixed `-1`, `-2`, ... on collision. The helpers here cover the pure
//! parts: looking a path up in the registry's contents, and the first-choice slug for a path
//! that is not registered yet. A caller that cannot read the registry, or whose project would
//! have collided with another's slug, gets a directory that differs from Gemini CLI's.

use serde_json::Value;

use crate::command::CommandVars;
use crate::sanitize::{self, EnvRedaction};

/// The variable hooks find their session state token in (`docs/state.md`): the daemon sets it
/// for every hook of a session that has one, and checks it on the session's state writes.
pub const STATE_TOKEN_ENV_VAR: &str = "HOOKD_STATE_TOKEN";

/// Variables systemd sets for the daemon itself; never passed to hooks.
pub const SYSTEMD_VARIABLES: [&str; 6] = [
    "LISTEN_PID",
    "LISTEN_FDS",
    "LISTEN_FDNAMES",
    "NOTIFY_SOCKET",
    "WATCHDOG_PID",
    "WATCHDOG_USEC",
];

/// The variables a host sets for each of its hooks, as the hook's dialect gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostVariables<'a> {
    /// Set for the hook, in the host's order (`GEMINI_PROJECT_DIR`, ...).
    pub set: &'a [(&'static str, &'a str)],
    /// Removed from the base environment: what other hosts set for their hooks and this one
    /// does not, so a hook never sees another host's variables (a relayed event's base is the
    /// relaying host's hook environment).
    pub foreign: &'a [&'static str],
}

/// Gemini CLI's variables for every hook, in its order: `GEMINI_PROJECT_DIR`,
/// `GEMINI_PLANS_DIR`, `GEMINI_CWD`, `GEMINI_SESSION_ID` and, "for compatibility",
/// `CLAUDE_PROJECT_DIR` (Gemini CLI 0.61's hook runner).
pub fn gemini_variables<'a>(vars: &CommandVars<'a>) -> [(&'static str, &'a str); 5] {
    [
        ("GEMINI_PROJECT_DIR", vars.project_dir),
        ("GEMINI_PLANS_DIR", vars.plans_dir),
        ("GEMINI_CWD", vars.project_dir),
        ("GEMINI_SESSION_ID", vars.session_id),
        ("CLAUDE_PROJECT_DIR", vars.project_dir),
    ]
}

/// Builds a hook's environment: `base` less what `redaction` removes from it and less
/// `host.foreign`, then `host.set`, then `hook_env`.
///
/// A name set again keeps the position of its first occurrence and takes the later value, as
/// JavaScript object spreading does; the result has no duplicate names. The systemd
/// variables ([`SYSTEMD_VARIABLES`]) are removed whichever layer set them.
pub fn hook_environment(
    base: &[(String, String)],
    redaction: &EnvRedaction,
    host: &HostVariables<'_>,
    hook_env: &[(String, String)],
) -> Vec<(String, String)> {
    let layers = sanitize::kept(base, redaction)
        .filter(|(name, _)| !host.foreign.contains(&name.as_str()))
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .chain(host.set.iter().copied())
        .chain(
            hook_env
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );

    let mut env: Vec<(String, String)> =
        Vec::with_capacity(base.len() + host.set.len() + hook_env.len());
    for (name, value) in layers {
        if SYSTEMD_VARIABLES.contains(&name) {
            continue;
        }
        match env.iter_mut().find(|(existing, _)| existing == name) {
            Some(entry) => value.clone_into(&mut entry.1),
            None => env.push((name.to_owned(), value.to_owned())),
        }
    }
    env
}

/// The default plans directory `<home>/.gemini/tmp/<project_id>/<session_id>/plans`.
///
/// An empty session id is left out, as Gemini CLI does when it has none.
pub fn default_plans_dir(home: &str, project_id: &str, session_id: &str) -> String {
    let mut dir = home.trim_end_matches('/').to_owned();
    for segment in [".gemini", "tmp", project_id, session_id, "plans"] {
        if !segment.is_empty() {
            dir.push('/');
            dir.push_str(segment);
        }
    }
    dir
}

/// Looks `project_root` up in the contents of Gemini CLI's `<home>/.gemini/projects.json`
/// (`{"projects": {"<resolved path>": "<slug>"}}`).
///
/// The path is resolved lexically first ([`resolve_path`]), as Gemini CLI keys the registry.
/// Returns `None` when the contents are not valid JSON, have no entry for the path, or the
/// entry is not a non-empty string. Gemini CLI also checks the slug's `.project_root` marker
/// files before trusting an entry; that needs the file system and is the caller's business.
pub fn project_id_from_registry(registry_json: &str, project_root: &str) -> Option<String> {
    let registry: Value = serde_json::from_str(registry_json).ok()?;
    let slug = registry
        .get("projects")?
        .get(resolve_path(project_root).as_str())?
        .as_str()?;
    (!slug.is_empty()).then(|| slug.to_owned())
}

/// The slug Gemini CLI first tries for a project that is not in its registry: the resolved
/// path's last component, lower-cased, every run of characters outside `[a-z0-9]` turned into
/// one `-`, leading and trailing `-` removed; `project` if nothing is left.
pub fn project_slug(project_root: &str) -> String {
    let resolved = resolve_path(project_root);
    let base_name = resolved.rsplit('/').next().unwrap_or("");
    let mut slug = String::with_capacity(base_name.len());
    for c in base_name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_matches('-');
    if slug.is_empty() {
        "project".to_owned()
    } else {
        slug.to_owned()
    }
}

/// Resolves a POSIX path lexically, like Node's `path.resolve` on an absolute path: repeated
/// slashes collapse, `.` segments vanish, `..` removes the previous segment (never above the
/// root) and a trailing slash is dropped. A relative path is treated as relative to `/`,
/// because the core has no working directory to resolve against.
pub fn resolve_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    format!("/{}", segments.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sanitize::tests::pairs;

    const VARS: CommandVars<'static> = CommandVars {
        project_dir: "/w",
        plans_dir: "/p",
        session_id: "s",
    };

    fn gemini_host<'a>(set: &'a [(&'static str, &'a str)]) -> HostVariables<'a> {
        HostVariables { set, foreign: &[] }
    }

    fn check_env(base: &[(&str, &str)], hook_env: &[(&str, &str)], expected: &[(&str, &str)]) {
        let set = gemini_variables(&VARS);
        assert_eq!(
            hook_environment(
                &pairs(base),
                &EnvRedaction::default(),
                &gemini_host(&set),
                &pairs(hook_env)
            ),
            pairs(expected),
            "base {base:?}, hook env {hook_env:?}"
        );
    }

    #[test]
    fn environment_layers_override_in_order() {
        let gemini = [
            ("GEMINI_PROJECT_DIR", "/w"),
            ("GEMINI_PLANS_DIR", "/p"),
            ("GEMINI_CWD", "/w"),
            ("GEMINI_SESSION_ID", "s"),
            ("CLAUDE_PROJECT_DIR", "/w"),
        ];
        let with = |prefix: &[(&'static str, &'static str)],
                    suffix: &[(&'static str, &'static str)]| {
            let mut all = prefix.to_vec();
            all.extend_from_slice(&gemini);
            all.extend_from_slice(suffix);
            all
        };

        // Empty base and hook env: only the five variables.
        check_env(&[], &[], &gemini);
        // Base variables come first and are kept.
        check_env(
            &[("PATH", "/bin"), ("HOME", "/h")],
            &[],
            &with(&[("PATH", "/bin"), ("HOME", "/h")], &[]),
        );
        // The Gemini variables override a base value in place.
        check_env(
            &[("GEMINI_CWD", "/old"), ("A", "1")],
            &[],
            &[
                ("GEMINI_CWD", "/w"),
                ("A", "1"),
                ("GEMINI_PROJECT_DIR", "/w"),
                ("GEMINI_PLANS_DIR", "/p"),
                ("GEMINI_SESSION_ID", "s"),
                ("CLAUDE_PROJECT_DIR", "/w"),
            ],
        );
        // hook.env overrides everything, and adds new names at the end.
        check_env(
            &[("A", "1")],
            &[("GEMINI_SESSION_ID", "mine"), ("A", "2"), ("B", "3")],
            &[
                ("A", "2"),
                ("GEMINI_PROJECT_DIR", "/w"),
                ("GEMINI_PLANS_DIR", "/p"),
                ("GEMINI_CWD", "/w"),
                ("GEMINI_SESSION_ID", "mine"),
                ("CLAUDE_PROJECT_DIR", "/w"),
                ("B", "3"),
            ],
        );
        // Duplicates in the base collapse to one entry with the last value.
        check_env(&[("A", "1"), ("A", "2")], &[], &with(&[("A", "2")], &[]));
        // systemd's variables never reach a hook, from any layer.
        check_env(
            &[
                ("LISTEN_PID", "1"),
                ("LISTEN_FDS", "1"),
                ("LISTEN_FDNAMES", "x"),
                ("NOTIFY_SOCKET", "/run/n"),
                ("WATCHDOG_PID", "1"),
                ("WATCHDOG_USEC", "1"),
                ("KEEP", "k"),
            ],
            &[("NOTIFY_SOCKET", "/x")],
            &with(&[("KEEP", "k")], &[]),
        );
    }

    #[test]
    fn foreign_variables_leave_the_base_but_not_the_hooks_own_env() {
        // (base, set, foreign, hook env, expected)
        type Pairs = &'static [(&'static str, &'static str)];
        let cases: [(Pairs, Pairs, &[&str], Pairs, Pairs); 4] = [
            // A Claude hook relayed by Gemini CLI: Gemini's variables go, Claude's stays.
            (
                &[
                    ("PATH", "/bin"),
                    ("GEMINI_CWD", "/w"),
                    ("GEMINI_SESSION_ID", "s"),
                    ("CLAUDE_PROJECT_DIR", "/w"),
                ],
                &[("CLAUDE_PROJECT_DIR", "/w")],
                &[
                    "GEMINI_PROJECT_DIR",
                    "GEMINI_PLANS_DIR",
                    "GEMINI_CWD",
                    "GEMINI_SESSION_ID",
                ],
                &[],
                &[("PATH", "/bin"), ("CLAUDE_PROJECT_DIR", "/w")],
            ),
            // A Codex hook: nothing of its own, every other host's variable removed.
            (
                &[
                    ("CLAUDE_PROJECT_DIR", "/w"),
                    ("CLAUDECODE", "1"),
                    ("HOME", "/h"),
                ],
                &[],
                &["CLAUDE_PROJECT_DIR", "GEMINI_CWD"],
                &[],
                &[("CLAUDECODE", "1"), ("HOME", "/h")],
            ),
            // The hook's own env may set any name, a foreign one included.
            (
                &[("GEMINI_CWD", "/x")],
                &[],
                &["GEMINI_CWD"],
                &[("GEMINI_CWD", "mine")],
                &[("GEMINI_CWD", "mine")],
            ),
            // Nothing foreign: the base passes.
            (&[("A", "1")], &[], &[], &[], &[("A", "1")]),
        ];
        for (base, set, foreign, hook_env, expected) in cases {
            let host = HostVariables { set, foreign };
            assert_eq!(
                hook_environment(
                    &pairs(base),
                    &EnvRedaction::default(),
                    &host,
                    &pairs(hook_env)
                ),
                pairs(expected),
                "{base:?} {set:?} {foreign:?}"
            );
        }
    }

    #[test]
    fn default_plans_dir_joins_segments() {
        let cases = [
            ("/home/u", "proj", "s1", "/home/u/.gemini/tmp/proj/s1/plans"),
            (
                "/home/u/",
                "proj",
                "s1",
                "/home/u/.gemini/tmp/proj/s1/plans",
            ),
            ("/home/u", "proj", "", "/home/u/.gemini/tmp/proj/plans"),
        ];
        for (home, project_id, session_id, expected) in cases {
            assert_eq!(default_plans_dir(home, project_id, session_id), expected);
        }
    }

    #[test]
    fn project_slug_follows_gemini_slugify() {
        let cases = [
            ("/home/u/My Project", "my-project"),
            ("/home/u/hookd/", "hookd"),
            ("/home/u/a__b--c", "a-b-c"),
            ("/home/u/--x--", "x"),
            ("/home/u/Café.v2", "caf-v2"),
            ("/home/u/日本", "project"),
            ("/", "project"),
            ("/home/u/proj/./sub/..", "proj"),
        ];
        for (path, expected) in cases {
            assert_eq!(project_slug(path), expected, "{path:?}");
        }
    }

    #[test]
    fn registry_lookup_uses_resolved_path() {
        let registry = r#"{"projects": {"/home/u/proj": "proj-1", "/home/u/empty": "", "/n": 3}}"#;
        let cases = [
            ("/home/u/proj", Some("proj-1")),
            ("/home/u/proj/", Some("proj-1")),
            ("/home/u//x/../proj", Some("proj-1")),
            ("/home/u/other", None),
            ("/home/u/empty", None),
            ("/n", None),
        ];
        for (path, expected) in cases {
            assert_eq!(
                project_id_from_registry(registry, path).as_deref(),
                expected,
                "{path:?}"
            );
        }
        assert_eq!(project_id_from_registry("not json", "/home/u/proj"), None);
        assert_eq!(project_id_from_registry("{}", "/home/u/proj"), None);
    }

    #[test]
    fn resolve_path_is_lexical() {
        let cases = [
            ("/a/b/", "/a/b"),
            ("//a///b", "/a/b"),
            ("/a/./b/../c", "/a/c"),
            ("/../..", "/"),
            ("/", "/"),
            ("rel/x", "/rel/x"),
        ];
        for (path, expected) in cases {
            assert_eq!(resolve_path(path), expected, "{path:?}");
        }
    }

    #[test]
    fn redaction_filters_only_the_base_environment() {
        let set = gemini_variables(&VARS);
        let host = gemini_host(&set);
        let base = pairs(&[
            ("PATH", "/bin"),
            ("GITHUB_SHA", "abc"),
            ("API_TOKEN", "t"),
            ("EDITOR", "vim"),
        ]);
        let hook_env = pairs(&[("API_TOKEN", "the hook's own"), ("OTHER_SECRET", "kept")]);
        let redaction = EnvRedaction {
            enabled: false,
            allowed: vec!["editor".to_owned()],
            blocked: Vec::new(),
        };
        // Strict (GITHUB_SHA in the base): the base keeps PATH and the allowed EDITOR only;
        // the Gemini variables and the hook's own entries are added whole.
        assert_eq!(
            hook_environment(&base, &redaction, &host, &hook_env),
            pairs(&[
                ("PATH", "/bin"),
                ("EDITOR", "vim"),
                ("GEMINI_PROJECT_DIR", "/w"),
                ("GEMINI_PLANS_DIR", "/p"),
                ("GEMINI_CWD", "/w"),
                ("GEMINI_SESSION_ID", "s"),
                ("CLAUDE_PROJECT_DIR", "/w"),
                ("API_TOKEN", "the hook's own"),
                ("OTHER_SECRET", "kept"),
            ])
        );
        // Neither enabled nor strict: the base passes whole.
        let base: Vec<_> = base
            .into_iter()
            .filter(|(name, _)| name != "GITHUB_SHA")
            .collect();
        let env = hook_environment(&base, &redaction, &host, &[]);
        assert_eq!(env[..3], base[..]);
    }
}
