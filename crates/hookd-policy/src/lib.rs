//! Policy hooks: guards written as Rego policies and evaluated by hookd, with no process
//! started per call and one policy for every agent CLI.
//!
//! - [`input`]: the host-neutral input a policy reads (the tool's kind, command, paths and
//!   URL, the project, the session, the host) beside hookd's payload;
//! - [`decision`]: the rules a policy defines (`deny`, `ask`, `context`, `tool_input`) and
//!   the hook answer they become;
//! - [`policy`]: compiling a policy's files once per version and evaluating it with a time
//!   limit, and running its `test_*` rules;
//! - [`files`]: reading those files safely (regular files only, capped);
//! - [`worker`]: the evaluator's loop, run by hookd as a persistent worker of its own binary.
//!
//! docs/policies.md is the reference for policy authors.

pub mod decision;
pub mod files;
pub mod input;
pub mod policy;
pub mod worker;

pub use decision::Decision;
pub use input::{Context, policy_input};
pub use policy::{Policy, PolicyError, Sources, TestOutcome};
pub use worker::{WorkerSpec, serve};
