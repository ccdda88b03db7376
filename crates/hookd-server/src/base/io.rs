//! Frame I/O on an accepted connection.
//!
//! [`FrameReader`] decodes with [`FrameCodec`], so oversized frames are reported and skipped
//! exactly as `FramedRead` did; one read takes whatever the socket holds, so a pipelining
//! client's many small frames come in with few reads. [`FrameWriter`] is shared by a
//! connection's tasks and writes each frame with one plain non-blocking write; only when the
//! socket buffer is full does it wait for room, so a slow client gets backpressure and blocks
//! nobody but the senders of its own connection. An async mutex serialises whole frames, so
//! frames never interleave.
//!
//! Coalescing: the connection's read loop *queues* the answers it writes itself
//! ([`FrameWriter::queue_with`], straight into the writer's reused buffer) while the client's
//! next request is already buffered ([`FrameReader::frame_buffered`]), and
//! [`FrameWriter::flush`]es before it waits for more input. A pipelining client thus gets many
//! answers per write, and a lone request is answered as soon as it is handled. Any
//! [`FrameWriter::send`] writes what is queued too, in order.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Buf, Bytes, BytesMut};
use hookd_protocol::{CodecError, Frame, FrameCodec};
use tokio::io::AsyncReadExt;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::Mutex;
use tokio_util::codec::{Decoder, Encoder};

/// The read buffer's initial capacity, as `FramedRead` had it; also how much room is made
/// before a read when less than [`MIN_READ_ROOM`] is left.
const INITIAL_READ_CAPACITY: usize = 8 * 1024;

/// Below this much free room the buffer is grown (or reclaimed) before a read, so that each
/// read can take many small frames at once.
const MIN_READ_ROOM: usize = 1024;

/// Frames of at most this many bytes are buffered without asking the [`FrameBudget`]: they
/// are what nearly every request is, and a connection holds at most one partial frame.
pub(crate) const UNCOUNTED_FRAME_BYTES: u64 = 64 * 1024;

/// The daemon-wide bound on frames that have begun to arrive and are not complete.
///
/// Each connection may be sent a frame of up to the frame limit (64 MiB) slowly; without a
/// total, twenty such connections held 1.24 GB. A reader reserves a frame's declared length
/// here before it waits for the body and gives it back when the frame is decoded (or the
/// connection ends); a frame that does not fit is refused: skipped as it arrives, answered
/// with `limit_reached`.
#[derive(Debug)]
pub(crate) struct FrameBudget {
    limit: u64,
    used: AtomicU64,
}

impl FrameBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> FrameBudget {
        FrameBudget {
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            used: AtomicU64::new(0),
        }
    }

    /// Takes `bytes` from the budget if they fit.
    fn try_reserve(&self, bytes: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let total = used.checked_add(bytes)?;
                (total <= self.limit).then_some(total)
            })
            .is_ok()
    }

    /// Gives back `bytes` taken before.
    fn release(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// The bytes reserved now.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// The bound.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }
}

/// Splits an accepted stream into its frame reader and its (shareable) frame writer.
///
/// The reader starts with a limit of `max_read_frame_bytes` on incoming frames and takes
/// room for large partial frames from `budget`; the writer sends frames of any size the prefix
/// can express.
pub(crate) fn split(
    stream: UnixStream,
    max_read_frame_bytes: usize,
    budget: Arc<FrameBudget>,
) -> (FrameReader, FrameWriter) {
    let (read, write) = stream.into_split();
    let reader = FrameReader {
        half: read,
        codec: FrameCodec::with_max_frame_bytes(max_read_frame_bytes),
        buffer: BytesMut::with_capacity(INITIAL_READ_CAPACITY),
        state: ReadState::Open,
        budget,
        held: 0,
        refused: None,
    };
    let writer = FrameWriter {
        state: Mutex::new(WriteState {
            half: write,
            codec: FrameCodec::with_max_frame_bytes(usize::MAX),
            pending: BytesMut::new(),
        }),
    };
    (reader, writer)
}

/// Where the reader is in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadState {
    /// The peer may send more.
    Open,
    /// The peer closed its side; what is buffered is decoded to the end.
    Eof,
    /// The stream ended or failed; nothing more comes.
    Done,
}

