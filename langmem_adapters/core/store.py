"""What both drivers' stores (:class:`~langmem_adapters.core.sync_store.SyncStore`,
:class:`~langmem_adapters.core.async_store.AsyncStore`) share: the configuration, the parts a store
holds (embedder identity guard, calibration, bulk loads, reindexer), the backend's hooks, embedding
requests and the checked arguments of the store's own methods.

A backend writes its logic once as plans (generators that yield requests and return results, see
:mod:`langmem_adapters.core.drive`) and supplies only how to build them (``_plan``, ``_items_plan``,
``_restore_plan``, ...) and how one request is executed on its client: ``_session()``, a context
manager holding the connection (and transaction) that yields the function executing one backend
round. The parts get the backend's hooks as constructor arguments.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    GetOp,
    Item,
    NotProvided,
    Op,
    PutOp,
    Result,
    TTLConfig,
)

from langmem_adapters.core.bulk import BulkLoads
from langmem_adapters.core.calibrated import Calibration, Tuning
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.embedding import Embed
from langmem_adapters.core.filters import Condition, parse_filter
from langmem_adapters.core.identity import Identity, IdentityGuard
from langmem_adapters.core.measurement import VectorSearchStats
from langmem_adapters.core.ops import check_page_size, check_prefix, validate_namespace
from langmem_adapters.core.recall import Probe
from langmem_adapters.core.records import Cursor, StoredItem, check_records, cursor_of
from langmem_adapters.core.reindex import Reindexer, ReindexJob
from langmem_adapters.core.surface import OwnErrors
from langmem_adapters.core.ttl import check_ttl_config
from langmem_adapters.core.vectors import IndexSpec, SearchStats
from langmem_adapters.errors import InvalidNamespaceError
from langmem_adapters.views import StoreByteStore, StoreRetriever, as_retriever

__all__ = ["PAGE_SIZE", "ItemsPage", "Store"]

ItemsPage = tuple[list[StoredItem], Cursor | None]
"""One page of ``iter_items``: the items, and the cursor to read on from (``None``: no more)."""

#: Items per page of ``iter_items`` and ``restore`` unless told otherwise.
PAGE_SIZE = 500


R = TypeVar("R")
S = TypeVar("S", bound=SearchStats)
"""The backend's search statistics (its subclass of the shared ones)."""


