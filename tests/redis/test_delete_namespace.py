"""``delete_namespace`` of a namespace larger than one ``drop`` batch, on a real Redis in both modes:
deleted completely in bounded script calls, every call leaving a smaller but valid namespace, and
what a writer racing the delete sees."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.namespaces import DROP_BATCH
from langmem_adapters.redis.scripts import SCRIPTS
from tests import servers
from tests.redis.observe import server_calls
from tests.waiting import wait_until

BIG = 3 * DROP_BATCH + 17  # items of ("big",): four batches
SUB = 5  # items of ("big", "sub")


@pytest.fixture(params=["query_engine", "plain"])
def store(request: pytest.FixtureRequest) -> Iterator[RedisStore]:
    """A store with vectors (Query Engine mode: a vector document per item) holding ("big",),
    ("big", "sub") and the sibling ("bigger",), which no delete of ("big",) may touch."""
    client = redis.Redis.from_url(servers.redis_url(modules=request.param == "query_engine"))
    index: Any = {"dims": 8, "embed": HashEmbeddings(8), "fields": ["text"]}
    s = RedisStore(client, prefix=f"t{uuid.uuid4().hex[:12]}", mode=request.param, index=index)
    s.batch([PutOp(("big",), f"k{i}", {"text": f"topic {i % 7}"}) for i in range(BIG)])
    s.batch([PutOp(("big", "sub"), f"k{i}", {"text": "topic sub"}) for i in range(SUB)])
    s.put(("bigger",), "k", {"text": "topic 1"})
    yield s
    client.close()


def _client(store: RedisStore) -> redis.Redis:
    return redis.Redis.from_url(servers.redis_url(modules=store.mode == "query_engine"))


def _left(client: redis.Redis, store: RedisStore, ns: str) -> list[bytes]:
    """Every key of namespace ``ns`` still in Redis (they share its hash tag)."""
    tag = store.keys.zset(ns).split("{")[1].split("}")[0]
    return list(client.scan_iter(match=f"{store.keys.prefix}:*{{{tag}}}*", count=10_000))


def test_a_namespace_larger_than_a_batch_goes_completely(store: RedisStore) -> None:
    client = _client(store)
    with server_calls(client) as calls:
        assert store.delete_namespace(("big",)) == BIG + SUB
    assert calls["evalsha"] >= BIG // DROP_BATCH + 1  # bounded calls, not one
    assert store.count(("big",)) == 0
    assert store.search(("big",), query="topic 1", limit=5) == []
    assert store.search(("big",), limit=5) == []
    registry = {n.decode() for n in client.zrange(store.keys.registry, 0, -1)}
    assert registry == {"bigger"}
    assert _left(client, store, "big") == [] and _left(client, store, "big.sub") == []
    assert [i.key for i in store.search(("bigger",), query="topic 1")] == ["k"]
    client.close()


def test_a_delete_stopped_between_batches_leaves_a_smaller_valid_namespace(
    store: RedisStore,
) -> None:
    """One batch of the drop script, as a crash after it would leave the namespace: its items,
    ZSET and registry entry agree; the next delete_namespace finishes the job."""
    client = _client(store)
    keys, qe = store.keys, "1" if store.mode == "query_engine" else "0"
    args = (0, qe, "1", "big", DROP_BATCH, "big")
    reply: Any = client.eval(SCRIPTS["drop"], 2, keys.registry, keys.zset("big"), *args)
    assert [int(reply[0]), int(reply[1])] == [DROP_BATCH, 0]  # a batch went, "big" not emptied
    assert store.count(("big",)) == BIG - DROP_BATCH + SUB
    assert client.zcard(keys.zset("big")) == BIG - DROP_BATCH
    held = {item.key for item in store.iter_items(("big",)) if item.namespace == ("big",)}
    assert len(held) == BIG - DROP_BATCH
    assert len(store.search(("big",), query="topic 3", limit=1000)) == BIG - DROP_BATCH + SUB
    registry = {n.decode() for n in client.zrange(keys.registry, 0, -1)}
    assert registry == {"big", "big.sub", "bigger"}
    assert store.delete_namespace(("big",)) == BIG - DROP_BATCH + SUB
    assert store.count(("big",)) == 0 and _left(client, store, "big") == []
    client.close()


def test_a_writer_racing_the_delete(store: RedisStore) -> None:
    """Items there when the delete starts all go; a racing writer's items go too, unless written
    after the call that found the prefix empty: then they stand, fully indexed and listed."""
    stop, written = threading.Event(), []

    def write() -> None:
        while not stop.is_set():
            store.put(("big",), f"w{len(written)}", {"text": "topic racing"})
            written.append(1)

    thread = threading.Thread(target=write)
    thread.start()
    try:
        wait_until(lambda: len(written) >= 3, what="the writer's first puts")
        store.delete_namespace(("big",))
    finally:
        stop.set()
        thread.join()
    held = [item.key for item in store.iter_items(("big",))]
    assert not [k for k in held if k.startswith("k")]  # every item there at the start went
    assert store.count(("big",)) == len(held)
    listed = store.list_namespaces(prefix=("big",))
    assert listed == ([("big",)] if held else [])
    found = store.search(("big",), query="topic racing", limit=len(written) + 1)
    assert sorted(i.key for i in found) == sorted(held)


def test_more_namespaces_than_a_batch(store: RedisStore) -> None:
    """A prefix holding more namespaces than one call takes: several calls, every one deleted."""
    many = 2 * DROP_BATCH + 1
    store.batch([PutOp(("big", "many", f"n{i}"), "k", {"text": "topic"}) for i in range(many)])
    client = _client(store)
    with server_calls(client) as calls:
        assert store.delete_namespace(("big", "many")) == many
    assert calls["evalsha"] >= 3
    assert store.list_namespaces(prefix=("big", "many")) == []
    registry = {n.decode() for n in client.zrange(store.keys.registry, 0, -1)}
    assert registry == {"big", "big.sub", "bigger"}
    assert store.count(("big",)) == BIG + SUB
    client.close()
