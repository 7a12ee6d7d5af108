// Captions of the sentence being heard.
//
// It exists to keep the page's caption list in step with what the listener hears, which is not
// what the network delivers: a sentence is listed when it is released to speech, highlighted when
// its audio actually starts playing (earshot.js times that on the audio clock), and marked spoken
// when the next one starts or the answer ends.

export class Captions {
  constructor(list) {
    this.list = list;
    this.items = new Map();
  }

  reset() {
    this.list.replaceChildren();
    this.items.clear();
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

  /** The sentence now heard: highlighted; the ones before it are spoken. */
  playing(index) {
    for (const [i, item] of this.items) {
      if (i < index || item.classList.contains('speaking')) item.className = 'spoken';
    }
    const item = this.items.get(index);
    if (!item) return;
    item.className = 'speaking';
    item.dataset.playedAt = String(performance.now());
    this.reveal(item);
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
