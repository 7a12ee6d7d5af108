"""EarshotTTSService in a real pipecat pipeline, ``[scripted LLM → EarshotTTSService → sink]``, against a
running earshot (`python pipeline.py BASE_URL`; run by `tests/tests/pipecat_voice.rs`). Two turns:

1. an answer spoken whole: the audio frames, their rate, and the words pipecat emitted from earshot's
   timings;
2. a long answer the user speaks over 1.6 s into its audio: the interruption goes to earshot as its
   interrupt, and what was heard comes back through ``on_heard``;
3. in a second pipeline at 32 kHz (a rate earshot does not make: pipecat's resampler converts its 24 kHz),
   pipecat's ``TTSUpdateSettingsFrame`` changes the voice, and the next answer is spoken in it.

Prints one JSON object with what the sink saw in each turn.
"""

import asyncio
import json
import sys
import time

from harness import Running
from pipecat.frames.frames import InterruptionFrame, TTSUpdateSettingsFrame
from pipecat.services.settings import TTSSettings

from earshot_pipecat import EarshotTTSService

WHOLE = "Sure. Your order shipped this morning."
LONG = (
    "Returning a jacket is easy. Bring it to any of our stores within thirty days, with the receipt. "
    "If you ordered it online, you can also send it back by post, using the label in the box. "
    "Refunds reach your card within five working days of the jacket arriving back with us."
)


async def main() -> None:
    tts = EarshotTTSService(base_url=sys.argv[1])
    heard = asyncio.Event()

    @tts.event_handler("on_heard")
    async def on_heard(service, what):  # noqa: ARG001
        heard.set()

    pipeline = await Running(tts).start()
    out = {"whole": await pipeline.speak_whole(WHOLE)}

    sink = pipeline.sink
    sink.reset()
    speaking = asyncio.create_task(pipeline.llm.answer(LONG))
    await asyncio.wait_for(sink.second_of_audio.wait(), timeout=60)
    # Spoken over 1.6 s into the answer's audio (a voice faster than real time has sent more by then).
    await asyncio.sleep(max(0.0, sink.first_audio + 1.6 - time.monotonic()))
    await pipeline.llm.push_frame(InterruptionFrame())
    interrupted_at = time.monotonic()
    await asyncio.wait_for(heard.wait(), timeout=10)
    out["interrupted"] = {
        **sink.seen(),
        "heard": tts.last_heard.text,
        "heard_ms": tts.last_heard.heard_ms,
        "heard_after_s": time.monotonic() - interrupted_at,
        "played_s": interrupted_at - sink.first_audio,
    }
    speaking.cancel()
    await pipeline.close()

    other = EarshotTTSService(base_url=sys.argv[1])
    pipeline = await Running(other, rate=32000).start()
    await pipeline.llm.push_frame(TTSUpdateSettingsFrame(delta=TTSSettings(voice="jm_kumo")))
    out["updated"] = {**await pipeline.speak_whole(WHOLE), "voice": (other.last_session or {}).get("voice")}
    print(json.dumps(out), flush=True)
    await pipeline.close()


if __name__ == "__main__":
    asyncio.run(main())
