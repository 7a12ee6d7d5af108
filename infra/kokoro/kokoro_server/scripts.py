"""Which language a text is spoken in, decided by the writing systems it uses.

The G2P front ends speak only some scripts: espeak-ng would spell Cyrillic or Arabic letter by letter in an
English voice, and reads kanji as Chinese. So before any phonemes are made, a request's text is checked
against its language (given, or chosen here from the script), letters of other scripts are dropped, and a
text with nothing speakable left is refused with ``unsupported_script``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from . import marked
from .protocol import ProtocolError

LATIN = "latin"
KANA = "kana"
HAN = "han"
DIGIT = "digit"
OTHER = "other"

# What each language's front end can read.
ALLOWED = {
    "en": frozenset({LATIN, DIGIT}),
    "fr": frozenset({LATIN, DIGIT}),
    "zh": frozenset({HAN, LATIN, DIGIT}),
    "ja": frozenset({KANA, HAN, LATIN, DIGIT}),
}

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class ResolvedText:
    language: str
    text: str


def script_of(char: str) -> str | None:
    """The writing system of a letter or digit; ``None`` for spaces, punctuation and marks."""
    if char.isdigit():
        return DIGIT
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    if name.startswith("LATIN"):
        return LATIN
    if name.startswith(("HIRAGANA", "KATAKANA")):
        return KANA
    if name.startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "IDEOGRAPHIC")):
        return HAN
    return OTHER


def detect_language(text: str) -> str | None:
    """Kana means Japanese, else Han means Chinese, else Latin letters or digits mean English."""
    scripts = {script_of(c) for c in text}
    if KANA in scripts:
        return "ja"
    if HAN in scripts:
        return "zh"
    if LATIN in scripts or DIGIT in scripts:
        return "en"
    return None


def resolve(text: str, language: str | None, request_id: str | None = None) -> ResolvedText:
    """Normalise the text, settle its language and drop letters that language cannot read. The phonemes of an
    inline pronunciation (``marked.py``) are set aside first: they are IPA, not letters of a script."""
    text, phonemes = marked.split_marks(text)
    text = unicodedata.normalize("NFKC", text)
    chosen = language or detect_language(text)
    if chosen is None:
        raise ProtocolError(
            "unsupported_script",
            "text has no letters in a supported script (Latin, kana, Han)",
            request_id,
        )
    allowed = ALLOWED[chosen]
    kept = "".join(c if _readable(c, allowed) else " " for c in text)
    if not any(script_of(c) in allowed for c in kept):
        raise ProtocolError(
            "unsupported_script",
            f"text has no letters that language {chosen!r} can speak",
            request_id,
        )
    return ResolvedText(language=chosen, text=marked.join_marks(_SPACES.sub(" ", kept).strip(), phonemes))


def _readable(char: str, allowed: frozenset[str]) -> bool:
    script = script_of(char)
    return script is None or script in allowed
