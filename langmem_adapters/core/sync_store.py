"""``SyncStore``: the ``BaseStore`` surface of a store on a blocking client (the backend supplies
its plans and its session, see :mod:`langmem_adapters.core.store`), with async twins that run the
blocking methods in a worker thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import (
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import Any, TypeVar

from langmem_adapters.core.calibrated import ThreadCalibration
from langmem_adapters.core.drive import Steps, drive
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
from langmem_adapters.core.ttl import Sweeper, sweep_interval

__all__ = ["SyncStore"]

R = TypeVar("R")


class SyncStore(Store[S]):
    """A store on a blocking client; its async methods run the blocking ones in a worker thread."""

    def _configure(self, index: Mapping[str, Any] | None, ttl: Mapping[str, Any] | None) -> None:
        """The shared parts, then this driver's: the calibration's thread, the TTL sweeper's slot."""
        super()._configure(index, ttl)
        self._calibrating = ThreadCalibration(self._calibration, self._calibration_session)
        self._sweeper: Sweeper | None = None

    def _session(self) -> AbstractContextManager[Callable[[Any], Any]]:
        """The backend's connection (and transaction) context, yielding how to execute one round."""
        raise NotImplementedError

    def _read_session(self) -> AbstractContextManager[Callable[[Any], Any]]:
        """The session of a plan that only reads (a backend may send it to a replica)."""
        return self._session()

    def _calibration_session(self) -> AbstractContextManager[Callable[[Any], Any]]:
        """The session of a calibration check (backend hook: by default the store's own)."""
        return self._session()

    def _run(self, steps: Steps[R], *, reads: bool = False) -> R:
        """Drive a plan in one session (``reads``: a plan that only reads): embed with the sync
        embedder, rounds on the backend."""
        with self._read_session() if reads else self._session() as execute:
            embed = self._embed
            return drive(steps, lambda r: embed(r) if type(r) is Embed else execute(r))

    async def _drive(self, steps: Steps[R], *, reads: bool = False) -> R:
        """``_run`` in a worker thread, so the event loop is never blocked."""
        return await asyncio.to_thread(self._run, steps, reads=reads)

    def sweep_ttl(self) -> int:
        """Delete expired items now; returns how many went."""
        raise NotImplementedError

    def restore(self, records: Iterable[StoredItem], *, page_size: int = PAGE_SIZE) -> int:
        """Write records as they were (value, ``created_at``, ``updated_at``, expiry, TTL), vectors
        computed for this store's index; returns how many. Every record is checked before anything
        is written; each page of ``page_size`` is applied atomically (whole or not at all). Runs as
        a :meth:`bulk_load` (into an empty vector table, the ANN index is built once, at the end)."""
        checked = pages(records, page_size)
        with self.bulk_load():
            return sum(self._run(self._restore_plan(page)) for page in checked)

    async def arestore(self, records: Iterable[StoredItem], *, page_size: int = PAGE_SIZE) -> int:
        """Async twin of :meth:`restore` (in a worker thread)."""
        return await asyncio.to_thread(self.restore, list(records), page_size=page_size)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep in a daemon thread every interval (argument, else TTLConfig, else 5 minutes); the
        returned future completes when the sweeper stops."""
        if self._sweeper is None:
            interval = sweep_interval(self.ttl_config, sweep_interval_minutes)
            self._sweeper = Sweeper(self.sweep_ttl, interval)
        return self._sweeper.done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it has stopped."""
        sweeper, self._sweeper = self._sweeper, None
        return sweeper.stop(timeout) if sweeper else True

    def _stop_background(self, timeout: float | None = None) -> None:
        """Stop the store's background work (the sweeper, a calibration check in flight), as its
        close does: none outlives the store."""
        self.stop_ttl_sweeper(timeout)
        self._calibrating.stop(timeout)

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many items (``restore``, puts) faster: on Postgres, when the vector table is empty
        at the start, its ANN index is dropped and built once at the end (searches meanwhile scan
        exactly, writers wait during the build). ``restore`` and ``migrate`` use it themselves;
        bulk loads nest (only the outermost starts and finishes)."""
        with self._bulk.run(self._run):
            yield

    @asynccontextmanager
    async def abulk_load(self) -> AsyncIterator[None]:
        """Async twin of :meth:`bulk_load` (its start and end plans run in a worker thread)."""
        async with self._bulk.arun(self._drive):
            yield

    def reindex(
        self,
        embed: Any = None,
        fields: Sequence[str] | None = None,
        *,
        page_size: int = REINDEX_PAGE,
        progress: Progress | None = None,
    ) -> int:
        """Re-embed every live item with ``embed`` (an ``Embeddings``, a function, or an
        ``init_embeddings`` string; default: this store's own, e.g. after an
        ``EmbeddingMismatchError``) and ``fields`` (default: the index's), ``page_size`` items at a
        time, beside the old vectors, which keep answering searches; then switch atomically, after
        which this store uses the new embedder. Unchanged text is embedded once. An interrupted run
        resumes when called again with the same embedder and fields. ``progress(done, total)`` is
        called after each page. Returns how many items the pages re-embedded (items written meanwhile
        are re-embedded by the switch as well)."""
        return int(drive(self._reindexer.flow(embed, fields, page_size, progress), self._run))

    async def areindex(
        self,
        embed: Any = None,
        fields: Sequence[str] | None = None,
        *,
        page_size: int = REINDEX_PAGE,
        progress: Progress | None = None,
    ) -> int:
        """Async twin of :meth:`reindex` (in a worker thread)."""
        return await asyncio.to_thread(
            self.reindex, embed, fields, page_size=page_size, progress=progress
        )

    def calibrate(self) -> VectorSearchStats | None:
        """Measure recall now (blocking) and set the search breadth or mode; returns
        :meth:`vector_stats` (``None``: no vector index)."""
        self._calibrating.run(True)
        return self.vector_stats()

    async def acalibrate(self) -> VectorSearchStats | None:
        """Async twin of :meth:`calibrate` (in a worker thread)."""
        return await asyncio.to_thread(self.calibrate)
