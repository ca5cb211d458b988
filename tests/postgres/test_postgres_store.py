"""Postgres-specific behaviour: construction, schema, plans, durability, concurrency."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from langgraph.store.base import PutOp, SearchOp

from langmem_adapters import HashEmbeddings
from langmem_adapters.core.filters import parse_filter
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore, embedded_store
from langmem_adapters.postgres.connection import Connections, Session
from langmem_adapters.postgres.namespaces import list_statement as _list_statement
from langmem_adapters.postgres.schema import SCHEMA_VERSION, Tables
from langmem_adapters.postgres.search import Shape
from langmem_adapters.postgres.search import vector_search as _vector_search
from langmem_adapters.postgres.sql import Round, Statement
from tests import servers
from tests.stores import DIMS, hash_index, reset_postgres


@pytest.fixture
def dsn() -> str:
    dsn = servers.postgres_dsn()
    with PostgresStore.from_conn_string(dsn) as store:
        store.setup()
    reset_postgres(dsn)
    return dsn


def test_from_conn_string_with_pool(dsn: str) -> None:
    with PostgresStore.from_conn_string(dsn, pool_config={"min_size": 1, "max_size": 4}) as store:
        store.setup()
        threads = [
            threading.Thread(target=store.put, args=(("p", str(i)), "k", {"i": i}))
            for i in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(store.list_namespaces(prefix=("p",))) == 8


async def test_async_from_conn_string_with_pool(dsn: str) -> None:
    async with AsyncPostgresStore.from_conn_string(dsn, pool_config={"max_size": 3}) as store:
        await store.setup()
        await store.aput(("ap",), "k", {"v": 1})
        assert (await store.aget(("ap",), "k")).value == {"v": 1}  # type: ignore[union-attr]


def test_non_autocommit_connection_commits(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:  # autocommit off
        store = PostgresStore(conn)
        store.put(("nc",), "k", {"v": 1})
        assert store.get(("nc",), "k") is not None
    with PostgresStore.from_conn_string(dsn) as other:
        assert other.get(("nc",), "k") is not None


def test_setup_is_idempotent_and_concurrent(dsn: str) -> None:
    errors: list[BaseException] = []

    def setup() -> None:
        try:
            with PostgresStore.from_conn_string(
                dsn, index=hash_index(dims=48), table_prefix="concurrent"
            ) as s:
                s.setup()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=setup) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM concurrent_migrations").fetchone() == (
            SCHEMA_VERSION,
        )


def test_table_prefixes_isolate_stores(dsn: str) -> None:
    with (
        PostgresStore.from_conn_string(dsn, table_prefix="tenant_a") as a,
        PostgresStore.from_conn_string(dsn, table_prefix="tenant_b") as b,
    ):
        a.setup()
        b.setup()
        a.put(("x",), "k", {"owner": "a"})
        assert b.get(("x",), "k") is None
        with pytest.raises(ValueError):
            PostgresStore(a.conn, table_prefix="bad; DROP TABLE x")


def test_embedded_store_is_durable(tmp_path: Path) -> None:
    with embedded_store(tmp_path / "pg") as store:
        store.put(("durable",), "k", {"v": 1})
    with embedded_store(tmp_path / "pg") as store:
        assert store.get(("durable",), "k").value == {"v": 1}  # type: ignore[union-attr]


def _plan(conn: psycopg.Connection[Any], sql: str, params: Any) -> str:
    return "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())


def test_list_namespaces_does_not_scan_items(dsn: str) -> None:
    from langgraph.store.base import ListNamespacesOp, MatchCondition

    with PostgresStore.from_conn_string(dsn) as store:
        store.batch([PutOp(("big", f"n{i % 20}"), f"k{i}", {"i": i}) for i in range(4000)])
        store.batch([PutOp(("small", f"n{i}"), "k", {"i": i}) for i in range(5)])
        store.conn.execute("ANALYZE")  # type: ignore[union-attr]
        for prefix in (("big",), ("small",), ()):
            conditions = (MatchCondition("prefix", prefix),) if prefix else ()
            st = _list_statement(Tables("langmem"), ListNamespacesOp(conditions, None, 100, 0))
            plan = _plan(store.conn, st.sql, st.params)  # type: ignore[arg-type]
            assert "Seq Scan on langmem_store" not in plan, plan
        assert len(store.list_namespaces(prefix=("big",))) == 20
        assert len(store.list_namespaces(limit=100)) == 25


def test_vector_search_uses_ann_index_and_has_high_recall(dsn: str) -> None:
    dims = 32
    emb = HashEmbeddings(dims)
    index = hash_index(dims=dims, fields=["text"])
    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    texts = [" ".join(rng.sample(words, 6)) for _ in range(3000)]
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        for start in range(0, len(texts), 500):
            store.batch(
                [PutOp(("r",), str(i), {"text": texts[i]}) for i in range(start, start + 500)]
            )
        store.conn.execute("ANALYZE")  # type: ignore[union-attr]
        spec = IndexSpec.from_config(index)
        from langgraph.store.base import SearchOp

        (st,) = _vector_search(
            Tables("langmem"),
            spec,
            SearchOp(("r",), None, 10, 0, "q"),
            (),
            "[" + ",".join(["0.1"] * dims) + "]",
            Shape.NEAREST,
            100,
        )[-1:]
        with store.conn.transaction():  # type: ignore[union-attr]
            store.conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")  # type: ignore[union-attr]
            assert "hnsw_idx" in _plan(store.conn, st.sql, st.params)  # type: ignore[arg-type]
        matrix = np.array(emb.embed_documents(texts))
        hits = total = 0
        for _q in range(50):
            query = " ".join(rng.sample(words, 3))
            scores = matrix @ np.array(emb.embed_query(query))
            kth = np.sort(scores)[-10]  # ties at the boundary: any tied item is a correct answer
            got = [int(r.key) for r in store.search(("r",), query=query, limit=10)]
            hits += sum(1 for i in got if scores[i] >= kth - 1e-6)
            total += 10
        assert hits / total >= 0.95


def test_put_if_absent_keeps_the_live_items_vectors(dsn: str) -> None:
    with PostgresStore.from_conn_string(dsn, index=hash_index(fields=["text"])) as store:  # type: ignore[arg-type]
        store.setup()
        assert store.put_if_absent(("v",), "k", {"text": "original words"})
        assert not store.put_if_absent(("v",), "k", {"text": "replacement text"})
        top = store.search(("v",), query="original words", limit=1)[0]
        assert top.key == "k" and top.score == pytest.approx(1.0, abs=1e-6)


def test_sweep_races_with_writers_without_losing_namespaces(dsn: str) -> None:
    with PostgresStore.from_conn_string(
        dsn, pool_config={"max_size": 4}, ttl={"default_ttl": 0.001}
    ) as store:
        store.setup()
        stop = threading.Event()

        def writer(w: int) -> None:
            i = 0
            while not stop.is_set():
                store.put(("race", f"w{w}", str(i % 5)), "k", {"i": i}, ttl=None)
                store.delete(("race", f"w{w}", str((i + 2) % 5)), "k")
                i += 1

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
        for t in threads:
            t.start()
        for _ in range(15):
            store.sweep_ttl()
        stop.set()
        for t in threads:
            t.join()
        live = {i.namespace for i in store.search(("race",), limit=1000)}
        assert set(store.list_namespaces(prefix=("race",), limit=1000)) == live
        store.sweep_ttl()
        with psycopg.connect(servers.postgres_dsn()) as conn:
            rows = conn.execute(
                "SELECT count(*) FROM langmem_namespaces WHERE ns LIKE 'race.%'"
            ).fetchone()
        assert rows == (len(live),)


@pytest.mark.parametrize(
    "ann",
    [
        {"kind": "hnsw", "m": 8, "ef_construction": 32, "ef_search": 60},
        {"kind": "ivfflat", "nlist": 4, "probes": 4},
        {"kind": "exact"},
        {"kind": "hnsw", "vector_type": "halfvec"},
    ],
)
@pytest.mark.parametrize("distance", ["cosine", "l2", "inner_product"])
def test_index_kinds_vector_types_and_distances(
    dsn: str, ann: dict[str, Any], distance: str
) -> None:
    index = hash_index(dims=40, fields=["text"], distance_type=distance, ann_index_config=ann)
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch(
            [
                PutOp(("k", f"n{i % 3}"), f"t{i}", {"text": f"topic{i % 5} words {i}"})
                for i in range(60)
            ]
        )
        hits = store.search(("k",), query="topic2 words 7", limit=12)
        assert len(hits) == 12 and hits[0].key == "t7"
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[type-var]
        page2 = store.search(("k",), query="topic2 words 7", limit=12, offset=12)
        assert not {h.key for h in hits} & {h.key for h in page2} and len(page2) == 12
        assert len(store.search(("k", "n1"), query="topic2", limit=50)) == 20


def test_pooled_concurrent_refreshes_and_writes_do_not_deadlock(dsn: str) -> None:
    ttl: Any = {"default_ttl": 5, "refresh_on_read": True}
    with PostgresStore.from_conn_string(dsn, ttl=ttl, pool_config={"max_size": 6}) as store:
        store.batch([PutOp(("ttl",), f"k{i}", {"i": i}, ttl=5) for i in range(60)])
        errors: list[BaseException] = []
        stop = threading.Event()

        def worker(w: int) -> None:
            rng = random.Random(w)
            try:
                while not stop.is_set():
                    store.search(("ttl",), limit=60)
                    keys = rng.sample(range(60), 10)
                    store.batch([PutOp(("ttl",), f"k{k}", {"w": w}, ttl=5) for k in keys])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
        for t in threads:
            t.start()
        threading.Event().wait(3)
        stop.set()
        for t in threads:
            t.join(60)
        assert not errors, errors[:2]


def _exact_top(matrix: np.ndarray, q: np.ndarray, k: int) -> tuple[set[int], float]:
    """Rows of the exact top k by cosine (unit vectors), and the k-th best score (for ties)."""
    scores = matrix @ q
    kth = float(np.sort(scores)[-k])
    return {int(i) for i in np.flatnonzero(scores >= kth - 1e-6)}, kth


def _texts(seed: int, n: int = 600) -> list[str]:
    """``n`` texts of 5 words out of 100 (``w0`` ... ``w99``), seeded."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(100)]
    return [" ".join(rng.sample(words, 5)) for _ in range(n)]


