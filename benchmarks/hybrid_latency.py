"""Hybrid (lexical + vector) search latency against vector-only search on Postgres, side by side.

Loads the same ~10k memories (templated text with names, order numbers, error codes and paths, in
50 user namespaces) into a vector-only and a hybrid ``PostgresStore`` (``HashEmbeddings``), then
times the same queries on both, within one user's namespace and across all users: the median and
p95 ms per search and the ratio hybrid / vector-only. Not run by CI (``bench_*`` files are): run
``python benchmarks/hybrid_latency.py [--n 10000] [--queries 300]``; uses
``LANGMEM_TEST_POSTGRES_DSN`` or starts the embedded server.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from typing import Any

import psycopg
from langgraph.store.base import PutOp

from langmem_adapters import HashEmbeddings
from langmem_adapters.postgres import PostgresStore, embedded_dsn

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


def timed(
    stores: list[PostgresStore], queries: list[tuple[tuple[str, ...], str]]
) -> list[list[float]]:
    """Milliseconds per search on each store, the stores taking turns on each query (so a busy
    moment of the machine hits both alike), after one warm-up pass."""
    for prefix, q in queries[:20]:
        for store in stores:
            store.search(prefix, query=q, limit=10)
    out: list[list[float]] = [[] for _ in stores]
    for prefix, q in queries:
        for times, store in zip(out, stores):
            start = time.perf_counter()
            store.search(prefix, query=q, limit=10)
            times.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    dsn = args.dsn or embedded_dsn(tempfile.mkdtemp(prefix="hybrid-latency-"))
    rng = random.Random(7)
    texts = [memory(rng) for _ in range(args.n)]
    users = [f"user{i}" for i in range(50)]
    queries: list[tuple[tuple[str, ...], str]] = []
    for i in range(args.queries):
        text = texts[rng.randrange(args.n)]
        words = text.split()
        q = " ".join(rng.sample(words, k=min(4, len(words))))
        prefix = ("memories", rng.choice(users)) if i % 2 == 0 else ()
        queries.append((prefix, f"what about {q}?"))
    stores = []
    for name, hybrid in (("vector", False), ("hybrid", True)):
        conn = psycopg.connect(dsn, autocommit=True)
        index: dict[str, Any] = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
        if hybrid:
            index["hybrid"] = True
        prefix = f"lat_{name}_{uuid.uuid4().hex[:6]}"  # fresh tables each run
        store = PostgresStore(conn, index=index, table_prefix=prefix)  # type: ignore[arg-type]
        store.setup()
        with store.bulk_load():
            for start in range(0, args.n, 500):
                end = min(args.n, start + 500)
                store.batch([_put(users[j % len(users)], j, texts[j]) for j in range(start, end)])
        conn.execute(f"ANALYZE {prefix}_vectors_vector64")  # as autovacuum would, soon after
        stores.append(store)
    for scope in ("namespaced", "global"):
        picked = [(p, q) for p, q in queries if bool(p) == (scope == "namespaced")]
        v, h = timed(stores, picked)
        p95 = lambda xs: statistics.quantiles(xs, n=20)[-1]  # noqa: E731
        print(
            f"{scope:>10}: vector {statistics.median(v):.2f} ms (p95 {p95(v):.2f}), "
            f"hybrid {statistics.median(h):.2f} ms (p95 {p95(h):.2f}), "
            f"ratio {statistics.median(h) / statistics.median(v):.2f}x"
        )


def _put(user: str, j: int, text: str) -> PutOp:
    """The put of memory ``j`` of ``user``."""
    return PutOp(("memories", user), f"m{j}", {"text": text})


if __name__ == "__main__":
    main()
