//! Giving back to the system the memory of registries dropped for the compiled-filter budget.
//!
//! A registry's compiled filters are many small allocations. Freed, they stay in the C
//! allocator's free lists, spread over its per-thread arenas (registries are built on the
//! blocking pool's threads), where the daemon's resident memory keeps counting them: the
//! budget would bound what is in use but not what the daemon holds. So the dropped registries
//! are freed on the blocking pool and then glibc's `malloc_trim` returns the free pages of
//! every arena. Elsewhere (another C library) they are only freed.

// `malloc_trim` is a C function; its one call below is the only unsafe code here.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

/// Set while a trim runs, so that evictions in a burst start one, not one each.
static TRIMMING: AtomicBool = AtomicBool::new(false);

/// Drops `dropped` (registries taken out of the cache) on the blocking pool, then gives the
/// free memory back to the system. Never waits; outside a tokio runtime it drops them here.
pub(crate) fn release<T: Send + 'static>(dropped: Vec<T>) {
    if dropped.is_empty() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        drop(dropped);
        return;
    };
    let trim = !TRIMMING.swap(true, Ordering::AcqRel);
    runtime.spawn_blocking(move || {
        drop(dropped);
        if trim {
            trim_free_memory();
            TRIMMING.store(false, Ordering::Release);
        }
    });
}

/// Returns the free pages of every malloc arena to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_free_memory() {
    // SAFETY: `malloc_trim` takes no pointer and has no precondition; it only releases memory
    // the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Elsewhere the allocator keeps what it freed.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_free_memory() {}