/// Reads frames from the connection's socket.
pub(crate) struct FrameReader {
    half: OwnedReadHalf,
    codec: FrameCodec,
    /// Received bytes not yet decoded.
    buffer: BytesMut,
    state: ReadState,
    /// Where room for large partial frames comes from.
    budget: Arc<FrameBudget>,
    /// The bytes this reader holds of the budget (the frame it is waiting for).
    held: u64,
    /// The declared length of the last frame refused for want of budget, until taken.
    refused: Option<u64>,
}

impl Drop for FrameReader {
    fn drop(&mut self) {
        self.release();
    }
}

impl FrameReader {
    /// Gives back what this reader holds of the budget.
    fn release(&mut self) {
        if self.held > 0 {
            self.budget.release(std::mem::take(&mut self.held));
        }
    }

    /// Whether the last [`Frame::TooLarge`] was a frame within the limit refused because
    /// the daemon-wide budget for partial frames was spent: its declared length, once.
    pub(crate) fn take_refused(&mut self) -> Option<u64> {
        self.refused.take()
    }

    /// Changes the limit on incoming frames from the next frame header on.
    pub(crate) fn set_max_frame_bytes(&mut self, max_frame_bytes: usize) {
        self.codec.set_max_frame_bytes(max_frame_bytes);
    }

    /// Whether a frame (or an oversized frame's prefix) is already buffered, so that
    /// [`FrameReader::next`] returns without reading the socket.
    pub(crate) fn frame_buffered(&self) -> bool {
        self.state == ReadState::Open && self.codec.frame_ready(&self.buffer)
    }

    /// The next frame; `None` once the peer has closed the connection (or after an error).
    ///
    /// Cancel-safe: every byte read is kept in the reader, so dropping the future between
    /// frames loses nothing.
    pub(crate) async fn next(&mut self) -> Option<Result<Frame, CodecError>> {
        loop {
            match self.state {
                ReadState::Done => return None,
                ReadState::Eof => {
                    self.release();
                    return match self.codec.decode_eof(&mut self.buffer) {
                        Ok(Some(frame)) => Some(Ok(frame)),
                        Ok(None) => {
                            self.state = ReadState::Done;
                            None
                        }
                        Err(err) => {
                            self.state = ReadState::Done;
                            Some(Err(err))
                        }
                    };
                }
                ReadState::Open => {}
            }
            if self.held == 0 {
                if let Some(declared) = self.codec.incomplete_frame_len(&self.buffer) {
                    if declared > UNCOUNTED_FRAME_BYTES {
                        if self.budget.try_reserve(declared) {
                            self.held = declared;
                        } else if let Some(declared) = self.codec.skip_frame(&mut self.buffer) {
                            self.refused = Some(declared);
                            return Some(Ok(Frame::TooLarge {
                                declared_len: declared,
                            }));
                        }
                    }
                }
            }
            match self.codec.decode(&mut self.buffer) {
                Ok(Some(frame)) => {
                    self.release();
                    return Some(Ok(frame));
                }
                Ok(None) => {}
                Err(err) => {
                    self.state = ReadState::Done;
                    return Some(Err(err));
                }
            }
            match self.fill().await {
                Ok(0) => self.state = ReadState::Eof,
                Ok(_) => {}
                Err(err) => {
                    self.state = ReadState::Done;
                    return Some(Err(CodecError::Io(err)));
                }
            }
        }
    }

    /// Appends to the buffer, without waiting, what the socket has already received, up to
    /// `limit` buffered bytes in all: what the client sent before the daemon began to stop.
    /// A closed or failed stream is remembered as such for [`FrameReader::next_received`].
    pub(crate) fn take_received(&mut self, limit: usize) {
        while self.state == ReadState::Open && self.buffer.len() < limit {
            if self.buffer.capacity() - self.buffer.len() < MIN_READ_ROOM {
                self.buffer.reserve(INITIAL_READ_CAPACITY);
            }
            match self.half.try_read_buf(&mut self.buffer) {
                Ok(0) => self.state = ReadState::Eof,
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.state = ReadState::Done,
            }
        }
    }

    /// The next frame among the bytes already buffered, never reading the socket; `None`
    /// when no whole frame is buffered.
    pub(crate) fn next_received(&mut self) -> Option<Result<Frame, CodecError>> {
        let decoded = match self.state {
            ReadState::Done => return None,
            ReadState::Eof => self.codec.decode_eof(&mut self.buffer),
            ReadState::Open => self.codec.decode(&mut self.buffer),
        };
        match decoded {
            Ok(frame) => frame.map(Ok),
            Err(err) => {
                self.state = ReadState::Done;
                Some(Err(err))
            }
        }
    }

