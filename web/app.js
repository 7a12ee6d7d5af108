// The demo page: wires the form, the captions and the timeline chart to the client module.
//
// It holds no protocol or audio logic of its own (that is earshot.js), only what a person sees:
// the choices sent with each request, what is being heard, how long it took, and errors in words.
// The gateway is this page's origin unless the Gateway field names another one (or `?api=<url>`, where the
// page may trust it: see `linkedGateway`).
//
// For automated checks it exposes `window.earshot` (the player, every conversation's record) and
// `window.earshotLast` (the latest record).

import { speak, interrupt, unlock, player, curlCommand, heardText } from './earshot.js';
import { Captions } from './captions.js';
import { renderTimeline } from './timeline-chart.js';

// The gateway (this page's origin unless the Gateway field names another, a deployed function URL for
// example) and its token in token mode (the Token field; an app's backend mints it).
const $ = (id) => document.getElementById(id);
let { api, token } = linkedGateway();

/**
 * The gateway and token a link names (`?api=`, `?token=`), where the page may use them: a gateway of the
 * page's own origin, or one the page's server declared (`<meta name="earshot-gateways" content="URL …">`).
 * Any other would let a crafted link send a user's prompts, and the token, to a server of its choosing: it
 * is said, not used. The token leaves the address bar once read (history and a Referer would keep it).
 */
