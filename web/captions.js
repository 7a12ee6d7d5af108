// Captions of the sentence being heard.
//
// It exists to keep the page's caption list in step with what the listener hears, which is not
// what the network delivers: a sentence is listed when it is released to speech, highlighted when
// its audio actually starts playing (earshot.js times that on the audio clock), and marked spoken
// when the next one starts or the answer ends. Within the sentence being heard, the word being heard
// is highlighted from the sentence's word timings (docs/protocol.md, "Words"), by the same clock: the
// time since the sentence's first sound became audible.

export class Captions {
  constructor(list) {
    this.list = list;
    this.items = new Map();
    // The sentence being heard, for the word highlight: { item, sentence }.
    this.current = null;
    this.frame = null;
  }

  reset() {
    this.stopWords();
    this.list.replaceChildren();
    this.items.clear();
  }

  /** A sentence's words arrived (or more of them): its caption becomes one span per word. */
  words(sentence) {
    const item = this.items.get(sentence.index);
    if (!item || sentence.words.length === 0) return;
    const text = sentence.text;
    const parts = [];
    let at = 0;
    sentence.words.forEach((word, i) => {
      const found = text.indexOf(word.text, at);
      if (found < 0) return;
      if (found > at) parts.push(document.createTextNode(text.slice(at, found)));
      const span = document.createElement('span');
      span.className = 'word';
      span.dataset.word = String(i);
      span.textContent = word.text;
      parts.push(span);
      at = found + word.text.length;
    });
    if (at < text.length) parts.push(document.createTextNode(text.slice(at)));
    item.replaceChildren(...parts);
    item.dataset.timing = sentence.timing ?? '';
  }

  /** Highlights, frame by frame, the word of the sentence being heard that the audio clock has reached. */
  followWords() {
    const step = () => {
      this.frame = null;
      const current = this.current;
      if (!current || current.sentence.scheduledStart == null) return;
      // The sentence's own clock: time since its first sound, less the silences inside it so far (a stall
      // holds the voice, and the words with it).
      const now = performance.now();
      const stalled = (current.sentence.stalls ?? []).filter((x) => x.start < now).reduce((n, x) => n + Math.min(x.ms, now - x.start), 0);
      const t = now - current.sentence.scheduledStart - stalled;
      const words = current.sentence.words;
      let lit = -1;
      for (let i = 0; i < words.length && words[i].start_ms <= t; i++) lit = i;
      for (const span of current.item.querySelectorAll('span.word')) {
        const i = Number(span.dataset.word);
        const cls = i === lit ? 'word now' : i < lit ? 'word heard' : 'word';
        if (span.className !== cls) span.className = cls;
        // When the page first lit it, on performance.now()'s clock (a test compares it with the word's time).
        if (i === lit && !span.dataset.litAt) span.dataset.litAt = String(now);
      }
      this.frame = requestAnimationFrame(step);
    };
    if (this.frame === null) this.frame = requestAnimationFrame(step);
  }

  stopWords() {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.current = null;
  }

  /** A sentence released to speech, not yet heard. */
  add(sentence) {
    const item = document.createElement('li');
    item.className = 'queued';
    item.dataset.index = String(sentence.index);
    item.textContent = sentence.text;
    this.items.set(sentence.index, item);
    this.list.append(item);
  }

  /** A sentence the voice passed over (`skipped`: why): shown as not spoken, with the reason. */
  skipped(sentence) {
    const item = this.items.get(sentence.index);
    if (!item) return;
    item.className = 'skipped';
    const note = document.createElement('span');
    note.className = 'skip-note';
    note.textContent = sentence.skipped === 'unsupported_script' ? ' (not spoken: the voice does not read this script)' : ` (not spoken: ${sentence.skipped})`;
    item.append(note);
  }

  /** The sentence now heard: highlighted; the ones before it are spoken. With `sentence` (its record), its
   * words are highlighted as they are heard. */
  playing(index, sentence = null) {
    for (const [i, item] of this.items) {
      if ((i < index || item.classList.contains('speaking')) && !item.classList.contains('skipped')) item.className = 'spoken';
    }
    const item = this.items.get(index);
    if (!item) return;
    item.className = 'speaking';
    item.dataset.playedAt = String(performance.now());
    this.reveal(item);
    if (sentence) {
      this.current = { item, sentence };
      this.followWords();
    }
  }

  /** Scrolls the list, and only the list, so that `item` is in view (scrollIntoView would scroll the
   * whole page on a phone at every sentence). */
  reveal(item) {
    const list = this.list;
    const top = item.offsetTop - list.offsetTop;
    if (top < list.scrollTop) list.scrollTop = top;
    else if (top + item.offsetHeight > list.scrollTop + list.clientHeight) list.scrollTop = top + item.offsetHeight - list.clientHeight;
  }

  /** Stopped: what was never heard is marked unspoken, and a line says where it stopped. */
  stopped() {
    this.finished();
    let marked = this.list.querySelector('.stop-mark') !== null;
    for (const item of this.items.values()) {
      if (item.dataset.playedAt) continue;
      item.className = 'unspoken';
      if (!marked) {
        const mark = document.createElement('li');
        mark.className = 'stop-mark';
        mark.textContent = 'Stopped here; the rest was not spoken.';
        item.before(mark);
        marked = true;
      }
    }
  }

  /** The answer ended or was stopped: nothing is being heard any more. */
  finished() {
    this.stopWords();
    for (const span of this.list.querySelectorAll('span.word.now')) span.className = 'word heard';
    for (const item of this.items.values()) {
      if (item.classList.contains('speaking')) item.className = 'spoken';
    }
  }

  /** Shows a line of its own (before the first sentence, or when there is none). */
  message(text) {
    this.reset();
    const item = document.createElement('li');
    item.className = 'placeholder';
    item.textContent = text;
    this.list.append(item);
  }
}
