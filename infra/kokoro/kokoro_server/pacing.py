"""The piece plan: how a request's phonemes are cut into pieces, so that speech never stops inside a sentence.

The model renders a piece whole before any of it is sent, and a listener plays each chunk as it arrives. So a
piece must be rendered before the audio sent ahead of it has played out, or the voice stops in the middle of a
sentence (a *stall*), the worst silence a listener can hear. A fixed plan (a short first clause, then runs of up
to 150 phonemes) is right on an idle machine and stalls on a busy one: the first clause plays for a second, the
rest of the sentence takes longer than that to render.

The paced plan keeps ahead of the listener instead. Each connection keeps the listener's clock (:class:`Playout`:
when the audio sent so far will have played out), the server learns the engine's speed as it goes
(:class:`Speed`: render seconds and audio seconds per phoneme, shared by every connection since they share the
engine), and each next piece is as long as the audio queued ahead of it allows: short first (time to first audio
is the same as the fixed plan's), growing with the lead, at clauses, then at words. When even a short piece
cannot keep up (a machine slower than real time), the sentence's audio is *held*: rendered but not sent until
what is left of the sentence is predicted to play through without a stop. The sentence then starts late, by about
as much as it must, and plays whole: a gap before a sentence rather than a stall inside it.

Both plans are here (``KOKORO_PIECE_PLAN=paced`` is the default, ``fixed`` is the earlier behaviour, kept for the
benchmark's before-and-after); both report the stalls the container itself would have caused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kokoro_onnx.chunker import CLAUSE_MARKS, SENTENCE_MARKS, pause_after, split_phonemes

from .engines.base import Piece
from .phonemes import MAX_PHONEMES, split_pieces

PLANS = ("paced", "fixed")

# A piece's estimated render may use this share of the lead; the rest covers the estimate's error and the trip
# to the listener.
SAFETY = 0.75
# The render predictions' deviation before any is known (a tenth: pieces of different lengths differ about that
# much per phoneme on the CPU), how much of it a plan allows for, its smoothing (RFC 6298's), and the most margin.
DEVIATION_PRIOR = 0.1
DEVIATIONS = 3.0
DEVIATION_WEIGHT = 0.25
MAX_MARGIN = 2.5
# Less audio than this queued ahead means the listener is waiting already: the piece is sized for first audio.
WAITING = 0.05
# The shortest piece cut at words: shorter ones cost more in per-call overhead and prosody than they save.
MIN_WORD_PIECE = 12

_SENTENCE_END = re.compile(rf"(?<=[{re.escape(SENTENCE_MARKS)}])\s+")
_CLAUSE_END = re.compile(rf"(?<=[{re.escape(CLAUSE_MARKS)}])\s+")


class Playout:
    """The listener's clock for one connection: when the audio sent so far will have played out, for a player
    that plays each chunk when it arrives or when the one before it ends, whichever is later (as earshot's
    clients do). Times are the event loop's clock, in seconds."""

    def __init__(self) -> None:
        self._end = 0.0

    def lead(self, now: float) -> float:
        """Seconds of audio queued ahead of the listener at ``now``."""
        return max(0.0, self._end - now)

    def silence_before(self, now: float) -> float:
        """The silence the listener hears before a chunk sent at ``now``, if the audio before it was sent."""
        return max(0.0, now - self._end)

    def sent(self, seconds: float, now: float) -> None:
        self._end = max(self._end, now) + seconds


