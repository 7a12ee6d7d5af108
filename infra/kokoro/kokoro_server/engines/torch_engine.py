"""Kokoro-82M through the ``kokoro`` package (KModel, KPipeline) on GPU: an option (``Dockerfile.torch``); production
runs the onnx engine on CUDA.

The pinned ``hexgrad/Kokoro-82M`` revision is baked into the image at build time; at start every file is
checked against its pinned hash, the model and all voice packs are moved to the device once, and no request
ever loads or downloads anything. G2P is the ``kokoro`` package's own (misaki for English and Chinese, its
espeak-ng front end for French); Japanese uses the same misaki romanizer fed by pyopenjtalk-plus, because
misaki's own Japanese extra needs a dictionary download at run time.

torch, kokoro and misaki are imported only inside ``load``/``infer``, so the onnx engine never imports them
and an installation without them fails here with a clear message instead of at the first request.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from .. import blends
from ..config import Settings
from ..model_files import HF_FILES, HF_REPO, verify_files
from ..phonemes import JapaneseG2P
from ..unavailable import EngineUnavailable
from .base import Engine, Rendered, Stop, Voice

log = logging.getLogger(__name__)

REQUIRED_MODULES = ("torch", "kokoro", "misaki")
VOICE_NAMES = tuple(PurePosixPath(p).stem for p in HF_FILES if p.startswith("voices/"))
DEFAULT_VOICES = {"en": "af_heart", "fr": "ff_siwis", "zh": "zf_xiaobei", "ja": "jf_alpha"}
# KPipeline language codes whose G2P is used (a quiet pipeline: G2P only, no model of its own).
PIPELINE_LANGUAGES = {"en": "a", "fr": "f", "zh": "z"}


class TorchEngine(Engine):
    name = "torch"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        missing = [m for m in REQUIRED_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            raise EngineUnavailable(
                f"KOKORO_ENGINE=torch needs {', '.join(missing)}, which this installation lacks: "
                "install requirements-torch.txt (Dockerfile.torch does), or use KOKORO_ENGINE=onnx"
            )
        self._model: Any = None
        self._packs: dict[str, Any] = {}

    def voices(self) -> list[Voice]:
        return [Voice.from_name(n) for n in VOICE_NAMES]

    def default_voice(self, language: str) -> str:
        return self.settings.default_voice or DEFAULT_VOICES[language]

    def load(self) -> None:
        import torch
        from kokoro import KModel, KPipeline

        root = self.settings.torch_model_dir
        verify_files(root, HF_FILES)
        device = self.settings.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise EngineUnavailable(f"KOKORO_DEVICE={device} but torch sees no CUDA device")
        if device == "cpu":
            torch.set_num_threads(self.settings.intra_threads)
        model = KModel(repo_id=HF_REPO, config=str(root / "config.json"), model=str(root / "kokoro-v1_0.pth"))
        self.device = device
        self._model = model.to(device).eval()
        self._vocab = self._model.vocab
        self._packs = {
            name: torch.load(root / "voices" / f"{name}.pt", weights_only=True).to(device) for name in VOICE_NAMES
        }
        self._blends = blends.Blends(self._packs)
        g2p = {}
        for language, code in PIPELINE_LANGUAGES.items():
            pipeline = KPipeline(lang_code=code, repo_id=HF_REPO, model=False)
            g2p[language] = _phonemes_only(pipeline.g2p)
        g2p["ja"] = JapaneseG2P()
        self._g2p = g2p
        self.infer(self.phonemize("Ready.", "en"), DEFAULT_VOICES["en"], 1.0)  # warm-up (CUDA kernels)
        log.info("torch engine ready on %s: %s@%s", device, HF_REPO, root)

    def infer(self, phonemes: str, voice: str, speed: float, stop: Stop | None = None) -> Rendered:
        """One forward pass; on a GPU it is short, so a stop takes effect before the next piece."""
        import torch
        from kokoro import KPipeline

        if not phonemes:
            return Rendered(np.zeros(0, dtype=np.float32))
        with torch.inference_mode():
            output = KPipeline.infer(self._model, phonemes, self._blends.style(voice), speed)
        durations = None if output.pred_dur is None else output.pred_dur.cpu().numpy().ravel()
        return Rendered(output.audio.float().cpu().numpy().ravel(), durations)


def _phonemes_only(g2p: Any) -> Any:
    """misaki front ends return ``(phonemes, tokens)``; the engine wants the phonemes."""

    def run(text: str) -> str:
        return g2p(text)[0] or ""

    run.name = "misaki"  # type: ignore[attr-defined]
    return run
