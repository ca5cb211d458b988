"""``RedisStore`` and ``AsyncRedisStore``: LangGraph ``BaseStore``s on redis-py.

Both run the plans of :mod:`langmem_adapters.redis.plan`; they differ only in how a plan's requests
are executed (blocking pipelines, or awaits on ``redis.asyncio``). Either takes a single-server client
or a Redis Cluster client (``redis.cluster.RedisCluster`` / ``redis.asyncio.cluster.RedisCluster``).

A lost connection (or a server still loading its data) raises
:class:`~langmem_adapters.errors.StoreConnectionError` for the batch in flight: its writes ran in one
Lua script call (one per namespace on a cluster), so they were applied whole or not at all; redis-py
reconnects on the next call.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal, cast

import redis
import redis.asyncio as aredis
import redis.asyncio.cluster as acluster
import redis.cluster
from langgraph.store.base import IndexConfig, Op, TTLConfig
from redis.exceptions import ClusterDownError, NoScriptError, ResponseError

from langmem_adapters.core.store import AsyncStore, Embed, Plan, SyncStore
from langmem_adapters.core.vectors import SearchStats
from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.redis.plan import (
    SCRIPTS,
    Call,
    Keys,
    Mode,
    Round,
    plan,
    setup_plan,
    sweep_plan,
)

__all__ = ["AsyncRedisStore", "RedisStore"]

_SHA = {name: hashlib.sha1(src.encode()).hexdigest() for name, src in SCRIPTS.items()}
ModeOption = Literal["auto", "query_engine", "plain"]
# Connection lost or refused, timed out, server loading its data (BusyLoadingError is a ConnectionError),
# cluster slots not served: the server did not run the command, or ran a whole script call.
_LOST = (redis.ConnectionError, redis.TimeoutError, ClusterDownError)


def _lost(exc: Exception) -> StoreConnectionError:
    if isinstance(exc, redis.AuthenticationError):
        return StoreConnectionError(f"Redis refused the credentials ({exc}); nothing was sent")
    if "refused" in str(exc).lower():
        return StoreConnectionError(
            f"cannot connect to Redis ({exc}); nothing was sent; the store reconnects on its next call"
        )
    return StoreConnectionError(
        f"lost the connection to Redis during a batch ({type(exc).__name__}: {exc}); its writes run in one "
        "Lua script call (one per namespace on a Redis Cluster), so they were applied whole or not at all; "
        "the store reconnects on its next call"
    )


def _args(call: Call) -> tuple[Any, ...]:
    if call.script is None:
        return call.args
    return ("EVALSHA", _SHA[call.script], len(call.keys), *call.keys, *call.args)


def _pack(calls: list[Call], encoder: Any) -> bytes:
    """The commands in RESP, as redis-py would write them for these argument types (str, bytes,
    int, float), in less than half its time: a put's arguments cost it ~40 us."""
    enc, errors = encoder.encoding, encoder.encoding_errors
    parts: list[bytes] = []
    text: list[str] = []  # built as text and encoded once; bytes arguments are spliced in
    for call in calls:
        args = _args(call)
        text.append(f"*{len(args)}\r\n")
        for a in args:
            if type(a) is bytes:
                text.append(f"${len(a)}\r\n")
                parts += ("".join(text).encode(enc, errors), a)
                text = ["\r\n"]
            else:
                s = a if type(a) is str else str(a)
                n = len(s) if s.isascii() else len(s.encode(enc, errors))
                text.append(f"${n}\r\n{s}\r\n")
    parts.append("".join(text).encode(enc, errors))
    return b"".join(parts)


def _stale(conn: Any) -> bool:
    """Whether a kept connection has unread data or a closed socket (as the pool checks on checkout)."""
    try:
        return bool(conn._sock is not None and conn.can_read())
    except (redis.ConnectionError, OSError):
        return True


def _reply(conn: Any) -> Any:
    try:
        return conn.read_response()
    except ResponseError as exc:
        return exc


def _outcome(request: Round, results: list[Any]) -> list[Any]:
    if request.check:
        for r in results:
            if isinstance(r, Exception):
                raise r
    return results


def _missing_scripts(request: Round, results: list[Any]) -> list[int]:
    """Positions of script calls that failed with NOSCRIPT: they did not run and are safe to resend."""
    return [
        i for i, r in enumerate(results) if isinstance(r, NoScriptError) and request.calls[i].script
    ]


