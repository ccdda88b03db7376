//! `hookd-relay EVENT [--dialect HOST] [--unreachable allow|deny] [--socket PATH]`:
//! `hookctl relay` as a binary of its own, for measuring what the relay path costs without
//! the rest of `hookctl` (the same code: [`hookctl::relay::run`]). `hookd-relay --version`
//! prints its version.

use std::process::ExitCode;

fn main() -> ExitCode {
    hookctl::relay::relay_binary_main("hookd-relay")
}
