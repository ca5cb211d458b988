"""Hostile counts: ``limit``, ``offset``, ``max_depth`` and page sizes beyond 64 bits or beyond a
server's bounds are served (a huge limit means every match, a huge offset an empty page), and bad
ones raise this package's errors naming the argument, on every store, sync and async."""

from __future__ import annotations

import dataclasses
import math
import random
import threading
import time
from typing import Any

import pytest
from langgraph.store.base import ListNamespacesOp, Op, PutOp, SearchOp

from langmem_adapters.core.ops import MAX_ID_BYTES, MAX_TTL_MINUTES
from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidRecordError,
    InvalidValueError,
)
from tests.reliability.hostile import (
    HUGE,
    fill,
    indexed_astore,
    populated_store,
    store_state,
)
from tests.stores import AsyncStoreFactory, StoreFactory, hash_index, ours_only

pytestmark = ours_only("InMemoryStore accepts any page, TTL or id size and has no iter_items")

BAD_COUNTS: list[tuple[Any, type[Exception]]] = [
    (-1, InvalidArgumentError),
    (-(2**70), InvalidArgumentError),
    (True, InvalidArgumentTypeError),
    (1.0, InvalidArgumentTypeError),
    ("10", InvalidArgumentTypeError),
    (None, InvalidArgumentTypeError),
    (math.inf, InvalidArgumentTypeError),
]

Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def _page_calls(n: int, offset: int = 0) -> list[Call]:
    """Every paged read, as (method, positional and keyword arguments), with ``limit`` ``n``."""
    lim = {"limit": n, "offset": offset}
    return [
        ("search", (("fuzz",),), lim),
        ("search", (("fuzz",),), {"query": "note 3", **lim}),
        ("search", ((),), {"filter": {"kind": "fact"}, **lim}),
        ("list_namespaces", (), {"prefix": ("fuzz",), **lim}),
    ]


def _hand_built(n: int, offset: int = 0) -> list[Op]:
    return [SearchOp(("fuzz",), None, n, offset), ListNamespacesOp(None, None, n, offset)]


def _keys(result: Any) -> Any:
    return [(i.namespace, i.key) if hasattr(i, "key") else i for i in result]


def test_huge_limits_serve_every_match_and_huge_offsets_an_empty_page(
    make_store: StoreFactory, backend: str
) -> None:
    store = populated_store(make_store)
    before = store_state(store)
    expected = [_keys(getattr(store, m)(*a, **kw)) for m, a, kw in _page_calls(1000)]
    assert all(expected) and len(expected[0]) == 12
    everything = _keys(store.iter_items(("fuzz",)))  # type: ignore[attr-defined]
    by_hand = [_keys(r) for r in store.batch(_hand_built(1000))]
    for n in HUGE:
        for (method, args, kw), want in zip(_page_calls(n), expected):
            assert _keys(getattr(store, method)(*args, **kw)) == want, (method, n)
        for method, args, kw in _page_calls(n, offset=n):
            assert getattr(store, method)(*args, **kw) == [], (method, n)
        assert [_keys(r) for r in store.batch(_hand_built(n))] == by_hand
        assert store.batch(_hand_built(n, n)) == [[], []]
        assert _keys(store.iter_items(("fuzz",), page_size=n)) == everything  # type: ignore[attr-defined]
        assert store.list_namespaces(max_depth=n) == store.list_namespaces()
    assert store.search(("fuzz",), limit=3, offset=2**40 - 1) == []
    assert store.reindex(page_size=2**70) == 13  # type: ignore[attr-defined]
    assert store.search(("fuzz",), query="note 3", limit=1)[0].key == "k3"
    assert store_state(store) == before


async def test_huge_limits_and_offsets_async(make_astore: AsyncStoreFactory, backend: str) -> None:
    store = await indexed_astore(make_astore)
    await fill(store.abatch)
    expected = [_keys(await getattr(store, "a" + m)(*a, **kw)) for m, a, kw in _page_calls(1000)]
    everything = [(i.namespace, i.key) async for i in store.aiter_items(("fuzz",))]  # type: ignore[attr-defined]
    for n in (2_000_000, 2**63, 2**70):
        for (method, args, kw), want in zip(_page_calls(n), expected):
            assert _keys(await getattr(store, "a" + method)(*args, **kw)) == want, (method, n)
        for method, args, kw in _page_calls(n, offset=n):
            assert await getattr(store, "a" + method)(*args, **kw) == [], (method, n)
        assert await store.abatch(_hand_built(n, n)) == [[], []]
        got = [(i.namespace, i.key) async for i in store.aiter_items(("fuzz",), page_size=n)]  # type: ignore[attr-defined]
        assert got == everything
    assert len(await store.asearch(("fuzz",), limit=2**64)) == 12


def _bad_count_calls(bad: Any) -> list[tuple[str, Call]]:
    """(argument, call) for every count argument set to ``bad`` (``max_depth=None`` is valid)."""
    calls = [
        ("limit", ("search", (("fuzz",),), {"limit": bad})),
        ("offset", ("search", (("fuzz",),), {"query": "x", "offset": bad})),
        ("limit", ("list_namespaces", (), {"limit": bad})),
        ("offset", ("list_namespaces", (), {"offset": bad})),
    ]
    depth = ("max_depth", ("list_namespaces", (), {"max_depth": bad}))
    return calls if bad is None else [*calls, depth]