def _prepared_scans(conn: psycopg.Connection[Any]) -> list[str]:
    """The prepared statements of exact scans (``search.scanned``) on ``conn``."""
    prepared = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    return [s for (s,) in prepared if "OFFSET 0) v ORDER BY v.d" in s]


def test_small_prefixes_are_searched_exactly_and_large_ones_through_the_index(dsn: str) -> None:
    dims = 32
    emb = HashEmbeddings(dims)
    rng = random.Random(3)
    words = [f"w{i}" for i in range(200)]
    small = [" ".join(rng.sample(words, 6)) for _ in range(150)]
    big = [" ".join(rng.sample(words, 6)) for _ in range(1100)]
    # Without a recall target the breadth follows the size schedule: no cold exact line, so the
    # statements below are the ones a calibrated store of this size sends.
    index = hash_index(dims=dims, fields=["text"], ann_index_config={"target_recall": None})
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch([PutOp(("small",), str(i), {"text": t}) for i, t in enumerate(small)])
        store.batch([PutOp(("big",), str(i), {"text": t}) for i, t in enumerate(big)])
        matrix = np.array(emb.embed_documents(small))
        for query in ("w1 w2 w3", "w10 w20", "w5 w50 w150 w7"):
            want, _ = _exact_top(matrix, np.array(emb.embed_query(query)), 10)
            got = store.search(("small",), query=query, limit=10)
            assert len(got) == 10 and {int(r.key) for r in got} <= want, query
        seen: list[str] = []
        for offset in range(0, 150, 40):
            seen += [
                r.key for r in store.search(("small",), query="w1 w2", limit=40, offset=offset)
            ]
        assert sorted(seen) == sorted(str(i) for i in range(150))
        # psycopg prepares a statement on its 5th run; the server plans its first 5 runs each.
        for _ in range(12):
            store.search(("small",), query="w1", limit=5)
            store.search(("big",), query="w1", limit=5)
        conn = store.conn
        assert isinstance(conn, psycopg.Connection)
        prepared = conn.execute(
            "SELECT statement, generic_plans FROM pg_prepared_statements"
        ).fetchall()
        # The small namespace: a scan ordered outside a fenced subquery (which the ANN index
        # cannot serve), kept as a generic plan; the large one: the ANN settings, then the index.
        scans = [g for s, g in prepared if "OFFSET 0) v ORDER BY v.d, v.ns, v.key LIMIT" in s]
        assert scans and all(g > 0 for g in scans)
        assert any("hnsw.ef_search" in s for s, _ in prepared)
        assert len(store.search(("big",), query="w1 w2", limit=10)) == 10
    with pytest.raises(ValueError, match="exact_below"):
        PostgresStore(
            psycopg.connect(dsn), index={**hash_index(), "ann_index_config": {"exact_below": -1}}
        )  # type: ignore[typeddict-item]


