"""Vector search on three kinds of data: recall@10 and speed of ours against the official stores.

For each data set of :mod:`benchmarks.datasets` (``hash``: the other benchmarks' templated text under
``HashEmbeddings``; ``text``: real English sentences under WordLlama; ``random``: standard-normal
vectors) and each N, both stores of a backend (Postgres: ours vs ``langgraph.store.postgres.
PostgresStore``; Redis: ours vs ``langgraph.store.redis.RedisStore``) are loaded with exactly the same
vectors (:class:`benchmarks.datasets.PrecomputedEmbeddings`), items spread over 50 namespaces
``("bench", "user<u>")``, and searched globally (prefix ``("bench",)``) and in one namespace. Recall@10
is measured against numpy's exact cosine top-10, speed as searches per second, the stores taking
turns in 0.1 s slices (:meth:`benchmarks.bench_postgres.Runner.rates`).

Ours runs with no knob: the queries run once as a warm-up, then the benchmark waits (up to 60 s, 5 s
with ``--quick``) for the store's own background recall calibration and prints its ``vector_stats()``.
The official stores run at their defaults, and the official Postgres store also "at equal recall": a
second connection whose session raises ``hnsw.ef_search`` (the steps of :data:`EF_LADDER`) until its
recall comes within 0.01 of ours, else scans exactly (``enable_indexscan = off``). The official Redis
store takes no ``EF_RUNTIME`` (its index is FLAT): it is reported as is, with a ratio at equal recall
only where its recall reaches ours. Loads: ours in ``bulk_load()``; the official Postgres store with
its HNSW index dropped during the load and re-created from its own definition after (one build
instead of one graph insert per row; the same index it would have).

Examples::

    python benchmarks/bench_vectors.py --quick
    python benchmarks/bench_vectors.py --n 10000,100000 --json vectors.json
    python benchmarks/bench_vectors.py --backends postgres --datasets text --n 100000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import psycopg
import redis
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.postgres import PostgresStore as OfficialPostgres
from langgraph.store.redis import RedisStore as OfficialRedis

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import bench_postgres as bench
from benchmarks import bench_redis
from benchmarks.datasets import KINDS, PrecomputedEmbeddings, VectorSet, load_set
from langmem_adapters.postgres import PostgresStore as OursPostgres
from langmem_adapters.redis import RedisStore as OursRedis

NAMESPACES = 50
LOAD_BATCH = 500
SCHEMA = "langmem_bench_vectors"
#: The official Postgres store's ``hnsw.ef_search`` ladder before falling back to an exact scan.
EF_LADDER = (40, 80, 160, 320, 640, 1000)
#: How close (recall@10) the official store must come to ours to count as "equal recall".
EQUAL = 0.01
SCOPES = ("global", "ns")
#: Targets of issue #16, ours / official at equal recall, on the real-text data.
TARGETS = {("postgres", "ns"): 2.0, ("redis", "ns"): 2.0, ("postgres", "global"): 1.5}
TARGETS[("redis", "global")] = 1.0
RECALL_TARGET = 0.95

Stores = dict[str, BaseStore]


@dataclass
class Row:
    """One (backend, data set, N, scope) measurement."""

    backend: str
    dataset: str
    n: int
    scope: str
    recall: dict[str, float] = field(default_factory=dict)
    qps: dict[str, float] = field(default_factory=dict)
    official_setting: str = "default"
    ratio_default: float = 0.0
    ratio_equal: float | None = None
    stats: str | None = None


# --------------------------------------------------------------------------- what is searched


def prefix_of(scope: str, query: int) -> tuple[str, ...]:
    """The searched prefix: everything, or namespace ``query % NAMESPACES``."""
    return ("bench",) if scope == "global" else ("bench", f"user{query % NAMESPACES}")


def candidates(scope: str, query: int, n: int) -> np.ndarray:
    """The rows a search of ``scope`` may return (item ``i`` lives in namespace ``i % NAMESPACES``)."""
    return np.arange(n) if scope == "global" else np.arange(query % NAMESPACES, n, NAMESPACES)


def puts(data: VectorSet) -> Iterator[list[PutOp]]:
    """The set's items as batches of puts; an item's text is its vector id ``m<i>``."""
    n = len(data.vectors)
    for start in range(0, n, LOAD_BATCH):
        yield [
            PutOp(("bench", f"user{i % NAMESPACES}"), f"m{i}", {"text": f"m{i}"})
            for i in range(start, min(n, start + LOAD_BATCH))
        ]


def bulk_put(ours: BaseStore, data: VectorSet) -> None:
    """Put the set's items into our store inside its ``bulk_load()``."""
    assert isinstance(ours, OursPostgres | OursRedis)
    with ours.bulk_load():
        for batch in puts(data):
            ours.batch(batch)


