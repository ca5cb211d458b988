"""An exact scan of a namespace reads its vectors from the covering scan index, not from one table
page per row: the plan reads no table page after a vacuum, rows whose ids are too long to sit beside
their vector in a btree row are still found and ranked (from the other scan index), the bound on
those ids holds on the server, vectors too large for the index get none, and ``setup()`` adds the
indexes to a table made before them."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from langgraph.store.base import PutOp, SearchItem, SearchOp

from langmem_adapters import HashEmbeddings
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres import PostgresStore
from langmem_adapters.postgres.schema import scan_covered
from langmem_adapters.postgres.search import vector_search
from langmem_adapters.postgres.sql import vec_literal
from tests import servers

SCAN_INDEXES = {"scan_idx", "scan_long_idx"}
WORDS = [f"w{i}" for i in range(60)]


def _texts(n: int, seed: int) -> list[str]:
    """``n`` texts of six random words: distinct similarities to a query, no ties to order."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=6)) for _ in range(n)]


def _store(dims: int, vector_type: str = "vector") -> PostgresStore:
    index: dict[str, Any] = {"dims": dims, "embed": HashEmbeddings(dims), "fields": ["text"]}
    if vector_type != "vector":
        index["ann_index_config"] = {"vector_type": vector_type}
    return PostgresStore.from_conn_string(
        servers.postgres_dsn(),
        table_prefix=f"scan{uuid.uuid4().hex[:8]}",
        index=index,  # type: ignore[arg-type]
    )


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    """A fresh 64-d store on its own tables."""
    with _store(64) as s:
        s.setup()
        yield s


def _vectors(store: PostgresStore) -> str:
    assert store.index_spec is not None
    return store.tables.vectors(store.index_spec)


def _indexes(store: PostgresStore) -> set[str]:
    """The vector table's indexes, without the table's name in front."""
    vt = _vectors(store)
    with psycopg.connect(servers.postgres_dsn()) as conn:
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [vt])
        return {r[0][len(vt) + 1 :] for r in rows.fetchall()}


def _check_ranked(
    store: PostgresStore, items: dict[str, str], query: str, found: list[SearchItem]
) -> None:
    """``found`` is the best ten of ``items`` (key -> text) for ``query`` by cosine similarity
    computed here: each item's score is its similarity, and the scores are the ten best (ties may
    fall either way)."""
    assert store.index_spec is not None
    embed = store.index_spec.embeddings
    keys = list(items)
    docs = np.array(embed.embed_documents([items[k] for k in keys]))
    q = np.array(embed.embed_query(query))
    sims = dict(zip(keys, docs @ q / (np.linalg.norm(docs, axis=1) * np.linalg.norm(q))))
    best = sorted(sims.values(), reverse=True)[:10]
    assert len(found) == 10
    assert [r.score for r in found] == pytest.approx(best, abs=1e-5)
    assert [sims[r.key] for r in found] == pytest.approx(best, abs=1e-5)


def test_the_exact_scan_of_a_namespace_reads_no_table_page(store: PostgresStore) -> None:
    texts = {u: _texts(300, u) for u in range(3)}
    store.batch(
        [
            PutOp(("m", f"u{u}"), f"k{i}", {"text": texts[u][i]})
            for i in range(300)
            for u in range(3)
        ]
    )
    spec = store.index_spec
    assert spec is not None
    vt = _vectors(store)
    query = "w7 w8 w9"
    op = SearchOp(("m", "u1"), None, 10, 0, query=query)
    qvec = vec_literal(spec.embeddings.embed_query(query))
    (st,) = vector_search(40, store.tables, spec, op, (), qvec, 10, exact=True)
    with psycopg.connect(servers.postgres_dsn(), autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {vt}")
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN (ANALYZE, TIMING OFF) " + st.sql, st.params)
        )
    assert f"Index Only Scan using {vt}_scan_idx" in plan, plan
    assert "Heap Fetches: 0" in plan, plan
    assert f"Index Scan using {vt}_pkey" not in plan and "Seq Scan" not in plan, plan
    items = {f"k{i}": t for i, t in enumerate(texts[1])}
    _check_ranked(store, items, query, store.search(("m", "u1"), query=query, limit=10))


