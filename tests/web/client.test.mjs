// The rules of a conversation in the browser client (web/earshot.js), under Node with a fake
// AudioContext and a scripted fetch: what a recorded answer schedules and measures, how gaps are
// measured, which streams are errors (and that the request is then cancelled), and what stopping
// does.

import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { speak, interrupt, PcmPlayer, heardText, heardChars } from '../../web/earshot.js';
import { decodeSamples } from '../../web/player.js';
import { seededRandom, randomChunks, concat } from './chunking.mjs';
import { FakeAudioContext, fakeFetch, until } from './fakes.mjs';
import { encoderFor, CONTENT_TYPES, session, tone } from './encode.mjs';

const fixture = (name) => new Uint8Array(readFileSync(new URL(`./fixtures/${name}`, import.meta.url)));
const FIXTURES = { sse: fixture('hello.sse'), binary: fixture('hello.frames') };
const realFetch = globalThis.fetch;

afterEach(() => {
  interrupt();
  globalThis.fetch = realFetch;
});

/** Serves `body` (steps: bytes or functions) for every request, with the format's content type. */
function serve(format, body, extra = {}) {
  // An interrupt is accepted, as the gateway does for a live conversation.
  const fake = fakeFetch((request) => (request.url.endsWith('/interrupt') ? { status: 202 } : { headers: { 'content-type': CONTENT_TYPES[format] }, body, ...extra }));
  globalThis.fetch = fake.fetch;
  return fake.server;
}

function newPlayer() {
  return new PcmPlayer({ createContext: () => new FakeAudioContext() });
}

/** A stream of messages in the given format, one network chunk per message. */
const encodeAll = (format, messages) => messages.map((m) => (typeof m === 'function' ? m : encoderFor(format)(m)));

const S = (index, text = `Sentence ${index}.`) => ({ type: 'sentence', index, text });
const A = (index, seq, pcm) => ({ type: 'audio', index, seq, pcm });
const E = (index, audio_ms = 100) => ({ type: 'sentence_end', index, audio_ms });
const DONE = { type: 'done', timeline: { backend: 'kokoro', release: 'incremental', sentences: [] } };

const MARK_ORDER = ['requestSent', 'responseHeaders', 'firstEvent', 'firstAudioBytes', 'firstDecoded', 'audibleStart'];

for (const format of ['sse', 'binary']) {
  test(`a recorded ${format} answer is scheduled gaplessly and measured in order`, async () => {
    const chunks = randomChunks(FIXTURES[format], seededRandom(format === 'sse' ? 11 : 12));
    const server = serve(format, chunks);
    const player = newPlayer();
    const sentencesHeard = [];
    const record = await speak({ text: 'Hello there. How are you?', format, release: 'incremental', player, onSentence: (s) => sentencesHeard.push(s.index) }).finished;

    assert.equal(record.outcome, 'done', JSON.stringify(record.error));
    assert.deepStrictEqual(server.requests[0].body, { text: 'Hello there. How are you?', release: 'incremental', format });
    assert.equal(server.requests[0].headers.accept, CONTENT_TYPES[format]);
    assert.deepStrictEqual(record.sentences.map((s) => [s.index, s.text, s.chunks, s.complete]), [
      [0, 'Hello there.', 1, true],
      [1, 'How are you?', 2, true],
    ]);
    assert.deepStrictEqual(sentencesHeard, [0, 1]);
    assert.equal(record.audioBytes, 95232);
    assert.equal(record.sampleRate, 24000);
    assert.equal(record.server.audio_bytes_sent, 95232);

    // Each buffer starts where the one before it ends (the clock did not move, so no underrun).
    const sources = player.ctx.sources;
    assert.equal(sources.length, 3);
    let expectedStart = 0;
    for (const source of sources) {
      assert.ok(Math.abs(source.startedAt - expectedStart) < 1e-9, `starts at ${source.startedAt}, expected ${expectedStart}`);
      expectedStart += source.buffer.duration;
    }
    assert.equal(record.sentences[1].gapBeforeMs, 0);
    assert.equal(record.underruns, 0);

    const marks = MARK_ORDER.map((name) => record.marks[name]);
    assert.ok(marks.every((t) => typeof t === 'number'), JSON.stringify(record.marks));
    for (let i = 1; i < marks.length; i++) assert.ok(marks[i - 1] <= marks[i], `${MARK_ORDER[i - 1]} ≤ ${MARK_ORDER[i]}: ${JSON.stringify(record.marks)}`);
    assert.equal(record.outputLatencyMs, 20, 'outputLatency is preferred to baseLatency');
    assert.ok(record.marks.audibleStart - record.marks.firstDecoded >= 19, 'audible start includes the output latency');
    assert.ok(record.marks.audibleEnd - record.marks.audibleStart >= 1983, 'the whole 1.984 s of audio is scheduled back to back');
    assert.equal(record.fetch.readerEnded, true);
    assert.equal(server.cancelled, false, 'a finished answer is read to its end, not cancelled');
  });
}

