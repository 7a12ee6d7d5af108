"""A pipecat TTS service that speaks through earshot.

Each text pipecat releases goes to earshot's ``/v1/speak`` in ``text`` mode (SSE), as one conversation.
earshot splits it into sentences and streams each one's audio while the next is still being synthesized.
The service passes along what earshot sends:

- **Audio** as ``TTSAudioRawFrame`` objects, as each piece arrives, in 16-bit PCM at the pipeline's rate:
  earshot converts it where it makes that rate (``output_format`` ``pcm_<rate>``: 8, 16, 22.05, 24, 44.1 and
  48 kHz); at any other rate earshot sends 24 kHz and pipecat's own stream resampler converts it here.
- **Settings** from pipecat's ``TTSUpdateSettingsFrame`` (``model`` is the arm, ``voice``, ``language``):
  read at each text, so an update holds from the next one; the language goes to earshot as a BCP 47 tag.
- **Word timings** from earshot's ``words`` messages, through pipecat's word-timestamp path. They are the
  voice's own timings (Kokoro) or earshot's estimates (Polly), relative to the turn's audio. Each
  sentence's timings are offset by the audio of the sentences before it.
- **What was heard** when the user speaks over the bot. pipecat sends a turn's sentences one at a time
  (each an earshot conversation), and a voice faster than real time finishes some before the listener
  hears them. On pipecat's interruption the service takes the audio that has had time to play since the
  turn's first chunk. Sentences played whole count whole. Of a finished one cut in the middle, its words
  that ended before the cut count (earshot's "After Stop" rule, by the timings earshot sent). The live
  conversation gets earshot's interrupt with ``heard_ms`` into it; earshot stops the agent, the voice and
  the stream, and its ``interrupted`` error says what was heard of it, cut the same way. The service
  keeps the turn's heard text as :attr:`last_heard` and calls the ``on_heard`` event handler with it. That
  text is what goes into the conversation's next turn.
- **Errors**: a refusal, such as a 4xx or a 503 from a busy backend, becomes an ``ErrorFrame`` that names
  earshot's code and message.

The stream is read by a task of its own, so an interruption, which cancels the pipecat generator, still
lets the ``interrupted`` error arrive and be read.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

import aiohttp
from loguru import logger
from pipecat.audio.utils import create_stream_resampler
from pipecat.frames.frames import ErrorFrame, Frame, InterruptionFrame, TTSAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService
from pipecat.transcriptions.language import Language
from pipecat.utils.types import is_given

#: The PCM rates earshot makes (``output_format`` ``pcm_<rate>``).
EARSHOT_RATES = (8000, 16000, 22050, 24000, 44100, 48000)
#: The rate asked of earshot where the pipeline's is not one of those (Kokoro's own: nothing converted twice).
FALLBACK_RATE = 24000
#: Turns kept for what was heard: the one speaking and the one before (an interruption may follow a new turn's start).
MOST_TURNS = 2


def earshot_rate(pipeline_rate: int) -> int:
    """The rate to ask earshot for, for a pipeline at ``pipeline_rate``."""
    return pipeline_rate if pipeline_rate in EARSHOT_RATES else FALLBACK_RATE


@dataclass
class Heard:
    """What the listener heard of an interrupted turn."""

    #: The turn's audio that had time to play, in milliseconds.
    heard_ms: float
    #: The words heard, cut at whole words.
    text: str


@dataclass
class _Conversation:
    """One ``run_tts`` call's conversation with earshot."""

    conversation_id: str
    context_id: str
    text: str
    items: asyncio.Queue = field(default_factory=asyncio.Queue)
    audio_ms: float = 0.0
    #: Its words, with their end in milliseconds from the conversation's first sample.
    words: list[tuple[str, float]] = field(default_factory=list)
    #: Audio of its sentences already ended, which the next sentence's word timings follow.
    sentences_ms: float = 0.0
    ended: bool = False
    #: What earshot said was heard, once an interrupt ends it.
    heard: asyncio.Future | None = None

    def heard_within(self, offset_ms: float) -> str:
        """Its words that ended by ``offset_ms`` into its audio."""
        return " ".join(word for word, end in self.words if end <= offset_ms)


@dataclass
class _Turn:
    """The conversations of one pipecat turn (one audio context), in order."""

    first_audio_at: float | None = None
    conversations: list[_Conversation] = field(default_factory=list)

    def played_ms(self) -> float:
        """The audio that had time to play: real time since its first chunk, at most what was received."""
        if self.first_audio_at is None:
            return 0.0
        return min(sum(c.audio_ms for c in self.conversations), (time.monotonic() - self.first_audio_at) * 1000.0)


