"""``RedisStore`` and ``AsyncRedisStore``: LangGraph ``BaseStore``s on redis-py.

Both run the plans of :mod:`langmem_adapters.redis.plan` and :mod:`~langmem_adapters.redis.export`
(written once); they differ only in how a plan's requests are executed (blocking pipelines, or
awaits on ``redis.asyncio``). Either takes a single-server client, a client of a primary behind Redis
Sentinel (``Sentinel(...).master_for(name)``, or a ``redis+sentinel://`` URL: see
:mod:`~langmem_adapters.redis.urls`) or a Redis Cluster client (``redis.cluster.RedisCluster`` /
``redis.asyncio.cluster.RedisCluster``).

A lost connection (or a server still loading its data) raises
:class:`~langmem_adapters.errors.StoreConnectionError` for the batch in flight: its writes ran in one
Lua script call (one per namespace on a cluster), so they were applied whole or not at all; redis-py
reconnects on the next call. Any other error of redis-py (an error reply such as ``OOM`` or
``READONLY``) raises :class:`~langmem_adapters.errors.ServerRefusedError`, the driver's as its cause.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, TypedDict, cast

import redis
import redis.asyncio as aredis
import redis.asyncio.cluster as acluster
import redis.cluster
from langgraph.store.base import IndexConfig, TTLConfig

from langmem_adapters.core.async_store import AsyncStore
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.errors import InvalidArgumentTypeError
from langmem_adapters.redis.backend import RedisBackend
from langmem_adapters.redis.connection import AsyncWire, Wire
from langmem_adapters.redis.durability import replica_wait
from langmem_adapters.redis.options import (
    POOL_SIZE,
    ModeOption,
    check_cluster_mode,
    one_client,
    one_prefix,
)
from langmem_adapters.redis.scripts import Round
from langmem_adapters.redis.sessions import AsyncSession, session
from langmem_adapters.redis.stats import RedisStats
from langmem_adapters.redis.urls import (
    aclose_client,
    async_client,
    close_client,
    sync_client,
)
from langmem_adapters.redis.writes import sweep_plan

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11

__all__ = ["AsyncRedisStore", "RedisStore"]


class ConnOptions(TypedDict, total=False):
    """The keywords ``from_conn_string`` passes on to the store it makes (see the store's
    ``__init__``)."""

    index: IndexConfig | None
    ttl: TTLConfig | None
    prefix: str | None
    mode: ModeOption
    store_prefix: str | None
    vector_prefix: str | None
    wait_replicas: int
    wait_timeout: float


class RedisStore(RedisBackend, SyncStore[RedisStats]):
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
        wait_replicas: int = 0,
        wait_timeout: float = 1.0,
    ) -> None:
        """``client`` is a redis-py client or a URL (``redis+sentinel://`` too). ``conn``,
        ``store_prefix`` (= ``prefix``, default ``"langmem"``) and ``cluster_mode`` are the official
        store's names, accepted so that switching is one import; ``vector_prefix`` is accepted and
        unused (vectors live beside each item, under ``prefix``). ``wait_replicas=N``: a write is
        acknowledged only once N replicas have it (``WAIT``, up to ``wait_timeout`` seconds; see
        :mod:`~langmem_adapters.redis.durability`)."""
        client = one_client(client, conn, "conn")
        wait = replica_wait(
            wait_replicas, wait_timeout, isinstance(client, redis.cluster.RedisCluster)
        )
        self._configure(index, ttl)
        self._configure_redis(one_prefix(prefix, store_prefix), mode)
        # Typed as redis.Redis for callers (the CLI): a RedisCluster offers the same commands used here.
        self._owns_client = isinstance(client, str)
        if isinstance(client, str):  # a URL, as the official stores accept
            client = sync_client(client)
        self.client = cast(redis.Redis, client)
        self.cluster = isinstance(client, redis.cluster.RedisCluster)
        check_cluster_mode(cluster_mode, self.cluster)
        self._wire = Wire(client, self.cluster, wait)
        self._execute: Callable[[Round], list[Any]] = self._wire.execute

    @classmethod
    @contextmanager
    def from_conn_string(cls, url: str, **options: Unpack[ConnOptions]) -> Iterator[RedisStore]:
        """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``, ``redis+sentinel://``), yield
        a set-up store, close it (and its client) on exit. ``options``: the store's own keywords
        (:class:`ConnOptions`)."""
        store = cls(url, **options)
        try:
            store.setup()
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                store.start_ttl_sweeper()
            yield store
        finally:
            store.close()

    def __enter__(self) -> RedisStore:
        """``with RedisStore(...) as store:`` closes the store (see :meth:`close`) on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session(self) -> AbstractContextManager[Callable[[Round], list[Any]]]:
        """The context of one plan run: yields ``_execute``; a lost connection raises
        ``StoreConnectionError``."""
        return session(self)

    def close(self) -> None:
        """Stop the background work (sweeper, calibration), give back the kept connection, close
        the client if the store made it."""
        self._stop_background()
        self._wire.close()
        if self._owns_client:
            close_client(self.client)

    def setup(self) -> None:
        """Detect the mode and create the search index (idempotent, safe to call concurrently)."""
        self._run(self._setup())

    def sweep_ttl(self) -> int:
        """Items expire natively; this drops their index entries now and returns how many went."""
        return int(self._run(sweep_plan(self.keys)))


class AsyncRedisStore(RedisBackend, AsyncStore[RedisStats]):
    """The async twin of :class:`RedisStore` on a ``redis.asyncio.Redis`` client.

    Sync methods work from other threads (they run on the store's event loop) and raise
    ``WrongLoopError`` (an ``asyncio.InvalidStateError``) when called on that loop, where they would
    deadlock.
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
        wait_replicas: int = 0,
        wait_timeout: float = 1.0,
    ) -> None:
        """``client`` is a ``redis.asyncio`` client or a URL; for a URL the store makes a client with
        at most 64 connections, for which many concurrent tasks queue instead of failing.
        ``redis_url`` / ``redis_client``, ``connection_args`` (for that client), ``store_prefix``
        (= ``prefix``, default ``"langmem"``) and ``cluster_mode`` are the official store's names;
        ``vector_prefix`` is accepted and unused (vectors live beside each item, under ``prefix``).
        ``wait_replicas`` and ``wait_timeout`` as in :class:`RedisStore`."""
        if redis_url is not None and redis_client is not None:
            raise InvalidArgumentTypeError("pass redis_url= or redis_client=, not both")
        client = one_client(client, redis_url or redis_client, "redis_url/redis_client")
        wait = replica_wait(wait_replicas, wait_timeout, isinstance(client, acluster.RedisCluster))
        self._configure(index, ttl)
        self._configure_redis(one_prefix(prefix, store_prefix), mode)
        self._owns_client = isinstance(client, str)
        if isinstance(client, str):  # a URL, like the official AsyncRedisStore(redis_url)
            client = async_client(client, POOL_SIZE, connection_args or {})
        elif connection_args:
            raise InvalidArgumentTypeError(
                "connection_args apply to a URL, not to a client already made"
            )
        self.client = cast(aredis.Redis, client)
        self.cluster = isinstance(client, acluster.RedisCluster)
        check_cluster_mode(cluster_mode, self.cluster)
        wire = AsyncWire(self.client, wait)
        self._execute: Callable[[Round], Awaitable[list[Any]]] = wire.execute
        self._sessions = AsyncSession(self, wire.slots)
        self._bind_loop()

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, url: str, **options: Unpack[ConnOptions]
    ) -> AsyncIterator[AsyncRedisStore]:
        """Async context manager twin of :meth:`RedisStore.from_conn_string`, on a blocking pool
        (see ``__init__``): many concurrent tasks queue instead of failing with ``MaxConnectionsError``.
        """
        store = cls(url, **options)
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

    def _session(self) -> AsyncSession:
        """The context of one plan run: yields ``_execute``; a lost connection raises
        ``StoreConnectionError``."""
        return self._sessions

    async def aclose(self) -> None:
        """Stop the background work (sweeper, calibration); close the client if made from a URL."""
        await self._stop_background()
        if self._owns_client:
            await aclose_client(self.client)

    async def setup(self) -> None:
        """Detect the mode and create the search index (idempotent, safe to call concurrently)."""
        await self._drive(self._setup())

    async def sweep_ttl(self) -> int:
        """Items expire natively; this drops their index entries now and returns how many went."""
        return int(await self._drive(sweep_plan(self.keys)))
