"""The export format: one JSON object per line, holding everything a lossless copy of an item needs.

A line is ``{"namespace": [...], "key": ..., "value": {...}, "created_at": ISO, "updated_at": ISO,
"expires_at": ISO or null, "ttl_minutes": number or null}``; timestamps are written in UTC, and read
back with any UTC offset (``Z`` too). Lines written by :func:`item_to_json` are stable byte for byte,
so two exports of equal stores compare equal as files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import IO, Any

from langmem_adapters.core.records import StoredItem, valid_ttl
from langmem_adapters.errors import InvalidRecordError

__all__ = ["item_from_json", "item_to_json", "read_items", "write_items"]

_REQUIRED = ("namespace", "key", "value", "created_at", "updated_at")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(timezone.utc).isoformat()


def _parse_time(value: Any, field: str, where: str) -> datetime:
    if not isinstance(value, str):
        raise InvalidRecordError(f"{where}: {field} must be an ISO timestamp, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRecordError(f"{where}: {field} is not an ISO timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise InvalidRecordError(f"{where}: {field} needs a UTC offset: {value!r}")
    return parsed


def item_to_json(item: StoredItem) -> str:
    """The export line of one item (no trailing newline)."""
    return json.dumps(
        {
            "namespace": list(item.namespace),
            "key": item.key,
            "value": item.value,
            "created_at": _iso(item.created_at),
            "updated_at": _iso(item.updated_at),
            "expires_at": _iso(item.expires_at),
            "ttl_minutes": item.ttl_minutes,
        },
        ensure_ascii=False,
        allow_nan=False,
    )


def item_from_json(line: str, where: str) -> StoredItem:
    """Parse an export line; ``where`` (e.g. ``"line 3"``) starts the message of any
    ``InvalidRecordError``, so the user can find the bad line."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidRecordError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InvalidRecordError(f"{where}: expected a JSON object, got {type(data).__name__}")
    missing = [field for field in _REQUIRED if field not in data]
    if missing:
        raise InvalidRecordError(f"{where}: missing {', '.join(missing)}")
    ns, key, value, ttl = data["namespace"], data["key"], data["value"], data.get("ttl_minutes")
    if not isinstance(ns, list) or not ns or not all(isinstance(x, str) and x for x in ns):
        raise InvalidRecordError(
            f"{where}: namespace must be a non-empty list of non-empty strings"
        )
    if not isinstance(key, str):
        raise InvalidRecordError(f"{where}: key must be a string")
    if not isinstance(value, dict):
        raise InvalidRecordError(f"{where}: value must be a JSON object")
    if not valid_ttl(ttl):
        raise InvalidRecordError(f"{where}: ttl_minutes must be a positive number or null")
    expires = data.get("expires_at")
    return StoredItem(
        namespace=tuple(ns),
        key=key,
        value=value,
        created_at=_parse_time(data["created_at"], "created_at", where),
        updated_at=_parse_time(data["updated_at"], "updated_at", where),
        expires_at=None if expires is None else _parse_time(expires, "expires_at", where),
        ttl_minutes=None if ttl is None else float(ttl),
    )


def read_items(lines: Iterable[str]) -> Iterator[StoredItem]:
    """The items of an export, lazily; blank lines are skipped, errors name the line (from 1)."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield item_from_json(line, f"line {number}")


def write_items(items: Iterable[StoredItem], out: IO[str]) -> int:
    """Write items as export lines to ``out``; returns how many."""
    count = 0
    for item in items:
        out.write(item_to_json(item) + "\n")
        count += 1
    return count
