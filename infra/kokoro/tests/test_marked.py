"""Pronunciations given inline (``[Nguyen](/wɪn/)``): the phonemes go to the model as given, the words in brackets
are what the word timings name, and the IPA survives the script check that drops letters of other scripts."""

from __future__ import annotations

from conftest import Server, run
from test_words import words_and_audio

from kokoro_server import marked, scripts
from kokoro_server.config import Settings


def test_marks_are_phonemized_as_given_and_the_rest_by_the_front_end() -> None:
    g2p = lambda text: f"<{text.strip()}>"  # noqa: E731 (a front end that shows what it was asked)
    assert marked.phonemize("Call [Nguyen](/wɪn/) today.", g2p) == "<Call> wɪn <today.>"
    assert marked.phonemize("[EKS](/iː keɪ ɛs/)", g2p) == "iː keɪ ɛs"
    assert marked.phonemize("No marks [here].", g2p) == "<No marks [here].>"
    assert marked.plain("Call [Nguyen](/wɪn/) and [New York](/nuː jɔːk/).") == "Call Nguyen and New York."


def test_the_script_check_keeps_the_ipa_and_checks_the_words() -> None:
    # θ is a Greek letter: in English text it would be dropped; inside a mark it is a phoneme and stays.
    resolved = scripts.resolve("Say [Thea](/θiːə/) now.", "en")
    assert resolved.text == "Say [Thea](/θiːə/) now."
    # NFKC would make the aspiration mark a plain h; the phonemes are not normalised.
    assert scripts.resolve("[Tom](/tʰɑm/)", "en").text == "[Tom](/tʰɑm/)"
    assert scripts.resolve("Привет [Tom](/tɑm/)", "en").text == "[Tom](/tɑm/)"


def test_the_engine_reads_a_mark_as_its_phonemes_not_as_its_words() -> None:
    from kokoro_server.engines.onnx_engine import OnnxEngine

    engine = OnnxEngine(Settings.from_env({}))
    engine.load()
    default = engine.phonemize("Call Nguyen today.", "en")
    given = engine.phonemize("Call [Nguyen](/wˈɪn/) today.", "en")
    assert "wˈɪn" in given and given != default
    assert given.replace("wˈɪn", "") == default.replace(engine.phonemize("Nguyen", "en"), "")


def test_a_marked_word_sounds_as_given_and_is_timed_under_its_written_words(server: Server) -> None:
    async def both() -> tuple:
        plain = await words_and_audio(server.ws_url, "Call Nguyen today.")
        given = await words_and_audio(server.ws_url, "Call [Nguyen](/wˈɪn/) today.")
        return plain, given

    (plain_words, _, plain_samples), (given_words, _, given_samples) = run(both())
    assert [w["text"] for w in given_words] == ["Call", "Nguyen", "today"]
    assert [w["text"] for w in plain_words] == ["Call", "Nguyen", "today"]
    # espeak-ng reads "Nguyen" as two syllables or more; "wɪn" is one: the word is shorter, and so is the audio.
    span = lambda words: words[1]["end_ms"] - words[1]["start_ms"]  # noqa: E731
    assert span(given_words) < span(plain_words), (given_words, plain_words)
    assert given_samples < plain_samples
