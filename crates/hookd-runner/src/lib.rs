//! The I/O side of hookd's engine.
//!
//! `hookd-core` decides what happens when a hook event fires; this crate does the parts that
//! touch the outside world: reading settings files from disk and running hook processes.
//! [`process`] runs one command in its own process group with bounded output and a timeout
//! that always bounds latency (decisions D2 and D3); [`fire`] runs a whole plan for one
//! firing, in parallel or sequentially with chaining, under a daemon-wide cap on concurrently
//! running hook processes.

pub mod fire;
pub mod loader;
pub mod process;