class EarshotTTSService(TTSService):
    """earshot as a pipecat voice; see the module docs.

    Args:
        base_url: earshot's URL (``http://127.0.0.1:8787``, or a Lambda function URL).
        token: a bearer token, where the gateway runs in token mode.
        backend: the arm to speak with (``kokoro``, ``polly``); ``None`` lets the gateway choose (its A/B split).
        voice: a voice of that arm (``GET /v1/voices``), a Kokoro blend, or one of OpenAI's names; ``None``:
            the arm's voice for the language.
        language: the language to speak (pipecat's ``Language`` or a BCP 47 tag); ``None``: earshot detects it.
        sample_rate: the PCM rate of the audio frames; ``None``: the pipeline's output rate.
        aiohttp_session: the caller's HTTP session, used and left open; ``None``: one of the service's own.
    """

    def __init__(
        self,
        *,
        base_url: str,
        token: str | None = None,
        backend: str | None = None,
        voice: str | None = None,
        language: Language | str | None = None,
        sample_rate: int | None = None,
        aiohttp_session: aiohttp.ClientSession | None = None,
        **kwargs,
    ):
        # The arm stands in pipecat's settings as the model; without a language, earshot tells it (the
        # request's text, or the answer's first sentence).
        settings = TTSSettings(model=backend, voice=voice, language=language)
        # Words reach pipecat from earshot's timings alone (``push_text_frames=False``, as every voice of
        # pipecat's with word timestamps): left on, pipecat would also push each sentence's whole text after
        # its audio, so its context would hold every sentence twice and a word frame could follow its
        # sentence's text.
        super().__init__(
            push_start_frame=True,
            push_stop_frames=True,
            push_text_frames=False,
            sample_rate=sample_rate,
            settings=settings,
            **kwargs,
        )
        self._base_url = base_url.rstrip("/")
        self._headers = {"authorization": f"Bearer {token}"} if token else {}
        self._session: aiohttp.ClientSession | None = aiohttp_session
        self._owns_session = aiohttp_session is None
        self._live: _Conversation | None = None
        self._turns: dict[str, _Turn] = {}
        # Audio spoken so far in each turn context, so that each sentence's word timings follow the ones before.
        self._context_audio_ms: dict[str, float] = {}
        self.last_heard: Heard | None = None
        #: earshot's last ``session`` message: the backend and voice that speak, and the audio's format.
        self.last_session: dict | None = None
        self._register_event_handler("on_heard")

    def can_generate_metrics(self) -> bool:
        return True

    def language_to_service_language(self, language: Language) -> str | None:
        """earshot takes BCP 47 tags, which pipecat's languages are."""
        return str(language.value if isinstance(language, Language) else language)

    def _setting(self, name: str) -> str | None:
        value = getattr(self._settings, name)
        return str(value.value if isinstance(value, Language) else value) if is_given(value) and value else None

    def request_body(self, text: str, conversation_id: str) -> dict:
        """What ``/v1/speak`` is asked for ``text``, with the settings as they are now."""
        body = {
            "text": text,
            "format": "sse",
            "output_format": f"pcm_{earshot_rate(self.sample_rate)}",
            "conversation_id": conversation_id,
        }
        for field_name, key in (("model", "backend"), ("voice", "voice"), ("language", "language")):
            value = self._setting(field_name)
            if value:
                body[key] = value
        return body

    def _turn(self, context_id: str) -> _Turn:
        """The turn of ``context_id``, the oldest forgotten past ``MOST_TURNS`` (a long session keeps no more)."""
        turn = self._turns.get(context_id)
        if turn is None:
            turn = self._turns[context_id] = _Turn()
            for old in list(self._turns)[:-MOST_TURNS]:
                del self._turns[old]
                self._context_audio_ms.pop(old, None)
        return turn

    async def _http(self) -> aiohttp.ClientSession:
        if not self._owns_session and self._session is not None:
            return self._session
        if self._session is None or self._session.closed:
            # No overall timeout: an answer streams for as long as it speaks.
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        return self._session

    async def cleanup(self):
        await super().cleanup()
        if self._owns_session and self._session is not None:
            await self._session.close()

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        conversation = _Conversation(conversation_id=f"pipecat-{uuid.uuid4().hex}", context_id=context_id, text=text)
        self._live = conversation
        turn = self._turn(context_id)
        turn.conversations.append(conversation)
        body = self.request_body(text, conversation.conversation_id)
        await self.start_tts_usage_metrics(text)
        self.create_task(self._read(conversation, turn, body), name=f"earshot-{conversation.conversation_id}")
        offset_ms = self._context_audio_ms.get(context_id, 0.0)
        try:
            while True:
                kind, value = await conversation.items.get()
                if kind == "audio":
                    await self.stop_ttfb_metrics()
                    yield TTSAudioRawFrame(value, self.sample_rate, 1, context_id=context_id)
                elif kind == "words":
                    await self.add_word_timestamps([(w["text"], (offset_ms + w["start_ms"]) / 1000.0) for w in value], context_id)
                elif kind == "sentence_end":
                    offset_ms += value
                    self._context_audio_ms[context_id] = offset_ms
                elif kind == "error":
                    yield ErrorFrame(error=value)
                elif kind == "end":
                    break
        finally:
            await self.stop_ttfb_metrics()

    async def _read(self, conversation: _Conversation, turn: _Turn, body: dict) -> None:
        """Reads one conversation's stream into its queue, to its end (an interruption included)."""
        put = conversation.items.put_nowait
        # A pipeline rate earshot does not make: its 24 kHz converted here, the filter's state kept across chunks.
        resampler = create_stream_resampler() if earshot_rate(self.sample_rate) != self.sample_rate else None
        try:
            session = await self._http()
            async with session.post(f"{self._base_url}/v1/speak", json=body, headers=self._headers) as response:
                if response.status != 200:
                    try:
                        error = (await response.json())["error"]
                        put(("error", f"earshot {response.status} {error['code']}: {error['message']}"))
                    except Exception:  # noqa: BLE001 - a body that is not earshot's JSON error
                        put(("error", f"earshot answered {response.status}"))
                    return
                async for event, data in _sse(response.content):
                    if event == "session":
                        self.last_session = data
                    elif event == "audio":
                        pcm = base64.b64decode(data["data"])
                        if resampler is not None:
                            pcm = await resampler.resample(pcm, FALLBACK_RATE, self.sample_rate)
                        if not pcm:
                            continue
                        if turn.first_audio_at is None:
                            turn.first_audio_at = time.monotonic()
                        conversation.audio_ms += len(pcm) / 2 / self.sample_rate * 1000.0
                        put(("audio", pcm))
                    elif event == "words":
                        conversation.words.extend((w["text"], conversation.sentences_ms + w["end_ms"]) for w in data["words"])
                        put(("words", data["words"]))
                    elif event == "sentence_end":
                        conversation.sentences_ms += float(data["audio_ms"])
                        put(("sentence_end", float(data["audio_ms"])))
                    elif event == "done":
                        return
                    elif event == "error":
                        if data.get("code") == "interrupted":
                            if conversation.heard is not None and not conversation.heard.done():
                                conversation.heard.set_result(data.get("heard") or "")
                        else:
                            put(("error", f"earshot {data.get('code')}: {data.get('message')}"))
                        return
        except aiohttp.ClientError as e:
            put(("error", f"earshot unreachable at {self._base_url}: {e}"))
        finally:
            conversation.ended = True
            if conversation.heard is not None and not conversation.heard.done():
                conversation.heard.set_result(None)
            put(("end", None))

    async def _handle_interruption(self, frame: InterruptionFrame, direction: FrameDirection):
        live = self._live
        turn = self._turns.get(live.context_id) if live is not None else None
        self._turns.clear()
        self._context_audio_ms.clear()
        if turn is not None and turn.first_audio_at is not None:
            played = turn.played_ms()
            heard: list[str] = []
            remaining = played
            cut: _Conversation | None = None
            for conversation in turn.conversations:
                if conversation.ended and remaining >= conversation.audio_ms:
                    heard.append(conversation.text)
                    remaining -= conversation.audio_ms
                    continue
                cut = conversation
                break
            if cut is not None and cut.ended:
                heard.append(cut.heard_within(remaining))
                cut = None
            # The live conversation stops at earshot, told how far into it the listener got.
            if live is not None and not live.ended:
                live.heard = asyncio.get_running_loop().create_future()
                await self._interrupt(live, round(remaining) if cut is live else 0)
            self.create_task(self._tell_heard(played, heard, live if cut is live else None), name="earshot-heard")
        elif live is not None and not live.ended:
            await self._interrupt(live, 0)
        await super()._handle_interruption(frame, direction)

    async def _interrupt(self, conversation: _Conversation, heard_ms: int) -> None:
        """earshot's interrupt for ``conversation``, ``heard_ms`` into its audio."""
        try:
            session = await self._http()
            url = f"{self._base_url}/v1/conversations/{conversation.conversation_id}/interrupt"
            async with session.post(url, json={"heard_ms": heard_ms}, headers=self._headers) as response:
                if response.status not in (202, 404):
                    logger.warning(f"{self}: earshot's interrupt answered {response.status}")
        except aiohttp.ClientError as e:
            logger.warning(f"{self}: earshot's interrupt failed: {e}")

    async def _tell_heard(self, played: float, heard: list[str], cut: _Conversation | None) -> None:
        """Puts the turn's heard text together (with earshot's cut of the live conversation) and tells it."""
        if cut is not None and cut.heard is not None:
            try:
                said = await asyncio.wait_for(cut.heard, timeout=5)
            except asyncio.TimeoutError:
                said = None
            if said:
                heard.append(said)
        self.last_heard = Heard(heard_ms=played, text=" ".join(part for part in heard if part).strip())
        await self._call_event_handler("on_heard", self.last_heard)


async def _sse(content: aiohttp.StreamReader) -> AsyncGenerator[tuple[str, dict], None]:
    """earshot's SSE messages as (type, JSON) pairs; comments (keep-alives) skipped, any line ending taken."""
    event, data = None, []
    buffer = b""
    async for chunk in content.iter_any():
        buffer += chunk
        *lines, buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        for raw in lines:
            line = raw.decode()
            if line == "":
                if event and data:
                    yield event, json.loads("\n".join(data))
                event, data = None, []
            elif line.startswith(":"):
                continue
            elif line.startswith("event:"):
                event = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:") :].strip())
