"""16 threads / 16 tasks on overlapping keys: last-writer-wins, single winners, consistent namespaces."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from langmem_adapters.errors import ConcurrentWriteError
from langmem_adapters.memory import ProceduralMemory
from tests.stores import AsyncStoreFactory, StoreFactory, ours_only

pytestmark = ours_only("concurrency guarantees of our stores (put_if_absent, ...)")

WORKERS = 16


def _in_threads(target: Callable[[int], None]) -> None:
    barrier = threading.Barrier(WORKERS)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            target(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]


def _last_writes(plan: dict[int, list[list[str]]]) -> dict[str, set[int]]:
    """For each key, the writers whose last batch touching it could be the final value."""
    last: dict[str, set[int]] = {}
    for w, batches in plan.items():
        seen: dict[str, int] = {}
        for b, keys in enumerate(batches):
            for k in keys:
                seen[k] = b
        for k in seen:
            last.setdefault(k, set()).add(w)
    return last


def _plan(seed: int) -> dict[int, list[list[str]]]:
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(6)]
    return {w: [rng.sample(keys, 3) for _ in range(25)] for w in range(WORKERS)}


def _final_ok(store: BaseStore, plan: dict[int, list[list[str]]]) -> None:
    last_batch = {w: {k: b for b, keys in enumerate(bs) for k in keys} for w, bs in plan.items()}
    for key, writers in _last_writes(plan).items():
        item = store.get(("lww",), key)
        assert item is not None
        w, b = item.value["w"], item.value["b"]
        assert w in writers and last_batch[w][key] == b, (key, item.value)


def test_threads_last_writer_wins_without_deadlock(make_store: StoreFactory, backend: str) -> None:
    store = make_store()
    plan = _plan(1)
    _in_threads(
        lambda w: [
            store.batch([PutOp(("lww",), k, {"w": w, "b": b}) for k in keys])
            for b, keys in enumerate(plan[w])
        ]
    )
    _final_ok(store, plan)


async def test_tasks_last_writer_wins_without_deadlock(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store = await make_astore()
    plan = _plan(2)

    async def work(w: int) -> None:
        for b, keys in enumerate(plan[w]):
            await store.abatch([PutOp(("lww",), k, {"w": w, "b": b}) for k in keys])

    await asyncio.gather(*(work(w) for w in range(WORKERS)))
    last_batch = {w: {k: b for b, keys in enumerate(bs) for k in keys} for w, bs in plan.items()}
    for key, writers in _last_writes(plan).items():
        item = await store.aget(("lww",), key)
        assert item is not None and item.value["w"] in writers
        assert last_batch[item.value["w"]][key] == item.value["b"]


def test_threads_put_if_absent_one_winner_per_key(make_store: StoreFactory, backend: str) -> None:
    store: Any = make_store()
    wins: dict[str, list[int]] = {f"k{i}": [] for i in range(10)}
    lock = threading.Lock()

    def work(w: int) -> None:
        for key in wins:
            if store.put_if_absent(("once",), key, {"w": w}):
                with lock:
                    wins[key].append(w)

    _in_threads(work)
    for key, winners in wins.items():
        assert len(winners) == 1, (key, winners)
        assert store.get(("once",), key).value == {"w": winners[0]}


async def test_tasks_put_if_absent_one_winner_per_key(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store: Any = await make_astore()
    results = await asyncio.gather(
        *(
            store.aput_if_absent(("once",), f"k{i % 10}", {"w": w})
            for w in range(WORKERS)
            for i in range(10)
        )
    )
    assert results.count(True) == 10


def test_threads_procedural_versions_one_winner(make_store: StoreFactory, backend: str) -> None:
    skills = ProceduralMemory(make_store(), namespace=("acme", "agent"))
    skills.publish("triage", "v1 body")
    outcomes: list[str] = []
    lock = threading.Lock()

    def work(w: int) -> None:
        try:
            skills.publish("triage", f"body from {w}", expected_version=1)
            result = "won"
        except ConcurrentWriteError:
            result = "lost"
        with lock:
            outcomes.append(result)

    _in_threads(work)
    assert outcomes.count("won") == 1
    assert [p.version for p in skills.history("triage")] == [1, 2]


def test_threads_list_namespaces_consistent_with_items(
    make_store: StoreFactory, backend: str
) -> None:
    store = make_store()

    def work(w: int) -> None:
        rng = random.Random(w)
        for _ in range(30):
            ns = ("ns", f"n{rng.randrange(8)}", f"m{rng.randrange(3)}")
            if rng.random() < 0.6:
                store.put(ns, f"k{rng.randrange(2)}", {"w": w})
            else:
                store.delete(ns, f"k{rng.randrange(2)}")

    _in_threads(work)
    live = sorted({i.namespace for i in store.search(("ns",), limit=10_000)})
    assert store.list_namespaces(prefix=("ns",), limit=1000) == live
    assert store.list_namespaces(prefix=("ns",), max_depth=2, limit=1000) == sorted(
        {n[:2] for n in live}
    )