def test_a_prefix_holding_most_vectors_is_scanned_with_the_cheap_namespace_test(dsn: str) -> None:
    """An exact search under a prefix holding half of the vectors or more tests each row's
    namespace without checking a label's end by character (the cheaper test), and still keeps out
    a namespace whose label only starts like the prefix's, however near its vectors."""
    dims = 32
    emb = HashEmbeddings(dims)
    big = _texts(5)
    index = hash_index(dims=dims, fields=["text"], ann_index_config={"exact_below": 5000})
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch([PutOp(("big", str(i % 3)), str(i), {"text": t}) for i, t in enumerate(big)])
        store.batch([PutOp(("bigx",), f"x{i}", {"text": "w1 w2 w3"}) for i in range(100)])
        store.batch([PutOp(("small",), f"s{i}", {"text": "w4 w5"}) for i in range(300)])
        matrix = np.array(emb.embed_documents(big))
        for _ in range(12):  # prepared on the 5th run, then its plan kept or not
            for query in ("w1 w2 w3", "w4 w5 w6", "w7"):
                want, _ = _exact_top(matrix, np.array(emb.embed_query(query)), 10)
                got = store.search(("big",), query=query, limit=10)
                assert len(got) == 10 and {int(r.key) for r in got} <= want, query
        assert isinstance(store.conn, psycopg.Connection)
        scans = _prepared_scans(store.conn)
        assert scans and all("substr(" not in s for s in scans)


