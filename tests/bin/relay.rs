//! `hookctl relay` as the end-to-end tests run it, the way a host CLI runs a command hook: a
//! process of its own with the event's JSON on stdin (the same code as `hookctl relay` and
//! `hookd-relay`: [`hookctl::relay::run`]), so a test can time it and kill it as a host does.

use std::process::ExitCode;

fn main() -> ExitCode {
    hookctl::relay::relay_binary_main("e2e-relay")
}
