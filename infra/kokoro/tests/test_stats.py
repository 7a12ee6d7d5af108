"""``GET /stats``: every request is counted once when it ends, and a cancelled or abandoned request leaves no
active work behind."""

from __future__ import annotations

import asyncio

import httpx
import websockets
from conftest import Server, run

from kokoro_server.localrun import collect, send_requests, synthesize

LONG = "This sentence goes on for a while so that it takes some time to say. " * 4


def stats(server: Server) -> dict:
    return httpx.get(f"{server.http_url}/stats", timeout=10).json()


def wait_idle(server: Server) -> dict:
    # Up to 30 s: a loaded machine may still be abandoning an earlier piece.
    for _ in range(300):
        now = stats(server)
        if now["active_requests"] == 0:
            return now
        run(asyncio.sleep(0.1))
    return stats(server)


def test_requests_are_counted_by_how_they_end(server: Server) -> None:
    before = wait_idle(server)

    async def complete_one() -> dict:
        async with websockets.connect(server.ws_url) as ws:
            outcomes = await send_requests(ws, [("done", "Hello.", {})])
            await collect(ws, outcomes)
            return outcomes["done"].messages[-1]

    end = run(complete_one())
    after = wait_idle(server)
    assert after["completed_requests"] == before["completed_requests"] + 1
    # The last completed request's own time to first audio, as its `end` says it.
    own = end["queued_seconds"] + end["first_audio_seconds"]
    assert abs(after["last_first_audio_seconds"] - own) < 1e-5, (after, end)

    async def leave_mid_request() -> None:
        async with websockets.connect(server.ws_url) as ws:
            await ws.send(synthesize("left", LONG))
            await ws.send(synthesize("queued", LONG))
            while not isinstance(await asyncio.wait_for(ws.recv(), 30), bytes):
                pass

    run(leave_mid_request())
    gone = wait_idle(server)
    assert gone["active_requests"] == 0
    assert gone["cancelled_requests"] == after["cancelled_requests"] + 2


def test_a_client_gone_while_audio_is_being_sent_leaves_nothing_active(server: Server) -> None:
    # The client vanishes (no close handshake) at different points of the stream: whether the
    # server notices in its reader or in a failed send, every request is counted as ended.
    before = wait_idle(server)

    async def vanish_after(frames: int) -> None:
        ws = await websockets.connect(server.ws_url)
        await ws.send(synthesize("first", "Hello there, this is short."))
        await ws.send(synthesize("second", LONG))
        seen = 0
        while seen < frames:
            if isinstance(await asyncio.wait_for(ws.recv(), 30), bytes):
                seen += 1
        ws.transport.abort()

    for frames in (1, 2, 3, 5, 8, 12):
        run(vanish_after(frames))
        run(asyncio.sleep(0.3))
    after = wait_idle(server)
    assert after["active_requests"] == 0
    ended = sum(after[k] - before[k] for k in ("completed_requests", "cancelled_requests", "failed_requests"))
    assert ended == 12
