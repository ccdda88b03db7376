//! hookctl's integration tests in one binary (one link instead of thirteen): the real
//! `hookctl` binary against a daemon of the test kit, one module per area.

// Test fixtures may unwrap: a failure here is a failed test, not a bug of the tool.
#![allow(clippy::unwrap_used)]

mod cli;
mod codex_install;
mod common;
mod copilot_events;
mod doctor;
mod http_install;
mod install;
mod manage;
mod migrate;
mod polish;
mod relay;
mod replay;
mod squatted_socket;
mod stats;
mod trust;
mod write_once;
