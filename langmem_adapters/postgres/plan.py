"""The batch plans of the Postgres stores, written once for sync and async.

A batch runs as a generator that yields requests: ``Embed`` (texts to embed) or ``Round`` (SQL
statements sent together in one pipeline). The sync and async stores differ only in the driver that
answers those requests, so both execute exactly the same queries.

:func:`plan` runs in stages: validate the whole batch (``core.ops.plan_batch``), prepare (embed
the queries and the new texts, size the searches), build the read round, send it with the writes,
then assemble the results (with the rounds a search may still need: an exact fallback, the
unscored tail of a short page). :func:`put_if_absent_plan` is the atomic create.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langgraph.store.base import GetOp, Op, PutOp, Result, SearchItem, SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.embedding import embed_queries
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.items import make_item
from langmem_adapters.core.ops import Batch, plan_batch
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.fusion import (
    Fused,
    Items,
    LexicalRow,
    Scored,
    fuse_rows,
    known_items,
    rows_by_key,
    scored_rows,
    with_items,
)
from langmem_adapters.postgres.lexical import (
    lexical_search,
    lexical_settings,
    namespace_shares,
    prefix_query,
    riding,
    terms_refresh,
    vector_op,
)
from langmem_adapters.postgres.namespaces import list_statement
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.search import (
    Shape,
    Sizes,
    choose_shape,
    get_statement,
    items_statement,
    plain_search,
    search_sizes,
    unscored_search,
    vector_search,
)
from langmem_adapters.postgres.sql import (
    ItemRow,
    Round,
    Statement,
    VectorRow,
    search_item_of,
    vec_literal,
)
from langmem_adapters.postgres.stats import PostgresStats
from langmem_adapters.postgres.writes import (
    ItemVectors,
    refresh_statement,
    write_statements,
    write_vectors,
)

__all__ = ["plan", "put_if_absent_plan"]

Refresh = dict[tuple[str, str], None]
"""The items (namespace text, key) whose TTL a batch's reads refresh, in the order read."""


class _Prepared(NamedTuple):
    """What a batch needs before its first read: query vectors, put vectors, search sizes, and the
    namespace words' shares of the rows (``PostgresStats.namespace_shares``)."""

    queries: dict[str, str]  # vector literal by query text
    vectors: ItemVectors
    sizes: Sizes
    namespace_shares: Mapping[str, float]


_NOTHING = _Prepared({}, {}, Sizes(), {})


@dataclass
class _Search:
    """One search of the batch: where its rows come back in the read round, and how they are read."""

    index: int  # its place in the batch's results
    op: SearchOp
    conditions: tuple[Condition, ...]
    at: int  # the position of its rows (its vector or plain statement) in the round
    qvec: str | None = None  # a vector search's query vector
    shape: Shape | None = None  # how a vector search's rows are read
    lexical_at: int | None = None  # a hybrid search's lexical statement


@dataclass
class _Reads:
    """The batch's read statements and where each read's rows come back."""

    statements: list[Statement] = field(default_factory=list)
    gets_at: int | None = None
    searches: list[_Search] = field(default_factory=list)
    lists: list[tuple[int, int]] = field(default_factory=list)  # (result index, position)


class _Tail(NamedTuple):
    """A short page of scored items, to end with unscored ones read by ``statement``."""

    op: SearchOp
    page: list[SearchItem]
    statement: Statement


def plan(
    t: Tables, spec: IndexSpec | None, ops: Iterable[Op], *, stats: PostgresStats | None = None
) -> Steps[list[Result]]:
    """Run a batch: validate everything, embed, then reads (pre-batch state) and writes in one
    transaction."""
    # No shortcut for a batch of gets (or of writes) only: the stages skip what is empty, and a
    # shortcut saved 5.7% of a get, 4.7% of a put (docs/architecture.md).
    op_list, batch = plan_batch(ops)
    results: list[Result] = [None] * len(op_list)
    refresh: Refresh = {}
    prepared = _NOTHING  # what a batch without anything to embed needs before its reads
    if spec is not None and (batch.searches or batch.writes):
        prepared = yield from _prepare(t, spec, batch, stats or PostgresStats())
    reads = _read_round(t, spec, batch, prepared)
    writes: list[Statement] = []
    if batch.writes:
        items, vectors = write_statements(t, spec, batch.writes, prepared.vectors)
        writes = items + vectors
    # An exact fallback query, or the unscored tail of a short page, runs in a later round; when the
    # batch also writes, send the reads first so that every read of the batch sees the state before
    # its writes.
    reads_first = bool(writes) and any(s.qvec is not None for s in reads.searches)
    if reads_first:
        rows = yield Round(reads.statements)
    elif reads.statements or writes:
        rows = yield Round(reads.statements + writes)
    else:
        return results
    if reads.gets_at is not None:
        _get_results(batch.gets, rows[reads.gets_at], results, refresh)
    if reads.searches or reads.lists:
        yield from _assemble(t, spec, reads, rows, results, refresh)
    if reads_first:
        yield Round(writes)
    if refresh:
        yield Round([refresh_statement(t, list(refresh))], writes=True)
    return results


