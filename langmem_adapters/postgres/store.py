"""``PostgresStore`` and ``AsyncPostgresStore``: LangGraph ``BaseStore``s on psycopg 3 + pgvector.

Both run the plans of :mod:`langmem_adapters.postgres.queries`; they differ only in how a plan's
requests are executed (blocking calls, or awaits on an async connection).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from typing import Any, Literal, TypedDict

import psycopg
from langgraph.store.base import IndexConfig, Op, TTLConfig
from psycopg.adapt import AdaptersMap
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from langmem_adapters.core.ops import load_json
from langmem_adapters.core.store import AsyncStore, Embed, Plan, SyncStore
from langmem_adapters.core.vectors import SearchStats
from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.postgres.queries import (
    Round,
    Tables,
    check_ann,
    plan,
    setup_plan,
    sweep_statements,
)

__all__ = ["AsyncPostgresStore", "PoolConfig", "PostgresIndexConfig", "PostgresStore"]


class PoolConfig(TypedDict, total=False):
    """Connection-pool settings for ``from_conn_string`` (as in the official store)."""

    min_size: int
    max_size: int | None
    kwargs: dict[str, Any]


class ANNIndexConfig(TypedDict, total=False):
    """Approximate-search options: index kind, vector type, build and search parameters."""

    kind: Literal["hnsw", "ivfflat", "exact", "flat"]
    vector_type: Literal["vector", "halfvec"]
    m: int
    ef_construction: int
    ef_search: int
    nlist: int
    probes: int
    exact_below: int


class PostgresIndexConfig(IndexConfig, total=False):
    """``IndexConfig`` plus the distance and ANN settings of the Postgres stores."""

    distance_type: Literal["cosine", "l2", "inner_product"]
    ann_index_config: ANNIndexConfig


# Connections the stores open read json/jsonb with the core's fast reader (a user's own connection
# keeps its adapters).
_ADAPTERS = AdaptersMap(psycopg.adapters)
set_json_loads(load_json, _ADAPTERS)
CONNECT_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 5, "context": _ADAPTERS}


class _PostgresConfig:
    """What the sync and async Postgres stores share beyond the common store base."""

    tables: Tables
    _stats: SearchStats
    index_spec: Any
    ttl_config: TTLConfig | None
    # A deadlock or serialization failure rolled the whole batch back: running it again is safe.
    _retryable: tuple[type[Exception], ...] = (
        psycopg.errors.DeadlockDetected,
        psycopg.errors.SerializationFailure,
    )

    def _plan(self, ops: Iterable[Op], *, if_absent: bool = False) -> Plan:
        return plan(self.tables, self.index_spec, ops, if_absent=if_absent, stats=self._stats)

    def __repr__(self) -> str:
        """Where the store points, never with credentials (safe to log or show in a notebook)."""
        conn: Any = getattr(self, "conn", None)
        if hasattr(conn, "info"):
            where = {"host": conn.info.host, "dbname": conn.info.dbname}
        else:
            params = conninfo_to_dict(getattr(conn, "conninfo", "") or "")
            where = {"host": params.get("host"), "dbname": params.get("dbname")}
        index = (
            f", index=dims {self.index_spec.dims} {self.index_spec.distance}"
            if self.index_spec
            else ""
        )
        return (
            f"{type(self).__name__}(host={where['host']!r}, dbname={where['dbname']!r}, "
            f"table_prefix={self.tables.prefix!r}{index})"
        )


def _reconnect_kwargs(conn: Any) -> dict[str, Any]:
    """How to open a connection like ``conn`` again (same server, credentials and modes); pools
    reconnect by themselves."""
    if not isinstance(conn, (psycopg.Connection, psycopg.AsyncConnection)) or conn.closed:
        return {}
    return {
        "conninfo": conn.info.dsn,
        "password": conn.info.password,
        "autocommit": conn.autocommit,
        "prepare_threshold": conn.prepare_threshold,
        "context": _ADAPTERS,
    }


def _reopen_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Refuse to reconnect a store that was handed an already-closed connection (it would otherwise
    connect to whatever server the environment names)."""
    if not kwargs:
        raise StoreConnectionError(
            "the store's connection is closed and it was closed when the store was made, so the store "
            "cannot reopen it; pass an open connection or use from_conn_string"
        )
    return kwargs


def _lost(conn: Any, exc: psycopg.OperationalError) -> StoreConnectionError | None:
    """``StoreConnectionError`` when ``exc`` means the connection is gone (or never came)."""
    if isinstance(exc, PoolTimeout):
        return StoreConnectionError(
            f"no pooled PostgreSQL connection became free in time ({str(exc).strip()}); nothing of the "
            "batch was sent; raise pool_config max_size or lower the concurrency"
        )
    if conn is None or conn.broken or conn.closed:
        return StoreConnectionError(
            f"lost the connection to PostgreSQL during a batch ({str(exc).strip()}); the batch ran in one "
            "transaction, so it was applied whole or not at all; the store reconnects on its next call"
        )
    return None