class Speed:
    """The engine's speed, learned from every piece rendered: render seconds per phoneme (with a fixed overhead
    of ``overhead`` phonemes a call) and audio seconds per phoneme at speed 1. A slowdown is learned faster than
    a speed-up, so the estimate errs towards a machine that is busier than it was.

    Plans use a pessimistic render time: the mean's prediction times a margin that grows with how wrong the
    predictions have been, as TCP times a retransmission by the round trip's mean and deviation (RFC 6298).
    The per-phoneme cost is not constant (a long piece costs more per phoneme than a short one, and a busy
    machine adds noise), and a plan that trusted the mean would stop the voice whenever a render ran late."""

    def __init__(
        self, render_per_phoneme: float = 0.02, audio_per_phoneme: float = 0.06, overhead: int = 10, deviation: float = DEVIATION_PRIOR
    ) -> None:
        self.render_per_phoneme = render_per_phoneme
        self.audio_per_phoneme = audio_per_phoneme
        self.overhead = overhead
        # The mean relative error of the render predictions (|actual / predicted - 1|), smoothed.
        self.deviation = deviation
        self.observed = 0

    @property
    def margin(self) -> float:
        """What a planned render time adds to the mean's prediction, as a factor."""
        return min(1.0 + DEVIATIONS * self.deviation, MAX_MARGIN)

    def render_seconds(self, phonemes: int) -> float:
        """The render time a plan allows for: the mean's prediction with the margin."""
        return self.render_per_phoneme * (phonemes + self.overhead) * self.margin

    def audio_seconds(self, phonemes: int, speed: float = 1.0) -> float:
        return self.audio_per_phoneme * phonemes / speed

    def phonemes_within(self, seconds: float) -> int:
        """The longest piece whose planned render takes at most ``seconds``."""
        return max(0, int(seconds / (self.render_per_phoneme * self.margin) + 1e-9) - self.overhead)

    def observe(self, phonemes: int, render_seconds: float, audio_seconds: float, speed: float = 1.0) -> None:
        """Learns from one rendered piece: its phonemes, the wall time of its render (queueing behind other
        connections' pieces included, since that is what the listener waits for) and its audio without the
        appended pause."""
        if phonemes <= 0 or render_seconds <= 0:
            return
        rate = render_seconds / (phonemes + self.overhead)
        first = self.observed == 0
        if not first:
            error = abs(rate / self.render_per_phoneme - 1.0)
            self.deviation += DEVIATION_WEIGHT * (error - self.deviation)
        weight = 1.0 if first else (0.5 if rate > self.render_per_phoneme else 0.2)
        self.render_per_phoneme += weight * (rate - self.render_per_phoneme)
        if audio_seconds > 0:
            per_phoneme = audio_seconds * speed / phonemes
            self.audio_per_phoneme += (1.0 if first else 0.2) * (per_phoneme - self.audio_per_phoneme)
        self.observed += 1


@dataclass
class Planned:
    """A piece with where it sits: whether it starts and ends its sentence."""

    piece: Piece
    starts_sentence: bool
    ends_sentence: bool


class Plan:
    """A request's phonemes still to render, as sentences of clauses; hands out the next piece on demand."""

    def __init__(self, sentences: list[list[str]], sentence_pause: float, clause_pause: float) -> None:
        self._sentences = [s for s in sentences if s]
        self._sentence_pause = sentence_pause
        self._clause_pause = clause_pause
        self._started = False  # whether the current sentence has given a piece yet

    @classmethod
    def of(cls, phonemes: str, sentence_pause: float, clause_pause: float, limit: int = MAX_PHONEMES) -> Plan:
        """Sentences of clauses; a clause longer than the model's ``limit`` is cut at words first."""
        sentences = []
        for sentence in _SENTENCE_END.split(phonemes.strip()):
            clauses = []
            for clause in _CLAUSE_END.split(sentence.strip()):
                clauses.extend(split_phonemes(clause, limit) if len(clause) > limit else [clause] if clause else [])
            sentences.append(clauses)
        return cls(sentences, sentence_pause, clause_pause)

    def done(self) -> bool:
        return not self._sentences

    def at_sentence_start(self) -> bool:
        return not self._started

    def rest_of_sentence(self) -> Plan:
        """What is left of the current sentence, as a plan of its own (a copy)."""
        rest = Plan([list(self._sentences[0])] if self._sentences else [], 0.0, 0.0)
        rest._started = not self.at_sentence_start()
        return rest

    def take(self, most: int, least: int = MIN_WORD_PIECE, words: bool = True, limit: int = MAX_PHONEMES) -> Planned:
        """The next piece: whole clauses of the current sentence up to ``most`` phonemes, at least one. A first
        clause longer than that is cut at words to at most ``max(most, least)`` when ``words``, else given
        whole. Never crosses a sentence end or the model's ``limit``."""
        clauses = self._sentences[0]
        most = min(max(most, least), limit)
        text, taken = _take_clauses(clauses, most)
        if taken == 0 and words:
            text, clauses[0] = _take_words(clauses[0], most)
            if not clauses[0]:
                del clauses[0]
        elif taken == 0:
            text = clauses.pop(0)
        else:
            del clauses[:taken]
        starts = not self._started
        ends = not clauses
        if ends:
            self._sentences.pop(0)
        self._started = not ends
        last = ends and not self._sentences
        pause = 0.0 if last else pause_after(text, self._sentence_pause, self._clause_pause)
        return Planned(Piece(text, pause), starts, ends)


