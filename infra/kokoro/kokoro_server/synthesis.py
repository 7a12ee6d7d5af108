"""Runs an engine off the event loop and holds the state every connection shares.

One thread pool serves all connections, one piece per job, so a long request never holds the loop (new
WebSockets and ``/ping`` are answered while inference runs) and requests of different connections take turns
piece by piece. The model is loaded in the background at start; until then the server is not ready. It also learns the engine's
speed from every piece it renders, which the paced piece plan (``pacing.py``) sizes pieces by.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .stats import RequestStats
from . import audio, marked, scripts
from .config import ConfigError, Settings
from .engines import Engine, Piece, Stop
from .pacing import FixedPlan, PacedPlan, Pacer, Plan, PiecePlan, Speed
from .protocol import ProtocolError, Synthesize
from .timings import WordTimer

log = logging.getLogger(__name__)

# A clause of typical length, rendered once at start to measure the engine's speed.
_SPEED_PROBE = "Your order shipped this morning and should arrive on Thursday."


@dataclass(frozen=True)
class Request:
    """A synthesize message whose voice and language are settled and whose text is speakable."""

    request_id: str
    text: str
    language: str
    voice: str
    speed: float
    # Whether the client asked for word timings (``words`` in ``synthesize``).
    words: bool = False


@dataclass(frozen=True)
class RenderedPiece:
    """One piece ready to send, with what its word timings are made of: the model's durations per token (None
    where the engine gives none), how many samples the model rendered, and which of them the trim kept."""

    pcm: bytes
    durations: np.ndarray | None
    model_samples: int
    kept: tuple[int, int]


class Synthesizer:
    def __init__(self, engine: Engine, settings: Settings) -> None:
        if settings.default_voice and not engine.has_voice(settings.default_voice):
            names = ", ".join(v.name for v in engine.voices())
            raise ConfigError(
                f"KOKORO_DEFAULT_VOICE={settings.default_voice!r} is not a voice of the {engine.name} engine: {names}"
            )
        self.engine = engine
        self.stats = RequestStats()
        self.settings = settings
        self.ready = False
        self.load_error: str | None = None
        self.load_seconds: float | None = None
        self.speed = Speed()
        self._executor = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="kokoro-infer")

    @property
    def sample_rate(self) -> int:
        return self.engine.sample_rate

    async def load(self) -> None:
        """Load the model in a thread (after ``KOKORO_LOAD_DELAY``); failures are kept in ``load_error``."""
        if self.settings.load_delay:
            await asyncio.sleep(self.settings.load_delay)
        started = time.perf_counter()
        try:
            await asyncio.to_thread(self.engine.load)
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.exception("model load failed")
            raise
        self.load_seconds = time.perf_counter() - started
        await asyncio.to_thread(self._learn_speed)
        self.ready = True
        log.info("%s engine loaded in %.2f s", self.engine.name, self.load_seconds)

    def resolve(self, message: Synthesize) -> Request:
        """Settle language and voice, or raise the ``error`` the client gets."""
        rid = message.request_id
        if not self.ready:
            raise ProtocolError("not_ready", "the model is still loading; retry when GET /ping answers 200", rid)
        text = scripts.resolve(message.text, message.language, rid)
        voice = message.voice or self.engine.default_voice(text.language)
        if not self.engine.has_voice(voice):
            raise ProtocolError("unknown_voice", f"unknown voice {voice!r}; GET /voices lists the voices", rid)
        return Request(rid, text.text, text.language, voice, message.speed, message.words)

    async def plan(self, request: Request) -> list[Piece]:
        """The whole text cut up front by length (one-shot requests, which send nothing before the end)."""
        return await self._run(self.engine.plan, request.text, request.language, request.request_id)

    async def piece_plan(self, request: Request) -> tuple[PiecePlan, WordTimer | None]:
        """The plan a streaming request is rendered by (``KOKORO_PIECE_PLAN``), and its word timer when the
        request asked for word timings."""
        # One trip to the worker thread for both: each trip wakes the thread and then the event loop, before
        # the sentence's first piece can start.
        phonemes, timer = await self._run(self._phonemes_and_timer, request)
        s = self.settings
        first = s.first_piece_phonemes or s.piece_phonemes
        if s.piece_plan == "fixed":
            return FixedPlan(phonemes, s.piece_phonemes, s.first_piece_phonemes, s.sentence_pause, s.clause_pause), timer
        plan = PacedPlan(Plan.of(phonemes, s.sentence_pause, s.clause_pause), Pacer(self.speed, first, s.piece_phonemes))
        return plan, timer

    def _phonemes_and_timer(self, request: Request) -> tuple[str, WordTimer | None]:
        """The request's phonemes (or its ``unsupported_script`` error) and, where it asked for words, its timer."""
        phonemes = self.engine.phonemes(request.text, request.language, request.request_id)
        return phonemes, self._word_timer(request, phonemes) if request.words else None

    def _word_timer(self, request: Request, phonemes: str) -> WordTimer | None:
        """The request's word timer; None (the request goes on without words) if it cannot be made."""

        def read(text: str) -> str:
            return self.engine.phonemize(text, request.language)

        try:
            # The words are those written: an inline pronunciation is timed as its words.
            return WordTimer(marked.plain(request.text), phonemes, request.language, self.sample_rate, read)
        except Exception:
            log.exception("aligning the words of request %r failed; it goes on without them", request.request_id)
            return None

    async def render(self, request: Request, piece: Piece, stop: Stop | None = None) -> RenderedPiece:
        """One piece's audio as PCM s16le, silence trimmed and its pause appended; ``Stopped`` if stopped. The
        wall time it took, waiting for the shared worker included, teaches the speed estimate."""
        started = time.perf_counter()
        rendered = await self._run(self._render, request, piece, stop)
        self._observe(request, piece, rendered.pcm, time.perf_counter() - started)
        return rendered

    def _observe(self, request: Request, piece: Piece, pcm: bytes, seconds: float) -> None:
        """Teaches the speed estimate one rendered piece (its audio without the appended pause)."""
        spoken = len(pcm) / audio.SAMPLE_WIDTH / self.sample_rate - piece.pause_after
        self.speed.observe(len(piece.phonemes), seconds, spoken, request.speed)

    def _render(self, request: Request, piece: Piece, stop: Stop | None) -> RenderedPiece:
        started = time.perf_counter()
        rendered = self.engine.infer(piece.phonemes, request.voice, request.speed, stop)
        if self.settings.slowdown > 1.0:
            time.sleep((time.perf_counter() - started) * (self.settings.slowdown - 1.0))
        pcm, kept = audio.finish_piece(rendered.audio, piece.pause_after, self.sample_rate)
        return RenderedPiece(pcm, rendered.durations, int(rendered.audio.size), kept)

    def _learn_speed(self) -> None:
        """Times one render of a typical clause so that the first request is planned by a measured speed."""
        request = Request("speed-probe", _SPEED_PROBE, "en", self.engine.default_voice("en"), 1.0)
        piece = Piece(self.engine.phonemize(_SPEED_PROBE, "en"), 0.0)
        started = time.perf_counter()
        rendered = self._render(request, piece, None)
        self._observe(request, piece, rendered.pcm, time.perf_counter() - started)
        log.info(
            "engine speed: %.1f ms to render and %.0f ms of audio per phoneme",
            self.speed.render_per_phoneme * 1000,
            self.speed.audio_per_phoneme * 1000,
        )

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
