"""Runtime settings of the Kokoro container, read once from the environment.

Every knob is an environment variable so the same image runs locally, in tests and on SageMaker; this module
is the one place that names them, gives their defaults and rejects bad values with a message naming the
variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# infra/kokoro in the source tree, /opt/kokoro in the images.
APP_ROOT = Path(__file__).resolve().parent.parent

ENGINES = ("onnx", "torch")
PIECE_PLANS = ("paced", "fixed")
ENGLISH_G2PS = ("auto", "misaki", "espeak")
SPINNING = ("auto", "on", "off")
CHINESE_G2PS = ("auto", "misaki", "espeak")


class ConfigError(ValueError):
    """An environment variable holds a value the server cannot use."""


@dataclass(frozen=True)
class Settings:
    engine: str = "onnx"
    host: str = "0.0.0.0"
    port: int = 8080
    cache_dir: Path = APP_ROOT / ".cache"
    model_dir: Path | None = None
    device: str | None = None
    # English front end: misaki (the official pipeline's) where installed, else espeak-ng.
    english_g2p: str = "auto"
    # Mandarin front end: misaki's Chinese G2P where installed (the official pipeline's), else espeak-ng's cmn.
    chinese_g2p: str = "auto"
    default_voice: str | None = None
    queue_size: int = 16
    # Concurrent synthesis sessions (WebSocket connections) admitted; any other is refused with ``busy``.
    # 0 = sized to the machine: see ``admitted_sessions``.
    max_sessions: int = 0
    max_text_chars: int = 2000
    workers: int = 1
    ort_intra_threads: int = 0
    ort_inter_threads: int = 1
    # Whether onnxruntime's threads spin between the operators of a run (stopping the moment it returns):
    # ``auto``, when a core is free for each (headroom.py), ``on`` always, ``off`` never.
    ort_spinning: str = "auto"
    # onnxruntime's dynamic block sizing (``session.dynamic_block_base``): N > 0 cuts each operator's loop into
    # blocks that start at 1/(threads * N) of it and shrink, each taken by whichever thread is free, so that a
    # thread the machine holds up for a moment need not hold up the operator; 0 (the default) leaves
    # onnxruntime's own split, one block a thread fixed in advance. It made no difference on a 2-core machine
    # (README, "onnxruntime's threads").
    ort_dynamic_block_base: int = 0
    max_frame_samples: int = 24000
    piece_phonemes: int = 150
    first_piece_phonemes: int = 60
    # How pieces are cut: ``paced`` against the listener's clock, or ``fixed`` by length alone (pacing.py).
    piece_plan: str = "paced"
    # Renders take this many times as long as the engine needs (the thread waits out the rest): a slower
    # machine, for trying the piece plan. 1 in production.
    slowdown: float = 1.0
    sentence_pause: float = 0.25
    clause_pause: float = 0.1
    load_delay: float = 0.0
    # After SIGTERM, how long live sessions may go on before the server stops: 0 (local runs) stops at once;
    # the SageMaker images set 20 (SageMaker kills a container 30 s after SIGTERM; uvicorn's own shutdown takes
    # up to 5 s more).
    drain_seconds: float = 0.0
    log_level: str = "info"

    @property
    def torch_model_dir(self) -> Path:
        """Where the pinned Kokoro-82M revision lives for the torch engine."""
        return self.model_dir or self.cache_dir / "Kokoro-82M"

    @property
    def admitted_sessions(self) -> int:
        """How many sessions synthesize at once before the next is told ``busy``.

        On the CPU (onnx engine) one core keeps about two conversations ahead of real time (real-time factor
        about 0.47 on one core of a 2-core machine), so the default is twice the cores; beyond that every
        admitted conversation would wait for audio, and a voice that answers late is worse than a clear
        ``busy`` that lets the gateway spill to another backend. The GPU image sets its own value
        (``KOKORO_MAX_SESSIONS`` in its Dockerfile).
        """
        return self.max_sessions or 2 * (os.cpu_count() or 1)

    @property
    def intra_threads(self) -> int:
        """onnxruntime intra-op threads: the configured count, or one per core."""
        return self.ort_intra_threads or (os.cpu_count() or 1)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        r = _Reader(env)
        return cls(
            engine=r.choice("KOKORO_ENGINE", "onnx", ENGINES),
            host=r.text("KOKORO_HOST", "0.0.0.0"),
            port=r.integer("KOKORO_PORT", 8080, 1, 65535),
            cache_dir=Path(r.text("KOKORO_CACHE_DIR", str(APP_ROOT / ".cache"))),
            model_dir=r.path_or_none("KOKORO_MODEL_DIR"),
            device=r.text("KOKORO_DEVICE", "") or None,
            english_g2p=r.choice("KOKORO_ENGLISH_G2P", "auto", ENGLISH_G2PS),
            chinese_g2p=r.choice("KOKORO_CHINESE_G2P", "auto", CHINESE_G2PS),
            default_voice=r.text("KOKORO_DEFAULT_VOICE", "") or None,
            queue_size=r.integer("KOKORO_QUEUE_SIZE", 16, 1, 10_000),
            max_sessions=r.integer("KOKORO_MAX_SESSIONS", 0, 0, 100_000),
            max_text_chars=r.integer("KOKORO_MAX_TEXT_CHARS", 2000, 1, 100_000),
            workers=r.integer("KOKORO_WORKERS", 1, 1, 64),
            ort_intra_threads=r.integer("KOKORO_ORT_INTRA_THREADS", 0, 0, 256),
            ort_inter_threads=r.integer("KOKORO_ORT_INTER_THREADS", 1, 1, 256),
            ort_spinning=r.spinning("KOKORO_ORT_SPINNING", "auto"),
            ort_dynamic_block_base=r.integer("KOKORO_ORT_DYNAMIC_BLOCK_BASE", 0, 0, 64),
            max_frame_samples=r.integer("KOKORO_MAX_FRAME_SAMPLES", 24000, 240, 24000 * 60),
            piece_phonemes=r.integer("KOKORO_PIECE_PHONEMES", 150, 20, 510),
            first_piece_phonemes=r.integer("KOKORO_FIRST_PIECE_PHONEMES", 60, 0, 510),
            piece_plan=r.choice("KOKORO_PIECE_PLAN", "paced", PIECE_PLANS),
            slowdown=r.number("KOKORO_SLOWDOWN", 1.0, 1.0, 100.0),
            sentence_pause=r.number("KOKORO_SENTENCE_PAUSE", 0.25, 0.0, 5.0),
            clause_pause=r.number("KOKORO_CLAUSE_PAUSE", 0.1, 0.0, 5.0),
            load_delay=r.number("KOKORO_LOAD_DELAY", 0.0, 0.0, 3600.0),
            drain_seconds=r.number("KOKORO_DRAIN_SECONDS", 0.0, 0.0, 25.0),
            log_level=r.choice("KOKORO_LOG_LEVEL", "info", ("critical", "error", "warning", "info", "debug")),
        )


class _Reader:
    """Typed access to environment variables with errors that name the variable."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def _raw(self, name: str) -> str | None:
        value = self._env.get(name)
        return None if value is None or value.strip() == "" else value.strip()

    def text(self, name: str, default: str) -> str:
        return self._raw(name) or default

    def path_or_none(self, name: str) -> Path | None:
        raw = self._raw(name)
        return Path(raw) if raw else None

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        value = (self._raw(name) or default).lower()
        if value not in allowed:
            raise ConfigError(f"{name}={value!r}: expected one of {', '.join(allowed)}")
        return value

    def integer(self, name: str, default: int, low: int, high: int) -> int:
        return int(self._ranged(name, default, low, high, int, "an integer"))

    def number(self, name: str, default: float, low: float, high: float) -> float:
        return float(self._ranged(name, default, low, high, float, "a number"))

    def _ranged(self, name: str, default: float, low: float, high: float, kind: type, what: str) -> float:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = kind(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r}: expected {what}") from None
        if not low <= value <= high:
            raise ConfigError(f"{name}={value}: expected {low}..{high}")
        return value

    def spinning(self, name: str, default: str) -> str:
        """``auto``, ``on`` or ``off``; a boolean reads as on or off (the variable was one before ``auto``)."""
        raw = (self._raw(name) or default).lower()
        if raw in ("1", "true", "yes", "on"):
            return "on"
        if raw in ("0", "false", "no", "off"):
            return "off"
        if raw != "auto":
            raise ConfigError(f"{name}={raw!r}: expected auto, on or off")
        return raw