@pytest.mark.parametrize("outsiders", [5, 15])
def test_a_prefix_holding_every_vector_is_scanned_without_a_namespace_test(
    dsn: str, outsiders: int
) -> None:
    """An exact search under a prefix that held every vector at the last count scans the table
    with no namespace test and tests the prefix on the nearest rows: vectors written outside it
    since (nearer the query than any inside) never reach the page, which stays full and exact,
    whether the scan's window still holds a page of the prefix's items (5) or not (15)."""
    dims = 32
    emb = HashEmbeddings(dims)
    big = _texts(9)
    index = hash_index(dims=dims, fields=["text"], ann_index_config={"exact_below": 5000})
    matrix = np.array(emb.embed_documents(big))
    query = "w1 w2 w3"
    want, _ = _exact_top(matrix, np.array(emb.embed_query(query)), 10)
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch([PutOp(("big", str(i % 3)), str(i), {"text": t}) for i, t in enumerate(big)])
        first = store.search(("big",), query=query, limit=10)  # counts: the prefix holds all
        store.batch([PutOp(("bigx",), f"x{i}", {"text": query}) for i in range(outsiders)])
        for _ in range(7):  # prepared on the 5th run
            got = store.search(("big",), query=query, limit=10)
            assert [r.key for r in got] == [r.key for r in first]
            assert len(got) == 10 and {int(r.key) for r in got} <= want
        assert isinstance(store.conn, psycopg.Connection)
        scans = _prepared_scans(store.conn)
        assert scans and all("v WHERE TRUE OFFSET 0" in s for s in scans)


def test_large_and_small_prefixes_fill_their_pages(dsn: str) -> None:
    """A prefix holding most of the vectors (without pgvector's iterative scan) and a smaller one
    above ``exact_below`` (with it) both return full pages of the true nearest items, also when the
    page runs past ``ef``."""
    dims = 32
    emb = HashEmbeddings(dims)
    rng = random.Random(5)
    words = [f"w{i}" for i in range(200)]
    texts = {
        ns: [" ".join(rng.sample(words, 6)) for _ in range(n)] for ns, n in (("a", 150), ("b", 400))
    }
    # On the size schedule (target_recall=None): a background measurement could switch the whole
    # 550-vector index to exact scans before the statements below were prepared (as ANN_ALWAYS).
    ann = {"exact_below": 100, "target_recall": None}
    index = {**hash_index(dims=dims, fields=["text"]), "ann_index_config": ann}
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        for ns, rows in texts.items():
            store.batch([PutOp((ns,), str(i), {"text": t}) for i, t in enumerate(rows)])
        # psycopg prepares a statement on its 5th run; the server plans its first 5 runs each.
        for _ in range(12):
            for ns, rows in texts.items():
                want, _ = _exact_top(
                    np.array(emb.embed_documents(rows)), np.array(emb.embed_query("w1 w2")), 10
                )
                got = store.search((ns,), query="w1 w2", limit=10)
                assert len(got) == 10 and len({int(r.key) for r in got} & want) >= 8, ns
        deep = store.search(("b",), query="w3", limit=50, offset=120)  # past ef_search (100)
        assert len(deep) == 50
        conn = store.conn
        assert isinstance(conn, psycopg.Connection)
        settings = [
            r[0]
            for r in conn.execute(
                "SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%hnsw.ef_search%'"
            )
        ]
        modes = {m for s in settings for m in ("relaxed_order", "off") if f"_scan', '{m}'" in s}
        assert modes == {"relaxed_order", "off"} and all("enable_sort" in s for s in settings)


