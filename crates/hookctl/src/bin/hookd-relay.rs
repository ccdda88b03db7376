//! `hookd-relay EVENT [--dialect HOST] [--unreachable allow|deny] [--socket PATH]`:
//! `hookctl relay` as a binary of its own, for measuring what the relay path costs without
//! the rest of `hookctl` (the same code: [`hookctl::relay::run`]).

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
