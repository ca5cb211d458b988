"""``AsyncStore``: the ``BaseStore`` surface of a store on an async client (the backend supplies
its plans and its session, see :mod:`langmem_adapters.core.store`), with sync twins that work from
other threads by running on the store's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, TypeVar

from langmem_adapters.core.calibrated import TaskCalibration
from langmem_adapters.core.drive import Steps, adrive
from langmem_adapters.core.embedding import Embed
from langmem_adapters.core.measurement import VectorSearchStats
from langmem_adapters.core.records import StoredItem
from langmem_adapters.core.reindex import PAGE_SIZE as REINDEX_PAGE
from langmem_adapters.core.reindex import Progress
from langmem_adapters.core.store import (
    PAGE_SIZE,
    S,
    Store,
    pages,
)
from langmem_adapters.core.ttl import AsyncSweeper, sweep_interval
from langmem_adapters.errors import WrongLoopError

__all__ = ["AsyncStore"]

R = TypeVar("R")


class AsyncStore(Store[S]):
    """A store on an async client; its sync methods work from other threads by running on the
    store's event loop, and raise ``WrongLoopError`` (an ``asyncio.InvalidStateError``) on that loop,
    where they would deadlock."""

    loop: asyncio.AbstractEventLoop | None = None

    def _configure(self, index: Mapping[str, Any] | None, ttl: Mapping[str, Any] | None) -> None:
        """The shared parts, then this driver's: the calibration's task, the TTL sweeper's slot."""
        super()._configure(index, ttl)
        self._calibrating = TaskCalibration(
            self._calibration, self._calibration_session, lambda: self.loop
        )
        self._sweeper: AsyncSweeper | None = None

    def _bind_loop(self) -> None:
        """Remember the running loop (if any) that the sync methods will use."""
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    def _session(self) -> AbstractAsyncContextManager[Callable[[Any], Any]]:
        """The backend's connection (and transaction) context, yielding the coroutine function
        executing one round."""
        raise NotImplementedError

    def _read_session(self) -> AbstractAsyncContextManager[Callable[[Any], Any]]:
        """The session of a plan that only reads (a backend may send it to a replica)."""
        return self._session()

    def _calibration_session(self) -> AbstractAsyncContextManager[Callable[[Any], Any]]:
        """The session of a calibration check (backend hook: by default the store's own)."""
        return self._session()

    async def _drive(self, steps: Steps[R], *, reads: bool = False) -> R:
        """Drive a plan in one session with awaits (``reads``: a plan that only reads), binding the
        loop that later sync calls from other threads will use: the same requests as the sync
        store, executed asynchronously."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        async with self._read_session() if reads else self._session() as execute:
            embed = self._aembed
            return await adrive(steps, lambda r: embed(r) if type(r) is Embed else execute(r))

    def _run(self, steps: Steps[R], *, reads: bool = False) -> R:
        """``_drive`` on the store's event loop, for callers in other threads."""
        return self._sync(self._drive(steps, reads=reads))

    async def sweep_ttl(self) -> int:
        """Delete expired items now; returns how many went."""
        raise NotImplementedError

    def _sync(self, coro: Any) -> Any:
        """Run a coroutine on the store's loop from another thread."""
        name = type(self).__name__
        if self.loop is None:
            coro.close()
            raise WrongLoopError(f"{name} has no event loop yet; use the async methods")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            coro.close()
            raise WrongLoopError(
                f"Synchronous calls to {name} detected in the main event loop. "
                "Use the async methods (aget, aput, ...) instead."
            )
        if self.loop.is_closed():
            coro.close()
            raise WrongLoopError(f"the event loop {name} ran on is closed; use the async methods")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def arestore(self, records: Iterable[StoredItem], *, page_size: int = PAGE_SIZE) -> int:
        """Write records as they were (see :meth:`SyncStore.restore`); returns how many."""
        total = 0
        checked = pages(records, page_size)
        async with self.abulk_load():
            for page in checked:
                total += await self._drive(self._restore_plan(page))
        return total

    def restore(self, records: Iterable[StoredItem], *, page_size: int = PAGE_SIZE) -> int:
        """Sync twin of :meth:`arestore`, for callers in other threads."""
        return int(self._sync(self.arestore(list(records), page_size=page_size)))

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep in an asyncio task every interval (argument, else TTLConfig, else 5 minutes); returns
        the task."""
        if self._sweeper is None:
            interval = sweep_interval(self.ttl_config, sweep_interval_minutes)
            self._sweeper = AsyncSweeper(self.sweep_ttl, interval)
        return self._sweeper.task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; True when it has stopped."""
        sweeper, self._sweeper = self._sweeper, None
        return await sweeper.stop(timeout) if sweeper else True

    async def _stop_background(self) -> None:
        """Stop the store's background work (the sweeper, a calibration check in flight), as its
        close does: none outlives the store."""
        await self.stop_ttl_sweeper()
        await self._calibrating.stop()

    @asynccontextmanager
    async def abulk_load(self) -> AsyncIterator[None]:
        """Load many items faster (see :meth:`SyncStore.bulk_load`)."""
        async with self._bulk.arun(self._drive):
            yield

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

    async def areindex(
        self,
        embed: Any = None,
        fields: Sequence[str] | None = None,
        *,
        page_size: int = REINDEX_PAGE,
        progress: Progress | None = None,
    ) -> int:
        """Re-embed every live item (see :meth:`SyncStore.reindex`); returns how many."""
        flow = self._reindexer.flow(embed, fields, page_size, progress)
        return int(await adrive(flow, self._drive))

    def reindex(
        self,
        embed: Any = None,
        fields: Sequence[str] | None = None,
        *,
        page_size: int = REINDEX_PAGE,
        progress: Progress | None = None,
    ) -> int:
        """Sync twin of :meth:`areindex`, for callers in other threads."""
        return int(self._sync(self.areindex(embed, fields, page_size=page_size, progress=progress)))

    async def acalibrate(self) -> VectorSearchStats | None:
        """Measure recall now and set the search breadth or mode; returns :meth:`avector_stats`."""
        await self._calibrating.run(True)
        return await self.avector_stats()

    def calibrate(self) -> VectorSearchStats | None:
        """Sync twin of :meth:`acalibrate`, for callers in other threads."""
        return self._sync(self.acalibrate())
