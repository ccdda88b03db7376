//! `hookd-relay EVENT [--dialect HOST] [--unreachable allow|deny] [--socket PATH]`:
//! `hookctl relay` as a binary of its own, for measuring what the relay path costs without
//! the rest of `hookctl` (the same code: [`hookctl::relay::run`]). `hookd-relay --version`
//! prints its version.

use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut given = std::env::args_os().skip(1);
    if let (Some(only), None) = (given.next(), given.next())
        && (only == "--version" || only == "-V")
    {
        // Never an event name: hosts' events are words, and `hookctl doctor` asks this to
        // compare the relay with the daemon and hookctl.
        println!("hookd-relay {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
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
