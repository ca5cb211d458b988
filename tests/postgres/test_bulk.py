"""Bulk loads on Postgres: a restore (or any ``bulk_load``) into an empty vector table goes in
without the ANN index, which is built once at the end; searches and writers keep working meanwhile,
and an interrupted load leaves a store whose next ``setup()`` or restore brings the index back."""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp, SearchOp

from langmem_adapters import HashEmbeddings
from langmem_adapters.core.records import StoredItem
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.postgres.bulk import BUILD_MEMORY_CAP_KB, build_memory_kb
from langmem_adapters.postgres.schema import ann_index_name
from langmem_adapters.postgres.search import Shape, vector_search
from langmem_adapters.transfer import StoreSource, migrate
from tests import servers
from tests.stores import DIMS

T0 = datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
WORDS = [f"w{i}" for i in range(400)]


class Crash(BaseException):
    """An interrupt in the middle of a load (what a killed process or Ctrl-C looks like to it)."""


class Watching(HashEmbeddings):
    """Records, at each page's embedding, whether the ANN index exists; can fail on one call."""

    def __init__(self, dsn: str, index: str, fail_on: int = 0, error: type = RuntimeError) -> None:
        super().__init__(DIMS)
        self.dsn, self.index, self.fail_on, self.error = dsn, index, fail_on, error
        self.seen: list[bool] = []
        self.delay = 0.0
        self.loading = threading.Event()  # set once the load's first page is being embedded

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts[0].startswith("w"):  # not a page of the load (the identity probe texts)
            return super().embed_documents(texts)
        with psycopg.connect(self.dsn) as conn:
            row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [self.index]).fetchone()
        self.seen.append(bool(row and row[0]))
        self.loading.set()
        if len(self.seen) == self.fail_on:
            raise self.error("embedder failed")
        time.sleep(self.delay)
        return super().embed_documents(texts)


def _texts(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, 6)) for _ in range(n)]


def _records(texts: list[str], ns: tuple[str, ...] = ("r",)) -> list[StoredItem]:
    return [StoredItem(ns, f"k{i}", {"text": t}, T0, T0, None, None) for i, t in enumerate(texts)]


def _index(embed: Any, **ann: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    if ann:
        config["ann_index_config"] = ann
    return config


@pytest.fixture
def dsn() -> str:
    return servers.postgres_dsn()


@pytest.fixture
def prefix() -> str:
    """Fresh tables for each test."""
    return f"bulk{uuid.uuid4().hex[:10]}"


def _index_name(prefix: str, **ann: Any) -> str:
    spec = IndexSpec.from_config(_index(HashEmbeddings(DIMS), **ann))
    return ann_index_name(f"{prefix}_vectors_vector{DIMS}", spec)


def _indexes(dsn: str, prefix: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT i.indexname FROM pg_indexes i JOIN pg_class c ON c.relname = i.indexname "
            "JOIN pg_index x ON x.indexrelid = c.oid WHERE i.tablename = %s AND x.indisvalid",
            [f"{prefix}_vectors_vector{DIMS}"],
        ).fetchall()
    return {r[0] for r in rows}


@pytest.fixture
def open_store(dsn: str, prefix: str) -> Iterator[Any]:
    stack: list[Any] = []

    def make(embed: Any, **ann: Any) -> PostgresStore:
        context = PostgresStore.from_conn_string(
            dsn,
            index=_index(embed, **ann),  # type: ignore[arg-type]
            table_prefix=prefix,
            pool_config={"max_size": 4},
        )
        store = context.__enter__()
        stack.append(context)
        store.setup()
        return store

    yield make
    for context in reversed(stack):
        context.__exit__(None, None, None)


def _assert_finds_each(store: PostgresStore, texts: list[str], keys: range) -> None:
    """Searching an item's own text finds that item first, with the full score."""
    for i in keys:
        top = store.search(("r",), query=texts[i], limit=1)[0]
        assert top.key == f"k{i}" and top.score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("ann", [{}, {"kind": "ivfflat", "nlist": 8}], ids=["hnsw", "ivfflat"])
def test_restore_into_an_emptied_store_builds_the_index_once_and_searches_use_it(
    dsn: str, prefix: str, open_store: Any, ann: dict[str, Any]
) -> None:
    name = _index_name(prefix, **ann)
    embed = Watching(dsn, name)
    store = open_store(embed, **ann)
    store.batch([PutOp(("r",), f"old{i}", {"text": f"old text {i}"}) for i in range(20)])
    store.batch([PutOp(("r",), f"old{i}", None) for i in range(20)])  # emptied
    assert name in _indexes(dsn, prefix)
    embed.seen.clear()
    texts = _texts(3000)
    assert store.restore(_records(texts), page_size=500) == 3000
    assert embed.seen == [False] * 6  # every page loaded without the index
    assert name in _indexes(dsn, prefix)  # built (valid) at the end
    spec = IndexSpec.from_config(_index(embed, **ann))
    *_, st = vector_search(
        store.tables,
        spec,
        SearchOp(("r",), None, 10, 0, "q"),
        (),
        str([0.1] * DIMS),
        Shape.NEAREST,
        100,
    )
    with psycopg.connect(dsn) as conn, conn.transaction():
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + st.sql, st.params).fetchall())
    assert name in plan, plan
    _assert_finds_each(store, texts, range(0, 3000, 150))
    assert store.get(("r",), "k2999").value == {"text": texts[2999]}


