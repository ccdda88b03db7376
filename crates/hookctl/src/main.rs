//! `hookctl`: [`hookctl::main_entry`] (for `hookctl relay`, arguments read by hand and
//! [`hookctl::relay::run`]; everything else parsed by clap and [`hookctl::run`]).

fn main() -> std::process::ExitCode {
    hookctl::main_entry()
}
