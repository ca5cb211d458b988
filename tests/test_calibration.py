"""The recall target: stores measure their own recall@10 and set the search breadth (or exact search)
that meets it; ``vector_stats()``; explicit ``ef_search`` wins; small duplicate-heavy prefixes are
searched exactly; a lost calibration connection never fails a search. Real servers throughout."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import psycopg
import pytest
import redis
import redis.asyncio as aredis
from langgraph.store.base import BaseStore, PutOp

from langmem_adapters.core.calibration import QUERIES as QUERIES_PER_MEASUREMENT
from langmem_adapters.core.calibration import Calibrator
from langmem_adapters.core.recall import recall_at, synthetic
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import InvalidArgumentError, StoreConnectionError
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.postgres.connection import BACKGROUND
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests import servers
from tests.calibration_data import DATA, DIMS, QUERIES, N, TableEmbeddings, drop_pg
from tests.stores import hash_index, ours_only
from tests.waiting import await_until, wait_until


def _index(**ann: Any) -> dict[str, Any]:
    return {"dims": DIMS, "embed": TableEmbeddings(), "fields": ["t"], "ann_index_config": ann}


def _load(store: BaseStore) -> None:
    for start in range(0, N, 1000):
        store.batch(
            [
                PutOp(("docs", f"u{i % 4}"), str(i), {"t": f"x:{i}"})
                for i in range(start, min(N, start + 1000))
            ]
        )


def _own_recall(store: BaseStore, queries: range, prefix: tuple[str, ...] = ()) -> float:
    """recall@10 of the store's answers against numpy's exact cosine neighbours."""
    unit = DATA / np.linalg.norm(DATA, axis=1, keepdims=True)
    keep = np.array([prefix == () or f"u{i % 4}" == prefix[1] for i in range(N)])
    total = 0.0
    for qi in queries:
        q = QUERIES[qi] / np.linalg.norm(QUERIES[qi])
        sims = np.where(keep, unit @ q, -np.inf)
        truth = {str(i) for i in np.argsort(-sims)[:10]}
        got = {item.key for item in store.search(prefix, query=f"q:{qi}", limit=10)}
        total += len(got & truth) / 10
    return total / len(queries)


def _pg_store(index: dict[str, Any], pool: bool = False) -> tuple[PostgresStore, Any]:
    conn = psycopg.connect(servers.postgres_dsn(), autocommit=True)
    store = PostgresStore(conn, index=index, table_prefix=f"cal{uuid.uuid4().hex[:8]}")  # type: ignore[arg-type]
    store.setup()
    return store, conn


@pytest.fixture(scope="module")
def pg_loaded() -> Iterator[PostgresStore]:
    # exact_below 500: the 1000 vectors of a namespace go through the index, so the namespaced
    # recall measured below is the index's (at most exact_below would be an exact scan by rule).
    store, conn = _pg_store(_index(exact_below=500))
    with store.bulk_load():
        _load(store)
    yield store
    conn.close()
    drop_pg(store)


@pytest.fixture(scope="module")
def redis_loaded() -> Iterator[RedisStore]:
    client = redis.Redis.from_url(servers.redis_url(modules=True))
    store = RedisStore(client, index=_index(exact_below=500), prefix=f"cal{uuid.uuid4().hex[:8]}")  # type: ignore[arg-type]
    store.setup()
    _load(store)
    yield store
    client.close()


@pytest.mark.parametrize("which", ["pg", "redis"])
def test_calibration_meets_the_target_on_normal_vectors(
    which: str, request: pytest.FixtureRequest
) -> None:
    store = request.getfixturevalue(f"{which}_loaded")
    for qi in range(40):  # recent queries: what the calibration measures with
        store.search((), query=f"q:{qi}", limit=10)
    stats = store.calibrate()
    assert stats.source == "calibrated" and stats.measured_size == N and stats.size == N
    assert stats.recall >= 0.95 and stats.measured_at is not None
    assert (stats.mode == "exact") == (stats.breadth is None)
    # Held-out queries, recall computed here against numpy (the store's report is not trusted).
    assert _own_recall(store, range(60, 120)) >= 0.93
    assert _own_recall(store, range(60, 90), ("docs", "u1")) >= 0.93


def test_background_calibration_starts_from_searches(pg_loaded: PostgresStore) -> None:
    """The first search wakes a measurement (on stored vectors: one real query so far); once
    enough distinct real queries came, the next check measures on them."""
    store, conn = _pg_store(_index())
    try:
        with store.bulk_load():
            _load(store)
        assert store.vector_stats().source == "cold"  # type: ignore[union-attr]
        searched = [0]

        def measured_on_real_queries() -> bool:
            """Search (the first 100 queries, then again); whether a measurement on real queries
            is in force."""
            qi = searched[0]
            store.search((), query=f"q:{qi % QUERIES_PER_MEASUREMENT}", limit=10)
            searched[0] += 1
            stats = store.vector_stats()
            return stats is not None and stats.real_queries == QUERIES_PER_MEASUREMENT

        wait_until(
            measured_on_real_queries,
            timeout=120,
            what="a measurement on real queries",
            interval=0.2,
        )
        assert store.vector_stats().source == "calibrated"  # type: ignore[union-attr]
        assert _own_recall(store, range(100, 120)) >= 0.95
    finally:
        conn.close()
        drop_pg(store)


def test_explicit_ef_search_wins(pg_loaded: PostgresStore) -> None:
    store, conn = _pg_store(_index(ef_search=24))
    try:
        with store.bulk_load():
            _load(store)
        stats = store.calibrate()
        assert stats is not None
        assert (stats.source, stats.breadth, stats.mode, stats.recall) == (
            "explicit",
            24,
            "ann",
            None,
        )
        # The narrow breadth really is used: recall well below what calibration reaches.
        assert _own_recall(store, range(60, 90)) < 0.9
    finally:
        conn.close()
        drop_pg(store)


def test_redis_ef_runtime_is_explicit_too() -> None:
    client = redis.Redis.from_url(servers.redis_url(modules=True))
    try:
        store = RedisStore(
            client, index=_index(ef_runtime=33, exact_below=0), prefix=f"cal{uuid.uuid4().hex[:8]}"
        )  # type: ignore[arg-type]
        store.setup()
        stats = store.vector_stats()
        assert stats is not None and (stats.source, stats.breadth) == ("explicit", 33)
    finally:
        client.close()


@ours_only("InMemoryStore has no vector_stats")
def test_vector_stats_fields(make_store: Any, backend: str) -> None:
    assert make_store().vector_stats() is None  # no index
    store = make_store(index=hash_index())
    store.put(("a",), "1", {"text": "hello"})
    stats = store.vector_stats()
    assert stats.size == 1 and stats.target == 0.99 and stats.recall is None
    # At most exact_below vectors: every search scans them exactly.
    assert (stats.mode, stats.source, stats.breadth) == ("exact", "exact", None)
    store = make_store(index=hash_index(ann_index_config={"exact_below": 0}))
    store.put(("a",), "1", {"text": "hello"})
    stats = store.vector_stats()
    if backend == "redis-plain":
        assert (stats.mode, stats.source, stats.breadth) == ("exact", "exact", None)
    else:
        assert (stats.mode, stats.source) == ("ann", "cold") and stats.breadth > 0
    assert make_store(index=hash_index(ann_index_config={"kind": "exact"})).vector_stats().mode == (
        "exact"
    )


@pytest.mark.parametrize("bad", [0, 1.5, "high", True, -0.1])
def test_target_recall_is_checked(bad: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="target_recall"):
        IndexSpec.from_config(hash_index(ann_index_config={"target_recall": bad}))


def test_duplicate_heavy_prefix_finds_the_distinct_item(make_store: Any) -> None:
    """201 items under ("test", ...), 200 of them with the same vector: the one distinct item is
    the first result of a query for it, in the prefix and globally (langgraph's store tests)."""
    store = make_store(index=hash_index(fields=["text"]))
    for i in range(200):  # one batch each: InMemoryStore fails on equal texts in one batch
        store.put(("test", f"n{i % 3}"), f"dup{i}", {"text": "duplicate memory entry"})
    store.put(("test", "n1"), "odd", {"text": "a distinct item"})
    for prefix in (("test",), ()):
        assert store.search(prefix, query="a distinct item", limit=5)[0].key == "odd"


def test_recall_counts_ties_as_hits() -> None:
    exact = [[("a", 0.1), ("b", 0.2), ("c", 0.2)]]
    assert recall_at(exact, [[("a", 0.1), ("d", 0.2), ("b", 0.2)]], k=3) == 1.0
    assert recall_at(exact, [[("a", 0.1), ("e", 0.5), ("b", 0.2)]], k=3) == pytest.approx(2 / 3)


def test_calibrator_wakes_once_and_only_when_due() -> None:
    woken: list[int] = []
    cal = Calibrator(0.95, 1000, lambda: woken.append(1))
    cal.observe([[0.0]] * 50, 500)  # small: exact anyway, nothing to measure
    assert woken == [] and len(cal.recent) == 1  # a repeated query is kept once
    cal.observe([[1.0]], 5000)  # the first search over a large index: read or measure at once
    cal.observe([[float(i)] for i in range(2, 40)], 5000)  # already running: no second wake
    assert woken == [1]


def test_synthetic_queries_follow_the_stored_distribution() -> None:
    stored = np.random.default_rng(5).standard_normal((400, 8)) * 3 + 2
    made = np.asarray(synthetic(stored.tolist()))
    assert made.shape == (400, 8) and not any(v in stored.tolist() for v in made.tolist())
    # Per dimension: the stored sample's mean and spread (5 and 5 standard errors of 400 draws).
    assert np.allclose(made.mean(axis=0), stored.mean(axis=0), atol=0.75)
    assert np.allclose(made.std(axis=0), stored.std(axis=0), atol=0.5)


def test_lost_calibration_connection_never_fails_a_search(pg_loaded: PostgresStore) -> None:
    """A killer terminates the calibration's own connection while it measures: ``calibrate``
    reports the failure, searches running meanwhile all answer, and the next calibration works."""
    store = pg_loaded
    stop, killing, searching = threading.Event(), threading.Event(), threading.Event()

    def kill_calibration_connections() -> int:
        killed = 0
        with psycopg.connect(servers.postgres_dsn(), autocommit=True) as conn:
            while not stop.is_set():
                killed += len(
                    conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name = %s",
                        [BACKGROUND],
                    ).fetchall()
                )
                killing.set()
                time.sleep(0.005)  # the killer's pace, not a wait for anything
        return killed

    def search_until_stopped() -> int:
        answered = 0
        while not stop.is_set():
            answered += len(store.search(("docs",), query="q:3", limit=10)) == 10
            searching.set()
        return answered

    with ThreadPoolExecutor(2) as pool:
        killer, searches = (
            pool.submit(kill_calibration_connections),
            pool.submit(search_until_stopped),
        )
        try:
            assert killing.wait(30) and searching.wait(30)  # both at work before calibrating
            with pytest.raises(StoreConnectionError):
                store.calibrate()
            assert "StoreConnectionError" in (store.vector_stats().last_error or "")  # type: ignore[union-attr]
        finally:
            stop.set()
        assert killer.result() >= 1 and searches.result() >= 1  # a search's failure re-raises here
    stats = store.calibrate()
    assert stats is not None and stats.last_error is None and stats.recall >= 0.95


