"""What the pipeline checks share: a scripted LLM that streams an answer as an LLM service does, a sink that
records what reaches the end of the pipeline, and the pipeline around a TTS service, running."""

import asyncio
import sys
import time

from loguru import logger
from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner


class Sink(FrameProcessor):
    """Records the audio, word and error frames that reach the end of the pipeline."""

    def __init__(self) -> None:
        super().__init__()
        self.reset()

    def reset(self) -> None:
        self.frames, self.bytes, self.rates, self.words, self.errors = 0, 0, set(), [], []
        self.stopped = asyncio.Event()
        self.second_of_audio = asyncio.Event()
        self.first_audio = self.last_audio = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame):
            self.frames += 1
            self.bytes += len(frame.audio)
            self.rates.add(frame.sample_rate)
            self.last_audio = time.monotonic()
            if self.first_audio is None:
                self.first_audio = self.last_audio
            if self.bytes >= frame.sample_rate * 2:
                self.second_of_audio.set()
        elif isinstance(frame, TTSTextFrame):
            self.words.append(frame.text)
        elif isinstance(frame, ErrorFrame):
            self.errors.append(str(frame.error))
        elif isinstance(frame, TTSStoppedFrame) and self.bytes:
            self.stopped.set()
        await self.push_frame(frame, direction)

    def seen(self) -> dict:
        return {"frames": self.frames, "bytes": self.bytes, "rates": sorted(self.rates), "words": self.words, "errors": self.errors}


class ScriptedLLM(FrameProcessor):
    """Sends an answer downstream as an LLM service does: pieces of 4 characters at 60 a second."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)

    async def answer(self, text: str) -> None:
        await self.push_frame(LLMFullResponseStartFrame())
        for i in range(0, len(text), 4):
            await self.push_frame(LLMTextFrame(text[i : i + 4]))
            await asyncio.sleep(1 / 60)
        await self.push_frame(LLMFullResponseEndFrame())


class Running:
    """``[scripted LLM → tts → sink]``, running until closed. Records each text the TTS service asked its
    backend for (``requested``)."""

    def __init__(self, tts, rate: int = 24000) -> None:
        logger.remove()
        logger.add(sys.stderr, level="WARNING")
        self.llm, self.sink = ScriptedLLM(), Sink()
        self.requested: list[str] = []

        @tts.event_handler("on_tts_request")
        async def on_tts_request(service, context_id, text):  # noqa: ARG001
            self.requested.append(text)

        self.worker = PipelineWorker(Pipeline([self.llm, tts, self.sink]), params=PipelineParams(audio_out_sample_rate=rate), idle_timeout_secs=None)
        self.runner = WorkerRunner(handle_sigint=False)
        self.task = None

    async def start(self) -> "Running":
        await self.runner.add_workers(self.worker)
        self.task = asyncio.create_task(self.runner.run())
        await asyncio.sleep(0.5)  # the StartFrame reaches every processor
        return self

    async def speak_whole(self, text: str) -> dict:
        """Streams ``text`` in and waits until its audio has stopped; what the sink saw."""
        self.sink.reset()
        self.requested.clear()
        await self.llm.answer(text)
        try:
            await asyncio.wait_for(self.sink.stopped.wait(), timeout=60)
        except asyncio.TimeoutError:
            pass
        # A turn's later sentences may still be on their way (a loaded machine takes seconds for one, and a
        # service asks for the next sentence before the last one's audio has reached the sink): done once
        # the words the sink saw cover every text the service asked for, and two seconds pass with no audio.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            last = self.sink.last_audio
            if last is not None and self.all_spoken() and time.monotonic() - last >= 2.0:
                break
            await asyncio.sleep(0.1)
        return self.sink.seen()

    def all_spoken(self) -> bool:
        """Whether the sink's words hold every letter and digit the service asked for (spaces and
        punctuation aside, which a voice's word timings leave out): a service that sends a sentence as one
        word and one that times each word both count."""
        asked = sum(_letters(text) for text in self.requested)
        return sum(_letters(word) for word in self.sink.words) >= asked

    async def close(self) -> None:
        await self.worker.cancel()
        self.task.cancel()


def _letters(text: str) -> int:
    """The letters and digits of ``text``."""
    return sum(1 for c in text if c.isalnum())
