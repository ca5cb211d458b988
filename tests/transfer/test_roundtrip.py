"""Lossless copies between stores on real servers: ``iter_items`` -> ``restore`` between every pair
of this package's four stores, from the official LangGraph stores' data through the readers of
``langmem_adapters.transfer.official``, a resumable ``migrate`` and the JSON-lines format.

Every copy keeps values, ``created_at``, ``updated_at``, ``expires_at`` and ``ttl_minutes``; the
target has an index, so restored items are found by a ranked search.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
import redis.asyncio as aredis
from psycopg.conninfo import make_conninfo

from langmem_adapters import StoredItem
from langmem_adapters.core.async_store import AsyncStore
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import InvalidRecordError
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.transfer import (
    Checkpoint,
    OfficialPostgresReader,
    OfficialRedisReader,
    StoreSource,
    item_from_json,
    item_to_json,
    migrate,
    read_items,
)
from tests import servers

KINDS = ["postgres", "async-postgres", "redis-qe", "async-redis-plain"]
DIMS = 16
Store = SyncStore | AsyncStore
Open = Callable[..., Awaitable[Store]]


def _index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"]}


@pytest.fixture
async def open_store() -> AsyncIterator[Open]:
    """``await open_store(kind, index=None)``: a fresh, empty store of that kind (own prefix)."""
    closers: list[Callable[[], Any]] = []

    async def factory(kind: str, index: dict[str, Any] | None = None) -> Store:
        prefix = f"x{uuid.uuid4().hex[:10]}"
        if kind.endswith("postgres"):
            dsn = servers.postgres_dsn()
            closers.append(lambda: _drop_tables(dsn, prefix))
            if kind == "postgres":
                conn = psycopg.connect(dsn, autocommit=True)
                closers.append(conn.close)
                store = PostgresStore(conn, index=index, table_prefix=prefix)  # type: ignore[arg-type]
                store.setup()
                return store
            aconn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
            closers.append(aconn.close)
            astore = AsyncPostgresStore(aconn, index=index, table_prefix=prefix)  # type: ignore[arg-type]
            await astore.setup()
            return astore
        if kind == "redis-qe":
            client = redis.Redis.from_url(servers.redis_url(modules=True))
            closers.append(client.close)
            rstore = RedisStore(client, index=index, prefix=prefix, mode="query_engine")  # type: ignore[arg-type]
            rstore.setup()
            return rstore
        aclient = aredis.Redis.from_url(servers.redis_url(modules=False))
        closers.append(aclient.aclose)
        arstore = AsyncRedisStore(aclient, index=index, prefix=prefix, mode="plain")  # type: ignore[arg-type]
        await arstore.setup()
        return arstore

    yield factory
    for close in reversed(closers):
        done = close()
        if isinstance(done, Awaitable):
            await done


def _drop_tables(dsn: str, prefix: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE %s", [prefix + "\\_%"]
            )
        ]
        if tables:
            conn.execute(f"DROP TABLE {', '.join(tables)} CASCADE")


async def _items(
    store: Store, prefix: tuple[str, ...] = (), page_size: int = 3
) -> list[StoredItem]:
    if isinstance(store, AsyncStore):
        return [i async for i in store.aiter_items(prefix, page_size=page_size)]
    return list(store.iter_items(prefix, page_size=page_size))


async def _restore(store: Store, records: list[StoredItem], page_size: int = 4) -> int:
    if isinstance(store, AsyncStore):
        return await store.arestore(records, page_size=page_size)
    return store.restore(records, page_size=page_size)


async def _search(store: Store, prefix: tuple[str, ...], query: str) -> list[Any]:
    if isinstance(store, AsyncStore):
        return await store.asearch(prefix, query=query, limit=3)
    return store.search(prefix, query=query, limit=3)


def _records() -> list[StoredItem]:
    """Items in three namespaces with old, distinct timestamps (µs), some expiring (ms: Redis's
    resolution), with and without a TTL; in the stores' listing order."""
    now = datetime.now(timezone.utc).replace(microsecond=123000)
    out = []
    for i in range(9):
        ns = [("users", "ada"), ("users", "ada", "notes"), ("users", "bob")][i % 3]
        created = now - timedelta(days=3, microseconds=7919 * i + 1)
        expires = ttl = None
        if i % 4 == 1:
            ttl, expires = 30.0, now + timedelta(minutes=30 - i)
        elif i == 6:
            expires = now + timedelta(hours=2)  # an expiry without a TTL (official Redis data)
        value = {"text": f"note {i} about green tea ünïcode", "n": i, "nested": {"tags": ["a", i]}}
        out.append(
            StoredItem(ns, f"k{i}", value, created, created + timedelta(hours=i), expires, ttl)
        )
    return sorted(out, key=lambda r: r.cursor)