function linkedGateway() {
  const query = new URLSearchParams(location.search);
  const originOf = (url) => {
    try {
      return new URL(url, location.href).origin;
    } catch {
      return null;
    }
  };
  const declared = (document.querySelector('meta[name="earshot-gateways"]')?.content ?? '').split(/\s+/).filter(Boolean).map(originOf);
  const linked = query.get('api') ?? '';
  const linkedToken = query.get('token') ?? '';
  const trusted = linked === '' || [location.origin, ...declared].includes(originOf(linked));
  if (query.has('token')) {
    query.delete('token');
    const rest = query.toString();
    history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`);
  }
  if (!trusted) {
    const note = $('link-note');
    note.hidden = false;
    note.closest('details').open = true;
    note.textContent = `The link named another gateway (${originOf(linked) ?? linked}); this page speaks to its own. Type that URL above to use it.`;
    return { api: '', token: '' };
  }
  return { api: linked, token: linkedToken };
}
const form = $('speak-form');
const promptBox = $('prompt');
const stopButton = $('stop');
const statusLine = $('status');
const voiceSelect = $('voice');
const languageSelect = $('language');
const captions = new Captions($('captions'));
const timeline = $('timeline');

/** Every conversation of this page, oldest first. */
const records = [];

// The spoken conversation so far (the gateway's `messages`), and its id, so an agent that keeps
// sessions of its own keeps one for the whole conversation. The gateway takes at most 40 earlier turns.
const MAX_TURNS = 40;
let turns = [];
let conversationId = newConversationId();

/** What the session's audio is, in a few words: `24 kHz` for PCM, `μ-law 8 kHz` for telephony's G.711. */
function audioName(audio) {
  const kind = { mulaw: 'μ-law ', alaw: 'A-law ' }[audio.encoding] ?? '';
  return `${kind}${audio.sample_rate / 1000} kHz`;
}

function newConversationId() {
  return `page:${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}
let voicesByBackend = new Map();
// Per backend: each language it speaks, with its voice for it (GET /v1/voices `languages`).
let languagesByBackend = new Map();
// The code of the error on show, if any.
let shownError = null;

window.earshot = { player, records, interrupt, turns: () => turns.slice() };
window.earshotLast = null;

const ERROR_TITLES = {
  token_missing: 'This gateway needs a token',
  token_malformed: 'The token cannot be read',
  token_expired: 'The token has expired',
  token_bad_signature: 'The token was not signed by this gateway',
  token_wrong_audience: 'The token is for another gateway',
  token_out_of_scope: 'The token does not allow this',
  input_too_long: 'That is too long to speak',
  body_too_large: 'That is too long to send',
  empty_input: 'There is nothing to speak',
  missing_input: 'There is nothing to speak',
  unknown_backend: 'That voice engine is not available here',
  unknown_voice: 'That voice is not available',
  language_unsupported: 'That voice engine cannot speak this language',
  voice_language_mismatch: 'That voice cannot speak this language',
  invalid_language: 'That language is not one earshot knows',
  backend_unreachable: 'The voice engine could not be reached',
  network_error: 'The gateway could not be reached',
  stream_ended: 'The answer stopped before its end',
  truncated: 'The answer stopped before its end',
  malformed_message: 'The answer stream was damaged',
  out_of_order: 'The answer stream was out of order',
  unsupported_protocol: 'This page is too old for the gateway',
  unsupported_audio: 'This browser cannot play that audio format',
  unexpected_content_type: 'The gateway did not answer with speech',
};

const choice = (name) => form.elements[name].value;
const seconds = (ms) => (ms === null || ms === undefined ? '–' : `${(ms / 1000).toFixed(2)} s`);

// ------------------------------------------------------------------------------------------
// Speaking

/**
 * Speaks what the form holds (with `overrides`, for example another release mode); resolves with the
 * conversation's record once its last sound has been heard, or it failed or was stopped (null when there was
 * nothing to speak).
 */
function start(overrides = {}) {
  hideError();
  const input = choice('input');
  const value = promptBox.value.trim();
  if (!value) {
    showError({ code: 'empty_input', message: input === 'prompt' ? 'Type a prompt or pick a sample.' : 'Type the text to read aloud.' });
    return Promise.resolve(null);
  }
  captions.message('Waiting for the first sentence…');
  agentText.textContent = '';
  let released = 0;
  let heard = 0;
  let played;
  const heardAll = new Promise((resolve) => {
    played = resolve;
  });
  const keep = input === 'prompt' && $('keep-conversation').checked && !overrides.comparing;
  const request = {
    baseUrl: api,
    [input]: value,
    // The wire's turns are role and content alone (the page's own mark of an interrupted turn stays here).
    ...(keep ? { messages: turns.map(({ role, content }) => ({ role, content })) } : {}),
    // Always an id of the page's own, so that a token bound to `page:*` conversations may speak and stop it.
    conversationId: keep ? conversationId : newConversationId(),
    token: token || undefined,
    backend: choice('backend'),
    voice: voiceSelect.value || undefined,
    language: languageSelect.value || undefined,
    release: overrides.release ?? choice('release'),
    format: choice('format'),
    outputFormat: $('output-format').value || undefined,
  };
  showRequest(request);
  const conversation = speak({
    ...request,
    onText: (text) => {
      agentText.textContent += text;
      agentText.scrollTop = agentText.scrollHeight;
    },
    onSession: (session) => {
      const language = session.language ? ` · ${session.language}${session.language_source === 'detected' ? ' (detected)' : ''}` : '';
      $('session-info').textContent = `${session.backend} · ${session.voice}${language} · ${audioName(session.audio)}${session.arm ? ` · arm ${session.arm}` : ''}`;
      if (isLatest()) setStatus(session.release === 'buffered' ? 'The agent is writing; speech starts when it has finished…' : 'Waiting for the agent…');
    },
    onSentence: (sentence) => {
      if (released++ === 0) captions.reset();
      captions.add(sentence);
    },
    onWords: (sentence) => captions.words(sentence),
    onSentenceEnd: (sentence) => {
      if (sentence.skipped) captions.skipped(sentence);
    },
    onSentencePlaying: (sentence) => {
      heard++;
      captions.playing(sentence.index, sentence);
      if (isLatest()) setStatus(`Speaking ${heard}`);
    },
    onPlaybackEnd: (record) => {
      played(record);
      captions.finished();
      if (!isLatest()) return;
      setStatus(`Done · ${heard} sentence${heard === 1 ? '' : 's'} spoken`);
      stopButton.disabled = true;
    },
    onError: (error) => showError(error),
    onUpdate: () => scheduleRender(),
  });
  const mine = conversation.record;
  // Only the latest conversation may change the controls: an earlier one that ends late (its completion
  // runs after a second Speak) must not disable Stop for the one now speaking.
  const isLatest = () => window.earshotLast === mine;
  records.push(mine);
  window.earshotLast = mine;
  stopButton.disabled = false;
  setStatus('Sending…');
  // Between sentences (a tool call, a slow agent) nothing plays: say so rather than "speaking".
  const watcher = setInterval(() => {
    if (!isLatest() || mine.outcome !== 'running') return clearInterval(watcher);
    if (player.playing === 0 && mine.backend !== null) setStatus(heard === 0 ? 'Waiting for the agent…' : `Waiting for the agent · ${heard} spoken`);
  }, 250);
  warnIfSoundBlocked();
  scheduleRender();
  conversation.finished.then((record) => {
    clearInterval(watcher);
    if (record.outcome !== 'done' || record.sentences.length === 0) played(record);
    const latest = isLatest();
    if (record.outcome === 'error' && latest) {
      captions.finished();
      if (released === 0) captions.message('No speech.');
      setStatus('');
      stopButton.disabled = true;
    } else if (record.outcome === 'stopped' && latest) {
      captions.stopped();
      setStatus(`Stopped after ${heard} sentence${heard === 1 ? '' : 's'}`);
      stopButton.disabled = true;
    }
    if (keep) remember(value, record);
    if (latest) showFigures(record);
    scheduleRender();
  });
  return heardAll;
}

// ------------------------------------------------------------------------------------------
// What the agent writes, the request as curl, and incremental against buffered on the same input

const agentText = $('agent-text');

function showRequest(request) {
  // curl needs an absolute URL: this page's origin when the gateway is.
  $('curl').textContent = curlCommand({ ...request, baseUrl: request.baseUrl || location.origin });
  $('request').hidden = false;
}

$('copy-curl').addEventListener('click', async () => {
  const button = $('copy-curl');
  try {
    await navigator.clipboard.writeText($('curl').textContent);
    button.textContent = 'Copied';
  } catch {
    // No clipboard (an insecure origin, a refused permission): select the text for a manual copy.
    getSelection().selectAllChildren($('curl'));
    button.textContent = 'Selected: copy it with the keyboard';
  }
  setTimeout(() => {
    button.textContent = 'Copy';
  }, 2000);
});

async function compare() {
  const line = $('comparison');
  line.hidden = false;
  line.textContent = 'Comparing: incremental first, then buffered…';
  const heardAt = {};
  for (const release of ['incremental', 'buffered']) {
    const record = await start({ release, comparing: true });
    if (!record || record.outcome === 'error' || record.outcome === 'stopped') {
      line.textContent = 'The comparison stopped before both were heard.';
      return;
    }
    const { marks } = record;
    heardAt[release] = marks.audibleStart === null ? null : marks.audibleStart - marks.requestSent;
  }
  const { incremental, buffered } = heardAt;
  line.textContent =
    incremental === null || buffered === null
      ? 'One of the two was never heard.'
      : `First heard after ${seconds(incremental)} incremental, ${seconds(buffered)} buffered: ${seconds(buffered - incremental)} sooner (${(buffered / incremental).toFixed(1)}×).`;
}

$('compare').addEventListener('click', compare);

/**
 * Adds a question and its answer to the conversation: the whole answer when it finished; after Stop, only
 * what was heard (the sentences whose audio started before Stop, the last cut where playback reached, with
 * "…" to tell the agent it was cut), marked as interrupted. A question that got no answer is left out, so
 * that the turns keep alternating.
 */
function remember(question, record) {
  const heard = heardText(record);
  const answer = heard.text.trim();
  if (!answer) return;
  const content = heard.cut !== null && heard.cut.chars < (record.sentences.find((s) => s.index === heard.cut.index)?.text.length ?? 0) ? `${answer}…` : answer;
  turns.push({ role: 'user', content: question }, { role: 'assistant', content, ...(heard.interrupted ? { interrupted: true } : {}) });
  if (turns.length > MAX_TURNS) turns = turns.slice(turns.length - MAX_TURNS);
  renderTurns();
}

function renderTurns() {
  const list = $('turns');
  list.replaceChildren(
    ...turns.map((t) => {
      const li = document.createElement('li');
      li.dataset.role = t.role;
      li.textContent = t.content;
      if (t.interrupted) {
        li.dataset.interrupted = 'true';
        li.title = 'Interrupted: only what was heard is kept';
      }
      return li;
    }),
  );
  list.scrollTop = list.scrollHeight;
  $('new-conversation').hidden = turns.length === 0;
}

$('new-conversation').addEventListener('click', () => {
  turns = [];
  conversationId = newConversationId();
  renderTurns();
});

function stop() {
  if (stopButton.disabled) return;
  interrupt();
  captions.stopped();
  const heard = window.earshotLast?.playedOrder.length ?? 0;
  setStatus(`Stopped after ${heard} sentence${heard === 1 ? '' : 's'}`);
  stopButton.disabled = true;
  // Focus stays on the form, not the page's body, so the keyboard user can speak again at once.
  $('speak').focus();
  scheduleRender();
}

// Escape stops, wherever the focus is.
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape') stop();
});

