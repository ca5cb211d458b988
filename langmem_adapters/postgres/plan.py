"""The batch plan of the Postgres stores, written once for sync and async.

A batch runs as a generator that yields requests: ``Embed`` (texts to embed) or ``Round`` (SQL
statements sent together in one pipeline). The sync and async stores differ only in the driver that
answers those requests, so both execute exactly the same queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import GetOp, Op, Result, SearchItem, SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.embedding import embed_queries
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.ops import plan_batch
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.lexical import (
    lexical_search,
    lexical_settings,
    needed,
    riding,
    scored_rows,
    terms_refresh,
    vector_op,
    vector_rows,
)
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.search import (
    get_statement,
    list_statement,
    plain_search,
    pool_candidates,
    search_sizes,
    unscored_search,
    vector_search,
)
from langmem_adapters.postgres.sql import (
    Round,
    Statement,
    item_of,
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

__all__ = ["plan"]


def plan(
    t: Tables,
    spec: IndexSpec | None,
    ops: Iterable[Op],
    *,
    if_absent: bool = False,
    stats: PostgresStats | None = None,
) -> Steps[list[Result] | bool]:
    """Run a batch: validate everything, embed, then reads (pre-batch state) and writes in one transaction."""
    op_list, batch = plan_batch(ops)
    results: list[Result] = [None] * len(op_list)
    refresh: dict[tuple[str, str], None] = {}
    if not (batch.searches or batch.lists or batch.writes):
        # Only gets (the commonest batch): one statement, and none of the work below.
        if batch.gets:
            (rows,) = yield Round([get_statement(t, batch.gets)])
            _get_results(batch.gets, rows, results, refresh)
        if refresh:
            yield Round([refresh_statement(t, list(refresh))], writes=True)
        return results
    if spec is None and not (batch.gets or batch.searches or batch.lists):
        # Only writes, and no vectors to write (the commonest write): one round, none of the read work.
        item_writes, _ = write_statements(t, None, batch.writes, {}, if_absent)
        rows = yield Round(item_writes, tx=if_absent)
        return bool(rows[0]) if if_absent else results
    qvecs: dict[str, str] = {}
    vectors: ItemVectors = {}
    if spec is not None:
        qvecs = yield from embed_queries(spec, (op for _, op, _ in batch.searches), vec_literal)
        vectors = yield from write_vectors(t, spec, batch.writes)
    stats = stats or PostgresStats()
    if qvecs and spec is not None and spec.hybrid is not None and stats.lexicon.stale():
        # The lexical side's copy of the word statistics, renewed about once a minute.
        yield Round([terms_refresh(t, spec)], writes=True)
        stats.lexicon.mark()
    ef, narrow, broad = 100, set[str](), set[str]()
    if qvecs and spec is not None and spec.kind != "exact":
        ef, narrow, broad = yield from search_sizes(
            t, spec, batch.searches, stats, list(qvecs.values())
        )

    statements: list[Statement] = []
    if batch.gets:
        statements.append(get_statement(t, batch.gets))
    searches: list[tuple[int, SearchOp, tuple[Condition, ...], int, int | None]] = []
    lexical: dict[int, int] = {}  # a hybrid search's lexical statement, by op
    for i, op, conds in batch.searches:
        qvec = qvecs.get(op.query or "")
        if qvec is None or spec is None:
            searches.append((i, op, conds, len(statements), None))
            statements.append(plain_search(t, op, conds))
        else:
            prefix = nsp.join(op.namespace_prefix)
            scan = spec.kind == "exact" or prefix in narrow
            vop = vector_op(spec, op)  # a hybrid search's vector side: its candidates
            n = None if scan and conds else vector_rows(spec, vop)
            n = None if spec.kind == "exact" else n
            stmts = vector_search(
                ef, t, spec, vop, conds, qvec, n, exact=scan, broad=prefix in broad
            )
            statements += stmts
            searches.append((i, op, conds, len(statements) - 1, n))
            if spec.hybrid is not None:  # the lexical side, in the same round
                if n is not None:  # rows pooled and sorted here: the settings ride in them
                    statements[-1] = riding(statements[-1])
                else:
                    statements.append(lexical_settings())
                candidates = spec.hybrid.candidates(op.offset, op.limit)
                statements.append(lexical_search(t, spec, spec.hybrid, op, conds, candidates))
                lexical[i] = len(statements) - 1
    lists = []
    for i, list_op in batch.lists:
        lists.append((i, len(statements)))
        statements.append(list_statement(t, list_op))
    n_reads = len(statements)
    item_writes, vector_writes = (
        write_statements(t, spec, batch.writes, vectors, if_absent) if batch.writes else ([], [])
    )
    writes = item_writes if if_absent else item_writes + vector_writes
    # An exact fallback query, or the unscored tail of a short page, runs in a later round; when the
    # batch also writes, send the reads first so that every read of the batch sees the state before
    # its writes.
    reads_first = bool(writes) and any(op.query in qvecs for _, op, *_ in searches)
    if not statements and not writes:
        return results
    if reads_first:
        rows = yield Round(statements)
        write_rows: list[Any] = []
    else:
        rows = yield Round(statements + writes, tx=if_absent)
        write_rows = rows[n_reads:]

    if batch.gets:
        _get_results(batch.gets, rows[0], results, refresh)
    tails: list[tuple[SearchOp, list[SearchItem], Statement]] = []
    for i, op, conds, pos, n in searches:
        got = rows[pos]
        if op.query and spec is not None and qvecs.get(op.query):
            vop = vector_op(spec, op)
            if n is not None:
                pooled = pool_candidates(got)
                if len(pooled) < needed(vop):
                    # The ANN window (or the iterative scan's budget) ran short for this filter or
                    # page: answer exactly, so a page is never short while more matches exist.
                    (got,) = yield Round(
                        vector_search(ef, t, spec, vop, conds, qvecs[op.query], None)
                    )
                else:
                    got = pooled[vop.offset : vop.offset + vop.limit]
            scored = scored_rows(spec, op, got, rows[lexical[i]] if i in lexical else None)
            got = [r for r, _ in scored]
            page = [search_item_of(r, score) for r, score in scored]
            results[i] = page
            if len(got) < op.limit:  # the scored items ran out: the page ends with unscored ones
                # A whole page's worth: the rows of items scored above are skipped below.
                tails.append((op, page, unscored_search(t, spec, op, conds, op.limit, not got)))
        else:
            results[i] = [search_item_of(r, None) for r in got]
        if op.refresh_ttl:
            refresh.update(((r[0], r[1]), None) for r in got if r[5] is not None)
    tail_rows = (yield Round([s for *_, s in tails])) if tails else []
    for (op, page, _), got in zip(tails, tail_rows):
        # The tail reads in its own transaction: an item scored above and rewritten unindexed
        # since would come back unscored; it stays where it was scored.
        seen = {(item.namespace, item.key) for item in page}
        room = op.limit - len(page)
        got = [r for r in got if (nsp.split(r[0]), r[1]) not in seen][:room]
        page += [search_item_of(r, None) for r in got]
        if op.refresh_ttl:
            refresh.update(((r[0], r[1]), None) for r in got if r[5] is not None)
    for i, pos in lists:
        results[i] = [tuple(r[0]) for r in rows[pos]]
    if reads_first:
        yield Round(writes)
    if refresh:
        yield Round([refresh_statement(t, list(refresh))], writes=True)
    if if_absent:
        # Only a created item gets vectors: a live item that won the race keeps its own.
        created = bool(write_rows[0])
        if created and vector_writes:
            yield Round(vector_writes)
        return created
    return results


def _get_results(
    gets: list[tuple[int, GetOp]],
    rows: list[Sequence[Any]],
    results: list[Result],
    refresh: dict[tuple[str, str], None],
) -> None:
    """Fill the gets' results from the get statement's rows; note the items whose TTL to refresh."""
    found = {(r[0], r[1]): r for r in rows}
    for i, op in gets:
        row = found.get((nsp.join(op.namespace), op.key))
        if row is None:
            continue
        if op.refresh_ttl and row[5] is not None:
            refresh[(row[0], row[1])] = None
        results[i] = item_of(row)
