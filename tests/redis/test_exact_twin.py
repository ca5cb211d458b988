"""Exact vector search on the Query Engine through the index's FLAT twin (``redis/schema.py``), an
index made without one, and the calibration probe's replies (a partial reply of a query that ran
out of the server's time, a concurrent delete)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.core.drive import drive
from langmem_adapters.errors import ServerRefusedError
from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.probe import RedisProbe
from langmem_adapters.redis.schema import EXACT_TWIN, has_attribute
from tests import servers
from tests.calibration_data import DATA, DIMS, QUERIES, TableEmbeddings
from tests.waiting import wait_until

N = 2000  # within the cold line: a fresh store searches exactly


def _index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": TableEmbeddings(), "fields": ["t"]}


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(servers.redis_url(modules=True))
    yield conn
    conn.close()


def _store(client: redis.Redis, prefix: str) -> RedisStore:
    store = RedisStore(client, index=_index(), prefix=prefix)  # type: ignore[arg-type]
    store.setup()
    return store


def _exact(q: int, rows: np.ndarray) -> list[str]:
    """numpy's cosine top 10 of query ``q`` among ``rows`` (item keys)."""
    data = DATA[rows] / np.linalg.norm(DATA[rows], axis=1, keepdims=True)
    sims = data @ (QUERIES[q] / np.linalg.norm(QUERIES[q]))
    return [str(rows[i]) for i in np.argsort(-sims)[:10]]


def _load(store: RedisStore) -> None:
    store.batch([PutOp(("docs", f"u{i % 4}"), str(i), {"t": f"x:{i}"}) for i in range(N)])


def _keys(store: RedisStore, prefix: tuple[str, ...], q: int) -> list[str]:
    return [r.key for r in store.search(prefix, query=f"q:{q}", limit=10)]


def test_exact_searches_read_the_twin_and_match_numpy(client: redis.Redis) -> None:
    store = _store(client, f"twin{uuid.uuid4().hex[:8]}")
    _load(store)
    assert store.index_spec is not None
    assert has_attribute(
        client.execute_command("FT.INFO", store.keys.index(store.index_spec)), EXACT_TWIN
    )
    every, u1 = np.arange(N), np.arange(1, N, 4)
    for q in range(5):
        assert _keys(store, ("docs",), q) == _exact(q, every)  # the prefix holding the index
        assert _keys(store, ("docs", "u1"), q) == _exact(q, u1)
        assert _keys(store, (), q) == _exact(q, every)


def test_a_prefix_counted_whole_is_checked_on_the_rows(client: redis.Redis) -> None:
    """("docs",) held every vector when counted; an item put elsewhere since (the count is re-read
    once a minute), as near as the nearest, stays out of ("docs",)'s answers."""
    store = _store(client, f"twin{uuid.uuid4().hex[:8]}")
    _load(store)
    top = _exact(0, np.arange(N))
    assert _keys(store, ("docs",), 0) == top  # counts read: ("docs",) holds the whole index
    store.put(("other",), "near", {"t": f"x:{top[0]}"})  # a copy of the nearest vector
    assert _keys(store, ("docs",), 0) == top
    assert set(_keys(store, (), 0)[:2]) == {top[0], "near"}


def test_an_index_made_without_the_twin_searches_exactly(client: redis.Redis) -> None:
    prefix = f"twin{uuid.uuid4().hex[:8]}"
    first = _store(client, prefix)
    _load(first)
    assert first.index_spec is not None
    name = first.keys.index(first.index_spec)
    info = client.execute_command("FT.INFO", name)
    client.execute_command("FT.DROPINDEX", name)  # the documents stay
    schema = ["$.p[*]", "AS", "p", "TAG", "$.t[*]", "AS", "t", "TAG", "$.e[*]", "AS", "e"]
    schema += ["VECTOR", "HNSW", 10, "TYPE", "FLOAT32", "DIM", DIMS, "DISTANCE_METRIC", "COSINE"]
    schema += ["M", 16, "EF_CONSTRUCTION", 64]
    prefixes = info[b"index_definition"][b"prefixes"]
    client.execute_command(
        "FT.CREATE", name, "ON", "JSON", "PREFIX", 1, *prefixes, "SCHEMA", *schema
    )

    def built() -> bool:
        got = client.execute_command("FT.INFO", name)
        return float(got[b"percent_indexed"]) >= 1 and int(got[b"num_docs"]) == N

    wait_until(built, what="the index without a twin scanned the documents")
    store = _store(client, prefix)  # a new instance over the index made before
    assert not has_attribute(client.execute_command("FT.INFO", name), EXACT_TWIN)
    for q in range(3):
        assert _keys(store, ("docs",), q) == _exact(q, np.arange(N))
        assert _keys(store, ("docs", "u2"), q) == _exact(q, np.arange(2, N, 4))


def _probe(store: RedisStore) -> RedisProbe:
    probe = store._probe()
    assert probe is not None
    return probe


def test_a_query_out_of_the_servers_time_fails_the_check_not_the_parse(
    client: redis.Redis,
) -> None:
    """A KNN query past the server's TIMEOUT (ON_TIMEOUT return) answers a partial list whose rows
    have no distance: the probe raises ServerRefusedError (it used to raise KeyError 'd'), which
    fails the check (kept as ``last_error``) rather than measure on a partial answer."""
    store = _store(client, f"twin{uuid.uuid4().hex[:8]}")
    store.batch([PutOp(("docs",), str(i), {"t": f"x:{i}"}) for i in range(len(DATA))])
    probe = _probe(store)
    queries = [QUERIES[q].tolist() for q in range(20)]
    with store._session() as execute:
        assert drive(probe.count(), execute) == len(DATA)
    old = client.execute_command("FT.CONFIG", "GET", "TIMEOUT")
    client.execute_command("FT.CONFIG", "SET", "TIMEOUT", 1)
    try:
        with pytest.raises(ServerRefusedError, match="partial"), store._session() as execute:
            drive(probe.ann(queries, len(DATA), probe.max_breadth), execute)  # every row
    finally:
        client.execute_command("FT.CONFIG", "SET", "TIMEOUT", old[b"TIMEOUT"])


def test_the_probe_reads_its_replies_while_items_are_deleted(client: redis.Redis) -> None:
    """Exact and HNSW rounds of the probe while another connection deletes the items: every hit
    has its distance, and none is an item deleted before the round began."""
    store = _store(client, f"twin{uuid.uuid4().hex[:8]}")
    _load(store)
    probe = _probe(store)
    queries = [QUERIES[q].tolist() for q in range(20)]
    deleter = RedisStore(
        redis.Redis.from_url(servers.redis_url(modules=True)),  # type: ignore[arg-type]
        index=_index(),
        prefix=store.keys.prefix,
    )
    deleted = [0]

    def delete() -> None:
        for start in range(0, N, 10):
            ops = [PutOp(("docs", f"u{i % 4}"), str(i), None) for i in range(start, start + 10)]
            deleter.batch(ops)
            deleted[0] = start + 10

    worker = threading.Thread(target=delete)
    worker.start()
    rounds = 0
    try:
        while worker.is_alive() or rounds == 0:
            gone = deleted[0]
            with store._session() as execute:
                drive(probe.count(), execute)
                found = drive(probe.exact(queries, 10), execute)
                found += drive(probe.ann(queries, 10, 100), execute)
            for hits in found:
                for doc, distance in hits:
                    assert isinstance(distance, float)
                    assert int(doc.rsplit(":", 1)[1]) >= gone, doc
            rounds += 1
    finally:
        worker.join()
    assert rounds > 1
