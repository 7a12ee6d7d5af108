"""OpenAI's official Python SDK speaking to earshot's `/v1/audio/speech`, as a new user's code would.

Run by `tests/tests/openai_speech.rs` with the SDK pinned in `bench/peer/requirements.txt` (the peer
benchmark's venv has it): `python speak_with_the_sdk.py BASE_URL`. Prints one JSON object: for each
call, the bytes received, the time to the first chunk, and what the SDK raised where it raised.
"""

import base64
import json
import sys
import time

import openai

TEXT = "Sure. Your order shipped this morning, and it should arrive on Thursday."


def streamed(client, **kwargs):
    """The audio bytes of one streamed call, and seconds to its first chunk."""
    started = time.monotonic()
    first = None
    chunks = []
    with client.audio.speech.with_streaming_response.create(model="kokoro", voice="alloy", input=TEXT, **kwargs) as response:
        content_type = response.headers.get("content-type")
        for chunk in response.iter_bytes():
            if chunk and first is None:
                first = time.monotonic() - started
            chunks.append(chunk)
    return content_type, b"".join(chunks), first


def main():
    client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="unused-locally", max_retries=0)
    out = {}

    content_type, pcm, first = streamed(client, response_format="pcm")
    out["pcm"] = {"content_type": content_type, "bytes": len(pcm), "first_chunk_s": first}

    content_type, wav, first = streamed(client, response_format="wav")
    out["wav"] = {"content_type": content_type, "bytes": len(wav), "first_chunk_s": first, "head": wav[:4].decode("latin-1"), "format": wav[8:12].decode("latin-1")}

    content_type, body, first = streamed(client, response_format="pcm", extra_body={"stream_format": "sse"})
    events = [json.loads(line[len("data: "):]) for line in body.decode().splitlines() if line.startswith("data: ")]
    audio = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    out["sse"] = {
        "content_type": content_type,
        "types": sorted({e["type"] for e in events}),
        "last": events[-1]["type"] if events else None,
        "audio_bytes": len(audio),
        "usage": events[-1].get("usage") if events else None,
    }

    try:
        client.audio.speech.create(model="kokoro", voice="alloy", input=TEXT, response_format="mp3")
        out["mp3"] = {"raised": None}
    except openai.BadRequestError as e:
        out["mp3"] = {"raised": type(e).__name__, "status": e.status_code, "code": e.code, "param": e.param}

    print(json.dumps(out))


if __name__ == "__main__":
    main()
