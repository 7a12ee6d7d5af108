// The earshot wire protocol, version 1, as incremental parsers (docs/protocol.md).
//
// This module exists so that the hard part of the client — turning a byte stream into messages, for
// any way the network happens to cut it — is plain code with no browser dependency: Node's test
// runner imports it and feeds it recorded streams in random pieces. It knows nothing of audio
// playback or the DOM.
//
// Both parsers take bytes (Uint8Array) as they arrive and return the messages those bytes complete.
// A message is a plain object with a `type` and the fields of docs/protocol.md; an audio message
// holds its PCM as `pcm` (a Uint8Array) whichever the delivery. Types this version does not know
// are skipped. Anything that cannot be read is a ProtocolError: the stream cannot be trusted past
// it, so the caller stops; the parsers never guess.

export const PROTOCOL_VERSION = 1;

export const SSE_CONTENT_TYPE = 'text/event-stream';
export const BINARY_CONTENT_TYPE = 'application/vnd.earshot.frames.v1';

/** The largest payload a binary frame may carry. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** Frame type bytes of the binary delivery. */
export const FRAME_TYPES = Object.freeze({
  0x00: 'keep_alive',
  0x01: 'session',
  0x02: 'text',
  0x03: 'sentence',
  0x04: 'audio',
  0x05: 'sentence_end',
  0x06: 'done',
  0x07: 'error',
  0x08: 'words',
});
const AUDIO_FRAME = 0x04;
const KEEP_ALIVE_FRAME = 0x00;
const FRAME_HEADER_BYTES = 5;
const AUDIO_HEADER_BYTES = 8;

/** A stream that cannot be read. `code` is stable, `message` says what was wrong. */
export class ProtocolError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function malformed(type, detail) {
  return new ProtocolError('malformed_message', `malformed ${type} message: ${detail}`);
}

// ---------------------------------------------------------------------------------------------
// Message shapes. Fields a message must have, with their kind; extra fields are allowed (a later
// version may add some). A message missing one of these is malformed.

const isIndex = (v) => Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
const isNumber = (v) => typeof v === 'number' && Number.isFinite(v);
const isString = (v) => typeof v === 'string';
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

const CONTROL_SHAPES = {
  session: {
    v: isIndex,
    conversation_id: isString,
    request_id: isString,
    backend: isString,
    backend_reason: isString,
    release: isString,
    voice: isString,
    audio: (a) => isObject(a) && isString(a.encoding) && isIndex(a.sample_rate) && a.sample_rate > 0 && isIndex(a.channels) && a.channels > 0,
  },
  text: { text: isString },
  sentence: { index: isIndex, text: isString },
  words: {
    index: isIndex,
    timing: isString,
    words: (w) => Array.isArray(w) && w.every((x) => isObject(x) && isString(x.text) && isNumber(x.start_ms) && isNumber(x.end_ms) && x.start_ms <= x.end_ms),
  },
  sentence_end: { index: isIndex, audio_ms: isNumber },
  done: { timeline: isObject },
  error: { code: isString, message: isString, retryable: (v) => typeof v === 'boolean' },
};

function checkShape(type, value) {
  if (!isObject(value)) throw malformed(type, 'the payload is not a JSON object');
  const shape = CONTROL_SHAPES[type];
  for (const [field, valid] of Object.entries(shape)) {
    if (!(field in value)) throw malformed(type, `\`${field}\` is missing`);
    if (!valid(value[field])) throw malformed(type, `\`${field}\` has the wrong type or value`);
  }
}

/** A control message (anything but audio) from its JSON bytes; null for a type to skip. */
function controlMessage(type, jsonBytes) {
  if (!(type in CONTROL_SHAPES)) return null;
  let value;
  try {
    value = JSON.parse(utf8.decode(jsonBytes));
  } catch (e) {
    throw malformed(type, `unreadable JSON (${e.message})`);
  }
  checkShape(type, value);
  return { ...value, type };
}

// ---------------------------------------------------------------------------------------------
// Base64, strictly: the standard alphabet, padded to a multiple of four, no whitespace. (atob
// accepts whitespace and missing padding; a damaged payload must be an error, not different audio.)

const BASE64_VALUES = new Int16Array(256).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((c, i) => {
  BASE64_VALUES[c.charCodeAt(0)] = i;
});

function base64Value(text, i) {
  const code = text.charCodeAt(i);
  return code < 256 ? BASE64_VALUES[code] : -1;
}