class Store(OwnErrors, Generic[S]):
    """Configuration, parts, checks and the backend's plan hooks, shared by both drivers."""

    supports_ttl: bool = True
    index_spec: IndexSpec | None
    ttl_config: TTLConfig | None
    # Errors after which the whole batch was rolled back and may simply run again (e.g. a deadlock).
    _retryable: tuple[type[Exception], ...] = ()
    _attempts = 3
    #: The backend's search defaults before (or without) a calibration.
    _tuning = Tuning()
    _stats: S

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
        """Check the options and make the parts (before any I/O); the driver adds its runners,
        and the backend its search stats (``_new_stats``) once it has checked its own options."""
        self.index_spec = IndexSpec.from_config(index) if index is not None else None
        self.index_config = index
        self.ttl_config = check_ttl_config(ttl)
        self._guard = IdentityGuard()  # the embedder identity check (core/identity.py)
        self._calibration = Calibration(
            self._tuning,
            lambda: self.index_spec,
            lambda: self._stats,
            self._probe,
            self._exact_only,
        )
        self._bulk = BulkLoads(self._bulk_start_plan, self._bulk_finish_plan)
        self._reindexer = Reindexer(
            self._guard, lambda: self.index_spec, self._reindex_job, self._retryable
        )

    def _new_stats(self) -> S:
        """The backend's fresh search stats for the current index, with a calibrator from
        ``self._calibration.calibrator(self.index_spec)`` (a new index, e.g. after a reindex, is
        measured anew)."""
        raise NotImplementedError

    def _adopt(self, spec: IndexSpec, identity: Identity, generation: int) -> None:
        """After a reindex switched: the new index and identity (at ``generation``) from now on."""
        self.index_spec = spec
        self._stats = self._new_stats()
        config = {"dims": spec.dims, "embed": spec.embeddings, "fields": list(spec.fields)}
        self.index_config = {**(self.index_config or {}), **config}
        self._guard.adopt(identity, generation)

    def _run(self, steps: Steps[R], *, reads: bool = False) -> R:
        """The driver's: run a plan in one session for a blocking caller (``reads``: it only reads)."""
        raise NotImplementedError

    async def _drive(self, steps: Steps[R], *, reads: bool = False) -> R:
        """The driver's: run a plan in one session for a coroutine (``reads``: it only reads)."""
        raise NotImplementedError

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops: reads see the state before the batch; its writes apply atomically."""
        return self._batch(list(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`."""
        return await self._abatch(list(ops))

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """langgraph's ``get``, its namespace checked once: by the batch, which applies langgraph's
        label rules itself (``BaseStore.get`` would check the labels a second time first)."""
        return self._batch([GetOp(namespace, str(key), self._refreshes(refresh_ttl))])[0]

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """Async twin of :meth:`get`."""
        return (await self._abatch([GetOp(namespace, str(key), self._refreshes(refresh_ttl))]))[0]

    def _refreshes(self, refresh_ttl: bool | None) -> bool:
        """Whether a read refreshes TTLs: ``refresh_ttl``, else the TTL config's ``refresh_on_read``
        (default True), as ``BaseStore.get`` decides."""
        if refresh_ttl is not None:
            return refresh_ttl
        return (self.ttl_config or {}).get("refresh_on_read", True)

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
        return bool(self._batch([op], if_absent=True))

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
        op = self._if_absent_op(namespace, key, value, index, ttl)
        return bool(await self._abatch([op], if_absent=True))

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
        """Async twin of :meth:`iter_items`."""
        prefix, size, cursor = listing(namespace_prefix, page_size, after)
        position: Cursor | None = cursor
        while position is not None:
            page, position = await self._drive(self._items_plan(prefix, position, size), reads=True)
            for item in page:
                yield item

    def count(
        self, namespace_prefix: tuple[str, ...], *, filter: Mapping[str, Any] | None = None
    ) -> int:
        """How many live items lie at or below ``namespace_prefix`` (whole labels; ``()``: every
        namespace) and match ``filter`` (as in ``search``); expired items never count."""
        return int(self._run(self._count_plan(*counting(namespace_prefix, filter)), reads=True))

    async def acount(
        self, namespace_prefix: tuple[str, ...], *, filter: Mapping[str, Any] | None = None
    ) -> int:
        """Async twin of :meth:`count`."""
        plan = self._count_plan(*counting(namespace_prefix, filter))
        return int(await self._drive(plan, reads=True))

    def delete_namespace(self, namespace_prefix: tuple[str, ...]) -> int:
        """Delete the namespace and every namespace below it (whole labels) with their items,
        vectors and bookkeeping, atomically on one server; returns how many live items went.
        An empty prefix raises ``InvalidNamespaceError``: there is no "delete everything"."""
        return int(self._run(self._delete_namespace_plan(deleting(namespace_prefix))))

    async def adelete_namespace(self, namespace_prefix: tuple[str, ...]) -> int:
        """Async twin of :meth:`delete_namespace`."""
        return int(await self._drive(self._delete_namespace_plan(deleting(namespace_prefix))))

    def vector_stats(self) -> VectorSearchStats | None:
        """Index size, search breadth and mode in use, target and last measured recall (``None``:
        the store has no vector index)."""
        if (size := self._index_size()) is None:
            return None
        plan, reads = size
        return self._calibration.report(int(self._run(plan, reads=reads)))

    async def avector_stats(self) -> VectorSearchStats | None:
        """Async twin of :meth:`vector_stats`."""
        if (size := self._index_size()) is None:
            return None
        plan, reads = size
        return self._calibration.report(int(await self._drive(plan, reads=reads)))

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

    def _bulk_start_plan(self) -> Steps | None:
        """The backend's plan preparing a bulk load (``None``: nothing to prepare)."""
        return None

    def _bulk_finish_plan(self) -> Steps | None:
        """The backend's plan ending a bulk load (``None``: nothing to finish)."""
        return None

    def _reindex_job(self, target: IndexSpec, identity: Identity) -> ReindexJob:
        """The backend's plans re-embedding this store into ``target``."""
        raise NotImplementedError

    def _probe(self) -> Probe | None:
        """The backend's probe of the current vector index (``None``: no server-side index)."""
        return None

    def _exact_only(self) -> bool:
        """Whether every vector search is exact whatever the index (plain Redis)."""
        return False

    def _batch(self, ops: list[Op], if_absent: bool = False) -> Any:
        """A batch (or one atomic create) as one plan in one session, run again while the backend
        rolled it back whole (``_retryable``, e.g. a deadlock), at most ``_attempts`` times."""
        reads = reads_only(ops, if_absent)
        for _ in range(self._attempts - 1):
            try:
                return self._run(self._plan(ops, if_absent=if_absent), reads=reads)
            except self._retryable:
                pass
        return self._run(self._plan(ops, if_absent=if_absent), reads=reads)

    async def _abatch(self, ops: list[Op], if_absent: bool = False) -> Any:
        """Async twin of :meth:`_batch`."""
        reads = reads_only(ops, if_absent)
        for _ in range(self._attempts - 1):
            try:
                return await self._drive(self._plan(ops, if_absent=if_absent), reads=reads)
            except self._retryable:
                pass
        return await self._drive(self._plan(ops, if_absent=if_absent), reads=reads)

    def _index_size(self) -> tuple[Steps[Any], bool] | None:
        """``vector_stats()``'s plan reading the index's size (the probe's count, else the live
        items) and whether it only reads (``None``: no vector index)."""
        probe = self._probe()
        if self.index_spec is None:
            return None
        return (probe.count(), False) if probe is not None else (self._count_plan((), ()), True)

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


def listing(
    namespace_prefix: Any, page_size: Any, after: Any
) -> tuple[tuple[str, ...], int, Cursor]:
    """The checked arguments of ``iter_items``."""
    return check_prefix(namespace_prefix), check_page_size(page_size), cursor_of(after)


def pages(records: Iterable[StoredItem], page_size: Any) -> list[list[tuple[StoredItem, str]]]:
    """``restore``'s input checked whole (nothing is written if any record is bad), in pages."""
    page_size = check_page_size(page_size)
    checked = check_records(records)
    return [checked[i : i + page_size] for i in range(0, len(checked), page_size)]


def reads_only(ops: list[Op], if_absent: bool) -> bool:
    """Whether a batch only reads (gets, searches, listings): a backend may run it on a replica."""
    return not if_absent and not any(isinstance(op, PutOp) for op in ops)


def counting(prefix: Any, filter: Any) -> tuple[tuple[str, ...], tuple[Condition, ...]]:
    """The checked arguments of ``count``: a prefix (``()``: every namespace) and its filter."""
    return check_prefix(prefix), parse_filter(filter)


def deleting(prefix: Any) -> tuple[str, ...]:
    """The checked prefix of ``delete_namespace``, which must name at least one label."""
    checked = check_prefix(prefix)
    if not checked:
        raise InvalidNamespaceError("refusing to delete every namespace; pass a prefix")
    return checked
