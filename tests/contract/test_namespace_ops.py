"""Namespace-wide operations (``count`` / ``delete_namespace`` and their async twins) on every store
of this package, parametrised over the backends like the rest of the contract suite.

InMemoryStore has no such methods (the memory tiers' fallback covers it, see
``tests/memory/test_forget_all.py``). Expected counts come from the filter semantics in Python
(``core.filters.matches``) over the values written, an oracle independent of the stores.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from langmem_adapters.core.filters import matches, parse_filter
from langmem_adapters.errors import InvalidFilterError, InvalidNamespaceError
from tests import servers
from tests.stores import AsyncStoreFactory, StoreFactory, hash_index, ours_only
from tests.waiting import wait_until

pytestmark = ours_only(
    "InMemoryStore has no count/delete_namespace/iter_items (the tiers' fallback is tested)"
)

# Labels with every character a backend might treat specially (LIKE, glob, key separators, hash
# tags, escapes), and labels that are prefixes or near-prefixes of one another.
LABELS = [
    "ada",
    "adam",
    "ada_",
    "ada%",
    "ada*",
    "ada|x",
    "ada:x",
    "ada\\",
    "{ada}",
    "ada ",
    " ada",
    "adä",
    "_",
    "%",
    "*",
    "a",
]


def everything(store: Any) -> list[tuple[tuple[str, ...], str, Any]]:
    return sorted((i.namespace, i.key, i.value) for i in store.iter_items())


def fill(store: Any) -> None:
    """Per label: an item in ``("users", label)`` and one in ``("users", label, "deep")``."""
    for label in LABELS:
        store.put(("users", label), "k", {"label": label})
        store.put(("users", label, "deep"), "k", {"label": label, "deep": True})


def test_whole_labels_only_never_a_neighbour(make_store: StoreFactory, backend: str) -> None:
    store: Any = make_store()
    fill(store)
    store.put(("users",), "top", {"label": None})
    assert store.count(()) == 2 * len(LABELS) + 1
    assert store.count(("users",)) == 2 * len(LABELS) + 1
    for label in LABELS:
        before = everything(store)
        assert store.count(("users", label)) == 2, label
        assert store.count(("users", label, "deep")) == 1, label
        assert store.delete_namespace(("users", label)) == 2, label
        after = everything(store)
        assert after == [r for r in before if r[0][:2] != ("users", label)], label
        assert store.count(("users", label)) == 0
        assert store.get(("users", label), "k") is None
        assert store.get(("users", label, "deep"), "k") is None
        assert store.search(("users", label)) == []
        assert not [ns for ns in store.list_namespaces(limit=1000) if ns[:2] == ("users", label)]
        assert list(store.iter_items(("users", label))) == []
    assert store.list_namespaces() == [("users",)]
    assert store.delete_namespace(("users", "ada")) == 0  # already gone: nothing to remove
    assert store.delete_namespace(("users",)) == 1
    assert store.list_namespaces() == [] and store.count(()) == 0


VALUES: list[dict[str, Any]] = [
    {"n": 1, "kind": "fact", "tags": ["x", "y"]},
    {"n": 1.0, "kind": "fact", "meta": {"lang": "en"}},
    {"n": True, "kind": "note"},
    {"n": "1", "kind": "note", "tags": ["y"]},
    {"n": None, "kind": "fact"},
    {"n": 10, "meta": {"lang": "fr"}},
    {"kind": "fact"},
]
FILTERS: list[dict[str, Any]] = [
    {"n": 1},
    {"n": True},
    {"n": "1"},
    {"n": None},
    {"n": {"$ne": 1}},
    {"n": {"$gt": 0}},
    {"n": {"$gte": "1"}},
    {"n": {"$in": [1, "1"]}},
    {"n": {"$nin": [1]}},
    {"n": {"$exists": False}},
    {"kind": "fact", "n": {"$lt": 5}},
    {"meta.lang": "en"},
    {"tags.0": "x"},
    {"tags": ["y"]},
]


def expected(flt: dict[str, Any]) -> int:
    conditions = parse_filter(flt)
    return sum(matches(v, conditions) for v in VALUES)


def test_count_filters_are_typed_like_search(make_store: StoreFactory, backend: str) -> None:
    store: Any = make_store()
    for i, value in enumerate(VALUES):
        store.put(("f", "in"), f"k{i}", value)
        store.put(("fa",), f"k{i}", value)  # a neighbour with the same values: never counted
    for flt in FILTERS:
        want = expected(flt)
        assert store.count(("f",), filter=flt) == want, flt
        assert len(store.search(("f",), filter=flt, limit=100)) == want, flt
    assert store.count(("f",)) == len(VALUES)
    assert store.count((), filter={"n": 1}) == 2 * expected({"n": 1})


def test_expired_items_are_never_counted_nor_listed_after(
    make_store: StoreFactory, backend: str
) -> None:
    store: Any = make_store(ttl={"default_ttl": None})
    store.put(("t", "a"), "live", {"v": 1})
    store.put(("t", "a"), "gone", {"v": 1}, ttl=0.002)
    store.put(("t", "b"), "gone", {"v": 2}, ttl=0.002)  # a namespace holding only an expired item
    time.sleep(0.3)
    assert store.count(("t",)) == 1
    assert store.count(("t",), filter={"v": 2}) == 0
    assert store.count(("t",), filter={"v": {"$gte": 1}}) == 1
    assert store.delete_namespace(("t",)) == 1  # live items removed
    assert store.list_namespaces(prefix=("t",)) == []
    assert list(store.iter_items(("t",))) == [] and store.search(("t",)) == []


def test_vectors_go_with_the_items(make_store: StoreFactory, backend: str) -> None:
    store: Any = make_store(index=hash_index(fields=["text"]))
    store.put(("docs", "a"), "k", {"text": "purple elephants dancing"})
    store.put(("docs", "a", "b"), "k2", {"text": "purple elephants dancing"})
    store.put(("docs", "ab"), "k", {"text": "purple elephants dancing"})
    assert store.delete_namespace(("docs", "a")) == 2
    hits = store.search(("docs",), query="purple elephants dancing", limit=10)
    assert [(h.namespace, h.key) for h in hits] == [(("docs", "ab"), "k")]
    assert store.search(("docs", "a"), query="purple elephants dancing") == []
    # A re-put of the same key is embedded afresh: nothing of the deleted item's vector remains.
    store.put(("docs", "a"), "k", {"text": "green submarine"})
    (hit,) = store.search(("docs", "a"), query="purple elephants dancing")
    (fresh,) = store.search(("docs", "a"), query="green submarine")
    assert hit.score is not None and fresh.score is not None
    assert fresh.score == pytest.approx(1.0, abs=1e-3) and hit.score < 0.9


def test_bad_input_raises_our_errors_and_changes_nothing(
    make_store: StoreFactory, backend: str
) -> None:
    store: Any = make_store()
    fill(store)
    before = everything(store)
    with pytest.raises(InvalidNamespaceError, match="refusing to delete every namespace"):
        store.delete_namespace(())
    with pytest.raises(InvalidNamespaceError):
        store.delete_namespace("users")
    with pytest.raises(InvalidNamespaceError):
        store.delete_namespace(("users", "a.b"))
    with pytest.raises(InvalidNamespaceError):
        store.count(("users", ""))
    with pytest.raises(InvalidFilterError):
        store.count(("users",), filter={"n": {"$regex": "x"}})
    with pytest.raises(InvalidFilterError):
        store.count(("users",), filter=["n"])
    assert everything(store) == before


def test_concurrent_writers_never_leave_a_half_deleted_namespace(
    make_store: StoreFactory, backend: str
) -> None:
    """Writers keep creating namespaces under the prefix while it is deleted: afterwards every
    namespace listed holds items and every item's namespace is listed."""
    store: Any = make_store()
    stop = threading.Event()
    written = [0]

    def write() -> None:
        while not stop.is_set():
            i = written[0]
            store.put(("race", f"n{i % 7}", str(i)), "k", {"i": i})
            written[0] = i + 1

    thread = threading.Thread(target=write)
    thread.start()
    try:
        removed = 0
        for _ in range(5):  # each delete meets items written since the last one
            enough = written[0] + 5
            wait_until(lambda n=enough: written[0] >= n, what="writes between deletes")
            removed += store.delete_namespace(("race",))
    finally:
        stop.set()
        thread.join()
    assert removed > 0
    listed = set(store.list_namespaces(prefix=("race",), limit=100_000))
    held = {item.namespace for item in store.iter_items(("race",))}
    assert listed == held
    assert store.count(("race",)) == len(list(store.iter_items(("race",))))


