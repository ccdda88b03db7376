//! The I/O side of hookd's engine.
//!
//! `hookd-core` decides what happens when a hook event fires, `hookd-settings` reads the
//! settings it decides from; this crate runs the hook processes.
//! [`process`] runs one command in its own process group with bounded output and a timeout
//! that always bounds latency (hookd's hard timeouts and output caps), started by [`spawn`]; [`worker`] keeps persistent workers that
//! answer one JSON line per event; [`prewarm`] keeps one-shot hooks' next process started
//! ahead of their event; [`fire`] runs a whole plan for one firing, in parallel or
//! sequentially with chaining, under a daemon-wide cap on concurrently running hook processes
//! (which idle workers and spares count against, and give back under pressure: `slots`),
//! running the verified bytes of project hooks' scripts (`hookd_settings::verify`).

pub mod breakers;
mod direct;
pub mod fire;
pub mod prewarm;
pub mod process;
pub mod shares;
mod slots;
pub mod spawn;
pub mod worker;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The modules in their order: a module may import only from the modules before it.
    const LAYERS: [&str; 9] = [
        "spawn", "process", "direct", "breakers", "shares", "slots", "worker", "prewarm", "fire",
    ];

    /// Every `crate::` path outside tests and comments in each module leads to an earlier
    /// module (so the modules import no circle), and every module has its place in [`LAYERS`].
    #[test]
    fn modules_import_only_from_earlier_modules() {
        hookd_testkit::imports::check_module_order(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &LAYERS,
            10,
        );
    }
}
