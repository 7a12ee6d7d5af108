"""End-to-end tests of the running server: real model, real sockets, a real WebSocket client."""

from __future__ import annotations

import asyncio
import io
import json
import time
import urllib.request
import wave

import httpx
import pytest
import websockets
from conftest import SPEECH_RMS, Server, rms, run

from kokoro_server.localrun import Outcome, collect, send_requests, synthesize
from kokoro_server.protocol import decode_audio_frame

LONG = (
    "Speech starts as soon as the first sentence is ready. The second sentence follows while the first one "
    "plays. A third sentence keeps the stream going. Then a fourth sentence arrives from the agent. The fifth "
    "sentence closes this paragraph."
)
CLOSE = json.dumps({"type": "close", "v": 1})


def cancel(rid: str) -> str:
    return json.dumps({"type": "cancel", "v": 1, "request_id": rid})


async def next_json(ws: websockets.ClientConnection, timeout: float = 30) -> dict:
    """The next text message, skipping audio frames."""
    while True:
        raw = await asyncio.wait_for(ws.recv(), timeout)
        if isinstance(raw, str):
            return json.loads(raw)


def assert_complete(outcome: Outcome) -> None:
    """start, audio frames numbered 0.., end whose counts match the audio that arrived."""
    types = [m["type"] for m in outcome.messages]
    assert types == ["start", "end"], outcome.messages
    start, end = outcome.messages
    assert start["encoding"] == "pcm_s16le" and start["sample_rate"] == 24000 and start["channels"] == 1
    assert [f.sequence for f in outcome.frames] == list(range(len(outcome.frames)))
    samples = len(outcome.pcm) // 2
    assert end["samples"] == samples > 0
    assert end["audio_seconds"] == pytest.approx(samples / 24000, abs=1e-5)
    assert end["chunks"] == len(outcome.frames)
    assert 0 < end["first_audio_seconds"] <= end["synthesis_seconds"]
    assert end["queued_seconds"] >= 0
    assert rms(outcome.pcm) > SPEECH_RMS


def test_ping_is_503_while_loading_then_200(server: Server) -> None:
    assert server.first_ping == 503
    assert server.early_reply is not None
    assert server.early_reply["type"] == "error" and server.early_reply["code"] == "not_ready"
    assert server.early_reply["request_id"] == "early"
    assert server.process.ping() == 200
    with urllib.request.urlopen(f"{server.http_url}/ping", timeout=5) as response:
        assert json.load(response)["device"] == "cpu", "ping says where inference runs"


def test_voices_are_listed_with_stable_names(server: Server) -> None:
    body = httpx.get(f"{server.http_url}/voices").json()
    assert body["engine"] == "onnx" and body["sample_rate"] == 24000
    names = [v["name"] for v in body["voices"]]
    assert names == ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]
    assert body["default_voices"]["en"] == "jf_alpha"
    # It says plainly which front end reads each language (misaki's Chinese one where installed).
    from kokoro_server.phonemes import misaki_chinese_available

    assert body["front_ends"] == {"en": "espeak-ng", "fr": "espeak-ng", "zh": "misaki" if misaki_chinese_available() else "espeak-ng", "ja": "pyopenjtalk"}


def test_a_blend_of_two_voices_speaks_in_a_third_and_an_unknown_part_is_refused(server: Server) -> None:
    async def scenario() -> dict[str, Outcome]:
        async with websockets.connect(server.ws_url) as ws:
            outcomes = await send_requests(
                ws,
                [
                    ("a", "Hello there.", {"voice": "jf_alpha"}),
                    ("k", "Hello there.", {"voice": "jm_kumo"}),
                    ("ak", "Hello there.", {"voice": "jf_alpha(0.500)+jm_kumo(0.500)"}),
                    ("bad", "Hello there.", {"voice": "jf_alpha+af_nobody"}),
                ],
            )
            await collect(ws, outcomes)
        return outcomes

    outcomes = run(scenario())
    for rid in ("a", "k", "ak"):
        assert_complete(outcomes[rid])
    assert outcomes["ak"].messages[0]["voice"] == "jf_alpha(0.500)+jm_kumo(0.500)"
    blend, alpha, kumo = outcomes["ak"].pcm, outcomes["a"].pcm, outcomes["k"].pcm
    assert blend != alpha and blend != kumo, "a voice of its own"
    assert outcomes["bad"].terminal["type"] == "error" and outcomes["bad"].terminal["code"] == "unknown_voice"


