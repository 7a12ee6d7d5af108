"""Draining: SIGTERM (SageMaker's stop) lets live sessions finish instead of cutting them off.

A server of its own that never loads a model (a long load delay): draining is about sessions, not speech, so
the test costs a process start. The live session is told, a new one is refused ``draining``, the server keeps
running while the live one is open, and stops once it closes; one left open is cut at the drain's end.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from kokoro_server.localrun import ServerProcess


def started(tmp_path: Path, seconds: str) -> ServerProcess:
    process = ServerProcess({"KOKORO_DRAIN_SECONDS": seconds, "KOKORO_LOAD_DELAY": "3600"}, tmp_path / "server.log").start()
    process.wait_listening()
    return process


def test_sigterm_tells_live_sessions_refuses_new_ones_and_stops_when_they_end(tmp_path: Path) -> None:
    server = started(tmp_path, "20")
    assert server.process is not None

    async def scenario() -> tuple[dict, InvalidStatus, dict, float]:
        async with websockets.connect(server.ws_url) as live:
            server.process.send_signal(signal.SIGTERM)
            told = json.loads(await asyncio.wait_for(live.recv(), 5))
            with pytest.raises(InvalidStatus) as refused:
                await asyncio.wait_for(websockets.connect(server.ws_url), 2)
            stats = httpx.get(f"{server.http_url}/stats").json()
            # A second after SIGTERM the live session is still served.
            await asyncio.sleep(1.0)
            assert server.process.poll() is None, "the server stopped under a live session"
            await live.send(json.dumps({"type": "close", "v": 1}))
            closed = json.loads(await asyncio.wait_for(live.recv(), 5))
            assert closed["type"] == "closed"
        left = time.monotonic()
        return told, refused.value, stats, left

    try:
        told, refused, stats, left = asyncio.run(scenario())
        server.process.wait(timeout=10)
        stopped_after = time.monotonic() - left
    finally:
        server.stop()
    assert told["type"] == "draining" and told["v"] == 1 and told["seconds"] == 20
    assert refused.response.status_code == 503 and refused.response.headers["Retry-After"] == "1"
    body = json.loads(refused.response.body)
    assert body["type"] == "error" and body["code"] == "draining" and body["request_id"] is None
    assert stats["draining"] is True and stats["connections"] == 1
    assert stopped_after < 5, f"the server stopped {stopped_after:.1f} s after its last session ended"


def test_a_session_left_open_is_cut_when_the_drain_ends(tmp_path: Path) -> None:
    server = started(tmp_path, "1")
    assert server.process is not None

    async def scenario() -> float:
        async with websockets.connect(server.ws_url) as live:
            sent = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            assert json.loads(await asyncio.wait_for(live.recv(), 5))["type"] == "draining"
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(live.recv(), 15)
            return time.monotonic() - sent

    try:
        cut_after = asyncio.run(scenario())
        server.process.wait(timeout=15)
    finally:
        server.stop()
    assert 0.9 < cut_after < 8, f"the open session was cut {cut_after:.1f} s after SIGTERM (drain 1 s, then uvicorn's 5 s)"
