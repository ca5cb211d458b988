"""Read replicas: a real hot standby of the test PostgreSQL (``pg_basebackup`` from the embedded
server's own binaries, see ``tests/servers.py``) serves the stores' reads; writes and TTL refreshes
go to the primary; the store reads its own writes while the standby lags (replay paused) and keeps
answering when the standby is killed, then uses it again once it is back.

Each test runs on the sync store (its async methods run the sync ones in a thread) and on the async
store, with a table prefix of its own on the shared primary.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
import pytest

from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from tests import servers
from tests.waiting import await_until

NS = ("docs",)
Store = PostgresStore | AsyncPostgresStore


@pytest.fixture(scope="module")
def standby() -> Iterator[tuple[str, str, servers.PostgresReplica | None]]:
    """(primary DSN, standby DSN, the standby's process when started here)."""
    primary, replica, proc = servers.postgres_replica()
    yield primary, replica, proc
    if proc is not None:
        proc.close()


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def open_store(kind: str, primary: str, replica: str, **options: Any) -> AsyncIterator[Store]:
    """A set-up store on ``primary`` reading from ``replica``, with a table prefix of its own."""
    prefix = f"rep{uuid.uuid4().hex[:10]}"
    if kind == "sync":
        with PostgresStore.from_conn_string(
            primary, replicas=[replica], table_prefix=prefix, **options
        ) as store:
            store.setup()
            yield store
    else:
        async with AsyncPostgresStore.from_conn_string(
            primary, replicas=[replica], table_prefix=prefix, **options
        ) as astore:
            await astore.setup()
            yield astore


@contextmanager
def replay_paused(replica: str) -> Iterator[None]:
    """The standby receives WAL but applies none of it (a lagging replica) until the block ends."""
    with psycopg.connect(replica, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        servers.wait_on_standby(replica, "SELECT pg_get_wal_replay_pause_state() = 'paused'")
        try:
            yield
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")


def replica_reads(store: Store) -> int:
    return store.read_stats.replicas[0].reads


async def value(store: Store, key: str) -> Any:
    item = await store.aget(NS, key)
    return None if item is None else item.value


async def test_reads_are_served_by_the_replica(kind: str, standby: Any) -> None:
    """While replay is paused, a write by another client is on the primary only: the store's get,
    search, list_namespaces and count still answer the replica's older state."""
    primary, replica, _ = standby
    async with open_store(kind, primary, replica) as store:
        await store.aput(NS, "a", {"v": 1})
        servers.replayed(primary, replica)
        assert await value(store, "a") == {"v": 1}
        with replay_paused(replica):
            with PostgresStore.from_conn_string(primary, table_prefix=store.tables.prefix) as other:
                other.put(NS, "a", {"v": 2})
                other.put(("elsewhere",), "b", {"v": 3})
            before = store.read_stats
            assert await value(store, "a") == {"v": 1}
            assert [i.value for i in await store.asearch(NS)] == [{"v": 1}]
            assert await store.alist_namespaces() == [NS]
            assert await store.acount(()) == 1
            after = store.read_stats
            assert after.primary == before.primary
            assert replica_reads(store) >= before.replicas[0].reads + 4
        servers.replayed(primary, replica)
        # The lag is over: the other client's writes show.
        assert await value(store, "a") == {"v": 2}
        assert await store.acount(()) == 2


async def test_reads_see_the_stores_own_writes_while_the_replica_lags(
    kind: str, standby: Any
) -> None:
    """Replay paused: every read after the store's own write answers that write (from the
    primary); once the replica has replayed it, reads go back to the replica."""
    primary, replica, _ = standby
    async with open_store(kind, primary, replica) as store:
        await store.aput(NS, "a", {"v": 0})
        servers.replayed(primary, replica)
        assert await value(store, "a") == {"v": 0}
        with replay_paused(replica):
            for i in range(1, 4):
                await store.aput(NS, "a", {"v": i})
                await store.aput(NS, f"k{i}", {"v": i})
                assert await value(store, "a") == {"v": i}
                assert {x.key for x in await store.asearch(NS)} >= {"a", f"k{i}"}
                assert await store.acount(NS) == 1 + i
            await store.adelete(NS, "a")
            assert await value(store, "a") is None
            assert store.read_stats.replicas[0].behind >= 1
        servers.replayed(primary, replica)
        served = replica_reads(store)
        assert await value(store, "a") is None
        assert await value(store, "k3") == {"v": 3}
        assert replica_reads(store) == served + 2


async def test_ttl_refreshes_go_to_the_primary(kind: str, standby: Any) -> None:
    """A get served by the replica refreshes the item's expiry on the primary (a hot standby would
    refuse the UPDATE)."""
    primary, replica, _ = standby
    ttl = {"default_ttl": 10.0, "refresh_on_read": True}
    async with open_store(kind, primary, replica, ttl=ttl) as store:
        await store.aput(NS, "a", {"v": 1})
        table = f"{store.tables.prefix}_store"
        with psycopg.connect(primary, autocommit=True) as conn:

            def expiry() -> Any:
                row = conn.execute(f"SELECT expires_at FROM {table} WHERE key = 'a'").fetchone()
                return row[0] if row else None

            for _ in range(3):
                servers.replayed(primary, replica)
                before, served = expiry(), replica_reads(store)
                assert await value(store, "a") == {"v": 1}
                assert replica_reads(store) == served + 1
                assert expiry() > before
        # Never tried on the replica (where it would fail) nor counted as a read on the primary.
        stats = store.read_stats
        assert stats.replicas[0].failures == 0 and stats.primary == 0


@pytest.mark.parametrize("pooled", [False, True], ids=["own-connection", "pool"])
async def test_a_replica_that_goes_away(kind: str, pooled: bool, standby: Any) -> None:
    """Killed mid-use, the replica costs the caller nothing: reads are answered (correctly) by the
    primary, and once it is back the store reads from it again (its own connection reopened, or
    its pool reconnected)."""
    primary, replica, proc = standby
    if proc is None:
        pytest.skip("the standby named by LANGMEM_TEST_POSTGRES_REPLICA_DSN cannot be killed here")
    options: dict[str, Any] = {"pool_config": {"max_size": 2}} if pooled else {}
    async with open_store(kind, primary, replica, replica_retry=0.2, **options) as store:
        await store.aput(NS, "a", {"v": 1})
        servers.replayed(primary, replica)
        assert await value(store, "a") == {"v": 1}
        proc.kill()
        try:
            for i in range(2, 5):
                assert await value(store, "a") == {"v": i - 1}
                await store.aput(NS, "a", {"v": i})
                assert [x.value for x in await store.asearch(NS)] == [{"v": i}]
            stats = store.read_stats.replicas[0]
            assert stats.failures >= 1
        finally:
            proc.start()
        served = replica_reads(store)
        await _wait(lambda: replica_reads(store) > served, store)
        assert await value(store, "a") == {"v": 4}


async def _wait(condition: Any, store: Store, timeout: float = 30) -> None:
    """Read until ``condition()`` holds (the store tries the replica again on its own)."""

    async def read_again() -> bool:
        if condition():
            return True
        await value(store, "a")
        return bool(condition())

    await await_until(read_again, timeout, "the store reading from the replica again", 0.05)


async def test_a_replica_that_is_down_from_the_start(kind: str, standby: Any) -> None:
    """A replica that refuses connections when the store opens: the store opens and answers from
    the primary."""
    primary, _, _ = standby
    dead = f"postgresql://postgres@127.0.0.1:{servers.free_port()}/postgres"
    async with open_store(kind, primary, dead) as store:
        await store.aput(NS, "a", {"v": 1})
        for _ in range(3):
            assert await value(store, "a") == {"v": 1}
        stats = store.read_stats
        assert stats.primary >= 3 and stats.replicas[0].reads == 0
        assert not stats.replicas[0].up


def test_connections_passed_in_not_in_autocommit_mode(standby: Any) -> None:
    """A store made from the caller's own connections (not in autocommit mode): reads from the
    replica, its own writes read back while replay is paused, and no transaction left open."""
    primary, replica, _ = standby
    with psycopg.connect(primary) as pconn, psycopg.connect(replica) as rconn:
        store = PostgresStore(pconn, replicas=[rconn], table_prefix=f"rep{uuid.uuid4().hex[:10]}")
        store.setup()
        store.put(NS, "a", {"v": 1})
        servers.replayed(primary, replica)
        assert store.get(NS, "a").value == {"v": 1}  # type: ignore[union-attr]
        with replay_paused(replica):
            store.put(NS, "a", {"v": 2})
            assert store.get(NS, "a").value == {"v": 2}  # type: ignore[union-attr]
        stats = store.read_stats
        assert stats.replicas[0].reads >= 1 and stats.replicas[0].failures == 0
        idle = psycopg.pq.TransactionStatus.IDLE
        assert pconn.info.transaction_status == idle and rconn.info.transaction_status == idle
