"""Stores made from a URL under langgraph's large-batch load: 60,000 operations gathered at once on
the async stores (10,000 rounds of put / get / list_namespaces / search / put / delete, the shape of
langgraph's own ``test_large_batches_async``), and the same rounds from 64 threads on the sync ones.
Every operation completes (no connect or pool timeout) and every result and write is checked.

Reads go to namespaces nobody writes during the load, and every written namespace keeps an item
throughout, so each result is known in advance although the operations run concurrently.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from langgraph.store.base import PutOp

from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests import servers

ROUNDS, DEPTHS, THREADS = 10_000, 10, 64
READ = [("test", "ro", "0"), ("test", "ro", "1")]
WRITE = [("test", "foo", "bar", "baz", "0"), ("test", "foo", "bar", "baz", "1")]


def seed_ops(rounds: int) -> list[PutOp]:
    """What the load reads, an item per written namespace that stays, and the items it deletes."""
    ops = [PutOp(ns, f"r{j}", {"j": j}) for ns in READ for j in range(3)]
    ops += [PutOp(ns, "keep", {"keep": True}) for ns in WRITE]
    return ops + [PutOp(WRITE[r % 2], f"c{r}", {"doomed": r}) for r in range(rounds)]


def expected_namespaces(depth: int) -> list[tuple[str, ...]]:
    return sorted({ns[:depth] for ns in READ + WRITE})


def check_round(r: int, results: list[Any]) -> None:
    """The six results of round ``r``: put, get, list_namespaces, search, put, delete."""
    put_a, got, listed, found, put_b, deleted = results
    assert put_a is None and put_b is None and deleted is None
    assert got is not None and got.value == {"j": r % 3}
    assert listed == expected_namespaces(r % DEPTHS + 1)
    assert sorted(i.key for i in found) == ["r0", "r1", "r2"]


def check_final(items: list[Any], rounds: int) -> None:
    """Every write of the load landed: both puts of each round, and its delete."""
    written = {(tuple(i.namespace), i.key): i.value for i in items if tuple(i.namespace) in WRITE}
    want: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {
        (ns, "keep"): {"keep": True} for ns in WRITE
    }
    for r in range(rounds):
        want[(WRITE[r % 2], f"a{r}")] = {"a": r}
        want[(WRITE[r % 2], f"b{r}")] = {"b": r}
    assert written == want


def round_ops(r: int) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """Round ``r`` as (method, args, kwargs): the sync names; the async store gets ``a<method>``."""
    ns, ro = WRITE[r % 2], READ[r % 2]
    return [
        ("put", (ns, f"a{r}", {"a": r}), {}),
        ("get", (ro, f"r{r % 3}"), {}),
        ("list_namespaces", (), {"prefix": None, "max_depth": r % DEPTHS + 1, "limit": 100}),
        ("search", (ro,), {"limit": 10}),
        ("put", (ns, f"b{r}", {"b": r}), {}),
        ("delete", (ns, f"c{r}"), {}),
    ]


@asynccontextmanager
async def async_store(kind: str) -> AsyncIterator[Any]:
    """A store made from a URL: the Redis ones through ``from_conn_string`` and the constructor."""
    prefix = f"load{uuid.uuid4().hex[:8]}"
    if kind == "postgres":
        async with AsyncPostgresStore.from_conn_string(
            servers.postgres_dsn(), table_prefix="load"
        ) as pg:
            await pg.setup()
            await pg.adelete_namespace(("test",))
            yield pg
    elif kind == "redis-qe":
        url = servers.redis_url(modules=True)
        async with AsyncRedisStore.from_conn_string(url, prefix=prefix) as rs:
            yield rs
    else:
        async with AsyncRedisStore(servers.redis_url(modules=False), prefix=prefix) as rs:
            yield rs


@contextmanager
def sync_store(kind: str) -> Iterator[Any]:
    prefix = f"load{uuid.uuid4().hex[:8]}"
    if kind == "postgres":
        with PostgresStore.from_conn_string(
            servers.postgres_dsn(), pool_config={"max_size": 8}, table_prefix="load"
        ) as pg:
            pg.setup()
            pg.delete_namespace(("test",))
            yield pg
    elif kind == "redis-qe":
        with RedisStore.from_conn_string(servers.redis_url(modules=True), prefix=prefix) as rs:
            yield rs
    else:
        with RedisStore(servers.redis_url(modules=False), prefix=prefix) as rs:
            yield rs


KINDS = ["postgres", "redis-qe", "redis-plain"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "rounds",
    # The whole 60,000 takes 30-150 s on a busy 2-core machine; 1,000 rounds keep the checks in
    # every run.
    [1_000, pytest.param(ROUNDS, marks=pytest.mark.slow)],
)
async def test_gathered_operations(kind: str, rounds: int) -> None:
    async with async_store(kind) as store:
        seed = seed_ops(rounds)
        for i in range(0, len(seed), 2000):
            await store.abatch(seed[i : i + 2000])
        coros = [
            getattr(store, f"a{name}")(*args, **kwargs)
            for r in range(rounds)
            for name, args, kwargs in round_ops(r)
        ]
        assert len(coros) == 6 * rounds
        results = await asyncio.gather(*coros)
        for r in range(rounds):
            check_round(r, results[6 * r : 6 * r + 6])
        check_final([i async for i in store.aiter_items(("test",))], rounds)


@pytest.mark.parametrize("kind", KINDS)
def test_sixty_four_threads(kind: str) -> None:
    rounds = THREADS * 20
    failures: list[BaseException] = []
    with sync_store(kind) as store:
        store.batch(seed_ops(rounds))

        def worker(t: int) -> None:
            try:
                for r in range(t, rounds, THREADS):
                    results = [getattr(store, n)(*a, **k) for n, a, k in round_ops(r)]
                    check_round(r, results)
            except BaseException as exc:  # reported below, with the thread's traceback
                failures.append(exc)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures, failures[:3]
        check_final(list(store.iter_items(("test",))), rounds)
