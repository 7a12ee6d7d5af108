// Helpers of the parser tests: a seeded random source, ways to cut a byte stream into network
// chunks, and a plain view of parsed messages for comparison. Seeded, so that a failing cut can be
// replayed: every test names its seed in its failure message.

/** A seeded pseudo-random generator (mulberry32) returning floats in [0, 1). */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Cuts `bytes` into chunks of random sizes. Each cut draws its size scale at random too, so one
 * stream mixes single bytes, small pieces and large ones, as a network does.
 */
export function randomChunks(bytes, random) {
  const scales = [1, 3, 16, 300, 5000, 70000];
  const chunks = [];
  let offset = 0;
  while (offset < bytes.length) {
    const scale = scales[Math.floor(random() * scales.length)];
    const size = 1 + Math.floor(random() * scale);
    chunks.push(bytes.subarray(offset, offset + size));
    offset += size;
  }
  return chunks;
}

/** Every two-way cut of `bytes` (at each position), for short streams. */
export function* everySplit(bytes) {
  for (let at = 0; at <= bytes.length; at++) yield [bytes.subarray(0, at), bytes.subarray(at)];
}

/** Feeds chunks to a parser, then ends the stream; returns every message. */
export function feed(parser, chunks) {
  const messages = [];
  for (const chunk of chunks) messages.push(...parser.push(chunk));
  parser.finish();
  return messages;
}

/** Messages with their PCM as hex, for deepStrictEqual and readable diffs. */
export function plain(messages) {
  return messages.map((m) => (m.type === 'audio' ? { ...m, pcm: Buffer.from(m.pcm).toString('hex') } : m));
}

/** UTF-8 bytes of a string. */
export const bytesOf = (text) => new TextEncoder().encode(text);

/** Concatenates byte arrays. */
export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** A binary frame: type byte, big-endian u32 length, payload. */
export function frame(typeByte, payload) {
  const out = new Uint8Array(5 + payload.length);
  out[0] = typeByte;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

/** Splits a binary stream into its frames (for rearranging recorded streams in tests). */
export function framesOf(bytes) {
  const frames = [];
  let offset = 0;
  while (offset < bytes.length) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, 4).getUint32(0);
    frames.push(bytes.subarray(offset, offset + 5 + length));
    offset += 5 + length;
  }
  return frames;
}

/** Splits an SSE stream (written with \n line endings) into its message blocks, each with its blank line. */
export function sseBlocksOf(text) {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => `${block}\n\n`);
}