async def test_async_twins_calibrate_in_the_background() -> None:
    conn = await psycopg.AsyncConnection.connect(servers.postgres_dsn(), autocommit=True)
    store = AsyncPostgresStore(conn, index=_index(), table_prefix=f"cal{uuid.uuid4().hex[:8]}")  # type: ignore[arg-type]
    try:
        await store.setup()
        async with store.abulk_load():
            for start in range(0, N, 1000):
                await store.abatch(
                    [
                        PutOp(("docs", f"u{i % 4}"), str(i), {"t": f"x:{i}"})
                        for i in range(start, min(N, start + 1000))
                    ]
                )
        first = await store.avector_stats()
        assert first is not None and first.size == N and first.source == "cold"
        for qi in range(40):  # the first search wakes a task on this loop
            await store.asearch((), query=f"q:{qi}", limit=10)

        async def calibrated() -> bool:
            return (await store.avector_stats()).source == "calibrated"  # type: ignore[union-attr]

        await await_until(calibrated, timeout=120, what="a background calibration", interval=0.2)
        stats = await store.acalibrate()
        assert stats is not None and stats.recall is not None and stats.recall >= 0.95
        hits = await store.asearch((), query="q:70", limit=10)
        assert len(hits) == 10
    finally:
        await conn.close()
        drop_pg(store)  # type: ignore[arg-type]


