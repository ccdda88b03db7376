// hookd's frames: a 4-byte big-endian length, then that many bytes of one JSON object.

/** The largest frame body a client reads before the daemon's `hello` says otherwise. */
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** Encodes one message as a frame. */
export function encodeFrame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), "utf8");
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, 4);
  return frame;
}

/** A frame whose declared length is over the limit. */
export class FrameTooLargeError extends Error {
  override name = "FrameTooLargeError";
}

/**
 * Splits a byte stream into frame bodies: pieces may arrive split anywhere, and several
 * frames may come in one piece.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(public maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES) {}

  /** Adds received bytes and returns the bodies of the frames now complete. */
  push(data: Buffer): Buffer[] {
    this.chunks.push(data);
    this.buffered += data.length;
    const bodies: Buffer[] = [];
    for (;;) {
      if (this.buffered < 4) {
        break;
      }
      const head = this.peek(4);
      const length = head.readUInt32BE(0);
      if (length > this.maxFrameBytes) {
        throw new FrameTooLargeError(`the daemon sent a ${length}-byte frame, over the limit of ${this.maxFrameBytes}`);
      }
      if (this.buffered < 4 + length) {
        break;
      }
      const frame = this.take(4 + length);
      bodies.push(frame.subarray(4));
    }
    return bodies;
  }

  private peek(size: number): Buffer {
    const first = this.chunks[0];
    if (first && first.length >= size) {
      return first.subarray(0, size);
    }
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined.subarray(0, size);
  }

  private take(size: number): Buffer {
    let first = this.chunks[0];
    if (!first || first.length < size) {
      first = Buffer.concat(this.chunks);
      this.chunks = [first];
    }
    const taken = first.subarray(0, size);
    if (first.length === size) {
      this.chunks.shift();
    } else {
      this.chunks[0] = first.subarray(size);
    }
    this.buffered -= size;
    return taken;
  }
}
