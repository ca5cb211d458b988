"""Side by side: the sync Redis store's wire path (``redis/connection.Wire``) against plain redis-py.

The numbers kept beside ``Wire`` and ``_packed`` (and in docs/architecture.md). Paths, on one
store and one server, swapped between interleaved runs:

- ``ours``: ``Wire`` as shipped: a kept connection, RESP written by ``_pack_text`` without hiredis;
- ``checkout``: a pooled connection checked out and released every round (our writer);
- ``packcmds``: the kept connection, commands packed by redis-py's public ``pack_commands``;
- ``pipeline``: every round as ``client.pipeline(transaction=False)``, redis-py's own packing (what
  the async store and a Cluster store send).

Per operation, best of the runs, wall time and the client's CPU time (steadier on a loaded machine):
single puts, batches of 10 and 100 puts, gets, and filtered searches over 10k items (Query Engine);
plain mode too. Without hiredis; with it, ``_packed`` uses ``pack_commands`` (which uses hiredis).
``--quick``: 2 short rounds over 2k items.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import redis
from langgraph.store.base import PutOp

from langmem_adapters.redis import RedisStore
from langmem_adapters.redis import connection as wire
from langmem_adapters.redis.scripts import Round
from tests import servers


def _value(i: int) -> dict[str, Any]:
    """A small memory: text, a kind to filter on, a number."""
    return {
        "text": f"the user prefers tea number {i}",
        "kind": "fact" if i % 3 else "pref",
        "n": i % 7,
    }


def _pack_commands(store: RedisStore) -> Callable[[Round], list[Any]]:
    """``Wire``'s own send, packing with redis-py's ``pack_commands`` instead of our writer."""
    own = store._wire._send

    def send(request: Round) -> list[Any]:
        names = wire._names_encoding
        wire._names_encoding = lambda encoder: False
        try:
            return own(request)
        finally:
            wire._names_encoding = names

    return send


def _paths(store: RedisStore) -> dict[str, Callable[[Round], list[Any]] | None]:
    """Each path's replacement for ``store._wire._send`` (``None``: the store's own)."""
    return {
        "ours": None,
        "checkout": lambda request: store._wire._send_on(
            wire._checkout(store.client.connection_pool), request, True
        ),
        "packcmds": _pack_commands(store),
        "pipeline": lambda request: wire._pipeline(store.client, request),
    }


def _workloads(store: RedisStore, n: int, qe: bool) -> dict[str, tuple[int, Callable[[int], Any]]]:
    """Workload name -> (operations a run, the operation ``op(i)``)."""
    ns = ("users", "u1", "facts")
    work: dict[str, tuple[int, Callable[[int], Any]]] = {
        "put": (n, lambda i: store.put(ns, f"k{i % 500}", _value(i))),
        "get": (n, lambda i: store.get(ns, f"k{i % 500}")),
        "batch 10 puts": (
            max(1, n // 10),
            lambda i: store.batch(
                [PutOp(ns, f"b{(i * 10 + j) % 500}", _value(j)) for j in range(10)]
            ),
        ),
        "batch 100 puts": (
            max(1, n // 50),
            lambda i: store.batch([PutOp(ns, f"c{j}", _value(i + j)) for j in range(100)]),
        ),
    }
    if qe:
        work["search, filter"] = (
            max(1, n // 5),
            lambda i: store.search(("docs", f"u{i % 50}"), filter={"kind": "fact"}, limit=10),
        )
    return work


def _load(store: RedisStore, items: int) -> None:
    """``items`` items over 50 users x 5 topic namespaces (bench_redis.py's user-prefix shape)."""
    ops = [PutOp(("docs", f"u{i % 50}", f"t{i % 5}"), f"d{i}", _value(i)) for i in range(items)]
    for start in range(0, len(ops), 500):
        store.batch(ops[start : start + 500])


def run(qe: bool, rounds: int, n: int, items: int) -> None:
    """Print the table of one mode (Query Engine or plain)."""
    url = servers.redis_url(modules=qe)
    client = redis.Redis.from_url(url)
    store = RedisStore(client, prefix=f"wire{uuid.uuid4().hex[:8]}", mode="auto" if qe else "plain")
    store.setup()
    if qe:
        _load(store, items)
    own = store._wire._send
    paths = _paths(store)
    work = _workloads(store, n, qe)
    best = {(p, w): 1e9 for p in paths for w in work}
    cpu_best = dict(best)
    order = list(paths.items())
    for r in range(rounds):
        for name, (count, op) in work.items():
            for path, send in order[r % len(order) :] + order[: r % len(order)]:
                store._wire._send = send or own  # type: ignore[method-assign, assignment]
                op(0)
                start, cpu = time.perf_counter(), time.process_time()
                for i in range(count):
                    op(i)
                best[path, name] = min(
                    best[path, name], (time.perf_counter() - start) / count * 1e6
                )
                cpu_best[path, name] = min(
                    cpu_best[path, name], (time.process_time() - cpu) / count * 1e6
                )
    store._wire._send = own  # type: ignore[method-assign]
    print(
        f"mode {'query_engine' if qe else 'plain'} (redis-py {redis.__version__}, hiredis {wire.HIREDIS_AVAILABLE})"
    )
    print(
        f"{'workload':>20} "
        + " ".join(f"{p:>10}" for p in paths)
        + "  "
        + " ".join(f"{p + '/ours':>14}" for p in list(paths)[1:])
    )
    for label, table in (("wall", best), ("client CPU", cpu_best)):
        print(label)
        for name in work:
            row = [table[p, name] for p in paths]
            print(
                f"{name:>20} "
                + " ".join(f"{t:8.1f}us" for t in row)
                + "  "
                + " ".join(f"{t / row[0]:13.2f}x" for t in row[1:])
            )
    store.close()
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, n, items = (2, 100, 2_000) if args.quick else (15, 300, 10_000)
    for qe in (True, False):
        run(qe, rounds, n, items)


if __name__ == "__main__":
    main()
