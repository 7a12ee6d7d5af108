// The browser client's parsers (web/protocol.js) against recorded earshot streams: whatever the
// network chunking, the same messages come out; line endings, comments, keep-alives and unknown
// types change nothing; anything unreadable is an error.
//
// The fixtures are real responses of the local stack to {"text":"Hello there. How are you?"}, once
// as SSE and once as binary frames.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import {
  SseParser,
  BinaryFrameParser,
  ProtocolError,
  parserForContentType,
  decodeBase64,
  MAX_FRAME_BYTES,
} from '../../web/protocol.js';
import { pcmS16leToFloat32, decodeSamples, sampleBytes, SampleJoiner } from '../../web/player.js';
import { OggPackets, opusPacketSamples } from '../../web/opus.js';
import { seededRandom, randomChunks, everySplit, feed, plain, bytesOf, concat, frame, framesOf, sseBlocksOf } from './chunking.mjs';

const fixture = (name) => new Uint8Array(readFileSync(new URL(`./fixtures/${name}`, import.meta.url)));
const SSE = fixture('hello.sse');
const BINARY = fixture('hello.frames');
const SSE_TEXT = new TextDecoder().decode(SSE);

const sseMessages = plain(feed(new SseParser(), [SSE]));
const binaryMessages = plain(feed(new BinaryFrameParser(), [BINARY]));
const CHUNKINGS = 150;

function assertSameForRandomChunkings(makeParser, bytes, expected, firstSeed) {
  for (let seed = firstSeed; seed < firstSeed + CHUNKINGS; seed++) {
    const chunks = randomChunks(bytes, seededRandom(seed));
    assert.deepStrictEqual(plain(feed(makeParser(), chunks)), expected, `chunking seed ${seed} (${chunks.length} chunks)`);
  }
}

const rejectsAsProtocolError = (code) => (e) => e instanceof ProtocolError && e.code === code;

test('the recorded SSE stream is one whole conversation in protocol order', () => {
  const types = sseMessages.map((m) => m.type);
  assert.equal(types[0], 'session');
  assert.equal(types.at(-1), 'done');
  const session = sseMessages[0];
  assert.equal(session.v, 1);
  assert.deepStrictEqual(session.audio, { encoding: 'pcm_s16le', sample_rate: 24000, channels: 1 });
  assert.deepStrictEqual(
    sseMessages.filter((m) => m.type === 'sentence').map((m) => [m.index, m.text]),
    [[0, 'Hello there.'], [1, 'How are you?']],
  );
  const audio = sseMessages.filter((m) => m.type === 'audio');
  assert.deepStrictEqual(audio.map((m) => [m.index, m.seq]), [[0, 0], [1, 0], [1, 1]]);
  const pcmBytes = audio.reduce((n, m) => n + m.pcm.length / 2, 0);
  assert.equal(pcmBytes, sseMessages.at(-1).timeline.audio_bytes_sent, 'decoded PCM = bytes the server says it sent');
});

test('the SSE and binary recordings decode to the same messages and the same PCM', () => {
  const comparable = (messages) =>
    messages.map(({ type, ...m }) => {
      if (type === 'session') return { type, audio: m.audio, release: m.release };
      if (type === 'done') return { type, audio_bytes_sent: m.timeline.audio_bytes_sent };
      return { type, ...m };
    });
  assert.deepStrictEqual(comparable(binaryMessages), comparable(sseMessages));
});

test('SSE: random chunkings give the same messages', () => {
  assertSameForRandomChunkings(() => new SseParser(), SSE, sseMessages, 1);
});

test('binary: random chunkings give the same messages', () => {
  assertSameForRandomChunkings(() => new BinaryFrameParser(), BINARY, binaryMessages, 1001);
});

test('every two-way cut of a short stream gives the same messages, in both deliveries', () => {
  const shortSse = bytesOf(sseBlocksOf(SSE_TEXT).filter((b) => !b.startsWith('event: audio')).join(''));
  const expectedSse = plain(feed(new SseParser(), [shortSse]));
  for (const [a, b] of everySplit(shortSse)) assert.deepStrictEqual(plain(feed(new SseParser(), [a, b])), expectedSse, `cut at ${a.length}`);
  const shortBinary = concat(...framesOf(BINARY).slice(0, 10), frame(0x04, concat(new Uint8Array(8), new Uint8Array([1, 0, 255, 255]))));
  const expectedBinary = plain(feed(new BinaryFrameParser(), [shortBinary]));
  for (const [a, b] of everySplit(shortBinary)) assert.deepStrictEqual(plain(feed(new BinaryFrameParser(), [a, b])), expectedBinary, `cut at ${a.length}`);
});