    /// Waits until the socket is readable and appends what it holds to the buffer; returns
    /// how many bytes came, 0 at end of stream.
    async fn fill(&mut self) -> io::Result<usize> {
        // Once the frames handed out are dropped, this reclaims the buffer's own storage
        // instead of allocating.
        if self.buffer.capacity() - self.buffer.len() < MIN_READ_ROOM {
            self.buffer.reserve(INITIAL_READ_CAPACITY);
        }
        self.half.read_buf(&mut self.buffer).await
    }
}

/// Writes frames to the connection's socket; shared by all the connection's tasks.
pub(crate) struct FrameWriter {
    /// Held from encoding a frame until the socket has taken all of it, so frames never
    /// interleave.
    state: Mutex<WriteState>,
}

/// The writer's state, behind its mutex.
struct WriteState {
    half: OwnedWriteHalf,
    codec: FrameCodec,
    /// Encoded bytes the socket has not taken yet. Empty between sends, unless a send was
    /// cancelled while waiting for room; the next send then writes that tail first, so the
    /// stream stays in sync.
    pending: BytesMut,
}

impl FrameWriter {
    /// Sends one frame body with its length prefix, returning once the socket has taken all
    /// of it. A full socket buffer makes this wait (only this connection's senders wait).
    pub(crate) async fn send(&self, body: Bytes) -> Result<(), CodecError> {
        let mut state = self.state.lock().await;
        let WriteState { codec, pending, .. } = &mut *state;
        codec.encode(body, pending)?;
        state.write_pending().await
    }

    /// Appends a frame that `write` puts into the writer's buffer (length prefix included)
    /// without writing it yet: the next [`FrameWriter::send`] or [`FrameWriter::flush`] does.
    /// The buffer is reused, so this allocates nothing once it has grown to its working size.
    pub(crate) async fn queue_with(&self, write: impl FnOnce(&mut BytesMut)) {
        let mut state = self.state.lock().await;
        write(&mut state.pending);
    }

    /// Appends one already encoded frame body, with its length prefix, to what is queued
    /// (see [`FrameWriter::queue_with`]).
    pub(crate) async fn queue_frame(&self, body: &[u8]) {
        let mut state = self.state.lock().await;
        // Bodies come from `encode_fitted`, which keeps them within the 4-byte prefix.
        let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
        state.pending.extend_from_slice(&len.to_be_bytes());
        state.pending.extend_from_slice(body);
    }

    /// Writes whatever is queued.
    pub(crate) async fn flush(&self) -> Result<(), CodecError> {
        let mut state = self.state.lock().await;
        if state.pending.is_empty() {
            return Ok(());
        }
        state.write_pending().await
    }
}

