"""SQL and batch logic of the Postgres stores, written once for sync and async.

A batch runs as a generator (a "plan") that yields requests: ``Embed`` (texts to embed) or
``Round`` (SQL statements sent together in one pipeline). The sync and async stores differ only
in the driver that answers those requests, so both execute exactly the same queries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import takewhile
from typing import Any, NamedTuple

import orjson
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    Result,
    SearchItem,
    SearchOp,
)

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.filters import COMPARISONS, Condition
from langmem_adapters.core.items import make_item, make_search_item
from langmem_adapters.core.ops import Write, plan_batch
from langmem_adapters.core.store import Embed, Plan
from langmem_adapters.core.vectors import (
    IndexSpec,
    SearchStats,
    check_vectors,
    extract_texts,
    search_breadth,
    text_hash,
)

__all__ = ["Round", "Statement", "Tables", "check_ann", "plan", "sweep_statements"]

SCHEMA_VERSION = 1


class Statement(NamedTuple):
    """One SQL statement; ``fetch`` says whether its rows are wanted."""

    sql: str
    params: Sequence[Any] = ()
    fetch: bool = True


class Round(NamedTuple):
    """Statements sent in one round trip (one pipeline, hence one implicit transaction).

    ``tx`` opens an explicit transaction that lasts until the plan ends, for plans whose rounds must
    commit together (setup under its advisory lock, ``put_if_absent`` with its vectors).
    """

    statements: list[Statement]
    tx: bool = False


Request = Embed | Round


@dataclass(frozen=True)
class Tables:
    """Table names of one store; ``prefix`` lets several stores share a database."""

    prefix: str

    def __post_init__(self) -> None:
        if (
            not self.prefix.replace("_", "").isalnum()
            or not self.prefix.isascii()
            or self.prefix[0].isdigit()
        ):
            raise ValueError(f"table_prefix must be an ASCII identifier, got {self.prefix!r}")

    @property
    def store(self) -> str:
        return f"{self.prefix}_store"

    @property
    def namespaces(self) -> str:
        return f"{self.prefix}_namespaces"

    @property
    def migrations(self) -> str:
        return f"{self.prefix}_migrations"

    def vectors(self, spec: IndexSpec) -> str:
        """One vector table per vector type and size, so stores with other embedders can share the DB."""
        return f"{self.prefix}_vectors_{spec.vector_type}{spec.dims}"


# --------------------------------------------------------------------------- schema


def migrations(t: Tables) -> list[list[str]]:
    """Versioned schema steps, one list of statements per version; ``setup()`` applies missing ones."""
    return [
        [
            f"""
            CREATE TABLE IF NOT EXISTS {t.store} (
                ns text COLLATE "C" NOT NULL,
                key text COLLATE "C" NOT NULL,
                value jsonb NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz,
                ttl_minutes double precision,
                PRIMARY KEY (ns, key)
            )
            """,
            f"CREATE INDEX IF NOT EXISTS {t.store}_expires_idx ON {t.store} (expires_at) WHERE expires_at IS NOT NULL",
            f"""
            CREATE TABLE IF NOT EXISTS {t.namespaces} (
                ns text COLLATE "C" PRIMARY KEY,
                labels text[] COLLATE "C" NOT NULL,
                depth int NOT NULL
            )
            """,
        ],
    ]


_OPCLASS = {"cosine": "cosine", "l2": "l2", "inner_product": "ip"}
_OPERATOR = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>"}


def vector_ddl(t: Tables, spec: IndexSpec) -> list[str]:
    """DDL for the vector table of ``spec`` and its ANN index (idempotent)."""
    vt = t.vectors(spec)
    ddl = [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""
        CREATE TABLE IF NOT EXISTS {vt} (
            ns text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            field text NOT NULL,
            text_hash text NOT NULL,
            embedding {spec.vector_type}({spec.dims}) NOT NULL,
            PRIMARY KEY (ns, key, field),
            FOREIGN KEY (ns, key) REFERENCES {t.store} (ns, key) ON DELETE CASCADE
        )
        """,
    ]
    if spec.kind != "exact":
        params = {k: v for k, v in spec.ann.items() if k in ("m", "ef_construction", "lists")}
        if spec.kind == "ivfflat" and "nlist" in spec.ann:
            params["lists"] = spec.ann["nlist"]
        for k, v in params.items():
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"ann_index_config {k} must be a positive integer, got {v!r}")
        with_ = f" WITH ({', '.join(f'{k} = {v}' for k, v in params.items())})" if params else ""
        ddl.append(
            f"CREATE INDEX IF NOT EXISTS {vt}_{_OPCLASS[spec.distance]}_{spec.kind}_idx ON {vt} "
            f"USING {spec.kind} (embedding {spec.vector_type}_{_OPCLASS[spec.distance]}_ops){with_}"
        )
    return ddl


