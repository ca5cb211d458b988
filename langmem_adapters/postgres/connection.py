"""Connections of the Postgres stores: where a plan run gets its connection (a pool, or the store's
own connection under a lock, reopened when lost), its transaction, how one ``Round`` is executed,
and psycopg's errors as this package's (a lost connection as ``StoreConnectionError``, an error the
server answered as ``ServerRefusedError`` or ``TransientServerError``; psycopg's as ``__cause__``).

A session (:class:`Session`, :class:`AsyncSession`), what the store's ``_session()`` returns, takes
the connection on the first round (a plan that only embeds never holds one), opens the transaction
when a round asks for it (or the connection is not in autocommit mode), and releases both at the end.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Generic, TypeVar

import psycopg
from psycopg.adapt import AdaptersMap
from psycopg.rows import tuple_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from langmem_adapters.core.values import load_json
from langmem_adapters.errors import (
    InvalidArgumentError,
    ServerRefusedError,
    StoreConnectionError,
    TransientServerError,
    first_line,
)
from langmem_adapters.postgres.sql import Answer, Round

__all__ = [
    "BACKGROUND",
    "CONNECT_KWARGS",
    "TRANSIENT",
    "AsyncConnections",
    "AsyncSession",
    "Connections",
    "Session",
    "connect_failed",
]

# Connections the stores open read json/jsonb with the core's fast reader (a user's own connection
# keeps its adapters).
_ADAPTERS = AdaptersMap(psycopg.adapters)
set_json_loads(load_json, _ADAPTERS)
#: How the stores open their connections: autocommit, prepared statements, the fast JSON reader.
CONNECT_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 5, "context": _ADAPTERS}
#: The ``application_name`` of the connections background work opens (visible in pg_stat_activity).
BACKGROUND = "langmem_adapters calibration"
#: Errors after which the whole batch was rolled back and a rerun is safe: a deadlock or
#: serialization failure, or a vector table that a reindex switched away (the rerun checks the
#: identity first). They become ``TransientServerError``, which the store retries.
TRANSIENT = (
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
    psycopg.errors.UndefinedTable,
)

AnyConnection = psycopg.Connection[Any] | psycopg.AsyncConnection[Any]
SyncSource = psycopg.Connection[Any] | ConnectionPool[Any]
AsyncSource = psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any]
Pooled = AbstractContextManager[psycopg.Connection[Any]]
"""The pool's context for one of its connections (returning it to the pool on exit)."""
AsyncPooled = AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]
Transaction = AbstractContextManager[psycopg.Transaction]
AsyncTransaction = AbstractAsyncContextManager[psycopg.AsyncTransaction]
Source = TypeVar("Source")
Conn = TypeVar("Conn", bound=AnyConnection)
Held = TypeVar("Held")
Tx = TypeVar("Tx")


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


def _raise_ours(conn: AnyConnection | None, exc: BaseException | None) -> None:
    """Raise this package's error (from ``exc``) for a psycopg error: ``StoreConnectionError`` when
    no pooled connection came in time or the connection is gone, else what the server refused;
    other exceptions (ours, an embedder's) are left to propagate as they are."""
    if not isinstance(exc, psycopg.Error):
        return
    if isinstance(exc, PoolTimeout):
        raise StoreConnectionError(
            f"no pooled PostgreSQL connection became free in time ({str(exc).strip()}); nothing of the "
            "batch was sent; raise pool_config max_size or lower the concurrency"
        ) from exc
    if isinstance(exc, psycopg.OperationalError) and (conn is None or conn.broken or conn.closed):
        raise StoreConnectionError(
            f"lost the connection to PostgreSQL during a batch ({str(exc).strip()}); the batch ran in one "
            "transaction, so it was applied whole or not at all; the store reconnects on its next call"
        ) from exc
    raise _refused(exc) from exc


def _refused(exc: psycopg.Error) -> ServerRefusedError:
    """Our error for an error PostgreSQL answered (naming its SQLSTATE and message)."""
    what = f"{type(exc).__name__}{f' [{exc.sqlstate}]' if exc.sqlstate else ''}: {first_line(exc)}"
    if isinstance(exc, TRANSIENT):
        hint = (
            "; call setup() if this store's tables were never created"
            if isinstance(exc, psycopg.errors.UndefinedTable)
            else ""
        )
        return TransientServerError(
            f"PostgreSQL rolled the batch back ({what}); nothing of it was applied and running it "
            f"again is safe{hint}"
        )
    return ServerRefusedError(f"PostgreSQL refused the request ({what})")


def connect_failed(exc: psycopg.Error, background: bool = False) -> Exception:
    """Our error for a connection that could not be opened: ``StoreConnectionError`` when the server
    could not be reached or refused (for ``background`` work, calibration, which retries later),
    ``InvalidArgumentError`` for a malformed connection string."""
    if background:
        return StoreConnectionError(
            f"could not open a background connection to PostgreSQL ({str(exc).strip()})"
        )
    if isinstance(exc, psycopg.OperationalError):
        return StoreConnectionError(f"cannot reach PostgreSQL: {first_line(exc)}")
    return InvalidArgumentError(f"unusable PostgreSQL connection string ({first_line(exc)})")


