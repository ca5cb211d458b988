"""The calibration part of a sync store (:class:`~langmem_adapters.core.calibrated.ThreadCalibration`)
without a server: a probe of scripted rounds, a session that records them, threads synchronised on
events (no sleeps)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langmem_adapters.core.calibrated import Calibration, ThreadCalibration, Tuning
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.vectors import IndexSpec, SearchStats


class ScriptedProbe:
    """A probe whose every plan is one round named for it; the session answers."""

    max_breadth = 64

    def count(self) -> Steps[int]:
        return int((yield "count"))

    def sample(self, n: int) -> Steps[list[list[float]]]:
        return list((yield "sample"))

    def query(self, vector: list[float]) -> list[float]:
        return vector

    def exact(self, queries: Sequence[Any], k: int) -> Steps[list[list[Any]]]:
        return list((yield "exact"))

    def ann(self, queries: Sequence[Any], k: int, breadth: int) -> Steps[list[list[Any]]]:
        return list((yield "ann"))

    def kept(self) -> Steps[str | None]:
        yield "kept"
        return None

    def keep(self, measurement: str) -> Steps[None]:
        yield "keep"


def _spec() -> IndexSpec:
    return IndexSpec.from_config({"dims": 2, "embed": lambda texts: [[1.0, 0.0] for _ in texts]})


def _parts(execute: Any) -> tuple[ThreadCalibration, SearchStats]:
    spec = _spec()
    holder: list[SearchStats] = []
    calibration = Calibration(Tuning(), lambda: spec, lambda: holder[0], ScriptedProbe)
    holder.append(SearchStats(calibration=calibration.calibrator(spec)))

    @contextmanager
    def session() -> Iterator[Any]:
        yield execute

    return ThreadCalibration(calibration, session), holder[0]


def test_stop_ends_a_background_check_at_its_next_round() -> None:
    """``stop()`` (a sync store's close) lets the round in flight finish, sends no further round,
    waits for the thread and leaves the calibrator neither running nor failed."""
    rounds: list[str] = []
    in_round, release = threading.Event(), threading.Event()

    def execute(request: str) -> Any:
        rounds.append(request)
        in_round.set()
        assert release.wait(10)
        return 5000 if request == "count" else None

    runner, stats = _parts(execute)
    calibrator = stats.calibration
    assert calibrator is not None
    calibrator.observe([[1.0, 0.0]], 5000)  # the first search wakes a check (read the kept one)
    assert calibrator.running and in_round.wait(10)
    stopping = threading.Thread(target=runner.stop)
    stopping.start()
    release.set()
    stopping.join(10)
    assert not stopping.is_alive()
    assert rounds == ["kept"]
    assert not calibrator.running and calibrator.last_error is None


def test_after_stop_no_check_starts() -> None:
    """A search on a closed store wakes nothing: no round is sent and nothing is left running."""
    rounds: list[str] = []
    runner, stats = _parts(lambda request: rounds.append(request))
    assert runner.stop()
    calibrator = stats.calibration
    assert calibrator is not None
    calibrator.observe([[1.0, 0.0]], 5000)
    assert rounds == [] and not calibrator.running


def test_a_forced_check_is_not_stopped() -> None:
    """``calibrate()`` runs in the caller's thread; a closed runner does not cut it short."""
    rounds: list[str] = []
    answers: dict[str, Any] = {"kept": None, "count": 10, "sample": [], "exact": [], "ann": []}

    def execute(request: str) -> Any:
        rounds.append(request)
        return answers.get(request)

    runner, stats = _parts(execute)
    runner.stop()
    measured = runner.run(True)
    assert measured is not None and rounds[-1] == "keep"
    assert stats.calibration is not None and stats.calibration.last_error is None
