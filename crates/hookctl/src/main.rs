//! `hookctl`: parses arguments and hands them to [`hookctl::run`] (or, for `hookctl relay`,
//! to [`hookctl::relay::run`]).

use clap::Parser;

fn main() -> std::process::ExitCode {
    // `hookctl relay` runs once per hook event: its arguments are read by hand, without
    // building clap's parser.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(relay) = hookctl::relay::RelayArgs::from_args(&args) {
        return hookctl::relay::run(&relay);
    }
    hookctl::run(hookctl::Cli::parse())
}