def put_if_absent_plan(t: Tables, spec: IndexSpec | None, op: PutOp) -> Steps[bool]:
    """Create the item only if no live item has its key; whether it did. Only a created item gets
    vectors, in the same transaction: a live item that won the race keeps its own."""
    _, batch = plan_batch([op])
    vectors: ItemVectors = {}
    if spec is not None:
        vectors = yield from write_vectors(t, spec, batch.writes)
    items, vector_writes = write_statements(t, spec, batch.writes, vectors, if_absent=True)
    (written, *_) = yield Round(items, tx=True)
    if written and vector_writes:
        yield Round(vector_writes)
    return bool(written)


def _prepare(t: Tables, spec: IndexSpec, batch: Batch, stats: PostgresStats) -> Steps[_Prepared]:
    """Embed the batch's queries and new texts; renew the lexical side's word statistics when they
    are due; size the vector searches."""
    queries = yield from embed_queries(spec, (op for _, op, _ in batch.searches), vec_literal)
    vectors = yield from write_vectors(t, spec, batch.writes)
    if queries and spec.hybrid is not None and stats.lexicon.stale():
        # The lexical side's copy of the word statistics, renewed about once a minute.
        _, shares = yield Round([terms_refresh(t, spec), namespace_shares(t, spec)], writes=True)
        stats.namespace_shares = dict(shares)
        stats.lexicon.mark()
    sizes = Sizes()
    if queries and spec.kind != "exact":
        sizes = yield from search_sizes(t, spec, batch.searches, stats, list(queries.values()))
    return _Prepared(queries, vectors, sizes, stats.namespace_shares)


def _read_round(t: Tables, spec: IndexSpec | None, batch: Batch, prepared: _Prepared) -> _Reads:
    """The statements of every read of the batch, for one round."""
    reads = _Reads()
    if batch.gets:
        reads.gets_at = 0
        reads.statements.append(get_statement(t, batch.gets))
    for i, op, conds in batch.searches:
        qvec = prepared.queries.get(op.query or "")
        if qvec is None or spec is None:
            reads.searches.append(_Search(i, op, conds, len(reads.statements)))
            reads.statements.append(plain_search(t, op, conds))
        else:
            reads.searches.append(_vector_reads(t, spec, reads, (i, op, conds), qvec, prepared))
    for i, list_op in batch.lists:
        reads.lists.append((i, len(reads.statements)))
        reads.statements.append(list_statement(t, list_op))
    return reads


def _vector_reads(
    t: Tables,
    spec: IndexSpec,
    reads: _Reads,
    search: tuple[int, SearchOp, tuple[Condition, ...]],
    qvec: str,
    prepared: _Prepared,
) -> _Search:
    """Add a vector search's statements (and a hybrid search's lexical side) to the round."""
    i, op, conds = search
    vop = vector_op(spec, op)  # a hybrid search's vector side: its candidates
    shape = choose_shape(spec, vop, conds, prepared.sizes)
    statements = reads.statements
    statements += vector_search(t, spec, vop, conds, qvec, shape, prepared.sizes.ef)
    found = _Search(i, op, conds, len(statements) - 1, qvec, shape)
    if spec.hybrid is not None:  # the lexical side, in the same round
        if shape is not Shape.EXACT:  # a page of its own: the settings ride in its rows
            statements[-1] = riding(statements[-1])
        else:
            statements.append(lexical_settings())
        candidates = spec.hybrid.candidates(op.offset, op.limit)
        words = prefix_query(op.namespace_prefix, prepared.namespace_shares)
        statements.append(lexical_search(t, spec, spec.hybrid, op, conds, candidates, qvec, words))
        found.lexical_at = len(statements) - 1
    return found


def _assemble(
    t: Tables,
    spec: IndexSpec | None,
    reads: _Reads,
    rows: list[Any],
    results: list[Result],
    refresh: Refresh,
) -> Steps[None]:
    """Fill the searches' and listings' results from the round's rows, with the rounds a search
    may still need."""
    scored: dict[int, Scored] = {}  # the query searches' pages, by their place in reads.searches
    if spec is not None:
        scored = yield from _scored_pages(t, spec, reads.searches, rows)
    tails: list[_Tail] = []
    got: Sequence[Sequence[Any]]
    for n, s in enumerate(reads.searches):
        if spec is None or n not in scored:
            got = [ItemRow._make(r) for r in rows[s.at]]
            results[s.index] = [search_item_of(r, None) for r in got]
        else:
            got = [r for r, _ in scored[n]]
            page = [search_item_of(r, score) for r, score in scored[n]]
            results[s.index] = page
            if len(got) < s.op.limit:  # the scored items ran out: the page ends with unscored ones
                # A whole page's worth: the rows of items scored above are skipped below.
                unscored = unscored_search(t, spec, s.op, s.conditions, s.op.limit, not got)
                tails.append(_Tail(s.op, page, unscored))
        _note_refresh(refresh, s.op, got)
    if tails:
        tail_rows = yield Round([tail.statement for tail in tails])
        for tail, tail_got in zip(tails, tail_rows):
            _end_page(tail, tail_got, refresh)
    for i, at in reads.lists:
        results[i] = [tuple(labels) for (labels,) in rows[at]]


