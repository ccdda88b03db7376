//! `hookctl relay` as the end-to-end tests run it, the way a host CLI runs a command hook: a
//! process of its own with the event's JSON on stdin (the same code as `hookctl relay` and
//! `hookd-relay`: [`hookctl::relay::run`]), so a test can time it and kill it as a host does.

use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::iter::once(OsString::from("relay"))
        .chain(std::env::args_os().skip(1))
        .collect();
    match hookctl::relay::RelayArgs::from_args(&args) {
        Some(relay) => hookctl::relay::run(&relay),
        None => {
            eprintln!("usage: {}", hookctl::relay::USAGE);
            ExitCode::from(2)
        }
    }
}