def setup_plan(t: Tables, spec: IndexSpec | None) -> Plan:
    """Create or upgrade the schema under an advisory lock, so concurrent ``setup()`` calls are safe."""
    yield Round(
        [
            Statement("SELECT pg_advisory_xact_lock(hashtext(%s))", [t.prefix]),
            Statement(
                f"CREATE TABLE IF NOT EXISTS {t.migrations} (v int PRIMARY KEY)", fetch=False
            ),
        ],
        tx=True,
    )
    (rows,) = yield Round([Statement(f"SELECT coalesce(max(v), -1) FROM {t.migrations}")])
    done = rows[0][0]
    steps = [
        Statement(sql, fetch=False)
        for v, step in enumerate(migrations(t))
        if v > done
        for sql in step
    ] + [
        Statement(f"INSERT INTO {t.migrations} (v) VALUES (%s)", [v], fetch=False)
        for v in range(done + 1, SCHEMA_VERSION)
    ]
    if spec is not None:
        steps += [Statement(sql, fetch=False) for sql in vector_ddl(t, spec)]
    if steps:
        yield Round(steps)


# --------------------------------------------------------------------------- SQL pieces

LIVE = "({a}.expires_at IS NULL OR {a}.expires_at > now())"
ITEM_COLUMNS = "{a}.ns, {a}.key, {a}.value, {a}.created_at, {a}.updated_at, {a}.ttl_minutes"


def _ns_condition(
    column: str, prefix: Sequence[str], *, estimable: bool = False
) -> tuple[str, list[Any]]:
    """Exact-or-below match on whole labels, as index ranges (no LIKE, nothing to escape).

    By default one range ``[p, p + "/")``, which holds ``p``, ``p.``-prefixed names and names that
    continue ``p`` with a character sorting before ``"/"``, plus a check of the character after ``p``
    that keeps the first two: a prepared statement then settles on a generic plan instead of being
    planned again on every call. ``estimable`` gives ``p`` or ``[p., p/)`` instead, whose row
    estimate the planner can trust (the vector query chooses between the ANN index and the ranges).
    """
    if not prefix:
        return "TRUE", []
    base = nsp.join(prefix)
    lo, hi = nsp.prefix_range(prefix)
    if estimable:
        return f"({column} = %s OR ({column} >= %s AND {column} < %s))", [base, lo, hi]
    return (
        f"({column} >= %s AND {column} < %s AND "
        f"(length({column}) = %s OR substr({column}, %s + 1, 1) = %s))",
        [base, hi, len(base), len(base), lo[-1]],
    )


