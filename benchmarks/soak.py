"""Bounded soak: concurrent clients run a mixed get/put/search load against one store for a while and
report p50/p99 latency per operation and the error count (which must be zero). Then the async store
made from a URL gathers langgraph's large batch at once (``--gather`` rounds of put / get /
list_namespaces / search / put / delete: 10,000 rounds are 60,000 operations) and reports its rate
and errors (which must be zero too).

    python benchmarks/soak.py --backend postgres --seconds 120 --clients 8
    python benchmarks/soak.py --quick            # every backend, a few seconds each (CI)

Servers come from ``tests/servers.py`` (environment variables, else started locally on loopback).
The load is bounded in time and only targets servers on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from langgraph.store.base import BaseStore

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from langmem_adapters import HashEmbeddings
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests import servers

BACKENDS = ["postgres", "redis-qe", "redis-plain"]
DIMS = 64


@contextmanager
def open_store(backend: str, clients: int) -> Iterator[BaseStore]:
    """A fresh, set-up store of ``backend`` sized for ``clients`` concurrent callers."""
    index = {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"]}
    if backend == "postgres":
        with PostgresStore.from_conn_string(
            servers.postgres_dsn(),
            index=index,
            pool_config={"max_size": clients},
            table_prefix="soak",
        ) as pg:
            pg.setup()
            yield pg
        return
    mode = "query_engine" if backend == "redis-qe" else "plain"
    url = servers.redis_url(modules=backend == "redis-qe")
    with RedisStore.from_conn_string(
        url, index=index, prefix=f"soak{random.randrange(10**9)}", mode=mode
    ) as rs:
        rs.setup()
        yield rs


def soak(store: BaseStore, seconds: float, clients: int, seed: int = 0) -> dict[str, object]:
    """Run the mixed load; returns latencies (ms) per op and the errors seen."""
    words = [f"w{i}" for i in range(200)]
    latencies: dict[str, list[float]] = {"get": [], "put": [], "search": [], "vector": []}
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(c: int) -> None:
        rng = random.Random(seed + c)
        local: dict[str, list[float]] = {k: [] for k in latencies}
        while time.monotonic() < deadline:
            user = f"u{rng.randrange(50)}"
            ns = ("soak", user)
            key = f"k{rng.randrange(40)}"
            roll = rng.random()
            start = time.perf_counter()
            try:
                if roll < 0.45:
                    op = "get"
                    store.get(ns, key)
                elif roll < 0.75:
                    op = "put"
                    text = " ".join(rng.sample(words, 5))
                    store.put(ns, key, {"text": text, "n": rng.randrange(100), "user": user})
                elif roll < 0.9:
                    op = "search"
                    store.search(ns, filter={"n": {"$gte": rng.randrange(100)}}, limit=10)
                else:
                    op = "vector"
                    store.search(ns, query=" ".join(rng.sample(words, 3)), limit=5)
            except Exception as exc:
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            local[op].append((time.perf_counter() - start) * 1000)
        with lock:
            for k, v in local.items():
                latencies[k].extend(v)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    report: dict[str, object] = {"errors": len(errors), "first_errors": errors[:3]}
    for op, values in latencies.items():
        if values:
            arr = np.array(values)
            report[op] = {
                "count": len(values),
                "p50_ms": round(float(np.percentile(arr, 50)), 2),
                "p99_ms": round(float(np.percentile(arr, 99)), 2),
            }
    return report


async def _gather(store: BaseStore, rounds: int) -> dict[str, object]:
    coros = []
    for r in range(rounds):
        ns = ("gather", str(r % 2))
        coros += [
            store.aput(ns, f"a{r}", {"a": r}),
            store.aget(ns, f"a{r}"),
            store.alist_namespaces(prefix=None, max_depth=r % 10 + 1),
            store.asearch(ns, limit=10),
            store.aput(ns, f"b{r}", {"b": r}),
            store.adelete(ns, f"a{r}"),
        ]
    start = time.perf_counter()
    results = await asyncio.gather(*coros, return_exceptions=True)
    seconds = time.perf_counter() - start
    errors = [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
    return {
        "ops": len(coros),
        "seconds": round(seconds, 1),
        "ops_per_s": round(len(coros) / seconds),
        "errors": len(errors),
        "first_errors": errors[:3],
    }


def gather_load(backend: str, rounds: int) -> dict[str, object]:
    """langgraph's large batch, all gathered at once, on the async store made from a URL."""

    async def run() -> dict[str, object]:
        if backend == "postgres":
            async with AsyncPostgresStore.from_conn_string(
                servers.postgres_dsn(), table_prefix="soak"
            ) as pg:
                await pg.setup()
                return await _gather(pg, rounds)
        url = servers.redis_url(modules=backend == "redis-qe")
        async with AsyncRedisStore.from_conn_string(
            url, prefix=f"soak{random.randrange(10**9)}"
        ) as rs:
            return await _gather(rs, rounds)

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "all"], default="all")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="a few seconds per backend (CI)")
    parser.add_argument(
        "--gather", type=int, default=10_000, help="rounds of 6 gathered async ops (default 10000)"
    )
    parser.add_argument("--json", help="write the report to this file")
    args = parser.parse_args()
    seconds = 4.0 if args.quick else args.seconds
    backends = BACKENDS if args.backend == "all" else [args.backend]
    results: dict[str, dict[str, object]] = {}
    print(
        f"soak: {args.clients} clients, {seconds:g} s per backend, mix 45% get / 30% put / 15% filter / 10% vector"
    )
    print(f"{'backend':<12} {'op':<7} {'count':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for backend in backends:
        with open_store(backend, args.clients) as store:
            report = soak(store, seconds, args.clients)
        results[backend] = report
        for op in ("get", "put", "search", "vector"):
            stats = report.get(op)
            if isinstance(stats, dict):
                print(
                    f"{backend:<12} {op:<7} {stats['count']:>7} {stats['p50_ms']:>8} {stats['p99_ms']:>8}"
                )
        print(f"{backend:<12} errors: {report['errors']} {report['first_errors'] or ''}")
        gathered = gather_load(backend, 1_000 if args.quick else args.gather)
        report["gather"] = gathered
        print(
            f"{backend:<12} gather: {gathered['ops']} async ops at once, {gathered['seconds']} s, "
            f"{gathered['ops_per_s']} ops/s, errors: {gathered['errors']} {gathered['first_errors'] or ''}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    failed = [r for r in results.values() if r["errors"] or r["gather"]["errors"]]  # type: ignore[index]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
