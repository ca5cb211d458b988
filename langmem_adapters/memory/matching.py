"""Matching and ranking records in Python, where the store cannot: metadata filters re-checked on
results, and word overlap as the relevance score on stores without a vector index."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langmem_adapters.core.filters import Condition, matches

__all__ = ["lexical_score", "matches_filter"]

_WORD = re.compile(r"\w+", re.UNICODE)


def matches_filter(metadata: Mapping[str, Any], conditions: Sequence[Condition]) -> bool:
    """Evaluate a checked metadata filter exactly as the stores evaluate item filters."""
    return matches(metadata, conditions)


def lexical_score(query: str, text: str) -> float:
    """Share of the query's distinct words found in ``text`` (0..1): the ranking used on stores
    without a vector index."""
    wanted = {w.lower() for w in _WORD.findall(query)}
    if not wanted:
        return 0.0
    have = {w.lower() for w in _WORD.findall(text)}
    return len(wanted & have) / len(wanted)