def _filter_sql(conditions: Iterable[Condition], column: str) -> tuple[str, list[Any]]:
    """Typed filter conditions as SQL (see ``langmem_adapters.core.filters`` for the semantics)."""
    parts: list[str] = []
    params: list[Any] = []
    for c in conditions:
        # A value is always an object, so a one-key path is its field: "->" finds it faster than
        # "#>" (measured ~10% off a filtered search).
        x = f"({column} -> %s::text)" if len(c.path) == 1 else f"({column} #> %s::text[])"
        path: str | list[str] = c.path[0] if len(c.path) == 1 else list(c.path)
        if c.op == "$eq":
            parts.append(f"{x} = %s::jsonb")
            params += [path, json.dumps(c.value)]
        elif c.op == "$ne":
            parts.append(f"{x} IS DISTINCT FROM %s::jsonb")
            params += [path, json.dumps(c.value)]
        elif c.op == "$in":
            parts.append(f"{x} IN (SELECT jsonb_array_elements(%s::jsonb))")
            params += [path, json.dumps(list(c.value))]
        elif c.op == "$nin":
            parts.append(f"({x} IS NULL OR {x} NOT IN (SELECT jsonb_array_elements(%s::jsonb)))")
            params += [path, path, json.dumps(list(c.value))]
        elif c.op == "$exists":
            parts.append(f"{x} IS {'NOT ' if c.value else ''}NULL")
            params.append(path)
        else:
            assert c.op in COMPARISONS
            sql_op = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[c.op]
            if isinstance(c.value, str):
                parts.append(
                    f"(jsonb_typeof({x}) = 'string' AND ({x} #>> '{{}}') COLLATE \"C\" {sql_op} %s)"
                )
                params += [path, path, c.value]
            else:
                parts.append(f"(jsonb_typeof({x}) = 'number' AND {x} {sql_op} %s::jsonb)")
                params += [path, path, json.dumps(c.value)]
    return (" AND ".join(parts) or "TRUE"), params


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?[eE]\+\d+')


def _keep_floats(value_json: str) -> str:
    """Write large whole floats (``1e+16``) as ``10000000000000000.0``: jsonb would otherwise expand
    them to integer digits and they would come back as ``int``."""
    if "e+" not in value_json and "E+" not in value_json:
        return value_json

    def fix(m: re.Match[str]) -> str:
        token = m.group(0)
        return token if token.startswith('"') else f"{int(float(token))}.0"

    return _JSON_TOKEN.sub(fix, value_json)


def _rows(
    columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]
) -> tuple[str, list[Any]]:
    """A row source ``r(col, ...)``: scalar parameters for one row (so the statement gets a stable,
    cached plan), or for many one JSON array of rows that the server unpacks (one statement for any
    batch size, and far cheaper to send than a parameter per cell or array parameters).

    Column types are ``text``, ``float8`` or ``jsonb``; a ``jsonb`` cell is given as JSON text."""
    if len(rows) == 1:
        return _row_source(tuple(columns)), list(rows[0])
    for i, (_, type_) in enumerate(columns):
        if type_ == "jsonb":  # JSON text already: embedded as it is
            rows = [(*row[:i], orjson.Fragment(row[i]), *row[i + 1 :]) for row in rows]
    carrier = orjson.dumps(rows).decode()
    names = ", ".join(name for name, _ in columns)
    picks = ", ".join(
        f"j.r->{i}"
        if type_ == "jsonb"
        else f"j.r->>{i}"
        if type_ == "text"
        else f"(j.r->>{i})::{type_}"
        for i, (_, type_) in enumerate(columns)
    )
    return (
        f"(SELECT {picks} FROM jsonb_array_elements(%s::jsonb) AS j(r)) AS r({names})",
        [carrier],
    )


@lru_cache(maxsize=32)
def _row_source(columns: tuple[tuple[str, str], ...]) -> str:
    """The one-row source of ``_rows``: a parameter per cell."""
    cells = ", ".join(f"%s::{type_}" for _, type_ in columns)
    return f"(SELECT {cells}) AS r({', '.join(name for name, _ in columns)})"


KEY = (("ns", "text"), ("key", "text"))


def _vec_literal(v: Sequence[float]) -> str:
    """pgvector's text form ``[x,y,...]`` (checked, finite floats: orjson writes exactly that)."""
    return orjson.dumps(v).decode()


def _item(row: Sequence[Any]) -> Item:
    return make_item(nsp.split(row[0]), row[1], row[2], row[3], row[4])


def _search_item(row: Sequence[Any], score: float | None) -> SearchItem:
    return make_search_item(nsp.split(row[0]), row[1], row[2], row[3], row[4], score)


# --------------------------------------------------------------------------- reads


