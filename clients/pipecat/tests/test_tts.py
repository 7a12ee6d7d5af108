"""EarshotTTSService's own rules, without a gateway: what it asks earshot for (settings as updated, the
language, the rate), what it keeps over a long session, whose HTTP session it closes, and how it reads
earshot's SSE. Run with the peer venv's pipecat: `python -m unittest discover clients/pipecat/tests`."""

import asyncio
import unittest

import aiohttp
from pipecat.services.settings import TTSSettings
from pipecat.transcriptions.language import Language

from earshot_pipecat.tts import FALLBACK_RATE, MOST_TURNS, EarshotTTSService, _sse, earshot_rate


def service(**kwargs) -> EarshotTTSService:
    tts = EarshotTTSService(base_url="http://127.0.0.1:8787/", **kwargs)
    tts._sample_rate = kwargs.get("sample_rate") or 24000
    return tts


class Settings(unittest.IsolatedAsyncioTestCase):
    async def test_an_update_holds_from_the_next_text_and_the_language_is_a_bcp_47_tag(self) -> None:
        tts = service(voice="alloy")
        body = tts.request_body("Hello.", "c1")
        self.assertEqual((body["voice"], body["output_format"]), ("alloy", "pcm_24000"))
        self.assertNotIn("backend", body)
        self.assertNotIn("language", body, "earshot detects it when none is set")
        await tts._update_settings(TTSSettings(model="polly", voice="lea", language=Language.FR_FR))
        body = tts.request_body("Bonjour.", "c2")
        self.assertEqual((body["backend"], body["voice"], body["language"]), ("polly", "lea", "fr-FR"))

    def test_a_language_given_at_the_start_is_sent(self) -> None:
        self.assertEqual(service(language=Language.ZH).request_body("你好。", "c")["language"], "zh")
        self.assertEqual(service(language="en-GB").request_body("Hi.", "c")["language"], "en-GB")


class Rates(unittest.TestCase):
    def test_earshot_makes_its_rates_and_sends_24_khz_for_the_others(self) -> None:
        for rate in (8000, 16000, 22050, 24000, 44100, 48000):
            self.assertEqual(earshot_rate(rate), rate)
        for rate in (11025, 32000, 96000):
            self.assertEqual(earshot_rate(rate), FALLBACK_RATE)
        self.assertEqual(service(sample_rate=32000).request_body("Hi.", "c")["output_format"], "pcm_24000")


class State(unittest.TestCase):
    def test_a_long_session_keeps_only_the_last_turns(self) -> None:
        tts = service()
        for i in range(50):
            tts._turn(f"context-{i}")
            tts._context_audio_ms[f"context-{i}"] = 1000.0
        self.assertEqual(list(tts._turns), [f"context-{i}" for i in range(50 - MOST_TURNS, 50)])
        self.assertLessEqual(len(tts._context_audio_ms), MOST_TURNS)


class Session(unittest.IsolatedAsyncioTestCase):
    async def test_the_caller_s_session_is_used_and_left_open(self) -> None:
        async with aiohttp.ClientSession() as mine:
            tts = service(aiohttp_session=mine)
            self.assertIs(await tts._http(), mine)
            await tts.cleanup()
            self.assertFalse(mine.closed, "the caller's session is the caller's to close")
        own = service()
        session = await own._http()
        await own.cleanup()
        self.assertTrue(session.closed, "the service closes a session of its own")


class Reader:
    """A response body that arrives in the pieces given."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def iter_any(self):
        for piece in self.pieces:
            yield piece


class Sse(unittest.IsolatedAsyncioTestCase):
    async def test_messages_are_read_across_any_split_and_line_ending_and_comments_skipped(self) -> None:
        body = b': keep-alive\r\n\r\nevent: audio\r\ndata: {"data": "AAA="}\r\n\r\nevent: done\ndata: {}\n\n'
        pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
        got = [m async for m in _sse(Reader(pieces))]
        self.assertEqual(got, [("audio", {"data": "AAA="}), ("done", {})])


if __name__ == "__main__":
    asyncio.run(unittest.main())