class _RedisConfig:
    """What the sync and async Redis stores share beyond the common store base."""

    index_spec: Any

    def __repr__(self) -> str:
        """Where the store points, never with credentials (safe to log or show in a notebook)."""
        client: Any = getattr(self, "client", None)
        kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
        where = f"host={kwargs.get('host')!r}, port={kwargs.get('port')!r}, " if kwargs else ""
        return f"{type(self).__name__}({where}prefix={self.keys.prefix!r}, mode={self.mode!r})"

    def _configure_redis(self, prefix: str, mode: ModeOption) -> None:
        self.keys = Keys(prefix)
        if mode not in ("auto", "query_engine", "plain"):
            raise ValueError(f"mode must be 'auto', 'query_engine' or 'plain', got {mode!r}")
        self.requested_mode: ModeOption = mode
        self.mode: Mode | None = None
        self.cluster = False
        self._stats = SearchStats()

    def _plan(self, ops: Iterable[Op], *, if_absent: bool = False) -> Plan:
        """The batch plan, detecting the mode first (``setup()``) if the store has not yet."""
        if self.mode is None:
            self.mode = yield from setup_plan(
                self.keys, self.index_spec, self.requested_mode, self.cluster
            )
        return (
            yield from plan(
                self.keys,
                self.mode,
                self.index_spec,
                ops,
                if_absent=if_absent,
                cluster=self.cluster,
                stats=self._stats,
            )
        )


class RedisStore(_RedisConfig, SyncStore):
    """A LangGraph store on Redis or Valkey (redis-py, sync).

    ``mode="auto"`` uses the Redis Query Engine (Redis 8, Redis Stack) when the server has it and
    plain Redis structures otherwise. All writes of a ``batch`` are applied by one Lua script call,
    atomically; reads in a batch see the state before its writes. ``setup()`` runs on first use.
    """

    def __init__(
        self,
        client: redis.Redis | redis.cluster.RedisCluster | str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        prefix: str = "langmem",
        mode: ModeOption = "auto",
    ) -> None:
        self._configure(index, ttl)
        self._configure_redis(prefix, mode)
        # Typed as redis.Redis for callers (the CLI): a RedisCluster offers the same commands used here.
        self._owns_client = isinstance(client, str)
        if isinstance(client, str):  # a URL, as the official stores accept
            client = redis.Redis.from_url(client)
        self.client = cast(redis.Redis, client)
        self.cluster = isinstance(client, redis.cluster.RedisCluster)
        # One pooled connection the store keeps while a thread can have it (see ``_send``); not
        # from a small or blocking pool, where it would starve the client's other users.
        pool = getattr(client, "connection_pool", None)
        self._keep = not isinstance(pool, redis.BlockingConnectionPool) and (
            getattr(pool, "max_connections", 0) >= 16
        )
        self._held: Any = None
        self._held_pid = 0
        self._held_lock = threading.Lock()

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        url: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        prefix: str = "langmem",
        mode: ModeOption = "auto",
    ) -> Iterator[RedisStore]:
        """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``), yield a set-up store, close on exit."""
        client = redis.Redis.from_url(url)
        try:
            store = cls(client, index=index, ttl=ttl, prefix=prefix, mode=mode)
            store.setup()
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                store.start_ttl_sweeper()
            try:
                yield store
            finally:
                store.stop_ttl_sweeper()
        finally:
            client.close()

    def _send(self, request: Round) -> list[Any]:
        """Send a round's commands in one write and read the raw replies (errors as values).

        On a single server this talks to a pooled connection directly: redis-py's pipeline costs more
        than the round trip itself. The store keeps one connection for whichever thread gets it
        first (checking out a pooled one costs about a tenth of a ``get``); a thread that finds it
        busy, or a store on a small or blocking pool, checks one out per call. Cluster and
        single-connection clients use a pipeline.
        """
        if self.cluster or self.client.connection is not None:
            pipe = self.client.pipeline(transaction=False)
            for call in request.calls:
                pipe.execute_command(*_args(call))
            return pipe.execute(raise_on_error=False)
        if not self._keep or not self._held_lock.acquire(blocking=False):
            return self._send_on(self.client.connection_pool.get_connection(), request, True)
        try:
            if self._held is None or self._held_pid != os.getpid():
                self._held, self._held_pid = (
                    self.client.connection_pool.get_connection(),
                    os.getpid(),
                )
            elif _stale(self._held):
                self._held.disconnect()  # the server went away: the next command reconnects
            return self._send_on(self._held, request, False)
        finally:
            self._held_lock.release()

    def _send_on(self, conn: Any, request: Round, release: bool) -> list[Any]:
        """Write the round on ``conn`` and read every reply; a failure closes the connection."""
        try:
            conn.send_packed_command([_pack(request.calls, conn.encoder)])
            return [_reply(conn) for _ in request.calls]
        except BaseException:
            conn.disconnect()  # replies may be pending: never reuse it
            raise
        finally:
            if release:
                self.client.connection_pool.release(conn)

    def _execute(self, request: Round) -> list[Any]:
        """Send a round's commands together, reloading Lua scripts the server has forgotten."""
        results = self._send(request)
        for i in _missing_scripts(request, results):
            call = request.calls[i]
            assert call.script is not None
            self.client.script_load(SCRIPTS[call.script])
            results[i] = self.client.execute_command(*_args(call))
        return _outcome(request, results)

    def _run(self, steps: Plan) -> Any:
        """Drive a plan: embed with the sync embedder, send rounds as pipelines."""
        try:
            request = next(steps)
            while True:
                if isinstance(request, Embed):
                    answer: Any = self._embed(request)
                else:
                    answer = self._execute(request)
                request = steps.send(answer)
        except StopIteration as done:
            return done.value
        except _LOST as exc:
            raise _lost(exc) from exc

    def close(self) -> None:
        """Stop the sweeper, give back the kept connection, close the client if the store made it."""
        self.stop_ttl_sweeper()
        with self._held_lock:
            if self._held is not None and self._held_pid == os.getpid():
                self.client.connection_pool.release(self._held)
            self._held = None
        if self._owns_client:
            self.client.close()

    def setup(self) -> None:
        """Detect the mode and create the search index (idempotent, safe to call concurrently)."""
        self.mode = self._run(
            setup_plan(self.keys, self.index_spec, self.requested_mode, self.cluster)
        )

    def sweep_ttl(self) -> int:
        """Items expire natively; this drops their index entries now and returns how many went."""
        return int(self._run(sweep_plan(self.keys)))


