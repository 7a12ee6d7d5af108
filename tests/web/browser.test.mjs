// The demo page in a real browser (headless Chromium) against the running local stack: it speaks
// in each release mode and each stream format, plays the sentences in order with its marks in
// order, shows errors in words, and Stop silences it at once, interrupts the conversation and ends the
// server's work.
//
// scripts/test-web.sh starts the stack and sets EARSHOT_URL (the gateway, which serves the page)
// and KOKORO_URL (the Kokoro container). Without EARSHOT_URL these tests are skipped.
//
// The page is screenshotted during a conversation (1280×800); UPDATE_SCREENSHOT=1 writes it to
// web/screenshot.png, otherwise it goes to a temporary directory and only its size is checked.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const EARSHOT_URL = process.env.EARSHOT_URL?.replace(/\/+$/, '');
const KOKORO_URL = process.env.KOKORO_URL?.replace(/\/+$/, '');
const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const skip = EARSHOT_URL ? false : 'EARSHOT_URL is not set: scripts/test-web.sh starts the stack and sets it';

const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
];
const SHORT_TEXT = 'Hello there. How are you? It is a fine day.';
const SHORT_SENTENCES = ['Hello there.', 'How are you?', 'It is a fine day.'];
const SCREENSHOT_LIMIT_BYTES = 300 * 1024;
const scratch = mkdtempSync(path.join(tmpdir(), 'earshot-web-test-'));
const screenshotPath = process.env.UPDATE_SCREENSHOT
  ? fileURLToPath(new URL('../../web/screenshot.png', import.meta.url))
  : path.join(scratch, 'screenshot.png');

let browser;
let page;
const pageErrors = [];
const speakResponses = [];
/** The JSON body of every /v1/speak request the page sent. */
const speakBodies = [];
const speakFailures = [];
/** /v1/speak requests whose response ended normally. */
const speakEnds = [];

before(async () => {
  if (skip) return;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launchPersistentContext(path.join(scratch, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 800 },
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.on('pageerror', (e) => pageErrors.push(`uncaught: ${e.message}`));
  page.on('console', (m) => {
    // a failed /v1/speak is logged by the browser itself; the page reports it in words
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) pageErrors.push(`console: ${m.text()}`);
  });
  page.on('request', (r) => {
    if (r.url().endsWith('/v1/speak')) speakBodies.push(JSON.parse(r.postData() ?? '{}'));
  });
  page.on('response', (r) => {
    if (r.url().endsWith('/v1/speak')) speakResponses.push({ status: r.status(), contentType: r.headers()['content-type'] });
  });
  // The browser's own account of a request that did not finish (an aborted fetch shows here).
  page.on('requestfailed', (r) => {
    if (r.url().endsWith('/v1/speak')) speakFailures.push({ at: Date.now(), error: r.failure()?.errorText });
  });
  page.on('requestfinished', (r) => {
    if (r.url().endsWith('/v1/speak')) speakEnds.push({ at: Date.now() });
  });
});

/** How long the browser may take to close before its processes are killed. */
const CLOSE_LIMIT_MS = 30_000;

after(async () => {
  // Once, with every test passed, the persistent context's close() never returned and node waited until
  // the stage's own limit. Past a limit the browser's processes (found by their profile folder) are
  // killed: the pipe to them closes, and node can end.
  let timer;
  const closed = browser?.close().then(() => true);
  const limit = new Promise((resolve) => {
    timer = setTimeout(() => resolve(false), CLOSE_LIMIT_MS);
  });
  if (closed && !(await Promise.race([closed, limit]))) {
    console.error(`# the browser did not close within ${CLOSE_LIMIT_MS / 1000} s: killing its processes`);
    spawnSync('pkill', ['-KILL', '-f', path.join(scratch, 'profile')]);
  }
  clearTimeout(timer);
  rmSync(scratch, { recursive: true, force: true });
});

/** Chooses the page's options the way a person does, then presses Speak. */
async function speakOnPage({ input, value, release = 'incremental', format = 'sse', outputFormat = '' }) {
  await page.check(`input[name=input][value=${input}]`);
  await page.check(`input[name=release][value=${release}]`);
  await page.check(`input[name=format][value=${format}]`);
  await page.selectOption('#output-format', outputFormat);
  await page.fill('#prompt', value);
  const before = await page.evaluate(() => window.earshot.records.length);
  // The loudest level heard during this conversation, sampled in the page.
  await page.evaluate(() => {
    window.loudest = 0;
    clearInterval(window.levelSampler);
    window.levelSampler = setInterval(() => {
      window.loudest = Math.max(window.loudest, window.earshot.player.level());
    }, 10);
  });
  await page.click('#speak');
  await page.waitForFunction((n) => window.earshot.records.length === n + 1, before);
}

/** Waits until the latest conversation has ended and its last sound has been heard. */
async function untilHeardToTheEnd(timeout = 60_000) {
  await page.waitForFunction(
    () => {
      const r = window.earshotLast;
      return r.outcome !== 'running' && (r.outcome !== 'done' || (performance.now() > r.marks.audibleEnd + 50 && window.earshot.player.playing === 0));
    },
    null,
    { timeout, polling: 50 },
  );
  return page.evaluate(() => window.earshotLast);
}

