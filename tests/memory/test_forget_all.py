"""``forget_all`` / ``aforget_all`` of the four tiers on every backend: the tier's own namespace goes
(through the store's ``delete_namespace``, or the search-and-delete fallback on InMemoryStore),
other tiers of the same root and other roots, however alike their names, stay."""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore

from langmem_adapters.memory import EpisodicMemory, ProceduralMemory, SemanticMemory, WorkingMemory
from tests.stores import AsyncStoreFactory, StoreFactory

ROOT = ("acme", "user-4")
NEIGHBOURS = [("acme", "user-42"), ("acme", "user_4"), ("acme", "user-4", "sub")]


def tiers(store: BaseStore, root: tuple[str, ...]) -> dict[str, Any]:
    return {
        "semantic": SemanticMemory(store, namespace=root),
        "episodic": EpisodicMemory(store, namespace=root),
        "procedural": ProceduralMemory(store, namespace=root),
        "working": WorkingMemory(store, namespace=root, run_id="run-1", ttl=None),
    }


def write_all(t: dict[str, Any], n: int) -> None:
    for i in range(n):
        t["semantic"].remember(f"fact {i}")
        t["episodic"].record(f"episode {i}")
        t["procedural"].publish(f"proc{i}", f"body {i}")
        t["working"].set(f"k{i}", i)


def snapshot(store: BaseStore) -> list[tuple[tuple[str, ...], str]]:
    return sorted((i.namespace, i.key) for i in store.search((), limit=10_000))


def test_forget_all_removes_only_the_tiers_own_namespace(make_store: StoreFactory) -> None:
    store = make_store()
    mine = tiers(store, ROOT)
    write_all(mine, 3)
    for root in NEIGHBOURS:
        write_all(tiers(store, root), 1)
    for label, tier in mine.items():
        before = snapshot(store)
        ns = (*ROOT, label)
        owned = [r for r in before if r[0] == ns]
        assert owned, label
        assert tier.forget_all() == len(owned), label
        assert snapshot(store) == [r for r in before if r[0] != ns], label
        assert tier.forget_all() == 0
    assert mine["semantic"].recall("fact") == []
    assert mine["working"].items() == {}
    assert mine["procedural"].current("proc0") is None
    # The neighbours' tiers still read their records.
    for root in NEIGHBOURS:
        other = tiers(store, root)
        assert other["working"].items() == {"k0": 0}
        assert other["procedural"].current("proc0") is not None


async def test_aforget_all(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore()
    mine = tiers(store, ROOT)
    other = tiers(store, NEIGHBOURS[0])
    for i in range(3):
        await mine["semantic"].aremember(f"fact {i}")
        await mine["working"].aset(f"k{i}", i)
    await other["semantic"].aremember("kept")
    assert await mine["semantic"].aforget_all() == 3
    assert await mine["working"].aforget_all() == 3
    assert await mine["semantic"].arecall("fact") == []
    assert await mine["working"].aitems() == {}
    assert [f.text for f in await other["semantic"].arecall("kept")] == ["kept"]