@lru_cache(maxsize=64)
def _get_sql(t: Tables, source: str) -> str:
    """The get query for a row source (one of two shapes), built once per store."""
    return (
        f"SELECT {ITEM_COLUMNS.format(a='s')} FROM {t.store} s "
        f"JOIN {source} ON s.ns = r.ns AND s.key = r.key WHERE {LIVE.format(a='s')}"
    )


def _get_statement(t: Tables, gets: list[tuple[int, GetOp]]) -> Statement:
    source, params = _rows(KEY, [(nsp.join(op.namespace), op.key) for _, op in gets])
    return Statement(_get_sql(t, source), params)


def _plain_search(t: Tables, op: SearchOp, conditions: tuple[Condition, ...]) -> Statement:
    ns_sql, ns_params = _ns_condition("s.ns", op.namespace_prefix)
    f_sql, f_params = _filter_sql(conditions, "s.value")
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


def check_ann(spec: IndexSpec | None) -> None:
    """Reject ``ann_index_config`` numbers that are not integers of the right sign, before any I/O."""
    for name in ("m", "ef_construction", "ef_search", "lists", "nlist", "probes", "exact_below"):
        v = spec.ann.get(name) if spec is not None else None
        if v is None:
            continue
        low = 0 if name == "exact_below" else 1
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise ValueError(f"ann_index_config {name} must be an integer >= {low}, got {v!r}")


def _sizes(
    t: Tables,
    spec: IndexSpec,
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]],
    stats: SearchStats,
) -> Generator[Request, Any, tuple[int, set[str], set[str]]]:
    """HNSW search breadth for the table's size; the namespace prefixes of this batch's vector
    searches that hold at most ``exact_below`` vectors (narrow), and those that hold at least half
    of the table (broad); counts capped at the schedule's last step, each re-read once a minute."""
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
        cond, params = _ns_condition("v.ns", prefixes[p], estimable=True)
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
    ef = int(spec.ann.get("ef_search", 0)) or search_breadth(total, EF_SEARCH)
    sizes = {p: stats.prefix(p).count or 0 for p in prefixes}
    narrow = {p for p, n in sizes.items() if n <= exact_below}
    # A count at the cap says only "large": broad only when the whole table was counted too.
    broad = {p for p, n in sizes.items() if 2 * n >= total and (n < cap or not p)}
    return ef, narrow, broad


