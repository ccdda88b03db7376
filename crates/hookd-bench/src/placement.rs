//! Where the benchmark's processes run: unpinned (the scheduler decides), or pinned across
//! cores so that every socket round trip wakes a process on the other core.
//!
//! The parent pins itself to CPU 0 and tells its helpers, through an environment variable, to
//! pin themselves to CPU 1 when they start; the daemon's hooks inherit the daemon's CPU.

use std::sync::OnceLock;

use anyhow::Context;
use nix::sched::{CpuSet, sched_setaffinity};
use nix::unistd::Pid;

/// The variable that tells a helper process which CPU to pin itself to.
const CPU_VAR: &str = "HOOKD_BENCH_CPU";

/// The placement chosen for this run, set once at start.
static PLACEMENT: OnceLock<Placement> = OnceLock::new();

#[derive(Debug, Clone, Copy)]
enum Placement {
    /// The scheduler places every process.
    Unpinned,
    /// This (parent) process is on CPU 0; helpers go to CPU 1.
    CrossCoreParent,
    /// This helper process pinned itself to the CPU its parent named.
    Helper,
}

/// Pins this process as asked: the parent when `cross_core`, a helper when its environment
/// names a CPU.
pub fn apply(cross_core: bool) -> anyhow::Result<()> {
    let placement = if let Some(cpu) = std::env::var(CPU_VAR).ok().and_then(|v| v.parse().ok()) {
        pin(cpu)?;
        Placement::Helper
    } else if cross_core {
        pin(0)?;
        Placement::CrossCoreParent
    } else {
        Placement::Unpinned
    };
    let _ = PLACEMENT.set(placement);
    Ok(())
}

/// The environment a helper process needs to pin itself.
pub fn child_env() -> Vec<(&'static str, String)> {
    match PLACEMENT.get() {
        Some(Placement::CrossCoreParent) => vec![(CPU_VAR, "1".to_owned())],
        _ => Vec::new(),
    }
}

/// A short description for the report.
pub fn describe() -> &'static str {
    match PLACEMENT.get() {
        Some(Placement::CrossCoreParent) => {
            "cross-core: benchmark and direct spawns on CPU 0, echo servers, daemon and hooks on CPU 1"
        }
        Some(Placement::Helper) => "helper",
        _ => "unpinned",
    }
}

/// Pins the calling process to one CPU.
fn pin(cpu: usize) -> anyhow::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu)
        .with_context(|| format!("CPU {cpu} does not exist"))?;
    sched_setaffinity(Pid::from_raw(0), &set).with_context(|| format!("cannot pin to CPU {cpu}"))
}
