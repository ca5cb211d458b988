"""The read statements of the Postgres stores: gets, plain and vector searches (with the table
sizes that choose between an exact scan and the ANN index).
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from enum import Enum
from typing import NamedTuple

from langgraph.store.base import GetOp, SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.calibration import Cold
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.vectors import IndexSpec, SearchStats, search_breadth
from langmem_adapters.postgres.lexical import vector_rows
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import (
    DISTANCE_OPERATOR,
    ITEM_COLUMNS,
    KEY,
    LIVE,
    TRUE,
    Round,
    Sql,
    Statement,
    compose,
    filter_sql,
    ns_condition,
    row_source,
)

__all__ = [
    "COLD",
    "DISTANCE_OPERATOR",
    "EF_SEARCH",
    "EXACT_BELOW",
    "WALK_BELOW",
    "Shape",
    "Sizes",
    "choose_shape",
    "get_statement",
    "items_statement",
    "plain_search",
    "scanned",
    "search_sizes",
    "unscored_search",
    "vector_search",
]

#: Before a measurement fits the table (a new store instance with nothing kept, or a grown table),
#: search scans exactly up to this many vectors, and above at pgvector's widest ``ef_search``.
#: Measured (``bench_cold_start.py --line``, standard-normal 256-d, our global search both ways on
#: the same table): the scan serves 1.7x / 1.2x / 1.3x the searches of HNSW at 1000 at 5k / 10k /
#: 20k vectors, 0.8x at 50k; again 2026-12-05 (the scan of ``Shape.WHOLE_SCAN``): 0.90x / 1.04x at
#: 10k / 20k, 0.81x at 50k.
COLD = Cold(exact_up_to=20_000, breadth=1000)


def get_statement(t: Tables, gets: list[tuple[int, GetOp]]) -> Statement:
    """One statement reading the live items of a batch's gets (``ITEM_COLUMNS``)."""
    return items_statement(t, [(nsp.join(op.namespace), op.key) for _, op in gets])


def items_statement(t: Tables, keys: Sequence[tuple[str, str]]) -> Statement:
    """One statement reading the live items of ``keys`` (namespace text, key): ``ITEM_COLUMNS``.

    Each key is looked up by the primary key ("OFFSET 0" keeps the lookup a nested loop): the
    planner takes a row source of several keys for 100 rows, and once the statement is prepared
    its kept plan hash-joined them with a scan of every item of a small table (1.3 ms for 10 keys
    among 10k items, against 0.1 ms by key; docs/hybrid.md)."""
    # Built every time: caching its text per store saved 4-5% of a get (docs/architecture.md).
    source, params = row_source(KEY, keys)
    return Statement(
        f"SELECT {_ITEMS_S} FROM {source} CROSS JOIN LATERAL (SELECT {_ITEMS_S} FROM {t.store} s "
        f"WHERE s.ns = r.ns AND s.key = r.key AND {_LIVE_S} OFFSET 0) s",
        params,
    )


_ITEMS_S, _LIVE_S = ITEM_COLUMNS.format(a="s"), LIVE.format(a="s")  # the get's fixed parts


# Up to this many rows (offset + limit), a plain search under a prefix walks each namespace newest
# first; a deeper page scans the prefix's items once instead.
WALK_BELOW = 1000