def _execute(conn: psycopg.Connection[Any], request: Round) -> list[list[Any]]:
    """Send a round's statements in one pipeline and collect the rows of those that fetch."""
    if len(request.statements) == 1:
        (st,) = request.statements
        cur = conn.cursor(row_factory=tuple_row)
        cur.execute(st.sql, st.params)
        return [cur.fetchall() if st.fetch else []]
    cursors = []
    with conn.pipeline():
        for st in request.statements:
            cur = conn.cursor(row_factory=tuple_row)
            cur.execute(st.sql, st.params)
            cursors.append(cur)
    return [cur.fetchall() if st.fetch else [] for cur, st in zip(cursors, request.statements)]


async def _aexecute(conn: psycopg.AsyncConnection[Any], request: Round) -> list[list[Any]]:
    if len(request.statements) == 1:
        (st,) = request.statements
        cur = conn.cursor(row_factory=tuple_row)
        await cur.execute(st.sql, st.params)
        return [await cur.fetchall() if st.fetch else []]
    cursors = []
    async with conn.pipeline():
        for st in request.statements:
            cur = conn.cursor(row_factory=tuple_row)
            await cur.execute(st.sql, st.params)
            cursors.append(cur)
    return [
        await cur.fetchall() if st.fetch else [] for cur, st in zip(cursors, request.statements)
    ]


class PostgresStore(_PostgresConfig, SyncStore):
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
    ) -> None:
        """``pipe`` is accepted for compatibility with the official store and not needed: every
        round of a batch is already sent as one pipeline."""
        self._configure(index, ttl)
        check_ann(self.index_spec)
        self.tables = Tables(table_prefix)
        self._stats = SearchStats()
        self.conn = conn
        self._reopen = _reconnect_kwargs(conn)
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(conn.max_size if isinstance(conn, ConnectionPool) else 1)

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
    ) -> Iterator[PostgresStore]:
        """Connect (one connection, or a pool with ``pool_config``) and yield a store; closes on exit.

        A TTL sweeper starts when ``ttl["sweep_interval_minutes"]`` is set and stops on exit.
        ``pipeline`` is accepted for compatibility with the official store; batches always pipeline.
        """
        with ExitStack() as stack:
            conn: psycopg.Connection[Any] | ConnectionPool[Any]
            if pool_config is not None:
                conn = stack.enter_context(
                    ConnectionPool(
                        conn_string,
                        min_size=pool_config.get("min_size", 1),
                        max_size=pool_config.get("max_size"),
                        kwargs={**CONNECT_KWARGS, **pool_config.get("kwargs", {})},
                        check=ConnectionPool.check_connection,
                        open=True,
                    )
                )
            else:
                conn = psycopg.Connection.connect(conn_string, **CONNECT_KWARGS)
            store = cls(conn, index=index, ttl=ttl, table_prefix=table_prefix)
            if not isinstance(conn, ConnectionPool):
                # Close the store's current connection: a reconnect may have replaced ``conn``.
                stack.callback(lambda: store.conn.close())
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                store.setup()
                store.start_ttl_sweeper()
                stack.callback(store.stop_ttl_sweeper)
            yield store

    def _connection(self, stack: ExitStack) -> psycopg.Connection[Any]:
        """A connection held until ``stack`` closes: pooled, or the store's own under its lock."""
        if isinstance(self.conn, ConnectionPool):
            # Queue here, without a deadline, rather than in the pool, whose wait times out.
            stack.enter_context(self._slots)
            return stack.enter_context(self.conn.connection())
        stack.enter_context(self._lock)
        if self.conn.broken or self.conn.closed:
            self.conn = psycopg.Connection.connect(**_reopen_kwargs(self._reopen))
        return self.conn

    def _run(self, steps: Plan) -> Any:
        """Drive a plan: embed with the sync embedder, send rounds on one connection."""
        conn: psycopg.Connection[Any] | None = None
        try:
            with ExitStack() as stack:
                in_tx = False
                try:
                    request = next(steps)
                    while True:
                        if isinstance(request, Embed):
                            answer = self._embed(request)
                        else:
                            if conn is None:
                                conn = self._connection(stack)
                            if (request.tx or not conn.autocommit) and not in_tx:
                                stack.enter_context(conn.transaction())
                                in_tx = True
                            answer = _execute(conn, request)
                        request = steps.send(answer)
                except StopIteration as done:
                    return done.value
        except psycopg.OperationalError as exc:
            lost = _lost(conn, exc)
            if lost is None:
                raise
            raise lost from exc

    def setup(self) -> None:
        """Create or upgrade tables and indexes (idempotent, safe to call concurrently)."""
        self._run(setup_plan(self.tables, self.index_spec))

    def sweep_ttl(self) -> int:
        """Delete expired items now and forget emptied namespaces; returns how many items went."""
        expired, cleanup = sweep_statements(self.tables)
        (rows,) = self._run(_single(Round([expired])))
        self._run(_single(Round(cleanup, tx=True)))
        return len(rows)


