// The earshot browser client: the one module a page imports.
//
// speak() sends a request to `POST /v1/speak`, reads the answer as a stream (SSE or binary frames,
// see docs/protocol.md), plays each sentence's audio the moment it arrives, and records when each
// step happened on the page's clock, so that time to first audio can be measured where it matters:
// at the listener. It exists to tie together the parser (protocol.js) and the player (player.js),
// which stay independent of each other, and to hold the rules of a conversation: message order,
// errors, interruption.
//
//   import { speak, unlock, interrupt } from '/earshot.js';
//   button.onclick = () => {
//     const conversation = speak({ prompt: 'brief', release: 'incremental', format: 'binary',
//                                  onSentencePlaying: (s) => highlight(s.index) });
//     conversation.finished.then((record) => console.log(record.marks));
//   };
//
// All marks are performance.now() milliseconds. The server's own marks (milliseconds since it
// received the request) arrive in `done` and are kept as `record.server`.

import { parserForContentType, ProtocolError, PROTOCOL_VERSION, BINARY_CONTENT_TYPE, SSE_CONTENT_TYPE } from './protocol.js';
import { PcmPlayer, SampleJoiner, sampleBytes } from './player.js';

export { PROTOCOL_VERSION, ProtocolError, SseParser, BinaryFrameParser, parserForContentType } from './protocol.js';
export { PcmPlayer, SampleJoiner } from './player.js';

/** A failure of a conversation: an HTTP error, an `error` message, an unreadable stream, the network. */
export class EarshotError extends Error {
  constructor(code, message, { retryable = false, status = null } = {}) {
    super(message);
    this.name = 'EarshotError';
    this.code = code;
    this.retryable = retryable;
    this.status = status;
  }

  toJSON() {
    return { code: this.code, message: this.message, retryable: this.retryable, status: this.status };
  }
}

/** The player every conversation of this page shares (one AudioContext per page). */
export const player = new PcmPlayer();

let current = null;

/** Lets the page play sound. Call it from a user gesture; speak() does, when called from one. */
export function unlock() {
  return player.unlock();
}

/** Stops the conversation in progress, if any (its request), and every sound at once. */
export function interrupt() {
  current?.interrupt();
  player.stopAll();
}

// A page that goes lets go of its answer. A function URL does not stop a streaming response when its
// client leaves: a closed tab would keep the Lambda (a reserved-concurrency slot, the caller's place) and
// the voice working for minutes. So the interrupt is sent as the page goes: on `pagehide` (closed,
// navigated away, put in the back-forward cache), and when it is hidden while an answer runs (a tab
// switched away, a phone locked: a hidden page's timers and audio may be frozen, and a frozen page sends
// nothing). Its fetch is `keepalive`, so it outlives the page.
if (typeof window !== 'undefined' && typeof document !== 'undefined') {
  window.addEventListener('pagehide', () => interrupt());
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden' && current?.record.outcome === 'running') interrupt();
  });
}

const REQUEST_FIELDS = {
  prompt: 'prompt',
  text: 'text',
  messages: 'messages',
  backend: 'backend',
  voice: 'voice',
  language: 'language',
  release: 'release',
  format: 'format',
  outputFormat: 'output_format',
  conversationId: 'conversation_id',
};

/** The JSON body of `POST /v1/speak` for `speak()`'s options: the fields that are set, by their wire names. */
export function requestBody(options) {
  const body = {};
  for (const [option, field] of Object.entries(REQUEST_FIELDS)) {
    const value = options[option];
    if (value !== undefined && value !== null && value !== '' && !(Array.isArray(value) && value.length === 0)) body[field] = value;
  }
  return body;
}

/**
 * The same request as a shell command (curl), to run it again outside the browser. The token is never
 * written out: `$EARSHOT_TOKEN` stands in for it. `baseUrl` must be absolute (the page passes its origin).
 */
