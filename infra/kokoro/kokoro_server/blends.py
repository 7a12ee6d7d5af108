"""Voice blends: a voice made of others, spoken from the weighted mean of their style vectors.

The gateway sends a blend under its canonical name, each voice once with its share of the whole
(``af_bella(0.667)+af_sky(0.333)``: ``earshot_core::voice_blend``); Kokoro-FastAPI's way of writing them
(``af_bella+af_sky`` for equal parts, ``af_bella(2)+af_sky(1)``) is read the same, so the container takes a
blend from any client. A style pack is a few hundred KB, so the blends made are kept for the next sentence,
the most recently used few only.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Mapping

MOST_PARTS = 4
KEPT = 16
_PART = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*(?:\(\s*([0-9]*\.?[0-9]+)\s*\))?\s*$")


def parse(name: str) -> list[tuple[str, float]] | None:
    """The blend ``name`` writes, each voice with its share of the whole (summing to 1); ``None`` for a plain
    voice name or anything that is not a blend of at most ``MOST_PARTS`` voices with positive weights."""
    if "+" not in name and "(" not in name:
        return None
    parts: dict[str, float] = {}
    for written in name.split("+"):
        match = _PART.match(written)
        if not match:
            return None
        weight = float(match.group(2)) if match.group(2) else 1.0
        if not 0.0 < weight <= 100.0:
            return None
        parts[match.group(1)] = parts.get(match.group(1), 0.0) + weight
    if len(parts) > MOST_PARTS:
        return None
    total = sum(parts.values())
    return sorted((voice, weight / total) for voice, weight in parts.items())


class Blends:
    """Style packs by voice name, a blend made from them when asked for (numpy arrays or torch tensors)."""

    def __init__(self, packs: Mapping[str, Any]) -> None:
        self._packs = packs
        self._made: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def offers(self, name: str) -> bool:
        if name in self._packs:
            return True
        parts = parse(name)
        return parts is not None and all(voice in self._packs for voice, _ in parts)

    def style(self, name: str) -> Any:
        """The pack of ``name``: a voice's own, or the blend's weighted mean (``KeyError`` for neither)."""
        if name in self._packs:
            return self._packs[name]
        with self._lock:
            if name in self._made:
                self._made.move_to_end(name)
                return self._made[name]
        parts = parse(name)
        if parts is None:
            raise KeyError(name)
        blended = sum(share * self._packs[voice] for voice, share in parts)
        with self._lock:
            self._made[name] = blended
            while len(self._made) > KEPT:
                self._made.popitem(last=False)
        return blended
