"""Hybrid (lexical + vector) search latency against vector-only search on Redis, side by side.

Loads the memories of ``hybrid_latency.py`` (~10k templated memories with names, order numbers,
error codes and paths, in 50 user namespaces, ``HashEmbeddings``) into a vector-only and a hybrid
``RedisStore`` (Query Engine or plain mode), then times the same queries on both, taking turns per
query (each query's best of ``--runs`` runs), within one user's namespace and across all users: the
median ms per search and the ratio hybrid / vector-only. Not run by CI (``bench_*`` files are): run
``python benchmarks/hybrid_latency_redis.py [--mode query_engine|plain] [--n 10000] [--queries 100]``;
uses ``LANGMEM_TEST_REDIS_URL`` / ``LANGMEM_TEST_REDIS_PLAIN_URL`` or starts the test servers.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import redis
from langgraph.store.base import PutOp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hybrid_latency import memory

from langmem_adapters import HashEmbeddings
from langmem_adapters.redis import RedisStore
from tests import servers


def load(client: Any, mode: str, hybrid: Any, texts: list[str], users: list[str]) -> RedisStore:
    """A fresh store on its own prefix holding every memory, 500 a batch."""
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"], "hybrid": hybrid}
    store = RedisStore(client, index=index, prefix=f"hl{uuid.uuid4().hex[:8]}", mode=mode)  # type: ignore[arg-type]
    store.setup()
    for start in range(0, len(texts), 500):
        end = min(len(texts), start + 500)
        ops = [
            PutOp(("memories", users[j % len(users)]), f"m{j}", {"text": texts[j]})
            for j in range(start, end)
        ]
        store.batch(ops)
    return store


def best_ms(store: RedisStore, prefix: tuple[str, ...], query: str, runs: int) -> float:
    """The fastest of ``runs`` searches, in milliseconds."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        store.search(prefix, query=query, limit=10)
        best = min(best, (time.perf_counter() - start) * 1000)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["query_engine", "plain"], default="query_engine")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--depth", type=int, default=4)
    args = parser.parse_args()
    rng = random.Random(7)
    texts = [memory(rng) for _ in range(args.n)]
    users = [f"user{i}" for i in range(50)]
    queries: list[tuple[tuple[str, ...], str]] = []
    for i in range(args.queries):
        words = texts[rng.randrange(args.n)].split()
        q = " ".join(rng.sample(words, k=min(4, len(words))))
        queries.append((("memories", rng.choice(users)) if i % 2 == 0 else (), f"what about {q}?"))
    client = redis.Redis.from_url(servers.redis_url(modules=args.mode == "query_engine"))
    stores = {
        "vector": load(client, args.mode, None, texts, users),
        "hybrid": load(client, args.mode, {"depth": args.depth}, texts, users),
    }
    for prefix, q in queries[:10]:  # warm-up
        for store in stores.values():
            store.search(prefix, query=q, limit=10)
    times: dict[tuple[str, bool], list[float]] = {}
    for prefix, q in queries:
        for name, store in stores.items():
            times.setdefault((name, bool(prefix)), []).append(best_ms(store, prefix, q, args.runs))
    for scoped, label in ((True, "namespaced"), (False, "global")):
        v = statistics.median(times[("vector", scoped)])
        h = statistics.median(times[("hybrid", scoped)])
        print(f"{args.mode} {label:>10}: vector {v:.2f} ms, hybrid {h:.2f} ms, ratio {h / v:.2f}x")


if __name__ == "__main__":
    main()
