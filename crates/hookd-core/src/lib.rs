//! The pure hook engine of hookd.
//!
//! Everything that decides *what* happens when an agent CLI fires a hook event lives here:
//! parsing and merging settings layers, the registry with its three hook identities, matchers,
//! planning, the stdin payload, command-string expansion, interpreting a hook's exit code and
//! output, sequential chaining and per-event aggregation, and every host's dialect. It follows
//! Gemini CLI's behaviour (`gemini-hooks-semantics.md`) except where hookd deliberately
//! departs (documented in `docs/`).
//!
//! This crate performs no I/O: it never reads a file, a clock or the environment, and never
//! spawns a process. Callers pass file contents, environments and timestamps in. That keeps
//! every rule testable by tables and makes the daemon's behaviour reproducible.
//!
//! # Rooms
//!
//! The crate is four rooms; each imports only from the rooms listed before it:
//!
//! 1. [`hookenv`], the hook environment: command lines (shell words, expansion), the
//!    variables a hook runs with, and how text from settings is made safe to pass on.
//! 2. [`semantics`], the event semantics: what a hook is ([`model`], its keys, its failure
//!    policy and trust), the events, matchers, the stdin payload, what a run's exit code and
//!    output mean, failure policies, chaining and aggregation.
//! 3. [`dialect`], the dialects: each host CLI behind one interface
//!    ([`dialect::Host`], in three parts by user), and the `if` conditions of Claude Code's permission-rule
//!    syntax.
//! 4. [`settings`], settings and registry: settings files (JSONC, editing, extensions,
//!    limits), the registry that plans each event, which hooks a relaying host runs itself,
//!    and project-hook trust.
//!
//! The modules are also re-exported here by name (`hookd_core::model`, ...), so a path says
//! what a thing is without spelling the room.

pub mod dialect;
pub mod hookenv;
pub mod semantics;
pub mod settings;

pub use dialect::condition;
pub use hookenv::{command, env, envexpand, sanitize};
pub use semantics::{
    aggregate, breaker, chain, event, exec, failure, hooktrust, json, jsregex, matcher, model,
    output, payload, plan, policy, redact, result,
};
pub use settings::{edit, extension, jsonc, limits, registry, relayed, trust};

pub use event::{HookEventName, HostEvent, HostEventSpec, MatcherKind, MergeStrategy};
pub use model::{DEFAULT_TIMEOUT_MS, HookConfig, HookEntry, HookType, LayerFile, Origin, Source};
pub use plan::Plan;
pub use result::{HookOutcome, HookResult, HookRun, OutputFormat, SpawnCause, StreamName};

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The rooms in their order: a room may import only from the rooms before it.
    const ROOMS: [&str; 4] = ["hookenv", "semantics", "dialect", "settings"];

    /// The room a `crate::NAME` path leads to: a room itself, or a module re-exported here.
    fn room_of(name: &str) -> Option<&'static str> {
        let known: [(&str, &[&str]); 4] = [
            ("hookenv", &["command", "env", "envexpand", "sanitize"]),
            (
                "semantics",
                &[
                    "aggregate",
                    "chain",
                    "event",
                    "exec",
                    "failure",
                    "hooktrust",
                    "json",
                    "jsregex",
                    "matcher",
                    "model",
                    "output",
                    "payload",
                    "plan",
                    "policy",
                    "redact",
                    "result",
                ],
            ),
            ("dialect", &["condition"]),
            (
                "settings",
                &[
                    "edit",
                    "extension",
                    "jsonc",
                    "limits",
                    "registry",
                    "relayed",
                    "trust",
                ],
            ),
        ];
        if let Some(room) = ROOMS.iter().find(|room| **room == name) {
            return Some(room);
        }
        known
            .iter()
            .find(|(_, modules)| modules.contains(&name))
            .map(|(room, _)| *room)
    }

    fn sources(dir: &Path, into: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("source dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                sources(&path, into);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).expect("source");
                into.push((path.display().to_string(), text));
            }
        }
    }

    /// Every `crate::` path outside tests and comments in each room leads to that room or an
    /// earlier one, so the rooms (and the modules in them) import no circle.
    #[test]
    fn rooms_import_only_from_earlier_rooms() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut checked = 0;
        for (index, room) in ROOMS.iter().enumerate() {
            let mut files = Vec::new();
            sources(&src.join(room), &mut files);
            assert!(!files.is_empty(), "{room} has no sources");
            for (path, text) in files {
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                for line in code.lines() {
                    let line = line.split("//").next().unwrap_or("");
                    for (at, _) in line.match_indices("crate::") {
                        let name: String = line[at + "crate::".len()..]
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                            .collect();
                        let Some(target) = room_of(&name) else {
                            continue;
                        };
                        let target_index = ROOMS.iter().position(|r| *r == target);
                        assert!(
                            target_index <= Some(index),
                            "{path}: the {room} room imports crate::{name} from the later \
                             {target} room"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100, "only {checked} imports found");
    }
}
