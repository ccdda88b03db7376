//! Room 2, recording: what the daemon keeps and tells about each finished run.
//!
//! The audit log and its writer thread ([`audit`]), the counters behind `stats`
//! ([`runstats`]), the log lines of runs and streams ([`story`]), the OpenTelemetry export
//! ([`telemetry`], sending with [`otlphttp`]), and the one handle every run is recorded
//! through ([`recorder::Recorder`]).

pub(crate) mod audit;
pub(crate) mod otlphttp;
pub(crate) mod recorder;
pub(crate) mod runstats;
pub(crate) mod story;
pub(crate) mod telemetry;
