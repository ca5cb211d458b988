"""``SyncStore``: the ``BaseStore`` surface of a store on a blocking client (the backend supplies
its plans and its session, see :mod:`langmem_adapters.core.store`), with async twins that run the
blocking methods in a worker thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import (
    AsyncIterator,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import Any, Literal, TypeVar

from langgraph.store.base import NOT_PROVIDED, NotProvided, Op, Result

from langmem_adapters.core.calibrated import ThreadCalibration
from langmem_adapters.core.drive import Steps, drive
from langmem_adapters.core.embedding import Embed
from langmem_adapters.core.measurement import VectorSearchStats
from langmem_adapters.core.records import Cursor, StoredItem
from langmem_adapters.core.reindex import PAGE_SIZE as REINDEX_PAGE
from langmem_adapters.core.reindex import Progress
from langmem_adapters.core.store import (
    PAGE_SIZE,
    Run,
    S,
    Store,
    counting,
    deleting,
    listing,
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

    def sweep_ttl(self) -> int:
        """Delete expired items now; returns how many went."""
        raise NotImplementedError

    def _flow(self, flow: Generator[Run, Any, R]) -> R:
        """Run one of the store's own flows: each of its plans in a session of its own."""
        return drive(flow, lambda run: self._run(run[0], reads=run[1]))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops: reads see the state before the batch; its writes apply atomically."""
        return self._flow(self._batch_flow(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so the event loop is never blocked."""
        return await asyncio.to_thread(self.batch, list(ops))

    def put_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Create the item only if no live item has this key; True for the one writer that created it.

        An expired item counts as absent. Racing writers get exactly one True.
        """
        op = self._if_absent_op(namespace, key, value, index, ttl)
        return bool(self._flow(self._batch_flow([op], if_absent=True)))

    async def aput_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Async twin of :meth:`put_if_absent`."""
        return await asyncio.to_thread(self.put_if_absent, namespace, key, value, index, ttl=ttl)

    def iter_items(
        self,
        namespace_prefix: tuple[str, ...] = (),
        *,
        page_size: int = PAGE_SIZE,
        after: Cursor | StoredItem | None = None,
    ) -> Iterator[StoredItem]:
        """Every live item under ``namespace_prefix`` with its timestamps, expiry and TTL, ordered by
        namespace text then key, read ``page_size`` at a time; ``after`` (an item's ``cursor``)
        resumes after that item. Items written meanwhile appear if they sort after the position read."""
        prefix, size, cursor = listing(namespace_prefix, page_size, after)
        position: Cursor | None = cursor
        while position is not None:
            page, position = self._run(self._items_plan(prefix, position, size), reads=True)
            yield from page

    async def aiter_items(
        self,
        namespace_prefix: tuple[str, ...] = (),
        *,
        page_size: int = PAGE_SIZE,
        after: Cursor | StoredItem | None = None,
    ) -> AsyncIterator[StoredItem]:
        """Async twin of :meth:`iter_items` (each page read in a worker thread)."""
        prefix, size, cursor = listing(namespace_prefix, page_size, after)
        position: Cursor | None = cursor
        while position is not None:
            page, position = await asyncio.to_thread(
                self._run, self._items_plan(prefix, position, size), reads=True
            )
            for item in page:
                yield item

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

    def count(
        self, namespace_prefix: tuple[str, ...], *, filter: Mapping[str, Any] | None = None
    ) -> int:
        """How many live items lie at or below ``namespace_prefix`` (whole labels; ``()``: every
        namespace) and match ``filter`` (as in ``search``); expired items never count."""
        return int(self._run(self._count_plan(*counting(namespace_prefix, filter)), reads=True))

    async def acount(
        self, namespace_prefix: tuple[str, ...], *, filter: Mapping[str, Any] | None = None
    ) -> int:
        """Async twin of :meth:`count` (in a worker thread)."""
        return await asyncio.to_thread(self.count, namespace_prefix, filter=filter)

    def delete_namespace(self, namespace_prefix: tuple[str, ...]) -> int:
        """Delete the namespace and every namespace below it (whole labels) with their items,
        vectors and bookkeeping, atomically on one server; returns how many live items went.
        An empty prefix raises ``InvalidNamespaceError``: there is no "delete everything"."""
        return int(self._run(self._delete_namespace_plan(deleting(namespace_prefix))))

    async def adelete_namespace(self, namespace_prefix: tuple[str, ...]) -> int:
        """Async twin of :meth:`delete_namespace` (in a worker thread)."""
        return await asyncio.to_thread(self.delete_namespace, namespace_prefix)

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
        """Async twin of :meth:`bulk_load` (its start and end run in a worker thread)."""
        context = self.bulk_load()
        await asyncio.to_thread(context.__enter__)
        try:
            yield
        except BaseException as exc:
            await asyncio.to_thread(context.__exit__, type(exc), exc, exc.__traceback__)
            raise
        await asyncio.to_thread(context.__exit__, None, None, None)

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

    def vector_stats(self) -> VectorSearchStats | None:
        """Index size, search breadth and mode in use, target and last measured recall (``None``:
        the store has no vector index)."""
        return self._flow(self._stats_flow())

    async def avector_stats(self) -> VectorSearchStats | None:
        """Async twin of :meth:`vector_stats` (in a worker thread)."""
        return await asyncio.to_thread(self.vector_stats)
