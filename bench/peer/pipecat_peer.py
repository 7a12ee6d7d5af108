"""The peer side of `earshot-bench --suites peer`: pipecat's own Kokoro voice and kokoro-onnx called directly,
on the same model files, voice and pacing as the earshot cells, one trial per command.

The benchmark starts this once and keeps it for the whole run (as a running bot keeps its pipeline), so the model
loads once. It reads one JSON command a line on stdin and answers one JSON line on stdout:

- ``{"cell": "pipecat", "text": …, "chunk_chars": 4, "tokens_per_second": 30}``: the answer streamed into a
  pipeline ``[scripted LLM → KokoroTTSService → sink]`` as ``LLMTextFrame``s of ``chunk_chars`` characters at
  the given rate (each at its own due time from the first, so that the pace does not drift), between
  ``LLMFullResponseStartFrame`` and ``LLMFullResponseEndFrame``, as an LLM service sends them. Answers the
  milliseconds from the first text frame to pipecat's release of the first sentence to its TTS
  (``on_tts_request``) and to the first ``TTSAudioRawFrame`` reaching the sink; then interrupts the answer
  (an ``InterruptionFrame``, as a user speaking would) and waits until no kokoro-onnx batch is running, so that
  the next cell starts on an idle machine.
- ``{"cell": "direct", "text": …}``: ``Kokoro.create_stream`` on the text alone, the milliseconds to its first
  chunk (phonemes included): the model's floor for that sentence in this library.
- ``{"cell": "quit"}``.

Nothing here changes how pipecat or kokoro-onnx work: the sink and the two counters only watch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from loguru import logger

from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.kokoro.tts import KokoroTTSService
from pipecat.workers.runner import WorkerRunner


def chunks(text: str, size: int) -> list[str]:
    """The answer as an LLM's stream of fixed-size pieces (the same cut the earshot cells are paced by)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


class ScriptedLLM(FrameProcessor):
    """Sends an answer downstream as an LLM service does, at a fixed pace."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)

    first_token: float | None = None

    async def answer(self, text: str, chunk_chars: int, tokens_per_second: float) -> None:
        """Streams the answer; ``first_token`` is the perf_counter time of its first text frame."""
        await self.push_frame(LLMFullResponseStartFrame())
        first = self.first_token = time.perf_counter()
        for i, piece in enumerate(chunks(text, chunk_chars)):
            delay = first + i / tokens_per_second - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await self.push_frame(LLMTextFrame(piece))
        await self.push_frame(LLMFullResponseEndFrame())


class Sink(FrameProcessor):
    """Notes when the first audio of the current answer reaches the end of the pipeline."""

    def __init__(self) -> None:
        super().__init__()
        self.first_audio: float | None = None
        self.audio = asyncio.Event()

    def reset(self) -> None:
        self.first_audio = None
        self.audio = asyncio.Event()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame) and self.first_audio is None:
            self.first_audio = time.perf_counter()
            self.audio.set()
        await self.push_frame(frame, direction)


class Batches:
    """Counts kokoro-onnx batches running in worker threads (wraps the instance's ``_create_batch``)."""

    def __init__(self, kokoro) -> None:
        self.running = 0
        self._lock = threading.Lock()
        inner = kokoro._create_batch

        def counted(*args, **kwargs):
            with self._lock:
                self.running += 1
            try:
                return inner(*args, **kwargs)
            finally:
                with self._lock:
                    self.running -= 1

        kokoro._create_batch = counted

    async def idle(self) -> None:
        while self.running:
            await asyncio.sleep(0.01)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--voices", required=True)
    parser.add_argument("--voice", default="jf_alpha")
    args = parser.parse_args()
    logger.remove()
    logger.add(sys.stderr, level="WARNING")

    tts = KokoroTTSService(model_path=args.model, voices_path=args.voices, settings=KokoroTTSService.Settings(voice=args.voice))
    kokoro = tts._kokoro
    batches = Batches(kokoro)
    llm, sink = ScriptedLLM(), Sink()
    released: list[float] = []

    @tts.event_handler("on_tts_request")
    async def on_tts_request(service, context_id, text):  # noqa: ARG001
        released.append(time.perf_counter())

    worker = PipelineWorker(Pipeline([llm, tts, sink]), params=PipelineParams(audio_out_sample_rate=24000), idle_timeout_secs=None)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    await asyncio.sleep(0.5)  # the StartFrame reaches every processor

    # stdin is read by a thread of its own: kokoro-onnx's batches use the loop's default executor.
    stdin = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stdin")
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": True}), flush=True)
    while line := await loop.run_in_executor(stdin, sys.stdin.readline):
        command = json.loads(line)
        cell = command["cell"]
        if cell == "quit":
            break
        if cell == "direct":
            started = time.perf_counter()
            stream = kokoro.create_stream(command["text"], voice=args.voice, lang="en-us")
            async for _samples, _rate in stream:
                first = time.perf_counter()
                break
            await stream.aclose()
            await batches.idle()
            print(json.dumps({"first_audio_ms": (first - started) * 1000}), flush=True)
            continue
        sink.reset()
        released.clear()
        speaking = asyncio.create_task(llm.answer(command["text"], command["chunk_chars"], command["tokens_per_second"]))
        await asyncio.wait_for(sink.audio.wait(), timeout=120)
        first_token = llm.first_token
        # The listener has what was measured: stop the answer as a user speaking over it would.
        speaking.cancel()
        try:
            await speaking
        except asyncio.CancelledError:
            pass
        await llm.push_frame(InterruptionFrame())
        await batches.idle()
        await asyncio.sleep(0.2)
        await batches.idle()
        print(
            json.dumps(
                {
                    "released_ms": (released[0] - first_token) * 1000 if released else None,
                    "first_audio_ms": (sink.first_audio - first_token) * 1000,
                }
            ),
            flush=True,
        )
    await worker.cancel()
    await running


if __name__ == "__main__":
    asyncio.run(main())
