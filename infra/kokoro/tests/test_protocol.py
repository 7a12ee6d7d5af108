"""The wire format on its own: message parsing, message encoding, the audio frame header."""

from __future__ import annotations

import json
import struct

import pytest

from kokoro_server import protocol
from kokoro_server.protocol import Cancel, Close, ProtocolError, Synthesize


def parse(data: str | bytes) -> protocol.ClientMessage:
    return protocol.parse_client_message(data, max_text_chars=2000)


def test_messages_parse_from_text_or_binary_frames() -> None:
    frame = '{"type":"synthesize","v":1,"request_id":"r1","text":"Hi.","voice":"jf_alpha","speed":1.5,"language":"en"}'
    expected = Synthesize("r1", "Hi.", "jf_alpha", 1.5, "en")
    assert parse(frame) == expected
    assert parse(frame.encode()) == expected
    assert parse('{"type":"synthesize","v":1,"request_id":"r1","text":"Hi."}') == Synthesize("r1", "Hi.")
    assert parse(b'{"type":"cancel","v":1,"request_id":"r1"}') == Cancel("r1")
    assert parse('{"type":"close","v":1}') == Close()


def test_unknown_fields_are_ignored() -> None:
    assert parse('{"type":"close","v":1,"later":true}') == Close()


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ('{"type":"synthesize","v":1,"request_id":"r","text":"Hi.","speed":NaN}', "bad_json"),
        ('"just a string"', "bad_json"),
        ('{"type":"synthesize","v":true,"request_id":"r","text":"Hi."}', "bad_version"),
        ('{"type":"synthesize","v":1,"request_id":7,"text":"Hi."}', "invalid_field"),
        ('{"type":"synthesize","v":1,"request_id":"","text":"Hi."}', "invalid_field"),
        ('{"type":"synthesize","v":1,"request_id":"r","text":42}', "invalid_field"),
        ('{"type":"synthesize","v":1,"request_id":"r","text":"Hi.","speed":true}', "invalid_field"),
        ('{"type":"synthesize","v":1,"request_id":"r","text":"Hi.","speed":0.4}', "invalid_field"),
        ('{"type":"synthesize","v":1,"request_id":"r","text":"Hi.","voice":""}', "invalid_field"),
    ],
)
def test_bad_messages_name_their_error(frame: str, code: str) -> None:
    with pytest.raises(ProtocolError) as raised:
        parse(frame)
    assert raised.value.code == code


def test_text_limit_counts_characters() -> None:
    ok = json.dumps({"type": "synthesize", "v": 1, "request_id": "r", "text": "é" * 2000})
    assert isinstance(parse(ok), Synthesize)
    with pytest.raises(ProtocolError) as raised:
        parse(json.dumps({"type": "synthesize", "v": 1, "request_id": "r", "text": "é" * 2001}))
    assert raised.value.code == "text_too_long" and raised.value.request_id == "r"


def test_server_messages_carry_type_and_version() -> None:
    start = json.loads(protocol.start_message("r1", sample_rate=24000, voice="jf_alpha"))
    assert start == {
        "type": "start",
        "v": 1,
        "request_id": "r1",
        "encoding": "pcm_s16le",
        "sample_rate": 24000,
        "channels": 1,
        "voice": "jf_alpha",
    }
    end = json.loads(
        protocol.end_message(
            "r1",
            samples=36000,
            sample_rate=24000,
            synthesis_seconds=0.7,
            first_audio_seconds=0.4,
            queued_seconds=0.125,
            chunks=2,
            stalls=1,
            stall_seconds=0.25,
            held_seconds=0.5,
        )
    )
    assert end == {
        "type": "end",
        "v": 1,
        "request_id": "r1",
        "samples": 36000,
        "audio_seconds": 1.5,
        "synthesis_seconds": 0.7,
        "first_audio_seconds": 0.4,
        "queued_seconds": 0.125,
        "chunks": 2,
        "stalls": 1,
        "stall_seconds": 0.25,
        "held_seconds": 0.5,
    }
    assert json.loads(protocol.cancelled_message("r1")) == {"type": "cancelled", "v": 1, "request_id": "r1", "live": True}
    assert json.loads(protocol.cancelled_message("r1", live=False))["live"] is False
    assert json.loads(protocol.error_message("queue_full", "full", None)) == {
        "type": "error",
        "v": 1,
        "code": "queue_full",
        "message": "full",
        "request_id": None,
    }
    assert json.loads(protocol.closed_message()) == {"type": "closed", "v": 1}


def test_audio_frame_header_is_kind_length_id_big_endian_sequence() -> None:
    frame = protocol.encode_audio_frame("r1", 258, b"\x01\x00\x02\x00")
    assert frame == b"\x01\x02r1" + struct.pack(">I", 258) + b"\x01\x00\x02\x00"
    decoded = protocol.decode_audio_frame(frame)
    assert decoded == protocol.AudioFrame("r1", 258, b"\x01\x00\x02\x00")


def test_reserved_frame_kinds_are_skipped_and_malformed_frames_rejected() -> None:
    assert protocol.decode_audio_frame(b"\x02anything") is None
    for bad in (b"", b"\x01", b"\x01\x05ab", b"\x01\x00\x00\x00\x00\x00"):
        with pytest.raises(ValueError):
            protocol.decode_audio_frame(bad)
    with pytest.raises(ValueError):
        protocol.encode_audio_frame("x" * 65, 0, b"")
