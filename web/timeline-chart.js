// The timeline chart of the last conversations, as inline SVG.
//
// It exists so the release modes can be compared by eye: one horizontal bar per conversation, all
// on the same time axis from the moment the request was sent, split where the client's marks fall
// (first event, first audio bytes, first decoded buffer, audible start, end of the audio), with a
// tick where each sentence starts and a red one where it starts after a gap. It reads the records
// earshot.js keeps and nothing else.

const SVG = 'http://www.w3.org/2000/svg';
const LABEL_WIDTH = 170;
const FIGURE_WIDTH = 78;
/** Below this width the labels take less room, so that the bars keep most of it. */
const NARROW = 560;
const ROW_HEIGHT = 38;
const BAR_HEIGHT = 13;
const AXIS_HEIGHT = 24;
const STEPS_MS = [100, 200, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000];

const escapeXml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
const axisLabel = (ms, stepMs) => (ms === 0 ? '0' : `${(ms / 1000).toFixed(stepMs < 1000 ? 1 : 0)} s`);
const capitalised = (text) => (text ? text[0].toUpperCase() + text.slice(1) : '');

/** Where a conversation's bar ends, in milliseconds after its request. */
function barEnd(record, now) {
  const { marks } = record;
  const audioEnd = marks.stopped ?? marks.audibleEnd; // a stop cuts the scheduled audio short
  const times = [marks.responseHeaders, marks.firstEvent, marks.done, marks.failed, audioEnd];
  if (record.outcome === 'running') times.push(now);
  return Math.max(0, ...times.filter((t) => t !== null).map((t) => t - marks.requestSent));
}

function niceStep(spanMs, width) {
  const maxTicks = Math.max(2, Math.floor(width / 70));
  return STEPS_MS.find((step) => spanMs / step <= maxTicks) ?? STEPS_MS.at(-1);
}

/**
 * Draws `records` (oldest first; the last `rows` are shown, newest on top) into `container`.
 * `now` is performance.now(), to draw a running conversation up to the present.
 */
export function renderTimeline(container, records, { now = performance.now(), rows = 8 } = {}) {
  const shown = records.filter((r) => r.marks.requestSent !== null).slice(-rows).reverse();
  if (shown.length === 0) {
    container.innerHTML = '<p class="empty">No conversation yet. Press Speak.</p>';
    return;
  }
  const width = Math.max(320, container.clientWidth || 800);
  const narrow = width < NARROW;
  const plotLeft = narrow ? LABEL_WIDTH * 0.6 : LABEL_WIDTH;
  const plotWidth = width - plotLeft - (narrow ? FIGURE_WIDTH * 0.75 : FIGURE_WIDTH);
  const spanMs = Math.max(1000, ...shown.map((r) => barEnd(r, now))) * 1.04;
  const x = (ms) => plotLeft + (Math.max(0, ms) / spanMs) * plotWidth;
  const height = AXIS_HEIGHT + shown.length * ROW_HEIGHT + 4;

  const parts = [];
  const step = niceStep(spanMs, plotWidth);
  for (let t = 0; t <= spanMs; t += step) {
    parts.push(`<line class="grid" x1="${x(t)}" x2="${x(t)}" y1="${AXIS_HEIGHT - 6}" y2="${height}"/>`);
    parts.push(`<text class="axis" x="${x(t)}" y="${AXIS_HEIGHT - 10}" text-anchor="middle">${axisLabel(t, step)}</text>`);
  }
  parts.push(`<text class="axis" x="${width - 4}" y="${AXIS_HEIGHT - 10}" text-anchor="end">${narrow ? 'audible' : 'audible start'}</text>`);
  shown.forEach((record, row) => parts.push(drawRow(record, AXIS_HEIGHT + row * ROW_HEIGHT, x, now, width, narrow)));

  container.innerHTML = `<svg xmlns="${SVG}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="Timeline of the last ${shown.length} conversations">${parts.join('')}</svg>`;
}

