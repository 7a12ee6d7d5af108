"""The official `openai` Python package reads one streamed chat completion and reports what it saw, as
JSON on standard output: the text, the tool calls begun, the finish reason, and the exception it raised
(its class name), if any. The tests run it against the OpenAI-compatible stand-in, so that the stream the
stand-in serves is judged by a client this project did not write.

usage: openai_reads.py BASE_URL PROMPT
"""

import json
import sys

import openai


def main() -> None:
    base_url, prompt = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0, timeout=30)
    seen = {"text": "", "tool_calls": 0, "finish_reason": None, "error": None}
    try:
        stream = client.chat.completions.create(
            model="standin",
            messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}],
            stream=True,
        )
        for chunk in stream:
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            if choice.delta.content:
                seen["text"] += choice.delta.content
            for call in choice.delta.tool_calls or []:
                if call.id:
                    seen["tool_calls"] += 1
            if choice.finish_reason:
                seen["finish_reason"] = choice.finish_reason
    except openai.OpenAIError as e:
        seen["error"] = type(e).__name__
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