for (const format of ['sse', 'binary']) {
  test(`a sentence the voice passed over (${format}) is told skipped, and the answer goes on to the next`, async () => {
    const ended = [];
    serve(format, encodeAll(format, [
      session(),
      S(0),
      A(0, 0, tone(200)),
      E(0, 200),
      S(1, '안녕하세요 여러분.'),
      { type: 'sentence_end', index: 1, audio_ms: 0, skipped: 'unsupported_script' },
      S(2),
      A(2, 0, tone(200)),
      E(2, 200),
      DONE,
    ]));
    const record = await speak({ text: 'Hi.', format, player: newPlayer(), onSentenceEnd: (s) => ended.push([s.index, s.skipped]) }).finished;
    assert.equal(record.outcome, 'done', JSON.stringify(record.error));
    assert.deepStrictEqual(ended, [[0, null], [1, 'unsupported_script'], [2, null]]);
    assert.deepStrictEqual(record.sentences.map((s) => [s.index, s.complete, s.chunks, s.skipped]), [
      [0, true, 1, null],
      [1, true, 0, 'unsupported_script'],
      [2, true, 1, null],
    ]);
  });
}

test('first audio bytes is when an audio message began to arrive, before it could be decoded', async () => {
  const audio = encoderFor('binary')(A(0, 0, tone(200)));
  serve('binary', [
    ...encodeAll('binary', [session(), S(0)]),
    audio.subarray(0, 100),
    () => new Promise((resolve) => setTimeout(resolve, 40)),
    audio.subarray(100),
    ...encodeAll('binary', [E(0), DONE]),
  ]);
  const record = await speak({ prompt: 'brief', format: 'binary', player: newPlayer() }).finished;
  assert.equal(record.outcome, 'done');
  assert.ok(record.marks.firstEvent < record.marks.firstAudioBytes, JSON.stringify(record.marks));
  assert.ok(record.marks.firstDecoded - record.marks.firstAudioBytes >= 30, JSON.stringify(record.marks));
});

test('a sentence whose audio comes after the previous one has finished playing is an underrun, measured', async () => {
  for (const late of [false, true]) {
    const player = newPlayer();
    serve('sse', encodeAll('sse', [
      session(),
      S(0),
      A(0, 0, tone(500)),
      E(0, 500),
      () => {
        if (late) player.ctx.currentTime = 0.8; // sentence 0 ended at 0.5 s
      },
      S(1),
      A(1, 0, tone(300)),
      A(1, 1, tone(300)),
      E(1, 600),
      DONE,
    ]));
    const record = await speak({ prompt: 'brief', player }).finished;
    assert.equal(record.outcome, 'done');
    assert.equal(record.sentences[0].gapBeforeMs, null, 'nothing plays before the first sentence');
    if (late) {
      assert.ok(Math.abs(record.sentences[1].gapBeforeMs - 300) < 1e-6, `gap ${record.sentences[1].gapBeforeMs}`);
      assert.equal(record.sentences[1].underrun, true);
      assert.equal(record.underruns, 1);
      assert.equal(player.ctx.sources[1].startedAt, 0.8, 'the late sentence starts now, not in the past');
    } else {
      assert.equal(record.sentences[1].gapBeforeMs, 0);
      assert.equal(record.sentences[1].underrun, false);
      assert.equal(record.underruns, 0);
    }
  }
});

