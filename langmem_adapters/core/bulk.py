"""``bulk_load()`` / ``abulk_load()``: a context in which many writes go into a store faster than
one index insert at a time, written once for both drivers and both backends.

A store holds one :class:`BulkLoads`, made with the backend's two plans: ``start`` (run when the
outermost bulk load of a store begins: Postgres drops the ANN index of an empty vector table) and
``finish`` (run when it ends: Postgres builds the missing index once, over everything loaded). A
backend without either (Redis: RediSearch indexes on write) gets a context that does nothing. Bulk
loads nest and may run from several threads at once: only the outermost of a store instance starts
and finishes.

If the body fails with an ``Exception``, the finish still runs (the store stays fully usable); if
that fails too, the body's error propagates with a note. On an interrupt (``KeyboardInterrupt``,
a cancelled task) nothing more runs: the index stays missing (searches still answer, by exact scans)
until the next bulk load or ``setup()`` builds it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from langmem_adapters.core.drive import Steps

__all__ = ["BulkLoads"]

Plan = Callable[[], "Steps | None"]
"""A backend's bulk-load hook: the plan to run (``None``: nothing to do)."""


class BulkLoads:
    """A store's bulk loads: their nesting count and the backend's ``start`` and ``finish`` plans.
    :meth:`run` (blocking) and :meth:`arun` (awaiting) are the context, given how the store runs a
    plan; only the outermost bulk load of the store starts and finishes."""

    def __init__(self, start: Plan, finish: Plan) -> None:
        self._start = start
        self._finish = finish
        self._depth = 0
        self._lock = threading.Lock()

    def _enter(self) -> Steps | None:
        """Count a bulk load in; the start plan when it is the outermost."""
        with self._lock:
            self._depth += 1
            outermost = self._depth == 1
        return self._start() if outermost else None

    def _exit(self) -> Steps | None:
        """Count a bulk load out; the finish plan when it was the outermost."""
        with self._lock:
            self._depth -= 1
            outermost = self._depth == 0
        return self._finish() if outermost else None

    def _abort(self, exc: BaseException) -> Steps | None:
        """Count a failed bulk load out; the finish plan to try when it was the outermost and the
        failure an ``Exception`` (an interrupt is not kept waiting for an index build)."""
        finish = self._exit()
        return finish if isinstance(exc, Exception) else None

    @contextmanager
    def run(self, run: Callable[[Steps], Any]) -> Iterator[None]:
        """The bulk-load context of a store that runs plans with the blocking ``run``."""
        try:
            start = self._enter()
            if start is not None:
                run(start)
            yield
        except BaseException as exc:
            finish = self._abort(exc)
            if finish is not None:
                try:
                    run(finish)
                except Exception as err:
                    _failed_finish(exc, err)
            raise
        finish = self._exit()
        if finish is not None:
            run(finish)

    @asynccontextmanager
    async def arun(self, drive: Callable[[Steps], Awaitable[Any]]) -> AsyncIterator[None]:
        """The bulk-load context of a store that runs plans with the awaitable ``drive``."""
        try:
            start = self._enter()
            if start is not None:
                await drive(start)
            yield
        except BaseException as exc:
            finish = self._abort(exc)
            if finish is not None:
                try:
                    await drive(finish)
                except Exception as err:
                    _failed_finish(exc, err)
            raise
        finish = self._exit()
        if finish is not None:
            await drive(finish)


def _failed_finish(exc: BaseException, err: Exception) -> None:
    """Tell the body's error that the index could not be rebuilt after it."""
    note = (
        f"the bulk load's index build failed too ({type(err).__name__}: {err}); "
        "searches answer by exact scans until the next bulk load or setup() builds it"
    )
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    else:  # Python 3.10 has no add_note: the same PEP 678 list, which tracebacks show from 3.11
        exc.__notes__ = [*getattr(exc, "__notes__", []), note]  # type: ignore[attr-defined]