/** Captions in the order they were highlighted: [index, text]. */
function captionsAsHeard() {
  return page.evaluate(() =>
    [...document.querySelectorAll('#captions li[data-played-at]')]
      .sort((a, b) => Number(a.dataset.playedAt) - Number(b.dataset.playedAt))
      .map((li) => [Number(li.dataset.index), li.textContent]),
  );
}

/** Every sentence's words were lit in order, each when the audio clock reached its start. */
async function assertWordsFollowTheAudioClock(record) {
  const lit = await page.evaluate(() =>
    [...document.querySelectorAll('#captions li[data-index] span.word')].map((span) => ({
      index: Number(span.closest('li').dataset.index),
      word: Number(span.dataset.word),
      timing: span.closest('li').dataset.timing,
      litAt: span.dataset.litAt === undefined ? null : Number(span.dataset.litAt),
    })),
  );
  const expected = record.sentences.reduce((n, s) => n + s.words.length, 0);
  assert.ok(expected > 0 && lit.length === expected, `${lit.length} word spans for ${expected} words`);
  const early = [];
  const off = [];
  let unlit = 0;
  for (const { index, word, timing, litAt } of lit) {
    const sentence = record.sentences.find((s) => s.index === index);
    assert.equal(timing, 'model', `sentence ${index} is timed by the model`);
    if (litAt === null) {
      unlit++;
      continue;
    }
    // Its time on the audio clock: the sentence's first sound, its start in the sentence, and the silences
    // inside the sentence before it (a stall holds the voice, and the page holds the words with it).
    let due = sentence.scheduledStart + sentence.words[word].start_ms;
    for (const stall of [...sentence.stalls].sort((a, b) => a.start - b.start)) if (stall.start < due) due += stall.ms;
    // Never ahead of the voice (a frame of slack) where the voice never stopped: inside a stall the page
    // cannot know yet that the audio ran out, and lights the words it would have reached. Behind it by a
    // frame or a few (17 ms each), unless the page's main thread stalled, which a loaded machine does now
    // and then: a tenth of the words may be off.
    const miss = { index, word: sentence.words[word].text, ms: Math.round(litAt - due) };
    if (litAt < due - 20 && sentence.stalls.length === 0) early.push(miss);
    else if (Math.abs(litAt - due) > 150) off.push(miss);
  }
  assert.ok(unlit <= Math.floor(expected / 10), `${unlit} of ${expected} words never lit`);
  assert.deepStrictEqual(early, [], 'no word lit before the audio clock reached it');
  assert.ok(off.length <= Math.floor(expected / 10), `more than a tenth of the words lit over 150 ms off: ${JSON.stringify(off)}`);
}

const MARKS_IN_ORDER = ['requestSent', 'firstEvent', 'firstAudioBytes', 'firstDecoded', 'audibleStart'];

test('the page loads from the gateway and finds it healthy', { skip }, async () => {
  await page.goto(`${EARSHOT_URL}/`);
  assert.match(await page.title(), /earshot/);
  await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state !== 'checking');
  assert.equal(await page.getAttribute('#gateway-status', 'data-state'), 'ok', await page.textContent('#gateway-text'));
  assert.equal(await page.evaluate(() => typeof window.earshot?.player), 'object', 'the page scripts ran');
  assert.ok(await page.isVisible('[data-sample=brief]'));
});

// Release, stream and the audio's format (docs/protocol.md, "Audio formats"; '': Kokoro's own 24 kHz PCM).
// Ogg Opus plays through WebCodecs' AudioDecoder (web/opus.js), placed as it comes out of the decoder.
const RUNS = [
  ['incremental', 'sse', ''],
  ['incremental', 'binary', 'opus_48000'],
  ['buffered', 'sse', 'pcm_48000'],
  ['buffered', 'binary', 'ulaw_8000'],
];
const SESSION_AUDIO = { '': ['pcm_s16le', 24_000], ulaw_8000: ['mulaw', 8_000], pcm_48000: ['pcm_s16le', 48_000], opus_48000: ['ogg_opus', 48_000] };

