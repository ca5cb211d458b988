"""Shared fixtures: every store of this package (and InMemoryStore as a reference) behind one factory.

``make_store(index=None, ttl=None)`` returns a fresh, empty sync store of the parametrised backend;
``await make_astore(index=None, ttl=None)`` is its async twin. Tests that need what only our stores
have (TTL, ...) are marked ``ours_only`` (tests/stores.py) and never run on InMemoryStore. Servers come
from ``tests/servers.py`` (environment variables or started here).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import psycopg
import pytest
import redis
import redis.asyncio as aredis
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests import servers
from tests.stores import BACKENDS, OURS, AsyncStoreFactory, StoreFactory, reset_postgres


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "ours_only(why): run over this package's stores only (tests/stores.py)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked ``ours_only`` are parametrised over our stores, not InMemoryStore (a
    ``parametrize`` mark, so that it takes precedence over the ``backend`` fixture's params)."""
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("ours_only"):
        metafunc.definition.add_marker(pytest.mark.parametrize("backend", OURS, indirect=True))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without ``--runslow``, tests marked ``slow`` are deselected (counted as such, not as skips:
    a skip means a server, tool or key is missing)."""
    if config.getoption("--runslow"):
        return
    slow = [item for item in items if "slow" in item.keywords]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _redis_prefix() -> str:
    """A fresh key prefix per store: tests share one Redis without FLUSHALL."""
    return f"t{uuid.uuid4().hex[:12]}"


def _memory(index: dict[str, Any] | None, ttl: dict[str, Any] | None) -> BaseStore:
    if ttl is not None:
        raise AssertionError("InMemoryStore has no TTL: mark the test ours_only")
    return InMemoryStore(index=index)  # type: ignore[arg-type]


@pytest.fixture
def make_store(backend: str) -> Iterator[StoreFactory]:
    """Factory for fresh sync stores of the parametrised backend."""
    closers: list[Callable[[], None]] = []

    def factory(
        *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None
    ) -> BaseStore:
        if backend == "memory":
            return _memory(index, ttl)
        if backend == "postgres":
            dsn = servers.postgres_dsn()
            first = not closers
            conn = psycopg.connect(dsn, autocommit=True)
            closers.append(conn.close)
            store = PostgresStore(conn, index=index, ttl=ttl)  # type: ignore[arg-type]
            store.setup()
            if first:
                reset_postgres(dsn)
            closers.insert(0, store.stop_ttl_sweeper)
            return store
        if backend.startswith("redis"):
            client = redis.Redis.from_url(servers.redis_url(modules=backend == "redis-qe"))
            closers.append(client.close)
            mode = "query_engine" if backend == "redis-qe" else "plain"
            rstore = RedisStore(client, index=index, ttl=ttl, prefix=_redis_prefix(), mode=mode)  # type: ignore[arg-type]
            rstore.setup()
            closers.insert(0, rstore.stop_ttl_sweeper)
            return rstore
        raise AssertionError(backend)

    yield factory
    for close in closers:
        close()


@pytest.fixture
async def make_astore(backend: str) -> AsyncIterator[AsyncStoreFactory]:
    """Factory for fresh async stores of the parametrised backend (``await make_astore(...)``)."""
    closers: list[Callable[[], Awaitable[Any]]] = []

    async def factory(
        *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None
    ) -> BaseStore:
        if backend == "memory":
            return _memory(index, ttl)
        if backend == "postgres":
            dsn = servers.postgres_dsn()
            first = not closers
            conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
            closers.append(conn.close)
            store = AsyncPostgresStore(conn, index=index, ttl=ttl)  # type: ignore[arg-type]
            await store.setup()
            if first:
                reset_postgres(dsn)
            closers.insert(0, store.stop_ttl_sweeper)
            return store
        if backend.startswith("redis"):
            pool = aredis.BlockingConnectionPool.from_url(
                servers.redis_url(modules=backend == "redis-qe")
            )
            client = aredis.Redis.from_pool(pool)
            closers.append(client.aclose)
            mode = "query_engine" if backend == "redis-qe" else "plain"
            rstore = AsyncRedisStore(
                client, index=index, ttl=ttl, prefix=_redis_prefix(), mode=mode
            )  # type: ignore[arg-type]
            await rstore.setup()
            closers.insert(0, rstore.stop_ttl_sweeper)
            return rstore
        raise AssertionError(backend)

    yield factory
    for close in closers:
        await close()
