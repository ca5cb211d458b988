"""The store side of calibration (:mod:`langmem_adapters.core.calibration`), as parts a store holds:
:class:`Calibration` (the backend's tuning and hooks, the search stats of a new index, the
``vector_stats()`` report) and the runner of its checks off the request path: a daemon thread
(:class:`ThreadCalibration`, sync stores) or a task on the store's loop (:class:`TaskCalibration`,
async stores), on a connection of the calibration's own (the backend's session), so a search never
waits for one and a failure (a lost connection) only postpones the next, reported as ``last_error``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from langmem_adapters.core.calibration import Calibrator, Cold, Measurement, VectorSearchStats
from langmem_adapters.core.drive import Steps, adrive, drive
from langmem_adapters.core.recall import Probe
from langmem_adapters.core.vectors import IndexSpec, SearchStats, explicit_breadth, search_breadth

__all__ = ["Calibration", "TaskCalibration", "ThreadCalibration", "Tuning"]

log = logging.getLogger(__name__)


#: No exact line and no cold breadth: the schedule's breadth until a measurement.
NO_COLD = Cold(0, 0)


@dataclass(frozen=True)
class Tuning:
    """A backend's search defaults: its breadth by index size (used until a calibration ran), its
    default ``exact_below`` (prefixes this small are scanned exactly anyway), and how it searches
    before a measurement fits the index (exact line, widest breadth)."""

    schedule: Sequence[tuple[int, int]] = ((0, 100),)
    exact_below: int = 1000
    cold: Cold = NO_COLD


class _Stopped(Exception):
    """A background check abandoned because its store closed."""


@contextmanager
def _recorded(calibrator: Calibrator, background: bool) -> Iterator[None]:
    """Around one check: its failure kept as ``last_error`` (cleared by a success); a
    ``background`` check (the one :meth:`Calibrator.observe` marked running) is never left marked
    running. A forced check leaves the mark alone: it belongs to a background check in flight."""
    try:
        yield
        calibrator.last_error = None
    except _Stopped:
        raise
    except Exception as exc:
        calibrator.last_error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if background:
            calibrator.running = False


class Calibration:
    """A store's calibration: made with the backend's :class:`Tuning`, how to read the store's
    index spec and search stats, its probe of the vector index (``None``: no server-side index) and
    whether every search is exact whatever the index (plain Redis). ``wake`` starts a background
    check; the runner (:class:`ThreadCalibration`, :class:`TaskCalibration`) sets it."""

    def __init__(
        self,
        tuning: Tuning,
        spec: Callable[[], IndexSpec | None],
        stats: Callable[[], SearchStats],
        probe: Callable[[], Probe | None],
        exact_only: Callable[[], bool] = lambda: False,
    ) -> None:
        self.tuning = tuning
        self.spec = spec
        self.stats = stats
        self.probe = probe
        self.exact_only = exact_only
        self.wake: Callable[[], None] = lambda: None

    def calibrator(self, spec: IndexSpec | None) -> Calibrator | None:
        """A calibrator for a new index (``spec``) when it is HNSW, has a target and no explicit
        breadth (a new index, e.g. after a reindex, is measured anew); else ``None``."""
        target = spec.ann.get("target_recall") if spec is not None else None
        if spec is None or spec.kind != "hnsw" or target is None or explicit_breadth(spec):
            return None
        below = int(spec.ann.get("exact_below", self.tuning.exact_below))
        cold = self.tuning.cold
        if "exact_below" in spec.ann:  # an explicit line holds before a measurement too
            cold = Cold(below, cold.breadth)
        return Calibrator(float(target), below, lambda: self.wake(), cold)

    def current(self) -> Calibrator | None:
        """The calibrator of the store's current index (``None``: nothing to calibrate)."""
        return self.stats().calibration

    def check(self, force: bool) -> tuple[Calibrator, Steps[Measurement | None]] | None:
        """The calibrator and the plan of one check (``None``: nothing to calibrate)."""
        calibrator, probe = self.current(), self.probe()
        if calibrator is None or probe is None:
            return None
        return calibrator, calibrator.check(probe, force)

    def report(self, size: int) -> VectorSearchStats | None:
        """The report for an index of ``size`` vectors (``None``: the store has no vector index)."""
        spec = self.spec()
        if spec is None:
            return None
        calibrator = self.current()
        explicit = explicit_breadth(spec)
        if spec.kind == "ivfflat":
            explicit = int(spec.ann.get("probes", 10))
        fallback = explicit or search_breadth(size, self.tuning.schedule)
        fixed: Literal["explicit", "schedule"] | None = None
        if explicit or calibrator is None:  # no recall target: the breadth by size
            fixed = "explicit" if explicit else "schedule"
        below = int(spec.ann.get("exact_below", self.tuning.exact_below))
        measured = calibrator is not None and calibrator.measurement is not None
        small = size <= below > 0 and not measured  # searches scan exactly
        exact = spec.kind == "exact" or self.exact_only() or small
        report = calibrator or Calibrator(spec.ann.get("target_recall"), 0)
        return report.report(size, fallback, fixed, exact)