for (const [release, format, outputFormat] of RUNS) {
  const last = release === RUNS.at(-1)[0] && format === RUNS.at(-1)[1];
  test(`speaks a short text, ${release} release, ${format} stream, ${outputFormat || 'native'} audio`, { skip, timeout: 90_000 }, async () => {
    await speakOnPage({ input: 'text', value: SHORT_TEXT, release, format, outputFormat });
    if (last) {
      // The screenshot for the README: the last sentence highlighted, the chart of all four runs.
      await page.waitForFunction((n) => window.earshotLast.playedOrder.length === n, SHORT_SENTENCES.length, { timeout: 60_000 });
      await page.waitForTimeout(300);
      await page.screenshot({ path: screenshotPath });
    }
    const record = await untilHeardToTheEnd();

    assert.equal(record.outcome, 'done', JSON.stringify(record.error));
    assert.equal(record.release, release);
    assert.equal(record.format, format);
    assert.deepStrictEqual([record.encoding, record.sampleRate], SESSION_AUDIO[outputFormat], 'the session announced the audio asked for');
    const response = speakResponses.at(-1);
    assert.equal(response.status, 200);
    assert.equal(response.contentType, format === 'binary' ? 'application/vnd.earshot.frames.v1' : 'text/event-stream');

    // Audio was scheduled and sounded.
    assert.ok(record.audioChunks > 0 && record.audioBytes > 0, `${record.audioChunks} chunks, ${record.audioBytes} bytes`);
    const player = await page.evaluate(() => ({ ...window.earshot.player.counters, playing: window.earshot.player.playing, loudest: window.loudest }));
    assert.ok(player.scheduled >= record.audioChunks, JSON.stringify(player));
    assert.equal(player.playing, 0, 'every source has ended');
    assert.ok(player.loudest > 0.01, `something was heard (loudest RMS ${player.loudest})`);

    // The client's marks are in order.
    const marks = MARKS_IN_ORDER.map((name) => record.marks[name]);
    assert.ok(marks.every((t) => typeof t === 'number'), JSON.stringify(record.marks));
    for (let i = 1; i < marks.length; i++) {
      assert.ok(marks[i - 1] <= marks[i], `${MARKS_IN_ORDER[i - 1]} ≤ ${MARKS_IN_ORDER[i]}: ${JSON.stringify(record.marks)}`);
    }

    // The sentences were heard in order, each once, and the captions followed them.
    assert.deepStrictEqual(record.sentences.map((s) => s.text), SHORT_SENTENCES);
    assert.deepStrictEqual(record.playedOrder, [0, 1, 2]);
    if (record.encoding === 'ogg_opus') {
      // Decoded whole, the pre-skip dropped once: each sentence plays its speech and at most the ~9 ms of
      // silence that flushes the codec's look-ahead at its end. Counted on the audio clock, where the pieces
      // were placed (converted to page time, start and end differed by up to 9 ms on a loaded machine). A
      // lost or doubled Opus frame is 20 ms, well outside either bound.
      for (const s of record.sentences) {
        const played = s.placedSeconds * 1000;
        assert.ok(played >= s.audioMs - 1 && played <= s.audioMs + 12, `sentence ${s.index}: ${played.toFixed(1)} ms placed for ${s.audioMs} ms of speech`);
      }
    }
    const starts = record.sentences.map((s) => s.scheduledStart);
    assert.ok(starts.every((t, i) => i === 0 || t > starts[i - 1]), `sentence starts ${starts}`);
    assert.deepStrictEqual(await captionsAsHeard(), SHORT_SENTENCES.map((text, i) => [i, text]));
    assert.equal(await page.locator('#captions li.speaking').count(), 0, 'no caption highlighted once the answer is over');

    // Word by word: each sentence's words came from the model, and the page lit each one as the audio clock
    // reached it (its first sound's audible time plus the word's start), within a few frames.
    await assertWordsFollowTheAudioClock(record);

    // The server applied the release mode: buffered holds every sentence until the agent is done.
    const server = record.server;
    for (const sentence of server.sentences) {
      if (release === 'buffered') assert.ok(sentence.released_ms >= server.agent_done_ms, JSON.stringify(sentence));
    }
    if (release === 'incremental') assert.ok(server.sentences[0].released_ms < server.agent_done_ms, JSON.stringify(server.sentences[0]));
  });
}

test('the screenshot for the README is 1280×800 and small', { skip }, () => {
  const png = readFileSync(screenshotPath);
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
  assert.deepStrictEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [1280, 800], 'width and height');
  assert.ok(png.length > 10_000 && png.length <= SCREENSHOT_LIMIT_BYTES, `${png.length} bytes`);
});

test('the chart shows one row per conversation', { skip }, async () => {
  assert.equal(await page.locator('#timeline svg g.row').count(), RUNS.length);
});

async function kokoroStats() {
  if (!KOKORO_URL) return null;
  const response = await fetch(`${KOKORO_URL}/stats`);
  return response.ok ? response.json() : null;
}