impl WriteState {
    /// Writes the whole buffer, waiting for room when the socket is full.
    async fn write_pending(&mut self) -> Result<(), CodecError> {
        let WriteState { half, pending, .. } = self;
        while !pending.is_empty() {
            match half.try_write(pending) {
                Ok(0) => return Err(CodecError::Io(io::ErrorKind::WriteZero.into())),
                Ok(written) => pending.advance(written),
                // The buffer is full (which also cleared the writable readiness): wait for room.
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => half.writable().await?,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(CodecError::Io(err)),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::sync::Arc;

    use super::*;

    /// A frame on the wire: prefix plus body.
    fn frame(body: &[u8]) -> Vec<u8> {
        let mut bytes = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        bytes.extend_from_slice(body);
        bytes
    }

    fn unlimited() -> Arc<FrameBudget> {
        Arc::new(FrameBudget::new(usize::MAX))
    }

    #[tokio::test]
    async fn large_partial_frames_share_one_budget() {
        let budget = Arc::new(FrameBudget::new(300 * 1024));
        let (first, mut first_peer) = UnixStream::pair().unwrap();
        let (second, mut second_peer) = UnixStream::pair().unwrap();
        let (mut first_reader, _w1) = split(first, 1 << 20, Arc::clone(&budget));
        let (mut second_reader, _w2) = split(second, 1 << 20, Arc::clone(&budget));
        use tokio::io::AsyncWriteExt;
        // The first connection starts a 200 KiB frame and stops half-way: it holds 200 KiB.
        let big = 200 * 1024;
        first_peer
            .write_all(&u32::try_from(big).unwrap().to_be_bytes())
            .await
            .unwrap();
        first_peer.write_all(&vec![b' '; 1000]).await.unwrap();
        let pending =
            tokio::time::timeout(std::time::Duration::from_millis(100), first_reader.next()).await;
        assert!(pending.is_err(), "the frame is not complete");
        assert_eq!(budget.used(), big as u64);
        // The second's 200 KiB frame does not fit: refused and skipped, and the frame after
        // it (small, uncounted) is read normally.
        second_peer
            .write_all(&u32::try_from(big).unwrap().to_be_bytes())
            .await
            .unwrap();
        second_peer.write_all(&[b' '; 10]).await.unwrap();
        let refused = second_reader.next().await.unwrap().unwrap();
        assert_eq!(
            refused,
            Frame::TooLarge {
                declared_len: big as u64
            }
        );
        assert_eq!(second_reader.take_refused(), Some(big as u64));
        let writer = tokio::spawn(async move {
            second_peer.write_all(&vec![b' '; big - 10]).await.unwrap();
            second_peer.write_all(&frame(b"{}")).await.unwrap();
            second_peer
        });
        let next = second_reader.next().await.unwrap().unwrap();
        assert_eq!(next, Frame::Data(Bytes::from_static(b"{}")));
        let _second_peer = writer.await.unwrap();
        assert_eq!(second_reader.take_refused(), None);
        // When the first frame completes, its bytes are given back.
        first_peer.write_all(&vec![b' '; big - 1000]).await.unwrap();
        assert!(matches!(
            first_reader.next().await,
            Some(Ok(Frame::Data(_)))
        ));
        assert_eq!(budget.used(), 0);
        // A reader dropped half-way through a frame gives its bytes back too.
        first_peer
            .write_all(&u32::try_from(big).unwrap().to_be_bytes())
            .await
            .unwrap();
        let _ =
            tokio::time::timeout(std::time::Duration::from_millis(50), first_reader.next()).await;
        assert_eq!(budget.used(), big as u64);
        drop(first_reader);
        assert_eq!(budget.used(), 0);
    }

    /// What the reader produced, in a comparable form.
    #[derive(Debug, PartialEq, Eq)]
    enum Item {
        Data(Vec<u8>),
        TooLarge(u64),
        Truncated,
    }

    /// Writes `chunks` from a peer (in a thread, so large writes may block) and closes it,
    /// reads everything with a [`FrameReader`] limited to `max` bytes, and compares.
    async fn check(max: usize, chunks: Vec<Vec<u8>>, expected: &[Item]) {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (mut reader, _writer) = split(ours, max, unlimited());
        let mut peer = theirs.into_std().unwrap();
        peer.set_nonblocking(false).unwrap();
        let writer = std::thread::spawn(move || {
            for chunk in chunks {
                peer.write_all(&chunk).unwrap();
            }
        });
        let mut items = Vec::new();
        while let Some(frame) = reader.next().await {
            items.push(match frame {
                Ok(Frame::Data(body)) => Item::Data(body.to_vec()),
                Ok(Frame::TooLarge { declared_len }) => Item::TooLarge(declared_len),
                Err(CodecError::TruncatedFrame { .. }) => Item::Truncated,
                Err(other) => panic!("unexpected error {other}"),
            });
        }
        writer.join().unwrap();
        assert_eq!(items, expected);
    }

    #[tokio::test]
    async fn reads_frames_until_the_peer_closes() {
        check(64, vec![], &[]).await;
        check(
            64,
            vec![[frame(b"a"), frame(b"bc")].concat()],
            &[Item::Data(b"a".to_vec()), Item::Data(b"bc".to_vec())],
        )
        .await;
        // An oversized frame is reported and skipped; the stream stays in sync.
        check(
            4,
            vec![frame(b"too long"), frame(b"ok")],
            &[Item::TooLarge(8), Item::Data(b"ok".to_vec())],
        )
        .await;
        // Many small frames, one write each.
        check(
            64,
            (0..200u8).map(|n| frame(&[n])).collect(),
            &(0..200u8).map(|n| Item::Data(vec![n])).collect::<Vec<_>>(),
        )
        .await;
        // A peer that closes in the middle of a frame.
        check(
            64,
            vec![frame(b"ok"), vec![0, 0, 0, 9, b'x']],
            &[Item::Data(b"ok".to_vec()), Item::Truncated],
        )
        .await;
    }

    #[tokio::test]
    async fn reads_frames_larger_than_the_socket_buffer() {
        let big = vec![7u8; 3 * 1024 * 1024 + 5];
        let skipped = vec![1u8; 4 * 1024 * 1024];
        check(
            big.len(),
            vec![frame(&skipped), frame(&big), frame(b"after")],
            &[
                Item::TooLarge(skipped.len() as u64),
                Item::Data(big.clone()),
                Item::Data(b"after".to_vec()),
            ],
        )
        .await;
    }

    #[tokio::test]
    async fn writes_whole_frames_even_to_a_slow_reader() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (_reader, writer) = split(ours, 64, unlimited());
        let writer = Arc::new(writer);
        // Enough bytes to fill the socket buffer many times over, from concurrent senders,
        // to a peer that reads in its own time: the senders must wait for room, and their
        // frames must arrive whole.
        let body = |n: u8| Bytes::from(vec![n; 100_000]);
        let senders: Vec<_> = (0..8u8)
            .map(|n| {
                let writer = Arc::clone(&writer);
                tokio::spawn(async move { writer.send(body(n)).await.unwrap() })
            })
            .collect();
        let mut peer = theirs.into_std().unwrap();
        peer.set_nonblocking(false).unwrap();
        let reading = std::thread::spawn(move || {
            let mut bodies = Vec::new();
            for _ in 0..8 {
                let mut prefix = [0u8; 4];
                peer.read_exact(&mut prefix).unwrap();
                let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
                peer.read_exact(&mut body).unwrap();
                bodies.push(body);
            }
            bodies
        });
        for sender in senders {
            sender.await.unwrap();
        }
        let mut bodies = tokio::task::spawn_blocking(move || reading.join().unwrap())
            .await
            .unwrap();
        bodies.sort();
        let expected: Vec<Vec<u8>> = (0..8u8).map(|n| body(n).to_vec()).collect();
        assert_eq!(bodies, expected);
    }

    #[tokio::test]
    async fn queued_frames_wait_for_a_flush_or_the_next_send_and_keep_their_order() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (_reader, writer) = split(ours, 64, unlimited());
        let mut peer = theirs.into_std().unwrap();
        peer.set_nonblocking(true).unwrap();
        let mut received = Vec::new();
        let mut read_all = |peer: &mut std::os::unix::net::UnixStream| {
            let mut chunk = [0u8; 256];
            loop {
                match peer.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => received.extend_from_slice(&chunk[..n]),
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                    Err(err) => panic!("{err}"),
                }
            }
            received.clone()
        };
        let queue =
            |body: &'static [u8]| move |out: &mut BytesMut| out.extend_from_slice(&frame(body));
        writer.queue_with(queue(b"a")).await;
        writer.queue_with(queue(b"bc")).await;
        assert!(read_all(&mut peer).is_empty(), "queued, not written");
        writer.flush().await.unwrap();
        assert_eq!(read_all(&mut peer), [frame(b"a"), frame(b"bc")].concat());
        // A send writes what was queued before it, first.
        writer.queue_with(queue(b"d")).await;
        writer.send(Bytes::from_static(b"e")).await.unwrap();
        assert_eq!(
            read_all(&mut peer),
            [frame(b"a"), frame(b"bc"), frame(b"d"), frame(b"e")].concat()
        );
        // Nothing queued: a flush writes nothing.
        writer.flush().await.unwrap();
        assert_eq!(received.len(), 4 * 4 + 5);
    }

    #[tokio::test]
    async fn frame_buffered_says_whether_the_next_frame_needs_a_read() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (mut reader, _writer) = split(ours, 64, unlimited());
        let mut peer = theirs.into_std().unwrap();
        peer.set_nonblocking(false).unwrap();
        assert!(!reader.frame_buffered());
        peer.write_all(&[frame(b"one"), frame(b"two"), vec![0, 0]].concat())
            .unwrap();
        let first = reader.next().await.unwrap().unwrap();
        assert_eq!(first, Frame::Data(Bytes::from_static(b"one")));
        assert!(
            reader.frame_buffered(),
            "the second frame came with the first"
        );
        reader.next().await.unwrap().unwrap();
        assert!(!reader.frame_buffered(), "half a prefix is not a frame");
    }

    #[tokio::test]
    async fn a_send_to_a_closed_peer_fails() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (_reader, writer) = split(ours, 64, unlimited());
        drop(theirs);
        assert!(writer.send(Bytes::from_static(b"{}")).await.is_err());
    }
}
