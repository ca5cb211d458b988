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
from redis.exceptions import ClusterDownError, MaxConnectionsError, NoScriptError, ResponseError
from redis.utils import HIREDIS_AVAILABLE

if HIREDIS_AVAILABLE:  # redis-py writes commands with it then, and so do we
    import hiredis

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
    if isinstance(exc, MaxConnectionsError):
        return StoreConnectionError(
            f"the Redis client's connection pool is exhausted ({exc}); nothing was sent; give the client "
            "a BlockingConnectionPool (as from_conn_string and a URL do) or a larger max_connections"
        )
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


# Connections of the pool a store makes for a URL: tasks and threads beyond it wait for one.
POOL_SIZE = 64


def _one_client(client: Any, alias: Any, alias_name: str) -> Any:
    """The client (or URL) given positionally or under the official store's keyword, not both."""
    if client is not None and alias is not None:
        raise TypeError(f"pass the Redis client once: positionally or as {alias_name}=, not both")
    if client is None and alias is None:
        raise TypeError(f"a Redis client or URL is required (positionally or as {alias_name}=)")
    return client if client is not None else alias


def _one_prefix(prefix: str | None, store_prefix: str | None) -> str:
    """``prefix``, or the official stores' ``store_prefix`` under its name here."""
    if prefix is not None and store_prefix is not None and prefix != store_prefix:
        raise TypeError("pass the key prefix once: as prefix= or as store_prefix=, not both")
    return prefix or store_prefix or "langmem"


def _check_cluster_mode(cluster_mode: bool | None, cluster: bool) -> None:
    """The official stores' ``cluster_mode``: here the client's type decides; a mismatch is an error."""
    if cluster_mode is not None and bool(cluster_mode) != cluster:
        kind = "a RedisCluster client" if cluster else "a single-server client"
        raise ValueError(
            f"cluster_mode={cluster_mode!r} does not match the client, which is {kind}"
        )


def _args(call: Call) -> tuple[Any, ...]:
    if call.script is None:
        return call.args
    return ("EVALSHA", _SHA[call.script], len(call.keys), *call.keys, *call.args)


def _pack(calls: list[Call], encoder: Any) -> bytes:
    """The commands in RESP, byte for byte as redis-py would write them: with hiredis's C writer
    where redis-py uses it (hiredis >= 3.2 installed, whatever the encoding), else with ours."""
    if HIREDIS_AVAILABLE:
        return b"".join([hiredis.pack_command(_args(call)) for call in calls])
    return _pack_text(calls, encoder)


