"""The GPU image finds its CUDA libraries, proven without a GPU.

In a venv installed from requirements-gpu.txt's onnxruntime-gpu and nvidia wheels (``make gpu-libs``, which
``make test`` runs first and names in ``KOKORO_GPU_LIBS_PYTHON``), after the preparation the server does,
ONNX Runtime's CUDA provider library and every CUDA library it needs load; without it, or with one library
removed, the loader's refusal names the library. Loading needs no GPU and no driver: only running does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent
PYTHON = os.environ.get("KOKORO_GPU_LIBS_PYTHON")

pytestmark = pytest.mark.skipif(not PYTHON, reason="needs the GPU-libraries venv: make gpu-libs (make test makes it where the disk has 8 GB to spare)")


def run(code: str) -> str:
    assert PYTHON and Path(PYTHON).exists(), f"KOKORO_GPU_LIBS_PYTHON={PYTHON} does not exist: make gpu-libs"
    done = subprocess.run([PYTHON, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


PREPARED = "from kokoro_server import cuda_libraries as c; c.prepare(); print(c.missing())"


def test_after_the_servers_preparation_the_cuda_provider_and_its_libraries_load() -> None:
    assert run(PREPARED) == "None"
    # Every library the provider links against resolves in the prepared process.
    check = (
        "import ctypes, subprocess; from kokoro_server import cuda_libraries as c; c.prepare(); "
        "ctypes.CDLL(c.provider_path()); "
        "maps = open('/proc/self/maps').read(); "
        "print(sorted({n for n in ('libcublasLt.so.12', 'libcublas.so.12', 'libcudart.so.12', 'libcudnn.so.9', 'libcufft.so.11', 'libcurand.so.10') if n not in maps}))"
    )
    assert run(check) == "[]"


def test_without_the_preparation_the_provider_cannot_load_and_the_message_names_the_library() -> None:
    # What the image did before: no RPATH, no loader path, so the provider fails on its first CUDA library.
    why = run("from kokoro_server import cuda_libraries as c; print(c.missing())")
    assert "libcublas" in why and "cannot open shared object file" in why, why


def test_with_a_library_removed_the_engines_refusal_names_it() -> None:
    site = Path(run("import onnxruntime, os; print(os.path.dirname(os.path.dirname(onnxruntime.__file__)))"))
    cudnn = site / "nvidia" / "cudnn"
    hidden = cudnn.with_name("cudnn.hidden-by-test")
    shutil.move(cudnn, hidden)
    try:
        refusal = run("from kokoro_server import cuda_libraries as c; c.prepare(); print(c.refusal('cuda', ['CPUExecutionProvider']))")
    finally:
        shutil.move(hidden, cudnn)
    assert refusal.startswith("KOKORO_DEVICE=cuda but the CUDA provider did not start (running on CPUExecutionProvider)"), refusal
    assert "libcudnn" in refusal, refusal
