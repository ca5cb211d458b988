"""The batch plan of the Redis stores, written once for sync and async.

A batch runs as a generator (a "plan") that yields requests: ``Embed`` (texts to embed) or
``Round`` (commands sent together in one pipeline). ``RedisStore`` and ``AsyncRedisStore`` only
differ in the driver that answers them. The key layout is in :mod:`~langmem_adapters.redis.layout`,
the writes in :mod:`~langmem_adapters.redis.writes`.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Sequence
from typing import Any

from langgraph.store.base import ListNamespacesOp, Op, Result, SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.embedding import Embed, embed_queries
from langmem_adapters.core.ops import Batch, plan_batch
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.layout import Keys, Mode, text
from langmem_adapters.redis.lexical import Lexical, sides
from langmem_adapters.redis.plain import plain_searches
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.search import (
    Searcher,
    knn_settings,
    read_items_info,
    shortcuts,
    unscored_tail,
)
from langmem_adapters.redis.stats import RedisStats
from langmem_adapters.redis.writes import (
    Vectors,
    delete_entry,
    embed_writes,
    lexical_text,
    put_entry,
    touch_entry,
    unchanged,
    write_rounds,
)

__all__ = ["plan"]


def plan(
    keys: Keys,
    mode: Mode,
    spec: IndexSpec | None,
    ops: Iterable[Op],
    *,
    if_absent: bool = False,
    cluster: bool = False,
    stats: RedisStats | None = None,
) -> Generator[Embed | Round, Any, Any]:
    """Run a batch: validate everything, embed, read (pre-batch state), then write in one script call
    (on a cluster: register the namespaces, then one script call per namespace). Returns the
    results, or for ``if_absent`` whether the item was created."""
    op_list, batch = plan_batch(ops)
    results: list[Result] = [None] * len(op_list)
    now_us = time.time_ns() // 1000
    now_ms = now_us // 1000
    qvecs: dict[str, list[float]] = {}
    vectors = {}
    if spec is not None and batch.searches:
        qvecs = yield from embed_queries(spec, (op for _, op, _ in batch.searches), unchanged)
    if spec is not None and batch.writes:
        vectors = yield from embed_writes(keys, spec, batch.writes)
    if not (batch.gets or batch.searches or batch.lists):
        # Only writes (a put, a delete): no read round, and none of the read work below.
        created = yield from _writes(
            keys, mode, spec, batch, vectors, {}, now_us, if_absent, cluster
        )
        return created if if_absent else results
    ef, broad, exact = 0, set[str](), set[str]()
    if qvecs and spec is not None and mode == "query_engine" and spec.kind != "exact":
        ef, broad, exact = yield from knn_settings(
            keys, spec, batch.searches, stats or RedisStats(), list(qvecs.values())
        )

    calls = [_get_call(keys, op.namespace, op.key) for _, op in batch.gets]
    need_registry = bool(batch.lists) or (mode == "plain" and bool(batch.searches))
    if need_registry:
        calls.append(Call(("ZRANGE", keys.registry, f"({now_ms}", "+inf", "BYSCORE")))
    searchers: list[tuple[int, Searcher, int, Lexical | None, int]] = []
    info: list[Call] = []  # the items index's FT.INFO, sent last in the round when stale
    if mode == "query_engine" and batch.searches:
        info, edges = shortcuts(keys, stats)
        for i, op, conds in batch.searches:
            if op.limit == 0:
                results[i] = []
                continue
            qvec = qvecs.get(op.query or "")
            s, lex = sides(keys, spec, op, conds, qvec, ef, broad, stats or RedisStats())
            s.brute_force(exact)
            s.edges = edges
            # Rows past the page show whether a tie crosses its edge; nearest-neighbour distances tie
            # more often, and a longer KNN window costs the server next to nothing.
            window = max(2 * s.need, 20) if s.qvec is not None else max(s.need + 1, 10)
            # built once: a later build would read word counts an earlier search of the batch
            # has updated, and disagree with what was sent
            sent = lex.calls() if lex else []
            searchers.append((i, s, window, lex, 1 + len(sent)))
            calls += [s.call(window), *sent]
    replies = (yield Round(calls + info)) if calls or info else []
    if info and stats is not None:
        read_items_info(stats, replies[-1])

    touch: dict[tuple[str, str], float] = {}
    for (i, get), reply in zip(batch.gets, replies):
        rec = _get_record(reply)
        results[i] = rec.item() if rec else None
        if rec and get.refresh_ttl and rec.ttl is not None:
            touch[(nsp.join(rec.namespace), rec.key)] = rec.ttl
    pos = len(batch.gets)
    live = _live_namespaces(replies[pos]) if need_registry else []
    listed = live
    if cluster and batch.lists:  # registry entries may outlive their items there: check the ZSETs
        listed = [
            ns
            for ns in live
            if any(nsp.matches_all(ns, op.match_conditions) for _, op in batch.lists)
        ]
        counts = yield Round(
            [Call(("ZCOUNT", keys.zset(nsp.join(ns)), f"({now_ms}", "+inf")) for ns in listed]
        )
        listed = [ns for ns, n in zip(listed, counts) if n]
    for i, list_op in batch.lists:
        results[i] = _list_result(list_op, listed)
    found: list[tuple[int, SearchOp, list[Record]]] = []
    at = pos + need_registry
    for i, s, window, lex, n in searchers:  # n: its replies (a hybrid one's lexical query follows)
        page = yield from s.run(replies[at], window)
        short = len(page) < s.op.limit  # the scored items ran out
        if lex is not None:
            page = yield from lex.page(page, replies[at + 1 : at + n])
        op = lex.op if lex else s.op  # a hybrid search's vector side ran a wider op
        if s.qvec is not None and short and len(page) < op.limit:  # then items without vectors
            page += yield from unscored_tail(s, page, op)
        at += n
        found.append((i, op, page))
    if mode == "plain" and batch.searches:
        found += yield from plain_searches(
            keys, spec, batch.searches, live, qvecs, now_ms, stats or RedisStats()
        )
    for i, op, records in found:
        results[i] = [r.search_item(spec) for r in records]
        if op.refresh_ttl:
            touch.update(
                {(nsp.join(r.namespace), r.key): r.ttl for r in records if r.ttl is not None}
            )

    created = yield from _writes(
        keys, mode, spec, batch, vectors, touch, now_us, if_absent, cluster
    )
    return created if if_absent else results


def _writes(
    keys: Keys,
    mode: Mode,
    spec: IndexSpec | None,
    batch: Batch,
    vectors: dict[tuple[str, str], Vectors],
    touch: dict[tuple[str, str], float],
    now_us: int,
    if_absent: bool,
    cluster: bool,
) -> Generator[Round, Any, bool]:
    """The batch's writes and the TTL refreshes of items it read (``touch``) in one script call
    (on a cluster: the registry step, then one call per namespace); whether anything was written."""
    op_code = "a" if if_absent else "p"
    named = [(nsp.join(w.namespace), w) for w in batch.writes]
    entries = [
        put_entry(
            mode,
            ns_text,
            w,
            now_us,
            vectors.get((ns_text, w.key), []),
            op_code,
            lexical_text(spec, w.value, w.index),
        )
        if w.value is not None
        else delete_entry(ns_text, w.key)
        for ns_text, w in named
    ]
    if touch:
        written_keys = {(ns_text, w.key) for ns_text, w in named}
        entries += [
            touch_entry(ns_text, key, ttl, now_us // 1000)
            for (ns_text, key), ttl in touch.items()
            if (ns_text, key) not in written_keys
        ]
    written = [0]
    for request in write_rounds(keys, mode, now_us, entries, cluster) if entries else ():
        written = yield request
    return bool(sum(written))


def _get_call(keys: Keys, namespace: tuple[str, ...], key: str) -> Call:
    return Call(("HMGET", keys.item(nsp.join(namespace), key), "m", "c"))


def _get_record(reply: Any) -> Record | None:
    meta, created = reply
    return None if meta is None else Record.parse(meta, created)


def _live_namespaces(reply: Sequence[Any]) -> list[tuple[str, ...]]:
    return [nsp.split(text(n)) for n in reply]


def _list_result(op: ListNamespacesOp, namespaces: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    found = {
        ns[: op.max_depth] if op.max_depth is not None else ns
        for ns in namespaces
        if nsp.matches_all(ns, op.match_conditions)
    }
    return sorted(found)[op.offset : op.offset + op.limit]