def plain_search(t: Tables, op: SearchOp, conditions: tuple[Condition, ...]) -> Statement:
    """A search without a query vector: filtered live items under the prefix, newest first.

    Under a prefix, each registered namespace below it is walked newest first on the
    ``(ns, updated_at DESC, key)`` index until it gave ``offset + limit`` matches, and the walks are
    merged: the cost follows the page and the number of namespaces, not how many items they hold
    (measured: 6x slower per 10x of items without it, flat with it; see docs/benchmarks.md). The
    match is wrapped in ``coalesce``, which the planner rates as keeping half of the rows: with its
    default 0.5% guess for a JSON equality it would rather read and sort every item of a namespace.
    """
    f_sql, f_params = filter_sql(conditions, "s.value")
    depth = op.offset + op.limit
    if op.namespace_prefix and depth <= WALK_BELOW:
        n_sql, n_params = ns_condition("n.ns", op.namespace_prefix)
        cols = ITEM_COLUMNS.format(a="s")
        return Statement(
            f"SELECT {cols} FROM {t.namespaces} n CROSS JOIN LATERAL (SELECT {cols} "
            f"FROM {t.store} s WHERE s.ns = n.ns AND coalesce({LIVE.format(a='s')} AND {f_sql}, "
            f"false) ORDER BY s.updated_at DESC, s.key LIMIT %s) s WHERE {n_sql} "
            f"ORDER BY s.updated_at DESC, s.ns, s.key LIMIT %s OFFSET %s",
            [*f_params, depth, *n_params, op.limit, op.offset],
        )
    ns_sql, ns_params = ns_condition("s.ns", op.namespace_prefix)
    return Statement(
        f"SELECT {ITEM_COLUMNS.format(a='s')} FROM {t.store} s "
        f"WHERE {ns_sql} AND {LIVE.format(a='s')} AND {f_sql} "
        f"ORDER BY s.updated_at DESC, s.ns, s.key LIMIT %s OFFSET %s",
        [*ns_params, *f_params, op.limit, op.offset],
    )


# HNSW search breadth by table size, for recall@10 >= 0.95 against exact search with pgvector's
# default build (m=16, ef_construction=64) on hard, weakly clustered data, with margin for the spread
# between builds and query sets: measured 0.975-0.982 at 10k vectors with 100, 0.965-0.971 at 20k
# with 120 (100 gave 0.951-0.957), 0.980-0.988 at 50k with 300 (200 gave 0.956-0.964) and
# 0.977-0.981 at 100k with 400. Beyond 100k (not measured) a broader search: recall falls with size.
EF_SEARCH = ((12_000, 100), (20_000, 140), (50_000, 300), (100_000, 400), (100_001, 600))


# Up to this many vectors under a prefix, a search scans them exactly (no ANN index): as fast as the
# index there, exact, and its prepared statement keeps a generic plan (no planning per call).
# ``ann_index_config={"exact_below": n}`` changes it (0: always the index).
EXACT_BELOW = 1000


class Sizes(NamedTuple):
    """What a batch's vector searches are planned with (``search_sizes``)."""

    #: The HNSW search breadth.
    ef: int = 100
    #: The namespace prefixes to scan exactly.
    narrow: Set[str] = frozenset()
    #: The namespace prefixes holding half of the vectors or more, counted below the cap (global).
    broad: Set[str] = frozenset()
    #: The namespace prefixes holding every vector by the last counts, counted below the cap.
    whole: Set[str] = frozenset()


def search_sizes(
    t: Tables,
    spec: IndexSpec,
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]],
    stats: SearchStats,
    queries: Sequence[str] = (),
) -> Steps[Sizes]:
    """HNSW search breadth (explicit ``ef_search``, else the calibrated one, else by the table's
    size); the namespace prefixes of this batch's vector searches to scan exactly (holding at most
    ``exact_below`` vectors, or as many as calibration found a scan cheaper for, or all when it chose
    exact search: narrow), and those holding at least half of the table (broad). ``queries``
    (the batch's query vectors) go to the calibrator."""
    exact_below = int(spec.ann.get("exact_below", EXACT_BELOW))
    prefixes = {
        nsp.join(op.namespace_prefix): op.namespace_prefix for _, op, _ in searches if op.query
    }
    cap = EF_SEARCH[-1][0]  # enough to pick the schedule's step
    yield from _recount(t, spec, prefixes, stats, cap)
    total = stats.index.count or 0
    calibrator = stats.calibration
    ef = int(spec.ann.get("ef_search", 0))
    if not ef and calibrator is not None:
        # A count at the cap says only "large": the measured size stands for it (else a table over
        # twice the cap would look halved since its measurement, and wake a check at every search).
        m = calibrator.measurement
        seen = max(total, m.count) if m and total >= cap else total
        calibrator.observe(queries, seen)
        ef = calibrator.breadth(seen, search_breadth(total, EF_SEARCH))
    else:
        seen = total
    ef = ef or search_breadth(total, EF_SEARCH)
    sizes = {p: stats.prefix(p).count or 0 for p in prefixes}
    exact = calibrator is not None and calibrator.exact_at(seen) and not spec.ann.get("ef_search")
    if calibrator is not None:
        # Capped: a prefix counted at the cap is only known to be large, never narrow.
        exact_below = min(calibrator.exact_up_to(exact_below, "exact_below" in spec.ann), cap - 1)
    narrow = {p for p, n in sizes.items() if n <= exact_below or exact}
    broad = {p for p, n in sizes.items() if 2 * n >= total and (n < cap or not p)}
    whole = {p for p, n in sizes.items() if n >= total and (n < cap or not p)}
    return Sizes(ef, narrow, broad, whole)


