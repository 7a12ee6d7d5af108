"""pipecat's own OpenAI voice (`OpenAITTSService`, pipecat 1.14) speaking through earshot's
`/v1/audio/speech` in a real pipecat pipeline, with nothing changed but its base URL:
``[scripted LLM → OpenAITTSService → sink]``. Run by `tests/tests/openai_speech.rs`:
`python openai_voice.py BASE_URL`. Prints one JSON object: the audio frames the sink received (count,
bytes, sample rate), the sentences pipecat asked for, and any error frames.
"""

import asyncio
import json
import sys

from harness import Running
from pipecat.services.openai.tts import OpenAITTSService

ANSWER = "Sure. Your order shipped this morning, and it should arrive on Thursday."


async def main() -> None:
    tts = OpenAITTSService(api_key="unused-locally", base_url=sys.argv[1] + "/v1", settings=OpenAITTSService.Settings(voice="alloy"))
    pipeline = await Running(tts).start()
    seen = await pipeline.speak_whole(ANSWER)
    print(json.dumps({**seen, "requested": pipeline.requested}), flush=True)
    await pipeline.close()


if __name__ == "__main__":
    asyncio.run(main())
