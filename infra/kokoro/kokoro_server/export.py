"""Image build step of the GPU image: the production model as ONNX, made from the pinned Kokoro-82M revision.

``python -m kokoro_server.export OUT`` downloads ``hexgrad/Kokoro-82M`` at the pinned revision (every file
checked by SHA-256: ``model_files.HF_FILES``), exports the model to ONNX in full precision (the ``kokoro``
package's own ``KModelForONNX`` wrapper, weight norm folded, the iSTFT in real arithmetic as ONNX requires),
turns the voice packs into one ``voices.npz``, and writes ``manifest.json`` with the hash of each output and the
revision it came from. The onnx engine then runs it on ONNX Runtime's CUDA provider: the same engine code the
tests run on the CPU, only the provider and the weights' precision differ. It needs torch and ``kokoro``
(``requirements-export.txt``), which stay in the build stage and never reach the running image.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

from . import model_files
from .config import Settings

log = logging.getLogger(__name__)

# The longest token sequence the model takes (510 phonemes and the two boundary tokens).
CONTEXT = 512
OPSET = 20


def export(source: Path, out: Path) -> Path:
    """Exports the verified revision in ``source`` into ``out``; returns the manifest's path."""
    import torch
    from kokoro.model import KModel, KModelForONNX
    from torch.nn import utils

    model_files.verify_files(source, model_files.HF_FILES)
    out.mkdir(parents=True, exist_ok=True)
    kmodel = KModel(
        repo_id=model_files.HF_REPO,
        config=str(source / "config.json"),
        model=str(source / "kokoro-v1_0.pth"),
        disable_complex=True,
    )
    wrapper = KModelForONNX(kmodel).eval()
    for module in wrapper.modules():
        if hasattr(module, "weight_v"):
            utils.remove_weight_norm(module)
    tokens = torch.LongTensor([[0, *([1] * 32), 0]])
    style = torch.zeros(1, 256)
    speed = torch.tensor([1.0], dtype=torch.float32)
    with torch.no_grad():
        torch.onnx.export(
            wrapper,
            (tokens, style, speed),
            str(out / model_files.EXPORT_MODEL),
            input_names=["input_ids", "style", "speed"],
            output_names=["waveform", "duration"],
            dynamic_axes={"input_ids": {1: "tokens"}, "waveform": {0: "samples"}},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    voices = {
        name: torch.load(source / "voices" / f"{name}.pt", weights_only=True).float().numpy()
        for name in model_files.HF_VOICE_NAMES
    }
    with open(out / model_files.EXPORT_VOICES, "wb") as f:
        np.savez(f, **voices)
    return model_files.write_export_manifest(out, source=f"{model_files.HF_REPO}@{model_files.HF_REVISION}")


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if len(argv) != 1:
        print("usage: python -m kokoro_server.export OUT_DIR", file=sys.stderr)
        return 2
    source = Settings.from_env().torch_model_dir
    model_files.download_hf_files(source)
    manifest = export(source, Path(argv[0]))
    print(f"export: {model_files.HF_REPO}@{model_files.HF_REVISION} exported to ONNX, {manifest} written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
