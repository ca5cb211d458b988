"""Export and restore on the Redis stores: ``iter_items`` / ``restore`` (and their async twins) in
both modes, values, timestamps, expiry and TTL kept exactly, with every bookkeeping of a put."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from langmem_adapters.core.records import StoredItem
from langmem_adapters.errors import InvalidRecordError
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests import servers
from tests.redis.observe import round_trips, server_calls
from tests.stores import hash_index

UTC = timezone.utc
CREATED = datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
UPDATED = datetime(2022, 7, 8, 9, 10, 11, 654321, tzinfo=timezone(timedelta(hours=2)))


def _future(days: float = 1) -> datetime:
    """A time in the future, at the millisecond precision the store keeps expiries in."""
    at = datetime.now(UTC) + timedelta(days=days)
    return at.replace(microsecond=at.microsecond // 1000 * 1000)


class Driver:
    """One store behind the same awaitable calls, so every test runs on the sync and async store."""

    def __init__(self, store: Any, is_async: bool) -> None:
        self.store, self.is_async = store, is_async

    async def restore(self, records: list[StoredItem], **kwargs: Any) -> int:
        if self.is_async:
            return int(await self.store.arestore(records, **kwargs))
        return int(self.store.restore(records, **kwargs))

    async def items(self, prefix: tuple[str, ...] = (), **kwargs: Any) -> list[StoredItem]:
        if self.is_async:
            return [i async for i in self.store.aiter_items(prefix, **kwargs)]
        return list(self.store.iter_items(prefix, **kwargs))

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.is_async:
            return await getattr(self.store, f"a{method}")(*args, **kwargs)
        return getattr(self.store, method)(*args, **kwargs)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["query_engine", "plain"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make(kind: str, mode: str) -> AsyncIterator[Any]:
    """``make(index=None, ttl=None)``: a fresh store of the parametrised kind and mode."""
    url = servers.redis_url(modules=mode == "query_engine")
    clients: list[Any] = []

    async def factory(**kwargs: Any) -> Driver:
        prefix = f"x{uuid.uuid4().hex[:12]}"
        if kind == "async":
            client: Any = aredis.Redis.from_url(url)
            clients.append(client)
            store: Any = AsyncRedisStore(client, prefix=prefix, mode=mode, **kwargs)  # type: ignore[arg-type]
            await store.setup()
        else:
            client = redis.Redis.from_url(url)
            clients.append(client)
            store = RedisStore(client, prefix=prefix, mode=mode, **kwargs)  # type: ignore[arg-type]
            store.setup()
        assert store.mode == mode
        return Driver(store, kind == "async")

    yield factory
    for client in clients:
        if kind == "async":
            await client.aclose()
        else:
            client.close()


def _item(ns: tuple[str, ...], key: str, value: dict[str, Any], **kwargs: Any) -> StoredItem:
    return StoredItem(ns, key, value, kwargs.pop("created_at", CREATED), UPDATED, **kwargs)


async def test_round_trip_keeps_values_timestamps_expiry_and_ttl(make: Any) -> None:
    store = await make()
    expires = _future()
    records = [
        _item(
            ("users", "ü"),
            "nested",
            {"a": {"b": [1, {"c": None}], "d": True}, "text": "héllo ✓ 日本"},
            expires_at=expires,
            ttl_minutes=90.0,
        ),
        _item(("users", "ü"), "numbers", {"big": 2**70, "neg": -(2**65), "f": 1e16, "x": 0.1}),
        _item(("a",), "k", {"v": 1}, created_at=datetime(1999, 1, 1, tzinfo=UTC)),
    ]
    assert await store.restore(records) == 3
    got = await store.items()
    assert got == sorted(records, key=lambda r: r.cursor)
    numbers = next(i for i in got if i.key == "numbers").value
    assert numbers["big"] == 2**70 and type(numbers["f"]) is float and numbers["f"] == 1e16
    nested = next(i for i in got if i.key == "nested")
    assert nested.created_at == CREATED and nested.updated_at == UPDATED  # to the microsecond
    assert nested.expires_at == expires and nested.ttl_minutes == 90.0
    assert next(i for i in got if i.key == "k").expires_at is None
    item = await store.call("get", ("users", "ü"), "nested", refresh_ttl=False)
    assert item.value == records[0].value and item.created_at == CREATED
    assert item.updated_at == UPDATED


async def test_expired_items_are_not_listed(make: Any) -> None:
    store = await make()
    past = datetime.now(UTC) - timedelta(minutes=1)
    await store.call("put", ("t",), "short", {"v": 1}, ttl=1 / 600)  # 100 ms
    await store.call("put", ("t",), "kept", {"v": 2})
    assert await store.restore([_item(("t",), "old", {"v": 3}, expires_at=past)]) == 1
    time.sleep(0.3)
    assert [i.key for i in await store.items()] == ["kept"]
    assert await store.call("get", ("t",), "old") is None


async def test_prefix_is_whole_labels_and_cursors_resume(make: Any) -> None:
    store = await make()
    names = [("a",), ("a", "b"), ("ab",), ("a", "b", "c"), ("b",)]
    await store.restore([_item(ns, f"k{i}", {"i": i}) for i, ns in enumerate(names)])
    assert [i.namespace for i in await store.items(("a",))] == [("a",), ("a", "b"), ("a", "b", "c")]
    assert [i.namespace for i in await store.items(("a", "b"))] == [("a", "b"), ("a", "b", "c")]
    everything = await store.items()
    assert [i.cursor for i in everything] == sorted(i.cursor for i in everything)
    assert len(everything) == 5
    for size in (1, 2):
        assert await store.items(page_size=size) == everything
        assert await store.items(("a",), page_size=size) == everything[:3]
    assert await store.items(after=everything[1]) == everything[2:]
    cursor = json.loads(json.dumps(everything[1].cursor))  # as it comes back from a file
    assert await store.items(after=cursor, page_size=2) == everything[2:]
    assert await store.items(after=everything[-1]) == []


async def test_pages_over_one_namespace(make: Any) -> None:
    store = await make()
    records = [_item(("n",), f"k{i}", {"i": i}) for i in (3, 1, 4, 0, 2)]
    assert await store.restore(records, page_size=2) == 5
    for size in (1, 2):
        assert [i.key for i in await store.items(page_size=size)] == [f"k{i}" for i in range(5)]
        assert [i.key for i in await store.items(after=("n", "k1"), page_size=size)] == [
            "k2",
            "k3",
            "k4",
        ]


async def test_restored_items_are_searchable_and_filterable(make: Any) -> None:
    store = await make(index=hash_index(16))
    records = [
        _item(("docs",), "apple", {"text": "a red apple", "kind": "fruit", "n": 1}),
        _item(("docs",), "car", {"text": "a fast car", "kind": "vehicle", "n": 2}),
        _item(("docs", "deep"), "pear", {"text": "a green pear", "kind": "fruit", "n": 3}),
    ]
    assert await store.restore(records) == 3
    hits = await store.call("search", ("docs",), query="a red apple", limit=3)
    assert hits[0].key == "apple" and all(h.score is not None for h in hits)
    assert hits[0].score >= hits[1].score  # type: ignore[operator]
    assert hits[0].created_at == CREATED and hits[0].updated_at == UPDATED
    fruit = await store.call("search", ("docs",), filter={"kind": "fruit"})
    assert sorted(i.key for i in fruit) == ["apple", "pear"]
    assert [i.key for i in await store.call("search", ("docs",), filter={"n": {"$gt": 2}})] == [
        "pear"
    ]
    assert await store.call("list_namespaces") == [("docs",), ("docs", "deep")]


async def test_a_bad_record_raises_and_writes_nothing(make: Any) -> None:
    store = await make(index=hash_index(16))
    good = _item(("r",), "good", {"text": "fine"})
    bad = StoredItem(("r",), "bad", {"v": 1}, datetime(2020, 1, 1), UPDATED)  # naive
    with pytest.raises(InvalidRecordError, match="timezone-aware"):
        await store.restore([good, bad])
    with pytest.raises(InvalidRecordError, match="ttl_minutes"):
        await store.restore([good, _item(("r",), "k", {"v": 1}, ttl_minutes=0)])
    assert await store.items() == []
    assert await store.call("list_namespaces") == []


async def test_restoring_over_an_item_replaces_it_with_its_tokens_and_vectors(make: Any) -> None:
    store = await make(index=hash_index(16))
    await store.call("put", ("o",), "k", {"text": "alpha beta gamma", "tag": "old"}, ttl=5)
    await store.call("put", ("o",), "other", {"text": "zeta", "tag": "old"})
    record = _item(("o",), "k", {"text": "delta epsilon", "tag": "new"})
    assert await store.restore([record]) == 1
    assert [i.key for i in await store.call("search", ("o",), filter={"tag": "old"})] == ["other"]
    assert [i.key for i in await store.call("search", ("o",), filter={"tag": "new"})] == ["k"]
    hits = await store.call("search", ("o",), query="delta epsilon", limit=1)
    assert hits[0].key == "k" and hits[0].value == record.value
    (listed,) = [i for i in await store.items() if i.key == "k"]
    assert listed == record  # the restored item is permanent now: no expiry, no TTL
    expires = _future(2)
    await store.restore([_item(("o",), "k", {"text": "delta epsilon"}, expires_at=expires)])
    (listed,) = [i for i in await store.items() if i.key == "k"]
    assert listed.expires_at == expires
    at_ms = int(expires.timestamp() * 1000)
    keys = store.store.keys
    with redis.Redis.from_url(servers.redis_url(modules=store.store.mode == "query_engine")) as r:
        assert r.pexpiretime(keys.item("o", "k")) == at_ms
        assert r.zscore(keys.zset("o"), keys.item("o", "k")) == at_ms
        if store.store.mode == "query_engine":  # the vector document expires with its item
            assert r.pexpiretime(keys.vectors("o", "k")) == at_ms


async def test_a_restore_page_is_one_script_call(
    make: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the read of stored vectors (indexed store) precedes the page's one write-script call:
    one round trip (two with an index), one script call the server ran."""
    admin = redis.Redis.from_url(servers.redis_url(modules=mode == "query_engine"))
    for index in (None, hash_index(16)):
        store = await make(index=index)
        # the first write connects, may load the scripts, and (indexed) checks the embedder identity
        await store.restore([_item(("warm",), "w", {"text": "w"})])
        records = [_item((f"n{i % 3}",), f"k{i}", {"text": f"t {i}"}) for i in range(5)]
        with server_calls(admin) as calls, round_trips(monkeypatch) as writes:
            assert await store.restore(records) == 5
        assert calls["evalsha"] == 1
        assert len(writes) == (1 if index is None else 2)
    admin.close()
