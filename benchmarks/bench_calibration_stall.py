"""Benchmark what a store's calibration costs the other clients of its server: one store searches
a namespace in a thread (its breadth fixed, so it never calibrates) while a second store on the same
data runs ``calibrate()``; reported are the check's time (or its error) and the searcher's
searches before and during it (count, median, p99, max ms, failures).

The data: ``--n`` items in 50 namespaces, each a text of 30 words drawn by Zipf's law from a
20,000-word vocabulary, embedded by ``HashEmbeddings(64)``; loaded with ``bulk_load()`` into a
hybrid store. Redis runs one command at a time, so a check whose commands hold it stalls every
other client (at 300,000 vectors the probe's pipelined rounds held it past redis-py 8's 5 s socket
timeout: docs/benchmarks.md, "Calibration at 300,000 vectors on Redis"); Postgres runs the check in
a server process of its own. The servers are this process's own (``tests/servers.py``).

Examples::

    python benchmarks/bench_calibration_stall.py --n 300000          # Redis, ~7 min of loading
    python benchmarks/bench_calibration_stall.py --backends redis,postgres --n 50000
    python benchmarks/bench_calibration_stall.py --quick              # CI: 3,000 items
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, PutOp

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.postgres import PostgresStore
from langmem_adapters.redis import RedisStore
from tests import servers

VOCABULARY = [f"w{i}" for i in range(20_000)]
ZIPF = [1 / (i + 1) for i in range(len(VOCABULARY))]
NAMESPACES = 50
LOAD_BATCH = 2000
#: How long the searcher runs before the check starts (its baseline).
BASELINE_S = 2.0


def texts(n: int, seed: int) -> Iterator[str]:
    """``n`` texts of 30 words each, drawn by Zipf's law."""
    rng = random.Random(seed)
    for _ in range(n):
        yield " ".join(rng.choices(VOCABULARY, ZIPF, k=30))


def index(ann: dict[str, int] | None = None) -> dict[str, Any]:
    """A hybrid index over ``text`` (64-d hashing embeddings), searching with ``ann``."""
    out: dict[str, Any] = {
        "dims": 64,
        "embed": HashEmbeddings(64),
        "fields": ["text"],
        "hybrid": True,
    }
    if ann:
        out["ann_index_config"] = ann
    return out


@contextmanager
def stores(backend: str) -> Iterator[Callable[[Any], BaseStore]]:
    """Opens stores of ``backend`` on one fresh place (closed on exit)."""
    place = f"stall{uuid.uuid4().hex[:6]}"
    with ExitStack() as stack:

        def open_store(idx: Any) -> BaseStore:
            store: Any
            if backend == "redis":
                url = servers.redis_url(modules=True)
                store = stack.enter_context(
                    RedisStore.from_conn_string(url, index=idx, prefix=place)
                )
            else:
                dsn = servers.postgres_dsn()
                opened = PostgresStore.from_conn_string(dsn, index=idx, table_prefix=place)
                store = stack.enter_context(opened)
            store.setup()
            return store

        yield open_store


def load(store: BaseStore, n: int) -> float:
    """``n`` items over the namespaces; the seconds it took."""
    start = time.perf_counter()
    with store.bulk_load():  # type: ignore[attr-defined]
        batch: list[PutOp] = []
        for i, text in enumerate(texts(n, seed=1)):
            batch.append(PutOp(("big", f"u{i % NAMESPACES}"), f"k{i}", {"text": text}))
            if len(batch) == LOAD_BATCH:
                store.batch(batch)
                batch = []
        if batch:
            store.batch(batch)
    return time.perf_counter() - start


@dataclass
class Searches:
    """A searcher's times (ms) and failures, split at the check's start."""

    before: list[float] = field(default_factory=list)
    during: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    checking: bool = False


def search_until(store: BaseStore, stop: threading.Event, got: Searches) -> None:
    """Search a namespace with queries of eight vocabulary words until ``stop``."""
    queries = list(texts(60, seed=7))
    i = 0
    while not stop.is_set():
        query = " ".join(queries[i % len(queries)].split()[:8])
        start = time.perf_counter()
        try:
            store.search(("big", "u3"), query=query, limit=10)
        except Exception as exc:  # what the check did to this client is the measurement
            got.failures.append(f"{type(exc).__name__}: {str(exc)[:80]}")
        else:
            (got.during if got.checking else got.before).append(
                (time.perf_counter() - start) * 1000
            )
        i += 1


def summary(times: list[float]) -> str:
    """Count, median, p99 and max of ``times`` (ms)."""
    if not times:
        return "none"
    ordered = sorted(times)
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)]
    return (
        f"{len(times)} (median {statistics.median(times):.1f}, p99 {p99:.1f}, "
        f"max {ordered[-1]:.1f} ms)"
    )


def run(backend: str, n: int) -> None:
    """Load, then calibrate one store while another searches; print the backend's row."""
    with stores(backend) as open_store:
        loader = open_store(index({"ef_search": 100}))
        seconds = load(loader, n)
        searcher = open_store(index({"ef_search": 100}))
        checker = open_store(index())
        stop, got = threading.Event(), Searches()
        worker = threading.Thread(target=search_until, args=(searcher, stop, got))
        worker.start()
        time.sleep(BASELINE_S)
        got.checking = True
        start = time.perf_counter()
        try:
            stats = checker.calibrate()  # type: ignore[attr-defined]
            outcome = f"{stats.mode} at {stats.breadth}" if stats is not None else "no index"
        except Exception as exc:
            outcome = f"failed: {type(exc).__name__}"
        took = time.perf_counter() - start
        stop.set()
        worker.join()
    print(
        f"| {backend} | {n:,} ({seconds:.0f} s) | {outcome}, {took:.1f} s | "
        f"{summary(got.before)} | {summary(got.during)} | {len(got.failures)} |",
        flush=True,
    )
    for failure in got.failures[:3]:
        print(f"|  | searcher failure: {failure} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300_000)
    parser.add_argument("--backends", default="redis")
    parser.add_argument("--quick", action="store_true", help="CI: 3,000 items")
    args = parser.parse_args()
    n = 3000 if args.quick else args.n
    print("| backend | items (load) | calibrate() | searches before | searches during | failed |")
    print("|---|---:|---|---|---|---:|")
    for backend in args.backends.split(","):
        run(backend, n)


if __name__ == "__main__":
    main()