# Every search through the HNSW index on the size schedule. With a recall target the first search
# starts a background measurement, which at a few thousand vectors can find the exact scan as fast
# (and switch to it) before the statement under test ran the 5 times psycopg needs to prepare it.
ANN_ALWAYS = {"exact_below": 0, "target_recall": None}


def test_ann_search_plan_reads_only_its_candidates_items(dsn: str) -> None:
    """The plan a prepared ANN search keeps (generic) reads the items of its candidates by key,
    however many items have no vectors, instead of hash-joining them with a scan of every item."""
    index = {**hash_index(fields=["text"]), "ann_index_config": ANN_ALWAYS}
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch(
            [PutOp(("v",), f"k{i}", {"text": f"note {i} word{i % 13}"}) for i in range(2000)]
        )
        for start in range(0, 12000, 4000):
            store.batch(
                [
                    PutOp(("plain",), f"p{i}", {"n": i}, index=False)
                    for i in range(start, start + 4000)
                ]
            )
        conn = store.conn
        assert isinstance(conn, psycopg.Connection)
        conn.execute("ANALYZE")
        # psycopg prepares a statement on its 5th run; the server plans its first 5 runs each.
        for _ in range(12):
            for prefix in ((), ("v",)):  # global (settings in the query) and under a prefix
                assert len(store.search(prefix, query="note word3", limit=10)) == 10
        prepared = conn.execute(
            "SELECT name, parameter_types::text[] FROM pg_prepared_statements "
            "WHERE statement LIKE '%ORDER BY (v.embedding%'"
        ).fetchall()
        assert len(prepared) == 2, prepared
        qvec = "[" + ",".join(["0.1"] * DIMS) + "]"
        conn.execute("SET plan_cache_mode = force_generic_plan")
        for name, types in prepared:
            args = ", ".join(f"'{qvec}'::{t}" if "vector" in t else "'v'" for t in types)
            plan = _plan(conn, f"EXECUTE {name}({args})", None)
            assert "hnsw_idx" in plan and "Seq Scan on langmem_store" not in plan, plan
        conn.execute("RESET plan_cache_mode")


@pytest.mark.parametrize("shape", [s for s in Shape if s is not Shape.EXACT])
def test_vector_search_returns_only_its_page_each_item_once(dsn: str, shape: Shape) -> None:
    """A vector search's statement (but ``EXACT``'s) sends the page's items only, each once at its
    nearest vector (items here have two vectors each, both near the query), nearest first: the
    candidate vectors are pooled and cut on the server, after the page's offset too, so no other
    item's value is read."""
    index = {**hash_index(fields=["text", "title"]), "ann_index_config": ANN_ALWAYS}
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        texts = _texts(5, 60)
        store.batch(
            [
                PutOp(("p",), f"k{i}", {"text": t, "title": f"{t} x", "n": 1})
                for i, t in enumerate(texts)
            ]
        )
        assert store.index_spec is not None
        spec, emb = store.index_spec, HashEmbeddings(DIMS)
        qvec = "[" + ",".join(map(str, emb.embed_query(texts[7]))) + "]"
        op = SearchOp(("p",), None, 4, 1, texts[7])
        conditions = parse_filter({"n": 1}) if shape is Shape.FILTERED else ()
        *settings, st = _vector_search(store.tables, spec, op, conditions, qvec, shape, 100)
        with Session(Connections(store.conn)) as execute:  # type: ignore[arg-type]
            *_, rows = execute(Round([*settings, st]))
        matrix = np.array(emb.embed_documents([f"{t} x" for t in texts] + texts))
        distance = 1 - matrix @ np.array(emb.embed_query(texts[7]))
        nearest = np.minimum(distance[: len(texts)], distance[len(texts) :])
        order = sorted(range(len(texts)), key=lambda i: (round(float(nearest[i]), 5), f"k{i}"))
        want = [f"k{i}" for i in order[1:5]]  # offset 1, limit 4
        assert [r[1] for r in rows] == want
        assert [r[6] for r in rows] == pytest.approx(sorted(nearest)[1:5], abs=1e-5)


