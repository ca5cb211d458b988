"""Store URLs: parsing them (:func:`parse_location`) and opening what they point at, as one of this
package's stores (:func:`open_store`) or as a readable source (:func:`open_source`, which also
reads the official LangGraph stores' data)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import make_conninfo

from langmem_adapters.cli.options import CONNECT_TIMEOUT, USAGE, first_line
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.errors import CLIError
from langmem_adapters.postgres import PostgresStore
from langmem_adapters.postgres.embedded import default_data_dir, embedded_dsn
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.urls import SENTINEL_SCHEME, close_client, sync_client
from langmem_adapters.transfer import (
    OfficialPostgresReader,
    OfficialRedisReader,
    Source,
    StoreSource,
)

__all__ = ["Location", "mask", "open_source", "open_store", "parse_location"]


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
        """Whether this is the official LangGraph stores' data (readable only)."""
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
                f"cannot start the embedded PostgreSQL in {self.data_dir}: {first_line(exc)}"
            ) from None


def mask(url: str) -> str:
    """The URL without its password, for messages and checkpoint files."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _without(parts: Any, query: list[tuple[str, str]], option: str) -> str:
    """The URL of ``parts`` with ``option`` taken out of its query (our option, not the server's)."""
    return urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in query if k != option])))


def parse_location(url: str) -> Location:
    """Parse a store URL (see the package docstring); raises ``CLIError`` (usage) for anything else."""
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
    parts = urlsplit(url[len("official+") :] if official else url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if base in ("postgresql", "postgres"):
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
        kind = "official-postgres" if official else "postgres"
        return Location(
            kind, _without(parts, query, "table_prefix"), mask(url), table_prefix=prefix
        )
    if base in ("redis", "rediss", SENTINEL_SCHEME):
        prefix = next((v for k, v in query if k == "prefix"), "langmem")
        if official and prefix != "langmem":
            raise CLIError(
                "prefix does not apply to official+redis:// (its keys are store:<ULID>)", USAGE
            )
        kind = "official-redis" if official else "redis"
        return Location(kind, _without(parts, query, "prefix"), mask(url), table_prefix=prefix)
    raise CLIError(
        f"unsupported store URL {mask(url)!r}: use postgresql://..., redis://..., "
        f"{SENTINEL_SCHEME}://..., embedded[:PATH], "
        "or official+postgresql:// / official+redis:// as a migrate source",
        USAGE,
    )


@contextlib.contextmanager
def open_source(location: Location) -> Iterator[Source]:
    """A readable source for ``export`` and ``migrate --from`` (this package's stores or official data)."""
    if location.kind == "official-postgres":
        with psycopg.connect(
            location.url, connect_timeout=CONNECT_TIMEOUT, autocommit=True
        ) as conn:
            yield OfficialPostgresReader(conn, name=location.display)
    elif location.kind == "official-redis":
        client = sync_client(location.url, socket_connect_timeout=CONNECT_TIMEOUT)
        try:
            yield OfficialRedisReader(client, name=location.display)
        finally:
            close_client(client)
    else:
        with open_store(location) as store:
            yield StoreSource(store)


@contextlib.contextmanager
def open_store(
    location: Location, index: dict[str, Any] | None = None, *, create: bool = False
) -> Iterator[SyncStore]:
    """One of this package's stores at ``location``; ``create`` sets up the schema, else it must exist."""
    if location.official:
        raise CLIError(
            f"{location.display}: official stores can only be read (migrate --from, export)", USAGE
        )
    if location.kind == "redis":
        with _open_redis(location, index, create=create) as store:
            yield store
        return
    conninfo = make_conninfo(location.dsn(), connect_timeout=CONNECT_TIMEOUT)
    with PostgresStore.from_conn_string(
        conninfo,
        index=index,  # type: ignore[arg-type]
        table_prefix=location.table_prefix,
    ) as pg:
        if create:
            pg.setup()
        elif not _has_table(pg, pg.tables.store):
            raise CLIError(
                f"{location.display} holds no langmem store (no table {pg.tables.store})"
            )
        elif pg.index_spec is not None and not _has_table(pg, pg.tables.vectors(pg.index_spec)):
            pg.setup()  # the vector table for this embedder size; harmless on an existing store
        yield pg


def _has_table(store: PostgresStore, table: str) -> bool:
    """Whether the store's database has ``table`` (the store is opened on one connection)."""
    conn = store.conn
    assert isinstance(conn, psycopg.Connection)
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [table]).fetchone()
    return bool(row and row[0])


@contextlib.contextmanager
def _open_redis(
    location: Location, index: dict[str, Any] | None, *, create: bool
) -> Iterator[RedisStore]:
    client = sync_client(location.url, socket_connect_timeout=CONNECT_TIMEOUT)
    try:
        store = RedisStore(client, index=index, prefix=location.table_prefix)  # type: ignore[arg-type]
        if not create and not client.exists(store.keys.mode):
            raise CLIError(f"{location.display} holds no langmem store (no key {store.keys.mode})")
        store.setup()
        yield store
    finally:
        close_client(client)
