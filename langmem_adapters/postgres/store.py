"""``PostgresStore`` and ``AsyncPostgresStore``: LangGraph ``BaseStore``s on psycopg 3 + pgvector.

Both run the plans of :mod:`langmem_adapters.postgres.queries`; they differ only in how a plan's
requests are executed (blocking calls, or awaits on an async connection).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from typing import Any, Literal, TypedDict

import psycopg
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    IndexConfig,
    NotProvided,
    Op,
    PutOp,
    Result,
    TTLConfig,
    _ensure_ttl,
    _validate_namespace,
)
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langmem_adapters.core.ttl import AsyncSweeper, Sweeper, check_ttl_config, sweep_interval
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.postgres.queries import (
    Embed,
    Plan,
    Round,
    Tables,
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


class PostgresIndexConfig(IndexConfig, total=False):
    """``IndexConfig`` plus the distance and ANN settings of the Postgres stores."""

    distance_type: Literal["cosine", "l2", "inner_product"]
    ann_index_config: ANNIndexConfig


CONNECT_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 5}


class _PostgresConfig:
    """Configuration shared by the sync and async stores."""

    supports_ttl: bool = True

    def _configure(
        self, index: Mapping[str, Any] | None, ttl: Mapping[str, Any] | None, table_prefix: str
    ) -> None:
        self.tables = Tables(table_prefix)
        self.index_spec = IndexSpec.from_config(index) if index is not None else None
        self.index_config = index
        self.ttl_config = check_ttl_config(ttl)

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

    def _if_absent_op(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any, ttl: Any
    ) -> PutOp:
        _validate_namespace(tuple(namespace))
        return PutOp(tuple(namespace), str(key), value, index, _ensure_ttl(self.ttl_config, ttl))


def _embed(spec: IndexSpec | None, request: Embed) -> Any:
    assert spec is not None
    if request.query:
        return [spec.embeddings.embed_query(t) for t in request.texts]
    return spec.embeddings.embed_documents(request.texts)


async def _aembed(spec: IndexSpec | None, request: Embed) -> Any:
    assert spec is not None
    if request.query:
        return await asyncio.gather(*(spec.embeddings.aembed_query(t) for t in request.texts))
    return await spec.embeddings.aembed_documents(request.texts)


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
    }


def _lost(conn: Any, exc: psycopg.OperationalError) -> StoreConnectionError | None:
    """``StoreConnectionError`` when ``exc`` means the connection is gone (or never came)."""
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


class PostgresStore(_PostgresConfig, BaseStore):
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
    ) -> None:
        self._configure(index, ttl, table_prefix)
        self.conn = conn
        self._reopen = _reconnect_kwargs(conn)
        self._lock = threading.Lock()
        self._sweeper: Sweeper | None = None

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
    ) -> Iterator[PostgresStore]:
        """Connect (one connection, or a pool with ``pool_config``) and yield a store; closes on exit.

        A TTL sweeper starts when ``ttl["sweep_interval_minutes"]`` is set and stops on exit.
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
                conn = stack.enter_context(
                    psycopg.Connection.connect(conn_string, **CONNECT_KWARGS)
                )
            store = cls(conn, index=index, ttl=ttl, table_prefix=table_prefix)
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                store.setup()
                store.start_ttl_sweeper()
                stack.callback(store.stop_ttl_sweeper)
            yield store

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if isinstance(self.conn, ConnectionPool):
            with self.conn.connection() as conn:
                yield conn
        else:
            with self._lock:
                if self.conn.broken or self.conn.closed:
                    self.conn = psycopg.Connection.connect(**self._reopen)
                yield self.conn

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
                            answer = _embed(self.index_spec, request)
                        else:
                            if conn is None:
                                conn = stack.enter_context(self._connection())
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

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops in one transaction: reads see the state before the batch's writes."""
        return self._run(plan(self.tables, self.index_spec, self.ttl_config, ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so the event loop is never blocked."""
        return await asyncio.to_thread(self.batch, list(ops))

    def put_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Create the item only if no live item has this key; True for the one writer that created it.

        An expired item counts as absent. Racing writers get exactly one True.
        """
        op = self._if_absent_op(namespace, key, value, index, ttl)
        return bool(
            self._run(plan(self.tables, self.index_spec, self.ttl_config, [op], if_absent=True))
        )

    async def aput_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Async twin of :meth:`put_if_absent`."""
        return await asyncio.to_thread(self.put_if_absent, namespace, key, value, index, ttl=ttl)

    def sweep_ttl(self) -> int:
        """Delete expired items now and forget emptied namespaces; returns how many items went."""
        expired, cleanup = sweep_statements(self.tables)
        (rows,) = self._run(_single(Round([expired])))
        self._run(_single(Round(cleanup, tx=True)))
        return len(rows)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep in a daemon thread every interval (argument, else TTLConfig, else 5 minutes)."""
        if self._sweeper is None:
            self._sweeper = Sweeper(
                self.sweep_ttl, sweep_interval(self.ttl_config, sweep_interval_minutes)
            )

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it has stopped."""
        sweeper, self._sweeper = self._sweeper, None
        return sweeper.stop(timeout) if sweeper else True


def _single(request: Round) -> Plan:
    """A plan of one round, for maintenance statements outside a batch."""
    return (yield request)


class AsyncPostgresStore(_PostgresConfig, BaseStore):
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
    ) -> None:
        self._configure(index, ttl, table_prefix)
        self.conn = conn
        self._reopen = _reconnect_kwargs(conn)
        self._lock = asyncio.Lock()
        self._sweeper: AsyncSweeper | None = None
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

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
                conn = await stack.enter_async_context(
                    await psycopg.AsyncConnection.connect(conn_string, **CONNECT_KWARGS)
                )
            store = cls(conn, index=index, ttl=ttl, table_prefix=table_prefix)
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                await store.setup()
                await store.start_ttl_sweeper()
                stack.push_async_callback(store.stop_ttl_sweeper)
            yield store

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        if isinstance(self.conn, AsyncConnectionPool):
            async with self.conn.connection() as conn:
                yield conn
        else:
            async with self._lock:
                if self.conn.broken or self.conn.closed:
                    self.conn = await psycopg.AsyncConnection.connect(**self._reopen)
                yield self.conn

    async def _run(self, steps: Plan) -> Any:
        """Drive a plan with awaits: the same requests as the sync store, executed asynchronously."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            async with AsyncExitStack() as stack:
                in_tx = False
                try:
                    request = next(steps)
                    while True:
                        if isinstance(request, Embed):
                            answer = await _aembed(self.index_spec, request)
                        else:
                            if conn is None:
                                conn = await stack.enter_async_context(self._connection())
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

    def _sync(self, coro: Any) -> Any:
        """Run a coroutine on the store's loop from another thread."""
        if self.loop is None:
            coro.close()
            raise asyncio.InvalidStateError(
                "AsyncPostgresStore has no event loop yet; use the async methods"
            )
        try:
            if asyncio.get_running_loop() is self.loop:
                coro.close()
                raise asyncio.InvalidStateError(
                    "Synchronous calls to AsyncPostgresStore detected in the main event loop. "
                    "Use the async methods (aget, aput, ...) instead."
                )
        except RuntimeError:
            pass
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def setup(self) -> None:
        """Create or upgrade tables and indexes (idempotent, safe to call concurrently)."""
        await self._run(setup_plan(self.tables, self.index_spec))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops in one transaction: reads see the state before the batch's writes."""
        return await self._run(plan(self.tables, self.index_spec, self.ttl_config, ops))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """``abatch`` on the store's event loop, for callers in other threads."""
        return self._sync(self.abatch(list(ops)))

    async def aput_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Create the item only if no live item has this key; True for the one writer that created it."""
        op = self._if_absent_op(namespace, key, value, index, ttl)
        return bool(
            await self._run(
                plan(self.tables, self.index_spec, self.ttl_config, [op], if_absent=True)
            )
        )

    def put_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Sync twin of :meth:`aput_if_absent`, for callers in other threads."""
        return bool(self._sync(self.aput_if_absent(namespace, key, value, index, ttl=ttl)))

    async def sweep_ttl(self) -> int:
        """Delete expired items now and forget emptied namespaces; returns how many items went."""
        expired, cleanup = sweep_statements(self.tables)
        (rows,) = await self._run(_single(Round([expired])))
        await self._run(_single(Round(cleanup, tx=True)))
        return len(rows)

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep in an asyncio task every interval (argument, else TTLConfig, else 5 minutes)."""
        if self._sweeper is None:
            self._sweeper = AsyncSweeper(
                self.sweep_ttl, sweep_interval(self.ttl_config, sweep_interval_minutes)
            )

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; True when it has stopped."""
        sweeper, self._sweeper = self._sweeper, None
        return await sweeper.stop(timeout) if sweeper else True