test('Stop silences playback at once and cancels the server\'s work', { skip, timeout: 90_000 }, async (t) => {
  const statsBefore = await kokoroStats();
  await speakOnPage({ input: 'prompt', value: 'long', release: 'incremental', format: 'binary' });
  await page.waitForFunction(() => window.earshotLast.playedOrder.length >= 1 && window.loudest > 0.01, null, { timeout: 60_000 });
  const failuresBefore = speakFailures.length;
  const endsBefore = speakEnds.length;
  const clickedAt = Date.now();
  const stoppedAt = await page.evaluate(() => {
    document.getElementById('stop').click();
    return performance.now();
  });
  const right = await page.evaluate(() => ({ playing: window.earshot.player.playing, counters: window.earshot.player.counters, record: window.earshotLast }));
  assert.equal(right.playing, 0, 'no source left playing');
  assert.ok(right.counters.stopped >= 1, JSON.stringify(right.counters));
  assert.equal(right.record.outcome, 'stopped');
  assert.ok(right.record.marks.audibleEnd > stoppedAt, 'there was audio still to play when Stop was pressed');

  // The gateway is asked to stop the conversation (what stops it on Lambda), then the request closes.
  await page.waitForFunction(() => window.earshotLast.fetch.aborted, null, { timeout: 1500 });
  // The page closes the request when the interrupt is answered or after a second, whichever comes first;
  // the answer may come after.
  await page.waitForFunction(() => window.earshotLast.fetch.interrupt?.status != null, null, { timeout: 5000 });
  const asked = await page.evaluate(() => window.earshotLast.fetch.interrupt);
  assert.equal(asked?.status, 202, `the interrupt was accepted: ${JSON.stringify(asked)}`);
  await page.waitForFunction(() => window.earshotLast.fetch.readerEnded, null, { timeout: 3000 });
  // The request is over at once, while the answer was still being written: either the gateway ended the
  // stream on the interrupt (it answers `error interrupted`) or the page's abort closed it first.
  const over = () => speakFailures.length + speakEnds.length - failuresBefore - endsBefore;
  for (let i = 0; i < 20 && over() === 0; i++) await page.waitForTimeout(50);
  assert.equal(over(), 1, 'the request ended, once');
  const ended = speakFailures.length > failuresBefore ? speakFailures.at(-1) : speakEnds.at(-1);
  if (ended.error !== undefined) assert.match(ended.error, /ABORTED/i);
  // At most the page's own second of waiting for the interrupt's answer, and the events' way here.
  assert.ok(ended.at - clickedAt < 1500, `the request ended ${ended.at - clickedAt} ms after Stop`);
  await page.waitForFunction(() => window.earshot.player.level() === 0, null, { timeout: 1000, polling: 10 });
  const heardBefore = right.record.playedOrder.length;
  await page.waitForTimeout(1000);
  const later = await page.evaluate(() => ({ record: window.earshotLast, level: window.earshot.player.level(), speaking: document.querySelectorAll('#captions li.speaking').length }));
  assert.equal(later.level, 0, 'silence after Stop');
  assert.equal(later.record.playedOrder.length, heardBefore, 'no sentence starts after Stop');
  assert.equal(later.speaking, 0, 'no caption highlighted after Stop');
  // What the page says after a Stop: how many sentences were heard, where it stopped, and only what was heard.
  assert.equal(await page.textContent('#status'), `Stopped after ${heardBefore} sentence${heardBefore === 1 ? '' : 's'}`);
  assert.equal(await page.isDisabled('#stop'), true);
  assert.equal(await page.$$eval('#captions li.stop-mark', (m) => m.length), 1, 'a mark where it stopped');
  assert.ok((await page.$$eval('#captions li.unspoken', (u) => u.length)) >= 1, 'the unspoken sentences are marked');
  await page.waitForFunction(() => /heard in \d+ sentence/.test(document.getElementById('fig-audio').textContent), null, { timeout: 3000 });
  const audio = await page.textContent('#fig-audio');
  assert.match(audio, new RegExp(`heard in ${heardBefore} sentence`), audio);
  assert.notEqual(await page.textContent('#fig-audible'), '–', 'the first audio heard is shown');
  // The chart is redrawn a few times a second: its row for this conversation comes to say "stopped".
  await page.waitForFunction(
    (n) => /stopped/.test(document.querySelector(`#timeline .row[data-number="${n}"] .row-figure`)?.textContent ?? ''),
    right.record.number,
    { timeout: 3000 },
  );
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'speak', 'focus stays in the form');

  // The server side: the Kokoro container's counters, when it has them.
  if (statsBefore === null) {
    t.diagnostic('the Kokoro container has no GET /stats: its cancellation was not observed (the client-side abort was)');
    return;
  }
  let stats = await kokoroStats();
  for (let i = 0; i < 50 && stats.active_requests !== 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    stats = await kokoroStats();
  }
  assert.equal(stats.active_requests, 0, JSON.stringify(stats));
  if ('cancelled_requests' in stats) {
    assert.ok(stats.cancelled_requests > statsBefore.cancelled_requests, `the container cancelled work: ${JSON.stringify(statsBefore)} → ${JSON.stringify(stats)}`);
  }
});

test('an input the gateway refuses is reported in words', { skip }, async () => {
  // Punctuation alone: the page cannot tell, the gateway can (nothing to speak once it is set aside).
  await speakOnPage({ input: 'text', value: '... !!! ???' });
  const record = await untilHeardToTheEnd(10_000);
  assert.equal(record.outcome, 'error');
  assert.equal(record.error.code, 'empty_input');
  assert.equal(await page.isVisible('#error'), true);
  assert.equal(await page.textContent('#error-title'), 'There is nothing to speak');
  const message = await page.textContent('#error-message');
  assert.match(message, /nothing to speak/);
  assert.match(message, /empty_input, HTTP 400/);
  // The next conversation clears it.
  await speakOnPage({ input: 'text', value: 'Fine.' });
  assert.equal(await page.isVisible('#error'), false);
  assert.equal((await untilHeardToTheEnd()).outcome, 'done');
});

test('the page keeps a spoken conversation: each question goes with the turns before it', { skip, timeout: 120_000 }, async () => {
  // Hidden while there are no turns (a click would wait for it to show, for the whole default timeout).
  if (await page.isVisible('#new-conversation')) await page.click('#new-conversation');
  // Short named answers (earshot serve --script, in scripts/test-web.sh): the turns matter here, not their length.
  await speakOnPage({ input: 'prompt', value: 'short' });
  const first = await untilHeardToTheEnd();
  assert.equal(first.outcome, 'done', JSON.stringify(first.error));
  const firstBody = speakBodies.at(-1);
  assert.equal(firstBody.messages, undefined, 'the first question has no history');
  const answer = first.sentences.map((s) => s.text).join(' ');
  await page.waitForFunction(() => document.querySelectorAll('#turns li').length === 2);

  assert.equal(answer, 'Sure. Your order shipped this morning.', 'the named answer, sentence by sentence');
  await speakOnPage({ input: 'prompt', value: 'thursday' });
  const second = await untilHeardToTheEnd();
  assert.equal(second.outcome, 'done', JSON.stringify(second.error));
  const body = speakBodies.at(-1);
  assert.deepEqual(body.messages, [{ role: 'user', content: 'short' }, { role: 'assistant', content: answer }]);
  assert.equal(body.conversation_id, firstBody.conversation_id, 'one conversation id for the whole conversation');
  assert.equal(second.conversationId, firstBody.conversation_id);
  const shown = await page.$$eval('#turns li', (items) => items.map((li) => [li.dataset.role, li.textContent]));
  assert.deepEqual(shown.map(([role]) => role), ['user', 'assistant', 'user', 'assistant']);
  assert.equal(shown[2][1], 'thursday');

  // A new conversation starts without history, under a new id.
  await page.click('#new-conversation');
  assert.equal(await page.$$eval('#turns li', (items) => items.length), 0);
  await speakOnPage({ input: 'text', value: 'Done.' });
  await untilHeardToTheEnd();
  assert.equal(speakBodies.at(-1).messages, undefined, 'text to read aloud carries no conversation');
});

