"""Hybrid search on Redis (``index={"hybrid": ...}``): the lexical side of a query search and its
fusion with the vector side (``core.hybrid.fuse``) into the page.

A hybrid store keeps each item's indexed words in its hash (field ``w``, see
:func:`~langmem_adapters.redis.writes.lexical_text`). In Query Engine mode the items index reads
``w`` as a TEXT field (``NOSTEM``, index without stop words): the lexical side is one ``FT.SEARCH``
with the namespace and filter clauses of the vector search, ranked by ``BM25STD``, sent in the same
pipeline round as the KNN query. The query text is reduced to its words (``core.hybrid.words``),
each passed as a query parameter, so nothing of the caller's text is parsed as query syntax. In
plain mode the lexical side is BM25 computed here (``core.bm25``) over the searched items, with the
collection's word statistics (:func:`corpus_calls`, :func:`count_corpus`) as the Query Engine's
and Postgres's are their index's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Generator, Iterable, Sequence
from typing import Any, NamedTuple

from langgraph.store.base import SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.bm25 import Corpus, bm25
from langmem_adapters.core.filters import Condition, matches
from langmem_adapters.core.hybrid import HybridSpec, fuse, query_words
from langmem_adapters.core.values import load_json
from langmem_adapters.redis.layout import Keys, text, under
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.search import MAX_WINDOW, Searcher
from langmem_adapters.redis.stats import RedisStats
from langmem_adapters.redis.tokens import pushdown

__all__ = [
    "MAX_TERMS",
    "Lexical",
    "PlainWords",
    "corpus_calls",
    "count_corpus",
    "fused",
    "plain_hybrid",
    "plain_words",
    "query_terms",
]

#: Distinct query words the lexical side matches at most (the first ones): a page of text as a query
#: stays one bounded server query.
MAX_TERMS = 64

ItemKey = tuple[str, str]
"""An item's ``(namespace text, key)``."""


class Words(NamedTuple):
    """A Query Engine lexical search's words (:meth:`Lexical.split`): those known rare and known
    common, the counts known (``known``), the index's size (-1: the script counts it) and the
    page's end."""

    rare: list[str]
    common: list[str]
    known: dict[str, int]
    size: int
    page: int


class Hit(NamedTuple):
    """One item of a lexical ranking: its key, BM25 score and record (None: not read, the item
    cannot reach the page unless the vector side has it, see :meth:`Lexical.call`)."""

    key: ItemKey
    score: float
    record: Record | None


def query_terms(query: str | None) -> list[str]:
    """The distinct words of a query the lexical side matches (stop words aside,
    ``core.hybrid.query_words``), in order, at most :data:`MAX_TERMS`; none: the vector side alone
    ranks the page."""
    return query_words(query or "")[:MAX_TERMS]


def _key(r: Record) -> ItemKey:
    return (nsp.join(r.namespace), r.key)


def _hit(keys: Keys, row: list[Any]) -> Hit:
    """A row of the lexical script's reply: ``[meta, created, score]`` (read) or ``[item hash's
    name, score]`` (not read)."""
    if len(row) == 3:
        r = Record.parse(row[0], row[1])
        return Hit(_key(r), float(row[2]), r)
    return Hit(keys.item_id(row[0]), float(row[1]), None)