# ----------------------------------------------------------------------------- async


async def test_async_twins(make_astore: AsyncStoreFactory, backend: str) -> None:
    store: Any = await make_astore()
    for label in LABELS[:8]:
        await store.aput(("users", label), "k", {"label": label, "n": 1})
        await store.aput(("users", label, "deep"), "k", {"label": label, "n": 2})
    assert await store.acount(("users",)) == 16
    assert await store.acount(("users",), filter={"n": 2}) == 8
    # The sync twins, from another thread (they run on the store's loop).
    assert await asyncio.to_thread(store.count, ("users",), filter={"n": 1}) == 8
    assert await asyncio.to_thread(store.delete_namespace, ("users", "zzz")) == 0
    for label in LABELS[:8]:
        assert await store.acount(("users", label)) == 2
        assert await store.adelete_namespace(("users", label)) == 2
        assert await store.aget(("users", label), "k") is None
        rest = await store.alist_namespaces(prefix=("users",), limit=100)
        assert all(ns[1] != label for ns in rest)
    assert await store.acount(("users",)) == 0
    with pytest.raises(InvalidNamespaceError, match="refusing"):
        await store.adelete_namespace(())
    with pytest.raises(InvalidFilterError):
        await store.acount(("users",), filter={"n": {"$bad": 1}})