export function curlCommand(options) {
  const body = requestBody({ ...options, format: options.format ?? 'sse' });
  const quote = (s) => `'${String(s).replaceAll("'", `'\\''`)}'`;
  const base = (options.baseUrl ?? '').replace(/\/+$/, '');
  const lines = [`curl -N -X POST ${quote(`${base}/v1/speak`)}`, `-H 'content-type: application/json'`];
  lines.push(`-H ${quote(`accept: ${body.format === 'binary' ? BINARY_CONTENT_TYPE : SSE_CONTENT_TYPE}`)}`);
  if (options.token) lines.push(`-H "authorization: Bearer $EARSHOT_TOKEN"`);
  lines.push(`--data ${quote(JSON.stringify(body))}`);
  if (body.format === 'binary') lines.push('--output answer.earshot');
  return lines.join(' \\\n  ');
}

/**
 * Speaks a prompt's answer, or a text as given.
 *
 * @param {object} options
 * @param {string} [options.baseUrl]  where the gateway is ('' for this page's origin)
 * @param {string} [options.prompt]   what the agent is asked (exactly one of prompt and text)
 * @param {string} [options.text]     text to speak as given
 * @param {{role: 'user'|'assistant', content: string}[]} [options.messages]  the conversation so far, oldest first
 * @param {'kokoro'|'polly'|'auto'} [options.backend]
 * @param {string} [options.voice]
 * @param {string} [options.language]  the answer's language, a BCP 47 tag (`fr`, `zh`); detected when absent
 * @param {'incremental'|'buffered'} [options.release]
 * @param {'sse'|'binary'} [options.format]   default 'sse'
 * @param {string} [options.conversationId]
 * @param {string} [options.token]     a gateway token (token mode), sent as `Authorization: Bearer`
 * @param {PcmPlayer} [options.player]  another player than the page's shared one
 * @param {(session: object) => void} [options.onSession]
 * @param {(text: string) => void} [options.onText]                the agent's text as it is written
 * @param {(sentence: object) => void} [options.onSentence]        a sentence was released to speech
 * @param {(sentence: object) => void} [options.onSentencePlaying] a sentence starts being heard
 * @param {(sentence: object) => void} [options.onSentenceEnd]     a sentence's audio is complete
 * @param {(record: object) => void} [options.onPlaybackEnd]       the last sound has been heard
 * @param {(record: object) => void} [options.onUpdate]            the record changed (for live views)
 * @param {(error: EarshotError) => void} [options.onError]
 * @param {(record: object) => void} [options.onDone]
 * @returns {Conversation}
 */
export function speak(options) {
  interrupt();
  current = new Conversation(options, options.player ?? player);
  return current;
}

let conversationsStarted = 0;

/** One request and its answer. `finished` resolves with the record whatever the outcome. */
export class Conversation {
  constructor(options, audio) {
    this.options = options;
    this.player = audio;
    this.abort = new AbortController();
    this.timers = new Set();
    this.joiner = new SampleJoiner();
    /** The last piece of audio still decoding (Ogg Opus), or a settled promise. */
    this.decoding = Promise.resolve();
    // What the order rules expect next: audio of sentence `audioIndex`, chunk `audioSeq`.
    this.audioIndex = 0;
    this.audioSeq = 0;
    this.record = {
      number: ++conversationsStarted,
      input: options.prompt !== undefined ? { prompt: options.prompt, messages: options.messages?.length ?? 0 } : { text: options.text },
      release: options.release ?? 'incremental',
      format: options.format ?? 'sse',
      backend: null,
      backendReason: null,
      voice: null,
      // The answer's language, where the gateway knows it, and whether it was asked for or detected.
      language: null,
      languageSource: null,
      conversationId: null,
      requestId: null,
      sampleRate: null,
      encoding: null,
      outcome: 'running', // then 'done', 'error' or 'stopped'
      error: null,
      marks: {
        requestSent: null,
        responseHeaders: null,
        firstEvent: null,
        firstAudioBytes: null,
        firstDecoded: null,
        audibleStart: null,
        audibleEnd: null,
        done: null,
        stopped: null,
        failed: null,
      },
      outputLatencyMs: null,
      sentences: [],
      playedOrder: [],
      underruns: 0,
      audioChunks: 0,
      // Second `session` messages before any audio: the backends the conversation moved through.
      switches: 0,
      audioBytes: 0,
      server: null,
      fetch: { aborted: false, readerEnded: false, interrupt: null },
    };
    // Unlock now, while the user gesture that called speak() still counts. A refusal is not an
    // error of the conversation: the audio waits, and `player.locked` tells the page to ask.
    this.player.unlock().catch(() => {});
    this.finished = this.run();
  }

  /**
   * Stops at once: every scheduled sound and the timers, then the server's work and the request. The
   * gateway is asked to stop the conversation (`POST /v1/conversations/{id}/interrupt`) before the
   * request is closed: on Lambda a closed connection does not stop the invocation, the interrupt
   * does. The request is closed when the gateway has answered, or after a second at most.
   */
  interrupt() {
    if (this.record.outcome !== 'running') {
      // Finished reading, maybe still playing: silence what is scheduled.
      this.silence();
      return;
    }
    this.record.outcome = 'stopped';
    this.record.marks.stopped = performance.now();
    this.silence();
    this.changed();
    const close = () => {
      this.abort.abort();
      this.record.fetch.aborted = this.abort.signal.aborted;
      this.changed();
    };
    const id = this.record.conversationId ?? this.options.conversationId;
    if (!id) {
      close();
      return;
    }
    const base = (this.options.baseUrl ?? '').replace(/\/+$/, '');
    const asked = { sent: performance.now(), status: null };
    this.record.fetch.interrupt = asked;
    const headers = { 'content-type': 'application/json', ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}) };
    // How much of the answer was played: the stream's `interrupted` error then says what was heard, to the word.
    const body = JSON.stringify({ heard_ms: Math.round(heardMs(this.record)) });
    const answered = fetch(`${base}/v1/conversations/${encodeURIComponent(id)}/interrupt`, { method: 'POST', headers, body, cache: 'no-store', keepalive: true }).then(
      (response) => {
        asked.status = response.status;
      },
      () => {
        asked.status = 0;
      },
    );
    Promise.race([answered, new Promise((resolve) => setTimeout(resolve, 1000))]).finally(close);
  }

  silence() {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (this.player.owner === this) this.player.stopAll();
  }

  async run() {
    const { marks } = this.record;
    try {
      const response = await this.send();
      marks.responseHeaders = performance.now();
      if (!response.ok) throw await httpError(response);
      await this.read(response);
      // `finished` resolves with every piece of audio placed (Ogg Opus decodes after its message is read).
      await this.decoding;
      if (this.record.outcome === 'running') {
        throw new EarshotError('stream_ended', 'the stream ended before the conversation was done', { retryable: true });
      }
    } catch (e) {
      if (this.record.outcome === 'running') this.fail(asEarshotError(e, this.options.baseUrl));
    } finally {
      this.record.fetch.readerEnded = true;
      this.changed();
    }
    return this.record;
  }

  send() {
    const body = requestBody(this.options);
    body.format = this.record.format;
    const base = (this.options.baseUrl ?? '').replace(/\/+$/, '');
    this.record.marks.requestSent = performance.now();
    return fetch(`${base}/v1/speak`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: this.record.format === 'binary' ? BINARY_CONTENT_TYPE : SSE_CONTENT_TYPE,
        ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
      },
      body: JSON.stringify(body),
      cache: 'no-store',
      signal: this.abort.signal,
    });
  }

  async read(response) {
    const { marks } = this.record;
    const parser = parserForContentType(response.headers.get('content-type'));
    const reader = response.body.getReader();
    try {
      // After `done` the stream ends at once; it is read to its end, so the connection closes cleanly.
      while (this.record.outcome === 'running' || this.record.outcome === 'done') {
        const { value, done } = await reader.read();
        if (done) {
          parser.finish();
          return;
        }
        if (this.record.outcome !== 'running') continue;
        const receivedAt = performance.now();
        const messages = parser.push(value);
        if (marks.firstEvent === null && (messages.length > 0 || parser.partialType !== null)) marks.firstEvent = receivedAt;
        if (marks.firstAudioBytes === null && (parser.partialType === 'audio' || messages.some((m) => m.type === 'audio'))) {
          marks.firstAudioBytes = receivedAt;
        }
        for (const message of messages) {
          if (this.record.outcome !== 'running') break;
          this.handle(message, receivedAt);
        }
        this.changed();
      }
    } finally {
      // A stopped conversation's request is closed by interrupt(), once the gateway has been asked to
      // stop it: closing it here first would end it before the interrupt could name it.
      if (this.record.outcome !== 'done' && this.record.outcome !== 'stopped') reader.cancel().catch(() => {});
    }
  }

  handle(message, receivedAt) {
    if (this.format === undefined && message.type !== 'session') {
      throw new ProtocolError('out_of_order', `the stream starts with \`${message.type}\`, not \`session\``);
    }
    switch (message.type) {
      case 'session':
        return this.onSession(message);
      case 'text':
        return this.options.onText?.(message.text);
      case 'sentence':
        return this.onSentence(message, receivedAt);
      case 'audio':
        return this.onAudio(message, receivedAt);
      case 'words':
        return this.onWords(message);
      case 'sentence_end':
        return this.onSentenceEnd(message);
      case 'done':
        return this.onDone(message);
      case 'error':
        return this.fail(new EarshotError(message.code, message.message, { retryable: message.retryable }));
    }
  }

  onSession(session) {
    // A second `session` may come before any audio (docs/protocol.md): the conversation moved to another
    // backend (failover) and its audio follows in the new format. After audio it is out of order.
    if (this.format !== undefined && this.record.audioChunks > 0) throw new ProtocolError('out_of_order', 'a second `session` message after audio');
    if (this.format !== undefined) this.record.switches += 1;
    if (session.v !== PROTOCOL_VERSION) {
      throw new ProtocolError('unsupported_protocol', `the server speaks protocol version ${session.v}; this client speaks ${PROTOCOL_VERSION}`);
    }
    this.format = session.audio;
    try {
      // Before any audio (above): a sample's bytes may change only with a switch of format.
      this.joiner = new SampleJoiner(sampleBytes(session.audio));
      this.player.begin(session.audio);
      this.player.owner = this;
    } catch (e) {
      throw new ProtocolError('unsupported_audio', e.message);
    }
    Object.assign(this.record, {
      backend: session.backend,
      backendReason: session.backend_reason,
      voice: session.voice,
      release: session.release,
      conversationId: session.conversation_id,
      requestId: session.request_id,
      arm: session.arm ?? null,
      language: session.language ?? null,
      languageSource: session.language_source ?? null,
      sampleRate: session.audio.sample_rate,
      encoding: session.audio.encoding,
    });
    this.options.onSession?.(session);
  }

  sentence(index) {
    return this.record.sentences.find((s) => s.index === index);
  }

  onSentence({ index, text }, receivedAt) {
    if (this.sentence(index)) throw new ProtocolError('out_of_order', `sentence ${index} was announced twice`);
    const sentence = {
      index,
      text,
      releasedAt: receivedAt,
      firstAudioBytes: null,
      scheduledStart: null, // audible time of its first sound
      scheduledEnd: null, // audible time of its last sound so far
      // Seconds of its audio placed on the audio clock, counted there: exact, where scheduledEnd −
      // scheduledStart goes through two conversions to page time whose offset is re-estimated as the
      // context renders (a few ms apart on a loaded machine).
      placedSeconds: 0,
      gapBeforeMs: null, // silence between the previous sentence's end and this one's start
      underrun: false,
      // Silences inside the sentence: a chunk that came after the audio before it had played out
      // ({start: audible time the silence began, ms}). The worst a listener hears: a cut mid-sentence.
      stalls: [],
      stallMs: 0,
      audioMs: null,
      chunks: 0,
      complete: false,
      // Its words with when each is heard, ms from its first sample (docs/protocol.md, "Words"), and how
      // they were timed (`model` or `estimated`).
      words: [],
      timing: null,
    };
    this.record.sentences.push(sentence);
    this.record.sentences.sort((a, b) => a.index - b.index);
    this.options.onSentence?.(sentence);
  }

  onAudio({ index, seq, pcm }, receivedAt) {
    const sentence = this.sentence(index);
    if (!sentence) throw new ProtocolError('out_of_order', `audio of sentence ${index} before the sentence`);
    if (index !== this.audioIndex || seq !== this.audioSeq) {
      throw new ProtocolError('out_of_order', `audio ${index}.${seq} where ${this.audioIndex}.${this.audioSeq} was due`);
    }
    this.audioSeq++;
    sentence.chunks++;
    sentence.firstAudioBytes ??= receivedAt;
    this.record.audioChunks++;
    this.record.audioBytes += pcm.length;
    const samples = this.joiner.push(pcm);
    if (samples.length === 0) return;
    const scheduled = this.player.enqueue(samples);
    if (typeof scheduled?.then === 'function') {
      // Ogg Opus decodes asynchronously; its pieces are placed in order as they come out.
      this.decoding = scheduled.then(
        (placed) => placed && this.placed(sentence, index, placed),
        (e) => this.record.outcome === 'running' && this.fail(new EarshotError('audio_decode_failed', `the audio did not decode: ${e.message}`)),
      );
      return;
    }
    this.placed(sentence, index, scheduled);
  }

  /** Marks where a piece of sentence `index`'s audio was scheduled to sound. */
  placed(sentence, index, scheduled) {
    const { marks } = this.record;
    const start = this.player.audibleAt(scheduled.start);
    const end = this.player.audibleAt(scheduled.end);
    marks.firstDecoded ??= scheduled.decodedAt;
    if (marks.audibleStart === null) {
      // Never before it was decoded and went through the output: the clocks' offset is kept steady for a
      // stream's sake (player.js), so when the audio clock runs slow it can read up to 50 ms early.
      marks.audibleStart = Math.max(start, scheduled.decodedAt + this.player.outputLatencyMs);
      this.record.outputLatencyMs = this.player.outputLatencyMs;
    }
    marks.audibleEnd = end;
    if (scheduled.underrunSeconds > 0) this.record.underruns++;
    if (sentence.scheduledStart !== null && scheduled.underrunSeconds > 0) {
      const ms = scheduled.underrunSeconds * 1000;
      sentence.stalls.push({ start: this.player.audibleAt(scheduled.previousEnd), ms });
      sentence.stallMs += ms;
      this.record.stalls = (this.record.stalls ?? 0) + 1;
    }
    if (sentence.scheduledStart === null) {
      sentence.scheduledStart = start;
      const previous = this.record.sentences.find((s) => s.index === index - 1);
      if (previous?.scheduledEnd != null) {
        sentence.gapBeforeMs = (scheduled.start - scheduled.previousEnd) * 1000;
        sentence.underrun = sentence.gapBeforeMs > 0;
      }
      this.at(start, () => {
        this.record.playedOrder.push(index);
        this.options.onSentencePlaying?.(sentence);
        this.changed();
      });
    }
    sentence.scheduledEnd = end;
    sentence.placedSeconds += scheduled.end - scheduled.start;
  }

  onWords({ index, timing, words }) {
    const sentence = this.sentence(index);
    if (!sentence || index !== this.audioIndex) {
      throw new ProtocolError('out_of_order', `words of sentence ${index} where sentence ${this.audioIndex} was due`);
    }
    sentence.timing = timing;
    sentence.words.push(...words);
    this.options.onWords?.(sentence);
  }

  onSentenceEnd({ index, audio_ms, skipped }) {
    const sentence = this.sentence(index);
    if (!sentence || index !== this.audioIndex) {
      throw new ProtocolError('out_of_order', `the end of sentence ${index} where sentence ${this.audioIndex} was due`);
    }
    try {
      this.joiner.finish();
    } catch (e) {
      throw new ProtocolError('malformed_message', `sentence ${index}: ${e.message}`);
    }
    sentence.audioMs = audio_ms;
    // The voice passed over it (a script it does not read): no audio, and the answer goes on.
    sentence.skipped = typeof skipped === 'string' ? skipped : null;
    sentence.complete = true;
    this.audioIndex++;
    this.audioSeq = 0;
    this.options.onSentenceEnd?.(sentence);
  }

  onDone({ timeline }) {
    const { marks } = this.record;
    marks.done = performance.now();
    this.record.server = timeline;
    // Audio still decoding (Ogg Opus) is placed before the answer is reported done: until then the record
    // stays running, so nobody reads its audible end (or an idle player) while pieces are yet to be scheduled.
    if (this.player.owner === this) this.player.flush();
    this.decoding.then(() => {
      if (this.record.outcome === 'running') this.record.outcome = 'done';
      this.options.onDone?.(this.record);
      this.at(marks.audibleEnd ?? marks.done, () => this.options.onPlaybackEnd?.(this.record));
    });
  }

  fail(error) {
    this.record.outcome = 'error';
    this.record.marks.failed = performance.now();
    this.record.error = error.toJSON();
    // The stream cannot go on; what was scheduled is good audio and plays out.
    this.abort.abort();
    this.record.fetch.aborted = this.abort.signal.aborted;
    this.options.onError?.(error);
  }

  /** Runs `callback` at a performance.now() time (at once if it has passed). */
  at(time, callback) {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      callback();
    }, Math.max(0, time - performance.now()));
    this.timers.add(timer);
  }

  changed() {
    this.options.onUpdate?.(this.record);
  }
}

