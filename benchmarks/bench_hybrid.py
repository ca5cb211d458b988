"""Hybrid (lexical + vector) search latency against vector-only search, side by side (#18: hybrid at
most 1.5x vector-only at 10k items), on PostgreSQL and Redis (Query Engine; ``redis-plain`` too on
request).

Loads the same templated memories (names, order numbers, error codes, paths, in 50 user
namespaces; ``HashEmbeddings``, one field) into a vector-only and a hybrid store of each backend
(fresh tables or prefixes), then times the same queries on both, within one user's namespace and
across all users, the two stores taking turns on each query (so a busy moment of the machine hits
both alike), each query's best of ``--runs``: the median ms per search and the ratio hybrid /
vector-only per backend and scope.

Examples::

    python benchmarks/bench_hybrid.py --quick          # CI: 2,000 memories, 20 queries (<60 s)
    python benchmarks/bench_hybrid.py                  # 10,000 memories, 200 queries
    python benchmarks/bench_hybrid.py --backends postgres,redis,redis-plain --json out.json
    python benchmarks/bench_hybrid.py --fixed-search   # both stores at one calibrated search
    python benchmarks/bench_hybrid.py --texts zipf --n 300000 --backends postgres  # ordinary words

Servers: ``--dsn`` / ``LANGMEM_BENCH_POSTGRES_DSN`` (else an embedded PostgreSQL), ``--url`` /
``LANGMEM_BENCH_REDIS_URL`` and ``--plain-url`` / ``LANGMEM_BENCH_REDIS_PLAIN_URL`` (else local
test servers).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

import psycopg
import redis
from langgraph.store.base import BaseStore, PutOp

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import bench_calibration_stall as stall
from benchmarks.bench_postgres import resolve_dsn
from benchmarks.bench_redis import resolve_url
from benchmarks.retrieval_stores import fixed_search
from langmem_adapters import HashEmbeddings
from langmem_adapters.postgres import PostgresStore
from langmem_adapters.redis import RedisStore

DIMS = 64
USERS = [f"user{i}" for i in range(50)]
NAMES = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hiro", "Ines", "Jonas"]
TEMPLATES = [
    "{name} asked about order {order}, which shipped on {day} with {carrier}",
    "The deploy of {service} failed with {code} while reading {path}",
    "{name} prefers {food} for lunch and meets the team on {day}",
    "Ticket {ticket} about {service} was closed by {name} after the {code} fix",
    "{name} moved the config from {path} to a new host for {service}",
    "Invoice {order} for {name} is due on {day}; pay by card ending {last4}",
]
FILL = {
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "carrier": ["DHL", "UPS", "FedEx", "the post"],
    "service": ["billing", "search", "auth", "payments", "reports", "gateway"],
    "code": ["ERR_TLS_CERT_ALTNAME", "ECONNRESET", "ERR_HTTP2_STREAM", "E_TIMEOUT", "OOMKilled"],
    "food": ["ramen", "salad", "tacos", "curry"],
}


def memory(rng: random.Random) -> str:
    """One templated memory with random identifiers."""
    fill: dict[str, Any] = {k: rng.choice(v) for k, v in FILL.items()}
    fill.update(
        name=rng.choice(NAMES),
        order=rng.randrange(10_000, 99_999),
        ticket=f"T-{rng.randrange(1000, 9999)}",
        path=f"/etc/{rng.choice(FILL['service'])}/conf-{rng.randrange(100)}.yaml",
        last4=rng.randrange(1000, 9999),
    )
    return rng.choice(TEMPLATES).format(**fill)


def workload(
    n: int, queries: int, kind: str = "templated"
) -> tuple[list[PutOp], list[tuple[tuple[str, ...], str]]]:
    """``n`` memories spread over the users, and ``queries`` questions, every other one in a user's
    namespace, the others across all users. ``templated``: the memories of :func:`memory`, each
    question four words of a random one; ``zipf``: 30 words each drawn by Zipf's law from a
    20,000-word vocabulary (``bench_calibration_stall.texts``), each question 8 such words: ordinary
    words, many of them held by up to 2% of the memories, where the lexical side reads most."""
    rng = random.Random(7)
    texts = list(stall.texts(n, 1)) if kind == "zipf" else [memory(rng) for _ in range(n)]
    puts = [
        PutOp(("memories", USERS[j % len(USERS)]), f"m{j}", {"text": t})
        for j, t in enumerate(texts)
    ]
    asked: list[tuple[tuple[str, ...], str]] = []
    for i in range(queries):
        if kind == "zipf":
            q = " ".join(rng.choices(stall.VOCABULARY, stall.ZIPF, k=8))
        else:
            words = texts[rng.randrange(n)].split()
            q = f"what about {' '.join(rng.sample(words, k=min(4, len(words))))}?"
        asked.append((("memories", rng.choice(USERS)) if i % 2 == 0 else (), q))
    return puts, asked


def _index(hybrid: bool, ann: dict[str, int] | None = None) -> dict[str, Any]:
    index = {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"], "hybrid": hybrid}
    return index if ann is None else {**index, "ann_index_config": ann}


def _load(store: BaseStore, puts: Sequence[PutOp]) -> None:
    for start in range(0, len(puts), 500):
        store.batch(list(puts[start : start + 500]))


def postgres_stores(
    stack: ExitStack, dsn: str, puts: Sequence[PutOp], fixed: bool = False
) -> list[BaseStore]:
    """A vector-only and a hybrid ``PostgresStore`` on fresh tables, loaded and analyzed (as
    autovacuum would, soon after a load); ``fixed``: then both searching as the hybrid store
    calibrated itself to (``retrieval_stores.fixed_search``). Each closes with ``stack``, its
    background calibration stopped before the server is."""
    stores: list[BaseStore] = []
    prefixes: list[str] = []
    for hybrid in (False, True):
        prefix = f"bh_{uuid.uuid4().hex[:8]}"
        store = stack.enter_context(
            PostgresStore.from_conn_string(dsn, index=_index(hybrid), table_prefix=prefix)  # type: ignore[arg-type]
        )
        store.setup()
        with store.bulk_load():
            _load(store, puts)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"ANALYZE {prefix}_vectors_vector{DIMS}")
        stores.append(store)
        prefixes.append(prefix)
    if not fixed:
        return stores
    ann = fixed_search(stores[1])
    return [
        stack.enter_context(
            PostgresStore.from_conn_string(dsn, index=_index(hybrid, ann), table_prefix=prefix)  # type: ignore[arg-type]
        )
        for prefix, hybrid in zip(prefixes, (False, True))
    ]


def redis_stores(
    stack: ExitStack, url: str, puts: Sequence[PutOp], mode: str, fixed: bool = False
) -> list[BaseStore]:
    """A vector-only and a hybrid ``RedisStore`` (``mode``) on fresh prefixes, loaded; ``fixed``:
    then both searching as the hybrid store calibrated itself to. Each closes with ``stack``."""
    client = stack.enter_context(redis.Redis.from_url(url))
    stores: list[RedisStore] = []
    for hybrid in (False, True):
        prefix = f"bh{uuid.uuid4().hex[:8]}"
        store = RedisStore(client, index=_index(hybrid), prefix=prefix, mode=mode)  # type: ignore[arg-type]
        stores.append(stack.enter_context(store))
        store.setup()
        _load(store, puts)
    if not fixed:
        return list(stores)
    ann = fixed_search(stores[1])
    return [
        stack.enter_context(
            RedisStore(client, index=_index(hybrid, ann), prefix=s.keys.prefix, mode=mode)  # type: ignore[arg-type]
        )
        for s, hybrid in zip(stores, (False, True))
    ]


def best_ms(store: BaseStore, prefix: tuple[str, ...], query: str, runs: int) -> float:
    """The fastest of ``runs`` searches, in milliseconds."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        store.search(prefix, query=query, limit=10)
        best = min(best, (time.perf_counter() - start) * 1000)
    return best


