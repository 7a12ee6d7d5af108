"""Command line entry: ``python -m kokoro_server [serve]`` starts the server with settings from the environment.

SageMaker starts a container as ``docker run IMAGE serve``, so ``serve`` is accepted (and is the default).
SIGTERM drains the live sessions before the server stops (``drain.py``).
Bad configuration, or an engine this installation cannot run, stops the process at once with exit code 2;
a model that fails to load stops it with exit code 1.
"""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn

from .config import ConfigError, Settings
from .drain import DrainingServer
from .engines import EngineUnavailable, create_engine
from .server import create_app
from .synthesis import Synthesizer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kokoro_server", description="Kokoro TTS streaming server")
    parser.add_argument("command", nargs="?", default="serve", choices=["serve"])
    parser.parse_args(argv)
    try:
        settings = Settings.from_env()
        synthesizer = Synthesizer(create_engine(settings), settings)
    except (ConfigError, EngineUnavailable) as exc:
        print(f"kokoro: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    logging.getLogger("kokoro_server").info(
        "starting %s engine on %s:%d (load in background)", settings.engine, settings.host, settings.port
    )
    app = create_app(synthesizer)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level=settings.log_level, timeout_graceful_shutdown=5)
    # SIGTERM drains (kokoro_server/drain.py) before uvicorn's own shutdown.
    DrainingServer(config, app.state.drain, settings.drain_seconds).run()
    return 1 if synthesizer.load_error else 0


if __name__ == "__main__":
    sys.exit(main())
