// Gapless playback of streamed audio (PCM, G.711, Ogg Opus through opus.js) with Web Audio.
//
// This module exists to keep the browser's audio clock apart from the protocol: it takes PCM as it
// arrives, turns each piece into an AudioBuffer and schedules it right after the previous one on a
// single AudioContext, so the pieces join without clicks or gaps when they come in time and an
// underrun is measured (not hidden) when they do not. It also owns the two things a page must get
// right around audio: the autoplay policy (unlock() from a user gesture) and stopping everything at
// once (stopAll()).
//
// Times: Web Audio counts in seconds on its own clock (ctx.currentTime); the rest of the client
// counts in performance.now() milliseconds. toPerformanceTime() converts, and audibleAt() adds the
// output latency the context reports, so "audible start" means when the sound leaves the speaker.

import { OggOpusDecoder, opusSupported } from './opus.js';

const SAMPLE_BYTES = 2;
/** A change of the clocks' offset larger than this is a jump, not jitter. */
const CLOCK_JUMP_MS = 50;

/**
 * The encodings a `session` may announce (docs/protocol.md, "Audio formats"), with a sample's bytes (Ogg
 * Opus: 1, its bytes are pages, never split into samples).
 */
const ENCODINGS = { pcm_s16le: 2, mulaw: 1, alaw: 1, ogg_opus: 1 };

/** Bytes of one sample in `format` (PCM 2, G.711 1); throws for an encoding this page cannot play. */
export function sampleBytes(format) {
  const bytes = ENCODINGS[format.encoding];
  if (bytes === undefined) throw new Error(`unsupported audio encoding \`${format.encoding}\``);
  if (format.encoding === 'ogg_opus' && !opusSupported()) throw new Error('unsupported audio encoding `ogg_opus`: this browser has no WebCodecs AudioDecoder');
  return bytes;
}

/** Converts little-endian signed 16-bit PCM to floats in [-1, 1). */
export function pcmS16leToFloat32(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Float32Array(bytes.byteLength / SAMPLE_BYTES);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * SAMPLE_BYTES, true) / 32768;
  return samples;
}

/** G.711 μ-law byte to a 16-bit sample (ITU-T G.711, as the gateway and CPython's audioop decode it). */
function ulawToLinear(byte) {
  const u = ~byte & 0xff;
  const t = (((u & 0x0f) << 3) + 0x84) << ((u & 0x70) >> 4);
  return u & 0x80 ? 0x84 - t : t - 0x84;
}

/** G.711 A-law byte to a 16-bit sample. */
function alawToLinear(byte) {
  const a = byte ^ 0x55;
  let t = (a & 0x0f) << 4;
  const seg = (a & 0x70) >> 4;
  if (seg === 0) t += 8;
  else if (seg === 1) t += 0x108;
  else t = (t + 0x108) << (seg - 1);
  return a & 0x80 ? t : -t;
}

/** Each of the 256 bytes of a G.711 law as a float in [-1, 1). */
const G711 = {
  mulaw: Float32Array.from({ length: 256 }, (_, b) => ulawToLinear(b) / 32768),
  alaw: Float32Array.from({ length: 256 }, (_, b) => alawToLinear(b) / 32768),
};

/** An `audio` message's bytes as floats in [-1, 1), by the session's encoding. */
export function decodeSamples(bytes, encoding) {
  if (encoding === 'pcm_s16le') return pcmS16leToFloat32(bytes);
  const table = G711[encoding];
  if (!table) throw new Error(`unsupported audio encoding \`${encoding}\``);
  const samples = new Float32Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) samples[i] = table[bytes[i]];
  return samples;
}

/**
 * Joins a sentence's audio messages into whole samples. A message is a piece of the stream, not a
 * playable unit: nothing in the protocol keeps a 16-bit sample from straddling two messages, so an
 * odd trailing byte waits for the next piece of the same sentence. A sentence that ends on half a
 * sample is malformed.
 */
export class SampleJoiner {
  /** @param {number} [bytesPerSample] 2 for PCM (the default); 1 (G.711) never leaves anything over. */
  constructor(bytesPerSample = SAMPLE_BYTES) {
    this.bytesPerSample = bytesPerSample;
    this.carry = null;
  }

  /** The whole samples `pcm` completes (possibly empty). */
  push(pcm) {
    let bytes = pcm;
    if (this.carry !== null) {
      bytes = new Uint8Array(pcm.length + 1);
      bytes[0] = this.carry;
      bytes.set(pcm, 1);
      this.carry = null;
    }
    if (this.bytesPerSample === 2 && bytes.length % 2 === 1) {
      this.carry = bytes[bytes.length - 1];
      bytes = bytes.subarray(0, bytes.length - 1);
    }
    return bytes;
  }

  /** Ends a sentence; throws when half a sample is left over. */
  finish() {
    const leftOver = this.carry !== null;
    this.carry = null;
    if (leftOver) throw new Error('the sentence\'s audio ends in half a sample');
  }
}

export class PcmPlayer {
  /** @param {{createContext?: () => AudioContext}} [options] */
  constructor(options = {}) {
    this.createContext = options.createContext ?? (() => new AudioContext({ latencyHint: 'interactive' }));
    this.ctx = null;
    /** Where every source plays into: a gain (so a stop is immediate) and an analyser (a level meter). */
    this.output = null;
    this.analyser = null;
    /** Sources scheduled and not yet ended. */
    this.sources = new Set();
    /** Context time at which the audio scheduled so far ends. */
    this.nextTime = 0;
    this.counters = { scheduled: 0, ended: 0, stopped: 0 };
    this.format = null;
    /** The Ogg Opus stream's decoder, for an `ogg_opus` answer. */
    this.opus = null;
    /** Who began the current stream, so that a finished conversation cannot stop a newer one. */
    this.owner = null;
    this.clockOffsetMs = null;
  }

