"""``"fusion": "information"`` on the Redis stores, Query Engine and plain mode: the page and its
scores are those of ``core.information`` over the two sides (checked against a reference computed
here from the texts and vectors, on the memories of the Postgres test), a lexical candidate past the
lexical page reaches the page with its value, and filters and namespace prefixes hold."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
import redis
from langgraph.store.base import PutOp, SearchItem

from langmem_adapters.core.hybrid import query_words
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests import servers
from tests.postgres.test_information_fusion import (
    HYBRID,
    MEMORIES,
    OTHERS,
    Angles,
    Memory,
    check,
    vector,
)

OPTIONS = {"fusion": "information", "rare_share": 0.2}
DIMS = 8
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


def distance(m: Memory) -> float:
    v = np.array(vector(m.angle), dtype=np.float32)
    q = np.array(vector(0.0), dtype=np.float32)
    return float(1 - v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))


def reference(
    memories: Sequence[Memory],
    prefix: tuple[str, ...],
    query: str,
    kind: str | None,
    offset: int,
    limit: int,
    least: int = 0,
) -> list[tuple[str, float]]:
    """The page (keys, fused scores) computed here: the vector side's nearest ``page`` items in
    scope, the lexical candidates (in scope, holding a query word held by at most the bound's
    items of the whole collection) by IDF sum (each word's df counted exactly over the collection),
    then ``fuse_information``; ``least``: the least ``n`` (a memory's place) in scope."""
    page, n = offset + limit, len(memories)
    bound = max(1, page, math.floor(HYBRID.rare_share * n))
    words = query_words(query)
    df = {w: sum(w in m.text.split() for m in memories) for w in words}
    idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items() if d}
    inside = [
        m
        for i, m in enumerate(memories)
        if m.namespace[: len(prefix)] == prefix and kind in (None, m.kind) and i >= least
    ]
    near = sorted(inside, key=distance)[:page]
    held = [m for m in inside if any(0 < df[w] <= bound and w in m.text.split() for w in words)]
    score = {m.key: sum(idf.get(w, 0.0) for w in words if w in m.text.split()) for m in held}
    held.sort(key=lambda m: (-score[m.key], ".".join(m.namespace), m.key))
    depth = HYBRID.candidates(offset, limit)
    fused = fuse_information(
        [VectorCandidate(m.key, distance(m)) for m in near],
        [LexicalCandidate(m.key, score[m.key], distance(m)) for m in held[:depth]],
        HYBRID,
        page,
        depth,
    )
    return fused[offset:page]


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
    for prefix, kind in (
        (("n", "u1"), "a"),
        (("n",), "x"),
        (("n", "u2"), None),
        (("n", "u1"), None),
    ):
        for query in ("kiwi apple plum grape", "plum kiwi"):
            for offset, limit in ((0, 1), (0, 4), (2, 3)):
                want = reference(memories, prefix, query, kind, offset, limit)
                got = store.search(
                    prefix,
                    query=query,
                    filter=None if kind is None else {"kind": kind},
                    offset=offset,
                    limit=limit,
                )
                check(got, want, memories)
                assert all(r.namespace[: len(prefix)] == prefix for r in got)


@pytest.mark.parametrize("mode", MODES)
def test_a_range_filter_checked_on_the_rows(client: redis.Redis, mode: str) -> None:
    """A range is checked here, not by the server's clauses: every candidate is read (those that
    pass may be past the candidates wanted) and the reference still holds."""
    memories = MEMORIES + OTHERS
    store = loaded(client, mode, memories)
    for least in (1, 3, 20):
        for offset, limit in ((0, 1), (0, 4), (2, 3)):
            want = reference(memories, ("n",), "kiwi apple plum grape", None, offset, limit, least)
            got = store.search(
                ("n",),
                query="kiwi apple plum grape",
                filter={"n": {"$gte": least}},
                offset=offset,
                limit=limit,
            )
            check(got, want, memories)