def _recount(
    t: Tables, spec: IndexSpec, prefixes: dict[str, tuple[str, ...]], stats: SearchStats, cap: int
) -> Steps[None]:
    """Count the vectors of the table and of each prefix whose count is due (each re-read once a
    minute), up to ``cap``: a count at the cap stands for "at least"."""
    vt = t.vectors(spec)
    stale = sorted(p for p in prefixes if stats.prefix(p).stale())
    counts = [Statement(f"SELECT count(*) FROM (SELECT 1 FROM {vt} LIMIT {cap}) AS v")]
    counts = counts if stats.index.stale() else []
    for p in stale:
        cond, params = ns_condition("v.ns", prefixes[p], estimable=True)
        sql = f"SELECT count(*) FROM (SELECT 1 FROM {vt} v WHERE {cond} LIMIT {cap}) AS v"
        counts.append(Statement(sql, params))
    if not counts:
        return
    rows = yield Round(counts)
    if len(rows) > len(stale):
        stats.index.update(int(rows[0][0][0]))
    for p, got in zip(stale, rows[len(rows) - len(stale) :]):
        stats.prefix(p).update(int(got[0][0]))


class Shape(Enum):
    """The SQL shape of a vector search: how its rows are read."""

    #: Every vector under the prefix whose item passes the filters, each item's nearest, paged in
    #: SQL: exact. An exact index, a small prefix with filters, and the fallback of a short page.
    EXACT = "exact"
    #: The nearest vectors under a small prefix by a scan of its range (no ANN index), then their
    #: live items: exact.
    SCAN = "scan"
    #: As ``SCAN`` under a prefix holding half of the vectors or more, each row's namespace tested
    #: the cheaper way the planner estimates (3.2 against 4.8 ms over 10,000 128-d vectors).
    BROAD_SCAN = "broad scan"
    #: As ``SCAN`` under a prefix holding every vector by the last counts: no namespace test in the
    #: scan (2.6 ms), only on the nearest rows; a row from outside it leaves the page short.
    WHOLE_SCAN = "whole scan"
    #: The ANN index's nearest vectors under the prefix, then their live items.
    NEAREST = "nearest"
    #: As ``NEAREST`` under a prefix holding half of the vectors or more: no iterative scan (1.11x).
    BROAD = "broad"
    #: The ANN index's nearest vectors whose items are live, under the prefix and pass the filters.
    FILTERED = "filtered"


def choose_shape(
    spec: IndexSpec, op: SearchOp, conditions: tuple[Condition, ...], sizes: Sizes
) -> Shape:
    """The shape of ``op``'s vector search, by the index kind, the prefix's size and the filters."""
    prefix = nsp.join(op.namespace_prefix)
    scan, broad = prefix in sizes.narrow, prefix in sizes.broad
    if spec.kind == "exact" or (scan and conditions):
        return Shape.EXACT
    if scan and prefix in sizes.whole:
        return Shape.WHOLE_SCAN
    if scan:
        return Shape.BROAD_SCAN if broad else Shape.SCAN
    return Shape.FILTERED if conditions else Shape.BROAD if broad else Shape.NEAREST


