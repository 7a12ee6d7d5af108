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
from .pacing import Playout
from .protocol import Cancel, Close, ProtocolError, Synthesize
from .synthesis import Request, Synthesizer

log = logging.getLogger(__name__)

# A silence inside a sentence shorter than this is the jitter of sending, not a stall (as the gateway counts).
STALL_TOLERANCE = 0.005


class Disconnected(Exception):
    """The client is gone; nothing more can be sent."""


@dataclass
class Job:
    request: Request
    stop: Stop = field(default_factory=Stop)
    # The event loop's time when the request arrived (queued_seconds in ``end`` counts from it).
    received: float = 0.0

    @property
    def cancelled(self) -> bool:
        return self.stop.is_set()


@dataclass
class _Output:
    """What one request has sent so far."""

    request_id: str
    sample_rate: int
    started: float
    sequence: int = 0
    samples: int = 0
    first_audio: float | None = None
    # Whether audio of the sentence being spoken has been sent (a silence before the next piece is a stall).
    sentence_sent: bool = False
    stalls: int = 0
    stall_seconds: float = 0.0
    held_seconds: float = 0.0


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
        self._playout = Playout()

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
        job = Job(request, received=asyncio.get_running_loop().time())
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
        # Finished already (a short sentence on a GPU renders before a withdrawal arrives), or never had:
        # nothing to stop, and nothing wrong. The client learns it from `live`, not from an error.
        await self._send_text(protocol.cancelled_message(request_id, live=False))

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
        """Synthesizes one request; says how it ended: ``completed``, ``cancelled`` or ``failed``.

        Pieces come from the request's plan, each sized by the audio queued ahead of the listener; a rendered
        piece is sent at once unless the rest of its sentence is predicted not to keep up, in which case it
        is held (with any held before it) until the rest will play through, or the sentence is complete."""
        request, loop = job.request, asyncio.get_running_loop()
        rid = request.request_id
        started = loop.time()
        try:
            plan, timer = await self._synth.piece_plan(request)
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
        out = _Output(rid, rate, started)
        # Rendered pieces not yet sent, each with the words that end in it.
        held: list[tuple[bytes, list[dict[str, object]]]] = []
        held_seconds = 0.0
        held_since: float | None = None
        pieces = 0
        while not plan.done() and not job.cancelled:
            queued = self._playout.lead(loop.time()) + held_seconds
            planned = plan.next_piece(queued)
            try:
                rendered = await self._synth.render(request, planned.piece, job.stop)
            except Stopped:
                break
            except Exception:
                log.exception("rendering request %r failed", rid)
                await self._send_text(protocol.error_message("synthesis_failed", "the model failed on this text", rid))
                return "failed"
            pieces += 1
            log.debug(
                "request %r: piece %d of %d phonemes with %.2f s queued ahead (%s)",
                rid,
                pieces,
                len(planned.piece.phonemes),
                queued,
                "starts a sentence" if planned.starts_sentence else "inside a sentence",
            )
            pcm = rendered.pcm
            words = []
            if timer is not None:
                try:
                    timed = timer.piece(
                        planned.piece.phonemes, rendered.durations, rendered.model_samples, rendered.kept, len(pcm) // audio.SAMPLE_WIDTH
                    )
                    if plan.done():
                        timed += timer.finish()
                    words = [w.to_json() for w in timed]
                except Exception:
                    # Word timings are an extra: a failure costs the request its words, never its audio.
                    log.exception("timing the words of request %r failed; it goes on without them", rid)
                    timer = None
            held.append((pcm, words))
            held_seconds += len(pcm) / audio.SAMPLE_WIDTH / rate
            now = loop.time()
            if not planned.ends_sentence and not plan.keeps_up(self._playout.lead(now) + held_seconds, request.speed):
                held_since = now if held_since is None else held_since
                continue  # the rest of the sentence would not keep up: hold what is rendered
            if held_since is not None:
                out.held_seconds += now - held_since
                held_since = None
            for piece_pcm, piece_words in held:
                if piece_words and not job.cancelled:
                    await self._send_text(protocol.words_message(rid, piece_words))
                if not await self._send_piece(job, out, piece_pcm):
                    break
            held, held_seconds = [], 0.0
            if planned.ends_sentence:
                out.sentence_sent = False
        if job.cancelled:
            await self._send_text(protocol.cancelled_message(rid))
            return "cancelled"
        elapsed = loop.time() - started
        queued = max(0.0, started - job.received)
        self._synth.stats.last_first_audio_seconds = queued + (elapsed if out.first_audio is None else out.first_audio)
        log.debug("request %r: %d pieces, %.2f s of audio in %.2f s", rid, pieces, out.samples / rate, elapsed)
        await self._send_text(
            protocol.end_message(
                rid,
                samples=out.samples,
                sample_rate=rate,
                synthesis_seconds=elapsed,
                first_audio_seconds=elapsed if out.first_audio is None else out.first_audio,
                queued_seconds=queued,
                chunks=out.sequence,
                stalls=out.stalls,
                stall_seconds=out.stall_seconds,
                held_seconds=out.held_seconds,
            )
        )
        return "completed"

    # ------------------------------------------------------------ sending

    async def _send_piece(self, job: Job, out: _Output, pcm: bytes) -> bool:
        """Sends one piece's frames, keeping the listener's clock; a piece that is not its sentence's first
        and comes after the audio before it has played out is a stall. False if the request was cancelled."""
        loop = asyncio.get_running_loop()
        if out.sentence_sent:
            silence = self._playout.silence_before(loop.time())
            if silence > STALL_TOLERANCE:
                out.stalls += 1
                out.stall_seconds += silence
        for frame in audio.frames(pcm, self._settings.max_frame_samples):
            if job.cancelled:
                return False
            await self._send_bytes(protocol.encode_audio_frame(out.request_id, out.sequence, frame))
            samples = len(frame) // audio.SAMPLE_WIDTH
            self._playout.sent(samples / out.sample_rate, loop.time())
            out.sequence += 1
            out.samples += samples
            if out.first_audio is None:
                out.first_audio = loop.time() - out.started
        out.sentence_sent = True
        return True

    async def tell_draining(self, seconds: float) -> None:
        """The server is stopping: the client hears it, so that it opens its next requests elsewhere."""
        try:
            await self._send_text(protocol.draining_message(seconds))
        except Disconnected:
            pass

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
