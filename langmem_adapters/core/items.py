"""Results as langgraph's ``Item`` / ``SearchItem``, built for the many rows a search returns."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langgraph.store.base import Item, SearchItem

__all__ = ["make_item", "make_search_item"]

_new = object.__new__


def make_item(
    namespace: tuple[str, ...], key: str, value: Any, created_at: datetime, updated_at: datetime
) -> Item:
    """``Item(...)`` from fields that already have their types: the same slots set, without
    ``__init__``'s conversions (a tuple copy, ISO-string parsing), which cost more than the rest."""
    item: Item = _new(Item)
    item.value, item.key, item.namespace = value, key, namespace
    item.created_at, item.updated_at = created_at, updated_at
    return item


def make_search_item(
    namespace: tuple[str, ...],
    key: str,
    value: Any,
    created_at: datetime,
    updated_at: datetime,
    score: float | None,
) -> SearchItem:
    """``SearchItem(...)`` built like :func:`make_item`."""
    item: SearchItem = _new(SearchItem)
    item.value, item.key, item.namespace = value, key, namespace
    item.created_at, item.updated_at, item.score = created_at, updated_at, score
    return item