def mean_recall(store: BaseStore, data: VectorSet, scope: str) -> float:
    """Mean tie-aware recall@10 of the store's searches for every query of the set."""
    n, got = len(data.vectors), []
    for q in range(len(data.queries)):
        res = store.search(prefix_of(scope, q), query=f"q{q}", limit=bench.K)
        got.append(bench.recall([r.key for r in res], data.scores(q), candidates(scope, q, n)))
    return float(np.mean(got))


def searcher(store: BaseStore, scope: str, queries: int) -> Callable[[int], object]:
    """The timed operation: search ``i`` of ``scope``, cycling through the queries."""
    return lambda i: store.search(
        prefix_of(scope, i % queries), query=f"q{i % queries}", limit=bench.K
    )


def index_config(data: VectorSet) -> Any:
    """The same index for both stores: the ``text`` field, embedded by lookup (``Any``: each store
    types it with its own ``TypedDict``)."""
    return {"dims": data.dims, "embed": PrecomputedEmbeddings(data), "fields": ["text"]}


def wait_calibrated(store: BaseStore, timeout: float = 60.0) -> str | None:
    """Wait until the store's background calibration has measured (its ``vector_stats()`` source
    leaves ``"cold"``), at most ``timeout`` s; the stats as text (``None``: no such method)."""
    stats_of = getattr(store, "vector_stats", None)
    if stats_of is None:
        return None
    deadline = time.monotonic() + timeout
    stats = stats_of()
    while getattr(stats, "source", None) == "cold" and time.monotonic() < deadline:
        time.sleep(0.5)
        stats = stats_of()
    return repr(stats)


# --------------------------------------------------------------------------- backends


class Postgres:
    """Both Postgres stores on a fresh schema of one server (``bench_postgres``'s server hooks)."""

    name = "postgres"

    def __init__(self, dsn: str | None) -> None:
        self.base = bench.resolve_dsn(dsn)
        self.dsn = bench.schema_dsn(self.base, SCHEMA)

    @contextmanager
    def open(self, data: VectorSet) -> Iterator[Stores]:
        """Ours, the official store, and a second official store whose session gets the
        equal-recall settings."""
        bench.reset_schema(self.base, SCHEMA)
        with ExitStack() as stack:
            ours = stack.enter_context(
                OursPostgres.from_conn_string(self.dsn, index=index_config(data))
            )
            ours.setup()
            official = stack.enter_context(
                OfficialPostgres.from_conn_string(self.dsn, index=index_config(data))
            )
            official.setup()
            equal = stack.enter_context(
                OfficialPostgres.from_conn_string(self.dsn, index=index_config(data))
            )
            yield {"ours": ours, "official": official, "official_eq": equal}

    def load(self, stores: Stores, data: VectorSet) -> None:
        """Ours in a bulk load; the official store without its HNSW index, re-created after."""
        bulk_put(stores["ours"], data)
        load_official_postgres(self.dsn, SCHEMA, stores["official"], puts(data))

    def equal_settings(self, store: BaseStore) -> Iterator[str]:
        """Set the official session's ``hnsw.ef_search`` up the ladder, then an exact scan."""
        return official_equal_settings(store)


