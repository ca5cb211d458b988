"""Items without vectors in query searches (langgraph's contract, InMemoryStore as the reference).

An item stored with ``index=False``, or with no text at any indexed field, has no vector. A query
search returns every scored item first (by score), then the unscored items under the prefix with
``score=None``, newest first, while the page has room; ``offset`` counts through that one sequence.
Parametrised over every store (``backend``), sync and async.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp, SearchItem, SearchOp
from langgraph.store.memory import InMemoryStore

from tests.stores import AsyncStoreFactory, StoreFactory, hash_index, ours_only

QUERY = "volcano eruption lava"

# (namespace, key, value, index): scored items first, then unscored ones, in the order they are put.
ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any], bool]] = [
    (("u", "a"), "s0", {"text": "volcano eruption lava", "kind": "x", "n": 0}, True),
    (("u", "a"), "s1", {"text": "ocean tides and waves", "kind": "y", "n": 1}, True),
    (("u", "b"), "s2", {"text": "lava flows downhill", "kind": "x", "n": 2}, True),
    (("u", "a"), "off", {"text": "volcano eruption lava", "kind": "x", "n": 3}, False),
    (("u", "b"), "notext", {"kind": "y", "n": 4}, True),
    (("u", "a"), "empty", {"text": None, "kind": "x", "n": 5}, True),
    (("v",), "other", {"kind": "x", "n": 6}, False),
]
SCORED = ["s0", "s1", "s2"]
UNSCORED = ["empty", "notext", "off"]  # under ("u",), newest first


def index(**extra: Any) -> dict[str, Any]:
    """The test index: vectors from the ``text`` field only."""
    return hash_index(fields=["text"], **extra)


def put_ops() -> list[list[PutOp]]:
    """One batch per item, so that each has its own ``updated_at``."""
    return [
        [PutOp(ns, key, value, index=None if indexed else False)]
        for ns, key, value, indexed in ITEMS
    ]


def fill(store: BaseStore) -> None:
    """Put ``ITEMS`` one batch at a time."""
    for ops in put_ops():
        store.batch(ops)
        time.sleep(0.002)


async def afill(store: BaseStore) -> None:
    """Put ``ITEMS`` one batch at a time (async)."""
    for ops in put_ops():
        await store.abatch(ops)
        time.sleep(0.002)


def keys(items: list[Any]) -> list[str]:
    """The keys of search results, in order."""
    return [i.key for i in items]


def check_split(hits: list[SearchItem], ours: bool) -> None:
    """Scored items first (best first), then the unscored ones with ``score=None``."""
    assert [h.key for h in hits[:3]] and all(h.score is not None for h in hits[:3])
    assert set(keys(hits[:3])) == set(SCORED)
    scores = [h.score for h in hits[:3] if h.score is not None]
    assert scores == sorted(scores, reverse=True) and hits[0].key == "s0"
    assert all(h.score is None for h in hits[3:])
    tail = keys(hits[3:])
    assert sorted(tail) == sorted(UNSCORED)
    if ours:  # InMemoryStore returns them in its own storage order
        assert tail == UNSCORED


@pytest.mark.parametrize("ann", [{}, {"exact_below": 0}], ids=["default", "ann-index"])
def test_unscored_items_follow_scored_ones(
    make_store: StoreFactory, backend: str, ann: dict[str, Any]
) -> None:
    store = make_store(index=index(ann_index_config=ann))
    fill(store)
    hits = store.search(("u",), query=QUERY, limit=10)
    check_split(hits, ours=backend != "memory")
    # The same as langgraph's reference store on the same items.
    ref = InMemoryStore(index=index())  # type: ignore[arg-type]
    fill(ref)
    expected = ref.search(("u",), query=QUERY, limit=10)
    assert keys(hits[:3]) == keys(expected[:3])
    for got, want in zip(hits, expected):
        assert (got.score is None) == (want.score is None)
        if got.score is not None and want.score is not None:
            assert got.score == pytest.approx(want.score, abs=1e-4)
    assert sorted(keys(hits[3:])) == sorted(keys(expected[3:]))
    # A full page of scored items leaves no room.
    assert keys(store.search(("u",), query=QUERY, limit=3)) == keys(hits[:3])
    # A prefix holding only unscored items, and a global search.
    assert [(h.key, h.score) for h in store.search(("v",), query=QUERY)] == [("other", None)]
    everything = store.search((), query=QUERY, limit=20)
    assert len(everything) == len(ITEMS) and everything[-1].score is None


@ours_only("InMemoryStore ignores offset for the unscored part")
def test_offsets_cross_the_scored_unscored_boundary(make_store: StoreFactory, backend: str) -> None:
    store = make_store(index=index())
    fill(store)
    full = store.search(("u",), query=QUERY, limit=100)
    assert keys(full[3:]) == UNSCORED
    for limit in (1, 2, 4):
        for offset in range(len(full) + 2):
            page = store.search(("u",), query=QUERY, limit=limit, offset=offset)
            want = full[offset : offset + limit]
            assert keys(page) == keys(want), (limit, offset)
            assert [h.score is None for h in page] == [h.score is None for h in want]


def test_filters_apply_to_unscored_items(make_store: StoreFactory, backend: str) -> None:
    store = make_store(index=index())
    fill(store)
    hits = store.search(("u",), query=QUERY, filter={"kind": "x"}, limit=10)
    assert keys(hits[:2]) == ["s0", "s2"] and all(h.score is not None for h in hits[:2])
    assert sorted(keys(hits[2:])) == ["empty", "off"]
    assert all(h.score is None for h in hits[2:])
    if backend != "memory":  # a range: checked on the rows on Redis, in SQL on Postgres
        ranged = store.search(("u",), query=QUERY, filter={"n": {"$gte": 2}}, limit=10)
        assert keys(ranged) == ["s2", *UNSCORED]
        assert keys(store.search(("u",), query=QUERY, filter={"n": {"$gte": 4}})) == UNSCORED[:2]


def test_a_batch_searching_and_writing_sees_the_state_before_it(make_store: StoreFactory) -> None:
    store = make_store(index=index())
    fill(store)
    searched, _ = store.batch(
        [
            SearchOp(("u",), query=QUERY, limit=10),
            PutOp(("u", "a"), "late", {"kind": "x"}, index=False),
        ]
    )
    assert isinstance(searched, list) and "late" not in keys(searched) and len(searched) == 6
    assert "late" in keys(store.search(("u",), query=QUERY, limit=10))


@ours_only("InMemoryStore has no TTL")
def test_expired_unscored_items_are_not_returned(make_store: StoreFactory) -> None:
    store = make_store(index=index(), ttl={"default_ttl": 10, "refresh_on_read": False})
    store.put(("t",), "scored", {"text": "volcano"})
    store.put(("t",), "brief", {"kind": "x"}, ttl=0.005)
    store.put(("t",), "lasting", {"kind": "x"}, index=False)
    assert keys(store.search(("t",), query=QUERY)) == ["scored", "lasting", "brief"]
    time.sleep(0.6)
    assert keys(store.search(("t",), query=QUERY)) == ["scored", "lasting"]
    assert keys(store.search(("t",), query=QUERY, offset=1)) == ["lasting"]


@ours_only("InMemoryStore has no TTL")
def test_a_query_search_refreshes_unscored_items(make_store: StoreFactory) -> None:
    store = make_store(index=index(), ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(("t",), "brief", {"kind": "x"}, ttl=0.02)  # 1.2 s
    time.sleep(0.7)
    assert keys(store.search(("t",), query=QUERY, refresh_ttl=False)) == ["brief"]
    assert keys(store.search(("t",), query=QUERY)) == ["brief"]  # refreshed: 1.2 s from now
    time.sleep(0.8)
    assert store.get(("t",), "brief", refresh_ttl=False) is not None


# ----------------------------------------------------------------------------- async


async def test_async_unscored_items_follow_scored_ones(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store = await make_astore(index=index())
    await afill(store)
    check_split(await store.asearch(("u",), query=QUERY, limit=10), ours=backend != "memory")
    hits = await store.asearch(("u",), query=QUERY, filter={"kind": "x"}, limit=10)
    assert keys(hits[:2]) == ["s0", "s2"] and sorted(keys(hits[2:])) == ["empty", "off"]


@ours_only("InMemoryStore ignores offset for the unscored part")
async def test_async_offsets_cross_the_boundary(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store = await make_astore(index=index())
    await afill(store)
    full = await store.asearch(("u",), query=QUERY, limit=100)
    pages = [await store.asearch(("u",), query=QUERY, limit=2, offset=o) for o in range(0, 8, 2)]
    assert [k for page in pages for k in keys(page)] == keys(full) == [*keys(full[:3]), *UNSCORED]
    assert keys(await store.asearch(("u",), query=QUERY, limit=2, offset=4)) == UNSCORED[1:]


@ours_only("InMemoryStore has no TTL")
async def test_async_expired_unscored_items_are_not_returned(
    make_astore: AsyncStoreFactory,
) -> None:
    store = await make_astore(index=index(), ttl={"default_ttl": 10, "refresh_on_read": False})
    await store.aput(("t",), "brief", {"kind": "x"}, ttl=0.005)
    await store.aput(("t",), "lasting", {"kind": "x"}, index=False)
    assert keys(await store.asearch(("t",), query=QUERY)) == ["lasting", "brief"]
    time.sleep(0.6)
    assert keys(await store.asearch(("t",), query=QUERY)) == ["lasting"]
