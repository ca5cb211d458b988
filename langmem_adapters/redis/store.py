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

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from types import TracebackType
from typing import Any, Literal, cast

import redis
import redis.asyncio as aredis
import redis.asyncio.cluster as acluster
import redis.cluster
from langgraph.store.base import IndexConfig, Op, PutOp, TTLConfig

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.identity import Identity, IdentityGuard, guarded
from langmem_adapters.core.records import Cursor, StoredItem
from langmem_adapters.core.store import AsyncStore, ItemsPage, SyncStore
from langmem_adapters.core.vectors import IndexSpec, SearchStats
from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError
from langmem_adapters.redis.connection import AsyncWire, Wire, ours
from langmem_adapters.redis.durability import replica_wait
from langmem_adapters.redis.export import items_plan, restore_plan
from langmem_adapters.redis.identity import RedisIdentity
from langmem_adapters.redis.layout import Keys, Mode
from langmem_adapters.redis.namespaces import count_plan, delete_namespace_plan
from langmem_adapters.redis.plan import plan, put_if_absent_plan
from langmem_adapters.redis.probe import RedisCalibration
from langmem_adapters.redis.reindex import RedisReindex
from langmem_adapters.redis.schema import check_mode, setup_plan
from langmem_adapters.redis.scripts import Round
from langmem_adapters.redis.urls import (
    aclose_client,
    async_client,
    close_client,
    sentinel_pool_limit,
    sync_client,
)
from langmem_adapters.redis.writes import sweep_plan

__all__ = ["AsyncRedisStore", "RedisStore"]

ModeOption = Literal["auto", "query_engine", "plain"]


class _Session:
    """The sync store's ``_session()``: yields its ``_execute`` and turns redis-py's errors into
    ours (:func:`~langmem_adapters.redis.connection.ours`). A tiny class, one per store:
    ``@contextmanager`` would cost a generator per call on a ~180 us get."""

    __slots__ = ("_store",)

    def __init__(self, store: RedisStore) -> None:
        self._store = store

    def __enter__(self) -> Callable[[Round], list[Any]]:
        return self._store._execute

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if (error := ours(exc)) is not None:
            raise error from exc


class _AsyncSession:
    """The async store's ``_session()``, as :class:`_Session`; with a bounded pool it holds one of
    the wire's slots for the plan (see :class:`~langmem_adapters.redis.connection.AsyncWire`)."""

    __slots__ = ("_slots", "_store")

    def __init__(self, store: AsyncRedisStore, slots: asyncio.Semaphore | None) -> None:
        self._store = store
        self._slots = slots

    async def __aenter__(self) -> Callable[[Round], Awaitable[list[Any]]]:
        if self._slots is not None:
            await self._slots.acquire()
            try:
                # Start I/O in the loop's next pass: this task may be one of thousands gathered at
                # once, whose first steps all run in this pass, and a connect or read timeout
                # started now would count the whole pass (seconds) against the server.
                await asyncio.sleep(0)
            except BaseException:
                self._slots.release()
                raise
        return self._store._execute

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._slots is not None:
            self._slots.release()
        if (error := ours(exc)) is not None:
            raise error from exc


# Connections of the pool a store makes for a URL: tasks and threads beyond it wait for one.
POOL_SIZE = 64


def _one_client(client: Any, alias: Any, alias_name: str) -> Any:
    """The client (or URL) given positionally or under the official store's keyword, not both."""
    if client is not None and alias is not None:
        raise InvalidArgumentTypeError(
            f"pass the Redis client once: positionally or as {alias_name}=, not both"
        )
    if client is None and alias is None:
        raise InvalidArgumentTypeError(
            f"a Redis client or URL is required (positionally or as {alias_name}=)"
        )
    return client if client is not None else alias


def _one_prefix(prefix: str | None, store_prefix: str | None) -> str:
    """``prefix``, or the official stores' ``store_prefix`` under its name here."""
    if prefix is not None and store_prefix is not None and prefix != store_prefix:
        raise InvalidArgumentTypeError(
            "pass the key prefix once: as prefix= or as store_prefix=, not both"
        )
    return prefix or store_prefix or "langmem"


def _check_cluster_mode(cluster_mode: bool | None, cluster: bool) -> None:
    """The official stores' ``cluster_mode``: here the client's type decides; a mismatch is an error."""
    if cluster_mode is not None and bool(cluster_mode) != cluster:
        kind = "a RedisCluster client" if cluster else "a single-server client"
        raise InvalidArgumentError(
            f"cluster_mode={cluster_mode!r} does not match the client, which is {kind}"
        )


