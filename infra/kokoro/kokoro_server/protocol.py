"""The container's wire protocol: parsing client messages and encoding server messages (version 1).

Control messages are JSON objects with an explicit ``type`` and ``"v": 1``; audio travels in binary frames with
a small header (kind byte, request id, big-endian sequence number). Keeping parsing and encoding here, free of
any I/O, lets the server, the tests and the gateway's author read one definition. PROTOCOL.md documents it.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 1
AUDIO_KIND = 0x01
MAX_REQUEST_ID_BYTES = 64
LANGUAGES = ("en", "fr", "zh", "ja")
MIN_SPEED = 0.5
MAX_SPEED = 2.0
ENCODING = "pcm_s16le"
CHANNELS = 1

_SEQUENCE = struct.Struct(">I")


class ProtocolError(Exception):
    """A client message that cannot be honoured; becomes an ``error`` message, the connection stays open."""

    def __init__(self, code: str, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


@dataclass(frozen=True)
class Synthesize:
    request_id: str
    text: str
    voice: str | None = None
    speed: float = 1.0
    language: str | None = None
    # Word timings asked for: a ``words`` message before each piece's audio.
    words: bool = False


@dataclass(frozen=True)
class Cancel:
    request_id: str


@dataclass(frozen=True)
class Close:
    pass


ClientMessage = Synthesize | Cancel | Close


@dataclass(frozen=True)
class AudioFrame:
    request_id: str
    sequence: int
    pcm: bytes


# ---------------------------------------------------------------- client -> server


def parse_client_message(data: str | bytes, *, max_text_chars: int) -> ClientMessage:
    """Parse one WebSocket frame (text or binary, the same JSON either way) into a message."""
    obj = _load_object(data)
    request_id = obj.get("request_id") if isinstance(obj.get("request_id"), str) else None
    if "type" not in obj:
        raise ProtocolError("missing_field", "field 'type' is required", request_id)
    kind = obj["type"]
    if kind not in ("synthesize", "cancel", "close"):
        raise ProtocolError("unknown_type", f"unknown message type {kind!r}", request_id)
    if obj.get("v") != PROTOCOL_VERSION or isinstance(obj.get("v"), bool):
        raise ProtocolError("bad_version", f"field 'v' must be {PROTOCOL_VERSION}, got {obj.get('v')!r}", request_id)
    if kind == "close":
        return Close()
    if kind == "cancel":
        return Cancel(_request_id(obj))
    return parse_synthesize_fields(obj, max_text_chars=max_text_chars, request_id=_request_id(obj))


def parse_synthesize_fields(obj: dict[str, Any], *, max_text_chars: int, request_id: str) -> Synthesize:
    """Validate the fields of a synthesize request (shared by the WebSocket and ``POST /invocations``)."""
    if "text" not in obj:
        raise ProtocolError("missing_field", "field 'text' is required", request_id)
    text = obj["text"]
    if not isinstance(text, str):
        raise ProtocolError("invalid_field", "field 'text' must be a string", request_id)
    if not text.strip():
        raise ProtocolError("empty_text", "field 'text' is empty", request_id)
    if len(text) > max_text_chars:
        raise ProtocolError(
            "text_too_long", f"text has {len(text)} characters, the limit is {max_text_chars}", request_id
        )
    voice = obj.get("voice")
    if voice is not None and (not isinstance(voice, str) or not voice):
        raise ProtocolError("invalid_field", "field 'voice' must be a non-empty string", request_id)
    speed = obj.get("speed", 1.0)
    if speed is None:
        speed = 1.0
    if isinstance(speed, bool) or not isinstance(speed, int | float) or not math.isfinite(speed):
        raise ProtocolError("invalid_field", "field 'speed' must be a number", request_id)
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise ProtocolError("invalid_field", f"field 'speed' must be within {MIN_SPEED}..{MAX_SPEED}", request_id)
    language = obj.get("language")
    if language is not None and language not in LANGUAGES:
        raise ProtocolError(
            "unsupported_language",
            f"language {language!r} is not supported; use one of {', '.join(LANGUAGES)} or omit it",
            request_id,
        )
    words = obj.get("words", False)
    if words is None:
        words = False
    if not isinstance(words, bool):
        raise ProtocolError("invalid_field", "field 'words' must be true or false", request_id)
    return Synthesize(request_id=request_id, text=text, voice=voice, speed=float(speed), language=language, words=words)


def _load_object(data: str | bytes) -> dict[str, Any]:
    if isinstance(data, bytes | bytearray):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("bad_json", "binary frame is not UTF-8 JSON") from None
    try:
        obj = json.loads(data, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError("bad_json", f"frame is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("bad_json", "frame must hold one JSON object")
    return obj


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _request_id(obj: dict[str, Any]) -> str:
    if "request_id" not in obj:
        raise ProtocolError("missing_field", "field 'request_id' is required")
    request_id = obj["request_id"]
    if not isinstance(request_id, str):
        raise ProtocolError("invalid_field", "field 'request_id' must be a string")
    if not 1 <= len(request_id.encode("utf-8")) <= MAX_REQUEST_ID_BYTES:
        raise ProtocolError(
            "invalid_field", f"field 'request_id' must be 1..{MAX_REQUEST_ID_BYTES} bytes of UTF-8", None
        )
    return request_id


# ---------------------------------------------------------------- server -> client


def _dump(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, "v": PROTOCOL_VERSION, **fields}, ensure_ascii=False)


def start_message(request_id: str, *, sample_rate: int, voice: str) -> str:
    return _dump(
        "start",
        request_id=request_id,
        encoding=ENCODING,
        sample_rate=sample_rate,
        channels=CHANNELS,
        voice=voice,
    )


def end_message(
    request_id: str,
    *,
    samples: int,
    sample_rate: int,
    synthesis_seconds: float,
    first_audio_seconds: float,
    chunks: int,
    queued_seconds: float = 0.0,
    stalls: int = 0,
    stall_seconds: float = 0.0,
    held_seconds: float = 0.0,
) -> str:
    return _dump(
        "end",
        request_id=request_id,
        samples=samples,
        audio_seconds=round(samples / sample_rate, 6),
        synthesis_seconds=round(synthesis_seconds, 6),
        first_audio_seconds=round(first_audio_seconds, 6),
        queued_seconds=round(queued_seconds, 6),
        chunks=chunks,
        stalls=stalls,
        stall_seconds=round(stall_seconds, 6),
        held_seconds=round(held_seconds, 6),
    )


def words_message(request_id: str, words: list[dict[str, object]]) -> str:
    """The words that end in the piece whose audio follows, timed from the request's first sample."""
    return _dump("words", request_id=request_id, words=words)