test('after Stop, the next question carries only what was heard, marked as interrupted', { skip, timeout: 120_000 }, async () => {
  // Hidden while there are no turns (a click would wait for it to show, for the whole default timeout).
  if (await page.isVisible('#new-conversation')) await page.click('#new-conversation');
  await speakOnPage({ input: 'prompt', value: 'long', release: 'incremental', format: 'binary' });
  // Stop while a sentence plays and a later one is already scheduled behind it, not yet heard. The click
  // happens in the page, in the check that saw it so: a click from here takes round trips and frames, and
  // on a loaded machine the sentence would start before it lands.
  await page.waitForFunction(
    () => {
      const r = window.earshotLast;
      const ahead = r.playedOrder.length >= 1 && r.sentences.some((s) => s.scheduledStart !== null && s.scheduledStart > performance.now() + 50);
      if (ahead) document.getElementById('stop').click();
      return ahead;
    },
    null,
    { timeout: 60_000, polling: 20 },
  );
  const record = await untilHeardToTheEnd();
  assert.equal(record.outcome, 'stopped');
  const started = record.sentences.filter((s) => s.scheduledStart !== null && s.scheduledStart < record.marks.stopped);
  const unheard = record.sentences.filter((s) => !started.includes(s));
  assert.ok(started.length >= 1 && record.sentences.some((s) => s.scheduledStart !== null && s.scheduledStart >= record.marks.stopped), 'a sentence was scheduled and never heard');
  await page.waitForFunction(() => document.querySelectorAll('#turns li').length === 2);
  assert.equal(await page.$eval('#turns li[data-role=assistant]', (li) => li.dataset.interrupted), 'true', 'the turn is marked as interrupted');

  await speakOnPage({ input: 'prompt', value: 'thursday' });
  const body = speakBodies.at(-1);
  assert.deepEqual(body.messages.map((m) => Object.keys(m).sort()), [['content', 'role'], ['content', 'role']], 'turns on the wire are role and content alone');
  const said = body.messages[1].content;
  for (const s of started.slice(0, -1)) assert.ok(said.includes(s.text), `heard whole: ${s.text} in ${said}`);
  // The sentence Stop cut is kept as far as it was heard (a prefix of it, "…" when cut short).
  const last = started.at(-1).text;
  const kept = said.slice(started.slice(0, -1).map((s) => s.text).join(' ').length).trim().replace(/…$/, '');
  assert.ok(last.startsWith(kept), `the cut sentence's heard part: "${kept}" of "${last}"`);
  for (const s of unheard) assert.ok(!said.includes(s.text), `never heard, never remembered: ${s.text}`);
  await untilHeardToTheEnd();
  await page.click('#new-conversation');
});

test('an error about the input is cleared once the input changes', { skip }, async () => {
  await page.goto(`${EARSHOT_URL}/`);
  await page.check('input[name=input][value=prompt]');
  await page.fill('#prompt', '');
  await page.click('#speak');
  assert.equal(await page.isVisible('#error'), true);
  assert.equal(await page.textContent('#error-title'), 'There is nothing to speak');
  await page.fill('#prompt', 'x'.repeat(5000));
  assert.equal(await page.isVisible('#error'), false, 'no stale "nothing to speak" beside the counter');
  assert.match(await page.textContent('#counter'), /5,000 of 4,000 characters: too long for a prompt/);
  await page.fill('#prompt', 'brief');
});

