"""The physical limit of a put and a get, for ``bench_scale``'s ratios: the bare statement or
command our store sends, next to our store's put and get on the same server in the same run.

Postgres: the very statements our store sends (built by its own builders), through psycopg with
``prepare=True``. Redis: one three-field ``HSET`` of the item's hash and the ``HMGET`` our get sends,
and three more bare puts (:func:`bare_redis_same_work`) for what our put does beyond that ``HSET``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import psycopg
import redis
from langgraph.store.base import GetOp

from benchmarks import bench_postgres as bench
from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.ops import Write
from langmem_adapters.postgres import PostgresStore as OursPostgres
from langmem_adapters.postgres.search import get_statement
from langmem_adapters.postgres.writes import write_statements
from langmem_adapters.redis import RedisStore as OursRedis
from langmem_adapters.redis.layout import NO_EXPIRY
from langmem_adapters.redis.scripts import SCRIPTS, SHA
from langmem_adapters.redis.writes import put_entry, write_rounds

__all__ = ["Bare", "bare_postgres", "bare_redis", "bare_redis_same_work"]

#: A bare put, a bare get (each ``(i, item)``) and the closing of their connection.
Bare = tuple[
    Callable[[int, bench.Item], None], Callable[[int, bench.Item], None], Callable[[], None]
]


def bare_postgres(store: OursPostgres, dsn: str) -> Bare:
    """A put and a get as the bare prepared statements our store sends for them, one round trip
    each on one autocommit connection (the physical limit of a put and a get)."""
    conn = psycopg.connect(bench.schema_dsn(dsn, bench.SCHEMA), autocommit=True)

    def put(i: int, item: bench.Item) -> None:
        ns, key, value = item
        w = Write(ns, key, value, json.dumps(value), None, None)
        (st,), _ = write_statements(store.tables, None, [w], {})
        conn.execute(st.sql, st.params, prepare=True)

    def get(i: int, item: bench.Item) -> None:
        st = get_statement(store.tables, [(0, GetOp(item[0], item[1]))])
        conn.execute(st.sql, st.params, prepare=True).fetchall()

    return put, get, conn.close


def bare_redis(store: OursRedis, url: str) -> Bare:
    """A put as one ``HSET`` of the item's hash fields and a get as the ``HMGET`` our get sends."""
    client = redis.Redis.from_url(url)

    def put(i: int, item: bench.Item) -> None:
        ns, key, value = item
        stamp = time.time_ns() // 1000
        client.hset(
            store.keys.item(nsp.join(ns), key),
            mapping={"m": json.dumps(value), "c": stamp, "u": stamp},
        )

    def get(i: int, item: bench.Item) -> None:
        client.hmget(store.keys.item(nsp.join(item[0]), item[1]), "m", "c")

    return put, get, client.close


def bare_redis_same_work(
    store: OursRedis, url: str
) -> dict[str, Callable[[int, bench.Item], None]]:
    """Three more bare puts, for what ours does beyond one ``HSET`` of three fields: ``same hash``
    is one ``HSET`` of the very fields our put stores (built by its own encoder: the meta, created,
    updated and expiry, and the namespace and value tags the Query Engine indexes); ``atomic`` adds
    the namespace bookkeeping our script does (the item's ZSET entry and the registry entry, with
    their expiries) as one ``MULTI``/``EXEC`` of the same commands, without the script's read of
    the stored item (which keeps ``created_at``); ``same command`` is the very ``EVALSHA`` of the
    write script our put sends, its arguments built by our builders, sent through redis-py: the
    measure Postgres's bare statement and the Redis get's ``HMGET`` are, what our layers cost."""
    client = redis.Redis.from_url(url)
    mode = store.mode or "query_engine"

    def fields(ns_text: str, item: bench.Item) -> tuple[str, dict[str, Any]]:
        ns, key, value = item
        now = time.time_ns() // 1000
        w = Write(ns, key, value, json.dumps(value), None, None)
        _, _, x, meta, *tags = put_entry(mode, ns_text, w, now, [], "p").args
        hash_ = {"m": meta, "c": now, "x": x, "u": now}
        return store.keys.item(ns_text, key), {**hash_, **dict(zip(("p", "t"), tags))}

    def same_hash(i: int, item: bench.Item) -> None:
        key, mapping = fields(nsp.join(item[0]), item)
        client.hset(key, mapping=mapping)

    def atomic(i: int, item: bench.Item) -> None:
        ns_text = nsp.join(item[0])
        key, mapping = fields(ns_text, item)
        zset = store.keys.zset(ns_text)
        pipe = client.pipeline(transaction=True)
        pipe.hset(key, mapping=mapping)
        pipe.zadd(zset, {key: NO_EXPIRY})
        pipe.persist(zset)
        pipe.zadd(store.keys.registry, {ns_text: NO_EXPIRY})
        pipe.persist(store.keys.registry)
        pipe.execute()

    def same_command(i: int, item: bench.Item) -> None:
        ns, key, value = item
        ns_text, now = nsp.join(ns), time.time_ns() // 1000
        w = Write(ns, key, value, json.dumps(value), None, None)
        entry = put_entry(mode, ns_text, w, now, [], "p")
        (request,) = write_rounds(store.keys, mode, now, [entry], False)
        (call,) = request.calls
        client.evalsha(SHA["write"], len(call.keys), *call.keys, *call.args)

    client.script_load(SCRIPTS["write"])
    return {
        "bare put (same hash)": same_hash,
        "bare put (atomic)": atomic,
        "bare put (same command)": same_command,
    }
