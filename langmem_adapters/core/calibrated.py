"""The store side of calibration (:mod:`langmem_adapters.core.calibration`): ``vector_stats()`` /
``calibrate()`` on every store, and the background checks, run off the request path: a daemon
thread (sync stores) or a task on the store's loop (async stores), on a connection of the
calibration's own (the backend's hook), so a search never waits for one and a failure (a lost
connection) only postpones the next, reported as ``last_error``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from typing import Any, Literal

from langmem_adapters.core.calibration import (
    Calibrator,
    Cold,
    Measurement,
    Probe,
    VectorSearchStats,
    explicit_breadth,
)
from langmem_adapters.core.drive import Steps, adrive, drive
from langmem_adapters.core.vectors import IndexSpec, SearchStats, search_breadth

__all__ = ["AsyncCalibration", "SyncCalibration"]

log = logging.getLogger(__name__)


@contextmanager
def _recorded(calibrator: Calibrator, background: bool) -> Iterator[None]:
    """Around one check: its failure kept as ``last_error`` (cleared by a success); a
    ``background`` check (the one :meth:`Calibrator.observe` marked running) is never left marked
    running. A forced check leaves the mark alone: it belongs to a background check in flight."""
    try:
        yield
        calibrator.last_error = None
    except Exception as exc:
        calibrator.last_error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if background:
            calibrator.running = False


class _Calibrated:
    """What both calibration mixins share: the calibrator of the store's search stats, the report,
    and the backend hooks (its probe, its size schedule, its ``exact_below``)."""

    index_spec: IndexSpec | None
    _stats: SearchStats
    #: The backend's breadth by index size, used until a calibration ran.
    _breadth_schedule: Sequence[tuple[int, int]] = ((0, 100),)
    #: The backend's default ``exact_below``: prefixes this small are scanned exactly anyway.
    _exact_below = 1000
    #: How the backend searches before a measurement fits the index (exact line, widest breadth).
    _cold = Cold(0, 0)

    def _wake_calibration(self) -> None:
        raise NotImplementedError

    def _new_stats(self) -> SearchStats:
        """Fresh search stats, with a calibrator when the index is HNSW, has a target and no
        explicit breadth (a new index, e.g. after a reindex, is measured anew)."""
        spec = self.index_spec
        target = spec.ann.get("target_recall") if spec is not None else None
        if spec is None or spec.kind != "hnsw" or target is None or explicit_breadth(spec):
            return SearchStats()
        below = int(spec.ann.get("exact_below", self._exact_below))
        cold = self._cold
        if "exact_below" in spec.ann:  # an explicit line holds before a measurement too
            cold = Cold(below, cold.breadth)
        calibrator = Calibrator(float(target), below, self._wake_calibration, cold)
        return SearchStats(calibration=calibrator)

    def _calibrator(self) -> Calibrator | None:
        """The store's calibrator (``None``: nothing to calibrate, e.g. no HNSW index)."""
        stats: SearchStats | None = getattr(self, "_stats", None)
        return stats.calibration if stats is not None else None

    def _probe(self) -> Probe | None:
        """The backend's probe of the current vector index (``None``: no server-side index)."""
        return None

    def _exact_only(self) -> bool:
        """Whether every vector search is exact whatever the index (backend hook: plain Redis)."""
        return False

    def _vector_stats(self, size: int) -> VectorSearchStats | None:
        """The report for an index of ``size`` vectors (``None``: the store has no vector index)."""
        spec = self.index_spec
        if spec is None:
            return None
        calibrator = self._calibrator()
        explicit = explicit_breadth(spec)
        if spec.kind == "ivfflat":
            explicit = int(spec.ann.get("probes", 10))
        fallback = explicit or search_breadth(size, self._breadth_schedule)
        fixed: Literal["explicit", "schedule"] | None = None
        if explicit or calibrator is None:  # no recall target: the breadth by size
            fixed = "explicit" if explicit else "schedule"
        below = int(spec.ann.get("exact_below", self._exact_below))
        measured = calibrator is not None and calibrator.measurement is not None
        small = size <= below > 0 and not measured  # searches scan exactly
        exact = spec.kind == "exact" or self._exact_only() or small
        report = calibrator or Calibrator(spec.ann.get("target_recall"), 0)
        return report.report(size, fallback, fixed, exact)


