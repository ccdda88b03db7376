//! `hookctl` as the end-to-end tests run it: the same entry points as `crates/hookctl`'s
//! `main`, built as a binary of this package so the tests have its path.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(relay) = hookctl::relay::RelayArgs::from_args(&args) {
        return hookctl::relay::run(&relay);
    }
    hookctl::run(hookctl::Cli::parse())
}