test('SSE: CRLF and CR line endings, under random chunkings, change nothing', () => {
  for (const [name, ending] of [['CRLF', '\r\n'], ['CR', '\r']]) {
    const converted = bytesOf(SSE_TEXT.replaceAll('\n', ending));
    assert.deepStrictEqual(plain(feed(new SseParser(), [converted])), sseMessages, name);
    assertSameForRandomChunkings(() => new SseParser(), converted, sseMessages, name === 'CRLF' ? 2001 : 3001);
  }
  // mixed endings, and a \r\n cut between its two bytes
  const mixed = bytesOf('event: text\r\ndata: {"text":"a"}\r\r\nevent: text\ndata: {"text":"b"}\n\r');
  const expected = [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }];
  for (const [a, b] of everySplit(mixed)) assert.deepStrictEqual(feed(new SseParser(), [a, b]), expected, `cut at ${a.length}`);
});

test('SSE: comments and keep-alives between and inside messages are ignored', () => {
  const blocks = sseBlocksOf(SSE_TEXT);
  const withComments = blocks
    .map((block, i) => {
      const lines = block.split('\n');
      lines.splice(1, 0, ': a comment inside a message'); // between `event:` and `data:`
      return `: keep-alive\n\n${i % 2 ? ':\n' : ''}${lines.join('\n')}`;
    })
    .join('');
  assert.deepStrictEqual(plain(feed(new SseParser(), [bytesOf(withComments)])), sseMessages);
  assertSameForRandomChunkings(() => new SseParser(), bytesOf(withComments), sseMessages, 4001);
});

test('SSE: a byte order mark at the start, `id:` and `retry:` fields are ignored', () => {
  // the mark sits right before `event:`, so a parser that kept it would not know the first message
  const text = `\ufeff${SSE_TEXT.replace('\nevent: text\n', '\nid: 7\nretry: 100\nevent: text\n')}`;
  for (const [a, b] of everySplit(bytesOf(text).subarray(0, 6))) {
    const rest = bytesOf(text).subarray(6);
    assert.deepStrictEqual(plain(feed(new SseParser(), [a, b, rest])), sseMessages, `cut at ${a.length}`);
  }
});

test('SSE: messages of unknown type, or with no `event:`, are skipped', () => {
  const blocks = sseBlocksOf(SSE_TEXT);
  const extra = [
    'event: caption_style\ndata: {"size":"large"}\n\n',
    'event: audio_v2\ndata: not even JSON\n\n',
    'data: {"text":"an unnamed message"}\n\n',
  ];
  const withUnknown = blocks.flatMap((block, i) => [extra[i % extra.length], block]).join('');
  assert.deepStrictEqual(plain(feed(new SseParser(), [bytesOf(withUnknown)])), sseMessages);
});

test('SSE: a block with no data dispatches nothing', () => {
  assert.deepStrictEqual(feed(new SseParser(), [bytesOf('event: text\n\nevent: text\ndata: {"text":"x"}\n\n')]), [{ type: 'text', text: 'x' }]);
});

test('SSE: data spread over several `data:` lines is joined with newlines', () => {
  const messages = feed(new SseParser(), [bytesOf('event: text\ndata: {"text":\ndata: "two lines"}\n\n')]);
  assert.deepStrictEqual(messages, [{ type: 'text', text: 'two lines' }]);
  // the newline is kept: a number cut across two lines is not glued back into another number
  const glued = bytesOf('event: sentence\ndata: {"text":"x","index":1\ndata: 2}\n\n');
  assert.throws(() => feed(new SseParser(), [glued]), rejectsAsProtocolError('malformed_message'));
});

test('SSE: one space after the colon is dropped, and no more', () => {
  const text = 'event:text\ndata:{"text":"no space"}\n\nevent:  text\ndata: {"text":"type is \' text\'"}\n\n';
  assert.deepStrictEqual(feed(new SseParser(), [bytesOf(text)]), [{ type: 'text', text: 'no space' }]);
});

