"""``PostgresStore`` and ``AsyncPostgresStore``: LangGraph ``BaseStore``s on psycopg 3 + pgvector.

Both run the same plans (:mod:`~langmem_adapters.postgres.plan`, :mod:`~langmem_adapters.postgres.export`,
:mod:`~langmem_adapters.postgres.schema`); they differ only in the session that executes a plan's rounds
(:mod:`~langmem_adapters.postgres.connection`: blocking calls, or awaits on an async connection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    AsyncExitStack,
    ExitStack,
    asynccontextmanager,
    contextmanager,
)
from typing import Any

import psycopg
from langgraph.store.base import TTLConfig
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langmem_adapters.core.async_store import AsyncStore
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.postgres.backend import PostgresBackend
from langmem_adapters.postgres.connection import (
    AsyncConnections,
    AsyncSession,
    Connections,
    Session,
)
from langmem_adapters.postgres.identity import setup_steps
from langmem_adapters.postgres.opening import (
    PoolConfig,
    PostgresIndexConfig,
    async_primary,
    async_replica,
    primary,
    replica,
    where,
)
from langmem_adapters.postgres.probe import async_calibration_session, calibration_session
from langmem_adapters.postgres.replicas import RETRY_SECONDS, Replica, Routing, check_replicas
from langmem_adapters.postgres.routed import (
    AsyncReadSession,
    AsyncWriteSession,
    ReadSession,
    WriteSession,
)
from langmem_adapters.postgres.sql import Answer, Round
from langmem_adapters.postgres.stats import PostgresStats
from langmem_adapters.postgres.writes import sweep_plan

__all__ = ["AsyncPostgresStore", "PostgresStore"]


class PostgresStore(PostgresBackend, SyncStore[PostgresStats]):
    """A LangGraph store on PostgreSQL + pgvector (psycopg 3, sync).

    ``conn`` is a ``psycopg.Connection`` (used under a lock) or a ``psycopg_pool.ConnectionPool``.
    All writes of one ``batch`` commit in one transaction; reads in a batch see the state before its
    writes. Call ``setup()`` once to create or upgrade the schema.
    """

    def __init__(
        self,
        conn: psycopg.Connection[Any] | ConnectionPool[Any],
        *,
        index: PostgresIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        table_prefix: str = "langmem",
        pipe: Any = None,
        replicas: Sequence[psycopg.Connection[Any] | ConnectionPool[Any]] = (),
        replica_retry: float = RETRY_SECONDS,
    ) -> None:
        """``replicas``: hot standbys of ``conn``'s server (connections or pools) that serve
        reads (see docs/reliability.md#read-replicas); the caller closes them. A replica whose
        connection failed is left alone for ``replica_retry`` seconds. ``pipe`` is
        accepted for compatibility with the official store and not needed: every round of a batch
        is already sent as one pipeline."""
        standbys = check_replicas(
            replicas, (psycopg.Connection, ConnectionPool), "connections or pools", replica_retry
        )
        self._connections = Connections(conn)
        routed = [Replica(Connections(r), where(r)) for r in standbys]
        self._prepare(index, ttl, table_prefix, routed, replica_retry)

    @property
    def conn(self) -> psycopg.Connection[Any] | ConnectionPool[Any]:
        """The pool, or the store's current connection (a new one after a lost one was reopened)."""
        conn = self._connections.conn
        assert conn is not None  # only a replica's opens on first use
        return conn

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: PostgresIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        pool_config: PoolConfig | None = None,
        table_prefix: str = "langmem",
        pipeline: bool = False,
        replicas: Sequence[str] = (),
        replica_retry: float = RETRY_SECONDS,
    ) -> Iterator[PostgresStore]:
        """Connect (one connection, or a pool with ``pool_config``) and yield a store; closes on exit.

        ``replicas``: connection strings of hot standbys that serve reads, each through a pool of
        ``pool_config``'s sizes (opened in the background) or else one connection (opened on first
        use): a replica that is down at start is tried again later (``replica_retry``: as in the
        constructor). A TTL sweeper starts when ``ttl["sweep_interval_minutes"]`` is set and stops
        on exit. ``pipeline`` is accepted for compatibility with the official store; batches always
        pipeline.
        """
        dsns = check_replicas(replicas, (str,), "connection strings", replica_retry)
        with ExitStack() as stack:
            standbys = [replica(dsn, pool_config, stack) for dsn in dsns]
            conn = primary(conn_string, pool_config, stack)
            store = cls(conn, index=index, ttl=ttl, table_prefix=table_prefix)
            if standbys:
                store._routing = Routing(standbys, retry=replica_retry)
            # Close the store's current connection (a reconnect may have replaced ``conn``; a pool
            # is closed by the stack).
            stack.callback(store._connections.close)
            # Before the connection closes: the sweeper and a calibration check in flight stop.
            stack.callback(store._stop_background)
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                store.setup()
                store.start_ttl_sweeper()
            yield store

    def _session(self) -> Session:
        """The connection (and transaction) of one plan run (on the primary)."""
        if self._routing is None:
            return Session(self._connections)
        return WriteSession(self._connections, self._routing, learn=True)

    def _read_session(self) -> Session | ReadSession:
        """The session of a plan that only reads: on the replicas when the store has some."""
        if self._routing is None:
            return self._session()
        return ReadSession(self._connections, self._routing)

    def _calibration_session(self) -> AbstractContextManager[Callable[[Round], Answer]]:
        """The calibration's rounds, on the pool or on a connection of its own."""
        return calibration_session(self._connections)

    def setup(self) -> None:
        """Create or upgrade tables and indexes (idempotent, safe to call concurrently)."""
        self.tables = self._run(setup_steps(self.tables, self.index_spec))
        self._guard.generation = self.tables.generation

    def sweep_ttl(self) -> int:
        """Delete expired items now and forget emptied namespaces; returns how many items went."""
        return self._run(sweep_plan(self.tables))


