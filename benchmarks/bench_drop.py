"""Benchmark Redis ``delete_namespace`` of one large namespace: the longest single script call
(server time from ``SLOWLOG``, its threshold lowered to 1 ms on this process's own server for the
run; the number of calls from ``INFO commandstats``)
and the total wall time, per mode.

One namespace of ``--n`` items (value ``{"text": ...}``) is loaded, then deleted; the server's
slow log records every command's execution time, and the longest ``EVALSHA`` is what every other
client waits behind (and what a client's socket timeout must outlast). With ``--index`` the items
carry 16-d ``HashEmbeddings`` vectors (Query Engine mode: a vector document each). The servers
are this process's own (``tests/servers.py``), so nothing else's slow log is touched.

``--batches`` tries other batch sizes; ``--one-call`` deletes with the batch size set beyond ``--n`` (every item in one call, as the
store did before the batched drop) beside the default batch, in the same run.

Examples::

    python benchmarks/bench_drop.py --n 100000 --one-call
    python benchmarks/bench_drop.py --quick           # CI: 2,000 items
    python benchmarks/bench_drop.py --n 20000 --modes plain --index
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from typing import Any

import redis
from langgraph.store.base import PutOp

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.redis import RedisStore
from langmem_adapters.redis import namespaces as redis_namespaces
from tests import servers

LOAD_BATCH = 1000


def load(store: RedisStore, n: int) -> float:
    """``n`` items into the namespace ``("big",)``; the seconds it took."""
    start = time.perf_counter()
    for i in range(0, n, LOAD_BATCH):
        ops = [
            PutOp(("big",), f"k{j}", {"text": f"item {j} about topic {j % 97}"})
            for j in range(i, min(i + LOAD_BATCH, n))
        ]
        store.batch(ops)
    return time.perf_counter() - start


def wait_until_free(client: redis.Redis) -> None:
    """Return once the server answers (a long script makes it reply BUSY meanwhile)."""
    while True:
        try:
            client.ping()
            return
        except redis.exceptions.BusyLoadingError:
            time.sleep(0.05)
        except redis.exceptions.ResponseError as exc:
            if not str(exc).startswith("BUSY"):
                raise
            time.sleep(0.05)


def timed_drop(client: redis.Redis, store: RedisStore) -> dict[str, Any]:
    """Delete ``("big",)`` with the slow log recording every command: the count returned, the
    script calls, the longest one's server ms, the wall seconds until the server is free again
    (the error's name instead of the count when the client timed out)."""
    old = client.config_get("slowlog-*")
    client.config_set("slowlog-log-slower-than", 1000)  # µs: the commands inside scripts pass
    client.config_set("slowlog-max-len", 100_000)
    client.slowlog_reset()
    client.config_resetstat()
    start = time.perf_counter()
    try:
        removed: int | str = store.delete_namespace(("big",))
    except StoreConnectionError as exc:  # the client's socket timeout: the server goes on deleting
        removed = type(exc).__name__
    wait_until_free(client)
    wall = time.perf_counter() - start
    log = client.slowlog_get(100_000)
    calls = client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    for name, value in old.items():
        client.config_set(name, value)
    scripts = [e["duration"] for e in log if e["command"].split()[0].upper() == b"EVALSHA"]
    longest = max(scripts, default=0) / 1000
    median = statistics.median(scripts) / 1000 if scripts else 0.0
    over = sum(d > 50_000 for d in scripts)
    return {
        "removed": removed,
        "calls": calls,
        "longest_ms": longest,
        "median_ms": median,
        "over_50ms": over,
        "wall_s": wall,
    }


def run(mode: str, n: int, batch: int, index: bool) -> dict[str, Any]:
    """One load and delete on a fresh prefix of this process's server of ``mode``."""
    client = redis.Redis.from_url(servers.redis_url(modules=mode == "query_engine"))
    spec = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]} if index else None
    store = RedisStore(client, prefix=f"b{uuid.uuid4().hex[:8]}", mode=mode, index=spec)  # type: ignore[arg-type]
    store.setup()
    saved = redis_namespaces.DROP_BATCH
    redis_namespaces.DROP_BATCH = batch
    try:
        loaded = load(store, n)
        result = timed_drop(client, store)
        left = store.count(("big",))
    finally:
        redis_namespaces.DROP_BATCH = saved
        client.close()
    return {"mode": mode, "batch": batch, "load_s": loaded, "left": left, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--modes", default="plain,query_engine")
    parser.add_argument("--index", action="store_true", help="16-d vectors on every item")
    parser.add_argument("--one-call", action="store_true", help="also with every item in one call")
    parser.add_argument("--batches", default="", help="batch sizes to try instead of the default")
    parser.add_argument(
        "--quick", action="store_true", help="CI: 2,000 items with vectors, batched and one call"
    )
    args = parser.parse_args()
    if args.quick:
        args.n, args.index, args.one_call = 2000, True, True
    batches = [int(b) for b in args.batches.split(",")] if args.batches else []
    batches = (batches or [redis_namespaces.DROP_BATCH]) + ([args.n + 1] if args.one_call else [])
    print(f"n {args.n}, index {args.index}, default batch {redis_namespaces.DROP_BATCH}")
    print(
        "| mode | batch | script calls | longest call ms | median of calls >= 1 ms |"
        " calls > 50 ms | total s | deleted | left |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in args.modes.split(","):
        for batch in batches:
            r = run(mode, args.n, batch, args.index)
            print(
                f"| {mode} | {r['batch']} | {r['calls']} | {r['longest_ms']:.1f} | "
                f"{r['median_ms']:.1f} | {r['over_50ms']} | "
                f"{r['wall_s']:.2f} | {r['removed']} | {r['left']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