  /**
   * Creates the context (once) and resumes it. Call it from a user gesture (a click), before any
   * await, so the browser's autoplay policy lets the sound through.
   */
  unlock() {
    if (!this.ctx) {
      this.ctx = this.createContext();
      this.analyser = this.ctx.createAnalyser();
      this.analyser.fftSize = 2048;
      this.analyser.connect(this.ctx.destination);
    }
    if (this.ctx.state === 'suspended') return this.ctx.resume();
    return Promise.resolve();
  }

  /** Whether the browser lets this context play now. */
  get locked() {
    return !this.ctx || this.ctx.state !== 'running';
  }

  /** Starts a new stream of the given format; audio of an earlier stream is stopped. */
  begin(format) {
    sampleBytes(format);
    if (format.channels !== 1) throw new Error(`unsupported channel count ${format.channels}`);
    this.unlock();
    this.stopAll();
    this.format = format;
    if (format.encoding === 'ogg_opus') this.opus = new OggOpusDecoder();
    this.output = this.ctx.createGain();
    this.output.connect(this.analyser);
    this.nextTime = 0;
    this.clockOffsetMs = null;
  }

  /**
   * Schedules a piece of audio right after what is already scheduled, or now if that has run out.
   * Returns the AudioBuffer's schedule: context times and, when it starts late, the underrun. Ogg Opus
   * decodes asynchronously: its schedule comes as a promise, in the order the pieces were given (null
   * where nothing was left to play, or the stream was stopped meanwhile).
   */
  enqueue(pcm) {
    if (!this.format) throw new Error('enqueue before begin');
    if (this.opus) {
      const opus = this.opus;
      return opus.decode(pcm).then((samples) => (this.opus === opus && samples.length > 0 ? this.schedule(samples) : null));
    }
    return this.schedule(decodeSamples(pcm, this.format.encoding));
  }

  /** Waits for audio still decoding (Ogg Opus) to come out of the decoder. */
  flush() {
    return this.opus?.flush() ?? Promise.resolve();
  }

  /** Schedules decoded samples (floats at the stream's rate). */
  schedule(samples) {
    const ctx = this.ctx;
    const buffer = ctx.createBuffer(1, samples.length, this.format.sample_rate);
    buffer.copyToChannel(samples, 0);
    const decodedAt = performance.now();
    const source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(this.output);
    const now = ctx.currentTime;
    const previousEnd = this.nextTime;
    const start = Math.max(previousEnd, now);
    source.start(start);
    this.nextTime = start + buffer.duration;
    this.sources.add(source);
    this.counters.scheduled++;
    source.onended = () => {
      this.sources.delete(source);
      this.counters.ended++;
    };
    return {
      decodedAt,
      start,
      end: this.nextTime,
      previousEnd,
      // the silence before this buffer because it came after the audio before it had finished
      underrunSeconds: previousEnd > 0 ? Math.max(0, now - previousEnd) : 0,
    };
  }

  /** Stops every scheduled source at once; nothing more sounds from what was scheduled. */
  stopAll() {
    if (this.output) {
      // Silence at once, even for the render quantum already in flight, then drop the sources.
      this.output.gain.value = 0;
      this.output.disconnect();
      this.output = null;
    }
    for (const source of this.sources) {
      try {
        source.stop();
      } catch {
        // never started: nothing to stop
      }
      this.counters.stopped++;
    }
    this.sources.clear();
    this.nextTime = 0;
    this.format = null;
    this.opus?.close();
    this.opus = null;
  }

  /** Sources scheduled and not yet ended (0 when nothing can sound). */
  get playing() {
    return this.sources.size;
  }

  /**
   * A context time as performance.now() milliseconds. The two clocks' offset is estimated from
   * (performance.now(), ctx.currentTime) pairs; currentTime only moves once per render quantum, so
   * each pair overstates the offset by up to a quantum, and the smallest one seen is kept, which
   * keeps the times of one stream consistent with each other. A jump (the context was suspended,
   * its clock stood still) starts a new estimate.
   */
  toPerformanceTime(contextTime) {
    const observed = performance.now() - this.ctx.currentTime * 1000;
    if (this.clockOffsetMs === null || observed < this.clockOffsetMs || observed - this.clockOffsetMs > CLOCK_JUMP_MS) {
      this.clockOffsetMs = observed;
    }
    return contextTime * 1000 + this.clockOffsetMs;
  }

  /** The output latency the context reports, in milliseconds. */
  get outputLatencyMs() {
    if (!this.ctx) return 0;
    return ((this.ctx.outputLatency || this.ctx.baseLatency) ?? 0) * 1000;
  }

  /** When audio scheduled at `contextTime` reaches the listener, in performance.now() milliseconds. */
  audibleAt(contextTime) {
    return this.toPerformanceTime(contextTime) + this.outputLatencyMs;
  }

  /** The RMS level of what plays now (0 is silence). */
  level() {
    if (!this.analyser) return 0;
    const samples = new Float32Array(this.analyser.fftSize);
    this.analyser.getFloatTimeDomainData(samples);
    let sum = 0;
    for (const s of samples) sum += s * s;
    return Math.sqrt(sum / samples.length);
  }
}