def load_official_postgres(
    dsn: str, schema: str, store: BaseStore, batches: Iterable[list[PutOp]]
) -> None:
    """Load the official Postgres store (tables in ``schema``) without its HNSW index, re-created
    after from its own definition: one build instead of one graph insert per row."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        ddl = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s"
            " AND tablename = 'store_vectors' AND indexdef ILIKE '%%USING hnsw%%'",
            [schema],
        ).fetchall()
        for name, _ in ddl:
            conn.execute(f'DROP INDEX "{schema}"."{name}"')
        for batch in batches:
            store.batch(batch)
        conn.execute("SET maintenance_work_mem = '512MB'")
        for _, definition in ddl:
            conn.execute(definition)
    bench.analyze(dsn)


def official_equal_settings(store: BaseStore) -> Iterator[str]:
    """Set the official Postgres store's session ``hnsw.ef_search`` up :data:`EF_LADDER`, then an
    exact scan; each step named as it is set."""
    assert isinstance(store, OfficialPostgres) and isinstance(store.conn, psycopg.Connection)
    conn = store.conn
    conn.execute("RESET enable_indexscan")
    for ef in EF_LADDER:
        conn.execute(f"SET hnsw.ef_search = {ef}")
        yield f"ef_search={ef}"
    conn.execute("SET enable_indexscan = off")
    yield "exact scan"


class Redis:
    """Both Redis stores on fresh key prefixes of one server (``bench_redis``'s server hooks)."""

    name = "redis"

    def __init__(self, url: str | None) -> None:
        self.url = bench_redis.resolve_url(url)

    @contextmanager
    def open(self, data: VectorSet) -> Iterator[Stores]:
        """Ours and the official store; their keys and indexes are dropped on exit."""
        tag = uuid.uuid4().hex[:8]
        prefixes = (f"ours{tag}", f"off{tag}", f"offv{tag}")
        try:
            with ExitStack() as stack:
                ours = stack.enter_context(
                    OursRedis.from_conn_string(
                        self.url, index=index_config(data), prefix=prefixes[0]
                    )
                )
                ours.setup()
                official = stack.enter_context(
                    OfficialRedis.from_conn_string(
                        self.url,
                        index=index_config(data),
                        store_prefix=prefixes[1],
                        vector_prefix=prefixes[2],
                    )
                )
                official.setup()
                yield {"ours": ours, "official": official}
        finally:
            drop_prefixes(self.url, prefixes)

    def load(self, stores: Stores, data: VectorSet) -> None:
        """Both stores in batches (ours inside ``bulk_load()``, which RediSearch does not need)."""
        bulk_put(stores["ours"], data)
        for batch in puts(data):  # both indexes were created on empty prefixes: no scan to wait for
            stores["official"].batch(batch)

    def equal_settings(self, store: BaseStore) -> Iterator[str]:
        """None: the official Redis store's search takes no ``EF_RUNTIME`` (its index is FLAT)."""
        return iter(())


def drop_prefixes(url: str, prefixes: Sequence[str]) -> None:
    """Drop the search indexes over keys of ``prefixes`` and every such key (frees the server)."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        for name in client.execute_command("FT._LIST"):
            info = client.execute_command("FT.INFO", name)
            fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
            text = str(fields.get("index_definition", ""))
            if any(p in text for p in prefixes):
                client.execute_command("FT.DROPINDEX", name)
        for prefix in prefixes:
            keys = list(client.scan_iter(match=f"{prefix}*", count=5000))
            for start in range(0, len(keys), 5000):
                client.unlink(*keys[start : start + 5000])
    finally:
        client.close()


Backend = Postgres | Redis


# --------------------------------------------------------------------------- measurement


def measure(runner: bench.Runner, backend: Backend, data: VectorSet, wait: float) -> list[Row]:
    """Load one data set into both stores of ``backend``; a row per scope (``wait``: at most this
    many seconds for ours' calibration)."""
    n, queries = len(data.vectors), len(data.queries)
    rows = []
    with backend.open(data) as stores:
        t0 = time.perf_counter()
        backend.load(stores, data)
        print(
            f"  loaded {n:,} items into both stores in {time.perf_counter() - t0:.0f} s", flush=True
        )
        for scope in SCOPES:  # warm-up: every query once, then the store's calibration
            for q in range(queries):
                stores["ours"].search(prefix_of(scope, q), query=f"q{q}", limit=bench.K)
        stats = wait_calibrated(stores["ours"], wait)
        if stats:
            print(f"  ours vector_stats(): {stats}", flush=True)
        for scope in SCOPES:
            row = Row(backend.name, data.name, n, scope, stats=stats)
            row.recall = {
                name: mean_recall(stores[name], data, scope) for name in ("ours", "official")
            }
            timed = {name: searcher(stores[name], scope, queries) for name in ("ours", "official")}
            if "official_eq" in stores:
                for setting in backend.equal_settings(stores["official_eq"]):
                    row.official_setting = setting
                    row.recall["official_eq"] = mean_recall(stores["official_eq"], data, scope)
                    if row.recall["official_eq"] >= row.recall["ours"] - EQUAL:
                        break
                timed["official_eq"] = searcher(stores["official_eq"], scope, queries)
            row.qps = runner.rates(f"{data.name} {n} {scope}", timed)
            row.ratio_default = row.qps["ours"] / row.qps["official"]
            eq = "official_eq" if "official_eq" in row.qps else "official"
            if row.recall[eq] >= row.recall["ours"] - EQUAL:
                row.ratio_equal = row.qps["ours"] / row.qps[eq]
            rows.append(row)
            print("  " + line(row), flush=True)
    return rows


# --------------------------------------------------------------------------- reporting


def target_of(row: Row) -> float | None:
    """The issue's speed target for the row (real-text data only)."""
    return TARGETS.get((row.backend, row.scope)) if row.dataset == "text" else None


def line(row: Row) -> str:
    """One row as text: recalls, searches/s and ratios."""
    rec = row.recall
    eq = (
        f", official at {row.official_setting} {rec['official_eq']:.3f}"
        if "official_eq" in rec
        else ""
    )
    ratio = f"{row.ratio_equal:.2f}x" if row.ratio_equal is not None else "n/a"
    return (
        f"{row.backend} {row.dataset} n={row.n:,} {row.scope}: recall ours {rec['ours']:.3f},"
        f" official {rec['official']:.3f}{eq}; q/s "
        + ", ".join(f"{k} {v:,.0f}" for k, v in row.qps.items())
        + f"; ours/official {row.ratio_default:.2f}x, at equal recall {ratio}"
    )


def render(rows: Sequence[Row], dataset: str) -> str:
    """The Markdown table of one data set."""
    head = (
        "| backend | N | scope | recall@10 ours | official | official at equal recall |"
        " ours q/s | official q/s | equal-recall q/s | ours/official | at equal recall | target |"
    )
    out = [head, "|" + "---|" * 3 + "---:|" * 9]
    for r in (r for r in rows if r.dataset == dataset):
        t = target_of(r)
        ok = "" if t is None or r.ratio_equal is None else (" ✓" if r.ratio_equal >= t else " ✗")
        eq_rec = r.recall.get("official_eq")
        cells = [
            r.backend,
            f"{r.n:,}",
            r.scope,
            f"{r.recall['ours']:.3f}" + (" ✗" if r.recall["ours"] < RECALL_TARGET else ""),
            f"{r.recall['official']:.3f}",
            f"{eq_rec:.3f} ({r.official_setting})" if eq_rec is not None else "(no setting)",
            f"{r.qps['ours']:,.0f}",
            f"{r.qps['official']:,.0f}",
            f"{r.qps['official_eq']:,.0f}" if "official_eq" in r.qps else "",
            f"{r.ratio_default:.2f}x",
            f"{r.ratio_equal:.2f}x{ok}" if r.ratio_equal is not None else "n/a",
            f">= {t}x" if t else "",
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


# --------------------------------------------------------------------------- main


def write_json(path: str, rows: Sequence[Row], runner: bench.Runner, seconds: float) -> None:
    """The rows, errors and run time as JSON."""
    report = {"rows": [asdict(r) for r in rows], "errors": dict(runner.errors)}
    with open(path, "w") as fh:
        json.dump({**report, "messages": runner.messages, "seconds": seconds}, fh, indent=2)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--n", default="10000,100000", help="item counts, comma-separated")
    p.add_argument("--datasets", default=",".join(KINDS), help="data sets, comma-separated")
    p.add_argument("--backends", default="postgres,redis", help="backends, comma-separated")
    p.add_argument("--queries", type=int, default=100, help="queries per data set")
    p.add_argument("--quick", action="store_true", help="N=1000, 30 queries, short timings (CI)")
    p.add_argument("--dsn", default=None, help="PostgreSQL URL (default: embedded server)")
    p.add_argument("--url", default=None, help="Redis URL (default: a fresh server with modules)")
    p.add_argument("--json", dest="json_path", default=None, help="write the rows to this file")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [1000] if args.quick else [int(x) for x in args.n.split(",")]
    queries = 30 if args.quick else args.queries
    quick = bench.Config(min_time=0.2, min_ops=20, max_time=1.0)
    cfg = quick if args.quick else bench.Config(min_time=1.0, min_ops=50, max_time=4.0)
    runner = bench.Runner(cfg)
    t_start = time.perf_counter()
    backends: list[Backend] = []
    for name in args.backends.split(","):
        backends.append(Postgres(args.dsn) if name == "postgres" else Redis(args.url))
    rows: list[Row] = []
    for name in args.datasets.split(","):
        for n in sizes:
            data = load_set(name, n, queries)
            for backend in backends:
                print(f"[{backend.name}] {name}, {n:,} items, {queries} queries ...", flush=True)
                rows.extend(measure(runner, backend, data, 5.0 if args.quick else 60.0))
                if args.json_path:  # so far, in case a later (long) measurement is interrupted
                    write_json(args.json_path, rows, runner, time.perf_counter() - t_start)
    for name in args.datasets.split(","):
        print(f"\n{name} ({KINDS[name]}-d), {NAMESPACES} namespaces, recall@10 vs numpy exact:")
        print(render(rows, name))
    seconds = time.perf_counter() - t_start
    print(f"\nerrors: {sum(runner.errors.values())} {dict(runner.errors) or ''}")
    print(f"total time: {seconds:.1f} s")
    if args.json_path:
        write_json(args.json_path, rows, runner, seconds)
    return 1 if runner.errors else 0


if __name__ == "__main__":
    sys.exit(main())
