//! Settings and registry: the files hooks come from and the registry built from them.
//!
//! - Reading settings layers ([`parse`], whose items are re-exported here:
//!   `settings::parse_settings`, ...), JSON with comments ([`jsonc`]) and editing it in place
//!   ([`edit`]), Gemini CLI extensions ([`extension`]) and the bounds a file must keep
//!   ([`limits`]).
//! - The registry of every loaded hook and the plan for an event ([`registry`]), and which
//!   hooks a relaying host runs itself ([`relayed`]).
//! - Project-hook trust: what a key covers and the store of trusted keys ([`trust`]).
//!
//! This room imports from [`crate::hookenv`], [`crate::semantics`] and [`crate::dialect`].

pub mod edit;
pub mod extension;
pub mod jsonc;
pub mod limits;
pub mod parse;
pub mod registry;
pub mod relayed;
pub mod trust;

pub use parse::*;
