"""Engine selection by configuration: clear failures, and the onnx path never importing torch."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kokoro_server.config import APP_ROOT, ConfigError, Settings
from kokoro_server.engines import EngineUnavailable, create_engine


def start_server(env: dict[str, str], extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    if extra_path is not None:
        full["PYTHONPATH"] = str(extra_path)
    return subprocess.run(
        [sys.executable, "-m", "kokoro_server"], cwd=APP_ROOT, env=full, capture_output=True, text=True, timeout=60
    )


def test_settings_come_from_the_environment() -> None:
    settings = Settings.from_env({"KOKORO_ENGINE": "TORCH", "KOKORO_PORT": "9000", "KOKORO_QUEUE_SIZE": "4"})
    assert (settings.engine, settings.port, settings.queue_size) == ("torch", 9000, 4)
    assert Settings.from_env({}).port == 8080


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KOKORO_ENGINE", "tensorflow"),
        ("KOKORO_PORT", "eighty"),
        ("KOKORO_QUEUE_SIZE", "0"),
        ("KOKORO_ORT_SPINNING", "maybe"),
        ("KOKORO_ORT_DYNAMIC_BLOCK_BASE", "-1"),
        ("KOKORO_ORT_DYNAMIC_BLOCK_BASE", "many"),
    ],
)
def test_bad_settings_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value})


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed here")
def test_torch_engine_without_torch_fails_clearly() -> None:
    with pytest.raises(EngineUnavailable, match=r"requirements-torch\.txt"):
        create_engine(Settings(engine="torch"))
    result = start_server({"KOKORO_ENGINE": "torch"})
    assert result.returncode == 2
    assert "KOKORO_ENGINE=torch needs torch" in result.stderr


def test_bad_configuration_stops_the_server_at_once() -> None:
    result = start_server({"KOKORO_QUEUE_SIZE": "lots"})
    assert result.returncode == 2 and "KOKORO_QUEUE_SIZE" in result.stderr
    result = start_server({"KOKORO_DEFAULT_VOICE": "af_heart"})
    assert result.returncode == 2 and "KOKORO_DEFAULT_VOICE" in result.stderr


def test_the_onnx_path_never_imports_torch(tmp_path: Path) -> None:
    # A torch that refuses to be imported: any import of it on the onnx path fails this test.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('the onnx engine imported torch')\n")
    code = (
        "from kokoro_server.config import Settings\n"
        "from kokoro_server.engines import create_engine\n"
        "from kokoro_server.server import create_app\n"
        "from kokoro_server.synthesis import Synthesizer\n"
        "s = Settings(engine='onnx'); e = create_engine(s); e.load(); create_app(Synthesizer(e, s))\n"
        "import sys; assert 'torch' not in sys.modules\n"
        "print(len(e.infer(e.plan('Hi.', 'en')[0].phonemes, 'jf_alpha', 1.0).audio))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=APP_ROOT,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}:{APP_ROOT}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) > 0


@pytest.mark.parametrize(("variable", "kinds"), [(None, ("0", "1")), ("on", ("1", None)), ("0", ("0", None))])
def test_onnx_threads_spin_within_a_run_only_as_configured_and_stop_when_it_returns(variable: str | None, kinds: tuple) -> None:
    # auto (the default): a session whose threads sleep between sections and one whose threads spin, both
    # stopping at the end of a run; on and off (or a boolean, as the variable was before auto): one session.
    from kokoro_server.engines.onnx_engine import OnnxEngine

    env = {} if variable is None else {"KOKORO_ORT_SPINNING": variable}
    engine = OnnxEngine(Settings.from_env(env))
    engine.load()
    sessions = (engine._session, engine._spinning)  # noqa: SLF001 (the sessions as onnxruntime holds them)

    def entry(session: object, key: str) -> str | None:
        return None if session is None else session.get_session_options().get_session_config_entry(key)  # type: ignore[attr-defined]

    assert tuple(entry(s, "session.intra_op.allow_spinning") for s in sessions) == kinds
    assert all(entry(s, "session.force_spinning_stop") == "1" for s in sessions if s is not None)


@pytest.mark.parametrize(("variable", "base"), [(None, None), ("0", None), ("4", "4")])
def test_onnx_threads_take_dynamic_blocks_as_configured(variable: str | None, base: str | None) -> None:
    # Off by default (onnxruntime's fixed split: no entry); N cuts each operator's loop into shrinking blocks
    # that whichever thread is free takes. Both sessions of auto alike, and either renders a sentence.
    from kokoro_server.engines.onnx_engine import OnnxEngine

    env = {} if variable is None else {"KOKORO_ORT_DYNAMIC_BLOCK_BASE": variable}
    engine = OnnxEngine(Settings.from_env(env))
    engine.load()
    for session in (engine._session, engine._spinning):  # noqa: SLF001 (the sessions as onnxruntime holds them)
        assert session is not None
        options = session.get_session_options()
        if base is None:
            with pytest.raises(RuntimeError, match="session.dynamic_block_base"):
                options.get_session_config_entry("session.dynamic_block_base")
        else:
            assert options.get_session_config_entry("session.dynamic_block_base") == base
    assert engine.infer(engine.phonemize("Sure.", "en"), engine.default_voice("en"), 1.0).audio.size > 0
