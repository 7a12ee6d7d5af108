"""LiveKit Agents' own OpenAI voice (`livekit.plugins.openai.TTS`) speaking through earshot, as a LiveKit
user would point it at a server of their own: only `base_url` and `api_key` changed, every other setting
the plugin's default (its model `gpt-4o-mini-tts`, so SSE; its voice `ash`; mp3, decoded by LiveKit's own
decoder into its audio frames).

Run by `tests/tests/openai_speech.rs` with the venv `make livekit-venv` installs
(`clients/livekit/requirements.txt`): `python openai_tts.py BASE_URL TEXT`. Prints one JSON object: the
frames LiveKit made, their rates, the seconds of audio, its loudness and the time to the first frame.
"""

import asyncio
import json
import math
import sys
import time

from livekit.plugins import openai as livekit_openai


async def main(url: str, text: str) -> None:
    tts = livekit_openai.TTS(base_url=url + "/v1", api_key="unused-locally")
    started = time.monotonic()
    first = None
    frames, samples, energy, rates = 0, 0, 0.0, set()
    async with tts.synthesize(text) as stream:
        async for event in stream:
            frame = event.frame
            if first is None:
                first = time.monotonic() - started
            frames += 1
            samples += frame.samples_per_channel
            rates.add(frame.sample_rate)
            data = memoryview(frame.data).cast("B").cast("h")
            energy += sum(s * s for s in data)
    await tts.aclose()
    rms = math.sqrt(energy / max(1, samples)) / 32768.0
    print(json.dumps({"frames": frames, "seconds": samples / 24000, "rates": sorted(rates), "rms": rms, "first_s": first}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
