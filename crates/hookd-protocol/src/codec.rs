//! Length-prefixed framing that survives oversized frames.
//!
//! [`LengthDelimitedCodec`] turns a frame longer than its maximum into an I/O error, after
//! which a `FramedRead` ends the stream. A daemon serving long-lived clients should instead
//! answer "too large" and carry on, so [`FrameCodec`] looks at each length prefix first: an
//! oversized frame is reported at once as [`Frame::TooLarge`] and its body is then discarded
//! as it arrives, never buffered, keeping the stream in sync for the next frame.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

use crate::DEFAULT_MAX_FRAME_BYTES;

/// The size of the big-endian length prefix in front of every frame body.
pub const LENGTH_PREFIX_BYTES: usize = 4;

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A frame body within the maximum.
    Data(Bytes),
    /// A frame whose declared body length exceeds the maximum. Its body is being skipped;
    /// the next item is the frame after it.
    TooLarge {
        /// The length the prefix declared.
        declared_len: u64,
    },
}

/// Why reading or writing frames failed. Any of these ends the connection.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The socket failed.
    #[error("frame I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The peer closed the connection in the middle of a frame.
    #[error("the connection closed in the middle of a frame ({buffered} bytes of it received)")]
    TruncatedFrame {
        /// How many bytes of the unfinished frame (prefix included) had arrived.
        buffered: usize,
    },
    /// A frame to send is longer than the maximum; nothing was written.
    #[error("refusing to send a frame of {len} bytes, more than the maximum of {max}")]
    OutgoingFrameTooLarge {
        /// The body's length.
        len: usize,
        /// The maximum.
        max: usize,
    },
}

/// What the decoder is in the middle of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DecodeState {
    /// At a frame boundary (possibly with part of the next frame buffered).
    Boundary,
    /// Skipping the body of an oversized frame; this many bytes are still to come.
    Discarding { remaining: u64 },
}

/// The frame codec: decodes [`Frame`]s and encodes [`Bytes`] bodies.
///
/// Built on [`LengthDelimitedCodec`] (4-byte big-endian length, no adjustment), which does the
/// actual splitting and writing; this wrapper decides what to do with oversized frames.
#[derive(Debug)]
pub struct FrameCodec {
    inner: LengthDelimitedCodec,
    max_frame_bytes: usize,
    state: DecodeState,
}

impl FrameCodec {
    /// A codec with the [`DEFAULT_MAX_FRAME_BYTES`] limit.
    pub fn new() -> Self {
        FrameCodec::with_max_frame_bytes(DEFAULT_MAX_FRAME_BYTES)
    }

    /// A codec with this limit on frame bodies, in both directions.
    pub fn with_max_frame_bytes(max_frame_bytes: usize) -> Self {
        let inner = LengthDelimitedCodec::builder()
            .length_field_length(LENGTH_PREFIX_BYTES)
            .big_endian()
            .max_frame_length(max_frame_bytes)
            .new_codec();
        // The 4-byte prefix cannot express more than u32::MAX; the inner codec clamps its
        // limit the same way, so read it back to keep the two in agreement.
        let max_frame_bytes = inner.max_frame_length();
        FrameCodec {
            inner,
            max_frame_bytes,
            state: DecodeState::Boundary,
        }
    }

    /// The limit on frame bodies, in bytes.
    pub fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// Changes the limit, for example from a small handshake limit to the full one after
    /// `hello`. It applies to the next frame header read and the next frame written.
    pub fn set_max_frame_bytes(&mut self, max_frame_bytes: usize) {
        self.inner.set_max_frame_length(max_frame_bytes);
        self.max_frame_bytes = self.inner.max_frame_length();
    }

    /// Whether [`Decoder::decode`] would produce a frame from `buffered` without more input:
    /// a whole frame, or the prefix of an oversized one, is at its start. Lets a reader tell
    /// whether the peer has already sent its next request.
    pub fn frame_ready(&self, buffered: &[u8]) -> bool {
        if self.state != DecodeState::Boundary {
            return false;
        }
        let Some(prefix) = buffered.get(..LENGTH_PREFIX_BYTES) else {
            return false;
        };
        let declared = u64::from(u32::from_be_bytes([
            prefix[0], prefix[1], prefix[2], prefix[3],
        ]));
        let max = u64::try_from(self.max_frame_bytes).unwrap_or(u64::MAX);
        let buffered_body = u64::try_from(buffered.len() - LENGTH_PREFIX_BYTES).unwrap_or(0);
        declared > max || declared <= buffered_body
    }