test('a silence inside a sentence is a stall, counted apart from the gaps between sentences', async () => {
  for (const stall of [false, true]) {
    const player = newPlayer();
    serve('sse', encodeAll('sse', [
      session(),
      S(0),
      A(0, 0, tone(400)),
      () => {
        if (stall) player.ctx.currentTime = 0.75; // the first piece ended at 0.4 s; the next comes at 0.75 s
      },
      A(0, 1, tone(400)),
      E(0, 800),
      S(1),
      A(1, 0, tone(300)),
      E(1, 300),
      DONE,
    ]));
    const record = await speak({ prompt: 'brief', player }).finished;
    assert.equal(record.outcome, 'done');
    const [first, second] = record.sentences;
    if (stall) {
      assert.equal(first.stalls.length, 1, 'one stall inside sentence 0');
      assert.ok(Math.abs(first.stallMs - 350) < 1e-6, `stall ${first.stallMs} ms`);
      assert.ok(Math.abs(first.stalls[0].start - player.audibleAt(0.4)) < 1e-6, 'it began when the first piece ran out');
      assert.equal(record.stalls, 1);
    } else {
      assert.deepEqual(first.stalls, []);
      assert.equal(record.stalls ?? 0, 0);
    }
    // Neither case is a gap before a sentence: sentence 1 followed without a silence.
    assert.equal(second.gapBeforeMs, 0);
    assert.equal(second.underrun, false);
    assert.deepEqual(second.stalls, []);
  }
});

test('a sample split across two audio messages is played whole', async () => {
  const player = newPlayer();
  serve('binary', encodeAll('binary', [session(), S(0), A(0, 0, Uint8Array.from([1, 0, 2])), A(0, 1, Uint8Array.from([0, 3, 0])), E(0), DONE]));
  const record = await speak({ prompt: 'brief', format: 'binary', player }).finished;
  assert.equal(record.outcome, 'done', JSON.stringify(record.error));
  const samples = player.ctx.sources.flatMap((s) => Array.from(s.buffer.data).map((x) => Math.round(x * 32768)));
  assert.deepStrictEqual(samples, [1, 2, 3]);
});

test('a second session before any audio is taken: the conversation moved to another backend, in its format', async () => {
  const player = newPlayer();
  const polly = session({ backend: 'polly', backend_reason: 'failover', voice: 'ruth', audio: { encoding: 'pcm_s16le', sample_rate: 16000, channels: 1 } });
  serve('binary', encodeAll('binary', [session(), S(0), polly, A(0, 0, tone(10)), E(0), DONE]));
  const record = await speak({ prompt: 'brief', format: 'binary', player }).finished;
  assert.equal(record.outcome, 'done', JSON.stringify(record.error));
  assert.deepStrictEqual([record.backend, record.backendReason, record.voice, record.sampleRate, record.switches], ['polly', 'failover', 'ruth', 16000, 1]);
  assert.equal(player.ctx.sources[0].buffer.sampleRate, 16000, 'the audio is played at the new rate');
});

const INVALID_STREAMS = [
  ['audio before the session', [S(0), A(0, 0, tone(10))], 'out_of_order'],
  ['a second session after audio', [session(), S(0), A(0, 0, tone(10)), session()], 'out_of_order'],
  ['audio of a sentence never announced', [session(), A(0, 0, tone(10))], 'out_of_order'],
  ['audio of the next sentence before the end of this one', [session(), S(0), S(1), A(0, 0, tone(10)), A(1, 0, tone(10))], 'out_of_order'],
  ['a missing sequence number', [session(), S(0), A(0, 0, tone(10)), A(0, 2, tone(10))], 'out_of_order'],
  ['the end of a sentence out of turn', [session(), S(0), S(1), E(1)], 'out_of_order'],
  ['a sentence announced twice', [session(), S(0), S(0)], 'out_of_order'],
  ['a sentence ending in half a sample', [session(), S(0), A(0, 0, Uint8Array.from([1, 0, 2])), E(0)], 'malformed_message'],
  ['another protocol version', [session({ v: 2 })], 'unsupported_protocol'],
  ['an audio encoding this client cannot play', [session({ audio: { encoding: 'ogg_opus', sample_rate: 48000, channels: 1 } })], 'unsupported_audio'],
];

for (const [name, messages, code] of INVALID_STREAMS) {
  test(`${name} stops the conversation with \`${code}\` and cancels the request`, async () => {
    const server = serve('binary', [...encodeAll('binary', messages), () => new Promise(() => {}), ...encodeAll('binary', [DONE])]);
    const record = await speak({ prompt: 'brief', format: 'binary', player: newPlayer() }).finished;
    assert.equal(record.outcome, 'error');
    assert.equal(record.error.code, code, record.error.message);
    assert.equal(record.fetch.aborted, true);
    assert.equal(server.cancelled, true, 'the server saw the request end');
  });
}

