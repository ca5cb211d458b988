"""The ``information`` fusion of hybrid search (``HybridSpec.fusion == "information"``): both
sides scored in one unit, nats, with no constant and no embedder's cosine scale.

Every candidate of either side (the vector page and the lexical candidates) carries ``ln(M /
rank)`` nats by its distance's rank among all ``M`` of them (1 + the candidates nearer the query:
how unlikely a candidate is to rank as high), plus the IDF sum of the query words it holds, each
word's :func:`idf` ``ln(N / df)`` (how unlikely an item of the collection is to hold it). An IDF
sum counts only where it can choose the page: not when more than a page of candidates hold exactly
that sum (tied on the same words), nor when it is the sum the lexical side's cut runs through (its
last candidate's, when it returned all it was asked for: the cut hides how many more hold it).
Designed and measured offline in ``benchmarks/fusion_study.py`` (``information_tied_cut_union``)
on LongMemEval, LoCoMo and the identifier set, with three embedders (docs/hybrid.md, "Both sides in
nats").

The score a search returns is that information as a **share of the most a candidate of this
search could carry**: ``(vector_weight x ln(M / rank) + lexical_weight x idf) / (vector_weight x
ln M + lexical_weight x mass)``, ``mass`` the IDF sum of every query word the lexical side weighed
(held by some text: a word no text holds chooses nothing). 1.0: nearest of all candidates and
holding every weighed word; 0.0: farthest and holding no word that counts. Per search the map is a
shift and a positive scale, so the ranking is the nats' own; the scale is a vector store's and the
other fusions' (``min_score``, the manager's ``duplicate_score`` and the episodic blend read it as
is). When the lexical side ranked no candidate (no rare query word, or none in scope) ``mass`` is
0: the search is a vector search and the nearest scores 1.0 (not ``ln M / (ln M + mass)``: words
that chose nothing say nothing of the candidates). A side weighted 0 adds nothing to either term.
With nothing to tell the candidates apart (one candidate and no mass) each scores 1.0.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Generic, TypeVar

from langmem_adapters.core.hybrid import HybridSpec

__all__ = [
    "TIE_DIGITS",
    "LexicalCandidate",
    "VectorCandidate",
    "counted_idf",
    "fuse_information",
    "idf",
]

K = TypeVar("K", bound=Hashable)

#: IDF sums equal to this many decimals are ties: a server may add the same words' IDFs in another
#: order, which moves the last bits.
TIE_DIGITS = 9


def idf(size: float, df: float) -> float:
    """The information of a query word held by ``df`` of a collection's ``size`` items, ``ln(N /
    df)`` nats: the vector side's unit, unlike BM25's smoothed ``ln(1 + (N - df + 0.5) / (df +
    0.5))``, so a word only one item holds (``ln N``) outweighs any vector rank (at most ``ln M``,
    ``M <= N``). With BM25's IDF the memory holding an identifier ranked second among 12 near-miss
    memories; on LongMemEval, LoCoMo and the identifier set both forms give the same recall@5 within
    0.003 with three embedders (``benchmarks/fusion_study.py --idf plain``,
    ``benchmarks/idf_small.py``, docs/hybrid.md). The stores' SQL and Lua compute the same."""
    return math.log(max(size, df) / df)


@dataclass(slots=True)
class VectorCandidate(Generic[K]):
    """An item of the vector side's page (best first) and its distance to the query vector.
    Not frozen (nor ``LexicalCandidate``): a frozen dataclass is built 2.4x slower, 15% of a
    Postgres search's fusion of ~50 candidates on LongMemEval (docs/hybrid.md)."""

    key: K
    distance: float


@dataclass(slots=True)
class LexicalCandidate(Generic[K]):
    """A lexical candidate (best first): the IDF sum of the query words it holds, and its
    distance to the query vector (its nearest vector's)."""

    key: K
    idf: float
    distance: float


def counted_idf(lexical: Sequence[LexicalCandidate[K]], page: int, depth: int) -> dict[K, float]:
    """The IDF sum of each lexical candidate that can choose a page ending at ``page``: none where
    more than ``page`` candidates hold exactly its sum, or where the sum is the last candidate's and
    the lexical side returned its full ``depth`` (the cut runs through it)."""
    tie = {c.key: round(c.idf, TIE_DIGITS) for c in lexical}
    ties = Counter(tie.values())
    cut = tie[lexical[-1].key] if lexical and len(lexical) >= depth else None
    return {c.key: c.idf for c in lexical if ties[tie[c.key]] <= page and tie[c.key] != cut}


def fuse_information(
    vector: Sequence[VectorCandidate[K]],
    lexical: Sequence[LexicalCandidate[K]],
    spec: HybridSpec,
    page: int,
    depth: int,
    mass: float,
) -> list[tuple[K, float]]:
    """Every candidate of either side with its fused score, best first: ``vector_weight x
    ln(M / rank of its distance among all M candidates) + lexical_weight x`` its
    :func:`counted_idf` (``depth``: how many candidates the lexical side was asked for), over the
    most a candidate could carry, ``vector_weight x ln M + lexical_weight x mass`` (``mass``: the
    IDF sum of every query word the lexical side weighed; 0 when it ranked no candidate), so 0..1
    (see the module docstring). When nothing can tell the candidates apart (one candidate, no
    lexical candidate) each scores 1.0, as a lone candidate does under relative-score fusion. The
    order is that of the nats (ties keep the vector side's order, then the lexical side's). A side
    weighted 0 is left out, candidates too (``vector_weight=0``: the lexical candidates alone), as
    in ``core.hybrid.fuse``."""
    vector = vector if spec.vector_weight > 0 else []
    lexical = lexical if spec.lexical_weight > 0 else []
    distance = {c.key: c.distance for c in vector}  # the vector side's keys first
    for c in lexical:
        distance.setdefault(c.key, c.distance)
    ordered = sorted(distance.values())
    idf = counted_idf(lexical, page, depth)
    # the most a candidate can carry: nearest of all, holding every weighed word (none to hold
    # when the lexical side ranked no candidate: then the vector side's shares alone)
    top = spec.vector_weight * math.log(max(len(ordered), 1))
    most = top + spec.lexical_weight * (mass if lexical else 0.0)
    nats = {  # less the constant vector_weight x ln M, added back in each share
        key: -spec.vector_weight * math.log(1 + bisect_left(ordered, d))
        + spec.lexical_weight * idf.get(key, 0.0)
        for key, d in distance.items()
    }
    # a stable sort: ties keep the candidates' order (the vector side's first)
    ranked = sorted(nats.items(), key=itemgetter(1), reverse=True)
    # a server's IDF sums may exceed its mass in the last bits: the share is capped, not the order
    return [(key, min(1.0, max(0.0, (top + n) / most)) if most > 0 else 1.0) for key, n in ranked]