class Connections:
    """Where a sync store's plans get their connection: ``conn`` is a pool, or one connection used by
    one plan at a time, reopened when lost (``None``: opened on first use with ``reopen``)."""

    def __init__(self, conn: SyncSource | None, reopen: dict[str, Any] | None = None) -> None:
        self.conn = conn
        self._reopen = _reconnect_kwargs(conn) if reopen is None else reopen
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(conn.max_size if isinstance(conn, ConnectionPool) else 1)

    def take(self) -> tuple[psycopg.Connection[Any], Pooled | None]:
        """A connection to hold until :meth:`give_back`: pooled (with the pool's context for it),
        or the store's own under its lock."""
        if isinstance(self.conn, ConnectionPool):
            # Queue here, without a deadline, rather than in the pool, whose wait times out: many
            # concurrent callers then take turns instead of failing with PoolTimeout.
            self._slots.acquire()
            try:
                pooled = self.conn.connection()
                return pooled.__enter__(), pooled
            except BaseException:
                self._slots.release()
                raise
        self._lock.acquire()
        try:
            if self.conn is None or self.conn.broken or self.conn.closed:
                self.conn = psycopg.Connection.connect(**_reopen_kwargs(self._reopen))
        except BaseException:
            self._lock.release()
            raise
        return self.conn, None

    def give_back(self, pooled: Pooled | None, *exc_info: Any) -> None:
        """Release what :meth:`take` held (``exc_info``: how the session ended)."""
        if pooled is None:
            self._lock.release()
            return
        try:
            pooled.__exit__(*exc_info)
        finally:
            self._slots.release()

    def spare(self) -> Connections:
        """Connections for background work (calibration) that never wait for the store's lock: the
        same pool, or a new connection like the store's (:meth:`close` it after)."""
        if isinstance(self.conn, ConnectionPool):
            return self
        kwargs = _reopen_kwargs(self._reopen)
        try:
            return Connections(psycopg.Connection.connect(**kwargs, application_name=BACKGROUND))
        except psycopg.OperationalError as exc:
            raise connect_failed(exc, background=True) from exc

    def close(self) -> None:
        """Close the connection, if one was opened (not a pool: a pool is the caller's)."""
        if self.conn is not None and not isinstance(self.conn, ConnectionPool):
            self.conn.close()


class AsyncConnections:
    """The async twin of :class:`Connections` (an async pool or connection)."""

    def __init__(self, conn: AsyncSource | None, reopen: dict[str, Any] | None = None) -> None:
        self.conn = conn
        self._reopen = _reconnect_kwargs(conn) if reopen is None else reopen
        self._lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(
            conn.max_size if isinstance(conn, AsyncConnectionPool) else 1
        )

    async def take(self) -> tuple[psycopg.AsyncConnection[Any], AsyncPooled | None]:
        """A connection to hold until :meth:`give_back` (see :meth:`Connections.take`)."""
        if isinstance(self.conn, AsyncConnectionPool):
            await self._slots.acquire()  # queue here, as Connections.take does
            try:
                pooled = self.conn.connection()
                return await pooled.__aenter__(), pooled
            except BaseException:
                self._slots.release()
                raise
        await self._lock.acquire()
        try:
            if self.conn is None or self.conn.broken or self.conn.closed:
                self.conn = await psycopg.AsyncConnection.connect(**_reopen_kwargs(self._reopen))
        except BaseException:
            self._lock.release()
            raise
        return self.conn, None

    async def give_back(self, pooled: AsyncPooled | None, *exc_info: Any) -> None:
        """Release what :meth:`take` held (``exc_info``: how the session ended)."""
        if pooled is None:
            self._lock.release()
            return
        try:
            await pooled.__aexit__(*exc_info)
        finally:
            self._slots.release()

    async def spare(self) -> AsyncConnections:
        """Connections for background work (see :meth:`Connections.spare`)."""
        if isinstance(self.conn, AsyncConnectionPool):
            return self
        kwargs = _reopen_kwargs(self._reopen)
        try:
            conn = await psycopg.AsyncConnection.connect(**kwargs, application_name=BACKGROUND)
        except psycopg.OperationalError as exc:
            raise connect_failed(exc, background=True) from exc
        return AsyncConnections(conn)

    async def close(self) -> None:
        """Close the connection, if one was opened (not a pool: a pool is the caller's)."""
        if self.conn is not None and not isinstance(self.conn, AsyncConnectionPool):
            await self.conn.close()