test('words arrive as typed messages in both deliveries, and words out of shape raise', () => {
  const json = '{"index":0,"timing":"model","words":[{"text":"Hello","start_ms":90,"end_ms":440}]}';
  const expected = [{ type: 'words', index: 0, timing: 'model', words: [{ text: 'Hello', start_ms: 90, end_ms: 440 }] }];
  assert.deepStrictEqual(feed(new SseParser(), [bytesOf(`event: words\ndata: ${json}\n\n`)]), expected);
  const payload = bytesOf(json);
  const frame = new Uint8Array(5 + payload.length);
  frame[0] = 0x08;
  new DataView(frame.buffer).setUint32(1, payload.length);
  frame.set(payload, 5);
  assert.deepStrictEqual(feed(new BinaryFrameParser(), [frame]), expected);
  const backwards = 'event: words\ndata: {"index":0,"timing":"model","words":[{"text":"x","start_ms":5,"end_ms":1}]}\n\n';
  assert.throws(() => feed(new SseParser(), [bytesOf(backwards)]), ProtocolError);
});

test('SSE: malformed messages raise, never guess', () => {
  const cases = [
    ['unreadable JSON', 'event: session\ndata: {"v":1,\n\n'],
    ['JSON that is not an object', 'event: text\ndata: "hello"\n\n'],
    ['a missing field', 'event: sentence\ndata: {"text":"Hi."}\n\n'],
    ['a field of the wrong type', 'event: sentence_end\ndata: {"index":"0","audio_ms":1}\n\n'],
    ['a negative index', 'event: sentence\ndata: {"index":-1,"text":"Hi."}\n\n'],
    ['audio without data', 'event: audio\ndata: {"index":0,"seq":0}\n\n'],
    ['audio with invalid base64', 'event: audio\ndata: {"index":0,"seq":0,"data":"AA*A"}\n\n'],
    ['audio with unpadded base64', 'event: audio\ndata: {"index":0,"seq":0,"data":"AAA"}\n\n'],
    ['audio with whitespace in base64', 'event: audio\ndata: {"index":0,"seq":0,"data":"AA AA"}\n\n'],
    ['an error without its code', 'event: error\ndata: {"message":"x","retryable":false}\n\n'],
  ];
  for (const [name, text] of cases) {
    assert.throws(() => feed(new SseParser(), [bytesOf(text)]), rejectsAsProtocolError('malformed_message'), name);
  }
  const invalidUtf8 = concat(bytesOf('event: text\ndata: {"text":"'), new Uint8Array([0xff, 0xfe]), bytesOf('"}\n\n'));
  assert.throws(() => feed(new SseParser(), [invalidUtf8]), rejectsAsProtocolError('malformed_message'), 'invalid UTF-8');
});

test('SSE: a stream that ends inside a message is truncated', () => {
  for (const cut of [SSE.length - 1, SSE.length - 2, SSE.indexOf(0x0a) + 1, 20]) {
    assert.throws(() => feed(new SseParser(), [SSE.subarray(0, cut)]), rejectsAsProtocolError('truncated'), `cut at ${cut}`);
  }
});

test('binary: the example frame of docs/protocol.md', () => {
  const bytes = Uint8Array.from([0x04, 0, 0, 0, 0x0c, 0, 0, 0, 2, 0, 0, 0, 0, 0x01, 0x00, 0xff, 0xff]);
  const [message] = feed(new BinaryFrameParser(), [bytes]);
  assert.deepStrictEqual(plain([message]), [{ type: 'audio', index: 2, seq: 0, pcm: '0100ffff' }]);
  assert.deepStrictEqual(Array.from(pcmS16leToFloat32(message.pcm)), [1 / 32768, -1 / 32768]);
});

test('binary: keep-alive frames and frames of unknown type are skipped whole', () => {
  const frames = framesOf(BINARY);
  const keepAlive = frame(0x00, new Uint8Array(0));
  // Unknown frames whose payloads look like control JSON or like audio: only the type byte counts.
  const unknownJson = frame(0x42, bytesOf('{"type":"session","v":1}'));
  const unknownAudioLike = frame(0xff, concat(new Uint8Array(8), new Uint8Array(300).fill(7)));
  const unknownEmpty = frame(0x09, new Uint8Array(0));
  const extra = [keepAlive, unknownJson, unknownAudioLike, unknownEmpty];
  const stream = concat(...frames.flatMap((f, i) => [extra[i % extra.length], f]), keepAlive);
  assert.deepStrictEqual(plain(feed(new BinaryFrameParser(), [stream])), binaryMessages);
  assertSameForRandomChunkings(() => new BinaryFrameParser(), stream, binaryMessages, 5001);
});

