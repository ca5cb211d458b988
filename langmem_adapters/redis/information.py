"""The ``information`` fusion (``core.information``) on the Redis stores, opt-in
(``hybrid={"fusion": "information"}``): the lexical candidates ranked by the IDF sum
``sum ln(N / df)`` (``core.information.idf``) of the query words each holds (``N`` the collection's
items holding words, ``df`` those holding the word, counted exactly: the collection's word counts),
among the items holding a rare word, each with its distance to the query vector (its nearest
vector's), fused with the vector side's page by ``fuse_information``. Plain mode has every searched
record's words and distance already; the Query Engine's lexical script returns each candidate's
IDF sum and distance (``lua/information.lua``), the two-script way of a search whose rows are
checked here (``redis.fused`` sends any other as one script)."""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.store.base import SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.hybrid import HybridSpec
from langmem_adapters.core.information import (
    TIE_DIGITS,
    LexicalCandidate,
    VectorCandidate,
    fuse_information,
    idf,
)
from langmem_adapters.core.values import load_json
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.lexical import ItemKey, Lexical, PlainWords
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.search import query_vector, standard_distance

__all__ = ["Candidate", "Information", "information_page", "plain_information"]


def _key(r: Record) -> ItemKey:
    return (nsp.join(r.namespace), r.key)


class Candidate(NamedTuple):
    """A lexical candidate: its key, the IDF sum of the query words it holds, its distance to the
    query vector (its nearest vector's), and its record (None: not read yet, ``name`` its hash's
    name: read when the page takes it)."""

    key: ItemKey
    idf: float
    distance: float
    record: Record | None
    name: str = ""


def plain_information(
    hybrid: HybridSpec, op: SearchOp, records: Sequence[Record], w: PlainWords
) -> list[Record]:
    """Plain mode's information fusion of a search's scored ``records`` (nearest first, each with
    its distance): the candidates are the records holding a rare word, ranked by the IDF sum of
    the query words they hold (ties by namespace and key)."""
    weights = {word: idf(w.size, n) for word, n in w.counts.items()}
    ranked = sorted(
        (-sum(weights.get(word, 0.0) for word in h), _key(r), r)
        for h, r in zip(w.held, records)
        if not w.rare.isdisjoint(h)
    )
    lexical = [Candidate(k, -s, r.distance or 0.0, r) for s, k, r in ranked]
    by_key = {_key(r): r for r in records}
    mass = sum(weights.values())
    return _scored(information_page(hybrid, op, records, lexical, mass), by_key)


def information_page(
    hybrid: HybridSpec,
    op: SearchOp,
    vector: Sequence[Record],
    lexical: Sequence[Candidate],
    mass: float,
) -> list[tuple[ItemKey, float]]:
    """The fused ranking (keys and fused values, best first) of the vector side's ``vector``
    (nearest first, the page's first ``offset + limit`` taken) and the lexical candidates
    ``lexical`` (best first, cut here to the candidates wanted and the floor); ``mass``: the IDF
    sum of every query word the lexical side weighed."""
    page = op.offset + op.limit
    depth = hybrid.candidates(op.offset, op.limit)
    lexical = lexical[:depth]
    lexical = lexical[: hybrid.floored([c.idf for c in lexical])]
    return fuse_information(
        [VectorCandidate(_key(r), r.distance or 0.0) for r in vector[:page]],
        [LexicalCandidate(c.key, c.idf, c.distance) for c in lexical],
        hybrid,
        page,
        depth,
        mass,
    )


def _scored(
    ranked: Sequence[tuple[ItemKey, float]], by_key: Mapping[ItemKey, Record]
) -> list[Record]:
    """The records of a fused ranking, each scored with its fused value (an item not read,
    expired since, left out)."""
    out = []
    for k, score in ranked:
        if (r := by_key.get(k)) is not None:
            r.score = score
            out.append(r)
    return out


