"""The ``information`` fusion (``core.information``) on the Redis stores, opt-in
(``hybrid={"fusion": "information"}``): the lexical candidates ranked by the IDF sum
``sum ln(1 + (N - df + 0.5) / (df + 0.5))`` of the query words each holds (``N`` the collection's
items holding words, ``df`` those holding the word, counted exactly: the collection's word counts),
among the items holding a rare word, each with its distance to the query vector (its nearest
vector's), fused with the vector side's page by ``fuse_information``. Plain mode has every searched
record's words and distance already; the Query Engine's lexical script returns each candidate's
IDF sum and vectors (``lua/information.lua``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from langgraph.store.base import SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.hybrid import HybridSpec
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information
from langmem_adapters.redis.lexical import ItemKey, PlainWords
from langmem_adapters.redis.records import Record

__all__ = ["idf", "information_page", "plain_information"]


def idf(size: int, df: int) -> float:
    """A word's inverse document frequency in a collection of ``size`` items, ``df`` holding it
    (BM25's, as on Postgres)."""
    return math.log(1 + (size - df + 0.5) / (df + 0.5))


def _key(r: Record) -> ItemKey:
    return (nsp.join(r.namespace), r.key)


def plain_information(
    hybrid: HybridSpec, op: SearchOp, records: Sequence[Record], w: PlainWords
) -> list[Record]:
    """Plain mode's information fusion of a search's scored ``records`` (nearest first, each with
    its distance): the candidates are the records holding a rare word, ranked by the IDF sum of
    the query words they hold (ties by namespace and key)."""
    weights = {word: idf(w.size, n) for word, n in w.counts.items()}
    ranked = sorted(
        (-sum(weights.get(word, 0.0) for word in set(d)), _key(r), r)
        for d, r in zip(w.docs, records)
        if not w.rare.isdisjoint(d)
    )
    return information_page(hybrid, op, records, [(r, -s) for s, _, r in ranked])


def information_page(
    hybrid: HybridSpec,
    op: SearchOp,
    vector: Sequence[Record],
    lexical: Sequence[tuple[Record, float]],
) -> list[Record]:
    """The fused ranking (each record scored with its fused value) of the vector side's ``vector``
    (nearest first, the page's first ``offset + limit`` taken) and the lexical candidates
    ``lexical`` (best first, with their IDF sums, cut here to the candidates wanted and the
    floor)."""
    page = op.offset + op.limit
    depth = hybrid.candidates(op.offset, op.limit)
    lexical = lexical[:depth]
    lexical = lexical[: hybrid.floored([s for _, s in lexical])]
    by_key: Mapping[ItemKey, Record] = {_key(r): r for r, _ in lexical} | {
        _key(r): r for r in vector[:page]
    }
    ranked = fuse_information(
        [VectorCandidate(_key(r), r.distance or 0.0) for r in vector[:page]],
        [LexicalCandidate(_key(r), s, r.distance or 0.0) for r, s in lexical],
        hybrid,
        page,
        depth,
    )
    out = []
    for k, score in ranked:
        r = by_key[k]
        r.score = score
        out.append(r)
    return out