class Lexical:
    """The lexical side of one Query Engine hybrid search: the BM25-ranked matches of the query's
    words among the items that pass the vector search's namespace and filter clauses."""

    def __init__(
        self,
        keys: Keys,
        vector: Searcher,
        op: SearchOp,
        conds: tuple[Condition, ...],
        hybrid: HybridSpec,
        stats: RedisStats,
    ) -> None:
        """``vector``: the search's vector side (its clauses are reused); ``op``: the search;
        ``stats``: how many items the index holds and how many hold each word, as counted lately
        (the script counts the rest)."""
        self.keys, self.vector, self.op, self.conds, self.stats = keys, vector, op, conds, stats
        self.terms = query_terms(op.query)
        # the server checks every condition when each one is a clause of ``where`` (the
        # vector side may still check its rows: a whole-index prefix dropped from its scan)
        self.parts = vector.where
        self.exact = all(pushdown(c) is not None for c in conds)
        self.hybrid, self.want = hybrid, hybrid.candidates(op.offset, op.limit)

    def call(self, window: int) -> Call | None:
        """The ``FT.SEARCH`` of the ``window`` best matches (through the lexical script), or None
        when the query has no rare word. The script counts the index's items (``size``) and the
        words not counted lately; the words known rare (``HybridSpec.rare``) select the matches,
        the common ones add to their scores. Without conditions to check on the rows (``exact``)
        the script reads only the items that can reach the page: on LongMemEval (items ~2 KB, 470
        questions) reading all 40 took the script 1.33 ms against 0.48 ms reading none, and the
        hybrid search went from 2.41 to 1.78 ms globally (docs/hybrid.md, Redis)."""
        words = self.split()
        if words is None:
            return None  # only common words: nothing selects, the vector side ranks alone
        rare, common = words.rare, words.common
        window = min(window, MAX_WINDOW)  # the server's bound, as for the vector side
        # the namespace and filter clauses only select (the script negates them twice): BM25STD
        # scores every term of a query, and a tag clause reordered the text's ranking
        head = "".join(f"{part} " for part in self.parts)
        share, page = self.hybrid.rare_share, words.page
        read = page if self.exact else window
        args = (self.keys.index(None), head, window, share, words.size, page, read, len(rare))
        sent = (*rare, *self.uncounted, *common)
        return Call((*args, len(self.uncounted), *sent), script="lexical")

    def split(self) -> Words | None:
        """The query's words as the script gets them, or None when none is rare nor uncounted
        (nothing selects). Sets which words (``uncounted``) and whether the index's size
        (``sized``) the script counts, from the store's counts."""
        items = self.stats.term("")  # no word is empty: the key of the items index's size
        self.sized = items.stale()
        self.uncounted = [w for w in self.terms if self.sized or self.stats.term(w).stale()]
        known = {w: self.stats.term(w).count or 0 for w in self.terms if w not in self.uncounted}
        page = self.op.offset + self.op.limit
        rare = [] if self.sized else self.hybrid.rare(known, items.count or 0, page)
        if not rare and not self.uncounted:
            return None
        common = [w for w, n in known.items() if n > 0 and w not in rare]
        size = -1 if self.sized else items.count or 0
        return Words(rare, common, known, size, page)

    def calls(self) -> list[Call]:
        """What the lexical side sends in the search's round: its query, none without words. Built
        once per round: :meth:`run` reads the replies against the words this call sent."""
        call = self.call(self.want)
        return [] if call is None else [call]

    def page(
        self, vector: Sequence[Record], replies: Sequence[Any]
    ) -> Generator[Round, list[Any], list[Record]]:
        """The search's page: the fusion of the vector side's ``vector`` (nearest first) and of the
        lexical side read from ``replies`` (the answers to :meth:`calls`)."""
        lexical = (yield from self.run(replies[0])) if replies else []
        end = self.op.offset + self.op.limit
        return fused(self.hybrid, vector, lexical, end)[self.op.offset :]

    def run(self, reply: Any) -> Generator[Round, list[Any], list[Hit]]:
        """The ranking with each BM25 score (best first, ties by namespace and key), widened
        while conditions checked here leave fewer than the candidates wanted and the server has
        more."""
        window = self.want
        while True:
            hits, rows, counts, size = load_json(reply)
            if self.sized:
                self.stats.term("").update(size)
            for w, n in zip(self.uncounted, counts):
                self.stats.term(w).update(n)
            hits_read = [_hit(self.keys, row) for row in rows]
            ok = [h for h in hits_read if self.exact or (h.record and self._ok(h.record))]
            if self.exact or len(ok) >= self.want or hits <= window:
                break
            window *= 4
            call = self.call(window)
            assert call is not None
            (reply,) = yield Round([call])
        ok.sort(key=lambda h: (-h.score, *h.key))
        return _floored(self.hybrid, ok[: self.want])

    def _ok(self, r: Record) -> bool:
        return under(r.namespace, self.op.namespace_prefix) and matches(r.value, self.conds)


def corpus_calls(
    keys: Keys, live: Iterable[tuple[str, ...]], read: Collection[tuple[str, ...]], now_ms: int
) -> list[Call]:
    """What plain mode sends, in its search's round, to count the collection's words (when its
    ``Corpus`` is stale): a ``words`` script call for each live namespace the search does not
    ``read`` (those it reads are counted from their items' words, :func:`count_corpus`). One call
    per namespace, as the reads: on a Redis Cluster each namespace has its own slot."""
    skip = set(read)
    others = [ns for ns in live if ns not in skip]
    return [Call((now_ms,), script="words", keys=(keys.zset(nsp.join(ns)),)) for ns in others]


def count_corpus(corpus: Corpus, texts: Iterable[str], replies: Sequence[Any]) -> None:
    """Set ``corpus`` from the words of the items read (``texts``, each item's words space-separated)
    and the ``words`` replies of the other namespaces (:func:`corpus_calls`)."""
    size, length, df = 0, 0, Counter[str]()
    for t in texts:
        if t:
            split = t.split()
            size, length = size + 1, length + len(split)
            df.update(set(split))
    for reply in replies:
        head, _, rest = text(reply).partition(" ")
        parts = rest.split(" ")
        size, length = size + int(head), length + int(parts[0])
        df.update(dict(zip(parts[1::2], map(int, parts[2::2]))))
    corpus.update(size, length, df.items())