def test_bad_counts_raise_our_errors_naming_the_argument(
    make_store: StoreFactory, backend: str
) -> None:
    store = populated_store(make_store)
    before = store_state(store)
    cases: list[tuple[Any, type[Exception]]] = [
        *BAD_COUNTS,
        (0, InvalidArgumentError),
    ]  # max_depth and page_size must be >= 1
    for bad, error in cases:
        for name, (method, args, kw) in _bad_count_calls(bad):
            if bad == 0 and name != "max_depth":
                continue
            with pytest.raises(error, match=name) as info:
                getattr(store, method)(*args, **kw)
            assert isinstance(info.value, (ValueError, TypeError)), (name, bad)
        if bad is not None:
            with pytest.raises(error, match="page_size"):
                list(store.iter_items(("fuzz",), page_size=bad))  # type: ignore[attr-defined]
            with pytest.raises(error, match="page_size"):
                store.restore([], page_size=bad)  # type: ignore[attr-defined]
        if bad != 0:  # a hand-built batch: the put before the bad op is not applied
            for op in (SearchOp(("fuzz",), None, bad, 0), ListNamespacesOp(None, None, 10, bad)):
                with pytest.raises(error, match=r"limit|offset"):
                    store.batch([PutOp(("fuzz", "a"), "new", {"text": "new"}), op])
    assert store_state(store) == before


async def test_bad_counts_raise_our_errors_async(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store = await indexed_astore(make_astore)
    await fill(store.abatch)
    for bad, error in BAD_COUNTS:
        for name, (method, args, kw) in _bad_count_calls(bad):
            with pytest.raises(error, match=name):
                await getattr(store, "a" + method)(*args, **kw)
        with pytest.raises(error, match="limit"):
            await store.abatch([PutOp(("fuzz", "a"), "new", {"t": 1}), SearchOp((), None, bad)])
    assert await store.aget(("fuzz", "a"), "new") is None
    assert len(await store.asearch(("fuzz",), limit=100)) == 12


@pytest.mark.parametrize(
    "ttl", [1e12, 1e300, 2**70, 10**1000 // 10**700, -1.0, 0, math.nan, math.inf]
)
def test_ttls_beyond_every_backend_raise_our_error(
    make_store: StoreFactory, backend: str, ttl: float
) -> None:
    """A TTL whose expiry a backend cannot compute (PostgreSQL's interval, Redis' milliseconds)
    is refused before any I/O, on puts, TTL configs and restored records alike."""
    store = make_store(ttl={"default_ttl": 60})
    store.put(("fuzz",), "k", {"v": 1}, ttl=MAX_TTL_MINUTES)  # the longest is served
    before = store_state(store)
    with pytest.raises(InvalidArgumentError, match="ttl"):
        store.put(("fuzz",), "new", {"v": 1}, ttl=ttl)
    with pytest.raises(InvalidArgumentError, match="ttl"):
        store.batch([PutOp(("fuzz",), "k", {"v": 2}), PutOp(("fuzz",), "new", {"v": 1}, ttl=ttl)])
    if ttl > 0:
        with pytest.raises(InvalidArgumentError, match="default_ttl"):
            make_store(ttl={"default_ttl": ttl})
    record = next(iter(store.iter_items(("fuzz",))))  # type: ignore[attr-defined]
    with pytest.raises(InvalidRecordError, match="ttl"):
        store.restore([dataclasses.replace(record, key="new", ttl_minutes=ttl)])  # type: ignore[attr-defined]
    assert store_state(store) == before


def test_item_ids_beyond_the_index_bound_raise_our_error(
    make_store: StoreFactory, backend: str
) -> None:
    """A namespace and key of more than MAX_ID_BYTES together (PostgreSQL's btree index bound, where
    a random 2,700-byte key was a driver error) are refused on every backend; up to it they are
    stored, and deleting or reading a longer one is simply nothing."""
    store = make_store(index=hash_index(fields=["text"]))
    rng = random.Random(7)
    longest = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzüé🙂") for _ in range(700))
    ns = ("fuzz", "é")
    room = MAX_ID_BYTES - len(".".join(ns).encode())
    key = longest.encode()[:room].decode(errors="ignore")
    key += "x" * (room - len(key.encode()))  # exactly MAX_ID_BYTES together
    store.put(ns, key, {"text": "longest"})
    assert store.get(ns, key).value == {"text": "longest"}  # type: ignore[union-attr]
    before = store_state(store)
    for bad_ns, bad_key in [(ns, key + "y"), ((*ns, "z"), key), (("fuzz",) * 1200, "k")]:
        with pytest.raises(InvalidValueError, match="bytes"):
            store.put(bad_ns, bad_key, {"text": "too long"})
        with pytest.raises(InvalidValueError, match="bytes"):
            store.batch([PutOp(("fuzz",), "k", {"v": 1}), PutOp(bad_ns, bad_key, {"v": 1})])
        first = next(iter(store.iter_items(ns)))  # type: ignore[attr-defined]
        record = dataclasses.replace(first, key=bad_key, namespace=bad_ns)
        with pytest.raises(InvalidValueError, match="bytes"):
            store.restore([record])  # type: ignore[attr-defined]
        store.delete(bad_ns, bad_key)
        assert store.get(bad_ns, bad_key) is None
    assert store_state(store) == before


def test_a_sweep_interval_beyond_a_thread_wait_is_served(
    make_store: StoreFactory, backend: str
) -> None:
    """A sweeper interval of centuries waits at most ``threading.TIMEOUT_MAX`` (a longer wait made
    the sweeper thread die with OverflowError); stopping it still works at once."""
    store = make_store(ttl={"default_ttl": 60, "sweep_interval_minutes": 1e300})
    errors: list[Any] = []
    hook, threading.excepthook = threading.excepthook, errors.append
    try:
        store.start_ttl_sweeper()  # type: ignore[attr-defined]
        time.sleep(0.2)
    finally:
        threading.excepthook = hook
    assert store.stop_ttl_sweeper(5)  # type: ignore[attr-defined]
    assert errors == []
