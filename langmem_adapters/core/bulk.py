"""``bulk_load()`` / ``abulk_load()``: a context in which many writes go into a store faster than
one index insert at a time, written once for both drivers and both backends.

A backend supplies two plans: ``_bulk_start_plan`` (run when the outermost bulk load of a store
begins: Postgres drops the ANN index of an empty vector table) and ``_bulk_finish_plan`` (run when it
ends: Postgres builds the missing index once, over everything loaded). A backend without either
(Redis: RediSearch indexes on write) gets a context that does nothing. Bulk loads nest and may run
from several threads at once: only the outermost of a store instance starts and finishes.

If the body fails with an ``Exception``, the finish still runs (the store stays fully usable); if
that fails too, the body's error propagates with a note. On an interrupt (``KeyboardInterrupt``,
a cancelled task) nothing more runs: the index stays missing (searches still answer, by exact scans)
until the next bulk load or ``setup()`` builds it.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from langmem_adapters.core.drive import Steps

__all__ = ["AsyncBulkLoad", "SyncBulkLoad"]


_depth_lock = threading.Lock()


class _BulkLoads:
    """The nesting count of a store's bulk loads and the backend's hooks (none by default)."""

    _bulk_depth = 0

    def _bulk_start_plan(self) -> Steps | None:
        """The backend's plan preparing a bulk load (``None``: nothing to prepare)."""
        return None

    def _bulk_finish_plan(self) -> Steps | None:
        """The backend's plan ending a bulk load (``None``: nothing to finish)."""
        return None

    def _bulk_enter(self) -> Steps | None:
        """Count a bulk load in; the start plan when it is the outermost."""
        with _depth_lock:
            self._bulk_depth += 1
            outermost = self._bulk_depth == 1
        return self._bulk_start_plan() if outermost else None

    def _bulk_exit(self) -> Steps | None:
        """Count a bulk load out; the finish plan when it was the outermost."""
        with _depth_lock:
            self._bulk_depth -= 1
            outermost = self._bulk_depth == 0
        return self._bulk_finish_plan() if outermost else None

    def _bulk_abort(self, exc: BaseException) -> Steps | None:
        """Count a failed bulk load out; the finish plan to try when it was the outermost and the
        failure an ``Exception`` (an interrupt is not kept waiting for an index build)."""
        finish = self._bulk_exit()
        return finish if isinstance(exc, Exception) else None


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


class SyncBulkLoad(_BulkLoads):
    """``bulk_load`` for stores on a blocking client (mixed into ``SyncStore``)."""

    _run: Callable[[Steps], Any]

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many items (``restore``, puts) faster: on Postgres, when the vector table is empty
        at the start, its ANN index is dropped and built once at the end (searches meanwhile scan
        exactly, writers wait during the build). ``restore`` and ``migrate`` use it themselves;
        bulk loads nest (only the outermost starts and finishes)."""
        try:
            start = self._bulk_enter()
            if start is not None:
                self._run(start)
            yield
        except BaseException as exc:
            finish = self._bulk_abort(exc)
            if finish is not None:
                try:
                    self._run(finish)
                except Exception as err:
                    _failed_finish(exc, err)
            raise
        finish = self._bulk_exit()
        if finish is not None:
            self._run(finish)

    @asynccontextmanager
    async def abulk_load(self) -> AsyncIterator[None]:
        """Async twin of :meth:`bulk_load` (its start and end run in a worker thread)."""
        context = self.bulk_load()
        await asyncio.to_thread(context.__enter__)
        try:
            yield
        except BaseException as exc:
            await asyncio.to_thread(context.__exit__, type(exc), exc, exc.__traceback__)
            raise
        await asyncio.to_thread(context.__exit__, None, None, None)


class AsyncBulkLoad(_BulkLoads):
    """``abulk_load`` for stores on an async client (mixed into ``AsyncStore``)."""

    _drive: Callable[[Steps], Any]
    _sync: Callable[[Any], Any]

    @asynccontextmanager
    async def abulk_load(self) -> AsyncIterator[None]:
        """Load many items faster (see :meth:`SyncBulkLoad.bulk_load`)."""
        try:
            start = self._bulk_enter()
            if start is not None:
                await self._drive(start)
            yield
        except BaseException as exc:
            finish = self._bulk_abort(exc)
            if finish is not None:
                try:
                    await self._drive(finish)
                except Exception as err:
                    _failed_finish(exc, err)
            raise
        finish = self._bulk_exit()
        if finish is not None:
            await self._drive(finish)

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Sync twin of :meth:`abulk_load`, for callers in other threads."""
        context = self.abulk_load()
        self._sync(context.__aenter__())
        try:
            yield
        except BaseException as exc:
            self._sync(context.__aexit__(type(exc), exc, exc.__traceback__))
            raise
        self._sync(context.__aexit__(None, None, None))