def test_restore_into_a_store_holding_vectors_keeps_its_live_index(
    dsn: str, prefix: str, open_store: Any
) -> None:
    name = _index_name(prefix)
    embed = Watching(dsn, name)
    store = open_store(embed)
    store.put(("r",), "kept", {"text": "already here"})
    embed.seen.clear()
    texts = _texts(600)
    store.restore(_records(texts), page_size=300)
    assert embed.seen == [True, True]  # never dropped: the index held a vector
    _assert_finds_each(store, texts, range(0, 600, 100))


@pytest.mark.parametrize("interrupt", [RuntimeError, Crash], ids=["error", "crash"])
@pytest.mark.parametrize("recovery", ["setup", "restore"])
def test_an_interrupted_bulk_restore_keeps_its_committed_pages_and_the_index_comes_back(
    dsn: str, prefix: str, open_store: Any, interrupt: type, recovery: str
) -> None:
    name = _index_name(prefix)
    embed = Watching(dsn, name, fail_on=3, error=interrupt)
    store = open_store(embed)
    texts = _texts(2000)
    with pytest.raises(interrupt):
        store.restore(_records(texts), page_size=500)
    assert embed.seen == [False, False, False]
    assert store.count(("r",)) == 1000  # the two committed pages, whole; nothing of the third
    assert [store.get(("r",), f"k{i}") is not None for i in (0, 999, 1000, 1999)] == [
        True,
        True,
        False,
        False,
    ]
    # An error still ends the bulk load (the index is built); an interrupt leaves it missing.
    assert (name in _indexes(dsn, prefix)) == (interrupt is RuntimeError)
    _assert_finds_each(store, texts, range(0, 1000, 100))  # answered either way
    if recovery == "setup":
        store.setup()
    else:
        embed.fail_on = 0
        store.restore(_records(texts)[1000:], page_size=500)
    assert name in _indexes(dsn, prefix)
    _assert_finds_each(store, texts, range(0, 1000 if recovery == "setup" else 2000, 100))


def test_searches_and_writers_keep_working_during_a_bulk_restore(
    dsn: str, prefix: str, open_store: Any
) -> None:
    name = _index_name(prefix)
    embed = Watching(dsn, name)
    embed.delay = 0.1  # each page takes a while: the other threads run during the load
    loader = open_store(embed)
    other = open_store(HashEmbeddings(DIMS))
    texts = _texts(2500)
    done = threading.Event()
    answers: list[tuple[bool, list[Any]]] = []
    errors: list[BaseException] = []
    written: list[int] = []

    def search() -> None:
        try:
            while not done.is_set():
                missing = name not in _indexes(dsn, prefix)
                answers.append((missing, other.search(("r",), query=texts[0], limit=3)))
        except BaseException as exc:
            errors.append(exc)

    def write() -> None:
        embed.loading.wait(30)  # into a table that was empty when the load began
        try:
            i = 0
            while not done.is_set():
                other.put(("w",), f"w{i}", {"text": f"written during the load {i}"})
                written.append(i)
                i += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=search), threading.Thread(target=write)]
    for t in threads:
        t.start()
    try:
        loader.restore(_records(texts), page_size=250)
    finally:
        done.set()
        for t in threads:
            t.join()
    assert not errors
    during = [hits for missing, hits in answers if missing and hits]
    assert during, "no search ran while the index was missing"
    assert all(hits[0].key == "k0" and hits[0].score == pytest.approx(1.0) for hits in during)
    assert written and name in _indexes(dsn, prefix)
    last = written[-1]
    # Its own text scores 1.0; HashEmbeddings may give other numbers' texts the same vector (e.g.
    # 260 and 439; 49, 165, 316, 418 and 540 with 569), which then tie with it and come first by
    # key: the search pages through every item written, so no number of ties hides it.
    hits = other.search(("w",), query=f"written during the load {last}", limit=len(written))
    assert f"w{last}" in [h.key for h in hits if h.score == pytest.approx(1.0)]
    _assert_finds_each(loader, texts, range(0, 2500, 250))


def test_nested_bulk_loads_build_once_at_the_outermost_end(
    dsn: str, prefix: str, open_store: Any
) -> None:
    name = _index_name(prefix)
    store = open_store(HashEmbeddings(DIMS))
    texts = _texts(1200)
    records = _records(texts)
    with store.bulk_load():
        assert name not in _indexes(dsn, prefix)
        store.restore(records[:600])
        store.batch([PutOp(("r",), f"k{i}", {"text": texts[i]}) for i in range(600, 1200)])
        assert name not in _indexes(dsn, prefix)  # the inner restore did not build it
    assert name in _indexes(dsn, prefix)
    _assert_finds_each(store, texts, range(0, 1200, 100))