@pytest.mark.parametrize("target_kind", KINDS)
@pytest.mark.parametrize("source_kind", KINDS)
async def test_iter_items_then_restore_is_lossless(
    open_store: Open, source_kind: str, target_kind: str
) -> None:
    records = _records()
    source = await open_store(source_kind)
    assert await _restore(source, records) == len(records)
    read = await _items(source)
    assert read == records
    target = await open_store(target_kind, _index())
    assert await _restore(target, read, page_size=5) == len(read)
    assert await _items(target, page_size=4) == records
    assert await _items(target, ("users", "ada")) == [
        r for r in records if r.namespace[:2] == ("users", "ada")
    ]
    # The target computed vectors for its own index: a query is ranked.
    hits = await _search(target, ("users",), "note 4 about green tea")
    assert hits and all(h.score is not None for h in hits)


# --------------------------------------------------------------------------- official stores


@contextlib.contextmanager
def _database() -> Any:
    """A fresh database on the test server (the official store's table is always ``store``)."""
    base = servers.postgres_dsn()
    name = f"tr_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield make_conninfo(base, dbname=name)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _put_official(store: Any) -> dict[tuple[tuple[str, ...], str], Any]:
    """Items written with an official store; returns them as that store reads them back."""
    store.put(("users", "ada"), "tea", {"text": "Ada prefers green tea"})
    store.put(("users", "ada-2"), "city", {"text": "Ada lives in Berlin"})
    store.put(("users", "bob"), "tmp", {"text": "temporary"}, ttl=30)
    for i in range(4):
        store.put(("bulk",), f"b{i}", {"text": f"bulk item {i}", "i": i})
    return {(tuple(i.namespace), i.key): i for i in store.search((), limit=100)}


def _check_official(items: list[StoredItem], stored: dict[Any, Any], ttl_kept: bool) -> None:
    assert len(items) == len(stored)
    for item in items:
        original = stored[(item.namespace, item.key)]
        assert item.value == original.value
        assert item.created_at == original.created_at
        assert item.updated_at == original.updated_at
    tmp = next(i for i in items if i.key == "tmp")
    assert tmp.expires_at is not None
    left = tmp.expires_at - datetime.now(timezone.utc)
    assert timedelta(minutes=29) < left <= timedelta(minutes=30)
    assert tmp.ttl_minutes == (30.0 if ttl_kept else None)
    assert all(i.expires_at is None for i in items if i.key != "tmp")


@pytest.mark.parametrize("target_kind", ["postgres", "redis-qe"])
async def test_from_the_official_postgres_store(open_store: Open, target_kind: str) -> None:
    from langgraph.store.postgres import PostgresStore as OfficialPostgresStore

    with _database() as dsn:
        with OfficialPostgresStore.from_conn_string(dsn) as official:
            official.setup()
            stored = _put_official(official)
        with psycopg.connect(dsn, autocommit=True) as conn:
            reader = OfficialPostgresReader(conn)
            assert reader.count() == len(stored)
            pages = list(reader.pages(page_size=3))
            resumed = list(reader.pages(pages[0][1], page_size=3))
    assert [len(p) for p, _ in pages] == [3, 3, 1] and resumed == pages[1:]
    items = [i for page, _ in pages for i in page]
    _check_official(items, stored, ttl_kept=True)
    target = await open_store(target_kind, _index())
    await _restore(target, items)
    _same(await _items(target), sorted(items, key=lambda i: i.cursor))
    assert (await _search(target, ("users",), "green tea"))[0].key == "tea"


def test_official_postgres_reader_needs_the_table() -> None:
    from langmem_adapters.errors import StoreError

    with (
        _database() as dsn,
        psycopg.connect(dsn, autocommit=True) as conn,
        pytest.raises(StoreError, match="the test db has no official LangGraph store"),
    ):
        OfficialPostgresReader(conn, name="the test db")


