"""The backend-independent half of every store: the ``BaseStore`` surface for a blocking and for an
async driver, embedding requests, atomic create, export/restore and the TTL sweeper.

A backend writes its logic once as plans (generators that yield requests and return results, see
:mod:`langmem_adapters.core.drive`) and supplies only how to build them (``_plan``, ``_items_plan``,
``_restore_plan``) and how one request is executed on its client: ``_session()``, a context manager
holding the connection (and transaction) that yields the function executing one backend round.
"""

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
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Literal, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    NotProvided,
    Op,
    PutOp,
    Result,
    TTLConfig,
)

from langmem_adapters.core.bulk import AsyncBulkLoad, SyncBulkLoad
from langmem_adapters.core.calibrated import AsyncCalibration, SyncCalibration
from langmem_adapters.core.drive import Steps, adrive, drive
from langmem_adapters.core.embedding import Embed
from langmem_adapters.core.filters import Condition, parse_filter
from langmem_adapters.core.identity import IdentityGuard
from langmem_adapters.core.ops import check_page_size, check_prefix, validate_namespace
from langmem_adapters.core.records import Cursor, StoredItem, check_records, cursor_of
from langmem_adapters.core.reindex import AsyncReindex, SyncReindex
from langmem_adapters.core.surface import OwnErrors
from langmem_adapters.core.ttl import AsyncSweeper, Sweeper, check_ttl_config, sweep_interval
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import InvalidNamespaceError, WrongLoopError
from langmem_adapters.views import StoreByteStore, StoreRetriever, as_retriever

__all__ = ["AsyncStore", "Embed", "ItemsPage", "SyncStore"]

R = TypeVar("R")
"""A backend plan: yields ``Embed`` or the backend's round, is sent the answer, returns ``R``."""
ItemsPage = tuple[list[StoredItem], Cursor | None]
"""One page of ``iter_items``: the items, and the cursor to read on from (``None``: no more)."""

#: Items per page of ``iter_items`` and ``restore`` unless told otherwise.
PAGE_SIZE = 500


class _Store(OwnErrors):
    """Configuration, checks and plan builders shared by both drivers."""

    supports_ttl: bool = True
    index_spec: IndexSpec | None
    ttl_config: TTLConfig | None
    # Errors after which the whole batch was rolled back and may simply run again (e.g. a deadlock).
    _retryable: tuple[type[Exception], ...] = ()
    _attempts = 3

    @property
    def embeddings(self) -> Embeddings | None:
        """The index's embedding model (``None`` without an index), as on the official stores."""
        return self.index_spec.embeddings if self.index_spec else None

    def as_retriever(
        self,
        namespace_prefix: tuple[str, ...],
        *,
        filter: dict[str, Any] | None = None,
        k: int = 4,
        content_fields: Sequence[str] | None = None,
    ) -> StoreRetriever:
        """This store as a LangChain retriever over ``namespace_prefix`` (see
        :class:`~langmem_adapters.views.StoreRetriever`): ranked as ``search`` ranks."""
        return as_retriever(
            self, namespace_prefix, filter=filter, k=k, content_fields=content_fields
        )

    def as_byte_store(
        self, namespace: tuple[str, ...], *, ttl: float | None = None
    ) -> StoreByteStore:
        """One namespace of this store as a LangChain ``ByteStore`` (see
        :class:`~langmem_adapters.views.StoreByteStore`)."""
        return StoreByteStore(self, namespace, ttl=ttl)

    def _configure(self, index: Mapping[str, Any] | None, ttl: Mapping[str, Any] | None) -> None:
        self._guard = IdentityGuard()  # the embedder identity check (core/identity.py)
        self.index_spec = IndexSpec.from_config(index) if index is not None else None
        self.index_config = index
        self.ttl_config = check_ttl_config(ttl)

    def _plan(self, ops: Iterable[Op], *, if_absent: bool = False) -> Steps[Any]:
        """The backend's plan for a batch (or for one atomic create, returning whether it created)."""
        raise NotImplementedError

    def _items_plan(self, prefix: tuple[str, ...], after: Cursor, limit: int) -> Steps[ItemsPage]:
        """The backend's plan for one page of live items under ``prefix`` after ``after``."""
        raise NotImplementedError

    def _restore_plan(self, records: list[tuple[StoredItem, str]]) -> Steps[int]:
        """The backend's plan writing one page of checked records (with their value JSON) atomically,
        timestamps and expiry kept, vectors computed for this store's index; returns how many."""
        raise NotImplementedError

    def _count_plan(self, prefix: tuple[str, ...], conditions: tuple[Condition, ...]) -> Steps[int]:
        """The backend's plan counting the live items at or below ``prefix`` that match."""
        raise NotImplementedError

    def _delete_namespace_plan(self, prefix: tuple[str, ...]) -> Steps[int]:
        """The backend's plan deleting ``prefix`` and every namespace below it, with their items,
        vectors and bookkeeping; returns how many live items went."""
        raise NotImplementedError

    def _if_absent_op(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any, ttl: Any
    ) -> PutOp:
        namespace = validate_namespace(namespace)
        if isinstance(ttl, NotProvided):  # as BaseStore.put: the configured default
            ttl = (self.ttl_config or {}).get("default_ttl")
        return PutOp(namespace, str(key), value, index, ttl)

    def _embedder(self, request: Embed) -> Embeddings:
        """The model a request names (an identity probe, a reindex target), else the index's."""
        if request.using is not None:
            return request.using
        assert self.index_spec is not None
        return self.index_spec.embeddings

    def _embed(self, request: Embed) -> list[list[float]]:
        embeddings = self._embedder(request)
        if request.query:
            return [embeddings.embed_query(t) for t in request.texts]
        return embeddings.embed_documents(request.texts)

    async def _aembed(self, request: Embed) -> list[list[float]]:
        embeddings = self._embedder(request)
        if request.query:
            return list(await asyncio.gather(*(embeddings.aembed_query(t) for t in request.texts)))
        return await embeddings.aembed_documents(request.texts)