def _pack_text(calls: list[Call], encoder: Any) -> bytes:
    """redis-py's pure-Python RESP writer for these argument types (str, bytes, int, float), in
    less than half its time: a put's arguments cost it ~40 us."""
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
        client: redis.Redis | redis.cluster.RedisCluster | str | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        prefix: str | None = None,
        mode: ModeOption = "auto",
        conn: redis.Redis | redis.cluster.RedisCluster | None = None,
        store_prefix: str | None = None,
        vector_prefix: str | None = None,
        cluster_mode: bool | None = None,
    ) -> None:
        """``client`` is a redis-py client or a URL. ``conn``, ``store_prefix`` (= ``prefix``,
        default ``"langmem"``) and ``cluster_mode`` are the official store's names, accepted so that
        switching is one import; ``vector_prefix`` is accepted and unused (vectors live beside each
        item, under ``prefix``)."""
        client = _one_client(client, conn, "conn")
        self._configure(index, ttl)
        self._configure_redis(_one_prefix(prefix, store_prefix), mode)
        # Typed as redis.Redis for callers (the CLI): a RedisCluster offers the same commands used here.
        self._owns_client = isinstance(client, str)
        if isinstance(client, str):  # a URL, as the official stores accept
            client = redis.Redis.from_url(client)
        self.client = cast(redis.Redis, client)
        self.cluster = isinstance(client, redis.cluster.RedisCluster)
        _check_cluster_mode(cluster_mode, self.cluster)
        # One pooled connection the store keeps while a thread can have it (see ``_send``); not
        # from a small or blocking pool, where it would starve the client's other users.
        pool = getattr(client, "connection_pool", None)
        max_connections = getattr(pool, "max_connections", 0)
        self._keep = (
            not isinstance(pool, redis.BlockingConnectionPool)
            and isinstance(max_connections, int)
            and max_connections >= 16
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
        prefix: str | None = None,
        mode: ModeOption = "auto",
        store_prefix: str | None = None,
        vector_prefix: str | None = None,
    ) -> Iterator[RedisStore]:
        """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``), yield a set-up store, close on exit."""
        client = redis.Redis.from_url(url)
        try:
            store = cls(
                client,
                index=index,
                ttl=ttl,
                prefix=_one_prefix(prefix, store_prefix),
                mode=mode,
                vector_prefix=vector_prefix,
            )
            store.setup()
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                store.start_ttl_sweeper()
            try:
                yield store
            finally:
                store.stop_ttl_sweeper()
        finally:
            client.close()

    def __enter__(self) -> RedisStore:
        """``with RedisStore(...) as store:`` closes the store (see :meth:`close`) on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        client: aredis.Redis | acluster.RedisCluster | str | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        prefix: str | None = None,
        mode: ModeOption = "auto",
        redis_url: str | None = None,
        redis_client: aredis.Redis | acluster.RedisCluster | None = None,
        connection_args: dict[str, Any] | None = None,
        store_prefix: str | None = None,
        vector_prefix: str | None = None,
        cluster_mode: bool | None = None,
    ) -> None:
        """``client`` is a ``redis.asyncio`` client or a URL; for a URL the store makes a client whose
        pool blocks when all its connections are busy, so many concurrent tasks queue instead of
        failing. ``redis_url`` / ``redis_client``, ``connection_args`` (for that client),
        ``store_prefix`` (= ``prefix``, default ``"langmem"``) and ``cluster_mode`` are the official
        store's names; ``vector_prefix`` is accepted and unused (vectors live beside each item,
        under ``prefix``)."""
        if redis_url is not None and redis_client is not None:
            raise TypeError("pass redis_url= or redis_client=, not both")
        client = _one_client(client, redis_url or redis_client, "redis_url/redis_client")
        self._configure(index, ttl)
        self._configure_redis(_one_prefix(prefix, store_prefix), mode)
        self._owns_client = isinstance(client, str)
        if isinstance(client, str):  # a URL, like the official AsyncRedisStore(redis_url)
            options = {"max_connections": POOL_SIZE, **(connection_args or {})}
            client = aredis.Redis.from_pool(
                aredis.BlockingConnectionPool.from_url(client, **options)
            )
        elif connection_args:
            raise TypeError("connection_args apply to a URL, not to a client already made")
        self.client = cast(aredis.Redis, client)
        self.cluster = isinstance(client, acluster.RedisCluster)
        _check_cluster_mode(cluster_mode, self.cluster)
        self._bind_loop()

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        url: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        prefix: str | None = None,
        mode: ModeOption = "auto",
        store_prefix: str | None = None,
        vector_prefix: str | None = None,
    ) -> AsyncIterator[AsyncRedisStore]:
        """Async context manager twin of :meth:`RedisStore.from_conn_string`, on a blocking pool
        (see ``__init__``): many concurrent tasks queue instead of failing with ``MaxConnectionsError``.
        """
        store = cls(
            url,
            index=index,
            ttl=ttl,
            prefix=_one_prefix(prefix, store_prefix),
            mode=mode,
            vector_prefix=vector_prefix,
        )
        try:
            await store.setup()
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                await store.start_ttl_sweeper()
            yield store
        finally:
            await store.aclose()

    async def __aenter__(self) -> AsyncRedisStore:
        """``async with AsyncRedisStore(...) as store:`` closes the store (see :meth:`aclose`) on exit."""
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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
