//! A blocking frame client: the one way hookd's short-lived callers talk to the daemon
//! without an async runtime (the relay, which runs once per hook call and must start and
//! answer in a millisecond or two; `hookctl state`, run inside hooks; hookctl's service
//! check; the benchmarks' measurement loops).
//!
//! It is three small pieces over a `std` [`UnixStream`], nothing hidden behind them:
//!
//! - [`connect`] connects within a deadline (the socket is non-blocking while connecting, so a
//!   daemon with a full backlog cannot hold the caller), after the checks every client makes:
//!   the socket and its directory are the user's own ([`hookd_protocol::verify_socket_path`]),
//!   and so is the process listening on it ([`hookd_protocol::verify_peer`]).
//! - [`push_frame`] appends a frame (4-byte big-endian length, then the body) to a buffer, so
//!   a caller writes the `hello` and its request with one `write`.
//! - [`FrameReader`] splits what the stream delivers into frame bodies, reading straight into
//!   its buffer: a frame that arrives whole costs one `read`. [`FrameReader::read_frame`]
//!   waits as the stream's own timeouts say; [`FrameReader::read_frame_until`] waits until a
//!   deadline and keeps a partly received frame for the next call, which is what lets the
//!   relay wake up, ping the daemon and go on reading.
//!
//! What the callers do between frames (handshakes, pings, deadlines of their own) is theirs.

use std::io::{self, Read};
use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use hookd_protocol::{LENGTH_PREFIX_BYTES, SocketTrustError};

/// Why [`connect`] did not connect.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Nothing at the socket path.
    #[error("no socket there (is hookd running?)")]
    NoSocket,
    /// A socket file nobody listens on.
    #[error("connection refused: nobody listens on the socket (is hookd running?)")]
    Refused,
    /// The daemon's backlog stayed full until the deadline.
    #[error("the daemon is too busy to accept")]
    Busy,
    /// The socket, its directory or the listening process failed a check.
    #[error(transparent)]
    Untrusted(#[from] SocketTrustError),
    /// A system call failed (`what` says which step).
    #[error("{what}: {reason}")]
    System {
        /// The step that failed.
        what: &'static str,
        /// The system's description of the error.
        reason: &'static str,
    },
    /// The connected socket could not be made blocking again.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl ConnectError {
    /// Whether no daemon is there at all (no socket, or nobody listening), as opposed to one
    /// that is there but cannot be reached or trusted.
    pub fn is_absent(&self) -> bool {
        matches!(self, ConnectError::NoSocket | ConnectError::Refused)
    }
}

/// Why a frame could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// A frame longer than the reader's (or writer's) limit: the stream is out of step, or
    /// the peer is not hookd.
    #[error("a frame of {length} bytes, more than {max}")]
    TooLarge {
        /// The length the frame announced (or would have).
        length: usize,
        /// The limit.
        max: usize,
    },
    /// The peer closed the connection.
    #[error("the connection closed")]
    Closed,
    /// Reading failed; a read that timed out is `WouldBlock` or `TimedOut`.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<FrameError> for io::Error {
    fn from(err: FrameError) -> io::Error {
        match err {
            FrameError::Io(err) => err,
            FrameError::Closed => io::Error::new(io::ErrorKind::UnexpectedEof, err.to_string()),
            FrameError::TooLarge { .. } => io::Error::new(io::ErrorKind::InvalidData, err),
        }
    }
}

/// How long [`connect`] sleeps between attempts while the daemon's backlog is full.
const BUSY_PAUSE: Duration = Duration::from_millis(5);

