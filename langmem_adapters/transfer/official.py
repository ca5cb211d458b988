"""Readers of the official LangGraph stores' data, as sources for a migration or an export.

- :class:`OfficialPostgresReader`: ``langgraph.store.postgres`` keeps items in the table ``store``
  (``prefix`` the namespace joined by ``"."``, ``key``, ``value`` jsonb, both timestamps,
  ``expires_at``, ``ttl_minutes``); read with plain SQL in ``(prefix, key)`` byte order, the same
  order as this package's stores.
- :class:`OfficialRedisReader`: ``langgraph.store.redis`` keeps items as JSON documents
  ``store:<ULID>`` holding ``prefix`` (RediSearch-escaped), ``key``, ``value``,
  ``created_at``/``updated_at`` in microseconds and ``ttl_minutes``; the expiry is the key's native
  TTL. Keys are listed once (SCAN) and read in sorted order, so a migration resumes after the last.

Both yield :class:`~langmem_adapters.core.records.StoredItem` pages (see
:class:`~langmem_adapters.transfer.source.Source`) and skip items that have expired. Their
failures are this package's errors naming the source (the driver's error as ``__cause__``): a
lost or refused connection ``StoreConnectionError``, an error the server answered
``ServerRefusedError`` (a table of another shape), a document without the official fields
``InvalidRecordError``.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import redis

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.records import StoredItem
from langmem_adapters.core.store import PAGE_SIZE
from langmem_adapters.errors import (
    InvalidRecordError,
    ServerRefusedError,
    StoreConnectionError,
    StoreError,
    first_line,
)
from langmem_adapters.transfer.source import Page, Position

__all__ = ["OfficialPostgresReader", "OfficialRedisReader"]

_LIVE = "(expires_at IS NULL OR expires_at > now())"
_UNESCAPE = re.compile(r"\\(.)")
#: The drivers' errors for a connection lost, refused or timed out.
_LOST = (psycopg.OperationalError, redis.ConnectionError, redis.TimeoutError)


@contextmanager
def _reading(name: str) -> Iterator[None]:
    """Report a driver's error while reading ``name`` as this package's, naming the source."""
    try:
        yield
    except _LOST as exc:
        raise StoreConnectionError(
            f"cannot read the official store in {name}: the connection failed ({first_line(exc)})"
        ) from exc
    except (psycopg.Error, redis.RedisError) as exc:
        raise ServerRefusedError(
            f"{name} refused a read of the official store ({type(exc).__name__}: {first_line(exc)})"
        ) from exc


class OfficialPostgresReader:
    """The official ``langgraph.store.postgres`` table ``store`` on ``conn`` (an autocommit
    connection); ``name`` says where it is in messages. Raises ``StoreError`` if there is no such
    table."""

    def __init__(self, conn: psycopg.Connection[Any], *, name: str = "the database") -> None:
        self.conn = conn
        self.name = name
        with _reading(name):
            row = conn.execute("SELECT to_regclass('store') IS NOT NULL").fetchone()
        if not (row and row[0]):
            raise StoreError(f"{name} has no official LangGraph store (no table 'store')")

    def count(self) -> int:
        """How many live items the table holds."""
        with _reading(self.name):
            row = self.conn.execute(f"SELECT count(*) FROM store WHERE {_LIVE}").fetchone()
        return int(row[0]) if row else 0

    def pages(self, after: Position | None = None, page_size: int = PAGE_SIZE) -> Iterator[Page]:
        """Live items in ``(prefix, key)`` byte order after ``after`` (``[prefix, key]``)."""
        cursor = list(after) if after else ["", ""]
        while True:
            with _reading(self.name):
                rows = self.conn.execute(
                    "SELECT prefix, key, value, coalesce(created_at, now()), "
                    f"coalesce(updated_at, now()), expires_at, ttl_minutes FROM store WHERE {_LIVE} "
                    'AND (prefix COLLATE "C", key COLLATE "C") > (%s, %s) '
                    'ORDER BY prefix COLLATE "C", key COLLATE "C" LIMIT %s',
                    [cursor[0], cursor[1], page_size],
                ).fetchall()
            if not rows:
                return
            cursor = [rows[-1][0], rows[-1][1]]
            items = [
                StoredItem(
                    namespace=nsp.split(prefix),
                    key=key,
                    value=value,
                    created_at=created,
                    updated_at=updated,
                    expires_at=expires,
                    ttl_minutes=None if ttl is None else float(ttl),
                )
                for prefix, key, value, created, updated, expires, ttl in rows
            ]
            yield items, cursor


class OfficialRedisReader:
    """The official ``langgraph.store.redis`` documents ``store:<ULID>`` on ``client``; ``name``
    says where they are in messages. The keys are listed when the reader is made."""

    def __init__(self, client: redis.Redis, *, name: str = "Redis") -> None:
        self.client = client
        self.name = name
        with _reading(name):
            self.keys = sorted(_text(k) for k in client.scan_iter(match="store:*", count=1000))

    def count(self) -> int:
        """How many documents were listed (some may have expired since)."""
        return len(self.keys)

    def pages(self, after: Position | None = None, page_size: int = PAGE_SIZE) -> Iterator[Page]:
        """Documents in key order after ``after`` (``[redis key]``); a page skips the documents that
        expired or went since the listing, so it may hold fewer items than keys."""
        keys = self.keys[bisect.bisect_right(self.keys, after[0]) :] if after else self.keys
        for start in range(0, len(keys), page_size):
            chunk = keys[start : start + page_size]
            pipe = self.client.pipeline(transaction=False)
            for key in chunk:
                pipe.execute_command("JSON.GET", key)
                pipe.pttl(key)
            with _reading(self.name):
                replies = pipe.execute(raise_on_error=False)
            items = []
            for key, doc, pttl in zip(chunk, replies[0::2], replies[1::2]):
                if isinstance(doc, Exception):
                    raise ServerRefusedError(
                        f"cannot read {key} from {self.name}: {first_line(doc)}"
                    ) from doc
                if doc is not None:  # None: expired or deleted since the listing
                    items.append(_document(key, doc, pttl, self.name))
            yield items, [chunk[-1]]


def _text(reply: Any) -> str:
    return reply.decode() if isinstance(reply, bytes) else str(reply)


def _document(key: str, doc: Any, pttl: Any, name: str) -> StoredItem:
    """The item of an official document, or ``InvalidRecordError`` naming the key when it is not
    one (not JSON, or without the official fields)."""
    try:
        return _item(json.loads(doc), int(pttl))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidRecordError(
            f"{key} in {name} is not an official LangGraph store document "
            f"({type(exc).__name__}: {first_line(exc)})"
        ) from exc


def _item(doc: dict[str, Any], pttl: int) -> StoredItem:
    """An official document (and its key's remaining TTL in ms) as a stored item."""

    def when(us: Any) -> datetime:
        return datetime.fromtimestamp(int(us) / 1_000_000, timezone.utc)

    ttl = doc.get("ttl_minutes")
    expires = (
        datetime.now(timezone.utc) + timedelta(milliseconds=pttl) if pttl and pttl > 0 else None
    )
    return StoredItem(
        namespace=tuple(_UNESCAPE.sub(r"\1", doc["prefix"]).split(".")),
        key=doc["key"],
        value=doc["value"],
        created_at=when(doc["created_at"]),
        updated_at=when(doc["updated_at"]),
        expires_at=expires,
        ttl_minutes=None if ttl is None else float(ttl),
    )