def _vector_search(
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
    dist = f"(v.embedding {_OPERATOR[spec.distance]} %s::{spec.vector_type})"
    ns_sql, ns_params = _ns_condition("v.ns", op.namespace_prefix, estimable=True)
    s_ns_sql, s_ns_params = _ns_condition("s.ns", op.namespace_prefix, estimable=True)
    f_sql, f_params = _filter_sql(conditions, "s.value")
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
        range_sql, range_params = _ns_condition("v.ns", op.namespace_prefix)
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


def _pool(rows: list[Sequence[Any]]) -> list[Sequence[Any]]:
    """Best (smallest-distance) row per item, best first: one result per item however many vectors."""
    best: dict[tuple[str, str], Sequence[Any]] = {}
    for row in rows:
        k = (row[0], row[1])
        if k not in best or row[6] < best[k][6]:
            best[k] = row
    return sorted(best.values(), key=lambda r: (r[6], r[0], r[1]))


def _list_statement(t: Tables, op: ListNamespacesOp) -> Statement:
    conds = ["TRUE"]
    params: list[Any] = []
    for cond in op.match_conditions or ():
        path = tuple(cond.path)
        conds.append(f"n.depth >= {len(path)}")
        if cond.match_type == "prefix":
            lead = tuple(takewhile(lambda label: label != "*", path))
            sql, p = _ns_condition("n.ns", lead)
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


# --------------------------------------------------------------------------- writes


def _write_statements(
    t: Tables,
    spec: IndexSpec | None,
    writes: list[Write],
    vectors: dict[tuple[str, str], list[tuple[str, str, str]]],
    if_absent: bool = False,
) -> tuple[list[Statement], list[Statement]]:
    """Item statements (deletes, namespace registration, upserts) and the vector replacement after them."""
    statements: list[Statement] = []
    # One lock order for every statement (the stored text order): concurrent batches cannot deadlock.
    writes = sorted(writes, key=lambda w: (nsp.join(w.namespace), w.key))
    deletes = [w for w in writes if w.value_json is None]
    puts = [w for w in writes if w.value_json is not None]
    if deletes:
        source, params = _rows(KEY, [(nsp.join(w.namespace), w.key) for w in deletes])
        statements.append(
            Statement(
                f"DELETE FROM {t.store} s USING {source} WHERE s.ns = r.ns AND s.key = r.key",
                params,
                fetch=False,
            )
        )
    if not puts:
        return statements, []
    put_keys = [(nsp.join(w.namespace), w.key) for w in puts]
    expired = "s.expires_at IS NOT NULL AND s.expires_at <= now()"
    conflict = (
        f"DO UPDATE SET value = excluded.value, created_at = excluded.created_at, updated_at = excluded.updated_at, "
        f"expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes WHERE {expired} RETURNING s.ns, s.key"
        if if_absent
        else f"DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
        f"created_at = CASE WHEN {expired} THEN excluded.created_at ELSE s.created_at END, "
        f"expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes"
    )
    values = [(*k, _keep_floats(w.value_json or ""), w.ttl) for k, w in zip(put_keys, puts)]
    upsert = (
        f"INSERT INTO {t.store} AS s (ns, key, value, created_at, updated_at, expires_at, ttl_minutes) "
        f"{{rows}} ON CONFLICT (ns, key) {conflict}"
    )
    register = (
        f"INSERT INTO {t.namespaces} (ns, labels, depth) {{names}} ON CONFLICT (ns) DO NOTHING"
    )
    if len(values) == 1:  # the common single put: plain VALUES, the cheapest statement to plan
        ns, key, value_json, ttl = values[0]
        names = "VALUES (%(ns)s, string_to_array(%(ns)s, '.'), cardinality(string_to_array(%(ns)s, '.')))"
        rows_sql = (
            "VALUES (%(ns)s, %(key)s, %(value)s::jsonb, now(), now(), "
            "now() + %(ttl)s::float8 * interval '1 minute', %(ttl)s::float8)"
        )
        sql = f"WITH new_ns AS ({register.format(names=names)}) {upsert.format(rows=rows_sql)}"
        put_params: Any = {"ns": ns, "key": key, "value": value_json, "ttl": ttl}
    else:
        source, put_params = _rows((*KEY, ("value", "jsonb"), ("ttl", "float8")), values)
        # Only namespaces not yet registered reach the insert (most batches write to known ones).
        names = (
            "SELECT ns, string_to_array(ns, '.'), cardinality(string_to_array(ns, '.')) "
            f"FROM (SELECT DISTINCT ns FROM rows) d WHERE NOT EXISTS "
            f"(SELECT 1 FROM {t.namespaces} n WHERE n.ns = d.ns) ORDER BY ns"
        )
        rows_sql = (
            "SELECT ns, key, value, now(), now(), now() + ttl * interval '1 minute', ttl FROM rows"
        )
        sql = (
            f"WITH rows AS (SELECT * FROM {source}), new_ns AS ({register.format(names=names)}) "
            f"{upsert.format(rows=rows_sql)}"
        )
    statements.append(Statement(sql, put_params, fetch=if_absent))
    if spec is None:
        return statements, []
    vt = t.vectors(spec)
    vector_statements: list[Statement] = []
    keep = [(ns, key, field) for (ns, key), rows in vectors.items() for field, _, _ in rows]
    source, params = _rows(KEY, put_keys)
    stale = f"DELETE FROM {vt} v USING {source} WHERE v.ns = r.ns AND v.key = r.key"
    if keep:
        kept, kept_params = _rows((*KEY, ("field", "text")), keep)
        stale += f" AND (v.ns, v.key, v.field) NOT IN (SELECT r.ns, r.key, r.field FROM {kept})"
        params += kept_params
    vector_statements.append(Statement(stale, params, fetch=False))
    rows = [
        (ns, key, field, h, vec) for (ns, key), items in vectors.items() for field, h, vec in items
    ]
    if rows:
        source, params = _rows((*KEY, ("field", "text"), ("h", "text"), ("e", "text")), rows)
        vector_statements.append(
            Statement(
                f"INSERT INTO {vt} AS v (ns, key, field, text_hash, embedding) "
                f"SELECT r.ns, r.key, r.field, r.h, r.e::{spec.vector_type} FROM {source} "
                f"ON CONFLICT (ns, key, field) DO UPDATE "
                f"SET text_hash = excluded.text_hash, embedding = excluded.embedding "
                f"WHERE v.text_hash <> excluded.text_hash",
                params,
                fetch=False,
            )
        )
    return statements, vector_statements


def _embed_writes(
    t: Tables, spec: IndexSpec, writes: list[Write]
) -> Generator[Request, Any, dict[tuple[str, str], list[tuple[str, str, str]]]]:
    """Vectors for each put, reusing stored embeddings of unchanged text; only new text is embedded."""
    wanted: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for w in writes:
        if w.value is None:
            continue
        fields = spec.fields if w.index is None else (w.index or ())
        wanted[(nsp.join(w.namespace), w.key)] = [
            (field, text_hash(text), text) for field, text in extract_texts(w.value, fields)
        ]
    if not any(wanted.values()):
        return {k: [] for k in wanted}
    keys = [k for k, v in wanted.items() if v]
    source, params = _rows(KEY, keys)
    (stored,) = yield Round(
        [
            Statement(
                f"SELECT v.ns, v.key, v.text_hash, v.embedding::text FROM {t.vectors(spec)} v "
                f"JOIN {source} ON v.ns = r.ns AND v.key = r.key",
                params,
            )
        ],
    )
    known = {(ns, key, h): emb for ns, key, h, emb in stored}
    missing = sorted({text for k in keys for _, h, text in wanted[k] if (*k, h) not in known})
    fresh: dict[str, str] = {}
    if missing:
        embedded = yield Embed(missing)
        fresh = {
            text: _vec_literal(v)
            for text, v in zip(missing, check_vectors(embedded, len(missing), spec.dims))
        }
    return {
        k: [(field, h, known.get((*k, h)) or fresh[text]) for field, h, text in rows]
        for k, rows in wanted.items()
    }


# --------------------------------------------------------------------------- the batch plan


def plan(
    t: Tables,
    spec: IndexSpec | None,
    ops: Iterable[Op],
    *,
    if_absent: bool = False,
    stats: SearchStats | None = None,
) -> Plan:
    """Run a batch: validate everything, embed, then reads (pre-batch state) and writes in one transaction."""
    op_list, batch = plan_batch(ops)
    results: list[Result] = [None] * len(op_list)
    refresh: dict[tuple[str, str], None] = {}
    if not (batch.searches or batch.lists or batch.writes):
        # Only gets (the commonest batch): one statement, and none of the work below.
        if batch.gets:
            (rows,) = yield Round([_get_statement(t, batch.gets)])
            _get_results(batch.gets, rows, results, refresh)
        if refresh:
            yield Round([_refresh_statement(t, list(refresh))])
        return results
    qvecs: dict[str, str] = {}
    if spec is not None:
        queries = sorted({op.query for _, op, _ in batch.searches if op.query})
        if queries:
            embedded = yield Embed(queries, query=True)
            qvecs = dict(
                zip(queries, map(_vec_literal, check_vectors(embedded, len(queries), spec.dims)))
            )
    vectors = (yield from _embed_writes(t, spec, batch.writes)) if spec is not None else {}
    ef, narrow, broad = 100, set[str](), set[str]()
    if qvecs and spec is not None and spec.kind != "exact":
        ef, narrow, broad = yield from _sizes(t, spec, batch.searches, stats or SearchStats())

    statements: list[Statement] = []
    if batch.gets:
        statements.append(_get_statement(t, batch.gets))
    searches: list[tuple[int, SearchOp, tuple[Condition, ...], int, int | None]] = []
    for i, op, conds in batch.searches:
        qvec = qvecs.get(op.query or "")
        if qvec is None or spec is None:
            searches.append((i, op, conds, len(statements), None))
            statements.append(_plain_search(t, op, conds))
        else:
            prefix = nsp.join(op.namespace_prefix)
            scan = spec.kind == "exact" or prefix in narrow
            n = None if scan and conds else max(20, 2 * (op.offset + op.limit) * len(spec.fields))
            n = None if spec.kind == "exact" else n
            stmts = _vector_search(
                ef, t, spec, op, conds, qvec, n, exact=scan, broad=prefix in broad
            )
            statements += stmts
            searches.append((i, op, conds, len(statements) - 1, n))
    lists = []
    for i, list_op in batch.lists:
        lists.append((i, len(statements)))
        statements.append(_list_statement(t, list_op))
    n_reads = len(statements)
    item_writes, vector_writes = (
        _write_statements(t, spec, batch.writes, vectors, if_absent) if batch.writes else ([], [])
    )
    writes = item_writes if if_absent else item_writes + vector_writes
    # An exact fallback query runs in a later round; when the batch also writes, send the reads
    # first so that every read of the batch sees the state before its writes.
    reads_first = bool(writes) and any(n is not None for *_, n in searches)
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
    for i, op, conds, pos, n in searches:
        got = rows[pos]
        if op.query and spec is not None and qvecs.get(op.query):
            if n is not None:
                pooled = _pool(got)
                if len(pooled) < op.offset + op.limit:
                    # The ANN window (or the iterative scan's budget) ran short for this filter or
                    # page: answer exactly, so a page is never short while more matches exist.
                    (got,) = yield Round(
                        _vector_search(ef, t, spec, op, conds, qvecs[op.query], None)
                    )
                else:
                    got = pooled[op.offset : op.offset + op.limit]
            results[i] = [_search_item(r, spec.score(float(r[6]))) for r in got]
        else:
            results[i] = [_search_item(r, None) for r in got]
        if op.refresh_ttl:
            refresh.update(((r[0], r[1]), None) for r in got if r[5] is not None)
    for i, pos in lists:
        results[i] = [tuple(r[0]) for r in rows[pos]]
    if reads_first:
        yield Round(writes)
    if refresh:
        yield Round([_refresh_statement(t, list(refresh))])
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
        results[i] = _item(row)


def _refresh_statement(t: Tables, keys: list[tuple[str, str]]) -> Statement:
    """Extend each read item's expiry by its own TTL.

    Best effort and never blocking: rows are locked in key order and rows another transaction holds
    are skipped (that writer sets a fresh expiry itself), so concurrent refreshes cannot deadlock.
    """
    source, params = _rows(KEY, keys)
    return Statement(
        f"WITH due AS (SELECT s.ns, s.key FROM {t.store} s JOIN {source} ON s.ns = r.ns AND s.key = r.key "
        f"WHERE s.ttl_minutes IS NOT NULL AND {LIVE.format(a='s')} "
        f"ORDER BY s.ns, s.key FOR UPDATE OF s SKIP LOCKED) "
        f"UPDATE {t.store} s SET expires_at = now() + s.ttl_minutes * interval '1 minute' "
        f"FROM due WHERE s.ns = due.ns AND s.key = due.key",
        params,
        fetch=False,
    )


def sweep_statements(t: Tables) -> tuple[Statement, list[Statement]]:
    """Delete expired items; then, under a short table lock that waits out in-flight writers, drop
    namespace rows that no longer hold any item."""
    return (
        Statement(
            f"DELETE FROM {t.store} WHERE expires_at IS NOT NULL AND expires_at <= now() RETURNING 1"
        ),
        [
            Statement(f"LOCK TABLE {t.namespaces} IN SHARE ROW EXCLUSIVE MODE", fetch=False),
            Statement(
                f"DELETE FROM {t.namespaces} n WHERE NOT EXISTS (SELECT 1 FROM {t.store} s WHERE s.ns = n.ns)",
                fetch=False,
            ),
        ],
    )