    /// The declared body length of the frame at the start of `buffered`, when the decoder is
    /// at a frame boundary, the prefix is there, the frame is within the maximum, and its
    /// body has not all arrived yet: the frame a reader is about to wait for and buffer.
    pub fn incomplete_frame_len(&self, buffered: &[u8]) -> Option<u64> {
        if self.state != DecodeState::Boundary {
            return None;
        }
        let prefix = buffered.get(..LENGTH_PREFIX_BYTES)?;
        let declared = u64::from(u32::from_be_bytes([
            prefix[0], prefix[1], prefix[2], prefix[3],
        ]));
        let max = u64::try_from(self.max_frame_bytes).unwrap_or(u64::MAX);
        let buffered_body = u64::try_from(buffered.len() - LENGTH_PREFIX_BYTES).unwrap_or(0);
        (declared <= max && declared > buffered_body).then_some(declared)
    }

    /// Refuses the frame at the start of `src` (see [`FrameCodec::incomplete_frame_len`]): its
    /// prefix is consumed and its body is skipped as it arrives, exactly like an oversized
    /// frame's, so the stream stays in sync. Returns the declared length, or `None` when no
    /// frame prefix is at the start of `src`.
    pub fn skip_frame(&mut self, src: &mut BytesMut) -> Option<u64> {
        if self.state != DecodeState::Boundary {
            return None;
        }
        let prefix = src.get(..LENGTH_PREFIX_BYTES)?;
        let declared = u64::from(u32::from_be_bytes([
            prefix[0], prefix[1], prefix[2], prefix[3],
        ]));
        src.advance(LENGTH_PREFIX_BYTES);
        self.state = DecodeState::Discarding {
            remaining: declared,
        };
        self.discard(src);
        Some(declared)
    }

    /// Drops as much of an oversized frame's body as is buffered; returns whether the whole
    /// body has now been skipped.
    fn discard(&mut self, src: &mut BytesMut) -> bool {
        let DecodeState::Discarding { remaining } = self.state else {
            return true;
        };
        // Clamp in u64 first: `remaining` may exceed usize on 32-bit targets.
        let buffered = u64::try_from(src.len()).unwrap_or(u64::MAX);
        let skip = remaining.min(buffered);
        // `skip <= src.len()`, so it fits in usize.
        src.advance(usize::try_from(skip).unwrap_or(src.len()));
        let remaining = remaining - skip;
        if remaining == 0 {
            self.state = DecodeState::Boundary;
            true
        } else {
            self.state = DecodeState::Discarding { remaining };
            false
        }
    }
}

