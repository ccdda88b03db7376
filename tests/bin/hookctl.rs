//! `hookctl` as the end-to-end tests run it: the same entry point as `crates/hookctl`'s
//! `main` ([`hookctl::main_entry`]), built as a binary of this package so the tests have its
//! path.

fn main() -> std::process::ExitCode {
    hookctl::main_entry()
}
