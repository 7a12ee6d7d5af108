"""One WebSocket connection: its bounded request queue, cancellation, and the order of what it sends.

A connection runs two tasks. The reader parses every frame (text or binary), answers bad input with an
``error`` and keeps going, queues requests and applies ``cancel``/``close`` at once. The worker takes requests
in order and streams each piece's audio as soon as it is rendered. Every accepted request ends with exactly
one of ``end``, ``cancelled`` or ``error``. Cancelling a running request, or a client going away, stops it:
the piece in flight is abandoned where the engine allows it (onnx does) and no further piece is started.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field

from starlette.websockets import WebSocket, WebSocketDisconnect

from . import audio, protocol
from .engines import Stop, Stopped
from .protocol import Cancel, Close, ProtocolError, Synthesize
from .synthesis import Request, Synthesizer

log = logging.getLogger(__name__)


class Disconnected(Exception):
    """The client is gone; nothing more can be sent."""


@dataclass
class Job:
    request: Request
    stop: Stop = field(default_factory=Stop)

    @property
    def cancelled(self) -> bool:
        return self.stop.is_set()


class Session:
    def __init__(self, websocket: WebSocket, synthesizer: Synthesizer) -> None:
        self._ws = websocket
        self._synth = synthesizer
        self._settings = synthesizer.settings
        self._queue: deque[Job] = deque()
        self._current: Job | None = None
        self._wakeup = asyncio.Event()
        self._closing = False
        self._send_lock = asyncio.Lock()

    async def run(self) -> None:
        await self._ws.accept()
        reader = asyncio.create_task(self._read_loop(), name="kokoro-reader")
        worker = asyncio.create_task(self._work_loop(), name="kokoro-worker")
        try:
            done, _ = await asyncio.wait({reader, worker}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and not isinstance(task.exception(), Disconnected | None):
                    log.error("connection task %s failed", task.get_name(), exc_info=task.exception())
            if worker in done and not worker.cancelled() and worker.exception() is None:
                # The client asked to close and the queue has drained.
                reader.cancel()
                await self._send_text(protocol.closed_message())
                await self._ws.close(code=1000)
        except (Disconnected, RuntimeError, OSError):
            pass  # the client left first
        finally:
            for job in [*self._queue, *([self._current] if self._current is not None else [])]:
                self._synth.stats.end(job, "cancelled")
            if self._current is not None:
                self._current.stop.set()  # the client is gone: abandon the piece in flight
            for task in (reader, worker):
                task.cancel()
            await asyncio.gather(reader, worker, return_exceptions=True)

    # ------------------------------------------------------------ reading

    async def _read_loop(self) -> None:
        while True:
            message = await self._ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            try:
                await self._handle(protocol.parse_client_message(data, max_text_chars=self._settings.max_text_chars))
            except ProtocolError as exc:
                await self._send_text(protocol.error_message(exc.code, exc.message, exc.request_id))

    async def _handle(self, message: protocol.ClientMessage) -> None:
        if isinstance(message, Synthesize):
            self._enqueue(message)
        elif isinstance(message, Cancel):
            await self._cancel(message.request_id)
        elif isinstance(message, Close):
            self._closing = True
            self._wakeup.set()

    def _enqueue(self, message: Synthesize) -> None:
        rid = message.request_id
        if self._closing:
            raise ProtocolError("session_closing", "the session is closing; no new requests", rid)
        if rid in self._live_ids():
            raise ProtocolError("duplicate_request_id", f"request {rid!r} is already queued or running", rid)
        request = self._synth.resolve(message)
        if len(self._queue) >= self._settings.queue_size:
            raise ProtocolError("queue_full", f"{len(self._queue)} requests are already queued", rid)
        job = Job(request)
        self._queue.append(job)
        self._synth.stats.begin(job)
        self._wakeup.set()

    async def _cancel(self, request_id: str) -> None:
        for job in self._queue:
            if job.request.request_id == request_id:
                self._queue.remove(job)
                self._synth.stats.end(job, "cancelled")
                await self._send_text(protocol.cancelled_message(request_id))
                return
        if self._current is not None and self._current.request.request_id == request_id:
            self._current.stop.set()  # the worker answers once the running piece stops
            return
        raise ProtocolError("unknown_request", f"no queued or running request {request_id!r}", request_id)

    def _live_ids(self) -> set[str]:
        ids = {job.request.request_id for job in self._queue}
        if self._current is not None:
            ids.add(self._current.request.request_id)
        return ids

    # ------------------------------------------------------------ synthesizing

    async def _work_loop(self) -> None:
        while True:
            while not self._queue:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
            job = self._current = self._queue.popleft()
            outcome = "failed"
            try:
                outcome = await self._synthesize(job)
            except (asyncio.CancelledError, Disconnected):
                outcome = "cancelled"  # the client went away while the request ran
                raise
            finally:
                # Counted here whichever way the request ended, so that none stays active.
                self._synth.stats.end(job, outcome)
                self._current = None

    async def _synthesize(self, job: Job) -> str:
        """Synthesizes one request; says how it ended: ``completed``, ``cancelled`` or ``failed``."""
        request, loop = job.request, asyncio.get_running_loop()
        rid = request.request_id
        started = loop.time()
        try:
            pieces = await self._synth.plan(request)
        except ProtocolError as exc:
            await self._send_text(protocol.error_message(exc.code, exc.message, rid))
            return "failed"
        except Exception:
            log.exception("planning request %r failed", rid)
            await self._send_text(protocol.error_message("synthesis_failed", "could not phonemize the text", rid))
            return "failed"
        if job.cancelled:
            await self._send_text(protocol.cancelled_message(rid))
            return "cancelled"
        rate = self._synth.sample_rate
        await self._send_text(protocol.start_message(rid, sample_rate=rate, voice=request.voice))
        sequence = samples = 0
        first_audio: float | None = None
        for piece in pieces:
            if job.cancelled:
                break
            try:
                pcm = await self._synth.render(request, piece, job.stop)
            except Stopped:
                break
            except Exception:
                log.exception("rendering request %r failed", rid)
                await self._send_text(protocol.error_message("synthesis_failed", "the model failed on this text", rid))
                return "failed"
            for frame in audio.frames(pcm, self._settings.max_frame_samples):
                if job.cancelled:
                    break
                await self._send_bytes(protocol.encode_audio_frame(rid, sequence, frame))
                sequence += 1
                samples += len(frame) // audio.SAMPLE_WIDTH
                if first_audio is None:
                    first_audio = loop.time() - started
        if job.cancelled:
            await self._send_text(protocol.cancelled_message(rid))
            return "cancelled"
        elapsed = loop.time() - started
        log.debug("request %r: %d pieces, %.2f s of audio in %.2f s", rid, len(pieces), samples / rate, elapsed)
        await self._send_text(
            protocol.end_message(
                rid,
                samples=samples,
                sample_rate=rate,
                synthesis_seconds=elapsed,
                first_audio_seconds=elapsed if first_audio is None else first_audio,
                chunks=sequence,
            )
        )
        return "completed"

    # ------------------------------------------------------------ sending

    async def _send_text(self, text: str) -> None:
        await self._send(text)

    async def _send_bytes(self, data: bytes) -> None:
        await self._send(data)

    async def _send(self, data: str | bytes) -> None:
        """One frame at a time (reader and worker both send); a failed send means the client is gone."""
        async with self._send_lock:
            try:
                if isinstance(data, str):
                    await self._ws.send_text(data)
                else:
                    await self._ws.send_bytes(data)
            except (WebSocketDisconnect, RuntimeError, OSError) as exc:
                raise Disconnected() from exc
