"""The onnx model is joined from its PyPI parts once, by hash; pinned files are checked by hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from kokoro_server import model_files


def test_parts_are_joined_once_and_verified(tmp_path: Path) -> None:
    model = model_files.onnx_model(tmp_path)
    assert model_files.sha256_file(model) == model_files.expected_onnx_sha256()
    stamp = model.stat().st_mtime_ns
    assert model_files.onnx_model(tmp_path) == model and model.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [model_files.ONNX_MODEL_NAME]


def test_a_damaged_model_is_rebuilt(tmp_path: Path) -> None:
    model = model_files.onnx_model(tmp_path)
    with open(model, "r+b") as f:
        f.write(b"damaged")
    assert model_files.sha256_file(model_files.onnx_model(tmp_path)) == model_files.expected_onnx_sha256()


def test_pinned_files_are_checked(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    manifest = {"config.json": "0" * 64, "voices/af_heart.pt": "1" * 64}
    with pytest.raises(model_files.ModelFileError) as raised:
        model_files.verify_files(tmp_path, manifest)
    assert "config.json: sha256" in str(raised.value) and "voices/af_heart.pt: missing" in str(raised.value)
    good = {"config.json": model_files.sha256_file(tmp_path / "config.json")}
    model_files.verify_files(tmp_path, good)


def test_torch_manifest_pins_a_revision_and_every_file() -> None:
    assert len(model_files.HF_REVISION) == 40
    assert {"config.json", "kokoro-v1_0.pth", "voices/af_heart.pt"} <= set(model_files.HF_FILES)
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in model_files.HF_FILES.values())
