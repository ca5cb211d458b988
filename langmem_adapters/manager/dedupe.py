"""Duplicate detection before any model call, and the merges of compaction.

A text *duplicates* a fact when, after :func:`normalise` (Unicode NFKC, case-folded, only word
characters, single spaces), the two are equal, or their word sets overlap with a Jaccard
similarity of at least ``threshold`` (|A ∩ B| / |A ∪ B|), or, when ``score`` is set and the store
ranked the fact by vector similarity, that score is at least ``score``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError
from langmem_adapters.manager.actions import Remembered

__all__ = ["Dedupe", "jaccard", "normalise"]

_WORD = re.compile(r"\w+", re.UNICODE)


def normalise(text: str) -> str:
    """Case, accents' composition, punctuation and spacing removed: ``"I  live in Paris!"`` and
    ``"i live in paris"`` normalise alike."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def jaccard(a: str, b: str) -> float:
    """Word-set overlap of two texts in ``[0, 1]`` (1.0 for two texts without words)."""
    left, right = set(normalise(a).split()), set(normalise(b).split())
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def _check_ratio(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentTypeError(f"{what} must be a number in [0, 1], got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InvalidArgumentError(f"{what} must be in [0, 1], got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Dedupe:
    """The duplicate rule of the module docstring; ``threshold=1.0`` keeps only normalised equality."""

    threshold: float = 0.9
    score: float | None = None

    def __post_init__(self) -> None:
        _check_ratio(self.threshold, "duplicate_threshold")
        if self.score is not None:
            _check_ratio(self.score, "duplicate_score")

    def same(self, text: str, fact: Remembered) -> bool:
        """Whether ``text`` duplicates ``fact``."""
        if normalise(text) == normalise(fact.text):
            return True
        if jaccard(text, fact.text) >= self.threshold:
            return True
        return self.score is not None and fact.score is not None and fact.score >= self.score

    def lexical(self) -> Dedupe:
        """The same rule without the store score, for a text that was not the search query."""
        return Dedupe(self.threshold)

    def match(self, text: str, facts: Iterable[Remembered]) -> Remembered | None:
        """The first of ``facts`` that ``text`` duplicates, or ``None``."""
        return next((f for f in facts if self.same(text, f)), None)
