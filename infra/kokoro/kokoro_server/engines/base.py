"""The interface every engine offers the server: load once, list voices, plan a text, render a piece.

The server knows nothing of onnxruntime or torch; it asks an engine to cut a text into pieces (phonemes, at
most 510 each) and to render one piece at a time, which is what lets audio stream piece by piece whichever
engine runs. All methods but ``voices`` and ``default_voice`` block and run in a worker thread.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import blends, marked
from ..config import Settings
from ..phonemes import G2P, keep_known, pauses, split_pieces
from ..protocol import ProtocolError

SAMPLE_RATE = 24000


@dataclass(frozen=True)
class Voice:
    name: str
    language: str
    gender: str

    @classmethod
    def from_name(cls, name: str) -> Voice:
        """Kokoro voice names say language and gender in their first two letters (``jf_alpha``)."""
        languages = {"a": "en-us", "b": "en-gb", "f": "fr", "j": "ja", "z": "zh"}
        return cls(name=name, language=languages.get(name[0], "?"), gender={"f": "female", "m": "male"}[name[1]])


@dataclass(frozen=True)
class Piece:
    phonemes: str
    pause_after: float


@dataclass(frozen=True)
class Rendered:
    """One piece as the model rendered it: float32 mono samples, and the duration the model gave each token
    (in frames; the boundary tokens at both ends included) where the engine has them: what word timings are
    made of (``timings.py``)."""

    audio: np.ndarray
    durations: np.ndarray | None = None


class Stopped(Exception):
    """The piece was abandoned half-way because its request was stopped."""


@dataclass
class Stop:
    """Set by the session when a request is cancelled or its client leaves; engines may abandon a running
    piece when it is set (onnxruntime can), others finish the piece and the session stops before the next."""

    _set: bool = False
    _hooks: list[Callable[[], None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def set(self) -> None:
        with self._lock:
            self._set, hooks, self._hooks = True, self._hooks, []
        for hook in hooks:
            hook()

    def is_set(self) -> bool:
        return self._set

    def on_set(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when the stop is set (at once if it already is)."""
        with self._lock:
            if not self._set:
                self._hooks.append(hook)
                return
        hook()


class Engine(ABC):
    name: str = ""
    sample_rate: int = SAMPLE_RATE
    #: Where inference runs once loaded (``cpu``, ``cuda``, ``cuda:0``); ``/ping`` reports it.
    device: str = "cpu"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._g2p: Mapping[str, G2P] = {}
        self._vocab: Mapping[str, int] = {}

    @abstractmethod
    def load(self) -> None:
        """Load the model, voices and front ends; called once, off the event loop."""

    @abstractmethod
    def voices(self) -> list[Voice]:
        """The voices this engine serves, known before the model is loaded."""

    @abstractmethod
    def default_voice(self, language: str) -> str:
        """The voice used when a request names none."""

    @abstractmethod
    def infer(self, phonemes: str, voice: str, speed: float, stop: Stop | None = None) -> Rendered:
        """Synthesize one piece (at most 510 phonemes): float32 mono samples at ``sample_rate``, with the
        model's durations per token.

        May raise ``Stopped`` once ``stop`` is set."""

    def front_ends(self) -> dict[str, str]:
        """Which front end reads each language (``/voices`` says it, so a local stack states it plainly)."""
        return {lang: getattr(g2p, "name", type(g2p).__name__) for lang, g2p in self._g2p.items()}

    def has_voice(self, name: str) -> bool:
        """A voice of the engine's, or a blend of them (``blends.py``)."""
        parts = blends.parse(name)
        names = {v.name for v in self.voices()}
        return name in names if parts is None else all(voice in names for voice, _ in parts)

    def phonemize(self, text: str, language: str) -> str:
        """The front end's phonemes for ``text``, a pronunciation given inline taken as it is (``marked.py``)."""
        return keep_known(marked.phonemize(text, self._g2p[language]), self._vocab)

    def phonemes(self, text: str, language: str, request_id: str | None = None) -> str:
        """A text's phonemes, or the ``unsupported_script`` error when the model can speak none of them."""
        phonemes = self.phonemize(text, language)
        if not phonemes.strip():
            raise ProtocolError("unsupported_script", "text produced no phonemes the model can speak", request_id)
        return phonemes

    def plan(self, text: str, language: str, request_id: str | None = None) -> list[Piece]:
        """Phonemize a text and cut it into pieces by length, each with the pause that follows it."""
        pieces = split_pieces(
            self.phonemes(text, language, request_id),
            self.settings.piece_phonemes,
            first_target=self.settings.first_piece_phonemes,
        )
        gaps = pauses(pieces, self.settings.sentence_pause, self.settings.clause_pause)
        return [Piece(p, gap) for p, gap in zip(pieces, gaps, strict=True)]
