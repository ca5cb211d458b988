"""How the Postgres stores are configured and opened: the option types (``PostgresIndexConfig``,
``PoolConfig``), and ``from_conn_string``'s connections: the primary (one connection or a pool) and
each replica (a pool, or one connection opened on first use), closed with the caller's exit stack."""

from __future__ import annotations

from contextlib import AsyncExitStack, ExitStack
from typing import Any, Literal, TypedDict

import psycopg
from langgraph.store.base import IndexConfig
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langmem_adapters.postgres.connection import (
    CONNECT_KWARGS,
    AsyncConnections,
    Connections,
    connect_failed,
)
from langmem_adapters.postgres.replicas import WAIT_SECONDS, Replica

__all__ = [
    "ANNIndexConfig",
    "PoolConfig",
    "PostgresIndexConfig",
    "address",
    "async_primary",
    "async_replica",
    "primary",
    "replica",
    "where",
]


class PoolConfig(TypedDict, total=False):
    """Connection-pool settings for ``from_conn_string`` (as in the official store)."""

    min_size: int
    max_size: int | None
    kwargs: dict[str, Any]


class ANNIndexConfig(TypedDict, total=False):
    """Approximate-search options: index kind, vector type, build and search parameters."""

    kind: Literal["hnsw", "ivfflat", "exact", "flat"]
    vector_type: Literal["vector", "halfvec"]
    m: int
    ef_construction: int
    ef_search: int
    nlist: int
    probes: int
    exact_below: int
    target_recall: float | None


class PostgresIndexConfig(IndexConfig, total=False):
    """``IndexConfig`` plus the distance and ANN settings of the Postgres stores."""

    distance_type: Literal["cosine", "l2", "inner_product"]
    ann_index_config: ANNIndexConfig


#: libpq's ``connect_timeout`` for a replica's own connection unless its connection string sets one
#: (2 s is the shortest libpq honours): a replica host that does not answer holds a read no longer.
CONNECT_SECONDS = 2


def address(conn: Any) -> tuple[Any, Any, Any]:
    """The host, port and database a connection, pool or connection string points at (any may be
    ``None``), never with credentials."""
    if hasattr(conn, "info"):
        return conn.info.host, conn.info.port, conn.info.dbname
    conninfo = conn if isinstance(conn, str) else getattr(conn, "conninfo", "")
    params = conninfo_to_dict(conninfo or "")
    return params.get("host"), params.get("port"), params.get("dbname")


def where(conn: Any) -> str:
    """A server's address for stats and messages, never with credentials."""
    host, port, dbname = address(conn)
    return f"{host}:{port or 5432}/{dbname or ''}"


def _sizes(pool_config: PoolConfig) -> dict[str, Any]:
    """A pool's sizes and connection settings from ``pool_config``."""
    return {
        "min_size": pool_config.get("min_size", 1),
        "max_size": pool_config.get("max_size"),
        "kwargs": {**CONNECT_KWARGS, **pool_config.get("kwargs", {})},
    }


def _pool_options(pool_config: PoolConfig) -> dict[str, Any]:
    """A replica pool's options: the primary's sizes and connection settings, a short wait for a
    connection, and no check on checkout: a replica's broken connection fails its round, which the
    primary then answers, so checking would cost every read a round trip for nothing."""
    return {**_sizes(pool_config), "timeout": WAIT_SECONDS}


def _replica_kwargs(conninfo: str) -> dict[str, Any]:
    """How a replica's own connection opens: as the stores open theirs, with a connect timeout."""
    kwargs = {"conninfo": conninfo, **CONNECT_KWARGS}
    if "connect_timeout" not in conninfo_to_dict(conninfo):
        kwargs["connect_timeout"] = CONNECT_SECONDS
    return kwargs


def replica(dsn: str, pool_config: PoolConfig | None, stack: ExitStack) -> Replica[Connections]:
    """A replica of ``from_conn_string``: a pool with ``pool_config``, else one connection opened on
    first use and again after it was lost (as the primary gets one); closed with ``stack``."""
    if pool_config is None:
        own = Connections(None, _replica_kwargs(dsn))
        stack.callback(own.close)
        return Replica(own, where(dsn))
    pool = stack.enter_context(ConnectionPool(dsn, **_pool_options(pool_config), open=True))
    return Replica(Connections(pool), where(pool))


async def async_replica(
    dsn: str, pool_config: PoolConfig | None, stack: AsyncExitStack
) -> Replica[AsyncConnections]:
    """The async twin of :func:`replica`."""
    if pool_config is None:
        own = AsyncConnections(None, _replica_kwargs(dsn))
        stack.push_async_callback(own.close)
        return Replica(own, where(dsn))
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn, **_pool_options(pool_config), open=False
    )
    await pool.open()
    return Replica(AsyncConnections(await stack.enter_async_context(pool)), where(pool))


def primary(
    conn_string: str, pool_config: PoolConfig | None, stack: ExitStack
) -> psycopg.Connection[Any] | ConnectionPool[Any]:
    """``from_conn_string``'s primary: a pool with ``pool_config`` (closed with ``stack``), else one
    connection (which the store closes: a reconnect may replace it)."""
    if pool_config is not None:
        check = ConnectionPool.check_connection
        pool = ConnectionPool(conn_string, **_sizes(pool_config), check=check, open=True)
        return stack.enter_context(pool)
    try:
        return psycopg.Connection.connect(conn_string, **CONNECT_KWARGS)
    except psycopg.Error as exc:
        raise connect_failed(exc) from exc


async def async_primary(
    conn_string: str, pool_config: PoolConfig | None, stack: AsyncExitStack
) -> psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any]:
    """The async twin of :func:`primary`."""
    if pool_config is not None:
        check = AsyncConnectionPool.check_connection
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            conn_string, **_sizes(pool_config), check=check, open=False
        )
        await pool.open()
        return await stack.enter_async_context(pool)
    try:
        return await psycopg.AsyncConnection.connect(conn_string, **CONNECT_KWARGS)
    except psycopg.Error as exc:
        raise connect_failed(exc) from exc
