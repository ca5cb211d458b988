"""Benchmark ``reindex``: items re-embedded per second, on the embedded PostgreSQL and on Redis
(Query Engine and plain mode), from ``HashEmbeddings(64)`` to another model of the same size.

Each run fills a fresh store (fresh table or key prefix) with ``--n`` items (half of the texts
repeated, as real memories repeat), then times ``reindex`` alone: pages read, new text embedded
(the offline embedder costs ~20 us a text, so the figure is the store's own work), shadow vectors
written, the ANN index built once, and the atomic switch. ``--quick`` (CI) uses 500 items.

Examples::

    python -m benchmarks.bench_reindex --quick
    python -m benchmarks.bench_reindex --n 10000
    python -m benchmarks.bench_reindex --n 100000 --only postgres
    python -m benchmarks.bench_reindex --n 10000 --postgres postgresql://... --redis redis://...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import redis
from langgraph.store.base import PutOp

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from langmem_adapters import HashEmbeddings, PostgresStore, RedisStore, embedded_dsn

DIMS = 64


class Salted(HashEmbeddings):
    """The "new model": the same size, other vectors."""

    def _embed(self, text: str) -> list[float]:
        return super()._embed(f"salt {text} pepper")


def _index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"]}


def _fill(store: Any, n: int) -> None:
    """``n`` items in 10 namespaces, in batches of 500 puts, as one bulk load (not timed)."""
    with store.bulk_load():
        for start in range(0, n, 500):
            store.batch(
                [
                    PutOp(
                        ("users", str(i % 10)),
                        f"m{i:07d}",
                        {"text": f"memory {i // 2} about topic {i // 2 % 97}", "n": i},
                    )
                    for i in range(start, min(n, start + 500))
                ]
            )


@contextmanager
def _postgres(url: str | None) -> Iterator[PostgresStore]:
    dsn = url or embedded_dsn(tempfile.mkdtemp(prefix="bench-reindex-pg-"))
    with psycopg.connect(dsn, autocommit=True) as conn:
        store = PostgresStore(conn, index=_index(), table_prefix=f"b{uuid.uuid4().hex[:8]}")  # type: ignore[arg-type]
        store.setup()
        yield store


def _redis(url: str | None, mode: str) -> Callable[[], Any]:
    @contextmanager
    def open_store() -> Iterator[RedisStore]:
        if url is None:
            from tests import servers

            where = servers.redis_url(modules=mode == "query_engine")
        else:
            where = url
        client = redis.Redis.from_url(where)
        store = RedisStore(client, index=_index(), prefix=f"b{uuid.uuid4().hex[:8]}", mode=mode)  # type: ignore[arg-type]
        store.setup()
        try:
            yield store
        finally:
            client.close()

    return open_store


def measure(open_store: Callable[[], Any], n: int) -> dict[str, float]:
    """Fill a fresh store with ``n`` items, then time one reindex; items/s and seconds."""
    with open_store() as store:
        _fill(store, n)
        started = time.perf_counter()
        done = store.reindex(Salted(DIMS))
        seconds = time.perf_counter() - started
        assert done == n, (done, n)
        hits = store.search(("users",), query="memory 7 about topic 7", limit=1)
        assert hits and hits[0].value["text"] == "memory 7 about topic 7", hits
    return {"items": n, "seconds": round(seconds, 3), "items_per_s": round(n / seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="items per store (default 10000)")
    parser.add_argument("--quick", action="store_true", help="500 items (CI)")
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: the embedded server)")
    parser.add_argument("--redis", help="a Redis URL with the Query Engine (default: started here)")
    parser.add_argument("--redis-plain", help="a Redis URL without modules (default: started here)")
    parser.add_argument(
        "--only", choices=["postgres", "redis", "redis-plain"], help="measure one backend only"
    )
    args = parser.parse_args(argv)
    n = 500 if args.quick else args.n
    runs = {
        "postgres": ("postgres (embedded)", lambda: _postgres(args.postgres)),
        "redis": ("redis (query engine)", _redis(args.redis, "query_engine")),
        "redis-plain": ("redis (plain)", _redis(args.redis_plain or args.redis, "plain")),
    }
    results = {
        name: measure(open_store, n)
        for key, (name, open_store) in runs.items()
        if args.only in (None, key)
    }
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