class Information(Lexical):
    """The lexical side of one Query Engine hybrid search under the information fusion: the
    ``information`` script's candidates (the items within the search's clauses holding a rare
    word), each with its IDF sum and its nearest vector's distance to the query (a KNN scan of the
    candidates' vector documents alone, on the server that gives the vector side's distances).
    One round, as under the other fusions, and a second for the records of the candidates the page
    takes that neither side read (most pages on LongMemEval: reading every candidate's ~2 KB meta
    cost the script more than the round, docs/hybrid.md)."""

    @property
    def spec(self) -> IndexSpec:
        """The index searched: the vector side's (a hybrid search has one)."""
        assert self.vector.spec is not None
        return self.vector.spec

    @property
    def qvec(self) -> list[float]:
        """The query's vector: the vector side's (a hybrid search has one)."""
        assert self.vector.qvec is not None
        return self.vector.qvec

    def call(self, window: int) -> Call | None:
        """The ``information`` script's call, or None when the query has no rare word. Without
        conditions to check on the rows (``exact``) the script reads only the candidates wanted
        (and those tied with the last), and their records not at all; with some, all of them."""
        words = self.split()
        if words is None:
            return None  # only common words: nothing selects, the vector side ranks alone
        head = " ".join(self.parts)
        read = self.want if self.exact else -1
        args = (self.keys.index(None), head, self.hybrid.rare_share, words.size, words.page, read)
        knn = (self.keys.index(self.spec), self.keys.prefix, query_vector(self.spec, self.qvec))
        counts = [*(words.known[w] for w in words.rare), *(words.known[w] for w in words.common)]
        sizes = (len(words.rare), len(self.uncounted), len(words.common))
        sent = (*words.rare, *self.uncounted, *words.common, *counts)
        return Call((*args, *knn, *sizes, *sent), script="information")

    def page(
        self, vector: Sequence[Record], replies: Sequence[Any]
    ) -> Generator[Round, list[Any], list[Record]]:
        """The search's page: the information fusion of the vector side's ``vector`` (nearest
        first) and the candidates read from ``replies``. The records of the lexical candidates it
        takes that the script did not read (nor the vector side) come in a second round."""
        lexical, mass = self._candidates(replies[0]) if replies else ([], 0.0)
        ranked = information_page(self.hybrid, self.op, vector, lexical, mass)
        ranked = ranked[self.op.offset : self.op.offset + self.op.limit]
        by_key = {c.key: c.record for c in lexical if c.record is not None}
        by_key.update((_key(r), r) for r in vector)
        taken = {k for k, _ in ranked}
        unread = [c for c in lexical if c.key in taken and c.key not in by_key]
        if unread:
            rows = yield Round([Call(("HMGET", c.name, "m", "c")) for c in unread])
            for c, (meta, created) in zip(unread, rows):
                if meta is not None:  # expired since the first round: left out
                    r = by_key[c.key] = Record.parse(meta, created)
                    r.distance = c.distance
        return _scored(ranked, by_key)

    def _candidates(self, reply: Any) -> tuple[list[Candidate], float]:
        """The candidates of the script's reply, best first (ties, to :data:`TIE_DIGITS`
        decimals, by namespace and key), each with its nearest distance (the server's, as the
        vector side's; inf: no vectors). A row read whole (``[meta, created, distance, sum]``) is
        kept when it passes the conditions checked here; the others (``[hash name, distance,
        sum]``) have no record yet. And the query's IDF mass (every query word some item holds:
        those the script weighed, summed there)."""
        _, rows, counts, size, mass = load_json(reply)
        self.keep_counts(counts, size)
        out = []
        for row in rows:
            d = math.inf if row[-2] is None else standard_distance(self.spec, float(row[-2]))
            if len(row) == 3:
                out.append(Candidate(self.keys.item_id(row[0]), float(row[-1]), d, None, row[0]))
                continue
            r = Record.parse(row[0], row[1])
            if self.exact or self._ok(r):
                r.distance = d
                out.append(Candidate(_key(r), float(row[-1]), d, r))
        out.sort(key=lambda c: (-round(c.idf, TIE_DIGITS), c.key))
        return out, float(mass)

    def keep_counts(self, counts: Sequence[int], size: int) -> None:
        """Keep the counts the script made: the index's size when it counted it, and those of the
        words not counted lately (:attr:`uncounted`, in order)."""
        if self.sized:
            self.stats.term("").update(size)
        for w, n in zip(self.uncounted, counts):
            self.stats.term(w).update(n)