class PlainWords(NamedTuple):
    """A plain-mode hybrid search's word statistics: each searched record's words as read
    (``docs``: space-separated, ``""`` for none; every word, or under the information fusion only
    those of the batch's query words it holds, led by a space, see ``lua/read_ns.lua``) and the
    query words each holds (``held``, in the query's order), how many items of the collection hold
    each query word the collection or a record holds (``counts``), the collection's ``size`` and
    the rare words among them (they select the lexical candidates)."""

    docs: list[str]
    held: list[tuple[str, ...]]
    counts: dict[str, int]
    size: int
    rare: set[str]


def plain_words(
    hybrid: HybridSpec,
    op: SearchOp,
    records: Sequence[Record],
    texts: dict[ItemKey, str],
    corpus: Corpus,
) -> PlainWords:
    """The words of a plain-mode hybrid search. Which words are rare (``HybridSpec.rare``: they
    select the candidates, the other words only add to their scores) and their weights are judged
    by the collection's ``corpus``, as on Postgres and the Query Engine, not by the searched records
    alone: within a namespace of 32 memories the page term let words a third of them hold count."""
    docs = [texts.get(_key(r), "") for r in records]
    wanted = query_terms(op.query)
    held = _holding(wanted, docs)
    n = Counter(w for h in held for w in h)
    size = max(corpus.size, sum(1 for d in docs if d))
    counts = {w: c for w in wanted if (c := corpus.held(w, n[w]))}
    rare = set(hybrid.rare(counts, size, op.offset + op.limit))
    return PlainWords(docs, held, counts, size, rare)


def _holding(wanted: Sequence[str], docs: Sequence[str]) -> list[tuple[str, ...]]:
    """The words of ``wanted`` each of ``docs`` holds (words space-separated), in the order of
    ``wanted``: each looked for as a whole word in the text rather than the text split into its
    words (splitting every item read was most of a plain-mode hybrid search's client time; a word
    is letters, digits and _ only, ``core.hybrid.words``, so ``" w "`` in ``" text "`` is exactly
    ``w in text.split()``)."""
    marks = [(w, f" {w} ") for w in wanted]
    return [tuple(w for w, m in marks if m in f" {d} ") if d else () for d in docs]


def plain_hybrid(
    hybrid: HybridSpec, op: SearchOp, records: Sequence[Record], w: PlainWords, corpus: Corpus
) -> list[Record]:
    """Plain mode's hybrid ranking of a search's scored ``records`` (nearest first): the fusion of
    the page's nearest and of the candidates BM25 ranks first for the query's words, among the
    records holding one of its rare words (``w``, :func:`plain_words`; BM25 with the collection's
    ``corpus``). Ties by namespace and key."""
    page = op.offset + op.limit
    lexical: list[Hit] = []
    if w.rare:
        scores = bm25(list(w.counts), [d.split() for d in w.docs], corpus=corpus)
        selected = [not w.rare.isdisjoint(h) for h in w.held]
        hits = sorted(
            (-s, _key(r), i)
            for i, (s, r) in enumerate(zip(scores, records))
            if s > 0 and selected[i]
        )
        want = hybrid.candidates(op.offset, op.limit)
        lexical = _floored(hybrid, [Hit(k, -s, records[i]) for s, k, i in hits[:want]])
    return fused(hybrid, records[:page], lexical, len(records) + len(lexical))


def _floored(hybrid: HybridSpec, ranked: list[Hit]) -> list[Hit]:
    """The hits of a lexical ranking (best first) scoring at least ``hybrid.floor`` of the best."""
    return ranked[: hybrid.floored([h.score for h in ranked])]


def fused(
    hybrid: HybridSpec, vector: Sequence[Record], lexical: Sequence[Hit], end: int
) -> list[Record]:
    """The first ``end`` of the fusion (``core.hybrid.fuse``) of both sides (best first; the vector
    side scored by its negated distance, which orders as the similarity does), each record scored
    with its fused value. A lexical hit not read (no record) is past the page's end on its side:
    it ranks below the page unless the vector side has it (fused values only add)."""
    by_key = {h.key: h.record for h in lexical if h.record is not None}
    by_key.update((_key(r), r) for r in vector)
    ranked = fuse(
        [(_key(r), -(r.distance or 0.0)) for r in vector],
        [(h.key, h.score) for h in lexical],
        hybrid,
    )
    out = []
    for k, score in ranked[:end]:
        r = by_key[k]
        r.score = score
        out.append(r)
    return out
