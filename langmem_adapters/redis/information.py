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
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from langgraph.store.base import SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.hybrid import HybridSpec
from langmem_adapters.core.information import (
    TIE_DIGITS,
    LexicalCandidate,
    VectorCandidate,
    fuse_information,
)
from langmem_adapters.core.values import load_json
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.layout import Keys
from langmem_adapters.redis.lexical import ItemKey, Lexical, PlainWords
from langmem_adapters.redis.records import Record, decode_vectors, nearest
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.search import Searcher
from langmem_adapters.redis.stats import RedisStats

__all__ = ["Information", "idf", "information_page", "plain_information"]


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
    lexical = [(r, -s) for s, _, r in ranked]
    return information_page(hybrid, op, records, lexical, sum(weights.values()))


def information_page(
    hybrid: HybridSpec,
    op: SearchOp,
    vector: Sequence[Record],
    lexical: Sequence[tuple[Record, float]],
    mass: float,
) -> list[Record]:
    """The fused ranking (each record scored with its fused value) of the vector side's ``vector``
    (nearest first, the page's first ``offset + limit`` taken) and the lexical candidates
    ``lexical`` (best first, with their IDF sums, cut here to the candidates wanted and the
    floor); ``mass``: the IDF sum of every query word the lexical side weighed."""
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
        mass,
    )
    out = []
    for k, score in ranked:
        r = by_key[k]
        r.score = score
        out.append(r)
    return out


class Information(Lexical):
    """The lexical side of one Query Engine hybrid search under the information fusion: the
    ``information`` script's candidates (the items within the search's clauses holding a rare
    word), each with its IDF sum and its vectors, whose nearest distance to the query is computed
    here (the index's vector field is not read back: an item's hash keeps its vectors, ``e``, so an
    index with or without an exact twin serves alike). One round, as under the other fusions."""

    def __init__(
        self,
        keys: Keys,
        vector: Searcher,
        op: SearchOp,
        conds: tuple[Condition, ...],
        hybrid: HybridSpec,
        stats: RedisStats,
        spec: IndexSpec,
        qvec: list[float],
    ) -> None:
        """As :class:`Lexical`; ``spec`` and ``qvec``: the index and the query's vector."""
        super().__init__(keys, vector, op, conds, hybrid, stats)
        self.spec, self.qvec = spec, qvec
        self.known: dict[str, int] = {}  # the counts the call sent (the reply has the others)

    def call(self, window: int) -> Call | None:
        """The ``information`` script's call, or None when the query has no rare word. Without
        conditions to check on the rows (``exact``) the script reads only the candidates wanted
        (and those tied with the last); with some, all of them."""
        words = self.split()
        if words is None:
            return None  # only common words: nothing selects, the vector side ranks alone
        self.known = words.known
        head = " ".join(self.parts)
        read = self.want if self.exact else -1
        args = (self.keys.index(None), head, self.hybrid.rare_share, words.size, words.page, read)
        counts = [*(words.known[w] for w in words.rare), *(words.known[w] for w in words.common)]
        sizes = (len(words.rare), len(self.uncounted), len(words.common))
        sent = (*words.rare, *self.uncounted, *words.common, *counts)
        return Call((*args, *sizes, *sent), script="information")

    def page(
        self, vector: Sequence[Record], replies: Sequence[Any]
    ) -> Generator[Round, list[Any], list[Record]]:
        """The search's page: the information fusion of the vector side's ``vector`` (nearest
        first) and the candidates read from ``replies``."""
        yield from ()  # one round: the reply holds every candidate that can reach the page
        lexical, mass = self._candidates(replies[0]) if replies else ([], 0.0)
        ranked = information_page(self.hybrid, self.op, vector, lexical, mass)
        return ranked[self.op.offset : self.op.offset + self.op.limit]

    def _candidates(self, reply: Any) -> tuple[list[tuple[Record, float]], float]:
        """The candidates of the script's reply with their IDF sums, best first (ties, to
        :data:`TIE_DIGITS` decimals, by namespace and key), each with its nearest distance; and
        the query's IDF mass (every query word some item holds: those the script weighed)."""
        _, rows, counts, size = load_json(reply)
        if self.sized:
            self.stats.term("").update(size)
        for w, n in zip(self.uncounted, counts):
            self.stats.term(w).update(n)
        held = [*self.known.values(), *counts]
        mass = sum(idf(int(size), int(n)) for n in held if n > 0)
        read = [(Record.parse(m, c), e, float(total)) for m, c, e, total in rows]
        kept = [(r, e, total) for r, e, total in read if self.exact or self._ok(r)]
        for r, e, _ in kept:
            r.vectors = decode_vectors(e or None, self.spec)
        scored, unscored = nearest(self.spec, [r for r, _, _ in kept], self.qvec)
        for r in [*scored, *unscored]:
            r.distance = math.inf if r.distance is None else r.distance
            r.vectors = None
        out = [(r, total) for r, _, total in kept]
        out.sort(key=lambda c: (-round(c[1], TIE_DIGITS), _key(c[0])))
        return out, mass
