"""Admission: at most ``KOKORO_MAX_SESSIONS`` sessions at once, any other refused ``busy`` at the handshake.

A server of its own with room for two sessions; admission needs no model, so it never loads one (a long
load delay) and the test costs a process start, not a model load.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from kokoro_server.config import Settings
from kokoro_server.localrun import ServerProcess


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("kokoro-capped") / "server.log"
    process = ServerProcess({"KOKORO_MAX_SESSIONS": "2", "KOKORO_LOAD_DELAY": "3600"}, log).start()
    try:
        process.wait_listening()
        yield process
    finally:
        process.stop()


def stats(server: ServerProcess) -> dict:
    return httpx.get(f"{server.http_url}/stats").json()


def test_a_session_over_the_cap_is_refused_busy_at_once(capped: ServerProcess) -> None:
    async def scenario() -> tuple[InvalidStatus, dict, dict]:
        async with websockets.connect(capped.ws_url), websockets.connect(capped.ws_url):
            during = stats(capped)
            with pytest.raises(InvalidStatus) as refused:
                await asyncio.wait_for(websockets.connect(capped.ws_url), 2)
        await asyncio.sleep(0.2)
        # Both places are free again: a new session is admitted.
        async with websockets.connect(capped.ws_url):
            after = stats(capped)
        return refused.value, during, after

    refused, during, after = asyncio.run(scenario())
    response = refused.response
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    body = json.loads(response.body)
    assert body["type"] == "error" and body["code"] == "busy" and body["request_id"] is None
    assert "2 of 2" in body["message"]
    assert during["connections"] == 2 and during["max_sessions"] == 2
    assert after["connections"] == 1 and after["busy_refusals"] == 1


def test_the_default_cap_is_sized_to_the_machine() -> None:
    import os

    assert Settings.from_env({}).admitted_sessions == 2 * (os.cpu_count() or 1)
    assert Settings.from_env({"KOKORO_MAX_SESSIONS": "7"}).admitted_sessions == 7
