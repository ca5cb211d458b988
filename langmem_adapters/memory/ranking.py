"""How the tiers read a store's ranking: the store's score on a 0..1 relevance scale (a hybrid
store's fused score under rank fusion is a reciprocal-rank value, not a cosine), a minimum score,
and maximal marginal relevance (MMR) for diverse recalls.

MMR (Carbonell and Goldstein, 1998) picks, one at a time, the candidate with the best
``(1 - diversity) * relevance - diversity * redundancy``, where ``redundancy`` is its highest word
overlap (Jaccard) with the candidates already picked: near-duplicate memories ("Lives in Paris",
"The user lives in Paris") stop crowding out the rest of a page. Word overlap needs no vectors,
which a store search does not return, and costs nothing next to the search.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

from langgraph.store.base import BaseStore

from langmem_adapters.core.hybrid import HybridSpec, words
from langmem_adapters.errors import InvalidMemoryQueryError, MemoryTypeError

__all__ = ["check_diversity", "check_min_score", "hybrid_of", "mmr", "relevance"]

T = TypeVar("T")


def hybrid_of(store: BaseStore) -> HybridSpec | None:
    """The store's hybrid options when its index fuses lexical and vector rankings, else ``None``
    (this package's stores expose their validated index as ``index_spec``; others have none)."""
    spec = getattr(store, "index_spec", None)
    hybrid = getattr(spec, "hybrid", None)
    return hybrid if isinstance(hybrid, HybridSpec) else None


def relevance(score: float, hybrid: HybridSpec | None) -> float:
    """A store score on the 0..1 scale of a cosine similarity: a fused score is divided by the
    best one possible (``HybridSpec.best_score``: first on every weighted side; 1.0 for the
    relative and information fusions, whose scores are on that scale already), so the ranking is
    unchanged; any other score is returned as is."""
    if hybrid is None:
        return score
    best = hybrid.best_score()
    return score / best if best > 0 else 0.0


def check_min_score(min_score: float | None) -> float | None:
    """``None`` (no minimum) or a finite number."""
    if min_score is None:
        return None
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)):
        raise MemoryTypeError(f"min_score must be a number or None, got {type(min_score).__name__}")
    if not math.isfinite(min_score):
        raise InvalidMemoryQueryError(f"min_score must be finite, got {min_score!r}")
    return float(min_score)


def check_diversity(diversity: float) -> float:
    """A number in [0, 1]: 0 ranks by relevance alone, 1 by novelty alone."""
    if isinstance(diversity, bool) or not isinstance(diversity, (int, float)):
        raise MemoryTypeError(f"diversity must be a number, got {type(diversity).__name__}")
    if not 0.0 <= diversity <= 1.0:
        raise InvalidMemoryQueryError(f"diversity must be in [0, 1], got {diversity!r}")
    return float(diversity)


def mmr(
    candidates: Sequence[T],
    k: int,
    diversity: float,
    *,
    score: Callable[[T], float],
    text: Callable[[T], str],
) -> list[T]:
    """Up to ``k`` of ``candidates`` in MMR order (see the module docstring); relevance is each
    candidate's ``score`` divided by the best one, so the trade-off does not depend on the scale."""
    if diversity == 0.0 or len(candidates) <= 1:
        return list(candidates[:k])
    top = max((score(c) for c in candidates), default=0.0)
    scale = top if top > 0 else 1.0
    bags = [set(words(text(c))) for c in candidates]
    left = list(range(len(candidates)))
    picked: list[int] = []
    while left and len(picked) < k:

        def value(i: int) -> float:
            overlap = max((_jaccard(bags[i], bags[j]) for j in picked), default=0.0)
            return (1.0 - diversity) * score(candidates[i]) / scale - diversity * overlap

        best = max(left, key=value)  # the first of equal values: the store's order breaks ties
        picked.append(best)
        left.remove(best)
    return [candidates[i] for i in picked]


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