/// Connects to the daemon's socket by `deadline`, after checking the socket path, and checks
/// that the process listening runs as the user. The stream is returned blocking, with no
/// timeouts set.
pub fn connect(socket: &Path, deadline: Instant) -> Result<UnixStream, ConnectError> {
    use nix::errno::Errno;
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr};
    use std::os::fd::AsRawFd;
    let system = |what: &'static str, errno: Errno| ConnectError::System {
        what,
        reason: errno.desc(),
    };
    match hookd_protocol::verify_socket_path(socket) {
        Ok(()) => {}
        Err(SocketTrustError::Missing { .. }) => return Err(ConnectError::NoSocket),
        Err(error) => return Err(error.into()),
    }
    let fd = nix::sys::socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )
    .map_err(|err| system("cannot create a socket", err))?;
    let address = UnixAddr::new(socket).map_err(|err| system("bad socket path", err))?;
    loop {
        match nix::sys::socket::connect(fd.as_raw_fd(), &address) {
            Ok(()) => break,
            Err(Errno::EAGAIN | Errno::EINTR) if Instant::now() < deadline => {
                std::thread::sleep(BUSY_PAUSE);
            }
            Err(Errno::EAGAIN) => return Err(ConnectError::Busy),
            Err(Errno::ENOENT) => return Err(ConnectError::NoSocket),
            Err(Errno::ECONNREFUSED) => return Err(ConnectError::Refused),
            Err(err) => return Err(system("cannot connect", err)),
        }
    }
    hookd_protocol::verify_peer(&fd)?;
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Appends one frame (length prefix, then `body`) to `out`; a body over `max_body` bytes is
/// refused and nothing is appended.
pub fn push_frame(out: &mut Vec<u8>, body: &[u8], max_body: usize) -> Result<(), FrameError> {
    let length = u32::try_from(body.len())
        .ok()
        .filter(|length| (*length as usize) <= max_body)
        .ok_or(FrameError::TooLarge {
            length: body.len(),
            max: max_body,
        })?;
    out.reserve(LENGTH_PREFIX_BYTES + body.len());
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(body);
    Ok(())
}

/// `body` as one frame, ready to be written in one call (any body a `u32` length can say).
pub fn frame(body: &[u8]) -> Result<Vec<u8>, FrameError> {
    let mut framed = Vec::new();
    push_frame(&mut framed, body, u32::MAX as usize)?;
    Ok(framed)
}

/// Splits a byte stream into frame bodies, reading into one buffer that grows to the largest
/// frame seen (at most the limit) and is never shrunk.
#[derive(Debug)]
pub struct FrameReader {
    buffer: Vec<u8>,
    /// Where the unread bytes start.
    start: usize,
    /// Where the unread bytes end.
    end: usize,
    /// The largest body accepted.
    max_body: usize,
}

impl FrameReader {
    /// A reader accepting bodies of up to `max_body` bytes, starting with a buffer of
    /// `capacity` bytes (frames that fit never grow it).
    pub fn new(max_body: usize, capacity: usize) -> FrameReader {
        FrameReader {
            buffer: vec![0; capacity.max(LENGTH_PREFIX_BYTES + 1)],
            start: 0,
            end: 0,
            max_body,
        }
    }