# ----------------------------------------------------------------------------- Redis Cluster


@pytest.fixture(scope="module")
def cluster_url() -> Any:
    procs = servers.start_redis_cluster(3, timeout=30)
    yield procs
    for p in procs:
        p.close()


def test_redis_cluster_one_call_per_namespace(cluster_url: Any) -> None:
    import uuid

    from redis.cluster import ClusterNode, RedisCluster

    from langmem_adapters.redis import RedisStore

    rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p.port) for p in cluster_url])
    try:
        store = RedisStore(rc, prefix=f"c{uuid.uuid4().hex[:8]}", mode="plain")
        fill(store)
        before = everything(store)
        assert store.count(("users",), filter={"deep": True}) == len(LABELS)
        for label in LABELS[:6]:
            assert store.delete_namespace(("users", label)) == 2
        assert everything(store) == [r for r in before if r[0][1] not in LABELS[:6]]
        listed = store.list_namespaces(prefix=("users",), limit=1000)
        assert sorted(listed) == sorted({r[0] for r in everything(store)})
        assert store.count(("users",)) == 2 * (len(LABELS) - 6)
    finally:
        rc.close()


def test_redis_cluster_namespaces_larger_than_a_batch(cluster_url: Any) -> None:
    """On a cluster a namespace of several batches goes in several calls, small ones share rounds."""
    import uuid

    from langgraph.store.base import PutOp
    from redis.cluster import ClusterNode, RedisCluster

    from langmem_adapters.redis import RedisStore
    from langmem_adapters.redis.namespaces import DROP_BATCH

    rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p.port) for p in cluster_url])
    try:
        store = RedisStore(rc, prefix=f"c{uuid.uuid4().hex[:8]}", mode="plain")
        big = 2 * DROP_BATCH + 3
        store.batch([PutOp(("big",), f"k{i}", {"i": i}) for i in range(big)])
        for label in LABELS[:5]:
            store.put(("big", label), "k", {"i": 0})
        store.put(("bigger",), "k", {"i": 0})
        assert store.delete_namespace(("big",)) == big + 5
        assert store.count(("big",)) == 0
        assert list(store.iter_items(("big",))) == []
        assert store.list_namespaces(prefix=("big",)) == []
        assert [i.key for i in store.iter_items(("bigger",))] == ["k"]
        assert store.delete_namespace(("big",)) == 0  # nothing left
    finally:
        rc.close()