test('on a slow machine the page counts the same stalls inside sentences as the server', { skip: skip || !process.env.EARSHOT_SLOW_URL, timeout: 240_000 }, async () => {
  // The gateway in front of a container four times slower than it can, on the fixed piece plan: the voice stops
  // inside sentences. The page's player and the server's timeline follow one listener (a clock from the
  // answer's first audio, audio queued ahead counted), so they agree on where the voice stopped.
  await page.goto(`${process.env.EARSHOT_SLOW_URL}/`);
  await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state === 'ok', null, { timeout: 30_000 });
  // The brief answer: its second sentence comes in two pieces, enough for a stop inside it, and at four times
  // slower on a busy 2-core machine (about 200 ms to render 53 ms of audio) the long answer would take minutes.
  await speakOnPage({ input: 'prompt', value: 'brief', release: 'incremental', format: 'binary' });
  const record = await untilHeardToTheEnd(200_000);
  assert.equal(record.outcome, 'done', JSON.stringify(record.error));
  // The page counts any underrun; the server only those over its 5 ms tolerance: compare the same.
  const pageStalls = record.sentences.flatMap((s) => s.stalls.map((x) => x.ms)).filter((ms) => ms > 5);
  const pageMs = pageStalls.reduce((n, ms) => n + ms, 0);
  const serverCount = record.server.sentences.reduce((n, s) => n + (s.stalls ?? 0), 0);
  const serverMs = record.server.sentences.reduce((n, s) => n + (s.stall_ms ?? 0), 0);
  assert.ok(serverCount >= 1, `the slow container makes the voice stop inside a sentence: ${JSON.stringify(record.server.sentences)}`);
  assert.ok(Math.abs(pageStalls.length - serverCount) <= 1, `stalls: page ${JSON.stringify(pageStalls)}, server ${serverCount}`);
  // The page hears each chunk a little after the server sends it (the network, decoding, the audio clock).
  assert.ok(Math.abs(pageMs - serverMs) <= Math.max(150, 0.05 * serverMs), `stall time: page ${pageMs.toFixed(0)} ms, server ${serverMs.toFixed(0)} ms`);
  // And the page shows them.
  const shown = record.sentences.reduce((n, s) => n + s.stalls.length, 0);
  await page.waitForFunction((n) => document.getElementById('fig-stalls').textContent.startsWith(`${n} in `), shown, { timeout: 5000 });
  await page.goto(`${EARSHOT_URL}/`);
});

test('the page drives a gateway in token mode with a token, and says clearly when it has none', { skip: skip || !process.env.EARSHOT_TOKEN_URL, timeout: 120_000 }, async () => {
  const tokenUrl = process.env.EARSHOT_TOKEN_URL;
  // Minted as an app's backend would, here by `earshot token` with the gateway's keys.
  const { execFileSync } = await import('node:child_process');
  const minted = execFileSync(process.env.EARSHOT_BIN_FOR_TOKENS, ['token', '--sub', 'browser-test', '--conversation', 'page:*', '--ttl', '600'], { encoding: 'utf8' }).trim();

  // Without a token: the gateway answers 401 and the page says so in words.
  await page.goto(`${tokenUrl}/`);
  await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state !== 'checking');
  await speakOnPage({ input: 'text', value: 'Hello there.' });
  const refused = await untilHeardToTheEnd();
  assert.equal(refused.outcome, 'error');
  assert.equal(refused.error.code, 'token_missing');
  assert.ok(await page.isVisible('#error'));
  assert.equal(await page.textContent('#error-title'), 'This gateway needs a token');
  assert.match(await page.textContent('#error-message'), /token_missing, HTTP 401/);

  // With the token in the page's address (or its Token field), it speaks, and Stop reaches the gateway.
  await page.goto(`${tokenUrl}/?token=${encodeURIComponent(minted)}`);
  await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state !== 'checking');
  await speakOnPage({ input: 'text', value: 'Hello there. This gateway wanted a token, and it had one.' });
  const spoken = await untilHeardToTheEnd();
  assert.equal(spoken.outcome, 'done', JSON.stringify(spoken.error));
  assert.ok(spoken.conversationId.startsWith('page:'), spoken.conversationId);
  assert.equal(await page.isVisible('#error'), false);

  await speakOnPage({ input: 'prompt', value: 'long' });
  await page.waitForFunction(() => window.earshotLast.playedOrder.length >= 1, null, { timeout: 60_000 });
  await page.click('#stop');
  const stopped = await untilHeardToTheEnd();
  assert.equal(stopped.outcome, 'stopped');
  await page.waitForFunction(() => window.earshotLast.fetch.interrupt?.status !== null, null, { timeout: 10_000 });
  assert.equal(await page.evaluate(() => window.earshotLast.fetch.interrupt.status), 202, 'the token may stop its own conversation');
  await page.goto(`${EARSHOT_URL}/`);
});

test('a link naming another gateway is said, not followed, and a token leaves the address bar', { skip, timeout: 60_000 }, async () => {
  const elsewhere = 'http://127.0.0.1:9';
  await page.goto(`${EARSHOT_URL}/?api=${encodeURIComponent(elsewhere)}&token=taken-from-a-link`);
  await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state !== 'checking');
  assert.equal(await page.inputValue('#gateway-url'), '', 'the page speaks to its own gateway');
  assert.equal(await page.inputValue('#gateway-token'), '', 'a token meant for another gateway is not used');
  assert.equal(await page.getAttribute('#gateway-status', 'data-state'), 'ok');
  assert.ok(await page.isVisible('#link-note'));
  assert.match(await page.textContent('#link-note'), /another gateway \(http:\/\/127\.0\.0\.1:9\)/);
  assert.equal(await page.evaluate(() => location.search), `?api=${encodeURIComponent(elsewhere)}`, 'the token left the address bar');
  // The page's own origin, named in a link, is used.
  await page.goto(`${EARSHOT_URL}/?api=${encodeURIComponent(EARSHOT_URL)}`);
  await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state !== 'checking');
  assert.equal(await page.inputValue('#gateway-url'), EARSHOT_URL);
  assert.equal(await page.isVisible('#link-note'), false);
  await page.goto(`${EARSHOT_URL}/`);
});

