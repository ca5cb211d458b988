"""``StoredItem``: one item with everything a lossless copy needs, as ``iter_items`` yields it and
``restore`` takes it.

Stores list items in one order on every backend: by the namespace's text form (labels joined by
``"."``), then by key, both compared code point by code point. ``StoredItem.cursor`` is the
position after an item in that order; ``iter_items(after=cursor)`` resumes there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.ops import (
    MAX_TTL_MINUTES,
    check_item_id,
    dump_value,
    validate_key,
    validate_namespace,
)
from langmem_adapters.errors import InvalidNamespaceError, InvalidRecordError

__all__ = ["Cursor", "StoredItem", "check_records", "cursor_of", "valid_ttl"]

Cursor = tuple[str, str]
"""A position in the listing order: ``(namespace text, key)`` of the last item read."""


@dataclass(frozen=True)
class StoredItem:
    """An item as stored: value, both timestamps, expiry (``None``: never) and TTL in minutes
    (``None``: none; with one, reads that refresh extend the expiry by it)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    ttl_minutes: float | None = None

    @property
    def cursor(self) -> Cursor:
        """The listing position just after this item, for ``iter_items(after=...)``."""
        return (nsp.join(self.namespace), self.key)


def cursor_of(after: Any) -> Cursor:
    """``after`` of ``iter_items`` as a cursor: ``None`` (from the start), a ``StoredItem`` or a
    ``(namespace text, key)`` pair (a list too, as it comes back from JSON)."""
    if after is None:
        return ("", "")
    if isinstance(after, StoredItem):
        return after.cursor
    if (
        isinstance(after, (tuple, list))
        and len(after) == 2
        and all(isinstance(part, str) for part in after)
    ):
        return (after[0], after[1])
    raise InvalidRecordError(
        f"after must be None, a StoredItem or a (namespace text, key) cursor, got {after!r}"
    )


def _aware(value: Any, what: str, where: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidRecordError(f"{where}: {what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidRecordError(f"{where}: {what} must be timezone-aware, got {value!r}")
    return value


def valid_ttl(ttl: Any) -> bool:
    """Whether ``ttl`` can be a record's ``ttl_minutes``: ``None`` or a positive, finite number (not
    a bool, which is an int to Python but true/false to JSON), at most ``MAX_TTL_MINUTES``."""
    return ttl is None or (
        not isinstance(ttl, bool) and isinstance(ttl, (int, float)) and 0 < ttl <= MAX_TTL_MINUTES
    )


def check_records(records: Iterable[StoredItem]) -> list[tuple[StoredItem, str]]:
    """Validate records for ``restore`` before any I/O; each comes back with its value's JSON text.

    A later record for the same item replaces an earlier one, as in a batch of puts.
    """
    checked: dict[tuple[tuple[str, ...], str], tuple[StoredItem, str]] = {}
    for i, record in enumerate(records):
        where = f"record {i}"
        if not isinstance(record, StoredItem):
            raise InvalidRecordError(f"{where}: expected a StoredItem, got {type(record).__name__}")
        ns = record.namespace
        if not isinstance(ns, tuple):
            raise InvalidRecordError(f"{where}: namespace must be a tuple of labels, got {ns!r}")
        try:  # not empty, non-empty string labels without "." (langgraph's rules for a write)
            validate_namespace(ns)
        except InvalidNamespaceError as exc:
            raise InvalidRecordError(f"{where}: {exc}") from None
        validate_key(record.key)
        check_item_id(ns, record.key)
        if not isinstance(record.value, Mapping):
            raise InvalidRecordError(
                f"{where}: value must be a dict, got {type(record.value).__name__}"
            )
        value_json = dump_value(record.value)
        _aware(record.created_at, "created_at", where)
        _aware(record.updated_at, "updated_at", where)
        if record.expires_at is not None:
            _aware(record.expires_at, "expires_at", where)
        if not valid_ttl(record.ttl_minutes):
            raise InvalidRecordError(f"{where}: ttl_minutes must be a positive number or None")
        checked[(ns, record.key)] = (record, value_json)
    return list(checked.values())