def _single(request: Round) -> Plan:
    """A plan of one round, for maintenance statements outside a batch."""
    return (yield request)


class AsyncPostgresStore(_PostgresConfig, AsyncStore):
    """The async twin of :class:`PostgresStore` on ``psycopg.AsyncConnection`` or ``AsyncConnectionPool``.

    Sync methods work from other threads (they run on the store's event loop) and raise
    ``asyncio.InvalidStateError`` when called on that loop, where they would deadlock.
    """

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any],
        *,
        index: PostgresIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        table_prefix: str = "langmem",
        pipe: Any = None,
    ) -> None:
        """``pipe`` is accepted for compatibility with the official store and not needed: every
        round of a batch is already sent as one pipeline."""
        self._configure(index, ttl)
        check_ann(self.index_spec)
        self.tables = Tables(table_prefix)
        self._stats = SearchStats()
        self.conn = conn
        self._reopen = _reconnect_kwargs(conn)
        self._lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(
            conn.max_size if isinstance(conn, AsyncConnectionPool) else 1
        )
        self._bind_loop()

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
    ) -> AsyncIterator[AsyncPostgresStore]:
        """Async context manager twin of :meth:`PostgresStore.from_conn_string`."""
        async with AsyncExitStack() as stack:
            conn: psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any]
            if pool_config is not None:
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    conn_string,
                    min_size=pool_config.get("min_size", 1),
                    max_size=pool_config.get("max_size"),
                    kwargs={**CONNECT_KWARGS, **pool_config.get("kwargs", {})},
                    check=AsyncConnectionPool.check_connection,
                    open=False,
                )
                await pool.open()
                conn = await stack.enter_async_context(pool)
            else:
                conn = await psycopg.AsyncConnection.connect(conn_string, **CONNECT_KWARGS)
            store = cls(conn, index=index, ttl=ttl, table_prefix=table_prefix)
            if not isinstance(conn, AsyncConnectionPool):
                # Close the store's current connection: a reconnect may have replaced ``conn``.
                stack.push_async_callback(lambda: store.conn.close())
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                await store.setup()
                await store.start_ttl_sweeper()
                stack.push_async_callback(store.stop_ttl_sweeper)
            yield store

    async def _connection(self, stack: AsyncExitStack) -> psycopg.AsyncConnection[Any]:
        """A connection held until ``stack`` closes: pooled, or the store's own under its lock."""
        if isinstance(self.conn, AsyncConnectionPool):
            # Queue here, without a deadline, rather than in the pool, whose wait times out: many
            # concurrent tasks then take turns instead of failing with PoolTimeout.
            await stack.enter_async_context(self._slots)
            return await stack.enter_async_context(self.conn.connection())
        await stack.enter_async_context(self._lock)
        if self.conn.broken or self.conn.closed:
            self.conn = await psycopg.AsyncConnection.connect(**_reopen_kwargs(self._reopen))
        return self.conn

    async def _run(self, steps: Plan) -> Any:
        """Drive a plan with awaits: the same requests as the sync store, executed asynchronously."""
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            async with AsyncExitStack() as stack:
                in_tx = False
                try:
                    request = next(steps)
                    while True:
                        if isinstance(request, Embed):
                            answer = await self._aembed(request)
                        else:
                            if conn is None:
                                conn = await self._connection(stack)
                            if (request.tx or not conn.autocommit) and not in_tx:
                                await stack.enter_async_context(conn.transaction())
                                in_tx = True
                            answer = await _aexecute(conn, request)
                        request = steps.send(answer)
                except StopIteration as done:
                    return done.value
        except psycopg.OperationalError as exc:
            lost = _lost(conn, exc)
            if lost is None:
                raise
            raise lost from exc

    async def setup(self) -> None:
        """Create or upgrade tables and indexes (idempotent, safe to call concurrently)."""
        await self._drive(setup_plan(self.tables, self.index_spec))

    async def sweep_ttl(self) -> int:
        """Delete expired items now and forget emptied namespaces; returns how many items went."""
        expired, cleanup = sweep_statements(self.tables)
        (rows,) = await self._drive(_single(Round([expired])))
        await self._drive(_single(Round(cleanup, tx=True)))
        return len(rows)
