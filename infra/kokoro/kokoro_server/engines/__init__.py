"""Engine selection: the name in ``KOKORO_ENGINE`` to an engine instance.

Each engine module is imported only when chosen, so running the onnx engine never imports torch.
"""

from __future__ import annotations

from ..config import Settings
from ..unavailable import EngineUnavailable
from .base import Engine, Piece, Rendered, Stop, Stopped, Voice

__all__ = ["Engine", "EngineUnavailable", "Piece", "Rendered", "Stop", "Stopped", "Voice", "create_engine"]


def create_engine(settings: Settings) -> Engine:
    if settings.engine == "onnx":
        from .onnx_engine import OnnxEngine

        return OnnxEngine(settings)
    if settings.engine == "torch":
        from .torch_engine import TorchEngine

        return TorchEngine(settings)
    raise EngineUnavailable(f"unknown engine {settings.engine!r}; expected onnx or torch")
