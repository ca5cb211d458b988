"""``"fusion": "information"`` on the Redis stores, Query Engine and plain mode: the page and its
scores are those of ``core.information`` over the two sides (checked against a reference computed
here from the texts and vectors, on the memories of the Postgres test), a lexical candidate past the
lexical page reaches the page with its value, and filters and namespace prefixes hold."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import redis
from langgraph.store.base import PutOp, SearchItem

from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.redis.scripts import SCRIPTS, SHA
from langmem_adapters.redis.search import query_vector
from tests import servers
from tests.information import (
    DIMS,
    MEMORIES,
    OPTIONS,
    OTHERS,
    Angles,
    Memory,
    check,
    distance,
    filter_cases,
    reference,
    vector,
)

MODES = ["query_engine", "plain"]


def index(memories: Sequence[Memory]) -> dict[str, Any]:
    return {
        "dims": DIMS,
        "embed": Angles(memories),
        "fields": ["text"],
        "ann_index_config": {"kind": "flat"},
        "hybrid": OPTIONS,
    }


@pytest.fixture
def client(mode: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(servers.redis_url(modules=mode == "query_engine"))
    yield c
    c.close()


def loaded(client: redis.Redis, mode: str, memories: Sequence[Memory]) -> RedisStore:
    prefix = f"inf{uuid.uuid4().hex[:10]}"
    store = RedisStore(client, prefix=prefix, mode=mode, index=index(memories))  # type: ignore[arg-type]
    store.setup()
    assert store.mode == mode
    store.batch(
        [
            PutOp(m.namespace, m.key, {"text": m.text, "kind": m.kind, "n": i})
            for i, m in enumerate(memories)
        ]
    )
    return store


@pytest.mark.parametrize("mode", MODES)
def test_a_lexical_candidate_past_the_lexical_page_reaches_the_page(
    client: redis.Redis, mode: str
) -> None:
    """ "b" is second on the lexical side and not on the vector page ("v"), yet first fused: rank 2
    by distance and kiwi's IDF beat "a" (kiwi and apple, far) and "v" (rank 1, no word)."""
    store = loaded(client, mode, MEMORIES)
    query = "kiwi apple plum grape"
    want = reference(MEMORIES, ("n",), query, None, 0, 1)
    assert [k for k, _ in want] == ["b"]
    check(store.search(("n",), query=query, limit=1), want, MEMORIES)
    for offset, limit in ((0, 3), (1, 2), (0, 10), (4, 3)):
        got = store.search(("n",), query=query, offset=offset, limit=limit)
        check(got, reference(MEMORIES, ("n",), query, None, offset, limit), MEMORIES)


@pytest.mark.parametrize("mode", MODES)
async def test_async_store_gives_the_same_page(client: redis.Redis, mode: str) -> None:
    store = loaded(client, mode, MEMORIES)
    url = servers.redis_url(modules=mode == "query_engine")
    async with AsyncRedisStore.from_conn_string(
        url,
        prefix=store.keys.prefix,
        mode=mode,
        index=index(MEMORIES),  # type: ignore[arg-type]
    ) as astore:
        got: list[SearchItem] = await astore.asearch(("n",), query="kiwi plum", limit=4)
    check(got, reference(MEMORIES, ("n",), "kiwi plum", None, 0, 4), MEMORIES)


@pytest.mark.parametrize("mode", MODES)
def test_filters_and_prefixes_hold(client: redis.Redis, mode: str) -> None:
    memories = MEMORIES + OTHERS
    store = loaded(client, mode, memories)
    for case in filter_cases(memories):
        got = store.search(case.prefix, **case.kwargs)
        check(got, case.want, memories)
        assert all(r.namespace[: len(case.prefix)] == case.prefix for r in got)


@pytest.mark.parametrize("mode", MODES)
def test_a_range_filter_checked_on_the_rows(client: redis.Redis, mode: str) -> None:
    """A range is checked here, not by the server's clauses: every candidate is read (those that
    pass may be past the candidates wanted) and the reference still holds."""
    memories = MEMORIES + OTHERS
    store = loaded(client, mode, memories)
    for least in (1, 3, 20):
        for offset, limit in ((0, 1), (0, 4), (2, 3)):
            want = reference(
                memories, ("n",), "kiwi apple plum grape", None, offset, limit, least=least
            )
            got = store.search(
                ("n",),
                query="kiwi apple plum grape",
                filter={"n": {"$gte": least}},
                offset=offset,
                limit=limit,
            )
            check(got, want, memories)


def script_rows(store: RedisStore, client: redis.Redis, word: str, count: int, read: int) -> Any:
    """The ``information`` script's rows for a query of ``word`` alone, told it is held by
    ``count`` items (the store's count, up to a minute old, may be short of today's)."""
    spec = store.index_spec
    assert spec is not None
    blob = query_vector(spec, vector(0.0))
    keys = store.keys
    args = (keys.index(None), "", 0.2, -1, 10, read, keys.index(spec), keys.prefix, blob)
    client.script_load(SCRIPTS["information"])
    reply = client.evalsha(SHA["information"], 0, *args, 1, 0, 0, word, count)
    return json.loads(reply)[1]


@pytest.mark.parametrize("mode", ["query_engine"])
def test_the_script_finds_every_holder_of_a_word_counted_short(
    client: redis.Redis, mode: str
) -> None:
    """Each rare word's query asks for as many items as its count; when more hold it now (added
    since it was counted), it asks again for all. Each candidate comes with its server-side
    distance: read whole ([meta, created, distance, sum], all of them), or the best ``read`` and
    those tied with the last ([hash name, distance, sum]: the five "plum" items tie)."""
    store = loaded(client, mode, MEMORIES)
    plums = {m.key: m for m in MEMORIES if "plum" in m.text.split()}
    assert len(plums) == 5
    whole = script_rows(store, client, "plum", 1, -1)
    got = {m["k"]: (float(d), s) for m, _, d, s in whole}
    assert set(got) == set(plums)
    for key, (d, s) in got.items():
        assert d == pytest.approx(distance(plums[key]), abs=1e-6)
        assert s == pytest.approx(math.log(len(MEMORIES) / 1))  # told one holds it: ln(N / 1)
    named = script_rows(store, client, "plum", 1, 2)
    assert {store.keys.item_id(name)[1] for name, _, _ in named} == set(plums)
    assert all(len(row) == 3 for row in named)