/** The gateway's log from byte `from` on, without its colours, as lines. */
function gatewayLog(from) {
  // eslint-disable-next-line no-control-regex
  return readFileSync(process.env.EARSHOT_LOG_FILE).subarray(from).toString('utf8').replace(/\x1b\[[0-9;]*m/g, '').split('\n');
}

/** The first of the gateway's log lines from byte `from` on that `matches`, within `withinMs`; `null` if none. */
async function gatewaySays(from, matches, withinMs) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const line = gatewayLog(from).find(matches);
    if (line) return line;
    if (Date.now() > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('a page that goes lets go of its answer: the gateway is told to stop, not left to notice', { skip: skip || !process.env.EARSHOT_LOG_FILE, timeout: 90_000 }, async () => {
  for (const leave of ['navigate', 'hide']) {
    await page.goto(`${EARSHOT_URL}/`);
    await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state !== 'checking');
    await speakOnPage({ input: 'prompt', value: 'long' });
    await page.waitForFunction(() => window.earshotLast.playedOrder.length >= 1, null, { timeout: 60_000 });
    const id = await page.evaluate(() => window.earshotLast.conversationId);
    const from = statSync(process.env.EARSHOT_LOG_FILE).size;
    const left = Date.now();
    if (leave === 'navigate') {
      await page.goto('about:blank');
    } else {
      // As a tab switched away: the page is hidden while it speaks.
      await page.evaluate(() => {
        Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
      });
    }
    // Told, not left to notice: `earshot serve` also ends an answer whose request closed (`client_left`), but a
    // function URL does not, so the page must send the interrupt as it goes (a keepalive fetch, which outlives
    // it). Navigating away, the closed request and the interrupt race to the gateway; hidden, the page waits
    // for the interrupt's answer before it closes the request.
    const ended = await gatewaySays(from, (l) => l.includes('earshot_gateway::conversation') && l.includes(`conversation=${id}`), 1000);
    assert.ok(ended && Date.now() - left < 1500, `${leave}: the answer ended at the gateway within a second (${Date.now() - left} ms)`);
    const ending = /ending="?(\w+)/.exec(ended)?.[1] ?? ended;
    const asked = await gatewaySays(from, (l) => l.includes('interrupt asked') && l.includes(`conversation=${id}`), 2000);
    assert.ok(asked, `${leave}: the page sent the interrupt as it went`);
    if (leave === 'hide') assert.equal(ending, 'interrupted', 'hidden: the answer ended interrupted');
    else assert.ok(['interrupted', 'client_left'].includes(ending), `navigated away: the answer ended at the gateway within a second (${ending})`);
  }
  await page.goto(`${EARSHOT_URL}/`);
});

test('a second Speak keeps Stop usable: the first answer ending late does not disable it', { skip, timeout: 120_000 }, async () => {
  await speakOnPage({ input: 'prompt', value: 'long' });
  await page.waitForFunction(() => window.earshotLast.playedOrder.length >= 1, null, { timeout: 60_000 });
  const first = await page.evaluate(() => window.earshotLast.number);
  await speakOnPage({ input: 'text', value: 'A second answer, while the first one is still being cut off. It goes on for a while, sentence after sentence, so there is time to look.' });
  // The first conversation's end runs after the second has started; Stop must stay enabled for the second.
  await page.waitForFunction((n) => window.earshot.records.find((r) => r.number === n).outcome !== 'running', first, { timeout: 10_000 });
  await page.waitForFunction(() => window.earshotLast.playedOrder.length >= 1, null, { timeout: 60_000 });
  assert.equal(await page.isDisabled('#stop'), false, 'Stop is enabled while the second answer speaks');
  assert.match(await page.textContent('#status'), /^(Speaking \d+|Waiting for the agent)/);
  // Escape stops, wherever the focus is.
  await page.focus('#prompt');
  await page.keyboard.press('Escape');
  const record = await untilHeardToTheEnd();
  assert.equal(record.outcome, 'stopped');
  assert.match(await page.textContent('#status'), /^Stopped after \d+ sentences?$/);
});

test('the page says the local agent is scripted, and checks the input length as the user types', { skip }, async () => {
  await page.goto(`${EARSHOT_URL}/`);
  await page.waitForFunction(() => !document.getElementById('agent-note').hidden);
  assert.match(await page.textContent('#agent-note'), /scripted.*brief, long, pause/);
  await page.check('input[name=input][value=prompt]');
  await page.fill('#prompt', 'x'.repeat(4001));
  assert.equal(await page.isDisabled('#speak'), true, 'a prompt over 4,000 characters cannot be sent');
  assert.match(await page.textContent('#counter'), /4,001 of 4,000 characters: too long for a prompt/);
  await page.check('input[name=input][value=text]');
  assert.equal(await page.isDisabled('#speak'), false, 'text may be 20,000 characters');
  await page.fill('#prompt', 'brief');
  await page.check('input[name=input][value=prompt]');
  assert.equal(await page.textContent('#counter'), '');
});

test('while it speaks the page shows the agent\'s text as written and the voice\'s level', { skip, timeout: 90_000 }, async () => {
  await page.goto(`${EARSHOT_URL}/`);
  await page.click('#agent-text-box summary');
  await speakOnPage({ input: 'prompt', value: 'brief' });
  // The agent's text grows as its tokens arrive, before the answer is over.
  await page.waitForFunction(() => document.getElementById('agent-text').textContent.length > 0, null, { timeout: 30_000 });
  const early = await page.evaluate(() => ({ text: document.getElementById('agent-text').textContent, running: window.earshotLast.outcome === 'running' }));
  assert.ok(early.running, 'text shown while the agent was still writing');
  // The level meter moves while the voice plays.
  await page.waitForFunction(() => parseFloat(document.getElementById('level-bar').style.width) > 5, null, { timeout: 30_000, polling: 20 });
  const record = await untilHeardToTheEnd();
  const written = await page.textContent('#agent-text');
  assert.ok(written.length > early.text.length && written.startsWith(early.text), 'the text grew as it was written');
  for (const sentence of record.sentences) assert.ok(written.includes(sentence.text.split(' ')[0]), `${sentence.text} is in what the agent wrote`);
});

test('the French and Mandarin samples are answered and spoken in their language, each voice grouped by language', { skip, timeout: 120_000 }, async () => {
  await page.goto(`${EARSHOT_URL}/`);
  await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state !== 'checking');
  // The voice list groups the engine's voices by language, and names its voice for a chosen language.
  await page.selectOption('#language', 'fr');
  const defaultOption = await page.textContent('#voice option[value=""]');
  assert.match(defaultOption, /^Default \(.+\)$/, defaultOption);
  assert.ok((await page.$$('#voice optgroup')).length >= 1);
  await page.selectOption('#language', '');
  for (const [chip, language, words] of [['français', 'fr', 'commande'], ['中文', 'zh', '订单']]) {
    const before = await page.evaluate(() => window.earshot.records.length);
    await page.click(`.chip:text-is("${chip}")`);
    await page.waitForFunction((n) => window.earshot.records.length === n + 1, before);
    const record = await untilHeardToTheEnd(90_000);
    assert.equal(record.outcome, 'done', JSON.stringify(record.error));
    assert.equal(record.language, language, `the ${chip} sample is spoken in ${language}`);
    assert.equal(record.languageSource, 'detected');
    assert.ok(record.sentences.some((s) => s.text.includes(words)), JSON.stringify(record.sentences));
    assert.match(await page.textContent('#session-info'), new RegExp(`· ${language} \\(detected\\)`));
  }
});