    /// Reads until one whole frame is buffered and returns its body, waiting as the stream's
    /// read timeout says (a timeout is [`FrameError::Io`]). The body borrows the reader's
    /// buffer: it is valid until the next call.
    pub fn read_frame(&mut self, stream: &mut impl Read) -> Result<&[u8], FrameError> {
        loop {
            if let Some(body) = self.take_frame()? {
                return Ok(&self.buffer[body]);
            }
            match stream.read(&mut self.buffer[self.end..]) {
                Ok(0) => return Err(FrameError::Closed),
                Ok(read) => self.end += read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// The next frame's body, or `None` when `until` passes first (what was received of the
    /// frame is kept for the next call); with no `until`, waits as long as it takes. Sets the
    /// stream's read timeout. The body borrows the reader's buffer: it is valid until the next
    /// call.
    pub fn read_frame_until(
        &mut self,
        stream: &UnixStream,
        until: Option<Instant>,
    ) -> Result<Option<&[u8]>, FrameError> {
        let mut stream = stream;
        loop {
            if let Some(body) = self.take_frame()? {
                return Ok(Some(&self.buffer[body]));
            }
            let timeout = match until {
                Some(until) => {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    Some(left)
                }
                None => None,
            };
            stream.set_read_timeout(timeout)?;
            match stream.read(&mut self.buffer[self.end..]) {
                Ok(0) => return Err(FrameError::Closed),
                Ok(read) => self.end += read,
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// The buffer range of the next body when a whole frame is buffered (it counts as read
    /// from then on); otherwise makes room for the rest of the frame and room to read into.
    fn take_frame(&mut self) -> Result<Option<Range<usize>>, FrameError> {
        if self.end - self.start < LENGTH_PREFIX_BYTES {
            self.make_room(LENGTH_PREFIX_BYTES);
            return Ok(None);
        }
        let mut prefix = [0; LENGTH_PREFIX_BYTES];
        prefix.copy_from_slice(&self.buffer[self.start..self.start + LENGTH_PREFIX_BYTES]);
        let length = u32::from_be_bytes(prefix) as usize;
        if length > self.max_body {
            return Err(FrameError::TooLarge {
                length,
                max: self.max_body,
            });
        }
        let body_start = self.start + LENGTH_PREFIX_BYTES;
        let body_end = body_start + length;
        if body_end > self.end {
            self.make_room(LENGTH_PREFIX_BYTES + length);
            return Ok(None);
        }
        self.start = body_end;
        if self.start == self.end {
            // Nothing left over: the next frame starts at the front again (the body returned
            // stays where it is until the next read).
            self.start = 0;
            self.end = 0;
        }
        Ok(Some(body_start..body_end))
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
    use std::io::Write as _;
    use std::os::unix::net::UnixListener;

    use super::*;

    /// The limits the benchmarks read with.
    const MAX_BODY: usize = 64 * 1024 * 1024;
    const CAPACITY: usize = 64 * 1024;

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
        let mut reader = FrameReader::new(MAX_BODY, CAPACITY);
        for body in bodies {
            assert_eq!(reader.read_frame(&mut stream).unwrap(), &body[..]);
        }
        let end = reader.read_frame(&mut stream).unwrap_err();
        assert!(matches!(end, FrameError::Closed), "{end}");
        assert_eq!(io::Error::from(end).kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn frames_survive_any_chunking() {
        let small = b"{\"type\":\"pong\",\"id\":1}".to_vec();
        let large = vec![b'x'; 3 * CAPACITY + 17];
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
        let error = FrameReader::new(MAX_BODY, CAPACITY)
            .read_frame(&mut stream)
            .unwrap_err();
        assert!(
            matches!(error, FrameError::TooLarge { length, max: MAX_BODY } if length == u32::MAX as usize),
            "{error}"
        );
        assert_eq!(io::Error::from(error).kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_body_over_the_limit_is_not_framed() {
        let mut out = b"kept".to_vec();
        let got = push_frame(&mut out, b"12345", 4);
        assert!(
            matches!(got, Err(FrameError::TooLarge { length: 5, max: 4 })),
            "{got:?}"
        );
        assert_eq!(out, b"kept");
        push_frame(&mut out, b"1234", 4).unwrap();
        assert_eq!(out, b"kept\0\0\0\x041234");
    }

    #[test]
    fn a_deadline_returns_none_and_keeps_the_partial_frame() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let mut frame = Vec::new();
        push_frame(&mut frame, b"hello", 64).unwrap();
        theirs.write_all(&frame[..6]).unwrap();
        let mut reader = FrameReader::new(64, 16);
        let until = Instant::now() + Duration::from_millis(20);
        assert!(
            reader
                .read_frame_until(&ours, Some(until))
                .unwrap()
                .is_none()
        );
        assert!(Instant::now() >= until);
        theirs.write_all(&frame[6..]).unwrap();
        assert_eq!(
            reader.read_frame_until(&ours, None).unwrap(),
            Some(&b"hello"[..])
        );
        drop(theirs);
        assert!(matches!(
            reader.read_frame_until(&ours, None),
            Err(FrameError::Closed)
        ));
    }

    #[test]
    fn connect_tells_no_daemon_from_a_daemon_and_checks_the_listener() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("hookd.sock");
        let soon = || Instant::now() + Duration::from_secs(2);
        let missing = connect(&socket, soon()).unwrap_err();
        assert!(matches!(missing, ConnectError::NoSocket), "{missing}");
        assert!(missing.is_absent());

        let listener = UnixListener::bind(&socket).unwrap();
        let mut stream = connect(&socket, soon()).unwrap();
        let (mut accepted, _) = listener.accept().unwrap();
        accepted.write_all(b"\0\0\0\x02{}").unwrap();
        let mut reader = FrameReader::new(64, 16);
        assert_eq!(reader.read_frame(&mut stream).unwrap(), b"{}");

        drop(listener);
        let refused = connect(&socket, soon()).unwrap_err();
        assert!(matches!(refused, ConnectError::Refused), "{refused}");
        assert!(refused.is_absent());
    }
}
