"""The sessions of a Postgres store with read replicas: a read-only plan's rounds on the replica or
the primary that :class:`~langmem_adapters.postgres.replicas.ReadRun` names, and the plans that
write, whose end on the primary's WAL is learnt once they have committed (see
:mod:`~langmem_adapters.postgres.replicas` for the rules).

A replica's failure never reaches the caller: the round is sent to the primary, whose own failures
are reported as in :mod:`~langmem_adapters.postgres.connection`.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.postgres.connection import (
    AsyncConnections,
    AsyncSession,
    Connections,
    Session,
)
from langmem_adapters.postgres.replicas import POSITION, ReadRun, Routing
from langmem_adapters.postgres.sql import Answer, Round

__all__ = [
    "AsyncReadSession",
    "AsyncWriteSession",
    "ReadSession",
    "WriteSession",
]

_NO_ERROR: tuple[None, None, None] = (None, None, None)


def _info(exc: BaseException | None) -> tuple[Any, Any, Any]:
    """``exc`` as the ``exc_info`` a session ends with."""
    return (type(exc), exc, exc.__traceback__) if exc is not None else _NO_ERROR


class WriteSession(Session):
    """A :class:`Session` on the primary of a store with replicas that, when it wrote (``learn``),
    learns where the write ends once it has committed, so that the store's later reads see it; a
    session that failed after it may have committed counts as a write whose end is not known."""

    __slots__ = ("_counted", "_routing", "learn")

    def __init__(
        self, connections: Connections, routing: Routing[Connections], *, learn: bool
    ) -> None:
        super().__init__(connections)
        self._routing = routing
        self.learn = learn
        self._counted = False

    def _committed(self) -> None:
        """Count the write and read the primary's position, before the connection goes back."""
        if self.learn and self._conn is not None:
            writes = self._routing.wrote()
            self._counted = True
            conn = self._conn
            with suppress(psycopg.Error):  # then the next read learns it (see replicas)
                try:
                    (row,) = conn.cursor(row_factory=tuple_row).execute(POSITION.sql).fetchall()
                finally:
                    if not conn.autocommit:  # end the transaction the query opened
                        conn.rollback()
                self._routing.learned(writes, int(row[0]))

    def __exit__(self, *exc_info: Any) -> None:
        """End as a :class:`Session` does; a write not counted yet is counted."""
        try:
            super().__exit__(*exc_info)
        finally:
            if self.learn and self._conn is not None and not self._counted:
                self._routing.wrote()


class ReadSession:
    """One read-only plan run on a sync store with replicas (``with`` gives the function executing
    one ``Round``): a replica's session and the primary's, each taken on first use."""

    __slots__ = ("_primary", "_replica", "_run", "_source")

    def __init__(self, primary: Connections, routing: Routing[Connections]) -> None:
        self._source = primary
        self._run = ReadRun(routing)
        self._primary: WriteSession | None = None
        self._replica: Session | None = None

    def __enter__(self) -> ReadSession:
        return self

    def __call__(self, request: Round) -> Answer:
        """Execute a round where the routing sends it; on the primary after a replica failed or
        was behind."""
        while True:
            replica, sent = self._run.target(request)
            if replica is None:
                if self._primary is None:
                    self._primary = WriteSession(self._source, self._run.routing, learn=False)
                self._primary.learn |= request.writes
                return self._run.from_primary(self._primary(sent))
            if self._replica is None:
                self._replica = Session(replica.connections)
            try:
                answer = self._run.from_replica(replica, self._replica(sent))
            except psycopg.Error as exc:
                self._run.failed(replica, exc)
                self._leave_replica(exc)
                continue
            if answer is not None:
                return answer
            self._leave_replica(None)

    def _leave_replica(self, exc: BaseException | None) -> None:
        """Give the replica's connection back; its failure is not the caller's."""
        session, self._replica = self._replica, None
        if session is not None:
            with suppress(psycopg.Error, StoreConnectionError):
                session.__exit__(*_info(exc))

    def __exit__(self, *exc_info: Any) -> None:
        """Release both sessions; the primary's reports a lost connection and learns where a TTL
        refresh ends."""
        self._leave_replica(exc_info[1])
        if self._primary is not None:
            self._primary.__exit__(*exc_info)


class AsyncWriteSession(AsyncSession):
    """The async twin of :class:`WriteSession`."""

    __slots__ = ("_counted", "_routing", "learn")

    def __init__(
        self, connections: AsyncConnections, routing: Routing[AsyncConnections], *, learn: bool
    ) -> None:
        super().__init__(connections)
        self._routing = routing
        self.learn = learn
        self._counted = False

    async def _committed(self) -> None:
        """Count the write and read the primary's position (see :meth:`WriteSession._committed`)."""
        if self.learn and self._conn is not None:
            writes = self._routing.wrote()
            self._counted = True
            conn = self._conn
            with suppress(psycopg.Error):
                try:
                    cur = await conn.cursor(row_factory=tuple_row).execute(POSITION.sql)
                    (row,) = await cur.fetchall()
                finally:
                    if not conn.autocommit:
                        await conn.rollback()
                self._routing.learned(writes, int(row[0]))

    async def __aexit__(self, *exc_info: Any) -> None:
        """End as an :class:`AsyncSession` does; a write not counted yet is counted."""
        try:
            await super().__aexit__(*exc_info)
        finally:
            if self.learn and self._conn is not None and not self._counted:
                self._routing.wrote()


class AsyncReadSession:
    """The async twin of :class:`ReadSession`."""

    __slots__ = ("_primary", "_replica", "_run", "_source")

    def __init__(self, primary: AsyncConnections, routing: Routing[AsyncConnections]) -> None:
        self._source = primary
        self._run = ReadRun(routing)
        self._primary: AsyncWriteSession | None = None
        self._replica: AsyncSession | None = None

    async def __aenter__(self) -> AsyncReadSession:
        return self

    async def __call__(self, request: Round) -> Answer:
        """Execute a round where the routing sends it (see :meth:`ReadSession.__call__`)."""
        while True:
            replica, sent = self._run.target(request)
            if replica is None:
                if self._primary is None:
                    self._primary = AsyncWriteSession(self._source, self._run.routing, learn=False)
                self._primary.learn |= request.writes
                return self._run.from_primary(await self._primary(sent))
            if self._replica is None:
                self._replica = AsyncSession(replica.connections)
            try:
                answer = self._run.from_replica(replica, await self._replica(sent))
            except psycopg.Error as exc:
                self._run.failed(replica, exc)
                await self._leave_replica(exc)
                continue
            if answer is not None:
                return answer
            await self._leave_replica(None)

    async def _leave_replica(self, exc: BaseException | None) -> None:
        """Give the replica's connection back; its failure is not the caller's."""
        session, self._replica = self._replica, None
        if session is not None:
            with suppress(psycopg.Error, StoreConnectionError):
                await session.__aexit__(*_info(exc))

    async def __aexit__(self, *exc_info: Any) -> None:
        """Release both sessions (see :meth:`ReadSession.__exit__`)."""
        await self._leave_replica(exc_info[1])
        if self._primary is not None:
            await self._primary.__aexit__(*exc_info)
