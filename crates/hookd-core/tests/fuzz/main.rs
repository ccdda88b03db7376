//! hookd-core's property tests (the fuzz targets, run by `cargo test`) in one binary.

mod fuzz_output;
mod fuzz_redact;
mod fuzz_settings;