class AsyncRedisStore(_RedisConfig, AsyncStore):
    """The async twin of :class:`RedisStore` on a ``redis.asyncio.Redis`` client.

    Sync methods work from other threads (they run on the store's event loop) and raise
    ``asyncio.InvalidStateError`` when called on that loop, where they would deadlock.
    """

    def __init__(
        self,
        client: aredis.Redis | acluster.RedisCluster | str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        prefix: str = "langmem",
        mode: ModeOption = "auto",
    ) -> None:
        self._configure(index, ttl)
        self._configure_redis(prefix, mode)
        self._owns_client = isinstance(client, str)
        if isinstance(client, str):  # a URL, like the official AsyncRedisStore(redis_url)
            client = aredis.Redis.from_url(client)
        self.client = cast(aredis.Redis, client)
        self.cluster = isinstance(client, acluster.RedisCluster)
        self._bind_loop()

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        url: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        prefix: str = "langmem",
        mode: ModeOption = "auto",
    ) -> AsyncIterator[AsyncRedisStore]:
        """Async context manager twin of :meth:`RedisStore.from_conn_string`.

        The client's pool blocks when all its connections are busy, so many concurrent tasks queue
        instead of failing with ``MaxConnectionsError``.
        """
        client = aredis.Redis.from_pool(
            aredis.BlockingConnectionPool.from_url(url, max_connections=64)
        )
        try:
            store = cls(client, index=index, ttl=ttl, prefix=prefix, mode=mode)
            await store.setup()
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                await store.start_ttl_sweeper()
            try:
                yield store
            finally:
                await store.stop_ttl_sweeper()
        finally:
            await client.aclose()

    async def _execute(self, request: Round) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for call in request.calls:
            pipe.execute_command(*_args(call))
        results = await pipe.execute(raise_on_error=False)
        for i in _missing_scripts(request, results):
            call = request.calls[i]
            assert call.script is not None
            await self.client.script_load(SCRIPTS[call.script])
            results[i] = await self.client.execute_command(*_args(call))
        return _outcome(request, results)

    async def _run(self, steps: Plan) -> Any:
        """Drive a plan with awaits: the same requests as the sync store, executed asynchronously."""
        try:
            request = next(steps)
            while True:
                if isinstance(request, Embed):
                    answer: Any = await self._aembed(request)
                else:
                    answer = await self._execute(request)
                request = steps.send(answer)
        except StopIteration as done:
            return done.value
        except _LOST as exc:
            raise _lost(exc) from exc

    async def aclose(self) -> None:
        """Stop the sweeper and close the client if the store made it from a URL."""
        await self.stop_ttl_sweeper()
        if self._owns_client:
            await self.client.aclose()

    async def setup(self) -> None:
        """Detect the mode and create the search index (idempotent, safe to call concurrently)."""
        self.mode = await self._drive(
            setup_plan(self.keys, self.index_spec, self.requested_mode, self.cluster)
        )

    async def sweep_ttl(self) -> int:
        """Items expire natively; this drops their index entries now and returns how many went."""
        return int(await self._drive(sweep_plan(self.keys)))
