"""A Query Engine search that runs past the server's query timeout (``FT.CONFIG SET TIMEOUT``;
``ON_TIMEOUT return``, the default, answers the rows found so far) raises
:class:`SearchTimeoutError` instead of returning a partial page as complete: newest-first and
filtered searches (``lua/search.lua``), query searches (KNN and the lexical side), filtered counts
(``lua/count.lua``); with ``ON_TIMEOUT fail`` too, where the server errs instead. The information
fusion's per-word queries run without the timeout and answer whole. On its own
server, as the timeout is server-wide; each of these searches reads or sorts every one of 100k
matches, far past 1 ms, so they time out every time, without sleeps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from langgraph.store.base import PutOp

from langmem_adapters import SearchTimeoutError
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.redis.replies import count_command, timeout_warning, total_results
from langmem_adapters.redis.scripts import SCRIPTS, SHA
from langmem_adapters.redis.search import query_vector
from langmem_adapters.redis.tokens import path_token
from tests import servers

ITEMS, BATCH = 100_000, 2000


@pytest.fixture(scope="module")
def client() -> Iterator[redis.Redis]:
    server = servers.RedisProcess(servers.redis_command(True), ["--save", "", "--appendonly", "no"])
    client = redis.Redis(port=server.port)
    yield client
    client.close()
    server.close()


INDEX: dict[str, Any] = {
    "dims": 8,
    "embed": HashEmbeddings(8),
    "fields": ["text"],
    "ann_index_config": {"kind": "flat"},
    "hybrid": True,
}


@pytest.fixture(scope="module")
def store(client: redis.Redis) -> RedisStore:
    store = RedisStore(client, index=INDEX, prefix="t", mode="query_engine")  # type: ignore[arg-type]
    store.setup()
    ops = [
        PutOp(("notes",), f"k{i}", {"text": f"shared words note {i}", "kind": "fact"})
        for i in range(ITEMS)
    ]
    for i in range(0, ITEMS, BATCH):
        store.batch(ops[i : i + BATCH])
    return store


@pytest.fixture(params=["return", "fail"])
def timeout_1ms(client: redis.Redis, request: pytest.FixtureRequest) -> Iterator[None]:
    """TIMEOUT 1 ms; ``ON_TIMEOUT return`` (the default: the rows found so far) or ``fail`` (an
    error from the server)."""
    client.execute_command("FT.CONFIG", "SET", "TIMEOUT", 1)
    client.execute_command("FT.CONFIG", "SET", "ON_TIMEOUT", request.param)
    yield
    client.execute_command("FT.CONFIG", "SET", "TIMEOUT", 500)
    client.execute_command("FT.CONFIG", "SET", "ON_TIMEOUT", "return")


def test_complete_searches_answer(store: RedisStore) -> None:
    """Under the default timeout the same searches answer whole (the timeout tests' control)."""
    assert store.count(("notes",), filter={"kind": "fact"}) == ITEMS
    page = store.search(("notes",), filter={"kind": "fact"}, limit=5)
    last = sorted(f"k{i}" for i in range(ITEMS - BATCH, ITEMS))  # one batch: ties, by key
    assert [r.key for r in page] == last[:5]
    assert len(store.search(("notes",), query="shared words", limit=5)) == 5


@pytest.mark.usefixtures("timeout_1ms")
def test_filtered_search_past_timeout_raises(store: RedisStore) -> None:
    with pytest.raises(SearchTimeoutError, match=r"TIMEOUT.*narrow the search"):
        store.search(("notes",), filter={"kind": "fact"}, limit=5)


@pytest.mark.usefixtures("timeout_1ms")
def test_query_search_past_timeout_raises(store: RedisStore) -> None:
    with pytest.raises(SearchTimeoutError, match="query timeout"):
        store.search(("notes",), query="shared words", limit=5)


@pytest.mark.usefixtures("timeout_1ms")
def test_information_word_queries_answer_whole(store: RedisStore, client: redis.Redis) -> None:
    """The information fusion's per-word queries read RESP2 replies, which the timeout would cut
    unwarned: they run without it (``TIMEOUT 0``), so a word every item holds (told rare, with
    its count) gives all 100k candidates past a 1 ms timeout, each with its distance (all tie,
    so all are read)."""
    spec = store.index_spec
    assert spec is not None
    keys = store.keys
    blob = query_vector(spec, [1.0] * 8)
    args = (keys.index(None), "", 0.2, ITEMS, 10, 20, keys.index(spec), keys.prefix, blob)
    client.script_load(SCRIPTS["information"])
    reply = client.evalsha(SHA["information"], 0, *args, 1, 0, 0, "note", ITEMS)
    candidates, rows, _, _, _ = json.loads(reply)
    assert candidates == ITEMS
    assert len(rows) == ITEMS
    assert all(d is not None for _, d, _ in rows)


@pytest.mark.usefixtures("timeout_1ms")
def test_filtered_count_past_timeout_raises(store: RedisStore) -> None:
    with pytest.raises(SearchTimeoutError, match="query timeout"):
        store.count(("notes",), filter={"kind": "fact"})


@pytest.mark.usefixtures("timeout_1ms")
async def test_async_search_past_timeout_raises(store: RedisStore, client: redis.Redis) -> None:
    aclient = aredis.Redis(port=client.get_connection_kwargs()["port"])
    astore = AsyncRedisStore(aclient, index=INDEX, prefix="t", mode="query_engine")  # type: ignore[arg-type]
    with pytest.raises(SearchTimeoutError):
        await astore.asearch(("notes",), filter={"kind": "fact"}, limit=5)
    await aclient.aclose()


@pytest.mark.usefixtures("timeout_1ms")
def test_resp2_client_search_past_timeout_raises(store: RedisStore, client: redis.Redis) -> None:
    """The scripts read the server's warning whatever protocol the store's client speaks."""
    resp2 = redis.Redis(port=client.get_connection_kwargs()["port"], protocol=2)
    other = RedisStore(resp2, index=INDEX, prefix="t", mode="query_engine")  # type: ignore[arg-type]
    with pytest.raises(SearchTimeoutError):
        other.search(("notes",), filter={"kind": "fact"}, limit=5)
    resp2.close()


def test_direct_reply_past_timeout_is_refused(store: RedisStore, client: redis.Redis) -> None:
    """A reply read by the client itself (KNN settings' counts, calibration) under RESP3: the
    server's own timed-out reply (the query's own ``TIMEOUT 1``), as it comes, is refused."""
    resp3 = redis.Redis(port=client.get_connection_kwargs()["port"], protocol=3)
    reply = resp3.execute_command(
        "FT.SEARCH",
        store.keys.index(None),
        "*",
        "SORTBY",
        "u",
        "NOCONTENT",
        "TIMEOUT",
        1,
        "DIALECT",
        2,
    )
    resp3.close()
    assert timeout_warning(reply) is not None
    with pytest.raises(SearchTimeoutError):
        total_results(reply)


@pytest.mark.parametrize("query", ["*", "@p:{%s}"])
def test_counts_past_timeout_are_refused(
    store: RedisStore, client: redis.Redis, query: str
) -> None:
    """The counts the client reads (a namespace's size, which picks a search's strategy; the
    index's, which calibration samples from) past the timeout are refused, not short: sent as
    ``LIMIT 0 0`` they came back short and unwarned (``replies.count_command``)."""
    index = store.keys.index(store.index_spec)
    if "%s" in query:
        query %= path_token("n", ("notes",))
    resp3 = redis.Redis(port=client.get_connection_kwargs()["port"], protocol=3)
    client.execute_command("FT.CONFIG", "SET", "TIMEOUT", 1)
    try:
        with pytest.raises(SearchTimeoutError):
            total_results(resp3.execute_command(*count_command(index, query)))
    finally:
        client.execute_command("FT.CONFIG", "SET", "TIMEOUT", 500)
        resp3.close()
