"""The ``langmem-adapters`` command (also ``python -m langmem_adapters``).

Sub-commands:

- ``demo``: an agent with memory tools on the embedded PostgreSQL (or ``--store URL``), offline by
  default with a scripted model; ``--model provider:name`` uses a real chat model.
- ``inspect URL``: namespace tree with item counts, the items under a namespace, or a search.
- ``export URL`` / ``import URL``: every item as JSON lines (namespace, key, value, timestamps, TTL).
- ``migrate --from URL --to URL``: copy everything between stores, resumably, re-embedding for the
  target's index; also reads the official LangGraph Postgres and Redis stores' data.
- ``sweep URL``: delete expired items now and report how many went.

URLs: ``postgresql://`` / ``postgres://`` (this package's ``PostgresStore``; add
``?table_prefix=NAME`` for a store made with another ``table_prefix``), ``redis://`` / ``rediss://``
(this package's ``RedisStore``), ``embedded`` or ``embedded:PATH`` (the embedded PostgreSQL and its
data directory), and, as sources for ``migrate`` and ``export`` only, ``official+postgresql://...``
(the official ``langgraph.store.postgres`` table ``store``) and ``official+redis://...`` (the official
``langgraph.store.redis`` JSON documents ``store:<ULID>``).

A user mistake (bad URL, server down, unknown namespace, malformed input) is reported as one line
``error: ...`` on stderr with exit code 2 for bad usage and 1 for everything else; never a traceback.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import hashlib
import json
import re
import sys
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Any, Literal, TextIO
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import redis
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.store.base import BaseStore, PutOp
from platformdirs import user_state_dir
from pydantic import Field
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.tree import Tree

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import StoreError
from langmem_adapters.memory import SemanticMemory
from langmem_adapters.postgres.embedded import default_data_dir, embedded_dsn
from langmem_adapters.postgres.queries import Tables
from langmem_adapters.postgres.store import CONNECT_KWARGS, PostgresStore
from langmem_adapters.redis import RedisStore

__all__ = ["CLIError", "Record", "main"]

#: Seconds to wait for a server before reporting it unreachable.
CONNECT_TIMEOUT = 5
#: Items per read page and per write batch.
PAGE = 500
USAGE, FAILURE = 2, 1


class CLIError(Exception):
    """A problem to report as one ``error:`` line; ``code`` is the exit status (2 usage, 1 runtime)."""

    def __init__(self, message: str, code: int = FAILURE) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- locations (URLs)


@dataclass(frozen=True)
class Location:
    """A parsed store URL: what kind of store, how to connect, and a password-free name for messages."""

    kind: str  # "postgres" | "redis" | "official-postgres" | "official-redis"
    url: str  # connection string; "" for the embedded server (started on open)
    display: str
    data_dir: Path | None = None
    table_prefix: str = "langmem"

    @property
    def official(self) -> bool:
        return self.kind.startswith("official-")

    def dsn(self) -> str:
        """The PostgreSQL connection string, starting the embedded server if this is one."""
        if self.data_dir is None:
            return self.url
        try:
            return embedded_dsn(self.data_dir)
        except ImportError as exc:
            raise CLIError(str(exc)) from None
        except Exception as exc:  # pgserver reports initdb/start failures with various types
            raise CLIError(
                f"cannot start the embedded PostgreSQL in {self.data_dir}: {_first_line(exc)}"
            ) from None


def _mask(url: str) -> str:
    """The URL without its password, for messages and checkpoint files."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def parse_location(url: str) -> Location:
    """Parse a store URL (see the module docstring); raises ``CLIError`` (usage) for anything else."""
    if url == "embedded" or url.startswith("embedded:"):
        path = (
            Path(url[len("embedded:") :]).expanduser() if url != "embedded" else default_data_dir()
        )
        if not str(path):
            raise CLIError("embedded:PATH needs a directory, e.g. embedded:./memory-db", USAGE)
        return Location("postgres", "", f"embedded:{path}", data_dir=path)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    official = scheme.startswith("official+")
    base = scheme.removeprefix("official+")
    plain_url = url[len("official+") :] if official else url
    if base in ("postgresql", "postgres"):
        parts = urlsplit(plain_url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        prefix = next((v for k, v in query if k == "table_prefix"), "langmem")
        if official and prefix != "langmem":
            raise CLIError(
                "table_prefix does not apply to official+postgresql:// (its table is 'store')",
                USAGE,
            )
        try:
            Tables(prefix)
        except ValueError as exc:
            raise CLIError(str(exc), USAGE) from None
        conn_url = urlunsplit(
            parts._replace(query=urlencode([(k, v) for k, v in query if k != "table_prefix"]))
        )
        kind = "official-postgres" if official else "postgres"
        return Location(kind, conn_url, _mask(url), table_prefix=prefix)
    if base in ("redis", "rediss"):
        parts = urlsplit(plain_url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        prefix = next((v for k, v in query if k == "prefix"), "langmem")
        if official and prefix != "langmem":
            raise CLIError(
                "prefix does not apply to official+redis:// (its keys are store:<ULID>)", USAGE
            )
        conn_url = urlunsplit(
            parts._replace(query=urlencode([(k, v) for k, v in query if k != "prefix"]))
        )
        return Location(
            "official-redis" if official else "redis", conn_url, _mask(url), table_prefix=prefix
        )
    raise CLIError(
        f"unsupported store URL {_mask(url)!r}: use postgresql://..., redis://..., embedded[:PATH], "
        "or official+postgresql:// / official+redis:// as a migrate source",
        USAGE,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


# --------------------------------------------------------------------------- records


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(timezone.utc).isoformat()


def _parse_time(value: Any, field: str, where: str) -> datetime:
    if not isinstance(value, str):
        raise CLIError(f"{where}: {field} must be an ISO timestamp, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise CLIError(f"{where}: {field} is not an ISO timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise CLIError(f"{where}: {field} needs a UTC offset: {value!r}")
    return parsed


@dataclass(frozen=True)
class Record:
    """One item with everything a lossless copy needs: the export format, one JSON object per line."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    ttl_minutes: float | None = None

    def to_json(self) -> str:
        """The export line (no trailing newline)."""
        return json.dumps(
            {
                "namespace": list(self.namespace),
                "key": self.key,
                "value": self.value,
                "created_at": _iso(self.created_at),
                "updated_at": _iso(self.updated_at),
                "expires_at": _iso(self.expires_at),
                "ttl_minutes": self.ttl_minutes,
            },
            ensure_ascii=False,
            allow_nan=False,
        )

    @classmethod
    def from_json(cls, line: str, where: str) -> Record:
        """Parse an export line; ``where`` (e.g. ``"line 3"``) prefixes any error."""
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CLIError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise CLIError(f"{where}: expected a JSON object, got {type(data).__name__}")
        missing = [
            f for f in ("namespace", "key", "value", "created_at", "updated_at") if f not in data
        ]
        if missing:
            raise CLIError(f"{where}: missing {', '.join(missing)}")
        ns, key, value, ttl = data["namespace"], data["key"], data["value"], data.get("ttl_minutes")
        if not isinstance(ns, list) or not ns or not all(isinstance(x, str) and x for x in ns):
            raise CLIError(f"{where}: namespace must be a non-empty list of non-empty strings")
        if not isinstance(key, str):
            raise CLIError(f"{where}: key must be a string")
        if not isinstance(value, dict):
            raise CLIError(f"{where}: value must be a JSON object")
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0
        ):
            raise CLIError(f"{where}: ttl_minutes must be a positive number or null")
        expires = data.get("expires_at")
        return cls(
            namespace=tuple(ns),
            key=key,
            value=value,
            created_at=_parse_time(data["created_at"], "created_at", where),
            updated_at=_parse_time(data["updated_at"], "updated_at", where),
            expires_at=None if expires is None else _parse_time(expires, "expires_at", where),
            ttl_minutes=None if ttl is None else float(ttl),
        )


Cursor = list[Any]
"""Where a source's sorted read order stands (JSON-serialisable, kept in migrate checkpoints)."""


# --------------------------------------------------------------------------- backends


class Source:
    """Something whose items can be read in a stable order, page by page, resumably."""

    location: Location

    def count(self) -> int:
        """How many live items there are (for progress bars)."""
        raise NotImplementedError

    def pages(
        self, after: Cursor | None = None, size: int = PAGE
    ) -> Iterator[tuple[Cursor, list[Record]]]:
        """Live items in the source's order, after ``after``; each page comes with its last cursor."""
        raise NotImplementedError


class Backend(Source):
    """One of this package's stores: readable, writable with timestamps kept, searchable, sweepable."""

    store: BaseStore

    def write(self, records: Sequence[Record]) -> None:
        """Upsert records keeping their timestamps and expiry; vectors are computed for the index."""
        raise NotImplementedError

    def sweep(self) -> int:
        """Delete expired items now; returns how many."""
        raise NotImplementedError

    def namespace_counts(self) -> dict[tuple[str, ...], int]:
        """Live items per namespace (only namespaces that hold items)."""
        counts: Counter[tuple[str, ...]] = Counter()
        for _, page in self.pages():
            counts.update(r.namespace for r in page)
        return dict(counts)


def _ns_split(text: str) -> tuple[str, ...]:
    return tuple(text.split(".")) if text else ()


class PostgresBackend(Backend):
    """This package's ``PostgresStore``: reads and timestamp fixes go straight to its tables."""

    store: PostgresStore

    def __init__(
        self, location: Location, conn: psycopg.Connection[Any], store: PostgresStore
    ) -> None:
        self.location = location
        self.conn = conn
        self.store = store
        self.tables = store.tables

    def has_tables(self) -> bool:
        row = self.conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", [self.tables.store]
        ).fetchone()
        return bool(row and row[0])

    def has_vectors(self) -> bool:
        spec = self.store.index_spec
        if spec is None:
            return True
        row = self.conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", [self.tables.vectors(spec)]
        ).fetchone()
        return bool(row and row[0])

    _LIVE = "(expires_at IS NULL OR expires_at > now())"

    def count(self) -> int:
        row = self.conn.execute(
            f"SELECT count(*) FROM {self.tables.store} WHERE {self._LIVE}"
        ).fetchone()
        return int(row[0]) if row else 0

    def namespace_counts(self) -> dict[tuple[str, ...], int]:
        rows = self.conn.execute(
            f"SELECT ns, count(*) FROM {self.tables.store} WHERE {self._LIVE} GROUP BY ns ORDER BY ns"
        ).fetchall()
        return {_ns_split(ns): int(n) for ns, n in rows}

    def pages(
        self, after: Cursor | None = None, size: int = PAGE
    ) -> Iterator[tuple[Cursor, list[Record]]]:
        cursor = list(after) if after else ["", ""]
        while True:
            rows = self.conn.execute(
                f"SELECT ns, key, value, created_at, updated_at, expires_at, ttl_minutes "
                f"FROM {self.tables.store} WHERE {self._LIVE} AND (ns, key) > (%s, %s) "
                f"ORDER BY ns, key LIMIT %s",
                [cursor[0], cursor[1], size],
            ).fetchall()
            if not rows:
                return
            cursor = [rows[-1][0], rows[-1][1]]
            yield (
                cursor,
                [Record(_ns_split(r[0]), r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows],
            )

    def write(self, records: Sequence[Record]) -> None:
        if not records:
            return
        index: Literal[False] | None = None if self.store.index_spec is not None else False
        ops = [PutOp(r.namespace, r.key, r.value, index=index, ttl=r.ttl_minutes) for r in records]
        with self.conn.transaction():
            self.store.batch(ops)
            self.conn.execute(
                f"UPDATE {self.tables.store} s SET created_at = r.c, updated_at = r.u, expires_at = r.e, "
                f"ttl_minutes = r.t FROM unnest(%s::text[], %s::text[], %s::timestamptz[], %s::timestamptz[], "
                f"%s::timestamptz[], %s::float8[]) AS r(ns, key, c, u, e, t) WHERE s.ns = r.ns AND s.key = r.key",
                [
                    [".".join(r.namespace) for r in records],
                    [r.key for r in records],
                    [r.created_at for r in records],
                    [r.updated_at for r in records],
                    [r.expires_at for r in records],
                    [r.ttl_minutes for r in records],
                ],
            )

    def sweep(self) -> int:
        return self.store.sweep_ttl()


class RedisBackend(Backend):
    """This package's ``RedisStore``: items are read from its namespace registry and per-namespace
    ZSETs; after a normal (embedding) put, timestamps and expiry are set on the item's fields.

    This follows the key layout documented in :mod:`langmem_adapters.redis.plan` (``m`` the item's
    JSON with ``u`` updated µs and ``l`` TTL minutes, ``c`` created µs, ``x`` expiry ms).
    """

    store: RedisStore

    def __init__(self, location: Location, store: RedisStore) -> None:
        from langmem_adapters.redis.plan import NO_EXPIRY

        self.location = location
        self.store = store
        self.client: redis.Redis = store.client
        self.keys = store.keys
        self.query_engine = store.mode == "query_engine"
        self.no_expiry = NO_EXPIRY

    def _now_ms(self) -> int:
        return int(datetime.now(timezone.utc).timestamp() * 1000)

    def _item_keys(self, ns_text: str) -> list[str]:
        """Live item keys of a namespace, sorted."""
        members = self.client.zrangebyscore(self.keys.zset(ns_text), f"({self._now_ms()}", "+inf")
        start = len(self.keys.item(ns_text, ""))
        return sorted(_text(m)[start:] for m in members)

    def _namespaces(self) -> list[str]:
        return sorted(_text(n) for n in self.client.zrange(self.keys.registry, 0, -1))

    def count(self) -> int:
        return sum(len(self._item_keys(ns)) for ns in self._namespaces())

    def pages(
        self, after: Cursor | None = None, size: int = PAGE
    ) -> Iterator[tuple[Cursor, list[Record]]]:
        wanted: list[tuple[str, str]] = []
        for ns in self._namespaces():
            if after and ns < after[0]:
                continue
            keys = self._item_keys(ns)
            if after and ns == after[0]:
                keys = keys[bisect.bisect_right(keys, after[1]) :]
            wanted += [(ns, k) for k in keys]
        for start in range(0, len(wanted), size):
            chunk = wanted[start : start + size]
            pipe = self.client.pipeline(transaction=False)
            for ns, key in chunk:
                pipe.hmget(self.keys.item(ns, key), "m", "c", "x")
            records = [r for r in map(self._record, pipe.execute()) if r is not None]
            yield [chunk[-1][0], chunk[-1][1]], records

    def _record(self, reply: Any) -> Record | None:
        meta, created, x = reply
        if meta is None:
            return None
        m = json.loads(meta)
        expires = (
            None
            if int(x) >= self.no_expiry
            else datetime.fromtimestamp(int(x) / 1000, timezone.utc)
        )
        return Record(
            namespace=tuple(m["ns"]),
            key=m["k"],
            value=m["v"],
            created_at=_from_us(int(created)),
            updated_at=_from_us(int(m["u"])),
            expires_at=expires,
            ttl_minutes=m["l"],
        )

    def write(self, records: Sequence[Record]) -> None:
        if not records:
            return
        index: Literal[False] | None = None if self.store.index_spec is not None else False
        self.store.batch(
            [PutOp(r.namespace, r.key, r.value, index=index, ttl=r.ttl_minutes) for r in records]
        )
        names = [(".".join(r.namespace), r.key) for r in records]
        pipe = self.client.pipeline(transaction=False)
        for ns, key in names:
            pipe.hmget(self.keys.item(ns, key), "m", "h")
        stored = pipe.execute()
        pipe = self.client.pipeline(transaction=True)
        for r, (ns, key), (m_raw, h_raw) in zip(records, names, stored):
            m = json.loads(m_raw)
            m["u"], m["l"] = _to_us(r.updated_at), r.ttl_minutes
            meta, created = json.dumps(m, ensure_ascii=False), _to_us(r.created_at)
            x = self.no_expiry if r.expires_at is None else int(r.expires_at.timestamp() * 1000)
            item = self.keys.item(ns, key)
            fields: dict[Any, str | int] = {"m": meta, "c": created, "x": x}
            targets = [item]
            if self.query_engine:
                fields["u"] = m["u"]
                if h_raw and json.loads(h_raw):  # a vector document: same expiry
                    targets.append(self.keys.vectors(ns, key))
            pipe.hset(item, mapping=fields)
            for target in targets:
                if r.expires_at is None:
                    pipe.persist(target)
                else:
                    pipe.pexpireat(target, x)
            pipe.zadd(self.keys.zset(ns), {item: x})
        pipe.execute()

    def sweep(self) -> int:
        return int(self.store.sweep_ttl())


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _text(reply: Any) -> str:
    return reply.decode() if isinstance(reply, bytes) else str(reply)


def _from_us(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def _to_us(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(microseconds=1)


class OfficialPostgresSource(Source):
    """The official ``langgraph.store.postgres`` data: its table ``store``, read with plain SQL."""

    _LIVE = "(expires_at IS NULL OR expires_at > now())"

    def __init__(self, location: Location, conn: psycopg.Connection[Any]) -> None:
        self.location = location
        self.conn = conn
        row = conn.execute("SELECT to_regclass('store') IS NOT NULL").fetchone()
        if not (row and row[0]):
            raise CLIError(f"{location.display} has no official LangGraph store (no table 'store')")

    def count(self) -> int:
        row = self.conn.execute(f"SELECT count(*) FROM store WHERE {self._LIVE}").fetchone()
        return int(row[0]) if row else 0

    def pages(
        self, after: Cursor | None = None, size: int = PAGE
    ) -> Iterator[tuple[Cursor, list[Record]]]:
        cursor = list(after) if after else ["", ""]
        while True:
            rows = self.conn.execute(
                "SELECT prefix, key, value, coalesce(created_at, now()), coalesce(updated_at, now()), "
                f"expires_at, ttl_minutes FROM store WHERE {self._LIVE} "
                'AND (prefix COLLATE "C", key COLLATE "C") > (%s, %s) '
                'ORDER BY prefix COLLATE "C", key COLLATE "C" LIMIT %s',
                [cursor[0], cursor[1], size],
            ).fetchall()
            if not rows:
                return
            cursor = [rows[-1][0], rows[-1][1]]
            yield (
                cursor,
                [
                    Record(
                        _ns_split(r[0]),
                        r[1],
                        r[2],
                        r[3],
                        r[4],
                        r[5],
                        None if r[6] is None else float(r[6]),
                    )
                    for r in rows
                ],
            )


_UNESCAPE = re.compile(r"\\(.)")


class OfficialRedisSource(Source):
    """The official ``langgraph.store.redis`` data: JSON documents ``store:<ULID>`` (SCAN + JSON.GET).

    Documents hold ``prefix`` (the namespace joined by ``"."``, RediSearch-escaped), ``key``,
    ``value``, ``created_at``/``updated_at`` (microseconds) and ``ttl_minutes``; expiry is the
    key's native TTL. Keys are read in sorted order, so a migration can resume after the last one.
    """

    def __init__(self, location: Location, client: redis.Redis) -> None:
        self.location = location
        self.client = client
        self._keys = sorted(_text(k) for k in client.scan_iter(match="store:*", count=1000))

    def count(self) -> int:
        return len(self._keys)

    def pages(
        self, after: Cursor | None = None, size: int = PAGE
    ) -> Iterator[tuple[Cursor, list[Record]]]:
        keys = self._keys[bisect.bisect_right(self._keys, after[0]) :] if after else self._keys
        for start in range(0, len(keys), size):
            chunk = keys[start : start + size]
            pipe = self.client.pipeline(transaction=False)
            for k in chunk:
                pipe.execute_command("JSON.GET", k)
                pipe.pttl(k)
            replies = pipe.execute(raise_on_error=False)
            records = []
            for k, doc, pttl in zip(chunk, replies[0::2], replies[1::2]):
                if isinstance(doc, Exception):
                    raise CLIError(
                        f"cannot read {k} from {self.location.display}: {_first_line(doc)}"
                    )
                if doc is None:  # expired or deleted since the scan
                    continue
                records.append(self._record(json.loads(doc), pttl))
            yield [chunk[-1]], records

    @staticmethod
    def _record(doc: dict[str, Any], pttl: int) -> Record:
        def when(us: Any) -> datetime:
            return datetime.fromtimestamp(int(us) / 1_000_000, timezone.utc)

        ttl = doc.get("ttl_minutes")
        expires = (
            datetime.now(timezone.utc) + timedelta(milliseconds=pttl) if pttl and pttl > 0 else None
        )
        return Record(
            namespace=tuple(_UNESCAPE.sub(r"\1", doc["prefix"]).split(".")),
            key=doc["key"],
            value=doc["value"],
            created_at=when(doc["created_at"]),
            updated_at=when(doc["updated_at"]),
            expires_at=expires,
            ttl_minutes=None if ttl is None else float(ttl),
        )


# --------------------------------------------------------------------------- opening stores


def parse_embed(spec: str | None, fields: Sequence[str] | None = None) -> dict[str, Any] | None:
    """``--embed``: ``none``, ``hash`` / ``hash:DIMS`` (offline) or ``provider:model`` (LangChain).

    Returns an IndexConfig for the store, or ``None`` for no index.
    """
    if spec is None or spec == "none":
        return None
    embeddings: Embeddings
    if spec == "hash" or spec.startswith("hash:"):
        dims_text = spec[5:] or "64"
        if not dims_text.isdigit() or int(dims_text) <= 0:
            raise CLIError(f"--embed hash:DIMS needs a positive integer, got {spec!r}", USAGE)
        embeddings = HashEmbeddings(int(dims_text))
        dims = int(dims_text)
    else:
        if ":" not in spec:
            raise CLIError(
                f"--embed must be none, hash[:DIMS] or provider:model, got {spec!r}", USAGE
            )
        try:
            from langchain.embeddings import init_embeddings

            embeddings = init_embeddings(spec)
            dims = len(embeddings.embed_query("dimension probe"))
        except ImportError as exc:
            raise CLIError(
                f"--embed {spec} needs LangChain and the provider's package (pip install "
                f"langchain langchain-<provider>): {_first_line(exc)}"
            ) from None
        except Exception as exc:  # provider packages raise their own types for missing keys etc.
            raise CLIError(f"cannot use embeddings {spec!r}: {_first_line(exc)}") from None
    return {"dims": dims, "embed": embeddings, "fields": list(fields or ["$"])}


@contextlib.contextmanager
def open_source(location: Location) -> Iterator[Source]:
    """A readable source for ``export`` and ``migrate --from`` (this package's stores or official data)."""
    if location.kind == "official-postgres":
        with psycopg.connect(
            location.url, connect_timeout=CONNECT_TIMEOUT, autocommit=True
        ) as conn:
            yield OfficialPostgresSource(location, conn)
    elif location.kind == "official-redis":
        client = redis.Redis.from_url(location.url, socket_connect_timeout=CONNECT_TIMEOUT)
        try:
            yield OfficialRedisSource(location, client)
        finally:
            client.close()
    else:
        with open_backend(location) as backend:
            yield backend


@contextlib.contextmanager
def open_backend(
    location: Location, index: dict[str, Any] | None = None, *, create: bool = False
) -> Iterator[Backend]:
    """One of this package's stores at ``location``; ``create`` sets up the schema, else it must exist."""
    if location.official:
        raise CLIError(
            f"{location.display}: official stores can only be read (migrate --from, export)", USAGE
        )
    if location.kind == "redis":
        with _open_redis(location, index, create=create) as backend:
            yield backend
        return
    with psycopg.connect(location.dsn(), connect_timeout=CONNECT_TIMEOUT, **CONNECT_KWARGS) as conn:
        store = PostgresStore(conn, index=index, table_prefix=location.table_prefix)  # type: ignore[arg-type]
        backend = PostgresBackend(location, conn, store)
        if create:
            store.setup()
        elif not backend.has_tables():
            raise CLIError(
                f"{location.display} holds no langmem store (no table {store.tables.store})"
            )
        elif not backend.has_vectors():
            store.setup()  # the vector table for this embedder size; harmless on an existing store
        yield backend


@contextlib.contextmanager
def _open_redis(
    location: Location, index: dict[str, Any] | None, *, create: bool
) -> Iterator[Backend]:
    client = redis.Redis.from_url(location.url, socket_connect_timeout=CONNECT_TIMEOUT)
    try:
        store = RedisStore(client, index=index, prefix=location.table_prefix)  # type: ignore[arg-type]
        if not create and not client.exists(store.keys.mode):
            raise CLIError(f"{location.display} holds no langmem store (no key {store.keys.mode})")
        store.setup()
        yield RedisBackend(location, store)
    finally:
        client.close()


# --------------------------------------------------------------------------- output helpers


@dataclass
class Ctx:
    """What every command gets: consoles for results (stdout) and messages/progress (stderr)."""

    out: Console
    err: Console
    quiet: bool = False

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A progress bar on stderr (nothing when quiet); yields ``advance(n)``."""
        if self.quiet:
            yield lambda n: None
            return
        columns = [
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        ]
        with Progress(*columns, console=self.err, transient=False) as bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)

    def note(self, message: str) -> None:
        if not self.quiet:
            self.err.print(message, highlight=False)


def _parse_namespace(text: str | None) -> tuple[str, ...]:
    """``--namespace``: labels joined by ``"."`` (``users.ada``) or a JSON list (``["users","ada"]``)."""
    if not text:
        return ()
    if text.startswith("["):
        try:
            labels = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CLIError(f"--namespace is not a JSON list: {exc.msg}", USAGE) from None
        if not isinstance(labels, list) or not all(isinstance(x, str) and x for x in labels):
            raise CLIError("--namespace as JSON must be a list of non-empty strings", USAGE)
        return tuple(labels)
    labels = text.split(".")
    if not all(labels):
        raise CLIError(f"--namespace {text!r} has an empty label", USAGE)
    return tuple(labels)


def _parse_filter(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(
            f'--filter is not valid JSON: {exc.msg} (e.g. \'{{"kind": "fact"}}\')', USAGE
        ) from None
    if not isinstance(value, dict):
        raise CLIError('--filter must be a JSON object, e.g. \'{"kind": "fact"}\'', USAGE)
    return value


def _short(value: Any, width: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- inspect


def cmd_inspect(args: argparse.Namespace, ctx: Ctx) -> int:
    """Namespace tree, the items under ``--namespace``, or a search (``--query``/``--filter``)."""
    location = parse_location(args.url)
    namespace = _parse_namespace(args.namespace)
    filter_ = _parse_filter(args.filter)
    index = parse_embed(args.embed)
    if args.limit <= 0:
        raise CLIError("--limit must be positive", USAGE)
    with open_backend(location, index) as backend:
        counts = backend.namespace_counts()
        if not namespace and args.query is None and filter_ is None and not args.items:
            _print_tree(ctx, location, counts, args.json)
            return 0
        under = sum(n for ns, n in counts.items() if ns[: len(namespace)] == namespace)
        if namespace and not under:
            raise CLIError(
                f"unknown namespace {'.'.join(namespace)!r} in {location.display} "
                f"(run 'langmem-adapters inspect {args.url}' to see the tree)"
            )
        if args.query is not None and index is None:
            ctx.note(
                "note: no --embed given, so --query cannot rank by similarity; "
                "pass the embedder the items were indexed with (e.g. --embed hash:64)"
            )
        hits = backend.store.search(namespace, query=args.query, filter=filter_, limit=args.limit)
    rows = [
        {
            "namespace": list(h.namespace),
            "key": h.key,
            "value": h.value,
            "created_at": _iso(h.created_at),
            "updated_at": _iso(h.updated_at),
            **({"score": h.score} if h.score is not None else {}),
        }
        for h in hits
    ]
    if args.json:
        ctx.out.print_json(data={"namespace": list(namespace), "total": under, "items": rows})
        return 0
    title = f"{'.'.join(namespace) or '(all namespaces)'}: {len(rows)} of {under} item(s)"
    if args.query is not None:
        title += f" for query {args.query!r}"
    table = Table(title=title, title_justify="left")
    table.add_column("namespace", max_width=24, no_wrap=True, overflow="ellipsis")
    table.add_column("key", max_width=12, no_wrap=True, overflow="ellipsis")
    table.add_column("value", min_width=30, ratio=1, overflow="fold")
    table.add_column("updated (UTC)", no_wrap=True)
    if args.query is not None:
        table.add_column("score", no_wrap=True)
    for h in hits:
        cells = [
            ".".join(h.namespace),
            h.key,
            _short(h.value, 160),
            h.updated_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M"),
        ]
        if args.query is not None:
            cells.append("" if h.score is None else f"{h.score:.3f}")
        table.add_row(*(escape(c) for c in cells))
    ctx.out.print(table)
    return 0


def _print_tree(
    ctx: Ctx, location: Location, counts: dict[tuple[str, ...], int], as_json: bool
) -> None:
    total = sum(counts.values())
    if as_json:
        ctx.out.print_json(
            data={
                "store": location.display,
                "total": total,
                "namespaces": [
                    {"namespace": list(ns), "items": n} for ns, n in sorted(counts.items())
                ],
            }
        )
        return
    below: Counter[tuple[str, ...]] = Counter()
    for ns, n in counts.items():
        for depth in range(1, len(ns) + 1):
            below[ns[:depth]] += n
    ctx.out.print(
        f"[bold]{escape(location.display)}[/] — {total} item(s) in {len(counts)} namespace(s)"
    )
    tree = Tree("", hide_root=True)
    nodes: dict[tuple[str, ...], Tree] = {(): tree}
    for prefix in sorted(below):
        own = counts.get(prefix, 0)
        label = f"{escape(prefix[-1])} [dim]({below[prefix]}"
        label += f", {own} here)[/]" if own and own != below[prefix] else ")[/]"
        nodes[prefix] = nodes[prefix[:-1]].add(label)
    ctx.out.print(tree)


# --------------------------------------------------------------------------- export / import


def cmd_export(args: argparse.Namespace, ctx: Ctx) -> int:
    """Write every live item as one JSON line (stdout or ``--output``)."""
    location = parse_location(args.url)
    with open_source(location) as source, _open_output(args.output) as out:
        n = 0
        with ctx.progress("exporting", source.count()) as advance:
            for _, page in source.pages():
                out.writelines(r.to_json() + "\n" for r in page)
                n += len(page)
                advance(len(page))
    ctx.note(f"exported {n} item(s) from {location.display}")
    return 0


@contextlib.contextmanager
def _open_output(path: str | None) -> Iterator[IO[str]]:
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below, after the caller's work
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror}") from None
    with f:
        yield f


def _read_records(lines: Iterable[str]) -> Iterator[Record]:
    for n, line in enumerate(lines, start=1):
        if line.strip():
            yield Record.from_json(line, f"line {n}")


def _chunks(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    chunk: list[Record] = []
    for r in records:
        chunk.append(r)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def cmd_import(args: argparse.Namespace, ctx: Ctx) -> int:
    """Upsert JSON lines (stdin or ``--input``) into a store, keeping timestamps and TTLs."""
    location = parse_location(args.url)
    index = parse_embed(args.embed, _fields(args.fields))
    stream: TextIO
    total: int | None = None
    if args.input in (None, "-"):
        stream = sys.stdin
    else:
        try:
            with open(args.input, "rb") as f:
                total = sum(1 for line in f if line.strip())
            stream = open(args.input, encoding="utf-8")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise CLIError(f"cannot read {args.input}: {exc.strerror}") from None
    n = 0
    try:
        with (
            open_backend(location, index, create=True) as backend,
            ctx.progress("importing", total) as advance,
        ):
            for chunk in _chunks(_read_records(stream), args.batch_size):
                backend.write(chunk)
                n += len(chunk)
                advance(len(chunk))
    finally:
        if stream is not sys.stdin:
            stream.close()
    ctx.note(f"imported {n} item(s) into {location.display}")
    return 0


def _fields(text: str | None) -> list[str] | None:
    return [f.strip() for f in text.split(",") if f.strip()] if text else None


# --------------------------------------------------------------------------- migrate


def _checkpoint_path(args: argparse.Namespace) -> Path:
    if args.checkpoint:
        return Path(args.checkpoint)
    digest = hashlib.sha256(f"{args.source}\n{args.target}".encode()).hexdigest()[:16]
    return Path(user_state_dir("langmem-adapters")) / f"migrate-{digest}.json"


def cmd_migrate(args: argparse.Namespace, ctx: Ctx) -> int:
    """Copy every item from ``--from`` to ``--to`` in pages, checkpointing after each page."""
    source_loc, target_loc = parse_location(args.source), parse_location(args.target)
    if target_loc.official:
        raise CLIError(
            "--to must be one of this package's stores (official stores are only sources)", USAGE
        )
    if (
        source_loc.display == target_loc.display
        and source_loc.table_prefix == target_loc.table_prefix
    ):
        raise CLIError("--from and --to are the same store", USAGE)
    if args.limit is not None and args.limit <= 0:
        raise CLIError("--limit must be positive", USAGE)
    index = parse_embed(args.embed, _fields(args.fields))
    checkpoint = _checkpoint_path(args)
    state: dict[str, Any] = {"cursor": None, "copied": 0}
    if checkpoint.exists() and not args.restart:
        try:
            state = json.loads(checkpoint.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CLIError(f"unreadable checkpoint {checkpoint} ({exc}); use --restart") from None
        if (
            not isinstance(state, dict)
            or not isinstance(state.get("copied"), int)
            or "cursor" not in state
            or (state.get("from"), state.get("to")) != (source_loc.display, target_loc.display)
        ):
            raise CLIError(
                f"checkpoint {checkpoint} belongs to another migration or is damaged; use --restart"
            )
        ctx.note(
            f"resuming after {state['copied']} item(s) (checkpoint {checkpoint}; --restart to start over)"
        )
    copied_before = int(state["copied"])
    this_run = 0
    finished = False
    with open_source(source_loc) as source, open_backend(target_loc, index, create=True) as target:
        total = source.count()  # every live item, including those copied before a resume
        with ctx.progress("migrating", total) as advance:
            advance(copied_before)
            cursor = state["cursor"]
            while True:
                budget = (
                    args.batch_size
                    if args.limit is None
                    else min(args.batch_size, args.limit - this_run)
                )
                page_iter = source.pages(cursor, budget)
                got = next(page_iter, None)
                if got is None:
                    finished = True
                    break
                cursor, page = got
                target.write(page)
                this_run += len(page)
                _save_checkpoint(
                    checkpoint, source_loc, target_loc, cursor, copied_before + this_run
                )
                advance(len(page))
                if args.limit is not None and this_run >= args.limit:
                    finished = next(source.pages(cursor, 1), None) is None
                    break
    done = copied_before + this_run
    if finished:
        checkpoint.unlink(missing_ok=True)
        ctx.note(f"migrated {done} item(s) from {source_loc.display} to {target_loc.display}")
    else:
        ctx.note(
            f"stopped after {this_run} item(s) (--limit); run the same command again to continue"
        )
    return 0


def _save_checkpoint(
    path: Path, source: Location, target: Location, cursor: Cursor, copied: int
) -> None:
    """Write the checkpoint atomically (temp file + rename), so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    data = {"from": source.display, "to": target.display, "cursor": cursor, "copied": copied}
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)


# --------------------------------------------------------------------------- sweep


def cmd_sweep(args: argparse.Namespace, ctx: Ctx) -> int:
    """Delete expired items now and print how many went."""
    location = parse_location(args.url)
    with open_backend(location) as backend:
        removed = backend.sweep()
    if args.json:
        ctx.out.print_json(data={"store": location.display, "removed": removed})
    else:
        ctx.out.print(
            f"removed {removed} expired item(s) from {escape(location.display)}", highlight=False
        )
    return 0


# --------------------------------------------------------------------------- demo

DEMO_ROOT = ("langmem-demo",)
DEMO_USER = "ada"
SCRIPTED_LABEL = "[scripted model — offline demo]"

Step = Callable[[list[ToolMessage]], AIMessage]
"""One scripted model reply, computed from the tool results of the previous step."""


class ScriptedChatModel(FakeMessagesListChatModel):
    """A chat model that plays a fixed script: for each user message, a list of steps.

    Step ``i`` answers the ``i``-th model call after that user message and may use the tool results
    that came back from step ``i - 1`` (e.g. the id of a memory it just looked up). It makes the demo
    and the notebooks run offline and deterministically, and is labelled as such in the transcript.
    """

    responses: list[BaseMessage] = Field(default_factory=list)
    script: dict[str, list[Step]]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        after = messages[last + 1 :]
        step = sum(isinstance(m, AIMessage) for m in after)
        results: list[ToolMessage] = []
        for m in reversed(after):
            if not isinstance(m, ToolMessage):
                break
            results.insert(0, m)
        steps = self.script.get(str(messages[last].content), []) if last >= 0 else []
        reply = (
            steps[step](results)
            if step < len(steps)
            else AIMessage("(no scripted reply for this message)")
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The script already knows the tools: binding changes nothing."""
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted-demo"


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}


def _say(text: str) -> Step:
    return lambda results: AIMessage(text)


def _calls(*calls: Callable[[], dict[str, Any]]) -> Step:
    return lambda results: AIMessage("", tool_calls=[make() for make in calls])


def _found(results: list[ToolMessage]) -> list[dict[str, Any]]:
    """The memories that ``search_memory`` returned (its JSON output), across the step's results."""
    found: list[dict[str, Any]] = []
    for r in results:
        with contextlib.suppress(json.JSONDecodeError, TypeError):
            data = json.loads(str(r.content))
            if isinstance(data, list):
                found += [d for d in data if isinstance(d, dict)]
    return found


def _home(results: list[ToolMessage]) -> dict[str, Any] | None:
    return next((m for m in _found(results) if "lives in" in str(m.get("text"))), None)


def _correct_home(results: list[ToolMessage]) -> AIMessage:
    """Update the 'lives in' memory found by the previous search (a correction, history kept)."""
    home = _home(results)
    if home is None:
        return AIMessage(
            "", tool_calls=[_call("manage_memory", content="Ada lives in Berlin", action="create")]
        )
    return AIMessage(
        "",
        tool_calls=[
            _call("manage_memory", content="Ada lives in Berlin", action="update", id=home["id"])
        ],
    )


def _look_back(results: list[ToolMessage]) -> AIMessage:
    """Point-in-time recall: what was believed just before the current address was recorded."""
    home = _home(results)
    if home is None or not home.get("valid_from"):
        return AIMessage("I don't know where you live yet.")
    since = datetime.fromisoformat(str(home["valid_from"]).replace("Z", "+00:00"))
    before = (
        (since - timedelta(milliseconds=1))
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )
    return AIMessage(
        "", tool_calls=[_call("search_memory", query="where Ada lives", as_of=before, limit=1)]
    )


def _answer_then_and_now(results: list[ToolMessage]) -> AIMessage:
    then = _home(results)
    before = (
        str(then["text"]).removeprefix("Ada lives in ") if then else "somewhere I was never told"
    )
    return AIMessage(f"Before your move you lived in {before}; now you live in Berlin.")


DEMO_TURNS: list[tuple[str, str]] = [
    ("1-introductions", "Hi! I'm Ada. I live in Paris, and I prefer green tea over coffee."),
    ("2-next-day", "Can you suggest a drink for my afternoon break? Tea or coffee?"),
    ("3-moving", "Big news: I've just moved to Berlin!"),
    ("4-looking-back", "Where did I live before I moved, and where do I live now?"),
]
"""(thread id, user message): each turn runs in a new thread, so only long-term memory connects them."""

DEMO_SCRIPT: dict[str, list[Step]] = {
    DEMO_TURNS[0][1]: [
        _calls(
            lambda: _call("manage_memory", content="Ada lives in Paris", action="create"),
            lambda: _call(
                "manage_memory", content="Ada prefers green tea over coffee", action="create"
            ),
        ),
        _say("Nice to meet you, Ada! I'll remember that you live in Paris and prefer green tea."),
    ],
    DEMO_TURNS[1][1]: [
        _calls(lambda: _call("search_memory", query="Ada tea or coffee drink preference", limit=3)),
        lambda results: AIMessage(
            "How about a pot of green tea? You told me you prefer it over coffee."
            if any("green tea" in str(m.get("text")) for m in _found(results))
            else "I don't know your taste yet: tea or coffee?"
        ),
    ],
    DEMO_TURNS[2][1]: [
        _calls(lambda: _call("search_memory", query="where Ada lives", limit=3)),
        _correct_home,
        _say(
            "Congratulations on the move! I've updated your address to Berlin and kept Paris as history."
        ),
    ],
    DEMO_TURNS[3][1]: [
        _calls(lambda: _call("search_memory", query="where Ada lives", limit=3)),
        _look_back,
        _answer_then_and_now,
    ],
}

DEMO_SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory that persists across conversations. "
    "Use manage_memory to save lasting facts about the user and to update a memory (by its id) "
    "when it stops being true; use search_memory before answering questions about the user, with "
    "as_of (an ISO time) for questions about what held in the past. Answer briefly."
)


def _when(iso: Any) -> str:
    """A tool's ISO time as ``YYYY-MM-DD HH:MM:SS`` (the demo happens within seconds)."""
    return str(iso).replace("T", " ")[:19] if iso else "now"


def _show_step(ctx: Ctx, message: BaseMessage, calls: dict[str, dict[str, Any]]) -> None:
    """One transcript line per tool call, tool result and reply; ``calls`` maps call ids to arguments."""
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            calls[call["id"] or ""] = call["args"]
            shown = ", ".join(f"{k}={v!r}" for k, v in call["args"].items())
            ctx.out.print(
                f"  [cyan]agent[/]  → {escape(call['name'])}({escape(shown)})", highlight=False
            )
        if message.content:
            ctx.out.print(f"  [cyan]agent[/]  {escape(str(message.content))}", highlight=False)
        return
    if not isinstance(message, ToolMessage):
        return
    args = calls.get(message.tool_call_id, {})
    content = str(message.content)
    if message.status == "error":
        ctx.out.print(f"         [red]tool error: {escape(content)}[/]", highlight=False)
    elif message.name == "manage_memory":
        verb = {"create": "stored", "update": "corrected", "delete": "forgot"}.get(
            str(args.get("action")), "changed"
        )
        ctx.out.print(
            f"         [green]{verb}:[/] {escape(str(args.get('content', '')))} [dim]({escape(content)})[/]",
            highlight=False,
        )
    elif message.name == "search_memory":
        verb = f"recalled as of {_when(args['as_of'])}" if args.get("as_of") else "recalled"
        found = _found([message])
        if not found:
            ctx.out.print(f"         [yellow]{verb}: nothing[/]", highlight=False)
        for m in found:
            window = f"valid {_when(m.get('valid_from'))} → {_when(m.get('valid_to'))}"
            ctx.out.print(
                f"         [green]{verb}:[/] {escape(str(m.get('text')))} [dim]({window})[/]",
                highlight=False,
            )
    else:
        ctx.out.print(
            f"         [green]{escape(message.name or 'tool')}:[/] {escape(content)}",
            highlight=False,
        )


def _demo_model(spec: str | None) -> tuple[BaseChatModel, str]:
    if spec is None:
        return ScriptedChatModel(script=DEMO_SCRIPT), SCRIPTED_LABEL
    if ":" not in spec:
        raise CLIError(
            f"--model must be provider:name (e.g. openai:gpt-4o-mini), got {spec!r}", USAGE
        )
    try:
        from langchain.chat_models import init_chat_model

        model = init_chat_model(spec)
    except ImportError as exc:
        raise CLIError(
            f"--model needs LangChain and the provider's package (pip install langchain "
            f"langchain-<provider>): {_first_line(exc)}"
        ) from None
    except Exception as exc:  # provider packages raise their own types for missing keys etc.
        raise CLIError(f"cannot use model {spec!r}: {_first_line(exc)}") from None
    return model, f"[model {spec}]"


def build_agent(model: BaseChatModel, tools: Sequence[BaseTool], store: BaseStore) -> Any:
    """A tool-calling agent as a LangGraph graph: model → tools → model … until no tool call.

    Threads are kept by an in-memory checkpointer; long-term memory lives in ``store``, which the
    ``ToolNode`` hands to the memory tools.
    """
    from langchain_core.messages import SystemMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    bound = model.bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke([SystemMessage(DEMO_SYSTEM_PROMPT), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def cmd_demo(args: argparse.Namespace, ctx: Ctx) -> int:
    """Run an agent with our memory tools across several threads and print the transcript."""
    from langmem_adapters.tools import create_memory_tools

    location = parse_location(args.store)
    index = parse_embed(args.embed, ["text"])
    model, label = _demo_model(args.model)
    ctx.note(f"starting {location.display} …")
    with open_backend(location, index, create=True) as backend:
        store = backend.store
        _clear(store, DEMO_ROOT)
        agent = build_agent(
            model, create_memory_tools((*DEMO_ROOT, "{user_id}"), tiers=("semantic",)), store
        )
        ctx.out.rule("langmem-adapters demo")
        ctx.out.print(f"store: {escape(location.display)}\nmodel: {escape(label)}", highlight=False)
        for thread, text in DEMO_TURNS:
            ctx.out.print(
                f"\n[bold]thread {escape(thread)}[/] [dim](new conversation)[/]", highlight=False
            )
            ctx.out.print(f"  [magenta]user[/]   {escape(text)}", highlight=False)
            config: RunnableConfig = {"configurable": {"thread_id": thread, "user_id": DEMO_USER}}
            state = agent.invoke({"messages": [HumanMessage(text)]}, config)
            calls: dict[str, dict[str, Any]] = {}
            for message in state["messages"][1:]:
                _show_step(ctx, message, calls)
        ctx.out.print()
        _show_memory(ctx, SemanticMemory(store, namespace=(*DEMO_ROOT, DEMO_USER)))
    ctx.out.print(
        f"\nLook inside: [bold]langmem-adapters inspect {escape(args.store)} --namespace "
        f"{'.'.join(DEMO_ROOT)}[/]",
        highlight=False,
    )
    return 0


def _clear(store: BaseStore, prefix: tuple[str, ...]) -> None:
    """Delete every item under ``prefix`` (so the demo starts from a clean slate)."""
    while hits := store.search(prefix, limit=500):
        store.batch([PutOp(h.namespace, h.key, None) for h in hits])


def _show_memory(ctx: Ctx, memory: SemanticMemory) -> None:
    """The facts now in the store with their validity windows (the correction kept history)."""
    table = Table(title=f"What the store remembers about {DEMO_USER}", title_justify="left")
    for column in ("memory", "valid from (UTC)", "valid to (UTC)", "status"):
        table.add_column(column)
    items = memory.store.search((*memory.root, "semantic"), filter={"kind": "fact"}, limit=100)
    facts = [f for h in items if (f := memory.get(h.value["id"])) is not None]
    for f in sorted(facts, key=lambda f: (f.lineage_id, f.valid_from)):
        status = "current" if f.valid_to is None else "superseded" if f.superseded_by else "ended"
        to = f.valid_to.strftime("%Y-%m-%d %H:%M:%S") if f.valid_to else "—"
        table.add_row(escape(f.text), f.valid_from.strftime("%Y-%m-%d %H:%M:%S"), to, status)
    ctx.out.print(table)


# --------------------------------------------------------------------------- parser and main


class _Parser(argparse.ArgumentParser):
    """argparse that reports mistakes as one ``error:`` line (exit 2) instead of usage + message."""

    def error(self, message: str) -> Any:
        raise CLIError(f"{message} (see '{self.prog} --help')", USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``langmem-adapters [-q] COMMAND ...``."""
    parser = _Parser(
        prog="langmem-adapters",
        description="Long-term memory stores for LangGraph: demo, inspect, export/import, migrate, sweep.",
        epilog="URLs: postgresql://..., redis://..., embedded[:PATH]; migrate/export also read "
        "official+postgresql://... and official+redis://... (the official LangGraph stores' data).",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bars or notes on stderr"
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    demo = sub.add_parser("demo", help="run an agent with memory tools and print the transcript")
    demo.add_argument(
        "--store", default="embedded", help="store URL (default: the embedded PostgreSQL)"
    )
    demo.add_argument(
        "--model", help="a real chat model, provider:name (default: scripted, offline)"
    )
    demo.add_argument(
        "--embed", default="hash:64", help="embeddings: hash[:DIMS] (default) or provider:model"
    )
    demo.set_defaults(func=cmd_demo)

    inspect = sub.add_parser("inspect", help="namespace tree, items of a namespace, or a search")
    inspect.add_argument("url")
    inspect.add_argument("-n", "--namespace", help="namespace: users.ada or a JSON list")
    inspect.add_argument("--items", action="store_true", help="list items even without --namespace")
    inspect.add_argument(
        "--query", help="search text (ranked when --embed matches the stored vectors)"
    )
    inspect.add_argument("--filter", help='JSON filter on values, e.g. \'{"kind": "fact"}\'')
    inspect.add_argument("--embed", help="embedder the items were indexed with, e.g. hash:64")
    inspect.add_argument("--limit", type=int, default=20, help="items to show (default 20)")
    inspect.add_argument("--json", action="store_true", help="machine-readable output")
    inspect.set_defaults(func=cmd_inspect)

    export = sub.add_parser("export", help="write every item as JSON lines")
    export.add_argument("url")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    export.set_defaults(func=cmd_export)

    import_ = sub.add_parser("import", help="read JSON lines (from export) into a store")
    import_.add_argument("url")
    import_.add_argument("-i", "--input", help="file to read (default: stdin)")
    import_.add_argument(
        "--embed", help="index for the target: hash[:DIMS] or provider:model (default: none)"
    )
    import_.add_argument(
        "--fields", help="comma-separated value paths to embed (default: the whole value)"
    )
    import_.add_argument("--batch-size", type=int, default=PAGE, help=argparse.SUPPRESS)
    import_.set_defaults(func=cmd_import)

    migrate = sub.add_parser("migrate", help="copy all items between stores (resumable)")
    migrate.add_argument(
        "--from", dest="source", required=True, help="source URL (ours or official+...)"
    )
    migrate.add_argument(
        "--to", dest="target", required=True, help="target URL (one of our stores)"
    )
    migrate.add_argument(
        "--embed", help="index for the target: hash[:DIMS] or provider:model (default: none)"
    )
    migrate.add_argument(
        "--fields", help="comma-separated value paths to embed (default: the whole value)"
    )
    migrate.add_argument(
        "--batch-size", type=int, default=PAGE, help="items per page (default 500)"
    )
    migrate.add_argument(
        "--limit", type=int, help="copy at most N items in this run, then stop (resumable)"
    )
    migrate.add_argument(
        "--checkpoint", help="checkpoint file (default: per source/target, in the state dir)"
    )
    migrate.add_argument("--restart", action="store_true", help="ignore an existing checkpoint")
    migrate.set_defaults(func=cmd_migrate)

    sweep = sub.add_parser("sweep", help="delete expired items now and report how many")
    sweep.add_argument("url")
    sweep.add_argument("--json", action="store_true", help="machine-readable output")
    sweep.set_defaults(func=cmd_sweep)
    return parser


def _batch_size_ok(args: argparse.Namespace) -> None:
    if getattr(args, "batch_size", 1) <= 0:
        raise CLIError("--batch-size must be positive", USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``langmem-adapters``: run a command; report user mistakes as one line."""
    err = Console(stderr=True)
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    try:
        args = build_parser().parse_args(argv)
        _batch_size_ok(args)
        ctx = Ctx(out=Console(soft_wrap=True), err=err, quiet=args.quiet)
        return int(args.func(args, ctx))
    except CLIError as exc:
        message, code = str(exc), exc.code
    except psycopg.OperationalError as exc:
        message, code = f"cannot reach PostgreSQL: {_first_line(exc)}", FAILURE
    except psycopg.Error as exc:
        message, code = f"PostgreSQL: {_first_line(exc)}", FAILURE
    except redis.exceptions.ConnectionError as exc:
        message, code = f"cannot reach Redis: {_first_line(exc)}", FAILURE
    except redis.exceptions.RedisError as exc:
        message, code = f"Redis: {_first_line(exc)}", FAILURE
    except (ValueError, TypeError, LookupError) as exc:
        # Our validation errors (bad filter, bad namespace, bad value) subclass these.
        message, code = _first_line(exc), USAGE
    except StoreError as exc:
        message, code = _first_line(exc), FAILURE
    except KeyboardInterrupt:
        message, code = "interrupted", 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file we read or write (checkpoint, input, output)
        message, code = f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), FAILURE
    err.print(f"error: {message}", style="red", highlight=False, markup=False, soft_wrap=True)
    return code
