//! The no-hook fast path allocates nothing: scanning a `chunk` or an `event` frame and writing
//! its answer into a reused buffer, counted by a global allocator that counts.
//!
//! A test binary of its own, because the counting allocator is process-wide; the count is per
//! thread, so the test harness's own threads do not disturb it.

// A global allocator is an `unsafe impl` by definition; it only forwards to the system's.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::BytesMut;
use hookd_protocol::fast::{
    ScannedRequest, scan_request, write_empty_result, write_plain_chunk_result,
};

/// The system allocator, counting the allocations of the current thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a
// thread-local `Cell` of a `const`-initialised `u64`, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Runs `work` and returns how many allocations it made on this thread.
fn count(work: impl FnOnce()) -> u64 {
    let before = allocations();
    work();
    allocations() - before
}

#[test]
fn scanning_and_answering_a_plain_chunk_allocates_nothing() {
    let frames: Vec<Vec<u8>> = (0..1000u64)
        .map(|seq| {
            format!(
                r#"{{"type":"chunk","id":7,"seq":{seq},"llm_response":{{"candidates":[{{"content":{{"role":"model","parts":["Line {seq}:\n\"quoted\" text with \u00e9 and {{braces}}"]}},"finishReason":null,"safetyRatings":[{{"category":"HARM","probability":"LOW"}}]}}],"usageMetadata":{{"totalTokenCount":{seq},"score":-1.25e-3}}}}}}"#
            )
            .into_bytes()
        })
        .collect();
    let mut out = BytesMut::with_capacity(64 * 1024);
    let made = count(|| {
        for frame in &frames {
            match scan_request(frame) {
                Some(ScannedRequest::Chunk { id, seq }) => {
                    write_plain_chunk_result(&mut out, id, seq);
                }
                other => panic!("not scanned as a chunk: {other:?}"),
            }
            if out.len() > 32 * 1024 {
                out.clear();
            }
        }
    });
    assert_eq!(made, 0, "{made} allocations for 1000 chunks");
}

#[test]
fn scanning_and_answering_an_unhooked_event_allocates_nothing() {
    let frames: Vec<Vec<u8>> = (0..1000u64)
        .map(|id| {
            format!(
                r#"{{"type":"event","id":"req-{id}","event":"BeforeTool","cwd":"/srv/proj","session_id":"8f1c","transcript_path":"/srv/t.json","input":{{"tool_name":"run_shell_command","tool_input":{{"command":"ls -la\n","dir":"/srv"}}}},"env":{{"PATH":"/usr/bin"}},"stream_hooks":false}}"#
            )
            .into_bytes()
        })
        .collect();
    let mut out = BytesMut::with_capacity(64 * 1024);
    let made = count(|| {
        for frame in &frames {
            match scan_request(frame) {
                Some(ScannedRequest::Event(event)) => {
                    assert_eq!(event.tool_name, Some("run_shell_command"));
                    write_empty_result(&mut out, event.id, 3);
                }
                other => panic!("not scanned as an event: {other:?}"),
            }
            if out.len() > 32 * 1024 {
                out.clear();
            }
        }
    });
    assert_eq!(made, 0, "{made} allocations for 1000 events");
}

#[test]
fn the_counter_counts() {
    // The test must be able to fail: an allocation is seen.
    let made = count(|| {
        let boxed = Box::new([0u8; 64]);
        std::hint::black_box(&boxed);
    });
    assert_eq!(made, 1);
}
