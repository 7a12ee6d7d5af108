"""Word timings from the model itself: when each written word of a request is heard, exact to the model's frames.

Kokoro predicts a duration for every phoneme it reads (in frames of 600 samples, 25 ms at 24 kHz) and the audio
is exactly those frames, one after another. So the time of a phoneme is known once its piece is rendered, and a
word's time is the span of its phonemes. What is left is which phonemes belong to which *written* word: the
front end reads ``12,50 €`` as several spoken words, Mandarin as syllables grouped by jieba's words.

The request's phonemes are cut into *units* (a word between spaces; for Mandarin a syllable, ended by its tone
mark), its text into *written words* (a run of letters and digits with the apostrophes, hyphens and separators
inside it; a Han or kana character alone). When the two counts agree (nearly every English and French sentence,
every Mandarin sentence of Han characters) unit *i* is word *i*. When they do not, the two are aligned in order
by length (a dynamic program over groups: a written word read as up to four units, or up to three written words
read as one unit), and a unit read for several written words is shared by their lengths. Either way the words
are in order, never overlap, and each spans the written token it was read from.

A request is rendered piece by piece; :class:`WordTimer` is fed each piece as it is rendered (its phonemes, the
model's durations, where the silence trim cut it) and says which words end in it, with times from the
request's first sample: what the ``words`` message carries (PROTOCOL.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# Punctuation the phonemes keep (Kokoro's vocabulary); it is read as a pause, never as a word.
_PUNCTUATION = set(';:,.!?—…"()“”«»¡¿')
# Mandarin tone marks as misaki writes them, after a syllable's vowel: the syllable ends there, or after its final
# nasal (n, ŋ) where one follows and no vowel comes after it (``xə↓n``, ``tʰjɛ→ntʰjɛ→n``).
_TONES = set("→↗↓↘")
_CODAS = set("nŋ")
_VOWELS = set("aeiouyəɤɛɔʊɪæɑɚɨʉɯɵøœɐʌɒɜ")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f々〆]")
# A written word: letters or digits, with what may join them inside one word (don't, well-known, 3.14, 12,50).
_WORD = re.compile(r"[^\W_]+(?:['’\-.,:/][^\W_]+)*")
# The longest groups the alignment tries (a word with digits may be read as more units: see ``align``).
_MOST_UNITS_PER_WORD = 4
_MOST_WORDS_PER_UNIT = 3
# The largest alignment the program is run for (written words × units); beyond it words share units by weight.
_MOST_CELLS = 40_000


@dataclass(frozen=True)
class WrittenWord:
    text: str
    # Its length as the alignment weighs it (letters; a digit counts more, it is read as a word or more).
    weight: float


@dataclass(frozen=True)
class WordTime:
    text: str
    start_ms: float
    end_ms: float

    def to_json(self) -> dict[str, object]:
        return {"text": self.text, "start_ms": round(self.start_ms, 1), "end_ms": round(self.end_ms, 1)}


def written_words(text: str) -> list[WrittenWord]:
    """The words of ``text`` as a listener would point at them: Latin-script words whole, Han and kana
    characters one by one."""
    words: list[WrittenWord] = []
    for match in _WORD.finditer(text):
        token = match.group()
        if not _CJK.search(token):
            words.append(WrittenWord(token, _weight(token)))
            continue
        run = ""
        for ch in token:
            if _CJK.match(ch):
                if any(c.isalnum() for c in run):
                    words.append(WrittenWord(run, _weight(run)))
                run = ""
                words.append(WrittenWord(ch, 1.0))
            else:
                run += ch
        if any(c.isalnum() for c in run):
            words.append(WrittenWord(run, _weight(run)))
    return words


def _read_length(phonemes: str, syllables: bool) -> float:
    return float(sum(end - start for start, end in units(phonemes, syllables)))


def _weight(token: str) -> float:
    return sum(5.0 if ch.isdigit() else 1.0 for ch in token if ch.isalnum()) or 1.0


def units(phonemes: str, syllables: bool) -> list[tuple[int, int]]:
    """The spoken units of ``phonemes`` as ``(start, end)`` character positions: words between spaces with their
    punctuation left out, or (``syllables``, Mandarin) syllables, each ended by its tone mark and coda."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    i = 0
    while i < len(phonemes):
        ch = phonemes[i]
        if ch == " " or ch in _PUNCTUATION:
            if start is not None:
                spans.append((start, i))
                start = None
            i += 1
            continue
        if start is None:
            start = i
        i += 1
        if syllables and ch in _TONES:
            if i < len(phonemes) and phonemes[i] in _CODAS and (i + 1 == len(phonemes) or phonemes[i + 1] not in _VOWELS):
                i += 1
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(phonemes)))
    return spans