class SyncCalibration(_Calibrated):
    """``calibrate`` / ``vector_stats`` and the background thread, for stores on a blocking client."""

    _run: Callable[[Steps], Any]
    count: Callable[..., int]

    def _calibration_session(self) -> AbstractContextManager[Callable[[Any], Any]]:
        """A session on the calibration's own connection (backend hook; the closing of that
        connection is the session's)."""
        raise NotImplementedError

    def _calibrate_now(self, force: bool) -> Measurement | None:
        calibrator, probe = self._calibrator(), self._probe()
        if calibrator is None or probe is None:
            return None
        with _recorded(calibrator, not force), self._calibration_session() as execute:
            return drive(calibrator.check(probe, force), execute)

    def _wake_calibration(self) -> None:
        """Start one background check in a daemon thread (the search that asked does not wait)."""

        def work() -> None:
            try:
                self._calibrate_now(False)
            except Exception:
                log.warning("background vector calibration failed", exc_info=True)

        threading.Thread(target=work, name="langmem-calibration", daemon=True).start()

    def calibrate(self) -> VectorSearchStats | None:
        """Measure recall now (blocking) and set the search breadth or mode; returns
        :meth:`vector_stats` (``None``: no vector index)."""
        self._calibrate_now(True)
        return self.vector_stats()

    async def acalibrate(self) -> VectorSearchStats | None:
        """Async twin of :meth:`calibrate` (in a worker thread)."""
        return await asyncio.to_thread(self.calibrate)

    def vector_stats(self) -> VectorSearchStats | None:
        """Index size, search breadth and mode in use, target and last measured recall (``None``:
        the store has no vector index)."""
        probe = self._probe()
        if self.index_spec is None:
            return None
        size = self._run(probe.count()) if probe is not None else self.count(())
        return self._vector_stats(int(size))

    async def avector_stats(self) -> VectorSearchStats | None:
        """Async twin of :meth:`vector_stats` (in a worker thread)."""
        return await asyncio.to_thread(self.vector_stats)


class AsyncCalibration(_Calibrated):
    """``acalibrate`` / ``avector_stats`` and the background task, for stores on an async client."""

    loop: asyncio.AbstractEventLoop | None
    _drive: Callable[[Steps], Any]
    _sync: Callable[[Any], Any]
    acount: Callable[..., Any]
    _calibration_task: asyncio.Task[Any] | None = None

    def _calibration_session(self) -> AbstractAsyncContextManager[Callable[[Any], Any]]:
        """A session on the calibration's own connection (backend hook)."""
        raise NotImplementedError

    async def _acalibrate_now(self, force: bool) -> Measurement | None:
        calibrator, probe = self._calibrator(), self._probe()
        if calibrator is None or probe is None:
            return None
        with _recorded(calibrator, not force):
            async with self._calibration_session() as execute:
                return await adrive(calibrator.check(probe, force), execute)

    def _wake_calibration(self) -> None:
        """Start one background check as a task on the store's loop (the search does not wait)."""

        async def work() -> None:
            try:
                await self._acalibrate_now(False)
            except Exception:
                log.warning("background vector calibration failed", exc_info=True)

        def start() -> None:
            self._calibration_task = asyncio.ensure_future(work())

        loop = self.loop
        if loop is None or loop.is_closed():
            calibrator = self._calibrator()
            if calibrator is not None:
                calibrator.running = False
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            start()
        else:
            loop.call_soon_threadsafe(start)

    async def _stop_calibration(self) -> None:
        """Cancel a background check in flight and wait until it ended (its own connection closed
        with it): a closing store leaves no task pending on its loop."""
        task, self._calibration_task = self._calibration_task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])  # a cancellation of the caller still propagates

    async def acalibrate(self) -> VectorSearchStats | None:
        """Measure recall now and set the search breadth or mode; returns :meth:`avector_stats`."""
        await self._acalibrate_now(True)
        return await self.avector_stats()

    def calibrate(self) -> VectorSearchStats | None:
        """Sync twin of :meth:`acalibrate`, for callers in other threads."""
        return self._sync(self.acalibrate())

    async def avector_stats(self) -> VectorSearchStats | None:
        """Index size, search breadth and mode in use, target and last measured recall (``None``:
        the store has no vector index)."""
        probe = self._probe()
        if self.index_spec is None:
            return None
        size = await self._drive(probe.count()) if probe is not None else await self.acount(())
        return self._vector_stats(int(size))

    def vector_stats(self) -> VectorSearchStats | None:
        """Sync twin of :meth:`avector_stats`, for callers in other threads."""
        return self._sync(self.avector_stats())