function setStatus(text) {
  statusLine.textContent = text;
}

function showFigures(record) {
  const { marks } = record;
  $('fig-audible').textContent = marks.audibleStart === null ? '–' : seconds(marks.audibleStart - marks.requestSent);
  $('fig-server').textContent = seconds(record.server?.first_audio_sent_ms);
  const gaps = record.sentences.filter((s) => s.gapBeforeMs !== null);
  const underruns = gaps.filter((s) => s.underrun);
  const silenceMs = underruns.reduce((n, s) => n + s.gapBeforeMs, 0);
  $('fig-gaps').textContent = gaps.length === 0 ? '–' : underruns.length === 0 ? 'none' : `${underruns.length} · ${seconds(silenceMs)} silent`;
  // Silences inside a sentence, counted apart: the listener hears the voice stop mid-sentence.
  const stalled = record.sentences.filter((s) => (s.stalls ?? []).length > 0);
  const stallCount = stalled.reduce((n, s) => n + s.stalls.length, 0);
  const stallMs = stalled.reduce((n, s) => n + s.stallMs, 0);
  $('fig-stalls').textContent = record.sentences.every((s) => s.scheduledStart === null) ? '–' : stallCount === 0 ? 'none' : `${stallCount} in ${stalled.length} sentence${stalled.length === 1 ? '' : 's'} · ${seconds(stallMs)} silent`;
  // What was heard: after a Stop, only the sentences that started playing, and of the one cut short only
  // what sounded before the stop.
  const heard = record.sentences.filter((s) => s.scheduledStart !== null && (marks.stopped === null || marks.stopped === undefined || s.scheduledStart < marks.stopped));
  const audioMs = heard.reduce((n, s) => n + (marks.stopped ? Math.max(0, Math.min(s.scheduledEnd ?? marks.stopped, marks.stopped) - s.scheduledStart) : (s.audioMs ?? 0)), 0);
  const word = record.outcome === 'stopped' ? ' heard' : '';
  $('fig-audio').textContent = audioMs ? `${seconds(audioMs)}${word} in ${heard.length} sentence${heard.length === 1 ? '' : 's'}` : '–';
}