@ours_only("InMemoryStore has no vector_stats")
async def test_async_vector_stats_and_calibrate(make_astore: Any, backend: str) -> None:
    store = await make_astore(index=hash_index())
    await store.abatch([PutOp(("a",), str(i), {"text": f"note {i}"}) for i in range(30)])
    stats = await store.acalibrate()  # forced, even on a small index
    assert stats is not None and stats.size == 30
    if backend == "redis-plain":
        assert (stats.source, stats.mode) == ("exact", "exact")
    else:
        assert stats.source == "calibrated" and stats.measured_size == 30 and stats.recall >= 0.95
    assert (await store.avector_stats()) == stats


def test_a_doubled_index_is_measured_again_a_steady_one_is_not() -> None:
    store, conn = _pg_store(_index())
    half = N // 2

    def put(lo: int, hi: int) -> None:
        store.batch([PutOp(("docs", "all"), str(i), {"t": f"x:{i}"}) for i in range(lo, hi)])

    try:
        with store.bulk_load():
            put(0, half)
        first = store.calibrate()
        assert first is not None and first.measured_size == half
        check = store._calibrating.run  # the background check itself (not forced)
        assert check(False).count == half  # type: ignore[union-attr]  # steady: kept
        assert store.vector_stats().measured_at == first.measured_at  # type: ignore[union-attr]
        put(half, N)
        assert check(False).count == N  # type: ignore[union-attr]  # doubled: measured again
    finally:
        conn.close()
        drop_pg(store)


