"""The read statements of the Postgres stores: gets, plain and vector searches (with the table
sizes that choose between an exact scan and the ANN index, and the pooling of ANN candidates), and
``list_namespaces``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import takewhile
from typing import Any

from langgraph.store.base import GetOp, ListNamespacesOp, SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.calibration import Cold
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.vectors import IndexSpec, SearchStats, search_breadth
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import (
    ITEM_COLUMNS,
    KEY,
    LIVE,
    Round,
    Statement,
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
    "get_statement",
    "list_statement",
    "plain_search",
    "pool_candidates",
    "search_sizes",
    "unscored_search",
    "vector_search",
]

#: Before a measurement fits the table (a new store instance with nothing kept, or a grown table),
#: search scans exactly up to this many vectors, and above at pgvector's widest ``ef_search``.
#: Measured (``bench_cold_start.py --line``, standard-normal 256-d, our global search both ways on
#: the same table): the scan serves 1.7x / 1.2x / 1.3x the searches of HNSW at 1000 at 5k / 10k /
#: 20k vectors, 0.8x at 50k.
COLD = Cold(exact_up_to=20_000, breadth=1000)

#: pgvector's distance operator by ``IndexSpec.distance``.
DISTANCE_OPERATOR = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>"}


def _get_sql(t: Tables, source: str) -> str:
    """The get query for a row source."""
    return (
        f"SELECT {ITEM_COLUMNS.format(a='s')} FROM {t.store} s "
        f"JOIN {source} ON s.ns = r.ns AND s.key = r.key WHERE {LIVE.format(a='s')}"
    )


def get_statement(t: Tables, gets: list[tuple[int, GetOp]]) -> Statement:
    """One statement reading the live items of a batch's gets (``ITEM_COLUMNS``)."""
    source, params = row_source(KEY, [(nsp.join(op.namespace), op.key) for _, op in gets])
    return Statement(_get_sql(t, source), params)


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


def search_sizes(
    t: Tables,
    spec: IndexSpec,
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]],
    stats: SearchStats,
    queries: Sequence[str] = (),
) -> Steps[tuple[int, set[str], set[str]]]:
    """HNSW search breadth (explicit ``ef_search``, else the calibrated one, else by the table's
    size); the namespace prefixes of this batch's vector searches to scan exactly (holding at most
    ``exact_below`` vectors, or as many as calibration found a scan cheaper for, or all when it chose
    exact search: narrow), and those that
    hold at least half of the table (broad); counts capped at the schedule's last step, each
    re-read once a minute. ``queries`` (the batch's query vectors) go to the calibrator."""
    vt = t.vectors(spec)
    exact_below = int(spec.ann.get("exact_below", EXACT_BELOW))
    prefixes = {
        nsp.join(op.namespace_prefix): op.namespace_prefix for _, op, _ in searches if op.query
    }
    stale = sorted(p for p in prefixes if stats.prefix(p).stale())
    cap = EF_SEARCH[-1][0]  # enough to pick the schedule's step
    counts = [Statement(f"SELECT count(*) FROM (SELECT 1 FROM {vt} LIMIT {cap}) AS v")]
    counts = counts if stats.index.stale() else []
    for p in stale:
        cond, params = ns_condition("v.ns", prefixes[p], estimable=True)
        counts.append(
            Statement(
                f"SELECT count(*) FROM (SELECT 1 FROM {vt} v WHERE {cond} LIMIT {cap}) AS v",
                params,
            )
        )
    if counts:
        rows = yield Round(counts)
        if len(rows) > len(stale):
            stats.index.update(int(rows[0][0][0]))
        for p, got in zip(stale, rows[len(rows) - len(stale) :]):
            stats.prefix(p).update(int(got[0][0]))
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
    # A count at the cap says only "large": broad only when the whole table was counted too.
    broad = {p for p, n in sizes.items() if 2 * n >= total and (n < cap or not p)}
    return ef, narrow, broad