test('a malformed frame in the middle of an answer stops it: nothing after it is believed', async () => {
  const messages = [];
  const server = serve('binary', [
    ...encodeAll('binary', [session(), S(0)]),
    concat(Uint8Array.from([0x03, 0, 0, 0, 3]), new TextEncoder().encode('{"i')),
    ...encodeAll('binary', [S(1), DONE]),
  ]);
  const record = await speak({ prompt: 'brief', format: 'binary', player: newPlayer(), onSentence: (s) => messages.push(s.index) }).finished;
  assert.equal(record.error.code, 'malformed_message');
  assert.deepStrictEqual(messages, [0]);
  assert.equal(server.cancelled, true);
});

test('messages of unknown type are skipped and the conversation completes', async () => {
  serve('binary', [
    ...encodeAll('binary', [session(), S(0)]),
    Uint8Array.from([0x20, 0, 0, 0, 2, 0x7b, 0x7d]),
    ...encodeAll('binary', [A(0, 0, tone(50)), E(0), DONE]),
  ]);
  const record = await speak({ prompt: 'brief', format: 'binary', player: newPlayer() }).finished;
  assert.equal(record.outcome, 'done', JSON.stringify(record.error));
  assert.equal(record.audioChunks, 1);
});

test('a μ-law answer plays a byte a sample, at its own rate, whatever the length of each message', async () => {
  const player = newPlayer();
  const mulaw = { encoding: 'mulaw', sample_rate: 8000, channels: 1 };
  // 800 bytes: 100 ms at 8 kHz, in messages of odd lengths (no sample can straddle two).
  const bytes = Uint8Array.from({ length: 800 }, (_, i) => (i * 37) & 0xff);
  const server = serve('sse', encodeAll('sse', [session({ audio: mulaw }), S(0), A(0, 0, bytes.subarray(0, 333)), A(0, 1, bytes.subarray(333)), E(0), DONE]));
  const record = await speak({ prompt: 'brief', player, outputFormat: 'ulaw_8000' }).finished;
  assert.equal(server.requests[0].body.output_format, 'ulaw_8000', 'the request asks for the format');
  assert.equal(record.outcome, 'done', JSON.stringify(record.error));
  assert.deepStrictEqual([record.encoding, record.sampleRate, record.audioBytes], ['mulaw', 8000, 800]);
  const buffers = player.ctx.sources.map((source) => source.buffer);
  assert.deepStrictEqual(buffers.map((b) => [b.length, b.sampleRate]), [[333, 8000], [467, 8000]]);
  assert.deepStrictEqual(Array.from(buffers[0].data.subarray(0, 3)), Array.from(decodeSamples(bytes.subarray(0, 3), 'mulaw')));
});

test('an `error` message ends the conversation with its code; audio already scheduled plays out', async () => {
  const player = newPlayer();
  const errors = [];
  serve('sse', encodeAll('sse', [
    session(),
    S(0),
    A(0, 0, tone(100)),
    { type: 'error', code: 'backend_failed', message: 'the voice stopped answering', retryable: true },
  ]));
  const record = await speak({ prompt: 'brief', player, onError: (e) => errors.push(e) }).finished;
  assert.equal(record.outcome, 'error');
  assert.deepStrictEqual(record.error, { code: 'backend_failed', message: 'the voice stopped answering', retryable: true, status: null });
  assert.equal(errors.length, 1);
  assert.equal(player.ctx.sources.length, 1);
  assert.equal(player.ctx.sources[0].stopped, false);
});

test('an answer that ends before `done` is an error, whether between messages or inside one', async () => {
  serve('sse', encodeAll('sse', [session(), S(0), A(0, 0, tone(50)), E(0)]));
  let record = await speak({ prompt: 'brief', player: newPlayer() }).finished;
  assert.equal(record.error.code, 'stream_ended');
  const done = encoderFor('sse')(DONE);
  serve('sse', [...encodeAll('sse', [session()]), done.subarray(0, done.length - 1)]);
  record = await speak({ prompt: 'brief', player: newPlayer() }).finished;
  assert.equal(record.error.code, 'truncated');
});