test('binary: the type byte, not the payload, says what a frame holds', () => {
  // Audio whose PCM begins with `{"` is audio; a text frame is JSON whatever its first byte.
  const pcm = bytesOf('{"text":"not a message"}');
  const audio = frame(0x04, concat(Uint8Array.from([0, 0, 0, 3, 0, 0, 0, 9]), pcm));
  const text = frame(0x02, bytesOf(' \n{"text":"spaced"}'));
  const messages = feed(new BinaryFrameParser(), [audio, text]);
  assert.deepStrictEqual(plain(messages), [
    { type: 'audio', index: 3, seq: 9, pcm: Buffer.from(pcm).toString('hex') },
    { type: 'text', text: 'spaced' },
  ]);
});

test('binary: malformed frames raise, never guess', () => {
  const header = (typeByte, length) => {
    const h = new Uint8Array(5);
    h[0] = typeByte;
    new DataView(h.buffer).setUint32(1, length);
    return h;
  };
  const cases = [
    ['unreadable JSON', frame(0x01, bytesOf('{"v":1,')), 'malformed_message'],
    ['JSON missing a field', frame(0x03, bytesOf('{"index":0}')), 'malformed_message'],
    ['JSON that is not UTF-8', frame(0x02, Uint8Array.from([0x7b, 0xff, 0x7d])), 'malformed_message'],
    ['an audio payload shorter than its header', frame(0x04, new Uint8Array(7)), 'malformed_message'],
    ['a length over the limit (known type)', header(0x04, MAX_FRAME_BYTES + 1), 'frame_too_large'],
    ['a length over the limit (unknown type)', header(0x99, 0xffffffff), 'frame_too_large'],
  ];
  for (const [name, bytes, code] of cases) {
    assert.throws(() => feed(new BinaryFrameParser(), [bytes]), rejectsAsProtocolError(code), name);
  }
  // A frame at the limit is fine: its header alone does not raise.
  assert.deepStrictEqual(new BinaryFrameParser().push(header(0x04, MAX_FRAME_BYTES)), []);
});

test('binary: a stream that ends inside a frame is truncated', () => {
  for (const cut of [1, 4, 5, 6, BINARY.length - 1]) {
    assert.throws(() => feed(new BinaryFrameParser(), [BINARY.subarray(0, cut)]), rejectsAsProtocolError('truncated'), `cut at ${cut}`);
  }
});

test('the partly received message is known by its type, for the first-audio-bytes mark', () => {
  const sse = new SseParser();
  assert.equal(sse.partialType, null);
  sse.push(bytesOf('event: audio\ndata: {"index":0,'));
  assert.equal(sse.partialType, 'audio');
  sse.push(bytesOf('"seq":0,"data":"AAA="}\n\n'));
  assert.equal(sse.partialType, null);
  const binary = new BinaryFrameParser();
  binary.push(Uint8Array.from([0x04, 0, 0]));
  assert.equal(binary.partialType, null, 'a header not yet complete');
  binary.push(Uint8Array.from([0, 10, 0]));
  assert.equal(binary.partialType, 'audio');
});

test('the parser is chosen by the content type the server sends, never by the body', () => {
  assert.ok(parserForContentType('text/event-stream') instanceof SseParser);
  assert.ok(parserForContentType('text/event-stream; charset=utf-8') instanceof SseParser);
  assert.ok(parserForContentType('application/vnd.earshot.frames.v1') instanceof BinaryFrameParser);
  for (const type of ['application/json', '', null, 'application/octet-stream']) {
    assert.throws(() => parserForContentType(type), rejectsAsProtocolError('unexpected_content_type'), String(type));
  }
});

test('base64 decoding agrees with Node on random bytes and rejects what is not canonical', () => {
  const random = seededRandom(77);
  for (let n = 0; n < 200; n++) {
    const bytes = Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
    const text = Buffer.from(bytes).toString('base64');
    assert.deepStrictEqual(Buffer.from(decodeBase64(text)), Buffer.from(bytes), `length ${n}`);
  }
  for (const bad of ['A', 'AA', 'AAA', 'A===', '=AAA', 'AA=A', 'AA\nA', 'AA-_', 'AA\u0141=']) {
    assert.throws(() => decodeBase64(bad), undefined, JSON.stringify(bad));
  }
});

test('a sample split between two audio messages is joined; half a sample at the end is an error', () => {
  const joiner = new SampleJoiner();
  assert.deepStrictEqual(Array.from(joiner.push(Uint8Array.from([1, 0, 0xff]))), [1, 0]);
  assert.deepStrictEqual(Array.from(joiner.push(Uint8Array.from([0xff]))), [0xff, 0xff]);
  assert.deepStrictEqual(Array.from(joiner.push(Uint8Array.from([2]))), []);
  assert.deepStrictEqual(Array.from(joiner.push(Uint8Array.from([0, 3, 0]))), [2, 0, 3, 0]);
  joiner.finish();
  joiner.push(Uint8Array.from([5, 0, 6]));
  assert.throws(() => joiner.finish(), /half a sample/);
});