def align(words: list[WrittenWord], unit_lengths: list[int]) -> list[tuple[float, float]]:
    """For each written word, the stretch of units it was read as: ``(start, end)`` in unit positions, where
    unit ``k`` runs from ``k`` to ``k + 1`` (a word read as units 2 and 3 is ``(2, 4)``; two words sharing
    unit 5 by their lengths are ``(5, 5.4)`` and ``(5.4, 6)``). The stretches follow one another."""
    n, m = len(words), len(unit_lengths)
    if n == 0 or m == 0:
        return []
    if n == m:
        return [(float(i), float(i + 1)) for i in range(n)]
    if n * m > _MOST_CELLS:
        # A long text whose counts differ: the program would hold the shared worker too long.
        return _by_share(words, m)
    scale = sum(unit_lengths) / sum(w.weight for w in words)
    inf = float("inf")
    cost = np.full((n + 1, m + 1), inf)
    step: dict[tuple[int, int], tuple[int, int]] = {}
    cost[0, 0] = 0.0
    for i in range(n + 1):
        for j in range(m + 1):
            here = cost[i, j]
            if here == inf:
                continue
            # A number is read as a word or more per digit (and its currency sign with it).
            most = _MOST_UNITS_PER_WORD + 2 * sum(ch.isdigit() for ch in words[i].text) if i < n else 0
            for a, b in [(1, k) for k in range(1, most + 1)] + [(k, 1) for k in range(2, _MOST_WORDS_PER_UNIT + 1)]:
                if i + a > n or j + b > m:
                    continue
                written = sum(w.weight for w in words[i : i + a]) * scale
                spoken = sum(unit_lengths[j : j + b])
                # A one-to-one pairing is the usual case: any other grouping pays for being unusual.
                c = here + abs(written - spoken) + (0.0 if a == b == 1 else 1.5)
                if c < cost[i + a, j + b]:
                    cost[i + a, j + b] = c
                    step[(i + a, j + b)] = (a, b)
    if cost[n, m] == inf:
        # No grouping fits (very unequal counts, as kana against romanized words): share the units out by weight.
        return _by_share(words, m)
    out: list[tuple[float, float]] = []
    i, j = n, m
    while i or j:
        a, b = step[(i, j)]
        if a == 1:
            out.append((float(j - b), float(j)))
        else:
            group = words[i - a : i]
            total = sum(w.weight for w in group)
            edge = 0.0
            shares = []
            for w in group:
                shares.append((j - 1 + edge / total, j - 1 + (edge + w.weight) / total))
                edge += w.weight
            out.extend(reversed(shares))
        i, j = i - a, j - b
    out.reverse()
    return out


def _by_share(words: list[WrittenWord], m: int) -> list[tuple[float, float]]:
    total = sum(w.weight for w in words)
    out = []
    edge = 0.0
    for w in words:
        out.append((edge / total * m, (edge + w.weight) / total * m))
        edge += w.weight
    return out