test('HTTP errors are reported with their code, message and status', async () => {
  const cases = [
    [{ status: 400, headers: { 'content-type': 'application/json' }, body: [new TextEncoder().encode('{"error":{"code":"unknown_backend","message":"no backend `polly` here","retryable":false}}')] },
      { code: 'unknown_backend', message: 'no backend `polly` here', retryable: false, status: 400 }],
    [{ status: 502, headers: { 'content-type': 'text/plain' }, body: [new TextEncoder().encode('Bad Gateway')] },
      { code: 'http_error', message: 'the server answered 502', retryable: true, status: 502 }],
    [{ status: 200, headers: { 'content-type': 'application/json' }, body: [new TextEncoder().encode('{}')] },
      { code: 'unexpected_content_type', message: 'the response is `application/json`, not an earshot stream', retryable: false, status: null }],
  ];
  for (const [response, expected] of cases) {
    globalThis.fetch = fakeFetch(() => response).fetch;
    const record = await speak({ prompt: 'brief', backend: 'polly', player: newPlayer() }).finished;
    assert.equal(record.outcome, 'error');
    assert.deepStrictEqual(record.error, expected);
  }
});

test('an unreachable gateway is a network error that says where it looked, once', async () => {
  globalThis.fetch = async () => {
    throw new TypeError('Failed to fetch');
  };
  const record = await speak({ prompt: 'brief', baseUrl: 'http://nowhere.test', player: newPlayer() }).finished;
  assert.equal(record.error.code, 'network_error');
  assert.equal(record.error.retryable, true);
  assert.equal(record.error.message, "Nothing answered at http://nowhere.test: check the gateway's address and that it is running (the browser said: Failed to fetch).");
});

test('heardText keeps what the listener heard: all of a finished answer, up to the stop of a stopped one', () => {
  const sentence = (index, text, scheduledStart, scheduledEnd, audioMs, extra = {}) => ({ index, text, scheduledStart, scheduledEnd, audioMs, complete: audioMs !== null, stalls: [], ...extra });
  const answer = (outcome, stopped, sentences) => ({ outcome, marks: { stopped }, sentences });
  const three = [sentence(0, 'One two.', 0, 1000, 1000), sentence(1, 'Three four five six.', 1000, 3000, 2000), sentence(2, 'Seven.', 3000, 3500, 500)];
  // Finished: everything, even what is still to play.
  assert.deepEqual(heardText(answer('done', null, three)), { text: 'One two. Three four five six. Seven.', interrupted: false, sentences: three.map(({ index, text }) => ({ index, text })), cut: null });
  // Stopped half-way into sentence 1: sentence 2 was scheduled but never heard; sentence 1 is cut where
  // half its characters end ("Three four five six." is 20 characters; the first 10 end with "four").
  const stopped = heardText(answer('stopped', 2000, three));
  assert.equal(stopped.text, 'One two. Three four');
  assert.equal(stopped.interrupted, true);
  assert.deepEqual(stopped.sentences.map((s) => s.index), [0, 1]);
  assert.deepEqual(stopped.cut, { index: 1, heardMs: 1000, audioMs: 2000, chars: 10, byWords: false });
  // Stopped between sentences: nothing cut.
  const between = heardText(answer('stopped', 1000, [sentence(0, 'One two.', 0, 1000, 1000), sentence(1, 'Three.', 1500, 2000, 500)]));
  assert.deepEqual([between.text, between.cut], ['One two.', null]);
  // Stopped before anything was heard: nothing.
  assert.equal(heardText(answer('stopped', 500, [sentence(0, 'One.', 600, 900, 300)])).text, '');
  // A stall before the stop is silence, not speech: 400 ms heard of 1000, with 600 ms of stall.
  const stalled = heardText(answer('stopped', 1000, [sentence(0, 'Aaaa bbbb cccc dddd eeee.', 0, 1600, 1000, { stalls: [{ start: 200, ms: 600 }] })]));
  assert.deepEqual([stalled.cut.heardMs, stalled.text], [400, 'Aaaa bbbb']);
  // An answer whose stream failed: what was scheduled plays out and is heard.
  assert.equal(heardText(answer('error', null, [sentence(0, 'One.', 0, 300, 300), sentence(1, 'Two.', null, null, null)])).text, 'One.');
});

test('with word timings, heardText cuts after the last whole word heard, as the Rust client does', () => {
  const words = [
    { text: 'Ça', start_ms: 0, end_ms: 150 },
    { text: 'coûte', start_ms: 200, end_ms: 450 },
    { text: '12,50', start_ms: 500, end_ms: 1400 },
  ];
  const text = 'Ça coûte 12,50 €.';
  assert.deepEqual([100, 460, 1000, 1400].map((ms) => heardChars(text, words, ms)), [0, 'Ça coûte'.length, 'Ça coûte'.length, 'Ça coûte 12,50'.length]);
  assert.equal(heardChars(text, [], 1000), null);
  // The audio's share would cut inside the number (1000 of 1500 ms is 11 of 17 characters); the words do not.
  const record = { outcome: 'stopped', marks: { stopped: 1000 }, sentences: [{ index: 0, text, scheduledStart: 0, scheduledEnd: 1500, audioMs: 1500, complete: true, stalls: [], words }] };
  const heard = heardText(record);
  assert.equal(heard.text, 'Ça coûte');
  assert.equal(heard.cut.byWords, true);
});

