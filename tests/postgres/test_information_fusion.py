"""``"fusion": "information"`` on the Postgres stores (sync and async): the page and its scores are
those of ``core.information`` over the two sides as the store builds them (checked against a
reference computed here from the texts and vectors), a lexical candidate past the lexical page that
the fusion puts on the page comes with its item in the search's one round trip, and filters and
namespace prefixes hold."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import psycopg
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp, SearchItem

from langmem_adapters.core.hybrid import HybridSpec, query_words
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information
from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.redis import RedisStore
from tests import servers
from tests.postgres.wire import traced

OPTIONS = {"fusion": "information", "rare_share": 0.2}
HYBRID = HybridSpec(fusion="information", rare_share=0.2)
DIMS = 8


class Memory(NamedTuple):
    namespace: tuple[str, ...]
    key: str
    text: str
    angle: float  # degrees from the query's vector
    kind: str = "a"


# One namespace: "v" nearest the query with none of its words; "b" near, holding "kiwi"; "a" far,
# holding "kiwi" and the common "apple" (the best lexical candidate); five "plum" and five "grape"
# items (each five tied) between them; fillers holding "apple", far.
MEMORIES = [
    Memory(("n", "u1"), "v", "nothing said here", 0),
    Memory(("n", "u1"), "b", "kiwi", 10),
    Memory(("n", "u1"), "a", "kiwi apple", 90),
    *[Memory(("n", "u1"), f"d{i}", f"plum {i}", 20 + 5 * i) for i in range(5)],
    *[Memory(("n", "u1"), f"g{i}", f"grape {i}", 45 + 5 * i) for i in range(5)],
    *[Memory(("n", "u1"), f"f{i}", f"apple filler {i}", 100 + 3 * i) for i in range(22)],
]
# A second user and filtered-out twins, for the prefix and filter checks.
OTHERS = [
    Memory(("n", "u2"), "b2", "kiwi too", 5),
    Memory(("n", "u2"), "p2", "plum kiwi", 15),
    Memory(("n", "u1"), "bx", "kiwi plum", 12, kind="x"),
    Memory(("n", "u1"), "ax", "kiwi apple plum grape", 3, kind="x"),
]


def vector(angle: float) -> list[float]:
    return [math.cos(math.radians(angle)), math.sin(math.radians(angle))] + [0.0] * (DIMS - 2)


class Angles(Embeddings):
    """A memory's text (each its own) embeds at its angle; a query at angle 0; any other text at 90
    degrees."""

    def __init__(self, memories: Sequence[Memory]) -> None:
        self.angles = {m.text: m.angle for m in memories}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector(self.angles.get(t, 90.0)) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector(0.0)


@pytest.fixture
def conn() -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(servers.postgres_dsn(), autocommit=True) as c:
        yield c


def index(memories: Sequence[Memory], hybrid: Any = OPTIONS) -> dict[str, Any]:
    return {"dims": DIMS, "embed": Angles(memories), "fields": ["text"], "hybrid": hybrid}


def loaded(conn: psycopg.Connection[Any], memories: Sequence[Memory]) -> PostgresStore:
    store = PostgresStore(conn, index=index(memories), table_prefix=f"inf{uuid.uuid4().hex[:10]}")  # type: ignore[arg-type]
    store.setup()
    store.batch(
        [
            PutOp(m.namespace, m.key, {"text": m.text, "kind": m.kind, "n": i})
            for i, m in enumerate(memories)
        ]
    )
    return store


async def search(
    flavor: str,
    store: PostgresStore,
    memories: Sequence[Memory],
    prefix: tuple[str, ...],
    **kw: Any,
) -> list[SearchItem]:
    """``store.search(prefix, **kw)``, or the same search through an async store on its tables."""
    if flavor == "sync":
        return store.search(prefix, **kw)
    dsn = servers.postgres_dsn()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
        astore = AsyncPostgresStore(aconn, index=index(memories), table_prefix=store.tables.prefix)  # type: ignore[arg-type]
        await astore.setup()
        return await astore.asearch(prefix, **kw)


def reference(
    memories: Sequence[Memory],
    prefix: tuple[str, ...],
    query: str,
    kind: str | None,
    offset: int,
    limit: int,
) -> list[tuple[str, float]]:
    """The page (keys, fused scores) computed here: the vector side's nearest ``page`` items in
    scope, the lexical candidates (in scope, holding a query word held by at most the bound's
    rows, words past it counted to one past the bound, across the whole table) by IDF sum, then
    ``fuse_information``."""
    page, n = offset + limit, len(memories)
    bound = max(1, page, math.floor(HYBRID.rare_share * n))
    words = query_words(query)
    df = {w: min(sum(w in m.text.split() for m in memories), bound + 1) for w in words}
    idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items() if d}
    inside = [
        m for m in memories if m.namespace[: len(prefix)] == prefix and kind in (None, m.kind)
    ]
    q = np.array(vector(0.0), dtype=np.float32)

    def distance(m: Memory) -> float:
        v = np.array(vector(m.angle), dtype=np.float32)
        return float(1 - v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))

    near = sorted(inside, key=distance)[:page]
    held = [m for m in inside if any(df[w] <= bound and w in m.text.split() for w in words)]
    score = {m.key: sum(idf[w] for w in words if w in m.text.split()) for m in held}
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


def check(got: list[SearchItem], want: list[tuple[str, float]], memories: Sequence[Memory]) -> None:
    """The page is the reference's, each item with its own value and the reference's score."""
    assert [r.key for r in got] == [k for k, _ in want]
    assert [r.score for r in got] == pytest.approx([s for _, s in want], abs=1e-5)
    texts = {m.key: m.text for m in memories}
    assert [r.value["text"] for r in got] == [texts[r.key] for r in got]


@pytest.mark.parametrize("flavor", ["sync", "async"])
async def test_a_lexical_candidate_past_the_lexical_page_reaches_the_page(
    conn: Any, flavor: str
) -> None:
    """ "b" is second on the lexical side (page 1: it comes without its item) and not on the vector
    page ("v"), yet first fused: rank 2 by distance and kiwi's IDF beat "a" (kiwi and apple, rank 13
    among the candidates) and "v" (rank 1, no word)."""
    store = loaded(conn, MEMORIES)
    query = "kiwi apple plum grape"
    want = reference(MEMORIES, ("n",), query, None, 0, 1)
    assert [k for k, _ in want] == ["b"]
    got = await search(flavor, store, MEMORIES, ("n",), query=query, limit=1)
    check(got, want, MEMORIES)
    for offset, limit in ((0, 3), (1, 2), (0, 10), (4, 3)):
        got = await search(
            flavor,
            store,
            MEMORIES,
            ("n",),
            query=query,
            offset=offset,
            limit=limit,
        )
        check(got, reference(MEMORIES, ("n",), query, None, offset, limit), MEMORIES)


def test_one_round_trip_like_any_hybrid_search(conn: Any) -> None:
    """Every candidate comes with its item, so no search needs a second round, whichever candidate
    the fusion puts on the page ("b" came from past the lexical page)."""
    store = loaded(conn, MEMORIES)
    assert store.search(("n",), query="kiwi", limit=1)  # identity checked, sizes read
    rounds = []
    for query in ("kiwi", "kiwi apple plum grape"):
        with traced(conn) as trace:
            got = store.search(("n",), query=query, limit=1)
        rounds.append((got[0].key, trace.rounds))
    # "kiwi": "a" and "b" tie on it (two, more than the page of 1): by distance alone, "v" first.
    assert rounds == [("v", 1), ("b", 1)]


@pytest.mark.parametrize("flavor", ["sync", "async"])
async def test_filters_and_prefixes_hold(conn: Any, flavor: str) -> None:
    memories = MEMORIES + OTHERS
    store = loaded(conn, memories)
    for prefix, kind in (
        (("n", "u1"), "a"),
        (("n",), "x"),
        (("n", "u2"), None),
        (("n", "u1"), None),
    ):
        for query in ("kiwi apple plum grape", "plum kiwi"):
            for offset, limit in ((0, 1), (0, 4), (2, 3)):
                want = reference(memories, prefix, query, kind, offset, limit)
                got = await search(
                    flavor,
                    store,
                    memories,
                    prefix,
                    query=query,
                    filter=None if kind is None else {"kind": kind},
                    offset=offset,
                    limit=limit,
                )
                check(got, want, memories)
                assert all(r.namespace[: len(prefix)] == prefix for r in got)


def test_a_bad_fusion_is_rejected_and_redis_takes_information(conn: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="fusion"):
        PostgresStore(conn, index=index(MEMORIES, {"fusion": "nats"}))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="fusion"):
        RedisStore("redis://127.0.0.1:1", index=index(MEMORIES, {"fusion": "nats"}))  # type: ignore[arg-type]
    for mode in ("auto", "plain", "query_engine"):  # checked before connecting: no error
        RedisStore("redis://127.0.0.1:1", mode=mode, index=index(MEMORIES))  # type: ignore[arg-type]
