"""Side by side: the Redis store's own RESP writer against redis-py's public ``pack_commands``.

The number kept beside ``langmem_adapters.redis.connection._packed``: per-operation time of
``RedisStore.put`` and ``get`` (plain mode, a 3-field value) with each writer, interleaved runs,
best of each. Without hiredis only (with it, redis-py's ``pack_commands`` uses hiredis and so does
the store). ``--quick`` runs 3 short rounds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

import langmem_adapters.redis.connection as wire
from langmem_adapters.redis import RedisStore
from tests import servers

VALUE = {"text": "the user prefers tea in the morning and coffee after lunch", "n": 3, "tags": ["a"]}


def _timed(store: RedisStore, n: int) -> tuple[float, float]:
    """Microseconds per put and per get over ``n`` of each."""
    start = time.perf_counter()
    for i in range(n):
        store.put(("users", "u1", "facts"), f"k{i % 200}", VALUE)
    put = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(n):
        store.get(("users", "u1", "facts"), f"k{i % 200}")
    get = time.perf_counter() - start
    return put / n * 1e6, get / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if wire.HIREDIS_AVAILABLE:
        print("hiredis is installed: both paths are redis-py's pack_commands; nothing to compare")
        return
    rounds, n = (3, 300) if args.quick else (9, 2000)
    client = redis.Redis.from_url(servers.redis_url(False), max_connections=64)
    store = RedisStore(client, prefix="packbench", mode="plain")
    store.setup()
    names: Any = wire._names_encoding
    best: dict[str, list[float]] = {"ours": [1e9, 1e9], "pack_commands": [1e9, 1e9]}
    for _ in range(rounds):
        for path in best:
            wire._names_encoding = names if path == "ours" else (lambda encoder: False)
            put, get = _timed(store, n)
            best[path] = [min(best[path][0], put), min(best[path][1], get)]
    wire._names_encoding = names
    for path, (put, get) in best.items():
        print(f"{path:>14}: put {put:6.1f} us  get {get:6.1f} us")
    ours, public = best["ours"], best["pack_commands"]
    print(f"ours / pack_commands: put {ours[0] / public[0]:.2f}x, get {ours[1] / public[1]:.2f}x")


if __name__ == "__main__":
    main()
