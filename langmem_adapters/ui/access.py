"""The browser's reads and writes, each a bounded call of the store's public API (``list_namespaces``,
``count``, ``iter_items``, ``search``, ``get``, ``delete``, ``delete_namespace``): a page of items is
one call, never a whole namespace. Calls are made under one lock, so a store on a single connection
is never shared by two request threads at once."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from langgraph.store.base import Item, SearchItem

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.async_store import AsyncStore
from langmem_adapters.core.records import Cursor, StoredItem
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.memory.ranking import hybrid_of

__all__ = ["Browser", "ChildrenPage", "ItemsPage", "NamespaceNode", "SearchPage"]

#: Items on one page of a namespace, and children on one level of the tree.
PAGE_SIZE = 100
TREE_PAGE = 100


@dataclass(frozen=True)
class NamespaceNode:
    """A namespace in the tree and how many live items lie at or below it."""

    namespace: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class ChildrenPage:
    """One level of the tree under a prefix: up to ``TREE_PAGE`` children from ``offset``."""

    nodes: list[NamespaceNode]
    next_offset: int | None


@dataclass(frozen=True)
class ItemsPage:
    """A page of items in listing order (namespace text, then key) and where the next one starts."""

    items: list[StoredItem]
    next_cursor: Cursor | None


@dataclass(frozen=True)
class SearchPage:
    """A page of search results (with scores when ranked by a query) and the next page's offset."""

    hits: list[SearchItem]
    next_offset: int | None


def _just_before(key: str) -> str:
    """A key sorting just before ``key`` in code-point order, as a listing cursor: the last character
    decremented and followed by the largest code point, so no ordinary key falls in between."""
    if not key:
        return ""
    last = ord(key[-1]) - 1
    if last < 0:
        return key[:-1]
    if 0xD800 <= last <= 0xDFFF:  # surrogates cannot be stored; skip below them
        last = 0xD7FF
    return key[:-1] + chr(last) + "\U0010ffff"


class Browser:
    """A store as the UI reads and writes it: one lock, bounded store calls."""

    def __init__(self, store: SyncStore | AsyncStore, *, name: str) -> None:
        self.store = store
        self.name = name
        self._lock = threading.Lock()

    @property
    def search_mode(self) -> str:
        """How a query ranks on this store: ``hybrid``, ``vector`` or ``none`` (no index)."""
        if getattr(self.store, "index_spec", None) is None:
            return "none"
        return "hybrid" if hybrid_of(self.store) is not None else "vector"

    @contextlib.contextmanager
    def locked(self) -> Iterator[SyncStore | AsyncStore]:
        """The store, held for the caller's reads (the memory tiers' views)."""
        with self._lock:
            yield self.store

    def total(self) -> int:
        """Live items in the whole store."""
        with self._lock:
            return self.store.count(())

    def children(self, prefix: tuple[str, ...], offset: int = 0) -> ChildrenPage:
        """The namespaces one level below ``prefix`` (a page of them) with their item counts."""
        depth = len(prefix) + 1
        with self._lock:
            listed = self.store.list_namespaces(
                prefix=prefix or None, max_depth=depth, limit=TREE_PAGE + 1, offset=offset
            )
            below = [ns for ns in listed if len(ns) == depth]
            more = len(listed) > TREE_PAGE
            nodes = [NamespaceNode(ns, self.store.count(ns)) for ns in below[:TREE_PAGE]]
        return ChildrenPage(nodes, offset + TREE_PAGE if more else None)

    def count(self, prefix: tuple[str, ...]) -> int:
        """Live items at or below ``prefix``."""
        with self._lock:
            return self.store.count(prefix)

    def items(self, prefix: tuple[str, ...], after: Cursor | None = None) -> ItemsPage:
        """A page of the items at or below ``prefix`` after ``after``: one listing call reading
        ``PAGE_SIZE + 1`` items (the extra one only says whether there is a next page)."""
        with self._lock:
            read = list(
                islice(
                    self.store.iter_items(prefix, page_size=PAGE_SIZE + 1, after=after),
                    PAGE_SIZE + 1,
                )
            )
        page = read[:PAGE_SIZE]
        return ItemsPage(page, page[-1].cursor if len(read) > PAGE_SIZE else None)

    def search(
        self,
        prefix: tuple[str, ...],
        *,
        query: str | None,
        filter: Mapping[str, Any] | None,
        offset: int = 0,
    ) -> SearchPage:
        """A page of ``search`` results (ranked when ``query`` is given and the store has an index)."""
        with self._lock:
            hits = self.store.search(
                prefix,
                query=query,
                filter=dict(filter or {}) or None,
                limit=PAGE_SIZE + 1,
                offset=offset,
            )
        more = len(hits) > PAGE_SIZE
        return SearchPage(hits[:PAGE_SIZE], offset + PAGE_SIZE if more else None)

    def item(self, namespace: tuple[str, ...], key: str) -> Item | None:
        """The item at ``namespace``/``key`` (``None`` if absent), read without refreshing its TTL."""
        with self._lock:
            return self.store.get(namespace, key, refresh_ttl=False)

    def stored(self, namespace: tuple[str, ...], key: str) -> StoredItem | None:
        """The item with its expiry and TTL (which ``get`` does not return): a two-item listing page
        starting just before its key. On Redis a listing page reads the namespace's keys, so the
        item's page fetches this after it has loaded."""
        after = (nsp.join(namespace), _just_before(key))
        with self._lock:
            near = list(islice(self.store.iter_items(namespace, page_size=2, after=after), 2))
        return next((s for s in near if s.namespace == namespace and s.key == key), None)

    def namespaces_below(self, prefix: tuple[str, ...], limit: int) -> list[tuple[str, ...]]:
        """Up to ``limit`` namespaces at or below ``prefix`` (for a delete confirmation)."""
        with self._lock:
            return self.store.list_namespaces(prefix=prefix, limit=limit)

    def delete_item(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete one item."""
        with self._lock:
            self.store.delete(namespace, key)

    def delete_namespace(self, prefix: tuple[str, ...]) -> int:
        """Delete a namespace and everything below it; returns how many items went."""
        with self._lock:
            return self.store.delete_namespace(prefix)