test('interrupt() silences every scheduled sound at once, asks the gateway to stop, then cancels the request', async () => {
  const player = newPlayer();
  const server = serve('sse', [...encodeAll('sse', [session(), S(0), A(0, 0, tone(300)), A(0, 1, tone(300)), S(1)]), () => new Promise(() => {})]);
  const conversation = speak({ prompt: 'long', baseUrl: 'http://gateway.test/', conversationId: 'c-1', player });
  await until(() => conversation.record.sentences.length === 2);
  assert.equal(player.playing, 2);
  interrupt();
  // Silent at once, before the gateway has answered.
  assert.equal(player.playing, 0);
  const record = await conversation.finished;
  assert.equal(record.outcome, 'stopped');
  assert.ok(record.marks.stopped >= record.marks.firstDecoded);
  assert.deepStrictEqual(player.ctx.sources.map((s) => s.stopped), [true, true]);
  assert.equal(player.playing, 0);
  assert.equal(player.output, null, 'the output is disconnected');
  assert.deepStrictEqual([record.fetch.aborted, record.fetch.readerEnded, server.cancelled], [true, true, true]);
  assert.equal(server.requests[0].url, 'http://gateway.test/v1/speak');
  assert.equal(server.requests[0].body.conversation_id, 'c-1');
  const id = record.conversationId;
  assert.equal(server.requests[1].url, `http://gateway.test/v1/conversations/${id}/interrupt`);
  assert.equal(server.requests[1].method, 'POST');
  // It says how much was played (nothing was audible yet in the fake clock: 0 ms), so the error can say what was heard.
  assert.deepStrictEqual(Object.keys(server.requests[1].body), ['heard_ms']);
  assert.ok(Number.isInteger(server.requests[1].body.heard_ms) && server.requests[1].body.heard_ms >= 0);
  assert.equal(record.fetch.interrupt.status, 202);
});

test('speaking again stops the conversation before', async () => {
  const player = newPlayer();
  const first = serve('sse', [...encodeAll('sse', [session(), S(0), A(0, 0, tone(300))]), () => new Promise(() => {})]);
  const one = speak({ prompt: 'long', player });
  await until(() => player.playing === 1);
  serve('sse', encodeAll('sse', [session(), S(0), A(0, 0, tone(50)), E(0), DONE]));
  const two = speak({ prompt: 'brief', player });
  assert.equal((await one.finished).outcome, 'stopped');
  assert.equal(first.cancelled, true);
  assert.equal((await two.finished).outcome, 'done');
  assert.equal(player.ctx.sources[0].stopped, true);
  assert.equal(player.ctx.sources[1].stopped, false);
  one.interrupt(); // a stale handle cannot silence the newer conversation
  assert.equal(player.ctx.sources[1].stopped, false);
  two.interrupt();
  assert.equal(player.ctx.sources[1].stopped, true, 'a finished conversation still silences its own tail');
});

test('an answer whose audio is still decoding when `done` arrives stays running until that audio is placed', async () => {
  // Ogg Opus decodes asynchronously: here every piece's placement waits until the test lets it go, as a slow
  // decode would. Until then nobody may read the answer as done (its audible end is not known yet).
  const player = newPlayer();
  const enqueue = player.enqueue.bind(player);
  const pending = [];
  player.enqueue = (samples) => new Promise((resolve) => pending.push(() => resolve(enqueue(samples))));
  serve('binary', encodeAll('binary', [session(), S(0), A(0, 0, tone(200)), E(0, 200), DONE]));
  const conversation = speak({ text: 'Hi.', format: 'binary', player });
  await until(() => pending.length === 1 && conversation.record.marks.done != null);
  assert.equal(conversation.record.outcome, 'running', 'done arrived, its audio is not placed yet');
  assert.equal(conversation.record.marks.audibleEnd, null);
  pending[0]();
  const record = await conversation.finished;
  assert.equal(record.outcome, 'done', JSON.stringify(record.error));
  assert.ok(record.marks.audibleEnd > record.marks.audibleStart, JSON.stringify(record.marks));
});