class ThreadCalibration:
    """Runs a sync store's checks: forced ones in the caller's thread, background ones in a daemon
    thread, each in a ``session`` of the calibration's own. :meth:`stop` (the store's close) ends a
    check in flight at its next round and waits for its thread."""

    def __init__(
        self,
        calibration: Calibration,
        session: Callable[[], AbstractContextManager[Callable[[Any], Any]]],
    ) -> None:
        self.calibration = calibration
        self.session = session
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        calibration.wake = self.wake

    def run(self, force: bool) -> Measurement | None:
        """One check now (``force``: measure whether due or not, else the background's check,
        abandoned at its next round once the store closed); the measurement in force."""
        check = self.calibration.check(force)
        if check is None:
            return None
        calibrator, steps = check
        with _recorded(calibrator, not force), self.session() as execute:
            if force:
                return drive(steps, execute)
            return drive(steps, lambda request: self._round(execute, request))

    def _round(self, execute: Callable[[Any], Any], request: Any) -> Any:
        if self._closed.is_set():
            raise _Stopped
        return execute(request)

    def wake(self) -> None:
        """Start one background check in a daemon thread (the search that asked does not wait)."""

        def work() -> None:
            try:
                self.run(False)
            except _Stopped:
                pass
            except Exception:
                log.warning("background vector calibration failed", exc_info=True)

        if self._closed.is_set():
            calibrator = self.calibration.current()
            if calibrator is not None:
                calibrator.running = False
            return
        self._thread = threading.Thread(target=work, name="langmem-calibration", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> bool:
        """Start no more checks, end the one in flight at its next round; True when it ended."""
        self._closed.set()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()


class TaskCalibration:
    """Runs an async store's checks: forced ones awaited by the caller, background ones as a task on
    the store's loop (``loop()``), each in a ``session`` of the calibration's own. :meth:`stop`
    (the store's close) cancels a check in flight and waits until it ended."""

    def __init__(
        self,
        calibration: Calibration,
        session: Callable[[], AbstractAsyncContextManager[Callable[[Any], Any]]],
        loop: Callable[[], asyncio.AbstractEventLoop | None],
    ) -> None:
        self.calibration = calibration
        self.session = session
        self.loop = loop
        self.task: asyncio.Task[Any] | None = None
        calibration.wake = self.wake

    async def run(self, force: bool) -> Measurement | None:
        """One check now (``force``: measure whether due or not); the measurement in force."""
        check = self.calibration.check(force)
        if check is None:
            return None
        calibrator, steps = check
        with _recorded(calibrator, not force):
            async with self.session() as execute:
                return await adrive(steps, execute)

    def wake(self) -> None:
        """Start one background check as a task on the store's loop (the search does not wait)."""

        async def work() -> None:
            try:
                await self.run(False)
            except Exception:
                log.warning("background vector calibration failed", exc_info=True)

        def start() -> None:
            self.task = asyncio.ensure_future(work())

        loop = self.loop()
        if loop is None or loop.is_closed():
            calibrator = self.calibration.current()
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

    async def stop(self) -> None:
        """Cancel a background check in flight and wait until it ended (its own connection closed
        with it): a closing store leaves no task pending on its loop."""
        task, self.task = self.task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])  # a cancellation of the caller still propagates