def vector_search(
    t: Tables,
    spec: IndexSpec,
    op: SearchOp,
    conditions: tuple[Condition, ...],
    qvec: str,
    shape: Shape,
    ef: int = 0,
) -> list[Statement]:
    """The statements of ``op``'s vector search in ``shape``, its rows (``ITEM_COLUMNS`` and the
    distance) from the last one: the page (in the shapes but ``EXACT`` shorter where the nearest
    ``vector_rows(spec, op)`` vectors ran short), a hybrid search's vector side too. ``ef``: the
    HNSW breadth of the ANN shapes (``Sizes.ef``)."""
    dist = Sql(f"(v.embedding {DISTANCE_OPERATOR[spec.distance]} %s::{spec.vector_type})", [qvec])
    rows = vector_rows(spec, op)
    columns = ITEM_COLUMNS.format(a="s")
    if shape is Shape.EXACT:
        page = Sql("LIMIT %s OFFSET %s", [op.limit, op.offset])
        found = compose(f"SELECT {columns}, min(", dist, ") AS d", _joined(t, spec, op, conditions))
        return [compose(found, "GROUP BY s.ns, s.key ORDER BY d, s.ns, s.key", page).statement()]
    vt = t.vectors(spec)
    if shape is Shape.WHOLE_SCAN:  # the prefix tested on the nearest rows' items only
        on_items = Sql(*ns_condition("s.ns", op.namespace_prefix, estimable=True))
        found = _page_items(t, columns, scanned(vt, dist, TRUE, rows), op, on_items)
        return [found.statement()]
    if shape in (Shape.SCAN, Shape.BROAD_SCAN):
        estimable = shape is Shape.BROAD_SCAN
        where = Sql(*ns_condition("v.ns", op.namespace_prefix, estimable=estimable))
        return [_page_items(t, columns, scanned(vt, dist, where, rows), op).statement()]
    steer = "" if shape is Shape.FILTERED else _STEER_TO_INDEX
    iterative = "off" if shape is Shape.BROAD else "relaxed_order"
    settings = compose("SELECT", _ann_settings(spec, ef, rows, iterative), steer).statement()
    if shape is Shape.FILTERED:
        found = compose("SELECT v.ns, v.key,", dist, "AS d", _joined(t, spec, op, conditions))
        nearest = compose(found, "ORDER BY", dist, Sql("LIMIT %s", [rows]))
        return [settings, _page_items(t, columns, nearest, op).statement()]
    # Nothing to filter on the items: the nearest vectors first, then only their items (a live
    # check can drop some: a short page then falls back to the exact query).
    where = Sql(*ns_condition("v.ns", op.namespace_prefix, estimable=True))
    return [settings, _page_items(t, columns, _indexed(vt, dist, where, rows), op).statement()]


# An unfiltered ANN search is kept on the index, in one generic plan: with sorts allowed, a global
# search under a root label was planned as a scan and sort of every vector, 1.45x slower
# (docs/benchmarks.md, "Cold start"; no other planner steering pays, docs/architecture.md).
_STEER_TO_INDEX = (
    ", set_config('enable_sort', 'off', true), "
    "set_config('plan_cache_mode', 'force_generic_plan', true)"
)


def _ann_settings(spec: IndexSpec, ef: int, rows: int, iterative: str) -> Sql:
    """The ANN index's search settings: its breadth (at least the ``rows`` wanted) and its
    ``iterative`` scan mode (``relaxed_order``: past the breadth until enough rows passed)."""
    if spec.kind == "ivfflat":
        setting, width = "ivfflat", int(spec.ann.get("probes", 10))
        breadth = "ivfflat.probes"
    else:
        setting, width = "hnsw", min(max(ef, rows), 1000)
        breadth = "hnsw.ef_search"
    return Sql(
        f"set_config('{breadth}', %s, true), "
        f"set_config('{setting}.iterative_scan', '{iterative}', true)",
        [str(width)],
    )


def _indexed(table: str, dist: Sql, where: Sql, rows: int) -> Sql:
    """The ``rows`` nearest vectors of ``table`` under ``where`` through the ANN index. The LIMIT
    is text: as a parameter, a generic plan would expect a tenth of the vectors back."""
    found = compose("SELECT v.ns, v.key,", dist, f"AS d FROM {table} v WHERE", where, "ORDER BY")
    return compose(found, dist, f"LIMIT {int(rows)}")


