"""Language by script, and phonemes cut into model-sized pieces (real espeak-ng and pyopenjtalk)."""

from __future__ import annotations

import pytest

from kokoro_server import scripts
from kokoro_server.phonemes import (
    FIRST_PIECE_PHONEMES,
    MAX_PHONEMES,
    PIECE_PHONEMES,
    EspeakG2P,
    JapaneseG2P,
    pauses,
    split_pieces,
)
from kokoro_server.protocol import ProtocolError


@pytest.mark.parametrize(
    ("text", "language"),
    [("Hello world.", "en"), ("こんにちは。", "ja"), ("東京は大きい。", "ja"), ("你好，世界。", "zh"), ("42", "en")],
)
def test_language_follows_the_script(text: str, language: str) -> None:
    assert scripts.resolve(text, None).language == language


def test_letters_of_other_scripts_are_dropped() -> None:
    assert scripts.resolve("Hello Привет world", None).text == "Hello world"
    assert scripts.resolve("ｆｕｌｌ　ｗｉｄｔｈ", None).text == "full width"


@pytest.mark.parametrize(("text", "language"), [("Привет", None), ("!!! ...", None), ("日本語", "fr")])
def test_text_without_speakable_letters_is_refused(text: str, language: str | None) -> None:
    with pytest.raises(ProtocolError) as raised:
        scripts.resolve(text, language, "r1")
    assert raised.value.code == "unsupported_script" and raised.value.request_id == "r1"


def test_espeak_keeps_stress_and_punctuation() -> None:
    phonemes = EspeakG2P("en")("Hello, world. How are you?")
    assert phonemes.startswith("həlˈoʊ,") and phonemes.endswith("?")
    assert "." in EspeakG2P("fr")("Bonjour le monde.")


def test_mandarin_keeps_only_real_full_stops() -> None:
    phonemes = EspeakG2P("zh")("你好, 世界. 今天很好.")
    assert split_pieces(phonemes)[0].count(".") == 1


def test_japanese_phonemes_come_from_openjtalk_readings() -> None:
    assert JapaneseG2P()("こんにちは。") == "koɲɲiʨiβa."


def test_pieces_are_sentences_and_long_sentences_are_cut_at_clauses() -> None:
    assert split_pieces("wˈʌn. tˈuː! θɹˈiː?") == ["wˈʌn.", "tˈuː!", "θɹˈiː?"]
    long_sentence = ", ".join(["lˈɔŋ klˈɔz wɪð mˈɛni wˈɜːdz"] * 40) + "."
    pieces = split_pieces(f"ʃˈɔːɹt. {long_sentence}")
    assert pieces[0] == "ʃˈɔːɹt."
    assert len(pieces) >= 8 and all(len(p) <= PIECE_PHONEMES for p in pieces)
    assert all(p.endswith(",") for p in pieces[1:-1]) and pieces[-1].endswith(".")
    assert " ".join(pieces[1:]) == long_sentence


def test_a_clause_longer_than_the_model_context_is_cut_at_words() -> None:
    clause = " ".join(["wˈɜːd"] * 200) + "."
    pieces = split_pieces(clause)
    assert len(pieces) >= 2 and all(len(p) <= MAX_PHONEMES for p in pieces)
    assert " ".join(pieces) == clause


def test_pauses_follow_punctuation_and_the_last_piece_has_none() -> None:
    assert pauses(["wˈʌn.", "tˈuː,", "θɹˈiː."], 0.25, 0.1) == [0.25, 0.1, 0.0]
    assert pauses([], 0.25, 0.1) == []


def test_the_first_piece_is_cut_short_at_a_clause() -> None:
    # A medium sentence (one piece by the sentence rule) opens with a short clause.
    sentence = "aɪ fˈaʊnd jʊɹ ˈɔːɹdɚ, ænd ɪt ʃˈɪpt ðɪs mˈɔːɹnɪŋ fɹʌm ˌaʊɚ wˈɛɹhaʊs ɪn lˈiːdz."
    assert split_pieces(sentence) == [sentence]
    pieces = split_pieces(f"{sentence} ʃˈɔːɹt.", first_target=FIRST_PIECE_PHONEMES)
    assert pieces == ["aɪ fˈaʊnd jʊɹ ˈɔːɹdɚ,", "ænd ɪt ʃˈɪpt ðɪs mˈɔːɹnɪŋ fɹʌm ˌaʊɚ wˈɛɹhaʊs ɪn lˈiːdz.", "ʃˈɔːɹt."]
    # Clauses that fit together stay together.
    three = "wˈʌn, tˈuː, θɹˈiː, " + "lˈɔŋ wˈɜːdz " * 8 + "ˈɛnd."
    assert split_pieces(three, first_target=20)[0] == "wˈʌn, tˈuː, θɹˈiː,"


def test_a_first_piece_without_a_clause_or_short_enough_stays_whole() -> None:
    no_clause = " ".join(["wˈɜːd"] * 20) + "."
    assert split_pieces(no_clause, first_target=20) == [no_clause]
    assert split_pieces("ʃˈɔːɹt, jˈɛs.", first_target=60) == ["ʃˈɔːɹt, jˈɛs."]
    assert split_pieces("ʃˈɔːɹt, jˈɛs.", first_target=0) == ["ʃˈɔːɹt, jˈɛs."]