def vector_search(
    ef: int,
    t: Tables,
    spec: IndexSpec,
    op: SearchOp,
    conditions: tuple[Condition, ...],
    qvec: str,
    candidates: int | None,
    exact: bool = False,
    broad: bool = False,
) -> list[Statement]:
    """ANN candidates (``candidates`` rows, iterative index scan unless the prefix is ``broad``), the
    exact nearest ``candidates`` vectors (``exact``, without item conditions), or with ``None`` exact
    per-item scores."""
    vt = t.vectors(spec)
    dist = f"(v.embedding {DISTANCE_OPERATOR[spec.distance]} %s::{spec.vector_type})"
    ns_sql, ns_params = ns_condition("v.ns", op.namespace_prefix, estimable=True)
    s_ns_sql, s_ns_params = ns_condition("s.ns", op.namespace_prefix, estimable=True)
    f_sql, f_params = filter_sql(conditions, "s.value")
    where = f"{ns_sql} AND {s_ns_sql} AND {LIVE.format(a='s')} AND {f_sql}"
    ns_params = ns_params + s_ns_params
    join = f"FROM {vt} v JOIN {t.store} s ON s.ns = v.ns AND s.key = v.key"
    if candidates is None:
        return [
            Statement(
                f"SELECT {ITEM_COLUMNS.format(a='s')}, min({dist}) AS d {join} WHERE {where} "
                f"GROUP BY s.ns, s.key ORDER BY d, s.ns, s.key LIMIT %s OFFSET %s",
                [qvec, *ns_params, *f_params, op.limit, op.offset],
            )
        ]
    if exact and not conditions:
        # "+ 0": an expression the ANN index cannot serve, so the plan is a scan of the prefix's
        # range, and one that a prepared statement can keep (generic) without planning per call.
        # Ties are broken as the page is ordered, so a cut through equal distances is consistent.
        range_sql, range_params = ns_condition("v.ns", op.namespace_prefix)
        return [
            Statement(
                f"SELECT {ITEM_COLUMNS.format(a='s')}, c.d FROM (SELECT v.ns, v.key, {dist} AS d "
                f"FROM {vt} v WHERE {range_sql} ORDER BY {dist} + 0, v.ns, v.key LIMIT {int(candidates)}) c "
                f"JOIN {t.store} s ON s.ns = c.ns AND s.key = c.key WHERE {LIVE.format(a='s')}",
                [qvec, *range_params, qvec],
            )
        ]
    ef = max(ef, candidates)
    if conditions:
        # Planned for its parameters every time: whether the ANN index or the namespace ranges and
        # item filters serve it depends on how much of the table they keep.
        plan_mode = "set_config('plan_cache_mode', 'force_custom_plan', true)"
    else:
        # A prefix holding more than ``exact_below`` vectors, nothing else to filter: always the ANN
        # index, so one plan is kept (planning cost ~0.4 ms a search). Without sorts allowed, the
        # index is the only way to the nearest rows, whatever the unknown parameters suggest.
        plan_mode = (
            "set_config('plan_cache_mode', 'force_generic_plan', true), "
            "set_config('enable_sort', 'off', true)"
        )
    # An iterative scan keeps every candidate it passes over, which costs ~20% of a search; a prefix
    # holding at least half of the vectors (nothing else to filter) finds its page within ``ef``
    # candidates, and a short pool still falls back to the exact query.
    iterative = "off" if broad and not conditions else "relaxed_order"
    engine, width = "hnsw", ("ef_search", str(min(ef, 1000)))
    if spec.kind == "ivfflat":
        engine, width = "ivfflat", ("probes", str(int(spec.ann.get("probes", 10))))
    knobs = (
        f"set_config('{engine}.{width[0]}', %s, true), "
        f"set_config('{engine}.iterative_scan', '{iterative}', true)"
    )
    pick = f"SELECT {ITEM_COLUMNS.format(a='s')}, c.d FROM"
    nearest = f"SELECT v.ns, v.key, {dist} AS d FROM {vt} v WHERE"
    items = f"JOIN {t.store} s ON s.ns = c.ns AND s.key = c.key WHERE {LIVE.format(a='s')}"
    limit = f"ORDER BY {dist} LIMIT {int(candidates)}"
    if not conditions and not op.namespace_prefix and engine == "hnsw":
        # A global search has no parameter a plan could misjudge (its plan depends on the tables
        # alone), so its settings ride in the query: one statement, not a pipeline of two (~0.25 ms).
        # The one-time filter above the index scan sets them before the scan reads them, which
        # pgvector's HNSW scan does on its first row (IVFFlat reads its probes earlier).
        return [
            Statement(
                f"{pick} (SELECT {knobs}) AS g (a, b), LATERAL ({nearest} g.a IS NOT NULL "
                f"AND g.b IS NOT NULL {limit}) c {items}",
                [width[1], qvec, qvec],
            )
        ]
    settings = Statement(f"SELECT {knobs}, {plan_mode}", [width[1]])
    if not conditions:
        # Nothing to filter on the items: take the nearest vectors first and read only their items
        # (a live check can drop some; a short pool then falls back to the exact query). The LIMIT
        # is part of the text: with it a parameter, the kept generic plan would expect a tenth of
        # the vectors back and hash-join them with a scan of every item.
        return [
            settings,
            Statement(
                f"{pick} ({nearest} {ns_sql} {limit}) c {items}",
                [qvec, *ns_params[: len(ns_params) // 2], qvec],
            ),
        ]
    return [
        settings,
        Statement(
            f"SELECT {ITEM_COLUMNS.format(a='s')}, {dist} AS d {join} WHERE {where} ORDER BY {dist} LIMIT %s",
            [qvec, *ns_params, *f_params, qvec, candidates],
        ),
    ]


def pool_candidates(rows: list[Sequence[Any]]) -> list[Sequence[Any]]:
    """Best (smallest-distance) row per item, best first: one result per item however many vectors."""
    best: dict[tuple[str, str], Sequence[Any]] = {}
    for row in rows:
        k = (row[0], row[1])
        if k not in best or row[6] < best[k][6]:
            best[k] = row
    return sorted(best.values(), key=lambda r: (r[6], r[0], r[1]))


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


def list_statement(t: Tables, op: ListNamespacesOp) -> Statement:
    """``list_namespaces``: registered namespaces matching the conditions that hold a live item."""
    conds = ["TRUE"]
    params: list[Any] = []
    for cond in op.match_conditions or ():
        path = tuple(cond.path)
        conds.append(f"n.depth >= {len(path)}")
        if cond.match_type == "prefix":
            lead = tuple(takewhile(lambda label: label != "*", path))
            sql, p = ns_condition("n.ns", lead)
            conds.append(sql)
            params += p
            for i, label in enumerate(path[len(lead) :], start=len(lead) + 1):
                if label != "*":
                    conds.append(f"n.labels[{i}] = %s")
                    params.append(label)
        else:
            for i, label in enumerate(path):
                if label != "*":
                    conds.append(f"n.labels[n.depth - {len(path) - 1 - i}] = %s")
                    params.append(label)
    cols = "n.labels" if op.max_depth is None else f"n.labels[1:{int(op.max_depth)}]"
    return Statement(
        # One primary-key probe per candidate namespace for its first live item (LATERAL, in key
        # order, LIMIT 1), never a scan of the items table.
        f"SELECT DISTINCT {cols} AS labels FROM {t.namespaces} n "
        f"CROSS JOIN LATERAL (SELECT 1 FROM {t.store} s WHERE s.ns = n.ns AND {LIVE.format(a='s')} "
        f"ORDER BY s.ns, s.key LIMIT 1) live "
        f"WHERE {' AND '.join(conds)} "
        f"ORDER BY labels LIMIT %s OFFSET %s",
        [*params, op.limit, op.offset],
    )
