"""Plain-mode search (no Query Engine): read every live item of the matching namespaces in one
script call each, then filter, score (numpy, exact) and order them here."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
from langgraph.store.base import SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.filters import Condition, matches
from langmem_adapters.core.hybrid import HybridSpec
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.information import plain_information
from langmem_adapters.redis.layout import Keys, text, under
from langmem_adapters.redis.lexical import (
    MAX_TERMS,
    corpus_calls,
    count_corpus,
    plain_hybrid,
    plain_words,
    query_terms,
)
from langmem_adapters.redis.records import Record, decode_vectors
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.search import Page
from langmem_adapters.redis.stats import RedisStats

__all__ = ["plain_searches"]


def plain_searches(
    keys: Keys,
    spec: IndexSpec | None,
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]],
    live: list[tuple[str, ...]],
    qvecs: dict[str, list[float]],
    now_ms: int,
    stats: RedisStats,
) -> Generator[Round, list[Any], list[Page]]:
    """The pages of a batch's searches from the live namespaces ``live`` (one read of each; a
    hybrid search, when ``stats.corpus`` is stale, also counts the other namespaces' words)."""
    wanted = sorted({ns for _, op, _ in searches for ns in live if under(ns, op.namespace_prefix)})
    scoring = spec if spec is not None and qvecs else None  # the items' vectors are read
    hybrid = scoring.hybrid if scoring is not None else None  # and their words
    recount = hybrid is not None and stats.corpus.stale()  # decided once: the calls follow it
    counting = corpus_calls(keys, live, wanted, now_ms) if recount else []
    args = (now_ms, "0" if scoring is None else "1", *_words_wanted(hybrid, searches, recount))
    reads = [Call(args, "read_ns", (keys.zset(nsp.join(ns)),)) for ns in wanted]
    replies = (yield Round(reads + counting)) if reads or counting else []
    texts: dict[tuple[str, str], str] = {}  # a hybrid search's words per item (space-separated)
    kept = texts if hybrid is not None else None
    by_ns = {ns: _records(ns, reply, scoring, kept) for ns, reply in zip(wanted, replies)}
    if recount:
        count_corpus(stats.corpus, texts.values(), replies[len(reads) :])
    out = []
    for i, op, conds in searches:
        found = [r for ns in wanted if under(ns, op.namespace_prefix) for r in by_ns[ns]]
        records = [  # copies: each search scores its own
            Record(r.namespace, r.key, r.value, r.created, r.updated, r.ttl, vectors=r.vectors)
            for r in found
            if matches(r.value, conds)
        ]
        qvec = qvecs.get(op.query or "")
        records = _ordered(spec, op, records, qvec, texts, stats)
        out.append(Page(i, op, records[op.offset : op.offset + op.limit]))
    return out


def _words_wanted(
    hybrid: HybridSpec | None,
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]],
    recount: bool,
) -> tuple[str, ...]:
    """What ``read_ns`` returns of each item's words: nothing (``"0"``, not hybrid), every word
    (``"1"``: BM25 and a recount of the collection's words need them), or under the information
    fusion which of the batch's query words it holds (``"2"`` and the words: a global search of
    LongMemEval's 631 rounds of 60 questions 82 -> 61 ms, docs/hybrid.md, "Plain mode: only the
    query words an item holds"). A batch of more words than one search may send (``MAX_TERMS``)
    reads every word: the script looks for each word in each item, and a script holds the server."""
    if hybrid is None:
        return ("0",)
    wanted = dict.fromkeys(w for _, op, _ in searches for w in query_terms(op.query))
    if recount or hybrid.fusion != "information" or len(wanted) > MAX_TERMS:
        return ("1",)
    return ("2", *wanted)


def _records(
    ns: tuple[str, ...],
    reply: Any,
    spec: IndexSpec | None,
    texts: dict[tuple[str, str], str] | None,
) -> list[Record]:
    """A namespace's live items from its ``read_ns`` reply (a flat array: each item's meta,
    created, then with ``spec`` its vectors, with ``texts`` its words, kept there: a hybrid
    search's, all or which query words each holds, :func:`_words_wanted`)."""
    stride = 2 + (spec is not None) + (texts is not None)
    out = []
    for at in range(0, len(reply), stride):
        rec = Record.parse(reply[at], reply[at + 1])
        if spec is not None:
            rec.vectors = decode_vectors(reply[at + 2], spec)
        if texts is not None:
            texts[(nsp.join(ns), rec.key)] = text(reply[at + stride - 1])
        out.append(rec)
    return out


def _ordered(
    spec: IndexSpec | None,
    op: SearchOp,
    records: list[Record],
    qvec: list[float] | None,
    texts: dict[tuple[str, str], str],
    stats: RedisStats,
) -> list[Record]:
    """A search's matches in page order: nearest first (fused with the lexical ranking for a
    hybrid search) then the unscored newest first, or without a query newest first."""
    unscored: list[Record] = []
    if qvec is not None and spec is not None:
        records, unscored = _score(spec, records, qvec)
        unscored.sort(key=lambda r: r.sort_key)
    records.sort(key=lambda r: r.sort_key)
    hybrid = spec.hybrid if spec is not None else None
    if hybrid is not None and qvec is not None:
        w = plain_words(hybrid, op, records, texts, stats.corpus)
        if hybrid.fusion == "information":
            records = plain_information(hybrid, op, records, w)
        else:
            records = plain_hybrid(hybrid, op, records, w, stats.corpus)
    return records + unscored  # after every scored item, newest first (InMemoryStore's contract)


def _distances(
    spec: IndexSpec, matrix: np.ndarray[Any, Any], q: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """pgvector's distances of each row to ``q`` (what ``IndexSpec.score`` takes): cosine 1-cos,
    inner product -dot, l2 Euclidean."""
    if spec.distance == "l2":
        return np.asarray(np.linalg.norm(matrix - q, axis=1))
    dots = matrix @ q
    if spec.distance == "inner_product":
        return np.asarray(-dots)
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(q))
    return np.asarray(1.0 - np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0))


def _score(
    spec: IndexSpec, records: list[Record], q: list[float]
) -> tuple[list[Record], list[Record]]:
    """Exact scoring with numpy: each item's best vector; the scored records, then those without
    vectors."""
    pairs = [(r, r.vectors) for r in records if r.vectors is not None and len(r.vectors)]
    unscored = [r for r in records if r.vectors is None or not len(r.vectors)]
    if not pairs:
        return [], unscored
    scored = [r for r, _ in pairs]
    matrix = np.concatenate([v for _, v in pairs])
    starts = np.cumsum([0, *(len(v) for _, v in pairs[:-1])])
    best = np.minimum.reduceat(_distances(spec, matrix, np.asarray(q, np.float32)), starts)
    for r, d in zip(scored, best):
        r.distance = float(d)
    return scored, unscored
