"""Redis Sentinel: the stores on a primary found through real sentinels, in both modes, from a
``redis+sentinel://`` URL and from a client of the caller's; after the primary is killed (SIGKILL)
they follow the promoted replica on their own, and with ``wait_replicas=1`` every write they
acknowledged before the kill is there after it.

Round trips use ``LANGMEM_TEST_REDIS_SENTINEL_URL`` when set (see tests/servers.py); the failover
tests start their own primary, two replicas and three sentinels, one failover per mode.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
import redis.asyncio.sentinel as asentinel
import redis.sentinel
from langgraph.store.base import GetOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.redis.scripts import SHA
from langmem_adapters.redis.urls import (
    SentinelTarget,
    aclose_client,
    close_client,
    parse_sentinel_url,
)
from tests import servers
from tests.stores import hash_index
from tests.waiting import await_until

MODES = ["query_engine", "plain"]
DEADLINE = 30.0  # seconds a failover may take before the test fails


@pytest.fixture(scope="module")
def target() -> SentinelTarget:
    return parse_sentinel_url(servers.redis_sentinel_url())


def _prefix(tag: str) -> str:
    return f"sentinel{tag}{time.monotonic_ns()}"


def _options(mode: str, tag: str, **extra: Any) -> dict[str, Any]:
    """A fresh store's keywords: the offline embedder, its own key prefix, ``mode``."""
    return {"index": hash_index(), "prefix": _prefix(tag), "mode": mode, **extra}


def _sync_client(target: SentinelTarget) -> redis.Redis:
    """A client of the caller's, as redis-py documents it: ``Sentinel(...).master_for(name)``."""
    sentinel = redis.sentinel.Sentinel(target.sentinels, sentinel_kwargs=target.sentinel_kwargs())
    return sentinel.master_for(target.service_name, **target.node_kwargs())


def _async_client(target: SentinelTarget) -> aredis.Redis:
    sentinel = asentinel.Sentinel(target.sentinels, sentinel_kwargs=target.sentinel_kwargs())
    return sentinel.master_for(target.service_name, **target.node_kwargs())


ITEMS = {
    "tea": {"text": "green tea with jasmine", "kind": "drink"},
    "bike": {"text": "a red bicycle with a basket", "kind": "thing"},
    "coffee": {"text": "strong black coffee", "kind": "drink"},
}


def _check_found(found: list[Any]) -> None:
    """What a search for tea among drinks returns: both drinks, the tea first."""
    assert [item.key for item in found][:1] == ["tea"]
    assert {item.key for item in found} == {"tea", "coffee"}


def _round_trip(store: RedisStore) -> None:
    ns = ("users", "u1")
    for key, value in ITEMS.items():
        store.put(ns, key, value)
    assert store.get(ns, "bike").value == ITEMS["bike"]  # type: ignore[union-attr]
    _check_found(store.search(("users",), query="jasmine tea", filter={"kind": "drink"}))
    assert store.list_namespaces(prefix=("users",)) == [ns]
    store.delete(ns, "bike")
    assert store.get(ns, "bike") is None


async def _around_trip(store: AsyncRedisStore) -> None:
    ns = ("users", "u1")
    for key, value in ITEMS.items():
        await store.aput(ns, key, value)
    assert (await store.aget(ns, "bike")).value == ITEMS["bike"]  # type: ignore[union-attr]
    _check_found(await store.asearch(("users",), query="jasmine tea", filter={"kind": "drink"}))
    assert await store.alist_namespaces(prefix=("users",)) == [ns]
    await store.adelete(ns, "bike")
    assert await store.aget(ns, "bike") is None


@pytest.mark.parametrize("mode", MODES)
def test_sync_store_from_a_sentinel_url(target: SentinelTarget, mode: str) -> None:
    url = servers.redis_sentinel_url()
    with RedisStore.from_conn_string(url, **_options(mode, "u", wait_replicas=1)) as store:
        assert store.mode == mode
        assert f"sentinel_service={target.service_name!r}" in repr(store)
        _round_trip(store)


@pytest.mark.parametrize("mode", MODES)
def test_sync_store_on_a_sentinel_client(target: SentinelTarget, mode: str) -> None:
    client = _sync_client(target)
    try:
        store = RedisStore(client, **_options(mode, "c"))
        store.setup()
        assert store.mode == mode
        _round_trip(store)
        store.close()
        client.ping()  # the caller's client stays open
    finally:
        close_client(client)  # and its sentinel clients


@pytest.mark.parametrize("mode", MODES)
async def test_async_store_from_a_sentinel_url(target: SentinelTarget, mode: str) -> None:
    url = servers.redis_sentinel_url()
    async with AsyncRedisStore.from_conn_string(
        url, **_options(mode, "au", wait_replicas=1)
    ) as store:
        assert store.mode == mode
        await _around_trip(store)


