//! The I/O side of hookd's engine.
//!
//! `hookd-core` decides what happens when a hook event fires; this crate does the parts that
//! touch the outside world: reading settings files from disk and running hook processes.
//! [`process`] runs one command in its own process group with bounded output and a timeout
//! that always bounds latency (hookd's hard timeouts and output caps), started by [`spawn`]; [`worker`] keeps persistent workers that
//! answer one JSON line per event; [`prewarm`] keeps one-shot hooks' next process started
//! ahead of their event; [`fire`] runs a whole plan for one firing, in parallel or
//! sequentially with chaining, under a daemon-wide cap on concurrently running hook processes
//! (which idle workers and spares count against, and give back under pressure: `slots`);
//! [`verify`] reads and hashes what a project hook's trust key covers and runs the verified
//! bytes of its scripts.

pub mod breakers;
pub mod configfile;
mod direct;
pub mod fire;
pub mod loader;
pub mod prewarm;
pub mod process;
pub mod shares;
mod slots;
pub mod spawn;
pub mod sysfile;
pub mod verify;
pub mod worker;