def test_prefixes_cheaper_to_scan_than_to_filter_are_scanned() -> None:
    """The exact-scan size follows the measured costs: a prefix holding a share f of the index is
    scanned while f <= sqrt(ann_ms / exact_ms), never below ``exact_below``; an explicit
    ``exact_below``, no measurement yet, or an exact-mode measurement leave ``exact_below`` alone."""
    from langmem_adapters.core.calibration import Measurement

    cal = Calibrator(0.95, 1000)
    assert cal.exact_up_to(1000, explicit=False) == 1000  # nothing measured yet

    def measured(mode: str, ann_ms: float, exact_ms: float) -> Measurement:
        return Measurement(100_000, 40, mode, 0.97, exact_ms, ann_ms, 40, 40, 1.0, 0.0)  # type: ignore[arg-type]

    cal.measurement = measured("ann", ann_ms=2.5, exact_ms=250.0)
    assert cal.exact_up_to(1000, explicit=False) == 10_000  # sqrt(0.01) of 100k
    assert cal.exact_up_to(50_000, explicit=False) == 50_000
    assert cal.exact_up_to(1000, explicit=True) == 1000
    cal.measurement = measured("ann", ann_ms=0.01, exact_ms=250.0)
    assert cal.exact_up_to(1000, explicit=False) == 1000
    cal.measurement = measured("exact", ann_ms=300.0, exact_ms=250.0)
    assert cal.exact_up_to(1000, explicit=False) == 1000


