"""Calibration that survives the store instance and starts conservative (issue #26): the logic on
a probe over numpy (a driven clock, no sleeping), then the kept measurement on the real servers."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import psycopg
import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.core.calibration import (
    GROWTH,
    MIN_INTERVAL,
    QUERIES,
    SAMPLE,
    SPOT_EVERY,
    Calibrator,
    Cold,
    Measurement,
    VectorSearchStats,
)
from langmem_adapters.core.drive import drive
from langmem_adapters.postgres import PostgresStore
from langmem_adapters.redis import RedisStore
from tests import servers
from tests.calibration_data import DATA, DIMS, TableEmbeddings, drop_pg
from tests.calibration_data import QUERIES as QVECS
from tests.calibration_probe import Clock, NumpyProbe
from tests.waiting import wait_until

N = 2000


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 8))


def _calibrator(clock: Clock, woken: list[int]) -> Calibrator:
    return Calibrator(0.99, 100, lambda: woken.append(1), Cold(500, 900), clock)


def test_a_fresh_calibrator_is_cold_exact_below_its_line_and_wide_above() -> None:
    cal = _calibrator(Clock(), [])
    assert cal.exact_at(400) and not cal.exact_at(5000)
    assert cal.breadth(5000, fallback=40) == 900
    assert cal.exact_up_to(100, explicit=False) == 500  # prefixes within the cold line: exact
    assert cal.exact_up_to(100, explicit=True) == 100
    stats = cal.report(5000, 40, None, False)
    assert (stats.source, stats.mode, stats.breadth, stats.recall) == ("cold", "ann", 900, None)
    assert cal.report(400, 40, None, False).mode == "exact"


def test_the_first_search_wakes_a_check_that_measures_on_stored_vectors_and_keeps_it() -> None:
    clock, woken = Clock(), []
    cal = _calibrator(clock, woken)
    probe = NumpyProbe(_vectors(N))
    cal.observe([tuple(_vectors(1, 9)[0])], N)
    assert woken == [1]  # no waiting for enough real queries
    m = drive(cal.check(probe), lambda r: r)
    assert probe.calls[0] == "kept" and "keep" in probe.calls
    assert m is not None and (m.queries, m.real) == (QUERIES, 1) and m.sample == "mixed"
    assert m.mode == "exact" or m.recall >= 0.99
    stats = cal.report(N, 40, None, False)
    assert stats.source == "calibrated" and stats.sample_size == QUERIES
    assert stats.real_queries == 1 and stats.kept is False


def test_a_new_instance_starts_from_the_kept_measurement() -> None:
    clock, probe = Clock(), NumpyProbe(_vectors(N))
    first = _calibrator(clock, [])
    measured = drive(first.check(probe, force=True), lambda r: r)
    assert measured is not None and probe.kept_value is not None
    second = _calibrator(clock, [])
    probe.calls.clear()
    kept = drive(second.check(probe), lambda r: r)
    assert probe.calls == ["kept", "count"]  # read, not measured again
    assert kept is not None and kept.kept and kept.breadth == measured.breadth
    assert second.breadth(N, fallback=40) == measured.breadth
    assert second.report(N, 40, None, False).kept is True


def test_a_kept_measurement_for_another_target_or_unreadable_is_measured_again() -> None:
    probe = NumpyProbe(_vectors(N))
    drive(_calibrator(Clock(), []).check(probe, force=True), lambda r: r)
    other = Calibrator(0.9, 100, None, Cold(500, 900), Clock())
    probe.calls.clear()
    drive(other.check(probe), lambda r: r)
    assert "exact" in probe.calls  # 0.99's breadth does not stand for 0.9
    probe.kept_value = "{not json"
    assert Measurement.from_json(probe.kept_value) is None


def test_growth_makes_the_search_cold_and_wakes_a_measurement() -> None:
    clock, woken = Clock(), []
    cal = _calibrator(clock, woken)
    probe = NumpyProbe(_vectors(N))
    drive(cal.check(probe, force=True), lambda r: r)
    grown = int(N * GROWTH) + 1
    assert not cal.fits(grown) and cal.breadth(grown, 40) == 900  # cold until measured
    clock.now += 11  # past RETRY
    cal.observe([(0.5,) * 8], grown)
    assert woken == [1]
    probe.vectors = _vectors(grown)
    m = drive(cal.check(probe), lambda r: r)
    assert m is not None and m.count == grown and cal.fits(grown)


def test_enough_real_queries_replace_a_stored_vector_sample() -> None:
    clock, woken = Clock(), []
    cal = _calibrator(clock, woken)
    probe = NumpyProbe(_vectors(N))
    cal.loaded = True
    drive(cal.check(probe, force=True), lambda r: r)
    assert cal.measurement is not None and cal.measurement.sample == "stored"
    queries = [tuple(v) for v in _vectors(QUERIES, 3)]
    cal.observe(queries[:-1], N)
    clock.now += 11
    assert woken == []  # fewer than QUERIES real queries: the stored-vector sample stands
    cal.observe(queries[-1:], N)
    assert woken == [1]
    m = drive(cal.check(probe), lambda r: r)
    assert m is not None and m.real == QUERIES and m.sample == "queries"


def test_doubled_distinct_queries_trigger_a_measurement() -> None:
    """Measured on the first 100 real queries, measured again at 200 distinct ones (the mix they
    are drawn from may have moved), not before; the clock gates each check."""
    clock, woken = Clock(), []
    cal = _calibrator(clock, woken)
    probe = NumpyProbe(_vectors(N))
    cal.loaded = True
    queries = [tuple(v) for v in _vectors(2 * QUERIES, 4)]
    cal.observe(queries[:QUERIES], N)
    drive(cal.check(probe, force=True), lambda r: r)
    assert cal.measurement is not None and cal.measurement.real == QUERIES
    woken.clear()
    cal.running = False
    clock.now += 11
    cal.observe(queries[QUERIES:-1], N)
    assert woken == []
    cal.observe(queries[-1:], N)
    assert woken == [1]
    m = drive(cal.check(probe), lambda r: r)
    # The reservoir holds 200 distinct queries now: the measurement samples all of them.
    assert m is not None and m.real == m.queries == SAMPLE == 2 * QUERIES
    assert cal.distinct == 2 * QUERIES


def test_drifting_queries_trigger_a_measurement_a_steady_mix_does_not() -> None:
    clock, woken = Clock(), []
    cal = _calibrator(clock, woken)
    data = _vectors(N)
    probe = NumpyProbe(data)
    cal.loaded = True
    cal.observe([tuple(v) for v in data[:QUERIES] * 0.5], N)
    drive(cal.check(probe, force=True), lambda r: r)
    chosen = cal.measurement
    assert chosen is not None and chosen.mode == "ann" and 30 <= chosen.breadth < 700
    woken.clear()  # the first search's wake (its check is the forced one above)
    cal.running = False
    clock.now += MIN_INTERVAL + 1
    for _ in range(SPOT_EVERY // QUERIES):  # the same queries again: a spot check is due
        cal.observe([tuple(v) for v in data[:QUERIES] * 0.5], N)
    assert woken == [1]
    drive(cal.check(probe), lambda r: r)
    assert cal.measurement == chosen  # the spot check passed: kept
    cal.running = False
    clock.now += MIN_INTERVAL + 1
    far = [(6.0 + i, *v[1:]) for i, v in enumerate(data[:SPOT_EVERY].tolist())]
    cal.observe(far, N)  # queries that need a far wider breadth
    assert woken == [1, 1]
    m = drive(cal.check(probe), lambda r: r)
    assert m is not None and m is not chosen and (m.mode == "exact" or m.breadth >= 700)


def test_checks_wait_for_their_interval_on_the_clock() -> None:
    clock, woken = Clock(), []
    cal = _calibrator(clock, woken)
    probe = NumpyProbe(_vectors(N))
    cal.observe([(0.0,) * 8], N)
    drive(cal.check(probe), lambda r: r)
    cal.running = False
    cal.observe([(float(i),) * 8 for i in range(SPOT_EVERY)], N)
    assert woken == [1]  # due, but not yet by the clock
    clock.now += MIN_INTERVAL + 1
    cal.observe([(0.5,) * 8], N)
    assert woken == [1, 1]


# --------------------------------------------------------------------------- real servers


def _index(**ann: Any) -> dict[str, Any]:
    return {"dims": DIMS, "embed": TableEmbeddings(), "fields": ["t"], "ann_index_config": ann}


def _puts(n: int) -> list[PutOp]:
    return [PutOp(("docs", f"u{i % 4}"), str(i), {"t": f"x:{i}"}) for i in range(n)]


def _pg(prefix: str, **ann: Any) -> tuple[PostgresStore, Any]:
    conn = psycopg.connect(servers.postgres_dsn(), autocommit=True)
    store = PostgresStore(conn, index=_index(**ann), table_prefix=prefix)  # type: ignore[arg-type]
    store.setup()
    return store, conn


def _redis(prefix: str, **ann: Any) -> tuple[RedisStore, Any]:
    client = redis.Redis.from_url(servers.redis_url(modules=True))
    store = RedisStore(client, index=_index(**ann), prefix=prefix)  # type: ignore[arg-type]
    store.setup()
    return store, client


@pytest.mark.parametrize("which", ["pg", "redis"])
def test_the_kept_calibration_survives_a_new_store_instance(which: str) -> None:
    prefix = f"kept{uuid.uuid4().hex[:8]}"
    opened = _pg if which == "pg" else _redis
    first, conn = opened(prefix, exact_below=100)
    second: Any = None
    try:
        first.batch(_puts(N))
        measured = first.calibrate()
        assert measured is not None and measured.source == "calibrated"
        assert measured.kept is False and measured.sample_size == QUERIES
        second, conn2 = opened(prefix, exact_below=100)
        try:
            fresh = second.vector_stats()
            assert fresh is not None and fresh.source == "cold" and fresh.recall is None
            second.search(("docs",), query="q:0", limit=10)  # wakes the background check

            def kept() -> VectorSearchStats | None:
                stats = second.vector_stats()
                return stats if stats is not None and stats.kept else None

            stats = wait_until(kept, what="the kept measurement read by the background check")
            assert stats.source == "calibrated"
            assert (stats.breadth, stats.mode, stats.recall, stats.measured_at) == (
                measured.breadth,
                measured.mode,
                measured.recall,
                measured.measured_at,
            )
        finally:
            conn2.close()
    finally:
        conn.close()
        if which == "pg":
            drop_pg(first)


@pytest.mark.parametrize("which", ["pg", "redis"])
def test_a_fresh_store_searches_exactly_within_the_cold_line(which: str) -> None:
    """Nothing measured, an index within the cold line: every search scans exactly (the report
    says so), and its answers are numpy's exact top 10."""
    prefix = f"cold{uuid.uuid4().hex[:8]}"
    opened = _pg if which == "pg" else _redis
    store, conn = opened(prefix)
    try:
        store.batch(_puts(N))
        store._stats.calibration.wake = None  # no background check: stay cold
        stats = store.vector_stats()
        assert stats is not None and (stats.source, stats.mode, stats.breadth) == (
            "cold",
            "exact",
            None,
        )
        unit = DATA[:N] / np.linalg.norm(DATA[:N], axis=1, keepdims=True)
        for qi in range(20):
            q = QVECS[qi] / np.linalg.norm(QVECS[qi])
            truth = {str(i) for i in np.argsort(-(unit @ q))[:10]}
            got = {item.key for item in store.search(("docs",), query=f"q:{qi}", limit=10)}
            assert got == truth
    finally:
        conn.close()
        if which == "pg":
            drop_pg(store)