def test_three_requests_get_speech_in_order(server: Server) -> None:
    async def scenario() -> tuple[dict[str, Outcome], list[tuple[str, str]]]:
        order: list[tuple[str, str]] = []
        async with websockets.connect(server.ws_url) as ws:
            outcomes = await send_requests(
                ws,
                [
                    ("r1", "Hello there.", {}),
                    ("r2", "Bonjour à tous.", {"language": "fr", "voice": "jm_kumo"}),
                    ("r3", "こんにちは。", {"speed": 1.2}),
                ],
            )
            await collect(ws, outcomes, order=order)
        return outcomes, order

    outcomes, order = run(scenario())
    for outcome in outcomes.values():
        assert_complete(outcome)
    assert outcomes["r2"].messages[0]["voice"] == "jm_kumo"
    assert outcomes["r1"].messages[0]["voice"] == "jf_alpha"
    # Each request's messages come as one block, in the order the requests were sent.
    blocks = [rid for i, (_, rid) in enumerate(order) if i == 0 or order[i - 1][1] != rid]
    assert blocks == ["r1", "r2", "r3"]


def test_text_and_binary_frames_are_both_accepted(server: Server) -> None:
    async def scenario() -> tuple[dict[str, Outcome], dict]:
        async with websockets.connect(server.ws_url) as ws:
            outcomes = {"t": Outcome("t", time.perf_counter()), "b": Outcome("b", time.perf_counter())}
            await ws.send(synthesize("t", "Text frame."))
            await ws.send(synthesize("b", "Binary frame.").encode())
            await collect(ws, outcomes)
            await ws.send(CLOSE.encode())
            closed = await next_json(ws)
        return outcomes, closed

    outcomes, closed = run(scenario())
    assert_complete(outcomes["t"])
    assert_complete(outcomes["b"])
    assert closed == {"type": "closed", "v": 1}


def test_close_lets_queued_requests_finish_then_closes(server: Server) -> None:
    async def scenario() -> tuple[list[str], int | None]:
        async with websockets.connect(server.ws_url) as ws:
            await ws.send(synthesize("a", "First."))
            await ws.send(synthesize("b", "Second."))
            await ws.send(CLOSE)
            await ws.send(synthesize("c", "Too late."))
            types = []
            async for raw in ws:
                if isinstance(raw, str):
                    message = json.loads(raw)
                    code = f":{message['code']}" if message["type"] == "error" else ""
                    types.append(f"{message['type']}:{message.get('request_id')}{code}")
            return types, ws.close_code

    types, code = run(scenario())
    types.remove("error:c:session_closing")  # sent whenever the reader got to it
    assert types == ["start:a", "end:a", "start:b", "end:b", "closed:None"]
    assert code == 1000


def test_cancel_stops_a_running_request_at_once(server: Server) -> None:
    async def scenario() -> tuple[Outcome, list[tuple[str, str]], Outcome, float]:
        order: list[tuple[str, str]] = []
        async with websockets.connect(server.ws_url) as ws:
            outcomes = await send_requests(ws, [("long", LONG, {})])
            while True:  # wait for the first audio frame, then cancel
                raw = await asyncio.wait_for(ws.recv(), 30)
                if isinstance(raw, bytes):
                    order.append(("audio", "long"))
                    break
            cancelled_at = time.perf_counter()
            await ws.send(cancel("long"))
            await collect(ws, outcomes, order=order)
            took = time.perf_counter() - cancelled_at
            after = await send_requests(ws, [("after", "Still here.", {})])
            await collect(ws, after)
        return outcomes["long"], order, after["after"], took

    long, order, after, took = run(scenario())
    assert took < 1.5, took  # the piece in flight was abandoned, not finished
    assert long.terminal == {"type": "cancelled", "v": 1, "request_id": "long", "live": True}
    assert order[-1] == ("cancelled", "long")  # no audio after cancelled
    assert "end" not in [kind for kind, _ in order]
    # Five sentences would be five pieces and about 14 s of audio; it stopped after one or two.
    assert len(long.pcm) / 2 / 24000 < 8
    assert_complete(after)


def test_cancel_drops_a_queued_request_at_once(server: Server) -> None:
    async def scenario() -> list[tuple[str, str]]:
        order: list[tuple[str, str]] = []
        async with websockets.connect(server.ws_url) as ws:
            outcomes = await send_requests(ws, [("first", "One sentence here.", {}), ("queued", LONG, {})])
            await ws.send(cancel("queued"))
            await collect(ws, outcomes, order=order)
        return order

    order = run(scenario())
    assert ("cancelled", "queued") in order
    assert ("start", "queued") not in order and ("audio", "queued") not in order
    assert order.index(("cancelled", "queued")) < order.index(("end", "first"))


