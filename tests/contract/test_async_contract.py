"""The store contract through the async API (``abatch`` and the ``a*`` methods)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from tests.stores import AsyncStoreFactory, hash_index, ours_only


async def test_async_roundtrip_and_batch_order(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore()
    await store.aput(("a", "b"), "k", {"v": 1})
    assert (await store.aget(("a", "b"), "k")).value == {"v": 1}  # type: ignore[union-attr]
    results = await store.abatch(
        [PutOp(("a", "b"), "k", {"v": 2}), GetOp(("a", "b"), "k"), SearchOp(("a",))]
    )
    assert results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.value for i in results[2]] == [{"v": 1}]  # type: ignore[union-attr]
    assert (await store.aget(("a", "b"), "k")).value == {"v": 2}  # type: ignore[union-attr]
    assert await store.alist_namespaces(prefix=("a",)) == [("a", "b")]
    await store.adelete(("a", "b"), "k")
    assert await store.aget(("a", "b"), "k") is None


@ours_only("InMemoryStore raises on $gt over missing fields")
async def test_async_typed_filters_and_errors(make_astore: AsyncStoreFactory, backend: str) -> None:
    store = await make_astore()
    for i, n in enumerate([9, 10, "9", None]):
        await store.aput(("f",), f"k{i}", {"n": n})
    await store.aput(("f",), "missing", {})
    assert {i.key for i in await store.asearch(("f",), filter={"n": {"$gt": 9}})} == {"k1"}
    assert {i.key for i in await store.asearch(("f",), filter={"n": {"$ne": 9}})} == {
        "k1",
        "k2",
        "k3",
        "missing",
    }
    with pytest.raises(ValueError):
        await store.asearch(("f",), filter={"n": {"$bogus": 1}})
    with pytest.raises(InvalidNamespaceError):
        await store.abatch([PutOp(("x.y",), "k", {"v": 1})])
    with pytest.raises(TypeError):
        await store.aput(("f",), "bad", {"v": {1, 2}})
    assert await store.aget(("f",), "bad") is None


async def test_async_vector_search(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore(index=hash_index(dims=256, fields=["text"]))
    await store.abatch(
        [PutOp(("d",), f"k{i}", {"text": f"topic{i % 5} item{i}"}) for i in range(30)]
    )
    hits = await store.asearch(("d",), query="topic3", limit=6)
    assert len(hits) == 6
    assert {h.key for h in hits} == {f"k{i}" for i in range(30) if i % 5 == 3}
    assert all(h.score is not None for h in hits)


@ours_only("InMemoryStore has no TTL")
async def test_async_ttl(make_astore: AsyncStoreFactory) -> None:
    store: Any = await make_astore(ttl={"default_ttl": 0.01, "refresh_on_read": False})
    await store.aput(("t",), "k", {"v": 1})
    assert await store.aget(("t",), "k") is not None
    await asyncio.sleep(0.9)
    assert await store.aget(("t",), "k") is None
    assert await store.alist_namespaces() == []
    assert await store.sweep_ttl() == 1


@ours_only("InMemoryStore has no put_if_absent")
async def test_async_put_if_absent_single_winner(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store: Any = await make_astore()
    outcomes = await asyncio.gather(
        *(store.aput_if_absent(("race",), "k", {"i": i}) for i in range(16))
    )
    assert outcomes.count(True) == 1
    winner = outcomes.index(True)
    assert (await store.aget(("race",), "k")).value == {"i": winner}


@ours_only("InMemoryStore is sync-native")
async def test_sync_methods_from_another_thread(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store = await make_astore()
    await asyncio.to_thread(store.put, ("th",), "k", {"v": 1})
    assert (await asyncio.to_thread(store.get, ("th",), "k")).value == {"v": 1}  # type: ignore[union-attr]
    with pytest.raises(asyncio.InvalidStateError):
        store.get(("th",), "k")
