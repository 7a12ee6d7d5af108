"""Pronunciations given inline: ``[Nguyen](/wɪn/)`` says the word in brackets with the phonemes between the slashes.

This is the markup Kokoro's own front end (misaki) reads, so a text written for Kokoro elsewhere reads the same
here. The gateway sends it for a lexicon entry given in IPA; a client of the container may write it too. The
words in brackets are what the listener is told was said (word timings name them); the phonemes bypass the
front end for that span and go to the model as they are, less any symbol the model has no token for (as every
phoneme is). Anything that is not a complete mark is plain text, read by the front end.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# The words may hold anything but brackets; the phonemes anything but slashes and parentheses.
MARK = re.compile(r"\[([^\[\]]+)\]\(/([^/()]+)/\)")


def has_marks(text: str) -> bool:
    return "](/" in text and MARK.search(text) is not None


def plain(text: str) -> str:
    """The text with each mark replaced by its words: what is shown, timed and checked for its script."""
    return MARK.sub(lambda m: m.group(1), text) if has_marks(text) else text


def phonemize(text: str, g2p: Callable[[str], str]) -> str:
    """``text``'s phonemes: the front end's for the plain parts, the given ones for each mark, in order."""
    if not has_marks(text):
        return g2p(text)
    parts: list[str] = []
    at = 0
    for mark in MARK.finditer(text):
        before = text[at : mark.start()]
        if before.strip():
            parts.append(g2p(before))
        parts.append(mark.group(2).strip())
        at = mark.end()
    after = text[at:]
    if after.strip():
        parts.append(g2p(after))
    return " ".join(p for p in parts if p)


def split_marks(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The text with each mark's phonemes set aside (its words kept in brackets, so the mark can be rebuilt),
    and the phonemes, in order: a text whose letters are checked or normalised without touching the
    phonemes (``scripts.resolve`` would drop IPA letters of other scripts, such as ``θ``)."""
    kept: list[tuple[str, str]] = []

    def hold(m: re.Match[str]) -> str:
        kept.append((m.group(1), m.group(2)))
        return f"[{m.group(1)}](/\x00{len(kept) - 1}\x00/)"

    return (MARK.sub(hold, text) if has_marks(text) else text), kept


def join_marks(text: str, kept: list[tuple[str, str]]) -> str:
    """Undoes :func:`split_marks` on a text its marks went through unchanged."""
    if not kept:
        return text
    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))][1], text)
