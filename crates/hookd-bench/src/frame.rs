//! The measurement loops' frame I/O: hookd-client's blocking frame client
//! ([`hookd_client::blocking`]), the same code the relay reads the daemon with, with the
//! limits the benchmarks read with. Frames are written with one `write` each and read
//! through one buffer, so a frame that arrives whole costs one `read`; the raw ping-pong and
//! the lean daemon client both use it, so the only difference between them is what sits on
//! the other end of the socket.

use hookd_client::blocking::FrameReader;

pub use hookd_client::blocking::frame;

/// The largest body accepted; a larger prefix means the stream is out of sync.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// The buffer size most frames fit in, so it is never grown in the hot loop.
const INITIAL_BUFFER_BYTES: usize = 64 * 1024;

/// A frame reader with the benchmarks' limits.
pub fn reader() -> FrameReader {
    FrameReader::new(MAX_BODY_BYTES, INITIAL_BUFFER_BYTES)
}
