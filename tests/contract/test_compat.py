"""Drop-in details a user switching from the official stores relies on, on every store of ours."""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import pickle
import threading
import time
from typing import Any

from langgraph.store.base import Item, ListNamespacesOp, MatchCondition, PutOp, SearchItem

from tests.stores import AsyncStoreFactory, StoreFactory, hash_index, ours_only


@ours_only("our stores' own API (sweeper, TTL, match paths)")
def test_sweeper_returns_a_future_and_embeddings_attribute(
    make_store: StoreFactory, backend: str
) -> None:
    store: Any = make_store(
        index=hash_index(), ttl={"default_ttl": 1, "sweep_interval_minutes": 0.01}
    )
    assert store.embeddings is store.index_spec.embeddings
    done = store.start_ttl_sweeper()
    assert isinstance(done, concurrent.futures.Future) and not done.done()
    assert store.stop_ttl_sweeper(timeout=5)
    assert done.result(timeout=5) is None


@ours_only("our stores' own API (sweeper, TTL, match paths)")
async def test_async_sweeper_returns_its_task(make_astore: AsyncStoreFactory, backend: str) -> None:
    store: Any = await make_astore(ttl={"default_ttl": 1})
    task = await store.start_ttl_sweeper(0.01)
    assert isinstance(task, asyncio.Task) and not task.done()
    assert await store.stop_ttl_sweeper(timeout=5)
    assert task.done()


@ours_only("our stores' own API (sweeper, TTL, match paths)")
def test_bare_string_match_path_is_one_label(make_store: StoreFactory, backend: str) -> None:
    store = make_store()
    store.put(("a", "public"), "k", {"v": 1})
    store.put(("b", "private"), "k", {"v": 1})
    (found,) = store.batch([ListNamespacesOp((MatchCondition("suffix", "public"),))])  # type: ignore[arg-type]
    assert found == [("a", "public")]


@ours_only("our stores' own API (sweeper, TTL, match paths)")
def test_concurrent_reads_refreshing_ttl_do_not_deadlock(
    make_store: StoreFactory, backend: str
) -> None:
    store = make_store(ttl={"default_ttl": 5, "refresh_on_read": True})
    store.batch([PutOp(("ttl",), f"k{i}", {"i": i}, ttl=5) for i in range(60)])
    errors: list[BaseException] = []
    stop = time.monotonic() + 2

    def reader(w: int) -> None:
        try:
            while time.monotonic() < stop:
                store.search(("ttl",), limit=60)
                store.batch(
                    [PutOp(("ttl",), f"k{(w * 7 + j) % 60}", {"w": w}, ttl=5) for j in range(5)]
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:2]
    assert len(store.search(("ttl",), limit=100)) == 60


def test_results_are_complete_items(make_store: StoreFactory, backend: str) -> None:
    """Results are langgraph's own Item / SearchItem with every slot set: equal to one built by
    the constructor, serialisable, picklable and copyable like the official stores' results."""
    store = make_store(index=hash_index())
    store.put(("compat", "items"), "k", {"text": "hello world", "n": 1})
    got = store.get(("compat", "items"), "k")
    hits = store.search(("compat",), query="hello world")
    listed = store.search(("compat",), filter={"n": 1})
    assert got is not None and len(hits) == 1 and len(listed) == 1
    for result, cls in ((got, Item), (hits[0], SearchItem), (listed[0], SearchItem)):
        assert type(result) is cls
        slots = [s for k in cls.__mro__ for s in getattr(k, "__slots__", ())]
        assert all(hasattr(result, s) for s in slots), slots
        assert result == Item(
            value={"text": "hello world", "n": 1},
            key="k",
            namespace=("compat", "items"),
            created_at=got.created_at,
            updated_at=got.updated_at,
        )
        assert type(result.namespace) is tuple and result.created_at.tzinfo is not None
        assert pickle.loads(pickle.dumps(result)) == result == copy.deepcopy(result)
        assert result.dict()["namespace"] == ["compat", "items"] and repr(result)
    assert isinstance(hits[0].score, float) and listed[0].score is None
