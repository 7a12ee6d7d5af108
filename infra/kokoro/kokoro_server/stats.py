"""Counters of the container's requests, served at ``GET /stats``.

They let a caller check from the outside what the container is doing: that a cancelled conversation left no
work running (``active_requests`` back to 0, ``cancelled_requests`` up), and how much was synthesized.
Every request is counted once, when it ends, however it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RequestStats:
    connections: int = 0
    # Sessions refused with ``busy`` because ``max_sessions`` were already open.
    busy_refusals: int = 0
    max_sessions: int = 0
    # SIGTERM came: no new session is taken, the live ones finish (drain.py).
    draining: bool = False
    completed_requests: int = 0
    cancelled_requests: int = 0
    failed_requests: int = 0
    # The last completed request's own time to first audio, from reading its ``synthesize`` to sending its
    # first audio frame (its ``end``'s ``queued_seconds + first_audio_seconds``): what a client compares
    # with its own measure to see what the transport added, whether or not it reads ``end``'s fields.
    last_first_audio_seconds: float | None = None
    # Live requests by identity. The objects are held, not just their ids, so that an id cannot be
    # reused by a new request while the old one is counted.
    _live: dict[int, object] = field(default_factory=dict)

    def begin(self, job: object) -> None:
        """A request was accepted (queued)."""
        self._live[id(job)] = job

    def end(self, job: object, outcome: str) -> None:
        """A request ended: ``completed``, ``cancelled`` or ``failed``. Ending it again does nothing."""
        if self._live.get(id(job)) is not job:
            return
        del self._live[id(job)]
        if outcome == "completed":
            self.completed_requests += 1
        elif outcome == "cancelled":
            self.cancelled_requests += 1
        else:
            self.failed_requests += 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "connections": self.connections,
            "max_sessions": self.max_sessions,
            "busy_refusals": self.busy_refusals,
            "draining": self.draining,
            "active_requests": len(self._live),
            "completed_requests": self.completed_requests,
            "cancelled_requests": self.cancelled_requests,
            "failed_requests": self.failed_requests,
            "last_first_audio_seconds": self.last_first_audio_seconds,
        }