def _take_clauses(clauses: list[str], most: int) -> tuple[str, int]:
    text, taken = "", 0
    for clause in clauses:
        joined = f"{text} {clause}" if text else clause
        if len(joined) > most:
            break
        text, taken = joined, taken + 1
    return text, taken


def _take_words(clause: str, most: int) -> tuple[str, str]:
    """Words from the front of ``clause`` up to ``most`` phonemes (at least one), and what is left."""
    words = clause.split(" ")
    head = words[0]
    used = 1
    while used < len(words) and len(head) + 1 + len(words[used]) <= most:
        head = f"{head} {words[used]}"
        used += 1
    return head, " ".join(words[used:])


class Pacer:
    """Decides each next piece's length and whether rendered audio may be sent yet.

    ``first_piece``: the longest first piece (whole clauses) when the listener is waiting, as in the fixed plan;
    ``most``: the longest piece once ahead (bounded so that one connection's piece cannot hold the shared engine
    for long while other connections wait for theirs)."""

    def __init__(self, speed: Speed, first_piece: int, most: int) -> None:
        self.speed = speed
        self.first_piece = first_piece
        self.most = most

    def budget(self, lead: float) -> int:
        """The longest piece that can be rendered before ``lead`` seconds of queued audio run out."""
        return self.speed.phonemes_within(lead * SAFETY)

    def next_piece(self, plan: Plan, lead: float) -> Planned:
        if plan.at_sentence_start():
            # A sentence's first piece is cut at clauses only, never shorter than the fixed plan's first piece
            # (the same time to first audio), longer when the audio queued ahead allows.
            most = self.first_piece if lead < WAITING else min(max(self.first_piece, self.budget(lead)), self.most)
            return plan.take(most, words=False)
        return plan.take(min(self.budget(lead), self.most))

    def keeps_up(self, plan: Plan, lead: float, speed: float = 1.0) -> bool:
        """Whether the rest of the current sentence, planned as :meth:`next_piece` would plan it, is predicted
        to be rendered before the listener runs out, starting with ``lead`` seconds queued ahead."""
        rest = plan.rest_of_sentence()
        while not rest.done():
            planned = rest.take(min(self.budget(lead), self.most))
            phonemes = len(planned.piece.phonemes)
            render = self.speed.render_seconds(phonemes)
            if render > lead * SAFETY:
                return False
            lead += self.speed.audio_seconds(phonemes, speed) - render
        return True


class FixedPlan:
    """The earlier plan, for comparison: pieces cut once, up front, by length alone; audio never held."""

    def __init__(self, phonemes: str, settings_piece: int, first_piece: int, sentence_pause: float, clause_pause: float):
        pieces = split_pieces(phonemes, settings_piece, first_target=first_piece)
        ends = [bool(re.search(rf"[{re.escape(SENTENCE_MARKS)}]$", p)) for p in pieces]
        self._pieces: list[Planned] = []
        starts = True
        for i, text in enumerate(pieces):
            last = i == len(pieces) - 1
            pause = 0.0 if last else pause_after(text, sentence_pause, clause_pause)
            self._pieces.append(Planned(Piece(text, pause), starts, ends[i] or last))
            starts = ends[i] or last

    def done(self) -> bool:
        return not self._pieces

    def next_piece(self, lead: float) -> Planned:
        return self._pieces.pop(0)

    def keeps_up(self, lead: float, speed: float = 1.0) -> bool:
        return True


class PacedPlan:
    """A :class:`Plan` with its :class:`Pacer`, behind the same two calls as :class:`FixedPlan`."""

    def __init__(self, plan: Plan, pacer: Pacer) -> None:
        self._plan = plan
        self._pacer = pacer

    def done(self) -> bool:
        return self._plan.done()

    def next_piece(self, lead: float) -> Planned:
        return self._pacer.next_piece(self._plan, lead)

    def keeps_up(self, lead: float, speed: float = 1.0) -> bool:
        if self._plan.at_sentence_start():
            return True  # the sentence is complete: nothing of it is left to wait for
        return self._pacer.keeps_up(self._plan, lead, speed)


PiecePlan = FixedPlan | PacedPlan
