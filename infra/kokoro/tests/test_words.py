"""Word timings from the model: asked for with ``"words": true``, they come before each piece's audio, in order,
cover the written text, and end where the audio ends (within one model frame)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import websockets
from conftest import Server, run

from kokoro_server.localrun import synthesize
from kokoro_server.protocol import decode_audio_frame
import numpy as np

from kokoro_server.timings import WordTimer, align, units, written_words

# One model frame: 600 samples at 24 kHz.
FRAME_MS = 25.0


async def words_and_audio(url: str, text: str, **fields: Any) -> tuple[list[dict[str, Any]], list[tuple[str, Any]], int]:
    """Every ``words`` entry, the order of what came (``("words", n)`` / ``("audio", samples so far)``) and the
    request's samples."""
    words: list[dict[str, Any]] = []
    order: list[tuple[str, Any]] = []
    samples = 0
    async with websockets.connect(url) as ws:
        await ws.send(synthesize("w", text, words=True, **fields))
        while True:
            raw = await asyncio.wait_for(ws.recv(), 60)
            if isinstance(raw, bytes):
                frame = decode_audio_frame(raw)
                assert frame is not None
                samples += len(frame.pcm) // 2
                order.append(("audio", samples))
                continue
            message = json.loads(raw)
            if message["type"] == "words":
                assert message["request_id"] == "w" and message["v"] == 1
                words.extend(message["words"])
                order.append(("words", len(message["words"])))
            elif message["type"] == "end":
                assert message["samples"] == samples
                return words, order, samples
            elif message["type"] == "error":
                raise AssertionError(message)


def assert_words_cover(text: str, words: list[dict[str, Any]], samples: int) -> None:
    """In order, never overlapping, each a piece of the text after the one before, the last ending with the
    audio."""
    assert words, "no words"
    at = 0
    end = 0.0
    for word in words:
        found = text.find(word["text"], at)
        assert found >= 0, f"{word['text']!r} is not in {text[at:]!r}"
        at = found + len(word["text"])
        assert end <= word["start_ms"] <= word["end_ms"], words
        end = word["end_ms"]
    assert [w["text"] for w in words] == [w.text for w in written_words(text)]
    audio_ms = samples / 24.0
    assert abs(words[-1]["end_ms"] - audio_ms) <= FRAME_MS, (words[-1], audio_ms)


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("en", "Hello there, my friend. It costs $12.50 at 3:30 pm."),
        ("fr", "Bonjour, comment allez-vous ? Ça coûte 12,50 €."),
        ("zh", "你好，今天天气很好。我有3个苹果。"),
        ("ja", "こんにちは。"),
    ],
)
def test_words_cover_the_text_and_end_with_the_audio(server: Server, language: str, text: str) -> None:
    words, order, samples = run(words_and_audio(server.ws_url, text, language=language))
    assert_words_cover(text, words, samples)
    # Each piece's words come before its audio: the first thing sent is words, never audio.
    assert order[0][0] == "words"


def test_a_commas_pause_lies_between_the_words_around_it(server: Server) -> None:
    words, _, _ = run(words_and_audio(server.ws_url, "Well, the answer is yes.", language="en"))
    well, the = words[0], words[1]
    assert (well["text"], the["text"]) == ("Well", "the")
    assert the["start_ms"] - well["end_ms"] >= FRAME_MS, words


def test_a_long_request_times_words_across_its_pieces(server: Server) -> None:
    text = (
        "The first clause of this sentence is short, the second one is a little longer than the first, "
        "and the third goes on until the sentence ends. A second sentence follows it."
    )
    words, order, samples = run(words_and_audio(server.ws_url, text))
    assert_words_cover(text, words, samples)
    assert sum(1 for kind, _ in order if kind == "words") >= 2, order


def test_without_asking_there_are_no_words(server: Server) -> None:
    async def scenario() -> list[str]:
        kinds = []
        async with websockets.connect(server.ws_url) as ws:
            await ws.send(synthesize("n", "Hello there."))
            while True:
                raw = await asyncio.wait_for(ws.recv(), 60)
                if isinstance(raw, str):
                    kinds.append(json.loads(raw)["type"])
                    if kinds[-1] == "end":
                        return kinds

    assert run(scenario()) == ["start", "end"]


def test_words_must_be_true_or_false(server: Server) -> None:
    async def scenario() -> dict[str, Any]:
        async with websockets.connect(server.ws_url) as ws:
            await ws.send(synthesize("b", "Hello.", words="yes"))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    reply = run(scenario())
    assert (reply["type"], reply["code"]) == ("error", "invalid_field")


def test_mandarin_syllables_keep_their_final_nasal() -> None:
    phonemes = "ʨi→ntʰjɛ→n xə↓n pʰi↗ŋkwo↓."
    assert [phonemes[a:b] for a, b in units(phonemes, syllables=True)] == ["ʨi→n", "tʰjɛ→n", "xə↓n", "pʰi↗ŋ", "kwo↓"]


def test_a_number_read_as_several_words_spans_them_all() -> None:
    text = "It costs 12.50 today."
    phonemes = "ɪt kˈɔsts twˈɛlv pɔɪnt fˈaɪv zˈiəɹoʊ tədˈeɪ."
    spans = units(phonemes, syllables=False)
    plan = align(written_words(text), [b - a for a, b in spans])
    assert plan == [(0, 1), (1, 2), (2, 6), (6, 7)]


def test_words_read_as_fewer_units_share_them_without_overlap() -> None:
    # Five kana against one romanized word: shared out by weight, one after another.
    plan = align(written_words("こんにちは"), [9])
    assert len(plan) == 5 and plan[0][0] == 0 and plan[-1][1] == 1
    assert all(a[1] == b[0] for a, b in zip(plan, plan[1:]))


def test_a_piece_without_durations_keeps_the_words_after_it_on_their_own_units() -> None:
    timer = WordTimer("One two. Three four.", "wˈʌn tˈuː. θɹˈiː fˈɔːɹ.", "en", 24000)
    # The first piece came without durations: its words share what was kept by their lengths.
    first = timer.piece("wˈʌn tˈuː.", None, 24000, (0, 24000), 24000)
    assert [w.text for w in first] == ["One", "two"]
    assert first[0].end_ms <= first[1].start_ms and first[1].end_ms <= 1000.0
    # The second has them: two frames of boundary, then 600 samples per frame.
    phonemes = "θɹˈiː fˈɔːɹ."
    durations = np.array([2] + [3] * len(phonemes) + [2])
    second = timer.piece(phonemes, durations, int(durations.sum()) * 600, (0, int(durations.sum()) * 600), int(durations.sum()) * 600)
    assert [w.text for w in second] == ["Three", "four"]
    assert second[0].start_ms == 1000.0 + 2 * 25.0
    assert timer.finish() == []


def test_finish_gives_the_words_still_owed_at_the_end() -> None:
    # The plan expects three units; the pieces rendered hold only two of them.
    timer = WordTimer("One two three.", "wˈʌn tˈuː θɹˈiː.", "en", 24000)
    phonemes = "wˈʌn tˈuː"
    durations = np.array([1] + [2] * len(phonemes) + [1])
    timed = timer.piece(phonemes, durations, int(durations.sum()) * 600, (0, int(durations.sum()) * 600), int(durations.sum()) * 600)
    owed = timer.finish()
    assert [w.text for w in timed + owed] == ["One", "two", "three"]
    assert owed[-1].start_ms == owed[-1].end_ms == timed[-1].end_ms