test('the last request, copied as curl, runs in a shell and speaks the same answer', { skip, timeout: 90_000 }, async () => {
  await speakOnPage({ input: 'text', value: "It's a fine day. Isn't it?" });
  await untilHeardToTheEnd();
  assert.equal(await page.isVisible('#request summary'), true);
  const command = await page.textContent('#curl');
  assert.doesNotMatch(command, /Bearer [A-Za-z0-9]/, 'no token written out');
  // The real curl, through a real shell: the quoting must survive the apostrophes in the text.
  const { execFileSync } = await import('node:child_process');
  const out = execFileSync('bash', ['-c', command], { encoding: 'utf8', timeout: 60_000 });
  assert.match(out, /^event: session$/m);
  assert.match(out, /"text":"It's a fine day\."/);
  assert.match(out, /^event: done$/m);
});

test('Compare releases speaks the input both ways and says how much sooner incremental was heard', { skip, timeout: 180_000 }, async () => {
  await page.check('input[name=input][value=prompt]');
  await page.fill('#prompt', 'brief');
  const before = await page.evaluate(() => window.earshot.records.length);
  await page.click('#compare');
  await page.waitForFunction(() => /^First heard after/.test(document.getElementById('comparison').textContent), null, { timeout: 150_000 });
  const runs = await page.evaluate((n) => window.earshot.records.slice(n).map((r) => ({ release: r.release, outcome: r.outcome, messages: r.input.messages })), before);
  assert.deepEqual(runs, [
    { release: 'incremental', outcome: 'done', messages: 0 },
    { release: 'buffered', outcome: 'done', messages: 0 },
  ]);
  const line = await page.textContent('#comparison');
  const [, incremental, buffered] = line.match(/after ([\d.]+) s incremental, ([\d.]+) s buffered/).map(Number);
  assert.ok(incremental < buffered, line);
});

test('axe-core finds nothing serious on the page, idle and after an answer', { skip, timeout: 90_000 }, async () => {
  const axeSource = readFileSync(new URL('./node_modules/axe-core/axe.min.js', import.meta.url), 'utf8');
  const check = async (when) => {
    // Evaluated through the DevTools protocol: the page's Content-Security-Policy refuses inline scripts,
    // which is what addScriptTag would insert.
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => (await window.axe.run(document)).violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'));
    assert.deepEqual(violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), [], when);
  };
  await page.goto(`${EARSHOT_URL}/`);
  await page.waitForFunction(() => document.getElementById('gateway-status').dataset.state !== 'checking');
  await check('idle');
  await speakOnPage({ input: 'text', value: 'Hello there. This page should read well to everyone.' });
  await untilHeardToTheEnd();
  await check('after an answer');
  // Silences are counted where the listener hears them: between sentences, and inside one.
  await page.waitForFunction(() => document.getElementById('fig-stalls').textContent !== '–');
  assert.match(await page.textContent('#fig-stalls'), /^(none|\d+ in \d+ sentences? · [\d.]+ s silent)$/);
  // One live region: the status line. The captions would make a screen reader talk over the voice.
  assert.deepEqual(await page.$$eval('[aria-live]:not([aria-live="off"])', (els) => els.map((e) => e.id)), ['status']);
});

test('the page raised no script errors', { skip }, () => {
  assert.deepStrictEqual(pageErrors, []);
});