def _listing(
    namespace_prefix: Any, page_size: Any, after: Any
) -> tuple[tuple[str, ...], int, Cursor]:
    """The checked arguments of ``iter_items``."""
    return check_prefix(namespace_prefix), check_page_size(page_size), cursor_of(after)


def _pages(records: Iterable[StoredItem], page_size: Any) -> list[list[tuple[StoredItem, str]]]:
    """``restore``'s input checked whole (nothing is written if any record is bad), in pages."""
    page_size = check_page_size(page_size)
    checked = check_records(records)
    return [checked[i : i + page_size] for i in range(0, len(checked), page_size)]


def _reads_only(ops: list[Op], if_absent: bool) -> bool:
    """Whether a batch only reads (gets, searches, listings): a backend may run it on a replica."""
    return not if_absent and not any(isinstance(op, PutOp) for op in ops)


def _counting(prefix: Any, filter: Any) -> tuple[tuple[str, ...], tuple[Condition, ...]]:
    """The checked arguments of ``count``: a prefix (``()``: every namespace) and its filter."""
    return check_prefix(prefix), parse_filter(filter)


def _deleting(prefix: Any) -> tuple[str, ...]:
    """The checked prefix of ``delete_namespace``, which must name at least one label."""
    checked = check_prefix(prefix)
    if not checked:
        raise InvalidNamespaceError("refusing to delete every namespace; pass a prefix")
    return checked


