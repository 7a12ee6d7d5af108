"""OpenAI's official Python SDK configured as a new user configures it for a server of their own: only
`base_url` and `api_key` (an `sk-earshot-…` key). Prints what one call got: the audio's bytes, or what the
SDK raised. Run by `tests/tests/openai_speech.rs`: `python with_a_key.py BASE_URL KEY [VOICE]`."""

import json
import sys

import openai


def main():
    client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], max_retries=0)
    voice = sys.argv[3] if len(sys.argv) > 3 else "alloy"
    try:
        audio = client.audio.speech.create(model="tts-1", voice=voice, input="Hello from a key that lasts.", response_format="pcm")
        print(json.dumps({"bytes": len(audio.content)}))
    except openai.APIStatusError as e:
        print(json.dumps({"raised": type(e).__name__, "status": e.status_code, "code": e.code}))


if __name__ == "__main__":
    main()