def _page_items(t: Tables, cols: str, nearest: Sql, op: SearchOp, on_items: Sql = TRUE) -> Sql:
    """The page of ``op`` (its ``limit`` live items passing ``on_items`` after ``offset``) of the
    ``nearest`` vectors, ``cols`` and the distance: each item once, at its nearest vector. Cut on
    the server, so only the page's values are read: LongMemEval's 2 KB rounds, 8% / 12% faster in
    a namespace / globally (and a deep page reads no value before it)."""
    pooled = compose("SELECT n.ns, n.key, min(n.d) AS d FROM (", nearest, ") n GROUP BY 1, 2")
    return compose(
        f"SELECT {cols}, c.d FROM (",
        pooled,
        f") c CROSS JOIN LATERAL (SELECT * FROM {t.store} s WHERE s.ns = c.ns AND s.key = c.key "
        f"AND {LIVE.format(a='s')} AND",
        on_items,
        f"OFFSET 0) s ORDER BY c.d, c.ns, c.key LIMIT {int(op.limit)} OFFSET {int(op.offset)}",
    )


def scanned(table: str, dist: Sql, where: Sql, rows: int, columns: str = "v.ns, v.key") -> Sql:
    """The ``rows`` nearest vectors of ``table`` under ``where`` by a scan (``columns`` and ``d``):
    ordered outside a fenced subquery, so no index serves it and each distance is computed once
    (-10%); ties broken as a page is ordered, so a cut through equal distances is consistent."""
    vectors = compose(f"SELECT {columns},", dist, f"AS d FROM {table} v WHERE", where)
    order = f"OFFSET 0) v ORDER BY v.d, v.ns, v.key LIMIT {int(rows)}"
    return compose("SELECT * FROM (", vectors, order)


def _joined(t: Tables, spec: IndexSpec, op: SearchOp, conditions: tuple[Condition, ...]) -> Sql:
    """The FROM and WHERE of the vectors joined with their items under the prefix, live and
    passing the filters."""
    return compose(
        f"FROM {t.vectors(spec)} v JOIN {t.store} s ON s.ns = v.ns AND s.key = v.key WHERE",
        Sql(*ns_condition("v.ns", op.namespace_prefix, estimable=True)),
        "AND",
        Sql(*ns_condition("s.ns", op.namespace_prefix, estimable=True)),
        f"AND {LIVE.format(a='s')} AND",
        Sql(*filter_sql(conditions, "s.value")),
    )


def unscored_search(
    t: Tables,
    spec: IndexSpec,
    op: SearchOp,
    conditions: tuple[Condition, ...],
    room: int,
    counted: bool,
) -> Statement:
    """The tail of a query search whose scored items ran out: up to ``room`` filtered live items
    under the prefix without a vector (no row in the vector table), newest first, as InMemoryStore
    returns them after the scored ones. ``counted``: the scored page came back empty, so the items
    to skip are ``offset`` minus the scored matches (counted here, at most ``offset`` of them); else
    none."""
    vt = t.vectors(spec)
    ns_sql, ns_params = ns_condition("s.ns", op.namespace_prefix)
    f_sql, f_params = filter_sql(conditions, "s.value")
    where = f"{ns_sql} AND {LIVE.format(a='s')} AND {f_sql}"
    has = f"EXISTS (SELECT 1 FROM {vt} v WHERE v.ns = s.ns AND v.key = s.key)"
    skip, skip_params = "0", []
    if counted and op.offset:
        skip = (
            f"greatest(0, %s - (SELECT count(*) FROM (SELECT 1 FROM {t.store} s "
            f"WHERE {where} AND {has} LIMIT %s) AS c))"
        )
        skip_params = [op.offset, *ns_params, *f_params, op.offset]
    return Statement(
        f"SELECT {ITEM_COLUMNS.format(a='s')} FROM {t.store} s WHERE {where} AND NOT {has} "
        f"ORDER BY s.updated_at DESC, s.ns, s.key LIMIT %s OFFSET {skip}",
        [*ns_params, *f_params, room, *skip_params],
    )