class SyncStore(SyncBulkLoad, SyncReindex, SyncCalibration, _Store):
    """A store on a blocking client; its async methods run the blocking ones in a worker thread."""

    _sweeper: Sweeper | None = None

    def _session(self) -> AbstractContextManager[Callable[[Any], Any]]:
        """The backend's connection (and transaction) context, yielding how to execute one round."""
        raise NotImplementedError

    def _read_session(self) -> AbstractContextManager[Callable[[Any], Any]]:
        """The session of a plan that only reads (a backend may send it to a replica)."""
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

    def _run_retrying(self, ops: list[Op], if_absent: bool = False) -> Any:
        for attempt in range(self._attempts):
            try:
                return self._run(
                    self._plan(ops, if_absent=if_absent), reads=_reads_only(ops, if_absent)
                )
            except self._retryable:
                if attempt == self._attempts - 1:
                    raise

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops: reads see the state before the batch; its writes apply atomically."""
        return self._run_retrying(list(ops))

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
        return bool(self._run_retrying([op], if_absent=True))

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
        prefix, size, cursor = _listing(namespace_prefix, page_size, after)
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
        prefix, size, cursor = _listing(namespace_prefix, page_size, after)
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
        pages = _pages(records, page_size)
        with self.bulk_load():
            return sum(self._run(self._restore_plan(page)) for page in pages)

    async def arestore(self, records: Iterable[StoredItem], *, page_size: int = PAGE_SIZE) -> int:
        """Async twin of :meth:`restore` (in a worker thread)."""
        return await asyncio.to_thread(self.restore, list(records), page_size=page_size)

    def count(
        self, namespace_prefix: tuple[str, ...], *, filter: Mapping[str, Any] | None = None
    ) -> int:
        """How many live items lie at or below ``namespace_prefix`` (whole labels; ``()``: every
        namespace) and match ``filter`` (as in ``search``); expired items never count."""
        return int(self._run(self._count_plan(*_counting(namespace_prefix, filter)), reads=True))

    async def acount(
        self, namespace_prefix: tuple[str, ...], *, filter: Mapping[str, Any] | None = None
    ) -> int:
        """Async twin of :meth:`count` (in a worker thread)."""
        return await asyncio.to_thread(self.count, namespace_prefix, filter=filter)

    def delete_namespace(self, namespace_prefix: tuple[str, ...]) -> int:
        """Delete the namespace and every namespace below it (whole labels) with their items,
        vectors and bookkeeping, atomically on one server; returns how many live items went.
        An empty prefix raises ``InvalidNamespaceError``: there is no "delete everything"."""
        return int(self._run(self._delete_namespace_plan(_deleting(namespace_prefix))))

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


class AsyncStore(AsyncBulkLoad, AsyncReindex, AsyncCalibration, _Store):
    """A store on an async client; its sync methods work from other threads by running on the
    store's event loop, and raise ``WrongLoopError`` (an ``asyncio.InvalidStateError``) on that loop,
    where they would deadlock."""

    _sweeper: AsyncSweeper | None = None
    loop: asyncio.AbstractEventLoop | None = None

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

    async def _drive(self, steps: Steps[R], *, reads: bool = False) -> R:
        """Drive a plan in one session with awaits (``reads``: a plan that only reads), binding the
        loop that later sync calls from other threads will use: the same requests as the sync
        store, executed asynchronously."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        async with self._read_session() if reads else self._session() as execute:
            embed = self._aembed
            return await adrive(steps, lambda r: embed(r) if type(r) is Embed else execute(r))

    async def _run_retrying(self, ops: list[Op], if_absent: bool = False) -> Any:
        for attempt in range(self._attempts):
            try:
                return await self._drive(
                    self._plan(ops, if_absent=if_absent), reads=_reads_only(ops, if_absent)
                )
            except self._retryable:
                if attempt == self._attempts - 1:
                    raise

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

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops: reads see the state before the batch; its writes apply atomically."""
        return await self._run_retrying(list(ops))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """``abatch`` on the store's event loop, for callers in other threads."""
        return self._sync(self.abatch(list(ops)))

    async def aput_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Create the item only if no live item has this key; True for the one writer that created it."""
        op = self._if_absent_op(namespace, key, value, index, ttl)
        return bool(await self._run_retrying([op], if_absent=True))

    def put_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Sync twin of :meth:`aput_if_absent`, for callers in other threads."""
        return bool(self._sync(self.aput_if_absent(namespace, key, value, index, ttl=ttl)))

    async def aiter_items(
        self,
        namespace_prefix: tuple[str, ...] = (),
        *,
        page_size: int = PAGE_SIZE,
        after: Cursor | StoredItem | None = None,
    ) -> AsyncIterator[StoredItem]:
        """Every live item under ``namespace_prefix`` (see :meth:`SyncStore.iter_items`)."""
        prefix, size, cursor = _listing(namespace_prefix, page_size, after)
        position: Cursor | None = cursor
        while position is not None:
            page, position = await self._drive(self._items_plan(prefix, position, size), reads=True)
            for item in page:
                yield item

    def iter_items(
        self,
        namespace_prefix: tuple[str, ...] = (),
        *,
        page_size: int = PAGE_SIZE,
        after: Cursor | StoredItem | None = None,
    ) -> Iterator[StoredItem]:
        """Sync twin of :meth:`aiter_items`, for callers in other threads (pages on the store's loop)."""
        prefix, size, cursor = _listing(namespace_prefix, page_size, after)
        position: Cursor | None = cursor
        while position is not None:
            page, position = self._sync(
                self._drive(self._items_plan(prefix, position, size), reads=True)
            )
            yield from page

    async def arestore(self, records: Iterable[StoredItem], *, page_size: int = PAGE_SIZE) -> int:
        """Write records as they were (see :meth:`SyncStore.restore`); returns how many."""
        total = 0
        pages = _pages(records, page_size)
        async with self.abulk_load():
            for page in pages:
                total += await self._drive(self._restore_plan(page))
        return total

    def restore(self, records: Iterable[StoredItem], *, page_size: int = PAGE_SIZE) -> int:
        """Sync twin of :meth:`arestore`, for callers in other threads."""
        return int(self._sync(self.arestore(list(records), page_size=page_size)))

    async def acount(
        self, namespace_prefix: tuple[str, ...], *, filter: Mapping[str, Any] | None = None
    ) -> int:
        """Live items at or below ``namespace_prefix`` matching ``filter`` (see :meth:`SyncStore.count`)."""
        return int(
            await self._drive(self._count_plan(*_counting(namespace_prefix, filter)), reads=True)
        )

    def count(
        self, namespace_prefix: tuple[str, ...], *, filter: Mapping[str, Any] | None = None
    ) -> int:
        """Sync twin of :meth:`acount`, for callers in other threads."""
        return int(self._sync(self.acount(namespace_prefix, filter=filter)))

    async def adelete_namespace(self, namespace_prefix: tuple[str, ...]) -> int:
        """Delete a namespace and everything below it (see :meth:`SyncStore.delete_namespace`)."""
        return int(await self._drive(self._delete_namespace_plan(_deleting(namespace_prefix))))

    def delete_namespace(self, namespace_prefix: tuple[str, ...]) -> int:
        """Sync twin of :meth:`adelete_namespace`, for callers in other threads."""
        return int(self._sync(self.adelete_namespace(namespace_prefix)))

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
        await self._stop_calibration()