def test_migrate_into_a_new_store_builds_the_index_after_the_last_page(
    dsn: str, prefix: str, open_store: Any, tmp_path: Any
) -> None:
    source = open_store(HashEmbeddings(DIMS))
    texts = _texts(1500)
    source.restore(_records(texts))
    name = _index_name(prefix + "t")
    embed = Watching(dsn, name)
    with PostgresStore.from_conn_string(
        dsn,
        index=_index(embed),  # type: ignore[arg-type]
        table_prefix=prefix + "t",
    ) as target:
        target.setup()
        result = migrate(StoreSource(source), target, tmp_path / "cp.json", page_size=300)
        assert result.finished and result.copied == 1500
        assert embed.seen == [False] * 5  # one bulk load for the whole run, not one per page
        assert name in _indexes(dsn, prefix + "t")
        _assert_finds_each(target, texts, range(0, 1500, 150))


async def test_async_restore_and_bulk_load(dsn: str, prefix: str) -> None:
    name = _index_name(prefix)
    texts = _texts(1000)
    async with AsyncPostgresStore.from_conn_string(
        dsn,
        index=_index(HashEmbeddings(DIMS)),  # type: ignore[arg-type]
        table_prefix=prefix,
    ) as store:
        await store.setup()
        async with store.abulk_load():
            assert name not in _indexes(dsn, prefix)
            assert await store.arestore(_records(texts), page_size=250) == 1000
            assert name not in _indexes(dsn, prefix)
        assert name in _indexes(dsn, prefix)
        top = (await store.asearch(("r",), query=texts[7], limit=1))[0]
        assert top.key == "k7"
        await store.adelete_namespace(("r",))

        def from_a_thread() -> None:  # the sync twin, on the store's loop
            with store.bulk_load():
                store.restore(_records(texts[:300]))
                assert name not in _indexes(dsn, prefix)

        await asyncio.to_thread(from_a_thread)
        assert name in _indexes(dsn, prefix)


async def test_a_sync_stores_async_bulk_load(dsn: str, prefix: str, open_store: Any) -> None:
    store = open_store(HashEmbeddings(DIMS))
    name = _index_name(prefix)
    texts = _texts(400)
    async with store.abulk_load():
        assert name not in _indexes(dsn, prefix)
        await store.arestore(_records(texts))
        assert name not in _indexes(dsn, prefix)
    assert name in _indexes(dsn, prefix)
    _assert_finds_each(store, texts, range(0, 400, 40))


def test_build_memory_grows_with_the_table_and_is_capped() -> None:
    spec = IndexSpec.from_config({"dims": 128, "embed": HashEmbeddings(128)})
    small, large = build_memory_kb(1000, spec), build_memory_kb(100_000, spec)
    assert 64 * 1024 < small < large
    assert large > 64 * 1024 + 100_000 * (128 * 4) // 1024  # at least the vectors themselves
    assert build_memory_kb(10**9, spec) == BUILD_MEMORY_CAP_KB


def test_a_bulk_load_over_a_store_whose_index_went_missing_builds_it(
    dsn: str, prefix: str, open_store: Any
) -> None:
    store = open_store(HashEmbeddings(DIMS))
    name = _index_name(prefix)
    texts = _texts(300)
    store.batch([PutOp(("r",), f"k{i}", {"text": t}) for i, t in enumerate(texts)])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {name}")  # as a crashed bulk load leaves it
    with store.bulk_load():
        pass
    assert name in _indexes(dsn, prefix)
    _assert_finds_each(store, texts, range(0, 300, 30))


@pytest.mark.parametrize("ann", [{}, {"kind": "exact"}], ids=["hnsw-kept", "exact"])
def test_a_bulk_load_analyzes_the_tables_when_no_index_is_built(
    dsn: str, prefix: str, open_store: Any, ann: dict[str, Any]
) -> None:
    # The hybrid lexical side sizes the vector table and weighs its words by the statistics; a load
    # into a table that keeps its index (or has none to build) changes them as much as one that
    # builds it.
    store = open_store(HashEmbeddings(DIMS), **ann)
    store.put(("r",), "kept", {"text": "already here"})
    vectors = f"{prefix}_vectors_vector{DIMS}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"ANALYZE {vectors}")
        conn.execute(f"ANALYZE {prefix}_store")

        def rows(table: str) -> float:
            got = conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
            return float(got.fetchone()[0])  # type: ignore[index]

        assert rows(vectors) == 1
        store.restore(_records(_texts(600)), page_size=300)
        assert rows(vectors) == 601
        assert rows(f"{prefix}_store") == 601
