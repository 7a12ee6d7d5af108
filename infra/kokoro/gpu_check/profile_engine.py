"""Where one Kokoro inference spends its time on ONNX Runtime's CUDA provider, and how long a piece takes.

Why: a piece's render time is the floor of first audio on a GPU, and the first measurement found half of it in
one operator ONNX Runtime ran on the CPU; this says where the time goes before anyone tunes anything.

Times the model alone (no server) for pieces of 20 to 300 phonemes under cuDNN's three ways of choosing a
convolution algorithm, then profiles one 60-phoneme piece: time by operator and provider, and the operators
ONNX Runtime left on the CPU (each one costs copies between the devices). Last, through the engine itself
(``KOKORO_MODEL_DIR``), the measurement's sentences and their first clauses: on an H200 the sentences whose
first piece ends at a comma reached first audio 200 ms later than longer sentences, and these rows say whether
the model's run on those phonemes is where the time goes.

    python gpu_check/profile_engine.py MODEL.onnx OUT_DIR [cuda|cpu]
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

from kokoro_server import cuda_libraries
from kokoro_server.engines.onnx_engine import cuda_options


def session(model: str, device: str, search: str, profile_prefix: str | None = None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    if device == "cpu":
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    cuda = {**cuda_options(0), "cudnn_conv_algo_search": search}
    return ort.InferenceSession(model, options, providers=[("CUDAExecutionProvider", cuda), "CPUExecutionProvider"])


def feeds(s: ort.InferenceSession, phonemes: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for i in s.get_inputs():
        if "int" in i.type:
            tokens = rng.integers(1, 170, size=phonemes + 2)
            tokens[0] = tokens[-1] = 0
            out[i.name] = tokens[None, :].astype(np.int64 if "64" in i.type else np.int32)
        elif i.name == "style":
            out[i.name] = (rng.standard_normal((1, 256)) * 0.1).astype(np.float32)
        else:
            out[i.name] = np.ones([d if isinstance(d, int) else 1 for d in i.shape] or [1], dtype=np.float32)
    return out


def main() -> None:
    model, out, device = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "cuda")
    if device == "cuda":
        cuda_libraries.prepare()
    rng = np.random.default_rng(0)
    print("| cuDNN algorithm search | 20 phonemes ms | 60 | 150 | 300 | first run of the session ms |")
    print("|---|---|---|---|---|---|")
    for search in ("HEURISTIC", "EXHAUSTIVE", "DEFAULT") if device == "cuda" else ("cpu",):
        s = session(model, device, search)
        row, first = [], None
        for n in (20, 60, 150, 300):
            f = feeds(s, n, rng)
            t = time.perf_counter()
            s.run(None, f)
            first = first if first is not None else (time.perf_counter() - t) * 1000
            for _ in range(2):
                s.run(None, f)
            times = []
            for _ in range(7):
                t = time.perf_counter()
                s.run(None, f)
                times.append((time.perf_counter() - t) * 1000)
            row.append(statistics.median(times))
        print(f"| {search} | " + " | ".join(f"{v:.1f}" for v in row) + f" | {first:.0f} |", flush=True)

    s = session(model, device, "HEURISTIC", f"{out}/profile")
    f = feeds(s, 60, rng)
    for _ in range(6):
        s.run(None, f)
    with open(s.end_profiling()) as f:
        events = json.load(f)
    by_op: dict[tuple[str, str], float] = collections.defaultdict(float)
    on_cpu: collections.Counter[str] = collections.Counter()
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    warm_from = runs[0]["ts"] + runs[0]["dur"]  # the first run (lazy set-up) is left out of every figure
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= warm_from:
            op, provider = e["args"]["op_name"], e["args"]["provider"]
            by_op[(op, provider)] += e["dur"] / 1000 / (len(runs) - 1)
            if provider == "CPUExecutionProvider":
                on_cpu[op] += 1
    run_ms = statistics.median(e["dur"] / 1000 for e in runs[1:])
    print(f"\none 60-phoneme piece: {run_ms:.1f} ms a run (median of {len(runs) - 1} after the first)")
    print("time by operator and provider, ms a run (top 15):")
    for (op, provider), ms in sorted(by_op.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {op:28s} {provider:24s} {ms:8.2f}")
    print(f"operators run on the CPU (kernel runs over {len(runs) - 1} runs): {dict(on_cpu)}")
    if device == "cuda":
        engine_rows()


def engine_rows() -> None:
    """The engine's render of each measured sentence and of its first clause: first run, then the median of 5."""
    from kokoro_server.config import Settings
    from kokoro_server.engines import create_engine
    from measure_capacity import SENTENCES

    engine = create_engine(Settings.from_env())
    engine.load()
    voice = engine.default_voice("en")
    print("\n| sentence | part | phonemes | first run ms | median of 5 ms | audio s |")
    print("|---|---|---|---|---|---|")
    for label, text in SENTENCES.items():
        phonemes = engine.phonemize(text, "en")
        parts = {"whole": phonemes}
        if "," in phonemes:
            parts["to the first comma"] = phonemes[: phonemes.index(",") + 1]
        for part, ph in parts.items():
            times = []
            for _ in range(6):
                t = time.perf_counter()
                rendered = engine.infer(ph, voice, 1.0)
                times.append((time.perf_counter() - t) * 1000)
            seconds = rendered.audio.size / 24000
            print(f"| {label} | {part} | {len(ph)} | {times[0]:.1f} | {statistics.median(times[1:]):.1f} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