export function decodeBase64(text) {
  if (text.length % 4 !== 0) throw new Error(`base64 of ${text.length} characters is not padded`);
  let padding = 0;
  if (text.endsWith('==')) padding = 2;
  else if (text.endsWith('=')) padding = 1;
  const out = new Uint8Array((text.length / 4) * 3 - padding);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    const last = i + 4 === text.length;
    const a = base64Value(text, i);
    const b = base64Value(text, i + 1);
    const c = last && padding === 2 ? 0 : base64Value(text, i + 2);
    const d = last && padding >= 1 ? 0 : base64Value(text, i + 3);
    if ((a | b | c | d) < 0) throw new Error(`invalid base64 character near offset ${i}`);
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = n >> 16;
    if (o < out.length) out[o++] = (n >> 8) & 0xff;
    if (o < out.length) out[o++] = n & 0xff;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// A growable byte buffer: the bytes of the message (SSE line or binary frame) still incomplete.

class ByteQueue {
  constructor() {
    this.bytes = new Uint8Array(4096);
    this.start = 0;
    this.end = 0;
  }
  get length() {
    return this.end - this.start;
  }
  append(chunk) {
    if (this.end + chunk.length > this.bytes.length) {
      const needed = this.length + chunk.length;
      const target = needed > this.bytes.length / 2 ? new Uint8Array(Math.max(needed * 2, 4096)) : this.bytes;
      target.set(this.bytes.subarray(this.start, this.end));
      this.bytes = target;
      this.end = this.length;
      this.start = 0;
    }
    this.bytes.set(chunk, this.end);
    this.end += chunk.length;
  }
  at(offset) {
    return this.bytes[this.start + offset];
  }
  /** Removes and returns (as a copy) the first `n` bytes. */
  take(n) {
    const out = this.bytes.slice(this.start, this.start + n);
    this.start += n;
    if (this.start === this.end) this.start = this.end = 0;
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// SSE. Lines end in \n, \r\n or \r; a \r at the end of one chunk and a \n at the start of the next
// are one line ending. Lines starting with ':' are comments. `event:` names the type, `data:` lines
// are joined with \n, a blank line dispatches. As in the HTML standard, a block with no data
// dispatches nothing, a missing `event:` means `message` (a type this version skips), and a byte
// order mark at the very start is ignored.

export class SseParser {
  constructor() {
    this.line = new ByteQueue();
    this.afterCarriageReturn = false;
    this.atStreamStart = true;
    this.eventType = null;
    this.dataLines = [];
  }

  /** The type of the message now partly received (its `event:` line seen), or null. */
  get partialType() {
    return this.eventType ?? (this.dataLines.length > 0 ? 'message' : null);
  }

  push(chunk) {
    const messages = [];
    let lineStart = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte !== 0x0a && byte !== 0x0d) continue;
      if (this.afterCarriageReturn && byte === 0x0a && i === lineStart && this.line.length === 0) {
        // the \n of a \r\n whose \r ended the previous line
        this.afterCarriageReturn = false;
        lineStart = i + 1;
        continue;
      }
      this.line.append(chunk.subarray(lineStart, i));
      const message = this.lineDone(this.line.take(this.line.length));
      if (message) messages.push(message);
      this.afterCarriageReturn = byte === 0x0d;
      lineStart = i + 1;
    }
    if (lineStart < chunk.length) {
      this.line.append(chunk.subarray(lineStart));
      this.afterCarriageReturn = false;
    }
    return messages;
  }

  /** Says the stream ended; throws when it ended inside a message. */
  finish() {
    if (this.line.length > 0 || this.dataLines.length > 0 || this.eventType !== null) {
      throw new ProtocolError('truncated', 'the stream ended inside a message');
    }
  }

  lineDone(lineBytes) {
    if (this.atStreamStart) {
      this.atStreamStart = false;
      if (lineBytes[0] === 0xef && lineBytes[1] === 0xbb && lineBytes[2] === 0xbf) lineBytes = lineBytes.subarray(3);
    }
    if (lineBytes.length === 0) return this.dispatch();
    if (lineBytes[0] === 0x3a) return null; // a comment, such as a keep-alive
    let line;
    try {
      line = utf8.decode(lineBytes);
    } catch {
      throw new ProtocolError('malformed_message', 'an SSE line is not valid UTF-8');
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.eventType = value;
    else if (field === 'data') this.dataLines.push(value);
    // `id`, `retry` and unknown fields do not concern this protocol
    return null;
  }

  dispatch() {
    const type = this.eventType ?? 'message';
    const data = this.dataLines.join('\n');
    const hadData = this.dataLines.length > 0;
    this.eventType = null;
    this.dataLines = [];
    if (!hadData) return null;
    if (type === 'audio') return sseAudio(data);
    if (!(type in CONTROL_SHAPES)) return null;
    let value;
    try {
      value = JSON.parse(data);
    } catch (e) {
      throw malformed(type, `unreadable JSON (${e.message})`);
    }
    checkShape(type, value);
    return { ...value, type };
  }
}

function sseAudio(data) {
  let value;
  try {
    value = JSON.parse(data);
  } catch (e) {
    throw malformed('audio', `unreadable JSON (${e.message})`);
  }
  if (!isObject(value)) throw malformed('audio', 'the payload is not a JSON object');
  if (!isIndex(value.index)) throw malformed('audio', '`index` is missing or not an index');
  if (!isIndex(value.seq)) throw malformed('audio', '`seq` is missing or not an index');
  if (!isString(value.data)) throw malformed('audio', '`data` is missing or not a string');
  let pcm;
  try {
    pcm = decodeBase64(value.data);
  } catch (e) {
    throw malformed('audio', e.message);
  }
  return { type: 'audio', index: value.index, seq: value.seq, pcm };
}

// ---------------------------------------------------------------------------------------------
// Binary frames: a type byte, a big-endian u32 payload length, the payload. The type byte alone says
// what a frame holds. Unknown types (and keep-alives) are skipped whole, after their length is
// checked, so a damaged length is still caught.

export class BinaryFrameParser {
  constructor() {
    this.buffer = new ByteQueue();
  }

  /** The type of the frame now partly received (its header seen), or null. */
  get partialType() {
    if (this.buffer.length < FRAME_HEADER_BYTES) return null;
    return FRAME_TYPES[this.buffer.at(0)] ?? 'unknown';
  }

  push(chunk) {
    this.buffer.append(chunk);
    const messages = [];
    while (this.buffer.length >= FRAME_HEADER_BYTES) {
      const typeByte = this.buffer.at(0);
      const length = ((this.buffer.at(1) << 24) >>> 0) + (this.buffer.at(2) << 16) + (this.buffer.at(3) << 8) + this.buffer.at(4);
      if (length > MAX_FRAME_BYTES) {
        throw new ProtocolError('frame_too_large', `a frame of ${length} bytes is larger than the ${MAX_FRAME_BYTES} byte limit`);
      }
      if (this.buffer.length < FRAME_HEADER_BYTES + length) break;
      const frame = this.buffer.take(FRAME_HEADER_BYTES + length);
      const payload = frame.subarray(FRAME_HEADER_BYTES);
      const message = frameMessage(typeByte, payload);
      if (message) messages.push(message);
    }
    return messages;
  }

  /** Says the stream ended; throws when it ended inside a frame. */
  finish() {
    if (this.buffer.length > 0) throw new ProtocolError('truncated', 'the stream ended inside a frame');
  }
}

function frameMessage(typeByte, payload) {
  if (typeByte === KEEP_ALIVE_FRAME) return null;
  if (typeByte === AUDIO_FRAME) {
    if (payload.length < AUDIO_HEADER_BYTES) {
      throw malformed('audio', `an audio payload of ${payload.length} bytes has no header`);
    }
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    return { type: 'audio', index: view.getUint32(0), seq: view.getUint32(4), pcm: payload.subarray(AUDIO_HEADER_BYTES) };
  }
  const type = FRAME_TYPES[typeByte];
  if (type === undefined) return null;
  return controlMessage(type, payload);
}

// ---------------------------------------------------------------------------------------------

/**
 * The parser for a response, chosen by its content type (what the server says it sent), never by
 * looking at the body.
 */
export function parserForContentType(contentType) {
  const mediaType = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (mediaType === SSE_CONTENT_TYPE) return new SseParser();
  if (mediaType === BINARY_CONTENT_TYPE) return new BinaryFrameParser();
  throw new ProtocolError('unexpected_content_type', `the response is \`${contentType || 'untyped'}\`, not an earshot stream`);
}

/** Parses a whole recorded stream (for tests and tools). */
export function parseAll(parser, bytes) {
  const messages = parser.push(bytes);
  parser.finish();
  return messages;
}