// ------------------------------------------------------------------------------------------
// Errors and the autoplay policy

function showError(error) {
  shownError = error.code;
  $('error-title').textContent = ERROR_TITLES[error.code] ?? 'Something went wrong';
  const parts = [error.message];
  if (error.retryable) parts.push('Trying again may work.');
  $('error-message').textContent = `${parts.join(' ')} (${error.code}${error.status ? `, HTTP ${error.status}` : ''})`;
  $('error').hidden = false;
}

function hideError() {
  shownError = null;
  $('error').hidden = true;
}

function warnIfSoundBlocked() {
  setTimeout(() => {
    $('sound-notice').hidden = !player.locked;
  }, 300);
}

$('enable-sound').addEventListener('click', () => {
  unlock().then(() => {
    $('sound-notice').hidden = !player.locked;
  });
});

// ------------------------------------------------------------------------------------------
// The chart, redrawn when something changes, and a few times a second while audio plays (enough
// for the eye; every frame would take processor time from the voice on a small machine)

const REDRAW_WHILE_PLAYING_MS = 125;
let renderPending = false;
function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    const now = performance.now();
    renderTimeline(timeline, records, { now });
    const last = records.at(-1);
    if (last) showFigures(last);
    // The voice's level, while something plays (decorative: the captions say what is heard).
    $('level-bar').style.width = `${Math.min(100, player.level() * 400).toFixed(0)}%`;
    const playing = records.some((r) => r.outcome === 'running' || (r.outcome !== 'stopped' && r.marks.audibleEnd > now));
    if (playing) setTimeout(scheduleRender, REDRAW_WHILE_PLAYING_MS);
  });
}
new ResizeObserver(() => scheduleRender()).observe(timeline);

// ------------------------------------------------------------------------------------------
// The gateway: health and voices

async function checkGateway() {
  const status = $('gateway-status');
  try {
    const [health, voices] = await Promise.all([fetch(`${api}/healthz`), fetch(`${api}/v1/voices`)]);
    const info = voices.ok ? await voices.json() : {};
    const offered = info.backends ?? [];
    voicesByBackend = new Map(offered.map((b) => [b.name, b.voices]));
    languagesByBackend = new Map(offered.map((b) => [b.name, b.languages ?? {}]));
    for (const input of form.elements.backend) {
      if (input.value === 'auto') continue;
      const available = voicesByBackend.has(input.value);
      input.disabled = !available;
      input.parentElement.title = available ? '' : 'Not offered by this gateway';
    }
    if (form.elements.backend.value === '' || form.querySelector('input[name=backend]:checked')?.disabled) {
      form.querySelector('input[name=backend][value=auto]').checked = true;
    }
    fillVoices();
    describeAgent(info);
    status.dataset.state = health.ok ? 'ok' : 'down';
    $('gateway-text').textContent = health.ok ? `Gateway ready · ${[...voicesByBackend.keys()].join(', ')}` : 'Gateway unhealthy';
  } catch {
    status.dataset.state = 'down';
    $('gateway-text').textContent = 'Gateway unreachable';
  }
}

