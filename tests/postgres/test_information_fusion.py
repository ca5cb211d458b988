"""``"fusion": "information"`` on the Postgres stores (sync and async): the page and its scores are
those of ``core.information`` over the two sides as the store builds them (checked against a
reference computed here from the texts and vectors), a lexical candidate past the lexical page that
the fusion puts on the page comes with its item in the round after the sides', as any page item
does, and filters and namespace prefixes hold."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp, SearchItem

from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.redis import RedisStore
from tests import servers
from tests.information import (
    DIMS,
    MEMORIES,
    OPTIONS,
    OTHERS,
    Angles,
    Memory,
    check,
    filter_cases,
    reference,
)
from tests.postgres.wire import traced


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


@pytest.mark.parametrize("flavor", ["sync", "async"])
async def test_a_lexical_candidate_past_the_lexical_page_reaches_the_page(
    conn: Any, flavor: str
) -> None:
    """ "b" is second on the lexical side (page 1: past the lexical page) and not on the vector
    page ("v"), yet first fused: rank 2 by distance and kiwi's IDF beat "a" (kiwi and apple, rank 13
    among the candidates) and "v" (rank 1, no word)."""
    store = loaded(conn, MEMORIES)
    query = "kiwi apple plum grape"
    want = reference(MEMORIES, ("n",), query, None, 0, 1, capped=True)
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
        check(got, reference(MEMORIES, ("n",), query, None, offset, limit, capped=True), MEMORIES)


def test_a_second_round_only_for_a_page_item_neither_side_read(conn: Any) -> None:
    """One round when the sides read the page's items (the vector side's page, the lexical side's
    best), two when the fusion puts a candidate neither read on the page ("b", from past the
    lexical side's best ``valued(0, 1)``, 1)."""
    store = loaded(conn, MEMORIES)
    assert store.search(("n",), query="kiwi", limit=1)  # identity checked, sizes read
    rounds = []
    for query in ("kiwi", "kiwi apple plum grape"):
        with traced(conn) as trace:
            got = store.search(("n",), query=query, limit=1)
        rounds.append((got[0].key, trace.rounds))
    # "kiwi": "a" and "b" tie on it (two, more than the page of 1): by distance alone, "v" first.
    assert rounds == [("v", 1), ("b", 2)]


@pytest.mark.parametrize("flavor", ["sync", "async"])
async def test_filters_and_prefixes_hold(conn: Any, flavor: str) -> None:
    memories = MEMORIES + OTHERS
    store = loaded(conn, memories)
    for case in filter_cases(memories, capped=True):
        got = await search(flavor, store, memories, case.prefix, **case.kwargs)
        check(got, case.want, memories)
        assert all(r.namespace[: len(case.prefix)] == case.prefix for r in got)


def test_a_bad_fusion_is_rejected_and_redis_takes_information(conn: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="fusion"):
        PostgresStore(conn, index=index(MEMORIES, {"fusion": "nats"}))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="fusion"):
        RedisStore("redis://127.0.0.1:1", index=index(MEMORIES, {"fusion": "nats"}))  # type: ignore[arg-type]
    for mode in ("auto", "plain", "query_engine"):  # checked before connecting: no error
        RedisStore("redis://127.0.0.1:1", mode=mode, index=index(MEMORIES))  # type: ignore[arg-type]