def test_concurrent_searches_start_one_check() -> None:
    """Searches in many threads at once start one background check: the test of ``running`` and its
    setting are one step, however slow the test of whether a check is due."""
    woken: list[int] = []

    class SlowDue(Calibrator):
        def _due(self, count: int, now: float) -> bool:
            time.sleep(0.02)  # widens the window between testing and setting the flag
            return super()._due(count, now)

    cal = SlowDue(0.95, 1000, lambda: woken.append(1))
    start = threading.Barrier(8)

    def search(i: int) -> None:
        start.wait()
        cal.observe([[float(100 * i + j)] for j in range(40)], 5000)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(search, range(8)))
    assert woken == [1] and cal.running


@pytest.mark.parametrize("backend", ["postgres", "redis-qe"])
def test_forced_calibration_leaves_a_background_check_marked(make_store: Any) -> None:
    """``calibrate()`` while a background check runs leaves that check marked running, so the
    searches meanwhile start no second one; the background check's end clears it."""
    store = make_store(index=hash_index())
    store.batch([PutOp(("a",), str(i), {"text": f"note {i}"}) for i in range(30)])
    cal = store._calibration.current()
    cal.running = True  # as observe() marks the background check it starts
    stats = store.calibrate()
    assert stats is not None and stats.source == "calibrated" and cal.running
    store._calibrating.run(False)  # the background check itself
    assert not cal.running


@pytest.mark.parametrize("backend", ["postgres", "redis-qe"])
async def test_forced_calibration_leaves_a_background_check_marked_async(make_astore: Any) -> None:
    store = await make_astore(index=hash_index())
    await store.abatch([PutOp(("a",), str(i), {"text": f"note {i}"}) for i in range(30)])
    cal = store._calibration.current()
    cal.running = True
    stats = await store.acalibrate()
    assert stats is not None and stats.source == "calibrated" and cal.running


async def _wake_a_check(store: Any) -> asyncio.Task[Any]:
    """A search that wakes a background check (the first one does); the check's task, still
    running."""
    await store.setup()
    await store.abatch([PutOp(("a",), str(i), {"text": f"note {i}"}) for i in range(60)])
    before = asyncio.all_tasks()
    await store.asearch(("a",), query="query 0", limit=3)
    started = [t for t in asyncio.all_tasks() - before if not t.done() and _ours(t)]
    assert len(started) == 1  # the loop's own view: one task the search started, still running
    return started[0]


def _ours(task: asyncio.Task[Any]) -> bool:
    """Whether a task runs this package's code (redis-py starts tasks of its own, too)."""
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and "langmem_adapters" in code.co_filename


async def test_closing_an_async_store_ends_its_background_check() -> None:
    """A background check woken by searches is cancelled and awaited when the store closes: no
    task is left pending on the loop."""
    client = aredis.Redis.from_url(servers.redis_url(modules=True))
    store = AsyncRedisStore(
        client,
        index=hash_index(ann_index_config={"exact_below": 10}),  # type: ignore[arg-type]
        prefix=f"cal{uuid.uuid4().hex[:8]}",
    )
    try:
        task = await _wake_a_check(store)
        await store.aclose()
        assert task.done()
    finally:
        await client.aclose()


async def test_closing_an_async_postgres_store_ends_its_background_check() -> None:
    """The same on Postgres: leaving ``AsyncPostgresStore.from_conn_string`` cancels and awaits a
    check in flight before its connection closes."""
    async with (
        AsyncPostgresStore.from_conn_string(
            servers.postgres_dsn(),
            index=hash_index(ann_index_config={"exact_below": 10}),  # type: ignore[arg-type]
            table_prefix=f"cal{uuid.uuid4().hex[:8]}",
        ) as store
    ):
        task = await _wake_a_check(store)
    assert task.done()