function drawRow(record, top, x, now, width, narrow) {
  const { marks } = record;
  const t = (mark) => (mark === null ? null : mark - marks.requestSent);
  const barTop = top + (ROW_HEIGHT - BAR_HEIGHT) / 2;
  const end = barEnd(record, now);
  const out = [];
  const segment = (from, to, fill, title, opacity = 1) => {
    if (from === null || to === null || to <= from) return;
    out.push(
      `<rect x="${x(from)}" y="${barTop}" width="${Math.max(1, x(to) - x(from))}" height="${BAR_HEIGHT}" fill="var(${fill})" opacity="${opacity}"><title>${escapeXml(title)}</title></rect>`,
    );
  };

  const firstEvent = t(marks.firstEvent);
  const firstAudio = t(marks.firstAudioBytes);
  const audible = t(marks.audibleStart);
  const stopped = t(marks.stopped);
  segment(0, firstEvent ?? end, '--waiting', `Request sent → first event: ${seconds(firstEvent ?? end)}`);
  segment(firstEvent, firstAudio ?? (audible === null ? end : null), '--synth', `First event → first audio bytes: ${firstAudio === null ? '…' : seconds(firstAudio - firstEvent)}`);
  if (firstAudio !== null && audible !== null) {
    const decoded = t(marks.firstDecoded);
    segment(firstAudio, audible, '--decode', `First audio bytes → decoded (${seconds(decoded - firstAudio)}) → audible start (output latency ${Math.round(record.outputLatencyMs ?? 0)} ms)`);
  }
  // One span per sentence, so that silence between sentences shows as a hole in the bar.
  const heardUntil = now - marks.requestSent;
  for (const sentence of record.sentences) {
    const start = t(sentence.scheduledStart);
    if (start === null || (stopped !== null && start >= stopped)) continue;
    const end = stopped === null ? t(sentence.scheduledEnd) : Math.min(stopped, t(sentence.scheduledEnd));
    const played = Math.min(end, heardUntil);
    segment(start, played, '--playing', `Sentence ${sentence.index + 1} playing: ${seconds(start)} → ${seconds(end)}`);
    segment(Math.max(start, played), end, '--playing', `Sentence ${sentence.index + 1}: scheduled, not yet heard`, 0.35);
    // A stall inside the sentence is a hole in its bar, marked as an underrun: the listener heard it stop.
    for (const stall of sentence.stalls ?? []) {
      const from = t(stall.start);
      if (from === null || (stopped !== null && from >= stopped)) continue;
      const title = `Sentence ${sentence.index + 1} stalled for ${Math.round(stall.ms)} ms mid-sentence`;
      out.push(`<rect class="stall" x="${x(from)}" y="${barTop - 4}" width="${Math.max(2, x(from + stall.ms) - x(from))}" height="${BAR_HEIGHT + 8}" fill="var(--underrun)" opacity="0.85"><title>${escapeXml(title)}</title></rect>`);
    }
  }
  for (const sentence of record.sentences) {
    const start = t(sentence.scheduledStart);
    if (start === null || (stopped !== null && start > stopped)) continue;
    const gap = sentence.gapBeforeMs ? `, after a gap of ${Math.round(sentence.gapBeforeMs)} ms` : '';
    const title = `Sentence ${sentence.index + 1} at ${seconds(start)}${gap}: ${sentence.text}`;
    out.push(sentence.underrun
      ? `<rect x="${x(start) - 1.5}" y="${barTop - 4}" width="3" height="${BAR_HEIGHT + 8}" fill="var(--underrun)"><title>${escapeXml(title)}</title></rect>`
      : `<rect x="${x(start) - 1}" y="${barTop}" width="2" height="${BAR_HEIGHT}" fill="#fff"><title>${escapeXml(title)}</title></rect>`);
  }
  const done = t(marks.done);
  if (done !== null) {
    const cx = x(done);
    const cy = barTop + BAR_HEIGHT + 5;
    out.push(`<path d="M${cx} ${cy - 4}l4 4-4 4-4-4z" fill="var(--ink-soft)"><title>${escapeXml(`Stream done: ${seconds(done)}`)}</title></path>`);
  }

  const label = narrow ? `#${record.number} ${capitalised(record.release).slice(0, 4)}.` : `#${record.number} · ${capitalised(record.release)}`;
  const sub = [record.format === 'binary' ? 'Binary' : 'SSE', record.backend ? capitalised(record.backend) : null].filter(Boolean).join(' · ');
  out.push(`<text class="row-label" x="0" y="${top + ROW_HEIGHT / 2 - 3}">${escapeXml(label)}</text>`);
  out.push(`<text class="row-sub" x="0" y="${top + ROW_HEIGHT / 2 + 12}">${escapeXml(sub)}</text>`);

  let figure;
  if (record.outcome === 'error') figure = 'error';
  else if (record.outcome === 'stopped') figure = audible !== null ? `stopped · ${seconds(audible)}` : 'stopped';
  else if (audible !== null) figure = seconds(audible);
  else figure = '…';
  const figureFill = record.outcome === 'error' ? ' fill="var(--danger)"' : '';
  out.push(`<text class="row-figure" x="${width - 4}" y="${top + ROW_HEIGHT / 2 + 4}" text-anchor="end"${figureFill}><title>Audible start after the request</title>${escapeXml(figure)}</text>`);
  return `<g class="row" data-number="${record.number}">${out.join('')}</g>`;
}