class AsyncPostgresStore(PostgresBackend, AsyncStore[PostgresStats]):
    """The async twin of :class:`PostgresStore` on ``psycopg.AsyncConnection`` or ``AsyncConnectionPool``.

    Sync methods work from other threads (they run on the store's event loop) and raise
    ``WrongLoopError`` (an ``asyncio.InvalidStateError``) when called on that loop, where they would
    deadlock.
    """

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any],
        *,
        index: PostgresIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        table_prefix: str = "langmem",
        pipe: Any = None,
        replicas: Sequence[psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any]] = (),
        replica_retry: float = RETRY_SECONDS,
    ) -> None:
        """``replicas``: hot standbys serving reads, as in :class:`PostgresStore`. ``pipe`` is
        accepted for compatibility with the official store and not needed."""
        standbys = check_replicas(
            replicas,
            (psycopg.AsyncConnection, AsyncConnectionPool),
            "async connections or pools",
            replica_retry,
        )
        self._connections = AsyncConnections(conn)
        routed = [Replica(AsyncConnections(r), where(r)) for r in standbys]
        self._prepare(index, ttl, table_prefix, routed, replica_retry)
        self._bind_loop()

    @property
    def conn(self) -> psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any]:
        """The pool, or the store's current connection (a new one after a lost one was reopened)."""
        conn = self._connections.conn
        assert conn is not None  # only a replica's opens on first use
        return conn

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: PostgresIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        pool_config: PoolConfig | None = None,
        table_prefix: str = "langmem",
        pipeline: bool = False,
        replicas: Sequence[str] = (),
        replica_retry: float = RETRY_SECONDS,
    ) -> AsyncIterator[AsyncPostgresStore]:
        """Async context manager twin of :meth:`PostgresStore.from_conn_string`."""
        dsns = check_replicas(replicas, (str,), "connection strings", replica_retry)
        async with AsyncExitStack() as stack:
            standbys = [await async_replica(dsn, pool_config, stack) for dsn in dsns]
            conn = await async_primary(conn_string, pool_config, stack)
            store = cls(conn, index=index, ttl=ttl, table_prefix=table_prefix)
            if standbys:
                store._routing = Routing(standbys, retry=replica_retry)
            # Close the store's current connection (see PostgresStore.from_conn_string).
            stack.push_async_callback(store._connections.close)
            # Before the connection closes: the sweeper and a calibration check in flight stop.
            stack.push_async_callback(store._stop_background)
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                await store.setup()
                await store.start_ttl_sweeper()
            yield store

    def _session(self) -> AsyncSession:
        """The connection (and transaction) of one plan run (on the primary)."""
        if self._routing is None:
            return AsyncSession(self._connections)
        return AsyncWriteSession(self._connections, self._routing, learn=True)

    def _read_session(self) -> AsyncSession | AsyncReadSession:
        """The session of a plan that only reads: on the replicas when the store has some."""
        if self._routing is None:
            return self._session()
        return AsyncReadSession(self._connections, self._routing)

    def _calibration_session(
        self,
    ) -> AbstractAsyncContextManager[Callable[[Round], Awaitable[Answer]]]:
        """The calibration's rounds, on the pool or on a connection of its own."""
        return async_calibration_session(self._connections)

    async def setup(self) -> None:
        """Create or upgrade tables and indexes (idempotent, safe to call concurrently)."""
        self.tables = await self._drive(setup_steps(self.tables, self.index_spec))
        self._guard.generation = self.tables.generation

    async def sweep_ttl(self) -> int:
        """Delete expired items now and forget emptied namespaces; returns how many items went."""
        return await self._drive(sweep_plan(self.tables))
