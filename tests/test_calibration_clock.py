"""The :class:`Calibrator` on a clock the test drives (no server, no sleeping): the reservoir of
recent queries, when a background check is woken and when it is not, the retry and spot-check
intervals, and cold search until a measurement fits the index. The measuring itself, on a numpy
probe, is in test_calibration_kept.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from langmem_adapters.core.calibration import (
    GROWTH,
    MIN_INTERVAL,
    RESERVOIR,
    RETRY,
    SPOT_EVERY,
    Calibrator,
    Cold,
    Measurement,
)
from langmem_adapters.core.drive import drive
from tests.calibration_probe import Clock, NumpyProbe

COLD = Cold(exact_up_to=500, breadth=900)
SIZE = 1000  # vectors in the index a kept measurement was made on


def calibrator(clock: Clock, woken: list[int], target: float | None = 0.99) -> Calibrator:
    """A calibrator that notes each wake in ``woken``; below 100 vectors nothing is measured."""
    return Calibrator(target, 100, lambda: woken.append(1), COLD, clock)


def measurement(mode: str = "ann", count: int = SIZE) -> Measurement:
    """A measurement as an earlier store instance kept it: breadth 64, an exact scan 4x the index."""
    return Measurement(
        count=count,
        breadth=64,
        mode=mode,  # type: ignore[arg-type]
        recall=0.995,
        exact_ms=4.0,
        ann_ms=1.0,
        queries=100,
        real=0,
        seconds=0.5,
        at=1.7e9,
        target=0.99,
    )


def load_kept(cal: Calibrator, kept: Measurement, count: int = SIZE) -> NumpyProbe:
    """Run the check a first search wakes, on an index of ``count`` vectors holding ``kept``."""
    probe = NumpyProbe(np.zeros((count, 8)))
    probe.kept_value = kept.to_json()
    assert drive(cal.check(probe), lambda r: r) is not None
    assert probe.calls == ["kept", "count"]  # read, not measured
    cal.running = False  # as the runner does when a check ends
    return probe


def test_the_reservoir_keeps_the_newest_distinct_queries() -> None:
    cal = calibrator(Clock(), [], target=None)
    cal.observe([(float(i),) for i in range(RESERVOIR + 10)], SIZE)
    assert len(cal.newest(2 * RESERVOIR)) == RESERVOIR
    assert cal.newest(RESERVOIR)[0] == (10.0,)  # the ten oldest left
    assert cal.newest(2) == [(RESERVOIR + 8.0,), (RESERVOIR + 9.0,)]
    assert cal.distinct == RESERVOIR + 10
    cal.observe([(15.0,), (15.0,)], SIZE)  # a repeat is no new query, but the newest one
    assert cal.distinct == RESERVOIR + 10 and cal.newest(1) == [(15.0,)]
    assert cal.searches == RESERVOIR + 12
    drawn = cal.sample(100)
    assert len(set(drawn)) == 100 and set(drawn) <= set(cal.newest(RESERVOIR))


def test_unhashable_query_vectors_are_kept_and_counted_once() -> None:
    cal = calibrator(Clock(), [], target=None)
    cal.observe([[1.0, 2.0], [1.0, 2.0], [3.0, 4.0]], SIZE)
    assert cal.distinct == 2 and cal.newest(5) == [[1.0, 2.0], [3.0, 4.0]]
    assert sorted(cal.sample(10)) == [[1.0, 2.0], [3.0, 4.0]]  # fewer than asked: all of them


def test_nothing_wakes_without_a_target_or_on_a_small_unmeasured_index() -> None:
    woken: list[int] = []
    calibrator(Clock(), woken, target=None).observe([(1.0,)], 10 * SIZE)
    Calibrator(0.99, 100, None, COLD, Clock()).observe([(1.0,)], 10 * SIZE)  # no wake to call
    small = calibrator(Clock(), woken)
    small.observe([(1.0,)], 100)  # at min_size: exact search serves, nothing to measure
    assert woken == []
    small.observe([(1.0,)], 101)
    assert woken == [1]


def test_one_wake_until_the_check_it_started_ends() -> None:
    clock, woken = Clock(), []
    cal = calibrator(clock, woken)
    for _ in range(5):
        cal.observe([(1.0,)], SIZE)
    assert woken == [1] and cal.running
    clock.now += 10 * MIN_INTERVAL
    cal.observe([(2.0,)], SIZE)
    assert woken == [1]  # still running: no second check


class FailingProbe(NumpyProbe):
    """A probe whose database is gone."""

    def kept(self) -> Any:
        raise ConnectionError("the calibration connection was lost")
        yield


def test_a_failed_check_is_tried_again_after_retry_seconds_not_before() -> None:
    clock, woken = Clock(), []
    cal = calibrator(clock, woken)
    cal.observe([(1.0,)], SIZE)
    with pytest.raises(ConnectionError):
        drive(cal.check(FailingProbe(np.zeros((SIZE, 8)))), lambda r: r)
    cal.running = False
    clock.now += RETRY - 0.5
    cal.observe([(1.0,)], SIZE)
    assert woken == [1]
    clock.now += 0.5
    cal.observe([(1.0,)], SIZE)
    assert woken == [1, 1]


def test_spot_checks_wait_for_min_interval_and_spot_every_searches() -> None:
    clock, woken = Clock(), []
    cal = calibrator(clock, woken)
    load_kept(cal, measurement())
    same = [(0.5,) * 8]  # one distinct query: the mix does not move
    clock.now += MIN_INTERVAL - 1
    cal.observe(same * (2 * SPOT_EVERY), SIZE)
    assert woken == []  # searches enough, but too soon
    clock.now += 1
    cal.observe(same, SIZE)
    assert woken == [1]
    later, woken_later = Clock(), []
    other = calibrator(later, woken_later)
    load_kept(other, measurement())
    later.now += 2 * MIN_INTERVAL
    other.observe(same * (SPOT_EVERY - 1), SIZE)
    assert woken_later == []  # time enough, but too few searches since the check
    other.observe(same, SIZE)
    assert woken_later == [1]


def test_search_is_cold_until_a_measurement_fits_the_index() -> None:
    clock, woken = Clock(), []
    cal = calibrator(clock, woken)
    assert cal.breadth(SIZE, fallback=40) == COLD.breadth and not cal.fits(SIZE)
    assert cal.exact_at(COLD.exact_up_to) and not cal.exact_at(COLD.exact_up_to + 1)
    assert Calibrator(0.99, 100).breadth(SIZE, fallback=40) == 40  # no cold breadth: the fallback
    load_kept(cal, measurement())
    grown = int(GROWTH * SIZE)
    for fitting in (SIZE // 2 + 1, SIZE, grown):
        assert cal.fits(fitting) and cal.breadth(fitting, fallback=40) == 64
        assert not cal.exact_at(fitting)
    for cold in (SIZE // 2, grown + 1):
        assert not cal.fits(cold) and cal.breadth(cold, fallback=40) == COLD.breadth
    assert cal.exact_at(SIZE // 2)  # cold and within the cold line: exact
    assert cal.report(grown + 1, 40, None, False).source == "cold"
    assert cal.report(SIZE, 40, None, False).source == "calibrated"


def test_a_grown_index_wakes_a_measurement_after_retry_seconds() -> None:
    clock, woken = Clock(), []
    cal = calibrator(clock, woken)
    load_kept(cal, measurement())
    grown = int(GROWTH * SIZE) + 1
    clock.now += RETRY - 1
    cal.observe([(1.0,)], grown)
    assert woken == []
    clock.now += 1
    cal.observe([(1.0,)], grown)
    assert woken == [1]
    probe = NumpyProbe(np.random.default_rng(0).standard_normal((grown, 8)))
    probe.kept_value = measurement().to_json()
    remeasured = drive(cal.check(probe), lambda r: r)
    assert "exact" in probe.calls and remeasured is not None and remeasured.count == grown
    assert cal.fits(grown) and not remeasured.kept


def test_the_scan_line_follows_the_measured_costs() -> None:
    """An exact scan at 4x the index's cost: prefixes up to sqrt(1/4) of the index are scanned."""
    cal = calibrator(Clock(), [])
    assert cal.exact_up_to(100, explicit=False) == COLD.exact_up_to  # nothing measured: cold
    load_kept(cal, measurement())
    assert cal.exact_up_to(100, explicit=False) == SIZE // 2
    assert cal.exact_up_to(600, explicit=False) == 600  # exact_below is the floor
    assert cal.exact_up_to(100, explicit=True) == 100  # and the whole rule when set explicitly
    exact = calibrator(Clock(), [])
    load_kept(exact, measurement(mode="exact"))
    assert exact.exact_at(SIZE) and exact.exact_up_to(100, explicit=False) == 100


def test_a_small_index_is_measured_only_when_forced() -> None:
    cal = calibrator(Clock(), [])
    probe = NumpyProbe(np.random.default_rng(1).standard_normal((100, 8)))
    assert drive(cal.check(probe), lambda r: r) is None
    assert probe.calls == ["kept", "count"]
    forced = drive(cal.check(probe, force=True), lambda r: r)
    assert forced is not None and forced.count == 100 and "exact" in probe.calls
