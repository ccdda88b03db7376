//! The event semantics: what a hook is and what an event means for it.
//!
//! - What a hook is: [`model`] (hook entries, their sources and identities), [`exec`] (hookd's
//!   own execution keys), [`failure`] (the `on_failure` policy and the ways a run fails),
//!   [`hooktrust`] (the trust a project hook carries) and [`redact`] (the built-in redact hook).
//! - What an event is: [`event`] (names, matcher fields, merge strategies), [`matcher`] and
//!   [`jsregex`] (which hooks an event selects), [`plan`] (the order they run in) and
//!   [`payload`] with [`json`] (the object on the hook's stdin).
//! - When a hook rests: [`breaker`] (the circuit breaker's pure state machine).
//! - What a run means: [`result`] (a run and its record), [`output`] (exit code and output by
//!   Gemini CLI's rules), [`policy`] (what a failure decides), [`chain`] (sequential hooks)
//!   and [`aggregate`] (merging every hook's answer).
//!
//! This room imports only from [`crate::hookenv`].

pub mod aggregate;
pub mod breaker;
pub mod chain;
pub mod event;
pub mod exec;
pub mod failure;
pub mod hooktrust;
pub mod json;
pub mod jsregex;
pub mod matcher;
pub mod model;
pub mod output;
pub mod payload;
pub mod plan;
pub mod policy;
pub mod redact;
pub mod result;
