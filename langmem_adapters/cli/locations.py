"""Opening what a store URL (parsed by :func:`langmem_adapters.settings.parse_location`) points at,
as one of this package's sync stores (:func:`open_store`) or as a readable source
(:func:`open_source`, which also reads the official LangGraph stores' data)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from langmem_adapters.cli.options import USAGE
from langmem_adapters.compat import moved
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.errors import CLIError
from langmem_adapters.postgres import PostgresStore
from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.urls import close_client, sync_client
from langmem_adapters.settings import CONNECT_TIMEOUT, Location
from langmem_adapters.transfer import (
    OfficialPostgresReader,
    OfficialRedisReader,
    Source,
    StoreSource,
)

__all__ = ["open_source", "open_store"]

__getattr__ = moved(
    __name__, dict.fromkeys(["Location", "mask", "parse_location"], "langmem_adapters.settings")
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