def cancelled_message(request_id: str, live: bool = True) -> str:
    """``cancelled`` for ``request_id``; ``live`` False: it had finished (or never was), nothing was stopped."""
    return _dump("cancelled", request_id=request_id, live=live)


def error_message(code: str, message: str, request_id: str | None = None) -> str:
    return _dump("error", code=code, message=message, request_id=request_id)


def busy_message(sessions: int, max_sessions: int) -> str:
    """The body of a refused handshake: every place for a session is taken."""
    return error_message("busy", f"{sessions} of {max_sessions} synthesis sessions are in use; retry shortly")


def draining_message(seconds: float) -> str:
    """The container stops within ``seconds``: no new session is taken, live requests finish (protocol 1.2)."""
    return _dump("draining", seconds=round(seconds, 3))


def draining_refusal() -> str:
    return error_message("draining", "this container is stopping and takes no new session; open one again (another container answers)")


def closed_message() -> str:
    return _dump("closed")


def encode_audio_frame(request_id: str, sequence: int, pcm: bytes) -> bytes:
    """``0x01``, id length L, L bytes of id (UTF-8), u32 big-endian sequence number, PCM s16le payload."""
    rid = request_id.encode("utf-8")
    if not 1 <= len(rid) <= MAX_REQUEST_ID_BYTES:
        raise ValueError("request id must be 1..64 bytes of UTF-8")
    return bytes((AUDIO_KIND, len(rid))) + rid + _SEQUENCE.pack(sequence) + pcm


def decode_audio_frame(frame: bytes) -> AudioFrame | None:
    """Decode a binary frame; ``None`` for a reserved frame kind, ``ValueError`` for a malformed frame."""
    if not frame:
        raise ValueError("empty binary frame")
    if frame[0] != AUDIO_KIND:
        return None
    if len(frame) < 2:
        raise ValueError("audio frame too short")
    length = frame[1]
    header = 2 + length + _SEQUENCE.size
    if not 1 <= length <= MAX_REQUEST_ID_BYTES or len(frame) < header:
        raise ValueError("audio frame header is malformed")
    request_id = frame[2 : 2 + length].decode("utf-8")
    (sequence,) = _SEQUENCE.unpack_from(frame, 2 + length)
    return AudioFrame(request_id=request_id, sequence=sequence, pcm=bytes(frame[header:]))
