"""Fixtures: one real server (onnx engine, real model) for the whole run, and small audio measures.

The server starts with a short load delay so the tests can see ``/ping`` answer 503 (and a synthesize request
answered ``not_ready``) before the model is loaded, without paying for a second server.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import websockets

from kokoro_server.localrun import ServerProcess, synthesize

# Speech from Kokoro sits around RMS 0.05..0.15 of full scale; silence is ~0.
SPEECH_RMS = 0.02 * 32768


@dataclass
class Server:
    process: ServerProcess
    first_ping: int
    early_reply: dict[str, Any] | None

    @property
    def ws_url(self) -> str:
        return self.process.ws_url

    @property
    def http_url(self) -> str:
        return self.process.http_url


async def _synthesize_while_loading(url: str) -> dict[str, Any]:
    async with websockets.connect(url) as ws:
        await ws.send(synthesize("early", "Hello."))
        return json.loads(await asyncio.wait_for(ws.recv(), 10))


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("kokoro") / "server.log"
    process = ServerProcess({"KOKORO_LOAD_DELAY": "2", "KOKORO_LOG_LEVEL": "info"}, log).start()
    try:
        first = process.wait_listening()
        early = asyncio.run(_synthesize_while_loading(process.ws_url)) if first == 503 else None
        process.wait_ready()
        yield Server(process, first, early)
    finally:
        process.stop()


def rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    return math.sqrt(float(np.mean(samples**2))) if samples.size else 0.0


def run(coro: Any) -> Any:
    return asyncio.run(coro)