def _scored_pages(
    t: Tables, spec: IndexSpec, searches: list[_Search], rows: list[Any]
) -> Steps[dict[int, Scored]]:
    """Each query search's scored page, by its place in ``searches``: a vector search's from its
    rows, a hybrid search's from the fusion of its sides with the items they read, any other page
    item read in one more round (for every hybrid search of the batch at once)."""
    scored: dict[int, Scored] = {}
    fused: dict[int, tuple[Fused, Items]] = {}
    for n, s in enumerate(searches):
        if s.qvec is None:
            continue
        candidates = yield from _vector_candidates(t, spec, s, rows)
        if s.lexical_at is None or spec.hybrid is None:
            scored[n] = scored_rows(spec, candidates)
        else:
            # Each side's rows read once, for the fusion and for the items they carry.
            vector = [VectorRow._make(r) for r in candidates]
            lexical = [LexicalRow._make(r) for r in rows[s.lexical_at]]
            page = fuse_rows(spec.hybrid, vector, lexical, s.op.offset, s.op.limit)
            fused[n] = (page, known_items(vector, lexical))
    unread = {n: [k for k, _ in page if k not in items] for n, (page, items) in fused.items()}
    unread = {n: keys for n, keys in unread.items() if keys}
    if unread:
        got = yield Round([items_statement(t, keys) for keys in unread.values()])
        for n, rows_read in zip(unread, got):
            fused[n][1].update(rows_by_key(rows_read))
    scored.update((n, with_items(page, items)) for n, (page, items) in fused.items())
    return scored


def _vector_candidates(
    t: Tables, spec: IndexSpec, s: _Search, rows: list[Any]
) -> Steps[Sequence[Sequence[Any]]]:
    """A vector search's page (or a hybrid search's vector side) from its rows, or from the exact
    query when the nearest vectors ran short."""
    assert s.qvec is not None
    vop = vector_op(spec, s.op)
    got: Sequence[Sequence[Any]] = rows[s.at]
    if s.shape is Shape.EXACT:
        return got
    if len(got) >= vop.limit:
        return got
    # The ANN window (or the iterative scan's budget) ran short for this filter or page (the page
    # is cut on the server: a short one means fewer items than its end): answer exactly, so a page
    # is never short while more matches exist.
    exact = vector_search(t, spec, vop, s.conditions, s.qvec, Shape.EXACT)
    (got,) = yield Round(exact)
    return got


def _end_page(tail: _Tail, rows: list[Sequence[Any]], refresh: Refresh) -> None:
    """End a short page with the unscored items of its tail statement.

    The tail reads in its own transaction: an item scored above and rewritten unindexed since
    would come back unscored; it stays where it was scored."""
    seen = {(item.namespace, item.key) for item in tail.page}
    room = tail.op.limit - len(tail.page)
    got = [r for r in map(ItemRow._make, rows) if (nsp.split(r.ns), r.key) not in seen][:room]
    tail.page.extend(search_item_of(r, None) for r in got)
    _note_refresh(refresh, tail.op, got)


def _note_refresh(refresh: Refresh, op: SearchOp, rows: Iterable[Sequence[Any]]) -> None:
    """Note the items of a search's page whose TTL it refreshes (``ITEM_COLUMNS`` rows)."""
    if op.refresh_ttl:
        refresh.update(((ns, key), None) for ns, key, _, _, _, ttl, *_ in rows if ttl is not None)


def _get_results(
    gets: list[tuple[int, GetOp]],
    rows: list[Sequence[Any]],
    results: list[Result],
    refresh: Refresh,
) -> None:
    """Fill the gets' results from the get statement's rows; note the items whose TTL to refresh."""
    found = {(r.ns, r.key): r for r in map(ItemRow._make, rows)}
    for i, op in gets:
        row = found.get((nsp.join(op.namespace), op.key))
        if row is None:
            continue
        if op.refresh_ttl and row.ttl_minutes is not None:
            refresh[(row.ns, row.key)] = None
        # The get's own namespace: the row's text is that tuple joined, no need to split it again.
        results[i] = make_item(op.namespace, row.key, row.value, row.created_at, row.updated_at)
