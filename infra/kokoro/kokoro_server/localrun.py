"""Run the server as a child process on a free local port and talk to it as a client would.

Shared by the tests and ``measure.py``: both need the real server (real model, real sockets) rather than an
in-process stand-in, and both need to collect a request's messages and audio frames with their arrival times.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import APP_ROOT
from .protocol import AudioFrame, decode_audio_frame


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``python -m kokoro_server`` with the given environment, its output kept in a log file."""

    def __init__(self, env: dict[str, str] | None = None, log_path: Path | None = None) -> None:
        self.port = free_port()
        self.env = {**os.environ, "KOKORO_ENGINE": "onnx", "KOKORO_HOST": "127.0.0.1", **(env or {})}
        self.env["KOKORO_PORT"] = str(self.port)
        self.log_path = log_path or Path(os.devnull)
        self.process: subprocess.Popen[bytes] | None = None
        self.ping_statuses: list[int] = []

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/invocations-bidirectional-stream"

    def start(self) -> ServerProcess:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kokoro_server"],
            cwd=APP_ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        return self

    def ping(self) -> int | None:
        """``/ping``'s status code, or ``None`` while nothing listens."""
        try:
            with urllib.request.urlopen(f"{self.http_url}/ping", timeout=2) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except OSError:
            return None

    def wait_listening(self, timeout: float = 30.0) -> int:
        """Wait for the port to answer; returns the first ``/ping`` status seen."""
        return self._poll(lambda status: status is not None, timeout)

    def wait_ready(self, timeout: float = 120.0) -> None:
        self._poll(lambda status: status == 200, timeout)

    def _poll(self, done: Any, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}; see {self.log_path}")
            status = self.ping()
            if status is not None:
                self.ping_statuses.append(status)
            if done(status):
                return int(status)  # type: ignore[arg-type]
            time.sleep(0.05)
        raise TimeoutError(f"server not ready after {timeout} s; see {self.log_path}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if hasattr(self, "_log"):
            self._log.close()


def synthesize(request_id: str, text: str, **fields: Any) -> str:
    return json.dumps({"type": "synthesize", "v": 1, "request_id": request_id, "text": text, **fields})


@dataclass
class Outcome:
    """Everything one request got back, with arrival times relative to when it was sent."""

    request_id: str
    sent_at: float
    messages: list[dict[str, Any]] = field(default_factory=list)
    frames: list[AudioFrame] = field(default_factory=list)
    frame_times: list[float] = field(default_factory=list)
    end_time: float | None = None

    @property
    def terminal(self) -> dict[str, Any] | None:
        last = self.messages[-1] if self.messages else None
        return last if last and last["type"] in ("end", "cancelled", "error") else None

    @property
    def pcm(self) -> bytes:
        return b"".join(f.pcm for f in self.frames)


async def collect(
    ws: Any, outcomes: dict[str, Outcome], *, timeout: float = 120.0, order: list[tuple[str, str]] | None = None
) -> list[Any]:
    """Read until every outcome has its terminal message; returns messages that belong to no request.

    ``order`` receives ``(kind, request_id)`` for every message and audio frame, in arrival order.
    """
    others: list[Any] = []
    order = [] if order is None else order
    deadline = time.perf_counter() + timeout
    while any(o.terminal is None for o in outcomes.values()):
        raw = await asyncio.wait_for(ws.recv(), timeout=max(0.1, deadline - time.perf_counter()))
        now = time.perf_counter()
        if isinstance(raw, bytes):
            frame = decode_audio_frame(raw)
            if frame is None:
                continue
            order.append(("audio", frame.request_id))
            outcome = outcomes[frame.request_id]
            outcome.frames.append(frame)
            outcome.frame_times.append(now - outcome.sent_at)
            continue
        message = json.loads(raw)
        rid = message.get("request_id")
        order.append((message["type"], rid))
        if rid in outcomes:
            outcomes[rid].messages.append(message)
            if outcomes[rid].terminal is not None:
                outcomes[rid].end_time = now - outcomes[rid].sent_at
        else:
            others.append(message)
    return others


async def send_requests(ws: Any, requests: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Outcome]:
    """Send synthesize requests (id, text, extra fields) and return their empty outcomes, in order."""
    outcomes: dict[str, Outcome] = {}
    for rid, text, extra in requests:
        outcomes[rid] = Outcome(rid, time.perf_counter())
        await ws.send(synthesize(rid, text, **extra))
    return outcomes
