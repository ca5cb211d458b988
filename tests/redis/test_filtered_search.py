"""Query Engine filtered search (no query) over a prefix that holds several sub-namespaces: the page
the search script reads back is the documented one (newest first, then namespace text, then key),
ties within a batch included, and a hit that has no item data behind it is left out without
shortening the page. Plain mode answers the same pages."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.core.filters import parse_filter
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.redis.replies import total_results
from langmem_adapters.redis.tokens import namespace_tags, path_token, pushdown
from tests import servers

USERS, TOPICS, PER_NS = 3, 4, 6
KINDS = ("fact", "note", "task")


def _items() -> list[PutOp]:
    """Items over ``("memories", user, topic)``, a third of each namespace a fact."""
    nss = [("memories", f"u{u}", f"t{t}") for u in range(USERS) for t in range(TOPICS)]
    return [
        PutOp(ns, f"k{i:02d}", {"kind": KINDS[i % 3], "i": i}) for ns in nss for i in range(PER_NS)
    ]


def _load(store: RedisStore) -> list[list[PutOp]]:
    """The items in batches of 5 (a batch's items share their timestamp: ties to break)."""
    ops = _items()
    batches = [ops[i : i + 5] for i in range(0, len(ops), 5)]
    for batch in batches:
        store.batch(batch)
    return batches


def _expected(batches: list[list[PutOp]], user: str, offset: int, limit: int) -> list[str]:
    """``search(("memories", user), filter={"kind": "fact"})`` keys in the documented order."""
    rows = [
        (-b, ".".join(op.namespace), op.key)
        for b, batch in enumerate(batches)
        for op in batch
        if op.namespace[1] == user and op.value and op.value["kind"] == "fact"
    ]
    return [f"{ns}/{key}" for _, ns, key in sorted(rows)[offset : offset + limit]]


def _keys(results: list) -> list[str]:  # type: ignore[type-arg]
    return [f"{'.'.join(r.namespace)}/{r.key}" for r in results]


@pytest.fixture(params=["query_engine", "plain"])
def store(request: pytest.FixtureRequest) -> Iterator[RedisStore]:
    modules = request.param == "query_engine"
    client = redis.Redis.from_url(servers.redis_url(modules=modules))
    s = RedisStore(client, prefix=f"t{uuid.uuid4().hex[:12]}", mode=request.param)
    s.setup()
    yield s
    client.close()


@pytest.mark.parametrize(("offset", "limit"), [(0, 10), (0, 3), (2, 4), (5, 10), (0, 1)])
def test_prefix_page_is_in_documented_order(store: RedisStore, offset: int, limit: int) -> None:
    batches = _load(store)
    for u in range(USERS):
        user = f"u{u}"
        got = store.search(("memories", user), filter={"kind": "fact"}, offset=offset, limit=limit)
        assert _keys(got) == _expected(batches, user, offset, limit)
        assert all(r.value["kind"] == "fact" and r.score is None for r in got)


def test_hit_without_item_data_is_left_out_and_page_stays_full() -> None:
    """A hash the items index holds that has no item fields (written by hand under the store's
    prefix) is a hit of the query but no item: left out, and the page still holds ``limit``."""
    client = redis.Redis.from_url(servers.redis_url(modules=True))
    store = RedisStore(client, prefix=f"t{uuid.uuid4().hex[:12]}")
    store.setup()
    batches = _load(store)
    (cond,) = parse_filter({"kind": "fact"})
    stray = store.keys.item("memories.u0.t0", "stray")
    tags = namespace_tags(("memories", "u0", "t0"))
    clause = pushdown(cond)
    assert clause is not None
    fact = clause.removeprefix("@t:{").removesuffix("}")
    client.hset(stray, mapping={"p": tags, "t": fact, "u": 2**52})  # newest of all, no "m"
    try:
        user = path_token("n", ("memories", "u0"))
        hits = client.execute_command(
            "FT.SEARCH", store.keys.index(None), f"@p:{{{user}}} {clause}", "LIMIT", 0, 0
        )
        facts = len(_expected(batches, "u0", 0, 100))
        assert total_results(hits) == facts + 1  # the stray hash is a hit
        got = store.search(("memories", "u0"), filter={"kind": "fact"}, limit=3)
        assert _keys(got) == _expected(batches, "u0", 0, 3)
    finally:
        client.delete(stray)
        client.close()


async def test_async_prefix_page_matches_sync() -> None:
    url = servers.redis_url(modules=True)
    prefix = f"t{uuid.uuid4().hex[:12]}"
    client = redis.Redis.from_url(url)
    sync = RedisStore(client, prefix=prefix)
    sync.setup()
    batches = _load(sync)
    async with AsyncRedisStore.from_conn_string(url, prefix=prefix) as astore:
        got = await astore.asearch(("memories", "u1"), filter={"kind": "fact"}, limit=5)
    assert _keys(got) == _expected(batches, "u1", 0, 5)
    client.close()
