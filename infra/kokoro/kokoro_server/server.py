"""The HTTP and WebSocket routes of the container (Starlette), as SageMaker's streaming contract names them.

``GET /ping`` answers 200 once the model is loaded (503 before), ``GET /voices`` lists the engine's voices,
``GET /stats`` counts the requests (active, completed, cancelled, failed) and the sessions (open, admitted at
most, refused ``busy``),
``WebSocket /invocations-bidirectional-stream`` runs a streaming session and ``POST /invocations`` answers
one request with one WAV or raw PCM body. The model loads in the background, so the port is up at once.
At most ``KOKORO_MAX_SESSIONS`` WebSocket sessions run at once; the handshake of any other is answered 503
with a ``busy`` error body and ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from . import audio, protocol
from .drain import Drain
from .protocol import ProtocolError
from .session import Session
from .synthesis import Synthesizer

log = logging.getLogger(__name__)

_PCM_TYPES = ("audio/pcm", "application/octet-stream")
_STATUS = {"not_ready": 503, "synthesis_failed": 500}


def _terminate() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def create_app(synthesizer: Synthesizer, on_load_failure: Callable[[], None] = _terminate) -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async def load() -> None:
            try:
                await synthesizer.load()
            except Exception:
                on_load_failure()

        task = asyncio.create_task(load())
        try:
            yield
        finally:
            task.cancel()
            synthesizer.shutdown()

    async def ping(request: Request) -> Response:
        if synthesizer.ready:
            return JSONResponse(
                {
                    "status": "ok",
                    "engine": synthesizer.engine.name,
                    "device": synthesizer.engine.device,
                    "load_seconds": synthesizer.load_seconds,
                }
            )
        status = "failed" if synthesizer.load_error else "loading"
        return JSONResponse({"status": status, "error": synthesizer.load_error}, status_code=503)

    async def voices(request: Request) -> Response:
        engine = synthesizer.engine
        return JSONResponse(
            {
                "engine": engine.name,
                "sample_rate": engine.sample_rate,
                "encoding": protocol.ENCODING,
                "channels": protocol.CHANNELS,
                "languages": list(protocol.LANGUAGES),
                # Which front end reads each language (espeak-ng, misaki, pyopenjtalk), once loaded.
                "front_ends": engine.front_ends(),
                "default_voices": {lang: engine.default_voice(lang) for lang in protocol.LANGUAGES},
                "voices": [{"name": v.name, "language": v.language, "gender": v.gender} for v in engine.voices()],
            }
        )

    async def stats(request: Request) -> Response:
        return JSONResponse(synthesizer.stats.snapshot())

    synthesizer.stats.max_sessions = synthesizer.settings.admitted_sessions
    drain = Drain(synthesizer.stats)

    async def bidirectional_stream(websocket: WebSocket) -> None:
        # Admission is decided before the handshake completes, so that a client learns "busy" at once and
        # from the HTTP status (503 with Retry-After), before it has sent anything. The check and the count
        # happen with no await between them, so two handshakes cannot both take the last place.
        stats = synthesizer.stats
        if drain.draining:
            await websocket.send_denial_response(
                Response(protocol.draining_refusal(), status_code=503, media_type="application/json", headers={"Retry-After": "1"})
            )
            return
        if stats.connections >= stats.max_sessions:
            stats.busy_refusals += 1
            body = protocol.busy_message(stats.connections, stats.max_sessions)
            await websocket.send_denial_response(
                Response(body, status_code=503, media_type="application/json", headers={"Retry-After": "1"})
            )
            return
        stats.connections += 1
        session = Session(websocket, synthesizer)
        drain.sessions.add(session)
        try:
            await session.run()
        finally:
            drain.sessions.discard(session)
            stats.connections -= 1

    async def invocations(request: Request) -> Response:
        try:
            return await _invoke(request, synthesizer)
        except ProtocolError as exc:
            return JSONResponse(
                {
                    "type": "error",
                    "v": protocol.PROTOCOL_VERSION,
                    "code": exc.code,
                    "message": exc.message,
                    "request_id": exc.request_id,
                },
                status_code=_STATUS.get(exc.code, 400),
            )

    app = Starlette(
        routes=[
            Route("/ping", ping, methods=["GET"]),
            Route("/voices", voices, methods=["GET"]),
            Route("/stats", stats, methods=["GET"]),
            Route("/invocations", invocations, methods=["POST"]),
            WebSocketRoute("/invocations-bidirectional-stream", bidirectional_stream),
        ],
        lifespan=lifespan,
    )
    app.state.drain = drain
    return app


async def _invoke(request: Request, synthesizer: Synthesizer) -> Response:
    """One request, one answer: WAV by default, raw PCM s16le when asked (``format`` field or Accept)."""
    try:
        body = await request.json()
    except ValueError:
        raise ProtocolError("bad_json", "request body is not JSON") from None
    if not isinstance(body, dict):
        raise ProtocolError("bad_json", "request body must be one JSON object")
    request_id = body.get("request_id", "invocation")
    if not isinstance(request_id, str):
        raise ProtocolError("invalid_field", "field 'request_id' must be a string")
    output = _output_format(body.get("format"), request.headers.get("accept", ""), request_id)
    message = protocol.parse_synthesize_fields(
        body, max_text_chars=synthesizer.settings.max_text_chars, request_id=request_id
    )
    job = synthesizer.resolve(message)
    pcm = bytearray()
    try:
        for piece in await synthesizer.plan(job):
            if await request.is_disconnected():
                return Response(status_code=499)
            pcm += (await synthesizer.render(job, piece)).pcm
    except ProtocolError:
        raise
    except Exception:
        log.exception("one-shot request %r failed", request_id)
        raise ProtocolError("synthesis_failed", "the model failed on this text", request_id) from None
    headers = {
        "X-Kokoro-Voice": job.voice,
        "X-Kokoro-Sample-Rate": str(synthesizer.sample_rate),
        "X-Kokoro-Samples": str(len(pcm) // audio.SAMPLE_WIDTH),
    }
    if output == "pcm":
        return Response(bytes(pcm), media_type="audio/pcm", headers=headers)
    return Response(audio.wav(bytes(pcm), synthesizer.sample_rate), media_type="audio/wav", headers=headers)


def _output_format(field: object, accept: str, request_id: str) -> str:
    if field is not None:
        if field not in ("wav", "pcm"):
            raise ProtocolError("invalid_field", "field 'format' must be 'wav' or 'pcm'", request_id)
        return str(field)
    accepted = [part.split(";")[0].strip().lower() for part in accept.split(",")]
    return "pcm" if any(a in _PCM_TYPES for a in accepted) else "wav"