/**
 * What the listener heard of an answer, to build the next turn's `messages` from after a barge-in
 * (docs/protocol.md, "After Stop"). A finished answer was heard whole. A stopped one was heard up to
 * the stop: the sentences whose audio started before it, the last of them cut where playback reached,
 * as time (`cut.heardMs` of `cut.audioMs`) and as an estimated character offset (`cut.chars`: in
 * proportion to the audio heard, moved back to the start of the word it falls in). A failed answer was
 * heard as far as its audio was scheduled (what was scheduled plays out).
 *
 * Returns `{ text, interrupted, sentences: [{ index, text }], cut }`, `text` being what was heard (the
 * cut sentence up to `cut.chars`) and `cut` null when no sentence was cut.
 */
export function heardText(record) {
  const stoppedAt = record.outcome === 'stopped' ? record.marks.stopped : null;
  const sentences = [];
  let cut = null;
  for (const s of record.sentences) {
    const started = s.scheduledStart !== null && (stoppedAt === null || s.scheduledStart < stoppedAt);
    if (record.outcome !== 'done' && !started) break;
    sentences.push({ index: s.index, text: s.text });
    if (stoppedAt === null) continue;
    // Cut by the stop: its audio went on after it, or had not all arrived.
    const lastSound = s.scheduledEnd ?? stoppedAt;
    if (lastSound > stoppedAt || !s.complete) {
      const heardMs = Math.max(0, stoppedAt - s.scheduledStart - (s.stalls ?? []).filter((x) => x.start < stoppedAt).reduce((n, x) => n + x.ms, 0));
      const audioMs = s.audioMs ?? Math.max(heardMs, lastSound - s.scheduledStart);
      const byWords = heardChars(s.text, s.words ?? [], heardMs);
      const chars = byWords ?? wordStart(s.text, Math.round(s.text.length * Math.min(1, audioMs > 0 ? heardMs / audioMs : 0)));
      cut = { index: s.index, heardMs, audioMs, chars, byWords: byWords !== null };
      break;
    }
  }
  const words = sentences.map((s) => (cut !== null && s.index === cut.index ? s.text.slice(0, cut.chars).trimEnd() : s.text)).filter((t) => t);
  return { text: words.join(' '), interrupted: stoppedAt !== null, sentences, cut };
}

