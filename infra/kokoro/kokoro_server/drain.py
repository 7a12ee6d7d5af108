"""Stopping without cutting anyone off: what the container does between SIGTERM and its exit.

SageMaker stops a container (scale-in, a new deployment) with SIGTERM and kills it 30 seconds later. uvicorn's
own answer to SIGTERM closes every WebSocket at once (code 1012), which would cut a conversation mid-sentence.
Instead, the first SIGTERM starts a drain:

- a new session is refused at the handshake (503, an ``error`` with code ``draining``), so the client opens
  it again and SageMaker routes it to a container that is not stopping;
- each live session is told (``{"type": "draining", "seconds": …}``), so its client can open its next
  requests on a new stream, and its requests in flight go on to their end;
- the server stops once no session is left, or after ``KOKORO_DRAIN_SECONDS`` (the SageMaker images set
  20, so that uvicorn's own 5-second shutdown still ends before SageMaker's kill; 0, the default for local
  runs, stops as soon as the sessions are told).

A second SIGTERM, or SIGINT, stops at once as uvicorn does.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

if TYPE_CHECKING:
    from .session import Session
    from .stats import RequestStats

log = logging.getLogger(__name__)


class Drain:
    """The live sessions, and whether the server is stopping."""

    def __init__(self, stats: RequestStats) -> None:
        self.stats = stats
        self.sessions: set[Session] = set()

    @property
    def draining(self) -> bool:
        return self.stats.draining

    async def run(self, seconds: float) -> None:
        """Tells every live session, then waits for the last to end, or ``seconds`` at most."""
        self.stats.draining = True
        log.info("draining: %d live session(s), stopping within %.0f s", len(self.sessions), seconds)
        await asyncio.gather(*(s.tell_draining(seconds) for s in list(self.sessions)), return_exceptions=True)
        deadline = time.monotonic() + seconds
        while self.stats.connections > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.stats.connections > 0:
            log.warning("draining: %d session(s) still open after %.0f s; stopping", self.stats.connections, seconds)
        else:
            log.info("draining: every session ended; stopping")


class DrainingServer(uvicorn.Server):
    """uvicorn's server, with SIGTERM starting a drain (above) before its own shutdown."""

    def __init__(self, config: uvicorn.Config, drain: Drain, seconds: float) -> None:
        super().__init__(config)
        self._drain = drain
        self._seconds = seconds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining: asyncio.Task[None] | None = None

    async def serve(self, sockets=None) -> None:  # type: ignore[no-untyped-def]
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM and self._draining is None and not self.should_exit and self._loop is not None:
            # A signal handler runs between the loop's steps on its own thread: schedule the drain on the loop.
            self._loop.call_soon_threadsafe(self._start)
            return
        super().handle_exit(sig, frame)

    def _start(self) -> None:
        async def drain_then_stop() -> None:
            await self._drain.run(self._seconds)
            self.should_exit = True

        self._draining = asyncio.get_running_loop().create_task(drain_then_stop(), name="kokoro-drain")