class WordTimer:
    """The words of one request and when each is heard, filled in piece by piece as the pieces are rendered."""

    def __init__(self, text: str, phonemes: str, language: str, sample_rate: int, read: Callable[[str], str] | None = None) -> None:
        """``read`` is the engine's front end for the request's language: where the written words and the units
        do not pair one to one, each word is weighed by the length of its own reading (``3:30`` is
        ``θɹˈiː:θˈɜːɾi``), which places the words far better than their letters do."""
        self._syllables = language == "zh"
        self._words = written_words(text)
        spans = units(phonemes, self._syllables)
        if read is not None and len(self._words) != len(spans) and len(self._words) * len(spans) <= _MOST_CELLS:
            self._words = [WrittenWord(w.text, _read_length(read(w.text), self._syllables) or w.weight) for w in self._words]
        self._plan = align(self._words, [end - start for start, end in spans])
        self._rate = sample_rate
        # Each unit's (start, end) in samples from the request's first sample, once its piece is rendered.
        self._times: list[tuple[int, int]] = []
        self._next_word = 0
        self._offset = 0

    def piece(self, phonemes: str, durations: np.ndarray | None, samples: int, trim: tuple[int, int], length: int) -> list[WordTime]:
        """Takes one rendered piece: its ``phonemes``, the model's ``durations`` (one per token, the boundary
        tokens included), the model's ``samples`` before the silence trim kept ``trim`` of them, and the
        ``length`` in samples of what is sent for it (the pause after it included). Returns the words that end in
        this piece, timed from the request's first sample; none when the engine gave no durations."""
        spans = units(phonemes, self._syllables)
        kept_from, kept_to = trim
        kept = kept_to - kept_from
        if durations is None or len(durations) < len(phonemes) + 2:
            # No durations for this piece: its units share what was kept by their lengths, so that the
            # words after it stay on their own units.
            total = sum(end - start for start, end in spans) or 1
            at = 0
            for start, end in spans:
                a, at = at, at + (end - start)
                self._times.append((self._offset + kept * a // total, self._offset + kept * at // total))
        else:
            frames = np.concatenate([[0], np.cumsum(np.asarray(durations, dtype=np.int64).ravel())])
            per_frame = samples / frames[-1] if frames[-1] else 0.0
            for start, end in spans:
                # Phoneme k (0-based) is token k + 1: the first token is the boundary.
                a = frames[start + 1] * per_frame - kept_from
                b = frames[end + 1] * per_frame - kept_from
                self._times.append((self._offset + int(min(max(a, 0), kept)), self._offset + int(min(max(b, 0), kept))))
        self._offset += length
        return self._ready()

    def finish(self) -> list[WordTime]:
        """The request's audio is all rendered: the words still owed (units the front end read fewer of than
        expected), at the end of what was timed."""
        out = self._ready()
        end = self._times[-1][1] * 1000.0 / self._rate if self._times else 0.0
        while self._next_word < len(self._plan):
            out.append(WordTime(self._words[self._next_word].text, end, end))
            self._next_word += 1
        return out

    def _ready(self) -> list[WordTime]:
        out: list[WordTime] = []
        ms = 1000.0 / self._rate
        while self._next_word < len(self._plan):
            start, end = self._plan[self._next_word]
            last = max(int(np.ceil(end)) - 1, int(start))
            if last >= len(self._times):
                break
            out.append(WordTime(self._words[self._next_word].text, self._at(start, False) * ms, self._at(end, True) * ms))
            self._next_word += 1
        return out

    def _at(self, position: float, ending: bool) -> float:
        """The sample a unit position falls on: a whole position that ends a word is its unit's end (the pause
        after it belongs to no word), one that starts a word its unit's start."""
        unit = int(np.floor(position))
        share = position - unit
        if ending and share == 0.0 and unit > 0:
            unit, share = unit - 1, 1.0
        unit = min(unit, len(self._times) - 1)
        first, last = self._times[unit]
        return first + (last - first) * share
