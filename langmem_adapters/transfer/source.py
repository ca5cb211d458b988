"""What a copy reads from: a :class:`Source` yields pages of ``StoredItem`` s in a stable order, each
with the :data:`Position` to resume after it, so a migration can stop and pick up where it was.

This package's stores are sources through :class:`StoreSource` (their ``iter_items``); the
official LangGraph stores' data through the readers of :mod:`langmem_adapters.transfer.official`.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Protocol

from langmem_adapters.core.records import StoredItem, cursor_of
from langmem_adapters.core.store import PAGE_SIZE
from langmem_adapters.core.sync_store import SyncStore

__all__ = ["PAGE_SIZE", "Page", "Position", "Source", "StoreSource"]

Position = list[str]
"""Where a source's read order stands after a page (JSON-serialisable: migrate checkpoints keep it)."""

Page = tuple[list[StoredItem], Position]
"""One page: its live items (possibly none, if they went while being read) and the position after it."""


class Source(Protocol):
    """Anything whose live items can be read page by page, in a stable order, resumably."""

    def count(self) -> int:
        """How many live items there are now (for progress bars)."""
        ...

    def pages(self, after: Position | None = None, page_size: int = PAGE_SIZE) -> Iterator[Page]:
        """Live items after ``after`` (``None``: from the start), at most ``page_size`` per page."""
        ...


class StoreSource:
    """One of this package's sync stores (or the part under ``namespace_prefix``) as a source; the
    position is the last item's ``cursor``, ``[namespace text, key]``."""

    def __init__(self, store: SyncStore, namespace_prefix: tuple[str, ...] = ()) -> None:
        self.store = store
        self.namespace_prefix = namespace_prefix

    def count(self) -> int:
        """Live items under the prefix (the store's ``count``: no item is read)."""
        return self.store.count(self.namespace_prefix)

    def pages(self, after: Position | None = None, page_size: int = PAGE_SIZE) -> Iterator[Page]:
        """Pages of ``iter_items``, resuming after the cursor ``after``."""
        items = self.store.iter_items(
            self.namespace_prefix,
            page_size=page_size,
            after=cursor_of(after),
        )
        while page := list(islice(items, page_size)):
            yield page, list(page[-1].cursor)