class _Held(Generic[Source, Conn, Held, Tx]):
    """What a session holds: where its connection comes from, and once a round ran, the
    connection, the pool's context for it (if pooled) and the open transaction (if any)."""

    __slots__ = ("_conn", "_connections", "_pooled", "_tx")

    def __init__(self, connections: Source) -> None:
        self._connections = connections
        self._conn: Conn | None = None
        self._pooled: Held | None = None
        self._tx: Tx | None = None


class Session(_Held[Connections, psycopg.Connection[Any], Pooled, Transaction]):
    """One plan run on a sync store: ``with`` gives the function executing one ``Round``.

    A small class holding the connection and transaction itself, rather than a ``@contextmanager``
    generator and an ``ExitStack`` (simpler to step through; ~2.5 us a run, 1% of a get).
    """

    __slots__ = ()

    def __enter__(self) -> Session:
        """The session itself is the function executing one round (nothing is taken yet)."""
        return self

    def __call__(self, request: Round) -> Answer:
        """Send a round's statements, several in one pipeline (a lone one without: a pipeline cost a
        get 1.4-1.6x its client CPU, a put 1.27x, two runs), and collect the rows that fetch."""
        conn = self._conn
        if conn is None:
            conn, self._pooled = self._connections.take()
            self._conn = conn
        if self._tx is None and (request.tx or not conn.autocommit):
            tx = conn.transaction()
            tx.__enter__()
            self._tx = tx
        statements = request.statements
        cursors = [conn.cursor(row_factory=tuple_row) for _ in statements]
        if len(statements) == 1:
            cursors[0].execute(statements[0].sql, statements[0].params)
        else:
            with conn.pipeline():
                for cur, st in zip(cursors, statements):
                    cur.execute(st.sql, st.params)
        return [cur.fetchall() if st.fetch else [] for cur, st in zip(cursors, statements)]

    def __exit__(self, *exc_info: Any) -> None:
        """Commit (or roll back) and release the connection; report a psycopg error as ours."""
        if self._conn is not None:
            try:
                self._end(*exc_info)
            except psycopg.Error as err:
                _raise_ours(self._conn, err)
                raise
        if exc_info[1] is not None:
            _raise_ours(self._conn, exc_info[1])

    def _end(self, *exc_info: Any) -> None:
        """End the transaction, then give the connection back (told of a failed commit)."""
        tx, ended = self._tx, exc_info
        try:
            if tx is not None:
                tx.__exit__(*exc_info)
            if exc_info[1] is None:
                self._committed()
        except BaseException as err:
            ended = (type(err), err, err.__traceback__)
            raise
        finally:
            self._connections.give_back(self._pooled, *ended)

    def _committed(self) -> None:
        """After the plan committed, before the connection goes back: nothing here (a store with
        replicas learns where its write ends, see :mod:`~langmem_adapters.postgres.routed`)."""


class AsyncSession(
    _Held[AsyncConnections, psycopg.AsyncConnection[Any], AsyncPooled, AsyncTransaction]
):
    """One plan run on an async store: ``async with`` gives the coroutine function executing one
    ``Round`` (see :class:`Session`)."""

    __slots__ = ()

    async def __aenter__(self) -> AsyncSession:
        """The session itself is the coroutine function executing one round."""
        return self

    async def __call__(self, request: Round) -> Answer:
        """Send a round's statements in one pipeline and collect the rows of those that fetch."""
        conn = self._conn
        if conn is None:
            conn, self._pooled = await self._connections.take()
            self._conn = conn
        if self._tx is None and (request.tx or not conn.autocommit):
            tx = conn.transaction()
            await tx.__aenter__()
            self._tx = tx
        statements = request.statements
        cursors = [conn.cursor(row_factory=tuple_row) for _ in statements]
        if len(statements) == 1:  # no pipeline: see Session.__call__
            await cursors[0].execute(statements[0].sql, statements[0].params)
        else:
            async with conn.pipeline():
                for cur, st in zip(cursors, statements):
                    await cur.execute(st.sql, st.params)
        return [await cur.fetchall() if st.fetch else [] for cur, st in zip(cursors, statements)]

    async def __aexit__(self, *exc_info: Any) -> None:
        """Commit (or roll back) and release the connection; report a psycopg error as ours."""
        if self._conn is not None:
            try:
                await self._end(*exc_info)
            except psycopg.Error as err:
                _raise_ours(self._conn, err)
                raise
        if exc_info[1] is not None:
            _raise_ours(self._conn, exc_info[1])

    async def _end(self, *exc_info: Any) -> None:
        """End the transaction, then give the connection back (told of a failed commit)."""
        tx, ended = self._tx, exc_info
        try:
            if tx is not None:
                await tx.__aexit__(*exc_info)
            if exc_info[1] is None:
                await self._committed()
        except BaseException as err:
            ended = (type(err), err, err.__traceback__)
            raise
        finally:
            await self._connections.give_back(self._pooled, *ended)

    async def _committed(self) -> None:
        """After the plan committed (see :meth:`Session._committed`)."""