/** How much of an answer's audio the listener played: the sentences heard whole, and the cut one's part. */
export function heardMs(record) {
  const heard = heardText(record);
  let ms = 0;
  for (const s of heard.sentences) {
    if (heard.cut !== null && s.index === heard.cut.index) ms += heard.cut.heardMs;
    else ms += record.sentences.find((x) => x.index === s.index)?.audioMs ?? 0;
  }
  return ms;
}

/**
 * The characters of `text` a listener heard who heard `heardMs` of its audio, cut at words: up to the end of
 * the last word that ended by then (0 when none had). null without word timings. The Rust client's
 * `earshot_core::words::heard_chars` applies the same rule.
 */
export function heardChars(text, words, heardMs) {
  if (words.length === 0) return null;
  let at = 0;
  let heardTo = 0;
  for (const word of words) {
    const found = text.indexOf(word.text, at);
    if (found < 0) break;
    at = found + word.text.length;
    if (word.end_ms > heardMs) break;
    heardTo = at;
  }
  return heardTo;
}

/** `offset`, moved back to the start of the word it falls in (kept where a word has just ended). */
function wordStart(text, offset) {
  if (offset >= text.length) return text.length;
  if (/\s/.test(text[offset])) return offset;
  let i = offset;
  while (i > 0 && !/\s/.test(text[i - 1])) i--;
  return i;
}

async function httpError(response) {
  let detail = null;
  try {
    detail = (await response.json())?.error;
  } catch {
    // not JSON: said below with the status alone
  }
  if (detail && typeof detail.code === 'string') {
    return new EarshotError(detail.code, detail.message ?? detail.code, { retryable: Boolean(detail.retryable), status: response.status });
  }
  return new EarshotError('http_error', `the server answered ${response.status} ${response.statusText}`.trim(), {
    retryable: response.status >= 500,
    status: response.status,
  });
}

function asEarshotError(e, baseUrl) {
  if (e instanceof EarshotError) return e;
  if (e instanceof ProtocolError) return new EarshotError(e.code, e.message);
  if (e?.name === 'AbortError') return new EarshotError('aborted', 'the request was aborted');
  if (e instanceof TypeError) {
    const where = baseUrl ? `at ${baseUrl}` : 'at this page\'s address';
    return new EarshotError('network_error', `Nothing answered ${where}: check the gateway's address and that it is running (the browser said: ${e.message}).`, { retryable: true });
  }
  return new EarshotError('client_error', String(e?.message ?? e));
}
