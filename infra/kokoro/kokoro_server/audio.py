"""Turning model output into the bytes the protocol carries: PCM s16le mono, cut into frames, or one WAV.

Each piece's silence at both ends is trimmed and the pause its punctuation calls for is added back (as
``kokoro-onnx`` does when it joins batches), so pieces sent one after another sound like one utterance.
"""

from __future__ import annotations

import io
import wave
from collections.abc import Iterator

import numpy as np
from kokoro_onnx.trim import trim

SAMPLE_RATE = 24000
SAMPLE_WIDTH = 2


def finish_piece(audio: np.ndarray, pause_seconds: float, sample_rate: int = SAMPLE_RATE) -> tuple[bytes, tuple[int, int]]:
    """Trim a piece's silence, append its pause and encode it as PCM s16le; also says which samples of the
    model's output the trim kept (``start``, ``end``), which word timings are measured against."""
    audio = np.asarray(audio, dtype=np.float32).ravel()
    kept = (0, int(audio.size))
    if audio.size:
        audio, index = trim(audio)
        kept = (int(index[0]), int(index[1]))
    pause = np.zeros(round(pause_seconds * sample_rate), dtype=np.float32)
    return to_pcm16(np.concatenate([audio, pause])), kept


def to_pcm16(audio: np.ndarray) -> bytes:
    return (np.clip(audio, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()


def frames(pcm: bytes, max_samples: int) -> Iterator[bytes]:
    """Cut PCM into frames of at most ``max_samples`` samples."""
    step = max_samples * SAMPLE_WIDTH
    for start in range(0, len(pcm), step):
        yield pcm[start : start + step]


def wav(pcm: bytes, sample_rate: int = SAMPLE_RATE) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(SAMPLE_WIDTH)
        out.setframerate(sample_rate)
        out.writeframes(pcm)
    return buffer.getvalue()