@pytest.mark.parametrize("target_kind", ["async-postgres", "async-redis-plain"])
async def test_from_the_official_redis_store(open_store: Open, target_kind: str) -> None:
    from langgraph.store.redis import RedisStore as OfficialRedisStore

    url = servers.redis_url(True)
    client = redis.Redis.from_url(url)
    try:
        for pattern in ("store:*", "store_vectors:*"):
            for key in client.scan_iter(match=pattern):
                client.delete(key)
        with OfficialRedisStore.from_conn_string(url) as official:
            official.setup()
            stored = _put_official(official)
        reader = OfficialRedisReader(client)
        assert reader.count() == len(stored)
        pages = list(reader.pages(page_size=2))
        resumed = list(reader.pages(pages[1][1], page_size=2))
        # Keys, not items: an expiry is read as now + the key's remaining TTL, so it moves.
        assert [[i.key for i in p] for p, _ in resumed] == [
            [i.key for i in p] for p, _ in pages[2:]
        ]
    finally:
        client.close()
    items = [i for page, _ in pages for i in page]
    # The official Redis store keeps no TTL in its documents, only the key's native expiry.
    _check_official(items, stored, ttl_kept=False)
    target = await open_store(target_kind, _index())
    await _restore(target, items)
    _same(await _items(target), sorted(items, key=lambda i: i.cursor))


def _same(got: list[StoredItem], want: list[StoredItem]) -> None:
    """Equal items, but for expiries within a millisecond (Redis keeps expiry in ms)."""
    assert [replace(g, expires_at=None) for g in got] == [replace(w, expires_at=None) for w in want]
    for g, w in zip(got, want):
        assert (g.expires_at is None) == (w.expires_at is None), (g, w)
        if g.expires_at is not None and w.expires_at is not None:
            assert abs(g.expires_at - w.expires_at) < timedelta(milliseconds=1), (g, w)


# --------------------------------------------------------------------------- migrate


async def test_migrate_resumes_from_its_checkpoint(open_store: Open, tmp_path: Path) -> None:
    records = _records()
    source = await open_store("postgres")
    target = await open_store("redis-qe", _index())
    assert isinstance(source, SyncStore) and isinstance(target, SyncStore)
    source.restore(records)
    path = tmp_path / "ck.json"
    seen: list[int] = []
    first = migrate(
        StoreSource(source),
        target,
        Checkpoint.load(path, "a", "b"),
        page_size=2,
        limit=5,
        progress=seen.append,
    )
    assert (first.copied, first.this_run, first.finished) == (5, 5, False)
    assert json.loads(path.read_text())["cursor"] == list(records[4].cursor)
    assert len(list(target.iter_items())) == 5
    with pytest.raises(ValueError, match="belongs to another migration"):
        Checkpoint.load(path, "a", "c")
    assert Checkpoint.load(path, "a", "c", restart=True).copied == 0
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"from": "a", "to": "b", "cursor": 5, "copied": 1}')
    with pytest.raises(ValueError, match="is damaged"):
        Checkpoint.load(damaged, "a", "b")
    second = migrate(StoreSource(source), target, Checkpoint.load(path, "a", "b"), page_size=4)
    assert (second.copied, second.resumed, second.finished) == (len(records), 5, True)
    assert not path.exists() and seen == [0, 2, 2, 1]
    assert list(target.iter_items()) == records


# --------------------------------------------------------------------------- JSON lines


def test_json_lines_round_trip_byte_for_byte() -> None:
    records = _records()
    lines = [item_to_json(r) for r in records]
    assert [item_from_json(line, "line") for line in lines] == records
    assert [item_to_json(item_from_json(line, "line")) for line in lines] == lines
    when = datetime(2024, 5, 1, 12, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    line = item_to_json(StoredItem(("a", "b"), "k", {"é": [1, None]}, when, when, None, 1.5))
    assert line == (
        '{"namespace": ["a", "b"], "key": "k", "value": {"é": [1, null]}, '
        '"created_at": "2024-05-01T10:00:00.000005+00:00", '
        '"updated_at": "2024-05-01T10:00:00.000005+00:00", "expires_at": null, "ttl_minutes": 1.5}'
    )
    z = item_from_json(line.replace("+00:00", "Z"), "line 1")
    assert z.created_at == when


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not valid JSON"),
        ("[1]", "line 2: expected a JSON object, got list"),
        ('{"namespace": ["a"]}', "line 2: missing key, value, created_at, updated_at"),
        (
            '{"namespace": [], "key": "k", "value": {}, "created_at": 1, "updated_at": 1}',
            "namespace",
        ),
        (
            '{"namespace": ["a"], "key": "k", "value": {}, "created_at": "2024-01-01T00:00:00",'
            ' "updated_at": "2024-01-01T00:00:00Z"}',
            "created_at needs a UTC offset",
        ),
        (
            '{"namespace": ["a"], "key": "k", "value": {}, "created_at": "2024-01-01T00:00:00Z",'
            ' "updated_at": "2024-01-01T00:00:00Z", "ttl_minutes": -1}',
            "ttl_minutes must be a positive number",
        ),
    ],
)
def test_json_lines_errors_name_the_line(line: str, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message.replace("[", r"\[")):
        list(read_items(["", line]))
