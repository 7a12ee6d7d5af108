"""OpenAI's official Python SDK speaking to earshot's `/v1/audio/speech`, as a new user's code would.

Run by `tests/tests/openai_speech.rs` with the SDK pinned in `bench/peer/requirements.txt` (the peer
benchmark's venv has it): `python speak_with_the_sdk.py BASE_URL`. Prints one JSON object: for each
call, the bytes received, the time to the first chunk, what each format's reference decoder made of them
(`mpg123`, `opusdec`, `faad`, `flac`, Python's `wave`), and what the SDK raised where it raised.
"""

import array
import base64
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import wave

import openai

# Two sentences of many words each: how a short first sentence is prepared may vary with timing, and
# the formats' lengths are compared call to call.
TEXT = "Your order shipped this morning from our warehouse. It should arrive on Thursday before noon."

# Each compressed format's reference decoder, writing a WAV file.
DECODERS = {
    "mp3": ["mpg123", "-q", "-w", "{dst}", "{src}"],
    "opus": ["opusdec", "--quiet", "--force-wav", "{src}", "{dst}"],
    "aac": ["faad", "-q", "-b", "1", "-o", "{dst}", "{src}"],
    "flac": ["flac", "-d", "-s", "-f", "-o", "{dst}", "{src}"],
}


def streamed(client, **kwargs):
    """The audio bytes of one streamed call, its headers, and seconds to its first chunk."""
    started = time.monotonic()
    first = None
    chunks = []
    with client.audio.speech.with_streaming_response.create(model="kokoro", voice="alloy", input=TEXT, **kwargs) as response:
        headers = dict(response.headers)
        for chunk in response.iter_bytes():
            if chunk and first is None:
                first = time.monotonic() - started
            chunks.append(chunk)
    return headers, b"".join(chunks), first


def decoded(name, data):
    """What the format's reference decoder made of `data`: seconds, rate, channels and loudness."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "answer." + name), os.path.join(tmp, "answer.wav")
        open(src, "wb").write(data)
        if name in DECODERS:
            subprocess.run([p.format(src=src, dst=dst) for p in DECODERS[name]], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            dst = src
        with wave.open(dst, "rb") as w:
            frames = w.readframes(w.getnframes())
            samples = array.array("h")
            samples.frombytes(frames[: len(frames) // 2 * 2])
            rms = math.sqrt(sum(s * s for s in samples) / max(1, len(samples))) / 32768.0
            # Counted from the samples read: a streamed WAV's header says its length is unknown.
            seconds = len(samples) / w.getnchannels() / w.getframerate()
            return {"seconds": seconds, "rate": w.getframerate(), "channels": w.getnchannels(), "rms": rms}


def raised(call):
    try:
        call()
        return {"raised": None}
    except openai.APIStatusError as e:
        return {"raised": type(e).__name__, "status": e.status_code, "code": e.code, "param": e.param}


def main():
    client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="unused-locally", max_retries=0)
    out = {}

    # The SDK's own default (no response_format sent): OpenAI's is mp3.
    headers, body, first = streamed(client)
    out["default"] = {"content_type": headers.get("content-type"), "bytes": len(body), "first_chunk_s": first, "decoded": decoded("mp3", body)}
    for name in ["mp3", "opus", "aac", "flac", "wav"]:
        headers, body, first = streamed(client, response_format=name)
        out[name] = {"content_type": headers.get("content-type"), "bytes": len(body), "first_chunk_s": first, "decoded": decoded(name, body)}
        if name == "wav":
            out[name].update(head=body[:4].decode("latin-1"), format=body[8:12].decode("latin-1"))

    headers, pcm, first = streamed(client, response_format="pcm")
    out["pcm"] = {"content_type": headers.get("content-type"), "bytes": len(pcm), "first_chunk_s": first}

    for name in ["pcm", "wav"]:
        headers, body, first = streamed(client, response_format=name, extra_body={"stream_format": "sse"})
        events = [json.loads(line[len("data: "):]) for line in body.decode().splitlines() if line.startswith("data: ")]
        deltas = [base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta"]
        out["sse_" + name] = {
            "content_type": headers.get("content-type"),
            "types": sorted({e["type"] for e in events}),
            "last": events[-1]["type"] if events else None,
            "audio_bytes": sum(len(d) for d in deltas),
            "first_delta_head": deltas[0][:4].decode("latin-1") if deltas else None,
            "usage": events[-1].get("usage") if events else None,
        }

    # OpenAI's whole speed range is taken; the rate the voices used is said where it differs.
    headers, body, first = streamed(client, response_format="pcm", speed=4.0)
    out["fastest"] = {"bytes": len(body), "speed_header": headers.get("x-earshot-speed")}
    headers, body, first = streamed(client, response_format="pcm", extra_body={"lang_code": "a"})
    out["extra_field"] = {"bytes": len(body), "ignored_header": headers.get("x-earshot-ignored-fields")}

    # The models the SDK lists (GET /v1/models, OpenAI's shape).
    out["models"] = sorted(m.id for m in client.models.list())

    out["too_fast"] = raised(lambda: client.audio.speech.create(model="kokoro", voice="alloy", input=TEXT, speed=5.0))
    out["too_long"] = raised(lambda: client.audio.speech.create(model="kokoro", voice="alloy", input="Hello there. " * 2000))
    out["unknown_format"] = raised(lambda: client.audio.speech.create(model="kokoro", voice="alloy", input=TEXT, extra_body={"response_format": "wma"}))

    print(json.dumps(out))


if __name__ == "__main__":
    main()
