// Encoders of earshot messages, for tests that need streams the server would not send: out of
// order, cut short, with an error in the middle. They write what docs/protocol.md describes, and
// the recorded fixtures check that the parsers read what the server really sends.

import { concat, frame, bytesOf } from './chunking.mjs';

const FRAME_TYPE_BYTES = { session: 0x01, text: 0x02, sentence: 0x03, audio: 0x04, sentence_end: 0x05, done: 0x06, error: 0x07 };

/** One message as SSE. `message` is `{type, ...fields}`; audio carries `pcm` bytes. */
export function toSse({ type, ...fields }) {
  const data = type === 'audio' ? { index: fields.index, seq: fields.seq, data: Buffer.from(fields.pcm).toString('base64') } : fields;
  return bytesOf(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** One message as a binary frame. */
export function toFrame({ type, ...fields }) {
  if (type === 'audio') {
    const header = new Uint8Array(8);
    new DataView(header.buffer).setUint32(0, fields.index);
    new DataView(header.buffer).setUint32(4, fields.seq);
    return frame(FRAME_TYPE_BYTES.audio, concat(header, fields.pcm));
  }
  return frame(FRAME_TYPE_BYTES[type], bytesOf(JSON.stringify(fields)));
}

export const CONTENT_TYPES = { sse: 'text/event-stream', binary: 'application/vnd.earshot.frames.v1' };
export const encoderFor = (format) => (format === 'binary' ? toFrame : toSse);

/** A session message as the server sends it, at a given sample rate. */
export function session(fields = {}) {
  return {
    type: 'session',
    v: 1,
    conversation_id: 'c-test',
    request_id: 'r-test',
    backend: 'kokoro',
    backend_reason: 'request',
    release: 'incremental',
    voice: 'jf_alpha',
    audio: { encoding: 'pcm_s16le', sample_rate: 24000, channels: 1 },
    ...fields,
  };
}

/** `ms` milliseconds of a quiet tone at 24 kHz, as PCM s16le bytes. */
export function tone(ms, sampleRate = 24000) {
  const samples = Math.round((ms * sampleRate) / 1000);
  const pcm = new Uint8Array(samples * 2);
  const view = new DataView(pcm.buffer);
  for (let i = 0; i < samples; i++) view.setInt16(i * 2, Math.round(3000 * Math.sin(i / 10)), true);
  return pcm;
}
