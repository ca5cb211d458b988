"""The batch plans of the Redis stores, written once for sync and async.

A batch runs as a generator (a "plan") that yields requests: ``Embed`` (texts to embed) or
``Round`` (commands sent together in one pipeline). ``RedisStore`` and ``AsyncRedisStore`` only
differ in the driver that answers them. :func:`plan` runs in stages: validate the whole batch
(:func:`~langmem_adapters.core.ops.plan_batch`), embed, build the read round (:class:`ReadRound`),
assemble the results from its replies, then write. :func:`put_if_absent_plan` is the atomic create.
The key layout is in :mod:`~langmem_adapters.redis.layout`, the writes in
:mod:`~langmem_adapters.redis.writes`.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, NamedTuple

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, Result, SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.embedding import Embed, embed_queries
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.ops import Batch, Write, plan_batch
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.fused import Fused
from langmem_adapters.redis.layout import Keys, Mode, text
from langmem_adapters.redis.lexical import Lexical
from langmem_adapters.redis.plain import plain_searches
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.search import (
    NO_KNN,
    Knn,
    Page,
    Searcher,
    knn_settings,
    read_items_info,
    shortcuts,
    unscored_tail,
)
from langmem_adapters.redis.sides import sides
from langmem_adapters.redis.stats import RedisStats
from langmem_adapters.redis.writes import (
    Entry,
    Vectors,
    delete_entry,
    embed_writes,
    lexical_text,
    put_entry,
    touch_entry,
    write_rounds,
)

__all__ = ["plan", "put_if_absent_plan"]

Touches = dict[tuple[str, str], float]
"""Items a batch read with ``refresh_ttl``: (namespace text, key) -> their TTL in minutes."""


class Context(NamedTuple):
    """What every stage of a batch reads: the store's layout, mode and index, and the batch's one
    reading of the clock (a named tuple: made for every batch, and cheaper than a frozen class)."""

    keys: Keys
    mode: Mode
    spec: IndexSpec | None
    cluster: bool
    now_us: int

    @property
    def now_ms(self) -> int:
        return self.now_us // 1000


@dataclass(frozen=True, slots=True)
class ServerSearch:
    """A Query Engine search of the read round: its op's place in the batch, its server query
    (``searcher``, first asking ``window`` rows), a hybrid search's lexical side, and the calls it
    sends (the window's query, then the lexical side's, whose replies follow in that order; or the
    one call of ``fused``, a hybrid search fused on the server)."""

    at: int
    searcher: Searcher
    window: int
    lexical: Lexical | None
    calls: tuple[Call, ...]
    fused: Fused | None = None


class ReadRound(NamedTuple):
    """The batch's one read round, in the order of its calls: one ``HMGET`` per get, the namespace registry
    (for listings and plain-mode searches), the Query Engine searches, and the items index's
    ``FT.INFO`` when its reading is stale."""

    gets: tuple[Call, ...]
    registry: Call | None
    searches: tuple[ServerSearch, ...]
    info: Call | None

    @property
    def calls(self) -> list[Call]:
        calls = list(self.gets)
        if self.registry:
            calls.append(self.registry)
        for s in self.searches:
            calls += s.calls
        if self.info:
            calls.append(self.info)
        return calls


def plan(
    keys: Keys,
    mode: Mode,
    spec: IndexSpec | None,
    ops: Iterable[Op],
    *,
    stats: RedisStats,
    cluster: bool = False,
) -> Generator[Embed | Round, Any, list[Result]]:
    """Run a batch: validate everything, embed, read (pre-batch state) in one round, assemble the
    results, then write in one script call (on a cluster: register the namespaces, then one script
    call per namespace). ``stats``: what the store keeps between batches."""
    op_list, batch = plan_batch(ops)
    ctx = Context(keys, mode, spec, cluster, time.time_ns() // 1000)
    qvecs: dict[str, list[float]] = {}
    if spec is not None and batch.searches:
        qvecs = yield from embed_queries(spec, (op for _, op, _ in batch.searches), list)
    vectors = {}
    if spec is not None and batch.writes:
        vectors = yield from embed_writes(keys, spec, batch.writes)
    results: list[Result] = [None] * len(op_list)
    touch: Touches = {}
    if batch.gets or batch.searches or batch.lists:
        touch = yield from _reads(ctx, batch, qvecs, stats, results)
    if batch.writes or touch:
        yield from _writes(ctx, batch.writes, vectors, touch, "p")
    return results


def put_if_absent_plan(
    keys: Keys, mode: Mode, spec: IndexSpec | None, op: PutOp, *, cluster: bool = False
) -> Generator[Embed | Round, Any, bool]:
    """Create the item of ``op`` unless a live item has its key, in one script call: whether it
    was created (validated and embedded as a batch's put)."""
    _, batch = plan_batch([op])
    ctx = Context(keys, mode, spec, cluster, time.time_ns() // 1000)
    vectors = (yield from embed_writes(keys, spec, batch.writes)) if spec is not None else {}
    return (yield from _writes(ctx, batch.writes, vectors, {}, "a"))


def _reads(
    ctx: Context,
    batch: Batch,
    qvecs: dict[str, list[float]],
    stats: RedisStats,
    results: list[Result],
) -> Generator[Round, Any, Touches]:
    """The batch's reads: build the read round, send it, and fill ``results`` from its replies
    (with any further rounds a search or a cluster's listing needs); the items read to refresh."""
    knn = NO_KNN
    spec = ctx.spec
    if qvecs and spec is not None and ctx.mode == "query_engine" and spec.kind != "exact":
        knn = yield from knn_settings(ctx.keys, spec, batch.searches, stats, list(qvecs.values()))
    read = _read_round(ctx, batch, qvecs, knn, stats, results)
    calls = read.calls
    replies = iter((yield Round(calls)) if calls else [])  # read in the calls' order
    touch = _get_results(batch.gets, list(islice(replies, len(read.gets))), results)
    live = [nsp.split(text(n)) for n in next(replies)] if read.registry else []
    sent = [list(islice(replies, len(s.calls))) for s in read.searches]
    if read.info is not None:
        read_items_info(stats, next(replies))
    if batch.lists:
        listed = yield from _listed(ctx, batch.lists, live)
        for i, list_op in batch.lists:
            results[i] = _list_result(list_op, listed)
    pages = (yield from _server_pages(read.searches, sent)) if read.searches else []
    if ctx.mode == "plain" and batch.searches:
        pages += yield from plain_searches(
            ctx.keys, ctx.spec, batch.searches, live, qvecs, ctx.now_ms, stats
        )
    for page in pages:
        results[page.at] = [r.search_item(ctx.spec) for r in page.records]
        if page.op.refresh_ttl:
            touch.update(
                ((nsp.join(r.namespace), r.key), r.ttl) for r in page.records if r.ttl is not None
            )
    return touch


def _read_round(
    ctx: Context,
    batch: Batch,
    qvecs: dict[str, list[float]],
    knn: Knn,
    stats: RedisStats,
    results: list[Result],
) -> ReadRound:
    """The read round of a batch (a search with ``limit=0`` gets its empty page in ``results``)."""
    gets = tuple(
        [
            Call(("HMGET", ctx.keys.item(nsp.join(op.namespace), op.key), "m", "c"))
            for _, op in batch.gets
        ]
    )
    registry = None
    if batch.lists or (ctx.mode == "plain" and batch.searches):
        registry = Call(("ZRANGE", ctx.keys.registry, f"({ctx.now_ms}", "+inf", "BYSCORE"))
    if ctx.mode != "query_engine" or not batch.searches:
        return ReadRound(gets, registry, (), None)
    info, edges = shortcuts(ctx.keys, stats)
    searches = []
    for i, op, conds in batch.searches:
        if op.limit == 0:
            results[i] = []
        else:
            qvec = qvecs.get(op.query or "")
            searches.append(_server_search(ctx, i, op, conds, qvec, knn, edges, stats))
    return ReadRound(gets, registry, tuple(searches), info[0] if info else None)


def _server_search(
    ctx: Context,
    at: int,
    op: SearchOp,
    conds: tuple[Condition, ...],
    qvec: list[float] | None,
    knn: Knn,
    edges: dict[str, int] | None,
    stats: RedisStats,
) -> ServerSearch:
    """A Query Engine search and its calls. A hybrid search's lexical call is built here, once: a
    later build would read word counts an earlier search of the batch has updated, and disagree
    with what was sent."""
    s, lex = sides(ctx.keys, ctx.spec, op, conds, qvec, knn, edges, stats)
    window = s.first_window
    lexical = lex.calls() if lex else []
    if fused := Fused.build(s, lex, window, lexical):
        return ServerSearch(at, s, window, lex, (fused.call(),), fused)
    return ServerSearch(at, s, window, lex, (s.call(window), *lexical))


def _get_results(
    gets: list[tuple[int, GetOp]], replies: Sequence[Any], results: list[Result]
) -> Touches:
    """Each get's item into ``results``; the items of gets that refresh their TTL."""
    touch: Touches = {}
    for (i, get), (meta, created) in zip(gets, replies):
        rec = None if meta is None else Record.parse(meta, created)
        results[i] = rec.item() if rec else None
        if rec and get.refresh_ttl and rec.ttl is not None:
            touch[(nsp.join(rec.namespace), rec.key)] = rec.ttl
    return touch


def _listed(
    ctx: Context, lists: list[tuple[int, ListNamespacesOp]], live: list[tuple[str, ...]]
) -> Generator[Round, Any, list[tuple[str, ...]]]:
    """The live namespaces to list: the registry's, and on a cluster (where registry entries may
    outlive their items) only those whose ZSETs still hold a live item."""
    if not ctx.cluster:
        return live
    wanted = [ns for ns in live if any(nsp.matches_all(ns, op.match_conditions) for _, op in lists)]
    counts = yield Round(
        [Call(("ZCOUNT", ctx.keys.zset(nsp.join(ns)), f"({ctx.now_ms}", "+inf")) for ns in wanted]
    )
    return [ns for ns, n in zip(wanted, counts) if n]


def _server_pages(
    searches: Sequence[ServerSearch], replies: Sequence[Sequence[Any]]
) -> Generator[Round, list[Any], list[Page]]:
    """The page of each Query Engine search from its replies (widened by more rounds as needed):
    the vector side, fused with the lexical side for a hybrid search, then for a KNN page whose
    scored items ran out the matching items without vectors."""
    pages = []
    for search, sent in zip(searches, replies):
        s, lex = search.searcher, search.lexical
        op = lex.op if lex else s.op  # a hybrid search's vector side ran a wider op
        if search.fused is not None:
            if got := search.fused.page(sent[0]):
                page = got.records
                if got.scored is not None and len(page) < op.limit:
                    page += yield from unscored_tail(s, got.scored, page, op)
                pages.append(Page(search.at, op, page))
                continue
            sent = yield Round(list(search.fused.sides))  # both sides again, the two-script way
        matched = yield from s.run(sent[0], search.window)
        page = s.page(matched)
        short = len(page) < s.op.limit  # the scored items ran out
        if lex is not None:
            page = yield from lex.page(page, sent[1:])
        if s.qvec is not None and short and len(page) < op.limit:
            scored = [(nsp.join(r.namespace), r.key) for r in matched]
            page += yield from unscored_tail(s, scored, page, op)
        pages.append(Page(search.at, op, page))
    return pages


def _writes(
    ctx: Context,
    writes: list[Write],
    vectors: dict[tuple[str, str], Vectors],
    touch: Touches,
    op_code: str,
) -> Generator[Round, Any, bool]:
    """The batch's writes (``op_code`` ``p`` puts, ``a`` puts if absent) and the TTL refreshes of
    items it read (``touch``) in one script call (on a cluster: the registry step, then one call per
    namespace); whether anything was written."""
    entries: list[Entry] = []
    for w in writes:
        ns_text = nsp.join(w.namespace)
        if w.value is None:
            entries.append(delete_entry(ns_text, w.key))
        else:
            vecs = vectors.get((ns_text, w.key), [])
            words = lexical_text(ctx.spec, w.value, w.index)
            entries.append(put_entry(ctx.mode, ns_text, w, ctx.now_us, vecs, op_code, words))
    written_keys = {(e.ns_text, e.key) for e in entries}
    for (ns_text, key), ttl in touch.items():
        if (ns_text, key) not in written_keys:
            entries.append(touch_entry(ns_text, key, ttl, ctx.now_ms))
    written = [0]
    rounds = write_rounds(ctx.keys, ctx.mode, ctx.now_us, entries, ctx.cluster) if entries else []
    for request in rounds:
        written = yield request
    return bool(sum(written))


def _list_result(op: ListNamespacesOp, namespaces: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    found = {
        ns[: op.max_depth] if op.max_depth is not None else ns
        for ns in namespaces
        if nsp.matches_all(ns, op.match_conditions)
    }
    return sorted(found)[op.offset : op.offset + op.limit]