def test_rows_with_long_ids_are_found_and_ranked_with_the_others() -> None:
    # 500-d: 632 bytes of ids fit beside a vector; keys of 1,500 bytes do not.
    with _store(500) as store:
        store.setup()
        assert _indexes(store) >= SCAN_INDEXES
        texts = _texts(40, 7)
        items = {("k" if i % 2 else "long" + "x" * 1500) + str(i): t for i, t in enumerate(texts)}
        store.batch([PutOp(("m", "u"), k, {"text": t}) for k, t in items.items()])
        store.put(("m", "other"), "k0", {"text": texts[0]})
        for query in (texts[0], texts[1], "w1 w2 w3", "w40"):
            found = store.search(("m", "u"), query=query, limit=10)
            _check_ranked(store, items, query, found)
            assert all(r.namespace == ("m", "u") for r in found)
        every = store.search(("m", "u"), query="w5", limit=50)
        assert sorted(r.key for r in every) == sorted(items)


@pytest.mark.parametrize(("dims", "vector_type"), [(594, "vector"), (1188, "halfvec")])
def test_the_largest_ids_the_scan_index_takes_fit_in_a_btree_row(
    dims: int, vector_type: str
) -> None:
    with _store(dims, vector_type) as store:
        store.setup()
        assert store.index_spec is not None
        covered = scan_covered(store.index_spec)
        assert covered is not None
        room = int(covered.rstrip(")").rsplit(" ", 1)[1])
        # Namespace "n" (1 byte), field path "text" (4 bytes): the key takes the rest, in 2-byte
        # characters where it can, the last one 1 byte if the room is odd.
        key = "é" * ((room - 5) // 2) + "k" * ((room - 5) % 2)
        assert len(key.encode()) + 5 == room
        store.put(("n",), key, {"text": "at the bound"})
        with psycopg.connect(servers.postgres_dsn()) as conn:
            row = conn.execute(f"SELECT {covered} FROM {_vectors(store)}").fetchone()
        assert row == (True,)
        assert [r.key for r in store.search(("n",), query="at the bound")] == [key]


def test_vectors_too_large_for_a_btree_row_get_no_scan_index() -> None:
    spec = IndexSpec.from_config({"dims": 595, "embed": HashEmbeddings(595), "fields": ["text"]})
    assert scan_covered(spec) is None
    with _store(595) as store:
        store.setup()
        assert not SCAN_INDEXES & _indexes(store)
        store.put(("m",), "a", {"text": "alpha"})
        store.put(("m",), "b", {"text": "beta"})
        assert [r.key for r in store.search(("m",), query="alpha", limit=1)] == ["a"]


def test_setup_adds_the_scan_indexes_to_a_table_made_before_them(store: PostgresStore) -> None:
    vt = _vectors(store)
    store.put(("m",), "a", {"text": "alpha"})
    with psycopg.connect(servers.postgres_dsn(), autocommit=True) as conn:
        for name in SCAN_INDEXES:
            conn.execute(f"DROP INDEX {vt}_{name}")
    assert not SCAN_INDEXES & _indexes(store)
    store.setup()
    assert _indexes(store) >= SCAN_INDEXES
    assert [r.key for r in store.search(("m",), query="alpha", limit=1)] == ["a"]


def test_a_reindexed_table_gets_the_scan_indexes(store: PostgresStore) -> None:
    store.batch([PutOp(("m",), f"k{i}", {"text": t}) for i, t in enumerate(_texts(30, 3))])
    old = _vectors(store)
    index = {"dims": 48, "embed": HashEmbeddings(48), "fields": ["text"]}
    other = PostgresStore(store.conn, index=index, table_prefix=store.tables.prefix)  # type: ignore[arg-type]
    assert other.reindex() == 30
    other.search(("m",), query="w1", limit=1)  # the store moves to the new generation's table
    assert _vectors(other) != old
    assert _indexes(other) >= SCAN_INDEXES
    items = {f"k{i}": t for i, t in enumerate(_texts(30, 3))}
    _check_ranked(other, items, "w1 w2", other.search(("m",), query="w1 w2", limit=10))
