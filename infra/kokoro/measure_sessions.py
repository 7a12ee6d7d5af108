"""The onnx engine's render against kokoro-onnx's own, one process, nothing else running: what each session
setting costs one sentence (`python measure_sessions.py [ROUNDS]`, from infra/kokoro with its venv).

The same int8 model, phonemes, voice and style are run on four onnxruntime sessions, interleaved in a shuffled
order each round with a pause before each run: kokoro-onnx's default session (as pipecat's Kokoro voice and the
peer benchmark's direct call make it), the engine's spinning and sleeping sessions (``KOKORO_ORT_SPINNING``,
headroom.py), and the spinning one on the model without the durations output the engine adds for word timings.
Prints the median, p10 and p90 of each, and each median less the default's.
"""

from __future__ import annotations

import random
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

from kokoro_server.config import Settings
from kokoro_server.engines.onnx_engine import OnnxEngine, with_duration_output
from kokoro_server import model_files

SENTENCES = ("Sure.", "Returning a jacket is easy.")
VOICE = "jf_alpha"


def main(rounds: int) -> None:
    settings = Settings.from_env()
    engine = OnnxEngine(settings)
    engine.load()
    model = model_files.onnx_model(settings.cache_dir)
    spinning, sleeping = engine._options(spin=True), engine._options(spin=False)  # noqa: SLF001 (the engine's own)
    cpu = ["CPUExecutionProvider"]
    sessions = {
        "kokoro-onnx's default": ort.InferenceSession(str(model), providers=cpu),
        "engine, spinning": ort.InferenceSession(with_duration_output(model), sess_options=spinning, providers=cpu),
        "engine, sleeping": ort.InferenceSession(with_duration_output(model), sess_options=sleeping, providers=cpu),
        "spinning, no durations output": ort.InferenceSession(str(model), sess_options=spinning, providers=cpu),
    }
    for sentence in SENTENCES:
        tokens = [engine._vocab[p] for p in engine.phonemize(sentence, "en") if p in engine._vocab]  # noqa: SLF001
        style = engine._styles[VOICE]  # noqa: SLF001
        feeds = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style[len(tokens) - 1].reshape(1, -1),
            "speed": np.array([1.0], dtype=np.float32),
        }
        times: dict[str, list[float]] = {name: [] for name in sessions}
        for session in sessions.values():
            session.run(None, feeds)
        for _ in range(rounds):
            for name in random.sample(list(sessions), len(sessions)):
                time.sleep(0.3)
                started = time.perf_counter()
                sessions[name].run(None, feeds)
                times[name].append((time.perf_counter() - started) * 1000)
        base = statistics.median(times["kokoro-onnx's default"])
        for name, values in times.items():
            values.sort()
            median = statistics.median(values)
            print(
                f"{sentence} ({len(tokens)} phonemes) | {name} | median {median:.1f} ms, p10 {values[len(values) // 10]:.1f}, "
                f"p90 {values[len(values) * 9 // 10]:.1f} | {median - base:+.1f}"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
