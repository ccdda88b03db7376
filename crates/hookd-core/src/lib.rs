//! The pure hook engine of hookd.
//!
//! Everything that decides *what* happens when an agent CLI fires a hook event lives here:
//! parsing and merging settings layers, the registry with its three hook identities, matchers,
//! planning, the stdin payload, command-string expansion, interpreting a hook's exit code and
//! output, sequential chaining and per-event aggregation. It follows Gemini CLI's behaviour
//! (`gemini-hooks-semantics.md`) except where hookd deliberately departs (decisions D1–D9).
//!
//! This crate performs no I/O: it never reads a file, a clock or the environment, and never
//! spawns a process. Callers pass file contents, environments and timestamps in. That keeps
//! every rule testable by tables and makes the daemon's behaviour reproducible.

pub mod aggregate;
pub mod breaker;
pub mod chain;
pub mod command;
pub mod condition;
pub mod dialect;
pub mod edit;
pub mod env;
pub mod envexpand;
pub mod event;
pub mod exec;
pub mod extension;
pub mod json;
pub mod jsonc;
pub mod jsregex;
pub mod limits;
pub mod matcher;
pub mod model;
pub mod output;
pub mod payload;
pub mod plan;
pub mod policy;
pub mod redact;
pub mod registry;
pub mod relayed;
pub mod result;
pub mod sanitize;
pub mod settings;
pub mod trust;

pub use event::{ClaudeEvent, HookEventName, MatcherKind, MergeStrategy};
pub use model::{DEFAULT_TIMEOUT_MS, HookConfig, HookEntry, HookType, LayerFile, Origin, Source};
pub use plan::Plan;
pub use result::{HookOutcome, HookResult, HookRun, OutputFormat, StreamName};
