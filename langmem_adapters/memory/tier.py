"""The base of the memory tiers and the store reads they share.

A tier writes each operation once, as a flow (:mod:`langmem_adapters.memory.flows`) that yields
store calls; its sync method runs the flow with ``run_flow`` and its ``a`` twin with
``arun_flow``, so both share one implementation and the async one does real async I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, PutOp, SearchItem

from langmem_adapters.errors import MemoryTypeError
from langmem_adapters.memory.checks import validate_root
from langmem_adapters.memory.flows import Flow, arun_flow, call, run_flow
from langmem_adapters.memory.records import to_context
from langmem_adapters.memory.times import to_ms, utc_now

__all__ = ["MemoryTier", "digest", "done", "search_all", "search_ranked"]

T = TypeVar("T")


def digest(text: str) -> str:
    """A fixed-length key fragment for any user string (safe whatever characters it holds)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def done(value: T) -> Flow[T]:
    """A flow that calls nothing and returns ``value`` (a ``select`` that needs no store)."""
    yield from ()
    return value


def search_ranked(
    store: BaseStore,
    namespace: tuple[str, ...],
    *,
    query: str | None,
    filter: dict[str, Any],
    page_size: int,
    wanted: int | None,
    select: Callable[[list[SearchItem]], Flow[list[T]]],
) -> Flow[tuple[list[T], bool]]:
    """What ``select`` keeps of each page of a search, and whether the store ranked the results.

    Only results whose namespace is exactly ``namespace`` reach ``select``: store search matches
    namespace prefixes, so a deeper namespace of another tenant could appear. Once the store
    ranks by similarity (some result has a score), paging stops as soon as ``wanted`` results
    are kept, since later pages are less similar; without a ranking (or with ``wanted=None``)
    every match is read, so the caller can rank them all.
    """
    found: list[T] = []
    ranked = False
    offset = 0
    while True:
        page: list[SearchItem] = yield from call(
            store,
            "search",
            namespace,
            query=query,
            filter=filter or None,
            limit=page_size,
            offset=offset,
        )
        items = [item for item in page if tuple(item.namespace) == namespace]
        ranked = ranked or any(i.score is not None for i in items)
        found.extend((yield from select(items)))
        if len(page) < page_size or (ranked and wanted is not None and len(found) >= wanted):
            return found, ranked
        offset += len(page)


def search_all(
    store: BaseStore, namespace: tuple[str, ...], *, filter: dict[str, Any], page_size: int = 200
) -> Flow[list[SearchItem]]:
    """Every record of ``namespace`` matching the store-side ``filter``, paging until exhausted."""
    found, _ = yield from search_ranked(
        store,
        namespace,
        query=None,
        filter=filter,
        page_size=page_size,
        wanted=None,
        select=done,
    )
    return found


class MemoryTier:
    """Base of the tiers: validates the root and holds the store, the tier's namespace and clock.

    A subclass sets ``_label``, its records live under ``_ns = (*root, _label)``. Atomic creates
    (``put_if_absent``) use the store's own ``put_if_absent``/``aput_if_absent`` when it has one
    (this package's Postgres and Redis stores), else the best-effort fallback of ``run_flow``.
    """

    _label: str

    def __init__(
        self,
        store: BaseStore,
        *,
        namespace: Sequence[str],
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise MemoryTypeError(f"store must be a BaseStore, got {type(store).__name__}")
        self.store = store
        self.root = validate_root(namespace)
        self._ns = (*self.root, self._label)
        self._clock = clock

    def _now_ms(self) -> int:
        """The tier clock's current time in epoch milliseconds."""
        return to_ms(self._clock(), "clock()")

    def _forget_all(self, page_size: int = 200) -> Flow[int]:
        """Delete the tier's namespace and everything below it: one ``delete_namespace`` on a store
        that has it (see its docs on atomicity), else search and delete a page at a time (one batch
        per page)."""
        if hasattr(self.store, "delete_namespace"):
            return int((yield from call(self.store, "delete_namespace", self._ns)))
        removed = 0
        while page := (yield from call(self.store, "search", self._ns, limit=page_size)):
            deletes = [PutOp(tuple(item.namespace), item.key, None) for item in page]
            yield from call(self.store, "batch", deletes)
            removed += len(deletes)
        return removed

    def forget_all(self) -> int:
        """Remove every record of this tier (its namespace ``(*root, label)``), whatever run,
        thread or version wrote it; returns how many went. Other tiers and roots are untouched."""
        return run_flow(self._forget_all())

    async def aforget_all(self) -> int:
        """Async ``forget_all``."""
        return await arun_flow(self._forget_all())

    to_context = staticmethod(to_context)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(store={type(self.store).__name__}, namespace={self.root!r})"