def measure(
    stores: Sequence[BaseStore], asked: Sequence[tuple[tuple[str, ...], str]], runs: int
) -> dict[str, dict[str, float]]:
    """Per scope (``user``, ``global``): the median ms of the vector-only and the hybrid store,
    taking turns per query after a warm-up pass, and their ratio."""
    for prefix, q in asked[:10]:
        for store in stores:
            store.search(prefix, query=q, limit=10)
    times: dict[tuple[int, str], list[float]] = {}
    for prefix, q in asked:
        scope = "user" if prefix else "global"
        for i, store in enumerate(stores):
            times.setdefault((i, scope), []).append(best_ms(store, prefix, q, runs))
    out = {}
    for scope in ("user", "global"):
        vector, hybrid = (statistics.median(times[(i, scope)]) for i in (0, 1))
        out[scope] = {"vector_ms": vector, "hybrid_ms": hybrid, "ratio": hybrid / vector}
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI: 2,000 memories, 20 queries")
    p.add_argument("--n", type=int, default=None, help="memories (default 10,000)")
    p.add_argument("--queries", type=int, default=None, help="questions (default 200)")
    p.add_argument("--plain-queries", type=int, default=20, help="questions on redis-plain")
    p.add_argument("--runs", type=int, default=3, help="each query's best of this many runs")
    p.add_argument("--backends", default="postgres,redis", help="postgres,redis,redis-plain")
    p.add_argument("--dsn", help="PostgreSQL DSN (default: an embedded server)")
    p.add_argument("--url", help="Redis URL with the Query Engine (default: a local server)")
    p.add_argument("--plain-url", help="Redis URL for redis-plain (default: local)")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument(
        "--texts",
        choices=("templated", "zipf"),
        default="templated",
        help="the memories and questions (see workload)",
    )
    p.add_argument(
        "--fixed-search",
        action="store_true",
        help="both stores search as the hybrid one calibrated itself to (each store's own "
        "calibration moved the global ratio between 0.5x and 1.3x)",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    n = args.n or (2_000 if args.quick else 10_000)
    queries = args.queries or (20 if args.quick else 200)
    runs = 1 if args.quick else args.runs
    puts, asked = workload(n, queries, args.texts)
    print(
        f"{n} {args.texts} memories in {len(USERS)} namespaces, {queries} queries, best of {runs}, "
        "limit 10"
    )
    results: dict[str, Any] = {}
    for backend in args.backends.split(","):
        chosen = asked
        with ExitStack() as stack:
            if backend == "postgres":
                stores = postgres_stores(stack, resolve_dsn(args.dsn), puts, args.fixed_search)
            elif backend == "redis":
                url = resolve_url(args.url)
                stores = redis_stores(stack, url, puts, "query_engine", args.fixed_search)
            elif backend == "redis-plain":
                url = resolve_url(args.plain_url, modules=False)
                stores = redis_stores(stack, url, puts, "plain")
                chosen = asked[: max(2, args.plain_queries)]  # each search reads every item
            else:
                raise SystemExit(f"unknown backend {backend!r}")
            results[backend] = measure(stores, chosen, runs)
        for scope, r in results[backend].items():
            print(
                f"{backend:>11} {scope:>6}: vector {r['vector_ms']:.2f} ms, "
                f"hybrid {r['hybrid_ms']:.2f} ms, hybrid/vector {r['ratio']:.2f}x"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"n": n, "texts": args.texts, "queries": queries, "runs": runs, "results": results},
                f,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
