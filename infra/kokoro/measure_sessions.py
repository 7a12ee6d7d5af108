"""The onnx engine's render against kokoro-onnx's own, one process: what each session setting costs one
sentence (`python measure_sessions.py [ROUNDS] [--beside-stream MICROSECONDS]`, from infra/kokoro with its venv).

The same int8 model, phonemes, voice and style are run on five onnxruntime sessions, interleaved in a shuffled
order each round with a pause before each run: kokoro-onnx's default session (as pipecat's Kokoro voice and the
peer benchmark's direct call make it), the engine's spinning and sleeping sessions (``KOKORO_ORT_SPINNING``,
headroom.py), the spinning one with dynamic block sizing (``KOKORO_ORT_DYNAMIC_BLOCK_BASE=4``), and the
spinning one on the model without the durations output the engine adds for word timings. Prints the median,
p10 and p90 of each, and each median less the default's.

With ``--beside-stream US`` another process wakes every 33 ms (a piece of text at the peer benchmark's pace)
and works for US microseconds each time, as a stream's gateway and client do beside the render on a machine
they share with the model; without it nothing else runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

from kokoro_server.config import Settings
from kokoro_server.engines.onnx_engine import OnnxEngine, with_duration_output
from kokoro_server import model_files

SENTENCES = ("Sure.", "Returning a jacket is easy.")
VOICE = "jf_alpha"


# A stream beside the render: wake every 33 ms, work for the given microseconds, sleep again.
STREAM = """
import sys, time
work, tick = int(sys.argv[1]) / 1e6, 1 / 30
due = time.perf_counter()
while True:
    due += tick
    time.sleep(max(0.0, due - time.perf_counter()))
    until = time.perf_counter() + work
    while time.perf_counter() < until:
        pass
"""


def main(rounds: int, beside_stream_us: int | None) -> None:
    settings = Settings.from_env()
    engine = OnnxEngine(settings)
    engine.load()
    model = model_files.onnx_model(settings.cache_dir)
    spinning, sleeping = engine._options(spin=True), engine._options(spin=False)  # noqa: SLF001 (the engine's own)
    blocks = OnnxEngine(dataclasses.replace(settings, ort_dynamic_block_base=4))._options(spin=True)  # noqa: SLF001
    cpu = ["CPUExecutionProvider"]
    sessions = {
        "kokoro-onnx's default": ort.InferenceSession(str(model), providers=cpu),
        "engine, spinning": ort.InferenceSession(with_duration_output(model), sess_options=spinning, providers=cpu),
        "engine, sleeping": ort.InferenceSession(with_duration_output(model), sess_options=sleeping, providers=cpu),
        "engine, spinning, dynamic blocks 4": ort.InferenceSession(
            with_duration_output(model), sess_options=blocks, providers=cpu
        ),
        "spinning, no durations output": ort.InferenceSession(str(model), sess_options=spinning, providers=cpu),
    }
    stream = None
    if beside_stream_us is not None:
        stream = subprocess.Popen([sys.executable, "-c", STREAM, str(beside_stream_us)])
        print(f"beside a stream that works {beside_stream_us} us every 33 ms")
    try:
        measure(engine, sessions, rounds)
    finally:
        if stream is not None:
            stream.kill()
            stream.wait()


def measure(engine: OnnxEngine, sessions: dict[str, ort.InferenceSession], rounds: int) -> None:
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rounds", type=int, nargs="?", default=20)
    parser.add_argument("--beside-stream", type=int, metavar="US", help="a stream beside the render")
    args = parser.parse_args()
    main(args.rounds, args.beside_stream)