def test_ann_search_sets_its_breadth_for_its_own_round_only(dsn: str) -> None:
    """An ANN search sets ``hnsw.ef_search`` for the statements of its own round (one implicit
    transaction): the index query runs at that breadth, and the session's own setting is left as
    it was."""
    index = {**hash_index(fields=["text"]), "ann_index_config": ANN_ALWAYS}
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch(
            [
                PutOp(("g", str(i % 7)), f"k{i}", {"text": f"note {i} w{i % 31}"})
                for i in range(2000)
            ]
        )
        conn = store.conn
        assert isinstance(conn, psycopg.Connection)
        conn.execute("SET hnsw.ef_search = 1")  # alone, the scan would stop after one row
        # psycopg prepares a statement on its 5th run; the server plans its first 5 runs each.
        for _ in range(12):
            assert len(store.search((), query="note w3", limit=10)) == 10
        assert store.index_spec is not None
        qvec = "[" + ",".join(["0.1"] * DIMS) + "]"
        op = SearchOp((), None, 10, 0, "q")
        settings, _ = _vector_search(
            store.tables, store.index_spec, op, (), qvec, Shape.NEAREST, 100
        )
        breadth = Statement("SELECT current_setting('hnsw.ef_search')")
        with Session(Connections(conn)) as execute:
            _, seen = execute(Round([settings, breadth]))
        assert seen == [("100",)]
        assert conn.execute("SHOW hnsw.ef_search").fetchone() == ("1",)
        conn.execute("RESET ALL")


def test_ann_search_under_a_prefix_holding_the_table_stays_on_the_index(dsn: str) -> None:
    """An unfiltered ANN search whose prefix holds every vector (a global search under a root
    label) reads the HNSW index at its breadth, even where the planner rates a scan and sort of every
    vector cheaper (here: distances made free)."""
    index = {**hash_index(fields=["text"]), "ann_index_config": ANN_ALWAYS}
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch([PutOp(("root", str(i % 5)), f"k{i}", {"text": f"n {i}"}) for i in range(500)])
        conn = store.conn
        assert isinstance(conn, psycopg.Connection) and store.index_spec is not None
        conn.execute("ANALYZE")
        conn.execute("SET cpu_operator_cost = 0")
        qvec = "[" + ",".join(["0.1"] * DIMS) + "]"
        op = SearchOp(("root",), None, 10, 0, "q")
        settings, st = _vector_search(
            store.tables, store.index_spec, op, (), qvec, Shape.NEAREST, 40
        )
        explain = Statement("EXPLAIN " + st.sql, st.params)
        with Session(Connections(conn)) as execute:
            _, plan = execute(Round([settings, explain]))
        text = "\n".join(r[0] for r in plan)
        assert "hnsw_idx" in text and "Seq Scan" not in text, text
        conn.execute("RESET ALL")


@pytest.mark.parametrize("exact_below", [0, 1000])
def test_vector_search_fills_pages_on_both_paths(dsn: str, exact_below: int) -> None:
    """The ANN path (exact_below=0) and the exact scan give the same complete, ordered pages,
    with a selective filter and with expired items among the nearest ones."""
    index = {**hash_index(fields=["text"]), "ann_index_config": {"exact_below": exact_below}}
    with PostgresStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch(
            [
                PutOp(
                    ("p",), f"k{i}", {"text": f"item number {i} word{i % 7}", "rare": i % 10 == 0}
                )
                for i in range(57)
            ]
        )
        # Near-duplicates of the query that expire at once: the pool loses them.
        store.batch(
            [PutOp(("p",), f"gone{i}", {"text": "item word3"}, ttl=0.0005) for i in range(15)]
        )
        import time

        time.sleep(0.1)
        seen: list[str] = []
        for offset in range(0, 57, 10):
            page = store.search(("p",), query="item word3", limit=10, offset=offset)
            assert len(page) == min(10, 57 - offset)
            scores = [r.score for r in page]
            assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
            seen += [r.key for r in page]
        assert sorted(seen) == sorted(f"k{i}" for i in range(57))
        rare = store.search(("p",), query="item word3", filter={"rare": True}, limit=10)
        assert sorted(r.key for r in rare) == sorted(f"k{i}" for i in range(0, 57, 10))