impl Default for FrameCodec {
    fn default() -> Self {
        FrameCodec::new()
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        if !self.discard(src) {
            return Ok(None);
        }
        let Some(prefix) = src.get(..LENGTH_PREFIX_BYTES) else {
            src.reserve(LENGTH_PREFIX_BYTES - src.len());
            return Ok(None);
        };
        let declared_len = u64::from(u32::from_be_bytes([
            prefix[0], prefix[1], prefix[2], prefix[3],
        ]));
        let max = u64::try_from(self.max_frame_bytes).unwrap_or(u64::MAX);
        if declared_len > max {
            src.advance(LENGTH_PREFIX_BYTES);
            self.state = DecodeState::Discarding {
                remaining: declared_len,
            };
            // Skip what is already here so the buffer does not hold on to it.
            self.discard(src);
            return Ok(Some(Frame::TooLarge { declared_len }));
        }
        // Hand the inner codec only complete frames, so that it always starts at a frame
        // boundary and this wrapper can keep peeking at prefixes. `declared_len <= max`, which
        // is a usize, so the conversion cannot fail.
        let body_len = usize::try_from(declared_len).unwrap_or(usize::MAX);
        let frame_len = LENGTH_PREFIX_BYTES.saturating_add(body_len);
        if src.len() < frame_len {
            src.reserve(frame_len - src.len());
            return Ok(None);
        }
        match self.inner.decode(src)? {
            Some(body) => Ok(Some(Frame::Data(body.freeze()))),
            // Unreachable while the inner codec agrees with the checks above; report it as a
            // truncated frame rather than stalling silently.
            None => Err(CodecError::TruncatedFrame {
                buffered: src.len(),
            }),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        if let Some(frame) = self.decode(src)? {
            return Ok(Some(frame));
        }
        match self.state {
            // An oversized frame cut short loses nothing that was not already reported.
            DecodeState::Discarding { .. } => Ok(None),
            DecodeState::Boundary if src.is_empty() => Ok(None),
            DecodeState::Boundary => Err(CodecError::TruncatedFrame {
                buffered: src.len(),
            }),
        }
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = CodecError;

    fn encode(&mut self, body: Bytes, dst: &mut BytesMut) -> Result<(), CodecError> {
        if body.len() > self.max_frame_bytes {
            return Err(CodecError::OutgoingFrameTooLarge {
                len: body.len(),
                max: self.max_frame_bytes,
            });
        }
        Ok(self.inner.encode(body, dst)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the decoder produced, in a comparable form.
    #[derive(Debug, PartialEq, Eq)]
    enum Item {
        Data(&'static str),
        TooLarge(u64),
        Truncated,
    }

    /// A frame on the wire: prefix plus body.
    fn frame(body: &str) -> Vec<u8> {
        let mut bytes = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        bytes.extend_from_slice(body.as_bytes());
        bytes
    }

    /// A bare length prefix.
    fn prefix(len: u32) -> Vec<u8> {
        len.to_be_bytes().to_vec()
    }

    /// Feeds `chunks` one read at a time into a codec limited to `max` bytes, decoding after
    /// each read and at end of stream, and compares everything decoded with `expected`.
    fn check(max: usize, chunks: &[Vec<u8>], expected: &[Item]) {
        let mut codec = FrameCodec::with_max_frame_bytes(max);
        let mut buffer = BytesMut::new();
        let mut items = Vec::new();
        let mut push = |frame: Frame| {
            items.push(match frame {
                Frame::Data(body) => Item::Data(String::from_utf8(body.to_vec()).unwrap().leak()),
                Frame::TooLarge { declared_len } => Item::TooLarge(declared_len),
            })
        };
        for chunk in chunks {
            buffer.extend_from_slice(chunk);
            while let Some(frame) = codec.decode(&mut buffer).unwrap() {
                push(frame);
            }
        }
        loop {
            match codec.decode_eof(&mut buffer) {
                Ok(Some(frame)) => push(frame),
                Ok(None) => break,
                Err(CodecError::TruncatedFrame { .. }) => {
                    items.push(Item::Truncated);
                    break;
                }
                Err(other) => panic!("unexpected error {other}"),
            }
        }
        assert_eq!(items, expected, "chunks: {chunks:?}");
    }

    /// Splits `bytes` into reads of `size` bytes.
    fn reads_of(size: usize, bytes: &[u8]) -> Vec<Vec<u8>> {
        bytes.chunks(size).map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn whole_frames() {
        check(64, &[frame("{}")], &[Item::Data("{}")]);
        check(
            64,
            &[[frame("a"), frame("bc")].concat()],
            &[Item::Data("a"), Item::Data("bc")],
        );
        check(64, &[frame("")], &[Item::Data("")]);
        check(3, &[frame("abc")], &[Item::Data("abc")]);
        check(64, &[], &[]);
    }

    #[test]
    fn partial_reads() {
        let two = [frame("hello"), frame("world!")].concat();
        let both = [Item::Data("hello"), Item::Data("world!")];
        for size in 1..two.len() {
            check(64, &reads_of(size, &two), &both);
        }
        // The prefix split across reads, then the body split across reads.
        check(
            64,
            &[vec![0, 0], vec![0, 5, b'h'], b"el".to_vec(), b"lo".to_vec()],
            &[Item::Data("hello")],
        );
    }

    #[test]
    fn too_large_is_reported_at_the_prefix_and_skipped() {
        // Reported as soon as the prefix is complete, before any of the body arrives.
        check(4, &[prefix(5)], &[Item::TooLarge(5)]);
        // The largest declarable length, followed by nothing: no allocation, no error.
        check(
            1024,
            &[prefix(u32::MAX)],
            &[Item::TooLarge(u64::from(u32::MAX))],
        );
        // An oversized frame then a good one, in one read.
        check(
            4,
            &[[frame("too long"), frame("ok")].concat()],
            &[Item::TooLarge(8), Item::Data("ok")],
        );
        // The same byte by byte: the discarding state carries across reads.
        let bytes = [frame("too long"), frame("ok"), frame("abcde"), frame("")].concat();
        check(
            4,
            &reads_of(1, &bytes),
            &[
                Item::TooLarge(8),
                Item::Data("ok"),
                Item::TooLarge(5),
                Item::Data(""),
            ],
        );
        for size in 2..bytes.len() {
            check(
                4,
                &reads_of(size, &bytes),
                &[
                    Item::TooLarge(8),
                    Item::Data("ok"),
                    Item::TooLarge(5),
                    Item::Data(""),
                ],
            );
        }
    }

    #[test]
    fn end_of_stream_inside_a_frame() {
        check(64, &[vec![0, 0]], &[Item::Truncated]);
        check(64, &[prefix(5), b"abc".to_vec()], &[Item::Truncated]);
        check(
            64,
            &[frame("ok"), prefix(1)],
            &[Item::Data("ok"), Item::Truncated],
        );
        // Inside an oversized frame's body: already reported, nothing more to say.
        check(2, &[prefix(100), vec![0; 10]], &[Item::TooLarge(100)]);
    }

    #[test]
    fn discarding_does_not_buffer_the_body() {
        let mut codec = FrameCodec::with_max_frame_bytes(16);
        let mut buffer = BytesMut::from(&prefix(1_000_000)[..]);
        buffer.extend_from_slice(&[7; 4096]);
        assert_eq!(
            codec.decode(&mut buffer).unwrap(),
            Some(Frame::TooLarge {
                declared_len: 1_000_000
            })
        );
        assert!(buffer.is_empty());
        buffer.extend_from_slice(&[7; 4096]);
        assert_eq!(codec.decode(&mut buffer).unwrap(), None);
        assert!(buffer.is_empty());
    }

    #[test]
    fn frame_ready_says_whether_decode_would_produce_a_frame() {
        let codec = FrameCodec::with_max_frame_bytes(4);
        let cases: [(Vec<u8>, bool); 6] = [
            (vec![], false),
            (vec![0, 0, 0], false),
            (frame("ab"), true),
            (frame("ab")[..5].to_vec(), false),
            ([frame(""), frame("x")].concat(), true),
            // An oversized frame is reported as soon as its prefix is there.
            (prefix(5), true),
        ];
        for (buffered, expected) in cases {
            assert_eq!(codec.frame_ready(&buffered), expected, "{buffered:?}");
            let mut buffer = BytesMut::from(&buffered[..]);
            let mut probe = FrameCodec::with_max_frame_bytes(4);
            assert_eq!(probe.decode(&mut buffer).unwrap().is_some(), expected);
        }
        // While an oversized body is skipped, nothing is ready.
        let mut codec = FrameCodec::with_max_frame_bytes(4);
        let mut buffer = BytesMut::from(&prefix(10)[..]);
        codec.decode(&mut buffer).unwrap();
        assert!(!codec.frame_ready(&frame("ab")));
    }

    #[test]
    fn the_limit_can_change_between_frames() {
        let mut codec = FrameCodec::with_max_frame_bytes(2);
        let mut buffer = BytesMut::from(&[frame("abc"), frame("abc")].concat()[..]);
        assert_eq!(
            codec.decode(&mut buffer).unwrap(),
            Some(Frame::TooLarge { declared_len: 3 })
        );
        codec.set_max_frame_bytes(3);
        assert_eq!(
            codec.decode(&mut buffer).unwrap(),
            Some(Frame::Data(Bytes::from_static(b"abc")))
        );
    }

    #[test]
    fn encoding_writes_the_prefix_and_refuses_oversized_bodies() {
        let mut codec = FrameCodec::with_max_frame_bytes(4);
        let mut out = BytesMut::new();
        codec.encode(Bytes::from_static(b"{}"), &mut out).unwrap();
        assert_eq!(&out[..], &[0, 0, 0, 2, b'{', b'}']);
        let error = codec
            .encode(Bytes::from_static(b"12345"), &mut out)
            .unwrap_err();
        assert!(matches!(
            error,
            CodecError::OutgoingFrameTooLarge { len: 5, max: 4 }
        ));
        assert_eq!(out.len(), 6, "nothing written for the refused frame");
    }

    #[test]
    fn the_limit_is_clamped_to_what_the_prefix_can_express() {
        let codec = FrameCodec::with_max_frame_bytes(usize::MAX);
        assert_eq!(codec.max_frame_bytes() as u64, u64::from(u32::MAX));
    }

    #[test]
    fn a_refused_frame_is_skipped_and_the_next_one_decodes() {
        let mut codec = FrameCodec::with_max_frame_bytes(100);
        let mut buffer = BytesMut::new();
        buffer.extend_from_slice(&prefix(50));
        buffer.extend_from_slice(&[b'x'; 10]);
        assert_eq!(codec.incomplete_frame_len(&buffer), Some(50));
        assert_eq!(codec.skip_frame(&mut buffer), Some(50));
        assert!(buffer.is_empty());
        assert_eq!(codec.incomplete_frame_len(&buffer), None);
        buffer.extend_from_slice(&[b'x'; 40]);
        buffer.extend_from_slice(&frame("{}"));
        assert_eq!(
            codec.decode(&mut buffer).unwrap(),
            Some(Frame::Data(Bytes::from_static(b"{}")))
        );
        // A whole frame, or one over the maximum, is not "incomplete".
        let codec = FrameCodec::with_max_frame_bytes(100);
        assert_eq!(codec.incomplete_frame_len(&frame("{}")), None);
        assert_eq!(codec.incomplete_frame_len(&prefix(101)), None);
        assert_eq!(codec.incomplete_frame_len(&prefix(0)[..2]), None);
    }
}
