"""The GPU image's CUDA libraries, found before ONNX Runtime needs them.

The image installs CUDA and cuDNN as pip wheels (``nvidia-*-cu12``, the ``[cuda,cudnn]`` extras of
onnxruntime-gpu), into ``site-packages/nvidia/*/lib``: folders the dynamic loader does not search, and
ONNX Runtime's CUDA provider library (``libonnxruntime_providers_cuda.so``) carries no RPATH to them. Left
alone, the provider fails to load on a GPU host, ONNX Runtime falls back to the CPU, the engine refuses to
run there, ``/ping`` never answers 200 and the endpoint's creation rolls back.

The fix is ONNX Runtime's own: :func:`prepare` calls ``onnxruntime.preload_dlls()``, which loads each
library from the wheels' folders into the process, where the provider then finds them already loaded. It
was chosen over ``LD_LIBRARY_PATH`` in the Dockerfile because it follows the wheels wherever pip puts them
and needs no list of folders kept in step with their versions. Loading needs no GPU and no driver, so a
test proves it on any machine (``tests/test_cuda_libraries.py``, in a venv installed from
requirements-gpu.txt); :func:`missing` says which library the provider still cannot load, for the
engine's refusal.

This module imports nothing of the server, so that it can run in that venv alone.
"""

from __future__ import annotations

import ctypes
import os

import onnxruntime as ort

PROVIDER = "libonnxruntime_providers_cuda.so"


def provider_path() -> str:
    return os.path.join(os.path.dirname(ort.__file__), "capi", PROVIDER)


def prepare() -> None:
    """Loads the CUDA and cuDNN libraries of the nvidia wheels into this process (onnxruntime-gpu 1.21+)."""
    preload = getattr(ort, "preload_dlls", None)
    if preload is not None:
        preload(cuda=True, cudnn=True)


def missing() -> str | None:
    """Why the CUDA provider library cannot load (the loader's message names the library it lacks), or
    ``None`` when it loads."""
    path = provider_path()
    if not os.path.isfile(path):
        return f"{PROVIDER} is not installed: this onnxruntime has no CUDA provider (the GPU image installs onnxruntime-gpu)"
    try:
        ctypes.CDLL(path)
    except OSError as e:
        return str(e)
    return None


def refusal(device: str, running_on: list[str]) -> str:
    """The engine's message when the CUDA provider did not start: what it runs on, and why."""
    why = missing() or "its libraries load, so check the NVIDIA driver (nvidia-smi) and the instance's GPU"
    return f"KOKORO_DEVICE={device} but the CUDA provider did not start (running on {', '.join(running_on)}): {why}"


if __name__ == "__main__":
    # What the tests run in the GPU-libraries venv: the server's preparation, then the provider's load.
    prepare()
    print(missing() or "ok")