class _RedisConfig(RedisCalibration):
    """What the sync and async Redis stores share beyond the common store base."""

    index_spec: IndexSpec | None
    index_config: Mapping[str, Any] | None
    _guard: IdentityGuard
    _new_stats: Callable[[], SearchStats]  # the calibration mixin's (core.calibration)

    def __repr__(self) -> str:
        """Where the store points, never with credentials (safe to log or show in a notebook)."""
        client: Any = getattr(self, "client", None)
        pool = getattr(client, "connection_pool", None)
        kwargs = getattr(pool, "connection_kwargs", {})
        where = f"host={kwargs.get('host')!r}, port={kwargs.get('port')!r}, " if kwargs else ""
        if service := getattr(pool, "service_name", None):  # a primary behind Sentinel
            where = f"sentinel_service={service!r}, "
        return f"{type(self).__name__}({where}prefix={self.keys.prefix!r}, mode={self.mode!r})"

    def _configure_redis(self, prefix: str, mode: ModeOption) -> None:
        self.keys = Keys(prefix)
        check_mode(mode)
        self.requested_mode: ModeOption = mode
        self.mode: Mode | None = None
        self.cluster = False
        self._stats = self._new_stats()

    def _ready(self) -> Steps[Mode]:
        """The store's mode, detected first (``setup()``) if the store has not yet."""
        if self.mode is None:
            self.mode = yield from setup_plan(
                self.keys, self.index_spec, self.requested_mode, self.cluster
            )
        return self.mode

    def _plan(self, ops: Iterable[Op], *, if_absent: bool = False) -> Steps[Any]:
        """The batch plan, or with ``if_absent`` the atomic create of its one put (see
        :func:`langmem_adapters.redis.plan.plan` and :func:`~.plan.put_if_absent_plan`)."""
        mode = self.mode if self.mode is not None else (yield from self._ready())
        ops = list(ops)
        keys, cluster = self.keys, self.cluster

        def steps() -> Steps[Any]:  # built after the identity check: it may switch the index
            spec = self.index_spec
            if if_absent:
                return put_if_absent_plan(keys, mode, spec, cast(PutOp, ops[0]), cluster=cluster)
            return plan(keys, mode, spec, ops, cluster=cluster, stats=self._stats)

        return (yield from guarded(self._guard, self.index_spec, self._identity_access, steps, ops))

    def _reindex_job(self, target: IndexSpec, identity: Identity) -> RedisReindex:
        """The plans re-embedding this store into ``target`` (see :meth:`reindex`)."""
        assert self.index_spec is not None
        return RedisReindex(
            self.keys, self._ready, self.index_spec, target, identity, self._switched, self.cluster
        )

    def _switched(self, spec: IndexSpec, identity: Identity) -> None:
        """After a reindex switched: the new index and identity from now on."""
        self.index_spec = spec
        self._stats = self._new_stats()
        config = {"dims": spec.dims, "embed": spec.embeddings, "fields": list(spec.fields)}
        self.index_config = {**(self.index_config or {}), **config}
        self._guard.adopt(identity, 0)

    def _identity_access(self) -> RedisIdentity:
        """Where this store's embedder identity is recorded."""
        assert self.index_spec is not None
        return RedisIdentity(self.keys, self.index_spec)

    def _items_plan(self, prefix: tuple[str, ...], after: Cursor, limit: int) -> Steps[ItemsPage]:
        """One page of ``iter_items`` (see :func:`langmem_adapters.redis.export.items_plan`)."""
        yield from self._ready()
        return (yield from items_plan(self.keys, prefix, after, limit))

    def _restore_plan(self, records: list[tuple[StoredItem, str]]) -> Steps[int]:
        """One page of ``restore`` (see :func:`langmem_adapters.redis.export.restore_plan`)."""
        mode = yield from self._ready()
        return (
            yield from guarded(
                self._guard,
                self.index_spec,
                self._identity_access,
                lambda: restore_plan(self.keys, mode, self.index_spec, records, self.cluster),
            )
        )

    def _count_plan(self, prefix: tuple[str, ...], conditions: tuple[Condition, ...]) -> Steps[int]:
        """``count`` (see :func:`langmem_adapters.redis.namespaces.count_plan`)."""
        mode = yield from self._ready()
        return (yield from count_plan(self.keys, mode, prefix, conditions))

    def _delete_namespace_plan(self, prefix: tuple[str, ...]) -> Steps[int]:
        """``delete_namespace`` (see :func:`langmem_adapters.redis.namespaces.delete_namespace_plan`)."""
        mode = yield from self._ready()
        return (yield from delete_namespace_plan(self.keys, mode, prefix, self.cluster))


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
        wait_replicas: int = 0,
        wait_timeout: float = 1.0,
    ) -> None:
        """``client`` is a redis-py client or a URL (``redis+sentinel://`` too). ``conn``,
        ``store_prefix`` (= ``prefix``, default ``"langmem"``) and ``cluster_mode`` are the official
        store's names, accepted so that switching is one import; ``vector_prefix`` is accepted and
        unused (vectors live beside each item, under ``prefix``). ``wait_replicas=N``: a write is
        acknowledged only once N replicas have it (``WAIT``, up to ``wait_timeout`` seconds; see
        :mod:`~langmem_adapters.redis.durability`)."""
        client = _one_client(client, conn, "conn")
        wait = replica_wait(
            wait_replicas, wait_timeout, isinstance(client, redis.cluster.RedisCluster)
        )
        self._configure(index, ttl)
        self._configure_redis(_one_prefix(prefix, store_prefix), mode)
        # Typed as redis.Redis for callers (the CLI): a RedisCluster offers the same commands used here.
        self._owns_client = isinstance(client, str)
        if isinstance(client, str):  # a URL, as the official stores accept
            client = sync_client(client)
        self.client = cast(redis.Redis, client)
        self.cluster = isinstance(client, redis.cluster.RedisCluster)
        _check_cluster_mode(cluster_mode, self.cluster)
        self._wire = Wire(client, self.cluster, wait)
        self._execute: Callable[[Round], list[Any]] = self._wire.execute
        self._sessions = _Session(self)

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
        wait_replicas: int = 0,
        wait_timeout: float = 1.0,
    ) -> Iterator[RedisStore]:
        """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``, ``redis+sentinel://``), yield
        a set-up store, close on exit."""
        client = sync_client(url)
        try:
            store = cls(
                client,
                index=index,
                ttl=ttl,
                prefix=_one_prefix(prefix, store_prefix),
                mode=mode,
                vector_prefix=vector_prefix,
                wait_replicas=wait_replicas,
                wait_timeout=wait_timeout,
            )
            store.setup()
            if store.ttl_config and store.ttl_config.get("sweep_interval_minutes"):
                store.start_ttl_sweeper()
            try:
                yield store
            finally:
                store.stop_ttl_sweeper()
        finally:
            close_client(client)

    def __enter__(self) -> RedisStore:
        """``with RedisStore(...) as store:`` closes the store (see :meth:`close`) on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session(self) -> _Session:
        """The context of one plan run: yields ``_execute``; a lost connection raises
        ``StoreConnectionError``."""
        return self._sessions

    def close(self) -> None:
        """Stop the sweeper, give back the kept connection, close the client if the store made it."""
        self.stop_ttl_sweeper()
        self._wire.close()
        if self._owns_client:
            close_client(self.client)

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
        client = _one_client(client, redis_url or redis_client, "redis_url/redis_client")
        wait = replica_wait(wait_replicas, wait_timeout, isinstance(client, acluster.RedisCluster))
        self._configure(index, ttl)
        self._configure_redis(_one_prefix(prefix, store_prefix), mode)
        self._owns_client = isinstance(client, str)
        if isinstance(client, str):  # a URL, like the official AsyncRedisStore(redis_url)
            client = async_client(client, POOL_SIZE, connection_args or {})
        elif connection_args:
            raise InvalidArgumentTypeError(
                "connection_args apply to a URL, not to a client already made"
            )
        self.client = cast(aredis.Redis, client)
        self.cluster = isinstance(client, acluster.RedisCluster)
        _check_cluster_mode(cluster_mode, self.cluster)
        wire = AsyncWire(self.client, wait, sentinel_pool_limit(self.client))
        self._execute: Callable[[Round], Awaitable[list[Any]]] = wire.execute
        self._sessions = _AsyncSession(self, wire.slots)
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
        wait_replicas: int = 0,
        wait_timeout: float = 1.0,
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
            wait_replicas=wait_replicas,
            wait_timeout=wait_timeout,
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

    def _session(self) -> _AsyncSession:
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
        self.mode = await self._drive(
            setup_plan(self.keys, self.index_spec, self.requested_mode, self.cluster)
        )

    async def sweep_ttl(self) -> int:
        """Items expire natively; this drops their index entries now and returns how many went."""
        return int(await self._drive(sweep_plan(self.keys)))
