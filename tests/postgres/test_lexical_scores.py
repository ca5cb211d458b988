"""The Postgres lexical statement's scores and rows: each item's score is the sum of the BM25
weights of the query words it holds, with every word's document frequency counted over the whole
table (also for a search in one namespace), common words only adding to what the rarer ones
select; its rows name the items, the best with their values. The relative fusion's
statement (BM25's IDF; the information fusion's ``ln(N / df)`` and its distance column are checked
against a reference in ``test_information_fusion.py``)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp, SearchOp

from langmem_adapters.postgres import PostgresStore
from langmem_adapters.postgres.fusion import LexicalRow, fuse_rows
from langmem_adapters.postgres.lexical import lexical_search, valued
from tests import servers
from tests.stores import hash_index

# 40 rows; "common" in 30 of them (past the bound, the page or 10% of 40 rows: it selects
# nothing), "zeta" in 3 (two users), "omega" in 1.
TEXTS = {
    ("u1", "a"): "zeta common alpha",
    ("u1", "b"): "zeta beta",
    ("u1", "c"): "omega common",
    ("u2", "d"): "zeta common",
    **{(f"u{1 + i % 2}", f"f{i}"): f"common filler {i}" for i in range(27)},
    **{("u2", f"g{i}"): f"other filler {i}" for i in range(9)},
}
QUERY = "zeta common omega"
DF = {"zeta": 3, "common": 30, "omega": 1}


@pytest.fixture
def conn() -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(servers.postgres_dsn(), autocommit=True) as c:
        yield c


@pytest.fixture
def store(conn: psycopg.Connection[Any]) -> PostgresStore:
    index = hash_index(
        fields=["text"], hybrid={"rare_share": 0.1, "vector_weight": 0.0, "fusion": "relative"}
    )
    s = PostgresStore(conn, index=index, table_prefix=f"lx{uuid.uuid4().hex[:10]}")  # type: ignore[arg-type]
    s.setup()
    s.batch([PutOp(("lx", u), k, {"text": t}) for (u, k), t in TEXTS.items()])
    return s


def expected(scope: tuple[str, ...], counted: bool) -> dict[str, float]:
    """BM25's weight of each query word an item holds, summed, for the items under ``scope``
    holding a word that selects (held by at most 10 rows, the page of 10). A word not in the
    statistics is ``counted`` up to one past that bound, and weighs as a word just past it."""
    n = len(TEXTS)
    dfs = {w: min(df, 11) if counted else df for w, df in DF.items()}
    idf = {w: math.log(1 + (n - df + 0.5) / (df + 0.5)) for w, df in dfs.items()}
    out = {}
    for (user, key), text in TEXTS.items():
        held = set(text.split()) & set(DF)
        if ("lx", user)[: len(scope)] == scope and any(DF[w] <= 10 for w in held):
            out[key] = sum(idf[w] for w in held)
    return out


def rows(
    conn: Any, store: PostgresStore, scope: tuple[str, ...], limit: int, offset: int = 0
) -> list[LexicalRow]:
    spec = store.index_spec
    assert spec is not None and spec.hybrid is not None
    op = SearchOp(scope, None, limit, offset, QUERY)
    statement = lexical_search(store.tables, spec, spec.hybrid, op, (), 100)
    with conn.transaction():
        return [LexicalRow._make(r) for r in conn.execute(statement.sql, statement.params)]


@pytest.mark.parametrize("analyzed", [False, True], ids=["counted", "statistics"])
@pytest.mark.parametrize("scope", [("lx",), ("lx", "u1")], ids=["global", "namespace"])
def test_scores_are_bm25_weights_over_the_whole_table(
    conn: Any, store: PostgresStore, scope: tuple[str, ...], analyzed: bool
) -> None:
    if analyzed:  # "common" is then a common word of the statistics, not counted
        spec = store.index_spec
        assert spec is not None
        conn.execute(f"ANALYZE {store.tables.vectors(spec)}")
        store.search(("lx",), query=QUERY)  # copies the statistics
        assert conn.execute(
            f"SELECT count(*) FROM {store.tables.terms} WHERE lex = 'common'"
        ).fetchone() == (1,)
    got = {r.key: r.score for r in rows(conn, store, scope, 10)}
    assert got == pytest.approx(expected(scope, not analyzed), rel=1e-6)


def test_rows_name_their_items_and_the_fusion_pages_them(conn: Any, store: PostgresStore) -> None:
    """Ranked c, then a and d tied (namespace and key order), then b: each row is the item's key and
    score, those ranked within ``valued`` (the best 3 for a first page of 2, the third and fourth
    for the fourth item alone) with their items' values, and the fused page of the lexical side
    alone is its order, cut at the offset."""
    got = rows(conn, store, ("lx",), 2)
    assert [r[:2] for r in got] == [("lx.u1", "c"), ("lx.u1", "a"), ("lx.u2", "d"), ("lx.u1", "b")]
    values = [{"text": TEXTS[k]} for k in (("u1", "c"), ("u1", "a"), ("u2", "d"), ("u1", "b"))]
    assert valued(0, 2) == (1, 3) and valued(3, 1) == (3, 4)
    assert [r.value for r in got] == [*values[:3], None]
    assert [r.value for r in rows(conn, store, ("lx",), 1, 3)] == [None, None, *values[2:]]
    assert {(r.distance, r.mass) for r in got} == {(None, None)}  # the relative fusion's
    spec = store.index_spec
    assert spec is not None and spec.hybrid is not None
    for offset, limit in ((0, 2), (1, 2)):
        fused = fuse_rows(spec.hybrid, [], got, offset, limit)
        assert [key for _, key in (k for k, _ in fused)] == ["c", "a", "d", "b"][offset:][:limit]
