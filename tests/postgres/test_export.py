"""Export and restore on Postgres: ``iter_items`` / ``restore`` and their async twins, on the real server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest

from langmem_adapters.core.records import StoredItem
from langmem_adapters.core.vectors import text_hash
from langmem_adapters.errors import InvalidRecordError, InvalidValueError
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from tests import servers
from tests.stores import DIMS, hash_index, reset_postgres

UTC = timezone.utc
T0 = datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
VALUES: list[dict[str, Any]] = [
    {"nested": {"list": [1, [2, {"deep": None}]], "flag": True}, "n": -3},
    {"text": 'grüße, 日本語, emoji 🎉, quote " and \\ backslash'},
    {"big": 2**70, "neg_big": -(2**65), "exact": 12345678901234567890},
    {"f": 1e16, "g": 1.5e300, "h": 0.1, "i": -2.5e-8, "j": 1e15, "k": 3.0},
    {},
]
TEXT_INDEX = hash_index(fields=["text"])


@pytest.fixture
def dsn() -> str:
    dsn = servers.postgres_dsn()
    for prefix in ("langmem", "langmem_copy"):
        with PostgresStore.from_conn_string(dsn, table_prefix=prefix, index=hash_index()) as s:  # type: ignore[arg-type]
            s.setup()
    reset_postgres(dsn)
    return dsn


@pytest.fixture
def store(dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore.from_conn_string(dsn) as s:
        yield s


@pytest.fixture
def indexed(dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore.from_conn_string(dsn, index=TEXT_INDEX, table_prefix="langmem_copy") as s:  # type: ignore[arg-type]
        yield s


@pytest.fixture
async def astore(dsn: str) -> AsyncIterator[AsyncPostgresStore]:
    async with AsyncPostgresStore.from_conn_string(dsn) as s:
        yield s


@pytest.fixture
async def aindexed(dsn: str) -> AsyncIterator[AsyncPostgresStore]:
    async with AsyncPostgresStore.from_conn_string(
        dsn,
        index=TEXT_INDEX,  # type: ignore[arg-type]
        table_prefix="langmem_copy",
    ) as s:
        yield s


def _record(ns: tuple[str, ...], key: str, value: dict[str, Any], **kw: Any) -> StoredItem:
    return StoredItem(ns, key, value, kw.pop("created_at", T0), kw.pop("updated_at", T0), **kw)


def _five() -> list[StoredItem]:
    """Five records whose order is by namespace text, then key, by code point."""
    return [
        _record(("a-",), "k", {"i": 0}),  # "-" sorts before "."
        _record(("a", "b"), "B", {"i": 1}),  # upper case before lower case
        _record(("a", "b"), "a", {"i": 2}),
        _record(("a", "b"), "é", {"i": 3}),
        _record(("a", "b", "c"), "k", {"i": 4}),
    ]


def _vectors(dsn: str, prefix: str, ns: str, key: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"SELECT field, text_hash FROM {prefix}_vectors_vector{DIMS} WHERE ns = %s AND key = %s",
            [ns, key],
        ).fetchall()
    return dict(rows)


# --------------------------------------------------------------------------- sync


def test_round_trip_keeps_values_timestamps_expiry_and_ttl(
    store: PostgresStore, indexed: PostgresStore
) -> None:
    for i, value in enumerate(VALUES):
        store.put(("rt", str(i)), f"k{i}", value)
    store.put(("rt", "ttl"), "k", {"v": 1}, ttl=30)
    exported = list(store.iter_items(("rt",)))
    assert [item.value for item in exported[: len(VALUES)]] == VALUES
    assert type(exported[3].value["f"]) is float and type(exported[3].value["k"]) is float
    assert exported[2].value["big"] == 2**70
    with_ttl = exported[-1]
    assert with_ttl.ttl_minutes == 30 and with_ttl.expires_at is not None
    assert (
        timedelta(minutes=29) < with_ttl.expires_at - with_ttl.updated_at <= timedelta(minutes=31)
    )
    assert all(item.ttl_minutes is None and item.expires_at is None for item in exported[:-1])
    got = store.get(("rt", "0"), "k0")
    assert got is not None and (got.created_at, got.updated_at) == (
        exported[0].created_at,
        exported[0].updated_at,
    )

    assert indexed.restore(exported) == len(exported)
    assert list(indexed.iter_items(("rt",))) == exported


def test_restore_keeps_timestamps_to_the_microsecond(store: PostgresStore) -> None:
    plus_five = timezone(timedelta(hours=5, minutes=30))
    created = datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=plus_five)
    updated = datetime(2024, 2, 29, 12, 0, 0, 1, tzinfo=UTC)
    expires = datetime.now(UTC) + timedelta(days=3, microseconds=7)
    records = [
        _record(("ts",), "one", {"v": 1}, created_at=created, updated_at=updated),
        _record(("ts",), "two", {"v": 2}, expires_at=expires, ttl_minutes=12.5),
    ]
    assert store.restore(records) == 2
    assert list(store.iter_items(("ts",))) == records
    item = store.get(("ts",), "one")
    assert item is not None and item.created_at == created and item.updated_at == updated
    assert item.created_at.microsecond == 999999 and item.updated_at.microsecond == 1
    assert store.list_namespaces(prefix=("ts",)) == [("ts",)]  # registered as a put would


def test_expired_items_are_not_listed(store: PostgresStore) -> None:
    now = datetime.now(UTC)
    store.restore(
        [
            _record(
                ("exp",), "gone", {"v": 1}, expires_at=now - timedelta(seconds=1), ttl_minutes=1
            ),
            _record(
                ("exp",), "live", {"v": 2}, expires_at=now + timedelta(hours=1), ttl_minutes=60
            ),
        ]
    )
    assert [item.key for item in store.iter_items(("exp",))] == ["live"]
    assert store.get(("exp",), "gone") is None


def test_prefix_matches_whole_labels(store: PostgresStore) -> None:
    for ns in [("a",), ("a", "b"), ("a", "b", "c"), ("a", "bc"), ("a", "b-"), ("ab",)]:
        store.put(ns, "k", {"ns": list(ns)})
    assert [item.namespace for item in store.iter_items(("a", "b"))] == [
        ("a", "b"),
        ("a", "b", "c"),
    ]
    assert [item.namespace for item in store.iter_items(("a",))] == [
        ("a",),
        ("a", "b"),
        ("a", "b-"),  # "a.b-" sorts before "a.b.c": "-" comes before "."
        ("a", "b", "c"),
        ("a", "bc"),
    ]
    assert len(list(store.iter_items())) == 6
    assert list(store.iter_items(("nothing",))) == []


def test_order_cursors_and_page_sizes(store: PostgresStore) -> None:
    records = _five()
    store.restore(records)
    everything = list(store.iter_items())
    assert everything == records
    for size in (1, 2, 5, 500):
        assert list(store.iter_items(page_size=size)) == records
    cursor = everything[1].cursor
    assert cursor == ("a.b", "B")
    assert list(store.iter_items(after=cursor)) == records[2:]
    assert list(store.iter_items(after=json.loads(json.dumps(cursor)), page_size=2)) == records[2:]
    assert list(store.iter_items(after=everything[1], page_size=1)) == records[2:]
    assert list(store.iter_items(after=everything[-1])) == []
    assert list(store.iter_items(("a", "b"), after=("a.b", "a"))) == records[3:]


def test_restore_into_an_indexed_store_makes_items_searchable(indexed: PostgresStore) -> None:
    records = [
        _record(("docs",), "fruit", {"text": "apples and pears in the orchard"}),
        _record(("docs",), "cars", {"text": "engines gearboxes and tyres"}),
        _record(("docs",), "empty", {"other": 1}),
    ]
    assert indexed.restore(records, page_size=2) == 3
    hits = indexed.search(("docs",), query="apples and pears in the orchard", limit=3)
    assert hits[0].key == "fruit" and hits[0].score == pytest.approx(1.0, abs=1e-6)
    # "empty" has no text to index: it follows the scored items, unscored.
    assert [(hit.key, isinstance(hit.score, float)) for hit in hits] == [
        ("fruit", True),
        ("cars", True),
        ("empty", False),
    ]
    assert hits[0].created_at == T0 and hits[0].updated_at == T0


@pytest.mark.parametrize(
    "bad",
    [
        _record(("x",), "naive", {"v": 1}, created_at=datetime(2020, 1, 1)),
        _record(("x",), "ttl", {"v": 1}, ttl_minutes=0),
        _record((), "no-namespace", {"v": 1}),
        _record(("x",), "nan", {"v": float("nan")}),
        _record(("langgraph", "x"), "reserved-root", {"v": 1}),
        _record(("x\udc80",), "surrogate", {"v": 1}),
    ],
    ids=[
        "naive-datetime",
        "ttl-0",
        "empty-namespace",
        "nan-value",
        "langgraph-root",
        "surrogate-label",
    ],
)
def test_a_bad_record_writes_nothing(store: PostgresStore, bad: StoredItem) -> None:
    good = [_record(("x",), "g1", {"v": 1}), _record(("x",), "g2", {"v": 2})]
    with pytest.raises((InvalidRecordError, InvalidValueError)):
        store.restore([*good, bad], page_size=1)  # the bad record is the last of 3 pages
    assert list(store.iter_items()) == []


def test_restore_over_an_existing_item_replaces_it_and_its_vectors(
    dsn: str, indexed: PostgresStore
) -> None:
    indexed.put(
        ("r",), "k", {"text": "old words", "extra": "more old words"}, index=["text", "extra"]
    )
    assert _vectors(dsn, "langmem_copy", "r", "k") == {
        "text": text_hash("old words"),
        "extra": text_hash("more old words"),
    }
    record = _record(("r",), "k", {"text": "new words", "extra": "kept out"}, ttl_minutes=5)
    assert indexed.restore([record]) == 1
    assert list(indexed.iter_items(("r",))) == [record]
    # The index's own fields ("text") replace the put's ("text" and "extra").
    assert _vectors(dsn, "langmem_copy", "r", "k") == {"text": text_hash("new words")}
    top = indexed.search(("r",), query="old words", limit=1)[0]
    assert top.value == record.value and top.score != pytest.approx(1.0, abs=1e-6)


# --------------------------------------------------------------------------- async


async def test_async_round_trip_cursors_and_pages(
    astore: AsyncPostgresStore, aindexed: AsyncPostgresStore
) -> None:
    for i, value in enumerate(VALUES):
        await astore.aput(("art", str(i)), "k", value)
    exported = [item async for item in astore.aiter_items(("art",), page_size=2)]
    assert [item.value for item in exported] == VALUES
    assert await aindexed.arestore(exported, page_size=2) == len(VALUES)
    assert [item async for item in aindexed.aiter_items(("art",))] == exported

    records = _five()
    await astore.arestore(records)
    for size in (1, 2):
        assert [item async for item in astore.aiter_items(("a",), page_size=size)] == records[1:]
    cursor = json.loads(json.dumps(records[1].cursor))
    assert [item async for item in astore.aiter_items(after=cursor, page_size=1)] == [
        *records[2:],
        *exported,
    ]


async def test_async_restore_keeps_expiry_and_skips_expired(astore: AsyncPostgresStore) -> None:
    now = datetime.now(UTC)
    live = _record(("aexp",), "live", {"v": 1}, expires_at=now + timedelta(hours=1), ttl_minutes=60)
    gone = _record(
        ("aexp",), "gone", {"v": 2}, expires_at=now - timedelta(seconds=1), ttl_minutes=1
    )
    assert await astore.arestore([gone, live]) == 2
    assert [item async for item in astore.aiter_items(("aexp",))] == [live]


async def test_async_restore_into_an_indexed_store_replaces_vectors(
    dsn: str, aindexed: AsyncPostgresStore
) -> None:
    await aindexed.aput(("ar",), "k", {"text": "stale text"}, index=["text"])
    record = _record(("ar",), "k", {"text": "fresh text about gardens"})
    assert await aindexed.arestore([record, _record(("ar",), "j", {"text": "other"})]) == 2
    assert _vectors(dsn, "langmem_copy", "ar", "k") == {"text": text_hash(record.value["text"])}
    hits = await aindexed.asearch(("ar",), query="fresh text about gardens", limit=2)
    assert hits[0].key == "k" and hits[0].created_at == T0
    assert isinstance(hits[0].score, float) and hits[0].score > (hits[1].score or 0)


async def test_async_bad_record_writes_nothing(astore: AsyncPostgresStore) -> None:
    good = [_record(("ax",), "g1", {"v": 1}), _record(("ax",), "g2", {"v": 2})]
    with pytest.raises(InvalidRecordError):
        await astore.arestore(
            [*good, _record(("ax",), "bad", {"v": 1}, ttl_minutes=0)], page_size=1
        )
    assert [item async for item in astore.aiter_items()] == []
