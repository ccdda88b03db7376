//! The `hookd` binary's integration tests in one binary (one link instead of seven): each
//! test runs the real daemon as a child process, so they share nothing in this process.

// Test fixtures may unwrap: a failure here is a failed test, not a bug of the tool.
#![allow(clippy::unwrap_used)]

mod cli;
mod graceful_stop;
mod http;
mod inherited_signals;
mod logs;
mod policy;
mod socket_and_limits;
mod state_memory;
mod systemd;
mod wire;