ERROR_CASES = [
    ("{not json", "bad_json"),
    ("[1, 2]", "bad_json"),
    (b"\xff\xfe binary", "bad_json"),
    ('{"v": 1, "request_id": "x"}', "missing_field"),
    ('{"type": "dance", "v": 1}', "unknown_type"),
    ('{"type": "synthesize", "v": 2, "request_id": "x", "text": "Hi."}', "bad_version"),
    ('{"type": "synthesize", "request_id": "x", "text": "Hi."}', "bad_version"),
    ('{"type": "synthesize", "v": 1, "text": "Hi."}', "missing_field"),
    ('{"type": "synthesize", "v": 1, "request_id": "x"}', "missing_field"),
    ('{"type": "cancel", "v": 1}', "missing_field"),
    ('{"type": "synthesize", "v": 1, "request_id": "x", "text": "   "}', "empty_text"),
    (synthesize("x", "a" * 2001), "text_too_long"),
    (synthesize("x", "Hi.", voice="af_nobody"), "unknown_voice"),
    (synthesize("x", "Привет, как дела?"), "unsupported_script"),
    (synthesize("x", "مرحبا بالعالم"), "unsupported_script"),
    (synthesize("x", "こんにちは", language="en"), "unsupported_script"),
    (synthesize("x", "Hi.", language="de"), "unsupported_language"),
    (synthesize("x", "Hi.", speed=9), "invalid_field"),
    (synthesize("x", "Hi.", speed="fast"), "invalid_field"),
    (synthesize("x" * 65, "Hi."), "invalid_field"),
]


def test_bad_input_gets_an_error_and_the_connection_stays_usable(server: Server) -> None:
    async def scenario() -> tuple[list[dict], Outcome]:
        replies = []
        async with websockets.connect(server.ws_url) as ws:
            for frame, _ in ERROR_CASES:
                await ws.send(frame)
                replies.append(await next_json(ws, 10))
            outcomes = await send_requests(ws, [("ok", "Still fine.", {})])
            await collect(ws, outcomes)
        return replies, outcomes["ok"]

    replies, ok = run(scenario())
    for (frame, code), reply in zip(ERROR_CASES, replies, strict=True):
        assert reply["type"] == "error" and reply["v"] == 1, frame
        assert reply["code"] == code, (frame, reply)
        assert isinstance(reply["message"], str) and reply["message"]
    assert replies[11]["request_id"] == "x"  # text_too_long names its request
    assert_complete(ok)


def test_cancelling_a_finished_or_unknown_request_is_answered_cancelled_not_an_error(server: Server) -> None:
    # A withdrawn preparation the container finished before the cancel came (the GPU's common case), and an
    # id it never had: each a `cancelled` with `live: false`, and the connection goes on.
    async def scenario() -> tuple[list[dict], Outcome]:
        async with websockets.connect(server.ws_url) as ws:
            done = await send_requests(ws, [("p0-1", "Sure.", {})])
            await collect(ws, done)
            replies = []
            for rid in ["p0-1", "nobody"]:
                await ws.send(cancel(rid))
                replies.append(await next_json(ws, 10))
            outcomes = await send_requests(ws, [("ok", "Still fine.", {})])
            await collect(ws, outcomes)
        return replies, outcomes["ok"]

    replies, ok = run(scenario())
    assert [(r["type"], r["request_id"], r["live"]) for r in replies] == [("cancelled", "p0-1", False), ("cancelled", "nobody", False)]
    assert_complete(ok)


def test_duplicate_ids_and_a_full_queue_are_errors(server: Server) -> None:
    async def scenario() -> tuple[list[dict], list[tuple[str, str]]]:
        order: list[tuple[str, str]] = []
        async with websockets.connect(server.ws_url) as ws:
            await ws.send(synthesize("busy", LONG))
            await ws.send(synthesize("busy", "Again."))
            errors = [await next_json(ws)]
            while errors[0]["type"] == "start":
                errors = [await next_json(ws)]
            for i in range(16):  # the default queue holds 16 requests besides the running one
                await ws.send(synthesize(f"q{i}", "Queued."))
            await ws.send(synthesize("overflow", "No room."))
            errors.append(await next_json(ws))
            while errors[-1]["type"] == "start":
                errors[-1] = await next_json(ws)
            for rid in ["busy", *(f"q{i}" for i in range(16))]:
                await ws.send(cancel(rid))
            outcomes = {rid: Outcome(rid, 0.0) for rid in ["busy", *(f"q{i}" for i in range(16))]}
            await collect(ws, outcomes, order=order)
        return errors, order

    errors, order = run(scenario())
    assert errors[0]["code"] == "duplicate_request_id" and errors[0]["request_id"] == "busy"
    assert errors[1]["code"] == "queue_full" and errors[1]["request_id"] == "overflow"
    assert sum(kind == "cancelled" for kind, _ in order) == 17