async def test_async_store_from_a_sentinel_url_queues_beyond_its_pool() -> None:
    """redis-py's Sentinel pool fails when full instead of waiting; the store queues its
    operations up to the pool's size instead, so many gathered tasks all complete."""
    url = servers.redis_sentinel_url()
    async with AsyncRedisStore.from_conn_string(url, prefix=_prefix("q")) as store:
        pass  # set up once
    store = AsyncRedisStore(url, prefix=store.keys.prefix, connection_args={"max_connections": 4})
    try:
        await asyncio.gather(*(store.aput(("q",), f"k{i}", {"i": i}) for i in range(300)))
        found = await asyncio.gather(*(store.aget(("q",), f"k{i}") for i in range(300)))
        assert [item.value["i"] for item in found if item is not None] == list(range(300))
    finally:
        await store.aclose()


@pytest.mark.parametrize("mode", MODES)
async def test_async_store_on_a_sentinel_client(target: SentinelTarget, mode: str) -> None:
    client = _async_client(target)
    try:
        store = AsyncRedisStore(client, **_options(mode, "ac"))
        await store.setup()
        await _around_trip(store)
        await store.aclose()
        assert await client.ping()
    finally:
        await aclose_client(client)


def test_wait_replicas_counts_the_replicas(target: SentinelTarget) -> None:
    """As many replicas as exist confirm each write; one more than exist cannot, and the write
    (here the store's setup, its first write) fails with the reason instead of being acknowledged."""
    with RedisStore.from_conn_string(servers.redis_sentinel_url(), prefix=_prefix("w")) as store:
        replicas = int(store.client.info("replication")["connected_slaves"])
        assert replicas >= 1
        strict = RedisStore(
            store.client, prefix=store.keys.prefix, wait_replicas=replicas + 1, wait_timeout=0.05
        )
        with pytest.raises(StoreConnectionError, match=f"of the {replicas + 1} replicas"):
            strict.put(("ns",), "k", {"v": 1})
        enough = RedisStore(store.client, prefix=store.keys.prefix, wait_replicas=replicas)
        enough.put(("ns",), "k", {"v": 2})
        assert store.get(("ns",), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_forgotten_script_is_reloaded_and_its_write_confirmed(target: SentinelTarget) -> None:
    """A primary without our scripts (flushed, as on a promoted replica): the write is resent after
    loading, with its WAIT, so every replica has it once the put returns."""
    with RedisStore.from_conn_string(servers.redis_sentinel_url(), prefix=_prefix("n")) as store:
        replicas = int(store.client.info("replication")["connected_slaves"])
        strict = RedisStore(store.client, prefix=store.keys.prefix, wait_replicas=replicas)
        store.client.script_flush()
        strict.put(("ns", "a"), "k", {"v": 1})
        assert store.client.script_exists(SHA["write"]) == [True]
        sentinel = redis.sentinel.Sentinel(
            target.sentinels, sentinel_kwargs=target.sentinel_kwargs()
        )
        try:
            nodes = sentinel.discover_slaves(target.service_name)
        finally:
            for client in sentinel.sentinels:
                client.close()
        assert len(nodes) == replicas
        for host, port in nodes:
            with redis.Redis(host, port, **target.node_kwargs()) as replica:
                assert replica.exists(store.keys.item(nsp.join(("ns", "a")), "k")) == 1


# --------------------------------------------------------------------------- failover


@dataclass
class Writer:
    """One store's writes during the failover (each read back, and a search now and then): which
    were acknowledged before and after the kill, and the errors seen meanwhile (only ours)."""

    name: str
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    recovered_after: float | None = None  # seconds from the kill to the first write acknowledged


@dataclass
class Failover:
    """What the writers share: whether and when the primary was killed."""

    killed_at: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    def record(self, writer: Writer, key: str) -> None:
        if self.killed_at is None:
            writer.before.append(key)
            return
        if writer.recovered_after is None:
            writer.recovered_after = time.monotonic() - self.killed_at
        writer.after.append(key)


def _check_read(item: Any, i: int) -> None:
    """A write just acknowledged reads back (the same store, the same primary or its successor)."""
    assert item is not None and item.value == {"i": i}


def _sync_writer(store: RedisStore, writer: Writer, failover: Failover) -> None:
    for i in range(1_000_000):
        if failover.stop.is_set():
            return
        key = f"{writer.name}{i}"
        try:
            store.put(("failover", writer.name), key, {"i": i})
            failover.record(writer, key)
            _check_read(store.get(("failover", writer.name), key), i)
            if i % 10 == 0:  # a search too (a script, reloaded on the promoted primary)
                assert store.search(("failover", writer.name), limit=1)
        except StoreConnectionError as exc:  # the primary is gone, or no primary is known yet
            writer.failures.append(str(exc))
            failover.stop.wait(0.02)  # retry pause (a client's backoff), not a synchronisation


async def _async_writer(store: AsyncRedisStore, writer: Writer, failover: Failover) -> None:
    for i in range(1_000_000):
        if failover.stop.is_set():
            return
        key = f"{writer.name}{i}"
        try:
            await store.aput(("failover", writer.name), key, {"i": i})
            failover.record(writer, key)
            _check_read(await store.aget(("failover", writer.name), key), i)
            if i % 10 == 0:
                assert await store.asearch(("failover", writer.name), limit=1)
        except StoreConnectionError as exc:
            writer.failures.append(str(exc))
            await asyncio.sleep(0.02)  # retry pause, as above


async def _until(condition: Callable[[], bool], failure: str) -> None:
    """Wait for ``condition`` (polled), failing the test after ``DEADLINE`` seconds."""
    await await_until(condition, DEADLINE, failure, interval=0.02)


@pytest.fixture(params=MODES)
def setup(request: pytest.FixtureRequest) -> Iterator[tuple[servers.SentinelSetup, str]]:
    """A fresh primary, two replicas and three sentinels (with the Query Engine for that mode)."""
    mode = str(request.param)
    started = servers.SentinelSetup(modules=mode == "query_engine")
    yield started, mode
    started.close()


@pytest.fixture
async def async_client(
    setup: tuple[servers.SentinelSetup, str],
) -> AsyncIterator[aredis.Redis]:
    client = _async_client(parse_sentinel_url(setup[0].url))
    yield client
    await aclose_client(client)


async def test_stores_follow_a_failover_and_keep_acknowledged_writes(
    setup: tuple[servers.SentinelSetup, str], async_client: aredis.Redis
) -> None:
    """A sync store (from the URL) and an async one (on a client of ours) write with
    ``wait_replicas=1`` while the primary is SIGKILLed; both answer again on their own once
    Sentinel has promoted a replica (which never saw our Lua scripts: they are reloaded there),
    and every write either acknowledged, before the kill or after, is there."""
    sentinels, mode = setup
    options = _options(mode, "f", wait_replicas=1)  # both stores on one prefix
    sync_store = RedisStore(sentinels.url, **options)
    async_store = AsyncRedisStore(async_client, **options)
    sync_store.setup()
    await async_store.setup()
    primary = sentinels.primary()
    # script caches are not replicated: the replica Sentinel promotes will lack ours
    for node in [n for n in sentinels.nodes if n is not primary]:
        with redis.Redis(port=node.port) as client:
            assert client.script_exists(SHA["write"]) == [False]

    failover = Failover()
    sync_writer, async_writer = Writer("s"), Writer("a")
    writers = asyncio.gather(
        asyncio.to_thread(_sync_writer, sync_store, sync_writer, failover),
        _async_writer(async_store, async_writer, failover),
    )
    try:
        await _until(
            lambda: len(sync_writer.before) >= 20 and len(async_writer.before) >= 20,
            "the stores did not write before the failover",
        )
        killed = await asyncio.to_thread(sentinels.kill_primary)
        failover.killed_at = time.monotonic()
        await _until(
            lambda: len(sync_writer.after) >= 5 and len(async_writer.after) >= 5,
            f"the stores did not write again within {DEADLINE} s of the kill: "
            f"{(sync_writer.failures + async_writer.failures)[-2:]}",
        )
    finally:
        failover.stop.set()
        await writers
    promoted = await asyncio.to_thread(sentinels.primary)
    assert promoted is not killed

    for writer in (sync_writer, async_writer):
        assert writer.failures, "the kill was not noticed: the test did not exercise a failover"
        keys = writer.before + writer.after
        got = await async_store.abatch(
            [GetOp(("failover", writer.name), key) for key in keys]  # one round trip
        )
        missing = [key for key, item in zip(keys, got) if item is None]
        assert not missing, f"acknowledged writes lost in the failover: {missing[:5]}"
    print(  # the failover times, shown with -s
        f"\n{mode}: sync store wrote again {sync_writer.recovered_after:.2f} s after the kill, "
        f"async {async_writer.recovered_after:.2f} s"
    )
    # the promoted primary serves searches too (its index came by replication)
    found = await async_store.asearch(("failover",), query="anything", limit=3)
    assert len(found) == 3
    assert sync_store.get(("failover", "a"), async_writer.after[-1]) is not None
    sync_store.close()
    await async_store.aclose()
