//! `hookctl`: parses arguments and hands them to [`hookctl::run`].

use clap::Parser;

fn main() -> std::process::ExitCode {
    hookctl::run(hookctl::Cli::parse())
}