def test_long_text_streams_piece_by_piece(server: Server) -> None:
    async def scenario() -> Outcome:
        async with websockets.connect(server.ws_url) as ws:
            outcomes = await send_requests(ws, [("long", LONG, {})])
            await collect(ws, outcomes)
        return outcomes["long"]

    long = run(scenario())
    assert_complete(long)
    end = long.messages[-1]
    assert end["audio_seconds"] > 10
    # Audio arrives in bursts, one per piece: the first burst long before the request ends.
    bursts = 1 + sum(b - a > 0.3 for a, b in zip(long.frame_times, long.frame_times[1:], strict=False))
    assert bursts >= 4
    assert long.frame_times[0] < 0.5 * long.end_time


def test_a_new_connection_is_accepted_quickly_while_another_synthesizes(server: Server) -> None:
    async def scenario() -> tuple[list[float], float]:
        async with websockets.connect(server.ws_url) as busy:
            await busy.send(synthesize("busy", LONG))
            assert (await next_json(busy))["type"] == "start"
            await asyncio.sleep(0.3)  # inference is running now
            handshakes = []
            for _ in range(3):
                started = time.perf_counter()
                async with websockets.connect(server.ws_url):
                    handshakes.append(time.perf_counter() - started)
            async with httpx.AsyncClient() as client:
                started = time.perf_counter()
                assert (await client.get(f"{server.http_url}/ping")).status_code == 200
                ping = time.perf_counter() - started
            await busy.send(cancel("busy"))
        return handshakes, ping

    handshakes, ping = run(scenario())
    # What this guards against is waiting behind a piece's render (a second or more here); half a second leaves
    # room for a machine whose cores are also building.
    assert max(handshakes) < 0.5, handshakes
    assert ping < 0.5, ping


def test_a_client_that_disconnects_frees_its_work(server: Server) -> None:
    async def scenario() -> Outcome:
        async with websockets.connect(server.ws_url) as ws:
            await ws.send(synthesize("gone", f"{LONG} {LONG}"))
            while not isinstance(await asyncio.wait_for(ws.recv(), 30), bytes):
                pass
        # Nine pieces (about 20 s of work) were left and the one in flight is abandoned.
        async with websockets.connect(server.ws_url) as ws:
            outcomes = await send_requests(ws, [("next", "Next client.", {})])
            await collect(ws, outcomes)
        return outcomes["next"]

    following = run(scenario())
    assert_complete(following)
    assert following.frame_times[0] < 6, following.frame_times[0]


def test_invocations_returns_wav_or_pcm(server: Server) -> None:
    response = httpx.post(f"{server.http_url}/invocations", json={"text": "One shot request."}, timeout=60)
    assert response.status_code == 200 and response.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(response.content)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 24000)
        pcm = wav.readframes(wav.getnframes())
    assert len(pcm) // 2 == int(response.headers["x-kokoro-samples"]) > 24000 // 2
    assert rms(pcm) > SPEECH_RMS

    raw = httpx.post(
        f"{server.http_url}/invocations",
        json={"text": "Raw please.", "voice": "jm_kumo"},
        headers={"Accept": "audio/pcm"},
        timeout=60,
    )
    assert raw.status_code == 200 and raw.headers["content-type"] == "audio/pcm"
    assert raw.headers["x-kokoro-voice"] == "jm_kumo"
    assert rms(raw.content) > SPEECH_RMS

    bad = httpx.post(f"{server.http_url}/invocations", json={"text": "Hi.", "voice": "nobody"})
    assert bad.status_code == 400 and bad.json()["code"] == "unknown_voice"
    empty = httpx.post(f"{server.http_url}/invocations", content=b"not json")
    assert empty.status_code == 400 and empty.json()["code"] == "bad_json"


def test_audio_frames_decode_with_the_documented_header(server: Server) -> None:
    async def scenario() -> bytes:
        async with websockets.connect(server.ws_url) as ws:
            await ws.send(synthesize("éé", "Header check."))
            while True:
                raw = await asyncio.wait_for(ws.recv(), 30)
                if isinstance(raw, bytes):
                    return raw

    frame = run(scenario())
    rid = "éé".encode()
    assert frame[0] == 0x01 and frame[1] == len(rid) == 4
    assert frame[2:6] == rid and frame[6:10] == b"\x00\x00\x00\x00"
    decoded = decode_audio_frame(frame)
    assert decoded is not None and decoded.request_id == "éé" and decoded.pcm == frame[10:]