// The voices of the chosen engine, grouped by their language; `Default` names the engine's voice for the
// chosen language, and an engine that cannot speak it says so.
function fillVoices() {
  const backend = choice('backend');
  const voices = voicesByBackend.get(backend) ?? [];
  const languages = languagesByBackend.get(backend) ?? {};
  const wanted = languageSelect.value;
  const previous = voiceSelect.value;
  const byDefault = wanted ? languages[wanted] : undefined;
  const unspoken = wanted && backend !== 'auto' && voicesByBackend.has(backend) && !byDefault;
  voiceSelect.replaceChildren(new Option(unspoken ? `Default (${backend} cannot speak ${wanted})` : byDefault ? `Default (${byDefault})` : 'Default', ''));
  const groups = new Map();
  for (const voice of voices) {
    const language = voice.language || '?';
    if (!groups.has(language)) groups.set(language, []);
    groups.get(language).push(voice);
  }
  for (const [language, members] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const group = document.createElement('optgroup');
    group.label = language;
    for (const voice of members) group.append(new Option(`${voice.id} · ${voice.description ?? language}`, voice.id));
    voiceSelect.append(group);
  }
  voiceSelect.value = voices.some((v) => v.id === previous) ? previous : '';
  voiceSelect.disabled = voices.length === 0;
}

// ------------------------------------------------------------------------------------------

form.addEventListener('submit', (event) => {
  event.preventDefault();
  start();
});
stopButton.addEventListener('click', stop);
for (const chip of document.querySelectorAll('[data-sample]')) {
  chip.addEventListener('click', () => {
    promptBox.value = chip.dataset.sample;
    form.querySelector('input[name=input][value=prompt]').checked = true;
    start();
  });
}
for (const input of form.elements.backend) input.addEventListener('change', fillVoices);
languageSelect.addEventListener('change', fillVoices);
promptBox.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.metaKey || event.ctrlKey)) {
    event.preventDefault();
    start();
  }
});

renderTimeline(timeline, records);
checkGateway();

// ------------------------------------------------------------------------------------------
// The gateway and its token

$('gateway-url').value = api;
$('gateway-token').value = token;
$('gateway-form').addEventListener('submit', (event) => event.preventDefault());
$('gateway-form').addEventListener('change', () => {
  const url = $('gateway-url').value.trim();
  const changed = url !== api;
  api = url;
  token = $('gateway-token').value.trim();
  if (changed) checkGateway();
});

// ------------------------------------------------------------------------------------------
// What the page talks to, and the input limits as the user types

let limits = { max_prompt_chars: 4000, max_text_chars: 20000 };

function describeAgent(info) {
  if (info.limits) limits = info.limits;
  const note = $('agent-note');
  note.hidden = info.agent !== 'scripted';
  note.textContent = 'The agent here is scripted: whatever you ask, it answers with one of its samples (brief, long, pause; in French or Mandarin to a prompt in either). Start earshot serve with --agent to talk to a real one.';
  updateCounter();
}

function updateCounter() {
  const input = choice('input');
  const max = input === 'prompt' ? limits.max_prompt_chars : limits.max_text_chars;
  const length = [...promptBox.value].length;
  const over = length > max;
  const counter = $('counter');
  counter.dataset.over = String(over);
  counter.textContent = over
    ? `${length.toLocaleString('en')} of ${max.toLocaleString('en')} characters: too long for ${input === 'prompt' ? 'a prompt' : 'text to read aloud'}`
    : length > max * 0.8 ? `${length.toLocaleString('en')} of ${max.toLocaleString('en')} characters` : '';
  $('speak').disabled = over;
}

// An error about the input (nothing to speak, too long) no longer holds once the input changes: the
// counter says what is wrong with the new one.
const INPUT_ERRORS = new Set(['empty_input', 'missing_input', 'input_too_long', 'body_too_large']);
promptBox.addEventListener('input', () => {
  if (shownError !== null && INPUT_ERRORS.has(shownError)) hideError();
  updateCounter();
});
form.addEventListener('change', updateCounter);