test('G.711 audio decodes byte for byte as the gateway and CPython\'s audioop decode it', () => {
  // The gateway's vectors, written by audioop: `d BYTE ULAW ALAW`, each byte's 16-bit sample under each law.
  const vectors = readFileSync(new URL('../../functions/earshot-audio/tests/g711_vectors.txt', import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('d '))
    .map((line) => line.split(' '));
  assert.equal(vectors.length, 256);
  const every = Uint8Array.from({ length: 256 }, (_, b) => b);
  const [ulaw, alaw] = [decodeSamples(every, 'mulaw'), decodeSamples(every, 'alaw')];
  for (const [, byte, u, a] of vectors) {
    const b = parseInt(byte, 16);
    assert.equal(ulaw[b], Number(u) / 32768, `μ-law ${byte}`);
    assert.equal(alaw[b], Number(a) / 32768, `A-law ${byte}`);
  }
  // A byte a sample: nothing waits for the next message, and any length ends a sentence whole.
  assert.equal(sampleBytes({ encoding: 'mulaw' }), 1);
  const joiner = new SampleJoiner(sampleBytes({ encoding: 'alaw' }));
  assert.deepStrictEqual(Array.from(joiner.push(Uint8Array.from([1, 2, 3]))), [1, 2, 3]);
  joiner.finish();
  assert.throws(() => sampleBytes({ encoding: 'opus' }), /unsupported audio encoding `opus`/);
  assert.throws(() => decodeSamples(Uint8Array.from([1]), 'opus'), /unsupported/);
});

// Ogg Opus (web/opus.js): the Ogg framing is read here; WebCodecs decodes the packets (in Chromium:
// browser.test.mjs plays an Opus answer). Pages are built by hand as RFC 3533 lays them out.
function oggPage(lacing, body, granule = 0n) {
  const header = new Uint8Array(27 + lacing.length);
  header.set([0x4f, 0x67, 0x67, 0x53], 0);
  new DataView(header.buffer).setBigUint64(6, granule, true);
  header[26] = lacing.length;
  header.set(lacing, 27);
  return concat(header, body);
}

test('Ogg pages give back whole packets, however the stream is cut and across pages', () => {
  const a = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
  const b = Uint8Array.from([7, 8, 9]);
  // Packet a (300 bytes) laced 255 + 45; packet b; then packet c of 255 bytes continued on the next page.
  const c = Uint8Array.from({ length: 265 }, (_, i) => (i * 3) & 0xff);
  const first = oggPage([255, 45, 3, 255], concat(a, b, c.subarray(0, 255)));
  const second = oggPage([10], c.subarray(255), 960n);
  const stream = concat(first, second);
  for (const cut of [1, 27, 28, first.length - 1, first.length, first.length + 30]) {
    const reader = new OggPackets();
    const packets = [...reader.push(stream.subarray(0, cut)), ...reader.push(stream.subarray(cut))];
    assert.deepStrictEqual(packets.map((p) => Array.from(p)), [a, b, c].map((p) => Array.from(p)), `cut at ${cut}`);
  }
  assert.throws(() => new OggPackets().push(new Uint8Array(40)), /not an Ogg page/);
});

test('an Opus packet says how many samples it holds (RFC 6716, the TOC byte)', () => {
  // config 1 (SILK 20 ms), code 0: one frame; config 31 (CELT 20 ms), code 1: two; config 16 (CELT
  // 2.5 ms), code 3 with 3 frames; config 13 (hybrid 20 ms), code 0.
  assert.equal(opusPacketSamples(Uint8Array.from([1 << 3])), 960);
  assert.equal(opusPacketSamples(Uint8Array.from([(31 << 3) | 1])), 1920);
  assert.equal(opusPacketSamples(Uint8Array.from([(16 << 3) | 3, 3])), 360);
  assert.equal(opusPacketSamples(Uint8Array.from([13 << 3])), 960);
  assert.equal(opusPacketSamples(new Uint8Array(0)), 0);
});

test('Ogg Opus is refused where the runtime has no WebCodecs, with a message that says so', () => {
  assert.equal(typeof globalThis.AudioDecoder, 'undefined', 'Node has no WebCodecs');
  assert.throws(() => sampleBytes({ encoding: 'ogg_opus' }), /no WebCodecs AudioDecoder/);
});
