// Ogg Opus answers (`output_format: opus_48000`) decoded in the browser as they stream.
//
// This module exists because no browser API plays a live Ogg stream piece by piece: decodeAudioData
// wants a whole file, and Media Source does not take Ogg. WebCodecs' AudioDecoder decodes Opus packets,
// so the Ogg framing around them (RFC 3533: pages of lacing-coded packets) is read here, the headers
// (RFC 7845: OpusHead's pre-skip) are honoured, and each audio message's packets come back as one
// piece of 48 kHz samples, in order, for the player to schedule like PCM.
//
// The gateway sends whole pages in each message and the headers in the first; a page split across
// messages is still joined, as a stream may be cut anywhere.

const CAPTURE = [0x4f, 0x67, 0x67, 0x53]; // "OggS"
const HEADER_BYTES = 27;
/** Opus's own rate: every Ogg Opus stream decodes at 48 kHz. */
export const OPUS_RATE = 48_000;

/** Whether this browser can decode Opus packets (WebCodecs). */
export function opusSupported() {
  return typeof globalThis.AudioDecoder === 'function' && typeof globalThis.EncodedAudioChunk === 'function';
}

/** Reads Ogg pages from pieces of a stream and gives back the packets they complete, in order. */
export class OggPackets {
  constructor() {
    this.buffered = new Uint8Array(0);
    /** The parts of a packet that continues on the next page. */
    this.partial = [];
  }

  /** The whole packets that `bytes` completes. Throws where the bytes are not Ogg. */
  push(bytes) {
    const data = new Uint8Array(this.buffered.length + bytes.length);
    data.set(this.buffered);
    data.set(bytes, this.buffered.length);
    const packets = [];
    let at = 0;
    while (data.length - at >= HEADER_BYTES) {
      if (CAPTURE.some((b, i) => data[at + i] !== b)) throw new Error('not an Ogg page (no OggS capture pattern)');
      const segments = data[at + 26];
      const bodyAt = at + HEADER_BYTES + segments;
      if (data.length < bodyAt) break;
      const lacing = data.subarray(at + HEADER_BYTES, bodyAt);
      const bodyLength = lacing.reduce((sum, n) => sum + n, 0);
      if (data.length < bodyAt + bodyLength) break;
      let offset = bodyAt;
      let start = offset;
      for (const size of lacing) {
        offset += size;
        // A lacing value under 255 ends a packet; 255 at the page's end continues it on the next page.
        if (size < 255) {
          this.partial.push(data.slice(start, offset));
          packets.push(concat(this.partial));
          this.partial = [];
          start = offset;
        }
      }
      if (start < offset) this.partial.push(data.slice(start, offset));
      at = bodyAt + bodyLength;
    }
    this.buffered = data.slice(at);
    return packets;
  }
}

/** `parts` (typed arrays of one `Type`) as one. */
function concat(parts, Type = Uint8Array) {
  if (parts.length === 1) return parts[0];
  const out = new Type(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Samples at 48 kHz in an Opus packet, from its table-of-contents byte (RFC 6716 §3.1). */
export function opusPacketSamples(packet) {
  if (packet.length === 0) return 0;
  const config = packet[0] >> 3;
  let ms;
  if (config < 12) ms = [10, 20, 40, 60][config % 4];
  else if (config < 16) ms = [10, 20][config % 2];
  else ms = [2.5, 5, 10, 20][config % 4];
  const code = packet[0] & 3;
  const frames = code === 0 ? 1 : code < 3 ? 2 : (packet[1] ?? 0) & 0x3f;
  return frames * ms * 48;
}

/** One Ogg Opus stream: bytes in, 48 kHz mono samples out, a message at a time and in order. */
export class OggOpusDecoder {
  constructor() {
    if (!opusSupported()) throw new Error('this browser cannot decode Opus (no WebCodecs AudioDecoder)');
    this.packets = new OggPackets();
    this.headers = 0;
    this.preSkip = 0;
    this.timestamp = 0;
    /** One entry per decode() call, oldest first: the outputs it still waits for and its samples. */
    this.pending = [];
    this.failed = null;
    this.decoder = new AudioDecoder({
      output: (data) => this.output(data),
      error: (e) => this.fail(e),
    });
    this.decoder.configure({ codec: 'opus', sampleRate: OPUS_RATE, numberOfChannels: 1 });
  }

  /** The samples of the packets `bytes` completes (an empty array for the headers alone). */
  decode(bytes) {
    if (this.failed) return Promise.reject(this.failed);
    let packets;
    try {
      packets = this.packets.push(bytes);
    } catch (e) {
      return Promise.reject(e);
    }
    const audio = [];
    for (const packet of packets) {
      if (this.headers === 0) {
        const magic = String.fromCharCode(...packet.subarray(0, 8));
        if (magic !== 'OpusHead' || packet.length < 19) return Promise.reject(new Error('the first Ogg packet is not an OpusHead'));
        if (packet[9] !== 1) return Promise.reject(new Error(`${packet[9]} channels (mono expected)`));
        this.preSkip = packet[10] | (packet[11] << 8);
        this.headers = 1;
      } else if (this.headers === 1) {
        this.headers = 2; // OpusTags: nothing in it matters for playback
      } else {
        audio.push(packet);
      }
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ waiting: audio.length, parts: [], resolve, reject });
      for (const packet of audio) {
        const duration = (opusPacketSamples(packet) / OPUS_RATE) * 1e6;
        this.decoder.decode(new EncodedAudioChunk({ type: 'key', timestamp: this.timestamp, duration, data: packet }));
        this.timestamp += duration;
      }
      this.settle();
    });
  }

  output(data) {
    let samples = new Float32Array(data.numberOfFrames);
    try {
      data.copyTo(samples, { planeIndex: 0, format: 'f32-planar' });
    } catch {
      // A browser that cannot convert on copy: its own layout (mono, so planar and interleaved agree).
      if (data.format.startsWith('s16')) {
        const ints = new Int16Array(data.numberOfFrames);
        data.copyTo(ints, { planeIndex: 0 });
        samples = Float32Array.from(ints, (s) => s / 32768);
      } else {
        data.copyTo(samples, { planeIndex: 0 });
      }
    }
    data.close();
    // The encoder's delay at the stream's front (OpusHead's pre-skip) is not audio.
    const skip = Math.min(this.preSkip, samples.length);
    this.preSkip -= skip;
    const entry = this.pending.find((p) => p.waiting > 0);
    if (!entry) return;
    entry.parts.push(samples.subarray(skip));
    entry.waiting--;
    this.settle();
  }

  /** Resolves, in order, every call whose packets have all come out. */
  settle() {
    while (this.pending.length > 0 && this.pending[0].waiting === 0) {
      const { parts, resolve } = this.pending.shift();
      resolve(concat(parts, Float32Array));
    }
  }

  fail(e) {
    this.failed = e instanceof Error ? e : new Error(String(e));
    for (const { reject } of this.pending.splice(0)) reject(this.failed);
  }

  /** Waits until every packet given has come out of the decoder (WebCodecs may hold the last ones). */
  flush() {
    if (this.decoder.state !== 'configured' || this.pending.length === 0) return Promise.resolve();
    return this.decoder.flush().catch(() => {});
  }

  /** Stops decoding; calls still waiting resolve with no samples (nothing more is played). */
  close() {
    for (const { resolve } of this.pending.splice(0)) resolve(new Float32Array(0));
    if (this.decoder.state !== 'closed') this.decoder.close();
  }
}
