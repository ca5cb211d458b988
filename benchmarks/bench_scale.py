"""How cost grows with memory: the same workloads at several item counts, ours and official.

Both backends (PostgreSQL, Redis with the Query Engine), both stores side by side on the same
server in one run, each item count loaded fresh. The data is agent memory: 50 users x 5 topic
sub-namespaces ``("memories", "user<u>", "topic<t>")``, values ``{"text", "kind", "n"}``. Workloads:
batch put (100), get, filtered search in a user's prefix (``kind == "fact"``, limit 10, prefix
``("memories", user)`` over its five topics), ``list_namespaces(prefix=("memories",), max_depth=2)``
and, with a ``HashEmbeddings`` index, vector search in a namespace and global. It prints ops/s per N,
the growth factor per 10x of N (how many times slower, per tenfold items; 1.0 is flat) and ours /
official. Plus the ratios to the physical limit: our put (single) and get next to the bare statement
(Postgres: psycopg with ``prepare=True``, the very SQL our store sends, built by its own statement
builders) or bare command (Redis: one ``HSET`` of the item hash / the ``HMGET`` our get sends; and
for the put also the very script call it sends, as Postgres's line) on the same server in the same
run, as a fraction of that limit.

Examples::

    python -m benchmarks.bench_scale --quick                 # CI: 1k and 5k items (vectors at 1k)
    python -m benchmarks.bench_scale --json scale.json       # 10k and 100k, vectors up to 100k
    python -m benchmarks.bench_scale --sizes 10000,100000,1000000 --vector-max 100000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import redis
from langgraph.store.base import BaseStore
from langgraph.store.redis import RedisStore as OfficialRedis

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import bench_postgres as bench
from benchmarks import bench_redis
from benchmarks.bare_limits import bare_postgres, bare_redis, bare_redis_same_work
from langmem_adapters.postgres.search import EXACT_BELOW as PG_EXACT_BELOW
from langmem_adapters.redis import RedisStore as OursRedis
from langmem_adapters.redis.search import EXACT_BELOW as REDIS_EXACT_BELOW

#: The data is bench_redis's user-prefix data: 50 users x 5 topic namespaces, a fifth of each a fact.
USERS, K = bench_redis.USERS, 10
BACKENDS = ("postgres", "redis")
# Index-backed workloads: the target is at most this growth per 10x of N.
FLAT = ("get", "filtered search (user prefix)", "list_namespaces", "vector search (namespace)")
GROWTH_TARGET = 1.5
#: Searches before the vector workloads are timed: more distinct queries than the 40 a store's
#: recall measurement waits for (see :func:`calibrated`).
WARM = 64
#: The smaller of the backends' ``exact_below`` defaults: an index this small is never calibrated.
EXACT_BELOW = min(PG_EXACT_BELOW, REDIS_EXACT_BELOW)
LIMIT_TARGETS = {"postgres": 0.8, "redis": 0.7}
Rates = dict[str, dict[str, float]]  # workload -> store -> ops/s


# --------------------------------------------------------------------------- stores


@contextmanager
def postgres_stores(dsn: str, indexed: bool, dims: int) -> Iterator[dict[str, BaseStore]]:
    """Both Postgres stores on a fresh schema (:func:`benchmarks.bench_postgres.open_stores`)."""
    with bench.open_stores(dsn, bench.SCHEMA, indexed=indexed, dims=dims) as stores:
        yield stores


@contextmanager
def redis_stores(url: str, indexed: bool, dims: int) -> Iterator[dict[str, BaseStore]]:
    """Both Redis stores on fresh prefixes; their keys and indexes are dropped afterwards, so
    the next item count starts from an empty server (a given ``--url`` keeps its other keys)."""
    client = redis.Redis.from_url(url)
    before = set(client.execute_command("FT._LIST"))
    tag = uuid.uuid4().hex[:8]
    index = bench.index_config(dims) if indexed else None
    try:
        with ExitStack() as stack:
            ours = stack.enter_context(
                OursRedis.from_conn_string(url, index=index, prefix=f"ours{tag}")  # type: ignore[arg-type]
            )
            official = stack.enter_context(
                OfficialRedis.from_conn_string(
                    url,
                    index=index,  # type: ignore[arg-type]
                    store_prefix=f"off{tag}",
                    vector_prefix=f"offv{tag}",
                )
            )
            official.setup()
            yield {"ours": ours, "official": official}
    finally:
        for name in set(client.execute_command("FT._LIST")) - before:
            client.execute_command("FT.DROPINDEX", name)
        for pattern in (f"ours{tag}*", f"off{tag}*", f"offv{tag}*"):
            batch = []
            for key in client.scan_iter(match=pattern, count=5000):
                batch.append(key)
                if len(batch) >= 5000:
                    client.unlink(*batch)
                    batch = []
            if batch:
                client.unlink(*batch)
        client.close()


def settle(backend: str, where: str) -> None:
    """After a load: ANALYZE (Postgres, as autovacuum would soon) or wait for index scans (Redis)."""
    if backend == "postgres":
        bench.analyze(bench.schema_dsn(where, bench.SCHEMA))
    else:
        bench_redis.settle(where)


# --------------------------------------------------------------------------- phases


def plain_phase(
    runner: bench.Runner, backend: str, where: str, data: list[bench.Item]
) -> tuple[Rates, dict[str, float]]:
    """Batch put, get, filtered search in a user prefix and list_namespaces without an index; and
    put (single) / get as fractions of the bare statement or command."""
    cfg = runner.cfg
    out: Rates = {}
    opener = postgres_stores if backend == "postgres" else redis_stores
    rng = random.Random(cfg.seed)
    picks = [rng.randrange(len(data)) for _ in range(4096)]
    users = [("memories", f"user{u}") for u in range(USERS)]
    with opener(where, False, cfg.dims) as stores:
        batches = bench.load(runner, stores, data, "put (batch of 100)")
        out["put (batch of 100), items/s"] = {s: r * bench.BATCH for s, r in batches.items()}
        settle(backend, where)

        def item(i: int) -> bench.Item:
            return data[picks[i % len(picks)]]

        nss = (
            bench_redis.topic_namespaces()
        )  # built once: building it costs ~110 us, as much as a bare put

        def fresh(i: int) -> bench.Item:
            ns = nss[i % len(nss)]
            return ns, f"s{i}", {"text": f"single {i}", "kind": "note", "n": -i}

        facts = sum(1 for _, _, v in data if v["kind"] == "fact") // USERS

        def search_check(store: BaseStore, i: int) -> bool | str:
            user = users[i % USERS]
            got = store.search(user, filter={"kind": "fact"}, limit=K)
            ok = len(got) == min(K, facts) and all(
                r.value["kind"] == "fact" and r.namespace[:2] == user for r in got
            )
            stamps = [r.updated_at for r in got]
            return (ok and stamps == sorted(stamps, reverse=True)) or f"search {user}: wrong page"

        def list_check(store: BaseStore, i: int) -> bool | str:
            got = store.list_namespaces(prefix=("memories",), max_depth=2, limit=100)
            return got == sorted(users) or f"list_namespaces: {len(got)} namespaces"

        workloads: dict[str, tuple[Callable[[BaseStore, int], object], Any]] = {
            "get": (lambda s, i: s.get(*item(i)[:2]), lambda s, i: s.get(*item(i)[:2]) is not None),
            "filtered search (user prefix)": (
                lambda s, i: s.search(users[i % USERS], filter={"kind": "fact"}, limit=K),
                search_check,
            ),
            "list_namespaces": (
                lambda s, i: s.list_namespaces(prefix=("memories",), max_depth=2, limit=100),
                list_check,
            ),
        }
        for metric, (op, check) in workloads.items():
            for name, store in stores.items():
                runner.check(metric, name, 20, lambda i, s=store, c=check: c(s, i))
            out[metric] = runner.rates(
                metric, {n: (lambda i, s=s, o=op: o(s, i)) for n, s in stores.items()}
            )
        ours = stores["ours"]
        bare_put, bare_get, close = (bare_postgres if backend == "postgres" else bare_redis)(
            ours,  # type: ignore[arg-type]
            where,
        )
        more = bare_redis_same_work(ours, where) if backend == "redis" else {}  # type: ignore[arg-type]
        try:
            limit = runner.rates(
                "limit",
                {
                    "put (single)": lambda i: ours.put(*fresh(i)),
                    "bare put": lambda i: bare_put(i, fresh(i + 10**7)),
                    "get": lambda i: ours.get(*item(i)[:2]),
                    "bare get": lambda i: bare_get(i, item(i)),
                    **{
                        name: lambda i, put=put, k=k: put(i, fresh(i + (k + 2) * 10**7))
                        for k, (name, put) in enumerate(more.items())
                    },
                },
            )
        finally:
            close()
        runner.check("put (single)", "ours", 20, lambda i: ours.get(*fresh(i)[:2]) is not None)
    fractions = {
        "put (single)": limit["put (single)"] / limit["bare put"],
        "get": limit["get"] / limit["bare get"],
        **{f"put (single) / {name}": limit["put (single)"] / limit[name] for name in more},
    }
    return out, {**fractions, **{f"{k}, ops/s": v for k, v in limit.items()}}


def calibrated(ours: BaseStore, warm: Callable[[int], object], n: int) -> None:
    """Our store in its steady state before it is timed: a store measures its recall in the
    background from its first search on an index it has no fitting measurement for, and again once
    60 distinct real queries came (seconds at 100k, during which the searches share the server with
    it: on Redis its exact scans hold the server's main thread), so ``WARM`` searches (``warm(i)``)
    run first and the store's own measurement is awaited; what it took is printed
    (``vector_stats().seconds``). An index of at most ``EXACT_BELOW`` vectors is searched exactly
    and never measured."""
    for i in range(WARM):
        warm(i)
    deadline = time.monotonic() + 600
    stats = ours.vector_stats()  # type: ignore[attr-defined]
    while stats.size > EXACT_BELOW and stats.measured_at is None and time.monotonic() < deadline:
        time.sleep(0.2)
        stats = ours.vector_stats()  # type: ignore[attr-defined]
    print(
        f"  ours at N={n:,}: {stats.mode}, breadth {stats.breadth}, recall@10 {stats.recall}"
        f" (measured in {stats.seconds} s on {stats.real_queries} real queries)",
        file=sys.stderr,
    )


def vector_phase(runner: bench.Runner, backend: str, where: str, data: list[bench.Item]) -> Rates:
    """Indexed batch put, then vector search in one topic namespace and over every item."""
    cfg = runner.cfg
    opener = postgres_stores if backend == "postgres" else redis_stores
    rng = random.Random(cfg.seed + 2)
    vocab = bench.make_vocab(random.Random(cfg.seed))
    queries = [bench.random_text(rng, vocab, 6) for _ in range(256)]
    nss = bench_redis.topic_namespaces()
    out: Rates = {}
    with opener(where, True, cfg.dims) as stores:
        batches = bench.load(runner, stores, data, "indexed put (batch of 100)")
        out["indexed put (batch of 100), items/s"] = {
            s: r * bench.BATCH for s, r in batches.items()
        }
        settle(backend, where)
        workloads: dict[str, Callable[[BaseStore, int], object]] = {
            "vector search (namespace)": lambda s, i: s.search(
                nss[i % len(nss)], query=queries[i % len(queries)], limit=K
            ),
            "vector search (global)": lambda s, i: s.search(
                (), query=queries[i % len(queries)], limit=K
            ),
        }
        ours = stores["ours"]
        calibrated(ours, lambda i: workloads["vector search (namespace)"](ours, i), len(data))
        want = {
            "vector search (namespace)": min(K, len(data) // len(nss)),
            "vector search (global)": K,
        }
        for metric, op in workloads.items():
            for name, store in stores.items():
                runner.check(
                    metric, name, 10, lambda i, s=store, o=op, m=metric: len(o(s, i)) == want[m]
                )
            out[metric] = runner.rates(
                metric, {n: (lambda i, s=s, o=op: o(s, i)) for n, s in stores.items()}
            )
    return out


# --------------------------------------------------------------------------- report


def growth(rates: dict[int, float]) -> float | None:
    """Slowdown per 10x of N between the smallest and the largest N measured (1.0: flat)."""
    ns = sorted(n for n, r in rates.items() if r > 0)
    if len(ns) < 2:
        return None
    lo, hi = ns[0], ns[-1]
    return float((rates[lo] / rates[hi]) ** (1 / math.log10(hi / lo)))


def report(results: dict[str, Any], markdown: bool) -> str:
    """The scale table (ops/s per N, growth per 10x, ours / official) and the limit table."""
    lines: list[str] = []
    sep = " | " if markdown else "  "
    for backend, per_n in results["scale"].items():
        sizes = sorted(per_n, key=int)
        metrics = sorted({m for n in sizes for m in per_n[n]}, key=str)
        head = ["workload", "store", *(f"N={int(n):,}" for n in sizes), "x per 10x"]
        head += [f"ours/off N={int(n):,}" for n in sizes]
        lines += [f"\n{backend}", sep.join(head)]
        if markdown:
            lines.append("|".join("---" for _ in head))
        for m in metrics:
            for store in ("ours", "official"):
                rates = {int(n): per_n[n][m][store] for n in sizes if m in per_n[n]}
                g = growth(rates)
                flag = (
                    " !"
                    if g is not None and m in FLAT and store == "ours" and g > GROWTH_TARGET
                    else ""
                )
                row = [m, store, *(f"{rates.get(int(n), 0):,.0f}" for n in sizes)]
                row.append("-" if g is None else f"{g:.2f}{flag}")
                if store == "ours":
                    row += [
                        f"{per_n[n][m]['ours'] / per_n[n][m]['official']:.2f}"
                        if m in per_n[n]
                        else "-"
                        for n in sizes
                    ]
                lines.append(sep.join(row))
    lines.append("\nratio to the physical limit (ours / bare statement or command)")
    for backend, per_n in results["limit"].items():
        for n, fr in sorted(per_n.items(), key=lambda kv: int(kv[0])):
            lines.append(
                f"{backend} N={int(n):,}: put (single) {fr['put (single)']:.0%}, get {fr['get']:.0%}"
                f" (targets >= {LIMIT_TARGETS[backend]:.0%})"
            )
            lines += [
                f"  put (single) against the {name[len('put (single) / bare put ') :]} line: {v:.0%}"
                for name, v in fr.items()
                if name.startswith("put (single) / ")
            ]
            lines.append(
                "  us per call: "
                + ", ".join(
                    f"{k[:-7]} {1e6 / v:.0f}" for k, v in fr.items() if k.endswith(", ops/s")
                )
            )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small N and short timings (CI)")
    p.add_argument("--sizes", default="10000,100000", help="item counts, comma-separated")
    p.add_argument("--vector-max", type=int, default=100_000, help="largest N with vectors")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--dsn", help="PostgreSQL (default: an embedded server)")
    p.add_argument("--url", help="Redis with the Query Engine (default: one started here)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--markdown", action="store_true")
    return p.parse_args(argv)


def run(
    runner: bench.Runner, servers: dict[str, str], sizes: Sequence[int], vector_max: int
) -> dict[str, Any]:
    """Every phase on each backend's server (``{"postgres": dsn, "redis": url}``) at each N (vector
    workloads up to ``vector_max``): the ``--json`` document (``scale``: backend -> N -> workload ->
    store -> ops/s; ``limit``: backend -> N -> fractions and rates)."""
    results: dict[str, Any] = {"sizes": list(sizes), "scale": {}, "limit": {}}
    started = time.perf_counter()
    for backend, where in servers.items():
        scale = results["scale"].setdefault(backend, {})
        limit = results["limit"].setdefault(backend, {})
        for n in sizes:
            t0 = time.perf_counter()
            data = bench_redis.prefix_items(n, runner.cfg.seed)
            scale[n], limit[n] = plain_phase(runner, backend, where, data)
            if n <= vector_max:
                scale[n].update(vector_phase(runner, backend, where, data))
            print(f"{backend} N={n:,}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    results["seconds"] = time.perf_counter() - started
    results["errors"], results["mismatches"] = dict(runner.errors), dict(runner.mismatches)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.quick:
        sizes, vector_max = [1000, 5000], 1000  # vectors at 1k only: CI's 60 s
        cfg = bench.Config(dims=64, min_time=0.15, min_ops=20, max_time=0.6)
    else:
        sizes, vector_max = [int(s) for s in args.sizes.split(",")], args.vector_max
        cfg = bench.Config(dims=128, min_time=1.0, min_ops=200, max_time=4.0)
    runner = bench.Runner(cfg)
    servers = {
        b: bench.resolve_dsn(args.dsn) if b == "postgres" else bench_redis.resolve_url(args.url)
        for b in args.backends.split(",")
    }
    results = run(runner, servers, sizes, vector_max)
    print(report(results, args.markdown))
    print(
        f"\n{results['seconds']:.0f} s; errors {sum(runner.errors.values())}, "
        f"mismatches {sum(runner.mismatches.values())}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    # The official stores' own failures are reported above, not ours to fail on.
    ours = [k for k in (*runner.errors, *runner.mismatches) if k.endswith("/ ours")]
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
