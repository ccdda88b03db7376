//! Blocking frame I/O on a std Unix stream, for the measurement loops.
//!
//! The framing is the daemon's (a 4-byte big-endian length, then the body), written with one
//! `write` per frame and read through a buffer so that a frame that arrives whole costs one
//! `read`. Both the raw ping-pong and the lean daemon client use this code, so the only
//! difference between them is what sits on the other end of the socket.

use std::io::{self, Read, Write};

/// The size of the length prefix in front of every body.
const PREFIX_BYTES: usize = 4;

/// The largest body accepted; a larger prefix means the stream is out of sync.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// The buffer size most frames fit in, so it is never grown in the hot loop.
const INITIAL_BUFFER_BYTES: usize = 64 * 1024;

/// Prefixes `body` with its length, ready to be written in one call.
pub fn frame(body: &[u8]) -> io::Result<Vec<u8>> {
    let len = u32::try_from(body.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame body over 4 GiB"))?;
    let mut framed = Vec::with_capacity(PREFIX_BYTES + body.len());
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(body);
    Ok(framed)
}

/// Writes an already framed message.
pub fn write_framed(stream: &mut impl Write, framed: &[u8]) -> io::Result<()> {
    stream.write_all(framed)
}

/// Splits a byte stream into frame bodies.
#[derive(Debug)]
pub struct FrameReader {
    buffer: Vec<u8>,
    /// Where the unread bytes start.
    start: usize,
    /// Where the unread bytes end.
    end: usize,
}

impl Default for FrameReader {
    fn default() -> Self {
        FrameReader {
            buffer: vec![0; INITIAL_BUFFER_BYTES],
            start: 0,
            end: 0,
        }
    }
}

impl FrameReader {
    /// Reads until one whole frame is buffered and returns its body.
    ///
    /// The body borrows the reader's buffer, so it is only valid until the next call.
    pub fn read_frame(&mut self, stream: &mut impl Read) -> io::Result<&[u8]> {
        loop {
            if let Some(body_len) = self.buffered_body_len()? {
                let body_start = self.start + PREFIX_BYTES;
                let body_end = body_start + body_len;
                if body_end <= self.end {
                    self.start = body_end;
                    if self.start == self.end {
                        // Nothing left over: the next frame starts at the front again.
                        self.start = 0;
                        self.end = 0;
                    }
                    return self.buffer.get(body_start..body_end).ok_or_else(|| {
                        io::Error::new(io::ErrorKind::InvalidData, "frame outside its buffer")
                    });
                }
                self.make_room(PREFIX_BYTES + body_len);
            } else {
                self.make_room(PREFIX_BYTES);
            }
            let read = stream.read(&mut self.buffer[self.end..])?;
            if read == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection",
                ));
            }
            self.end += read;
        }
    }

    /// The body length announced by the buffered prefix, if the prefix is complete.
    fn buffered_body_len(&self) -> io::Result<Option<usize>> {
        let Some(prefix) = self.buffer.get(self.start..self.start + PREFIX_BYTES) else {
            return Ok(None);
        };
        if self.end - self.start < PREFIX_BYTES {
            return Ok(None);
        }
        let mut bytes = [0; PREFIX_BYTES];
        bytes.copy_from_slice(prefix);
        let len = u32::from_be_bytes(bytes) as usize;
        if len > MAX_BODY_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("frame of {len} bytes announced; the stream is out of sync"),
            ));
        }
        Ok(Some(len))
    }

    /// Ensures that a frame of `frame_len` bytes starting at `start` fits, and that there is
    /// free space after `end` to read into.
    fn make_room(&mut self, frame_len: usize) {
        if self.start > 0 && self.start + frame_len > self.buffer.len() {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let needed = (self.start + frame_len).max(self.end + 1);
        if needed > self.buffer.len() {
            self.buffer.resize(needed.max(self.buffer.len() * 2), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out its bytes in chunks of fixed sizes, cycling through them.
    struct Chunked {
        data: Vec<u8>,
        position: usize,
        chunk_sizes: Vec<usize>,
        reads: usize,
    }

    impl Read for Chunked {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let chunk = self.chunk_sizes[self.reads % self.chunk_sizes.len()];
            self.reads += 1;
            let len = chunk.min(out.len()).min(self.data.len() - self.position);
            out[..len].copy_from_slice(&self.data[self.position..self.position + len]);
            self.position += len;
            Ok(len)
        }
    }

    /// Frames `bodies`, feeds them in chunks of `chunk_sizes`, and checks that exactly the
    /// bodies come back, followed by end-of-file.
    fn check(bodies: &[Vec<u8>], chunk_sizes: &[usize]) {
        let mut data = Vec::new();
        for body in bodies {
            data.extend(frame(body).unwrap());
        }
        let mut stream = Chunked {
            data,
            position: 0,
            chunk_sizes: chunk_sizes.to_vec(),
            reads: 0,
        };
        let mut reader = FrameReader::default();
        for body in bodies {
            assert_eq!(reader.read_frame(&mut stream).unwrap(), &body[..]);
        }
        let end = reader.read_frame(&mut stream).unwrap_err();
        assert_eq!(end.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn frames_survive_any_chunking() {
        let small = b"{\"type\":\"pong\",\"id\":1}".to_vec();
        let large = vec![b'x'; 3 * INITIAL_BUFFER_BYTES + 17];
        let cases: Vec<(Vec<Vec<u8>>, Vec<usize>)> = vec![
            (vec![small.clone()], vec![usize::MAX]),
            (
                vec![small.clone(), small.clone(), small.clone()],
                vec![usize::MAX],
            ),
            (vec![small.clone(), Vec::new(), small.clone()], vec![1]),
            (vec![small.clone(), small.clone()], vec![3, 5, 7]),
            (
                vec![large.clone(), small.clone(), large.clone()],
                vec![usize::MAX],
            ),
            (vec![small.clone(), large.clone()], vec![4096, 1, 100_000]),
        ];
        for (bodies, chunk_sizes) in cases {
            check(&bodies, &chunk_sizes);
        }
    }

    #[test]
    fn an_absurd_length_is_an_error() {
        let mut stream: &[u8] = &[0xff, 0xff, 0xff, 0xff, b'{'];
        let error = FrameReader::default().read_frame(&mut stream).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }
}
