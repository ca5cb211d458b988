"""The LangGraph server's custom store: :func:`generate_store`, configured by environment variables.

The LangGraph server (``langgraph dev`` locally, the same server in deployment) loads a long-term
memory store named in ``langgraph.json``. Its loader takes either a file path (``./src/store.py:name``)
or a dotted module path, so this package's entry point is written with dots::

    {"graphs": {"agent": "./graph.py:graph"},
     "store": {"path": "langmem_adapters.server.generate_store"}}

(``langmem_adapters.server:generate_store`` does not load: the server splits a module path at its
last dot.) The variables, read when the server starts; a bad value fails the start with a
:class:`~langmem_adapters.errors.ServerConfigError` naming the variable:

- ``LANGMEM_STORE_URL``: the CLI's store URLs (``embedded``, ``embedded:PATH``, ``postgresql://...``
  with an optional ``?table_prefix=``, ``redis://...`` or ``redis+sentinel://...`` with an optional
  ``?prefix=``); default ``embedded``.
- ``LANGMEM_EMBED``: ``hash:DIMS`` (offline) or a LangChain ``init_embeddings`` string such as
  ``openai:text-embedding-3-small``; unset (or ``none``) means no vector index.
- ``LANGMEM_INDEX_FIELDS``: comma-separated value paths to embed (default: the whole value).
- ``LANGMEM_TTL_MINUTES``: the default TTL of new items (default: none, items never expire).
- ``LANGMEM_SWEEP_MINUTES``: minutes between TTL sweeps (default 5).

An empty variable counts as unset.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import cast

import psycopg
import redis
from langgraph.store.base import IndexConfig, TTLConfig
from psycopg.conninfo import make_conninfo

from langmem_adapters.cli.locations import Location, parse_location
from langmem_adapters.cli.options import CONNECT_TIMEOUT, first_line, parse_embed, parse_fields
from langmem_adapters.errors import CLIError, ServerConfigError, StoreConnectionError
from langmem_adapters.postgres import AsyncPostgresStore
from langmem_adapters.redis import AsyncRedisStore
from langmem_adapters.redis.urls import aclose_client, async_client

__all__ = [
    "EMBED",
    "INDEX_FIELDS",
    "POOL_MAX_SIZE",
    "STORE_URL",
    "SWEEP_MINUTES",
    "TTL_MINUTES",
    "ServerConfigError",
    "ServerSettings",
    "generate_store",
]

#: The environment variables :func:`generate_store` reads.
STORE_URL = "LANGMEM_STORE_URL"
EMBED = "LANGMEM_EMBED"
INDEX_FIELDS = "LANGMEM_INDEX_FIELDS"
TTL_MINUTES = "LANGMEM_TTL_MINUTES"
SWEEP_MINUTES = "LANGMEM_SWEEP_MINUTES"

#: Most connections the Postgres pool opens: the server's concurrent requests and runs share them.
POOL_MAX_SIZE = 10


@dataclass(frozen=True)
class ServerSettings:
    """What the variables ask for: where the store is, its vector index, its TTL and sweep interval."""

    location: Location
    index: IndexConfig | None
    ttl: TTLConfig | None
    sweep_minutes: float | None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerSettings:
        """Parse the variables (``os.environ`` unless given); raises ``ServerConfigError`` naming the
        first bad one. ``LANGMEM_EMBED`` with a LangChain model builds the embedder and embeds one
        probe text to learn its size, so a missing key or package fails here too."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            return env.get(name) or None

        url = get(STORE_URL) or "embedded"
        with _naming(STORE_URL):
            location = parse_location(url)
        if location.official:
            raise ServerConfigError(
                f"{STORE_URL}: {location.display} is an official store's data, which can only be "
                "read (migrate it first: langmem-adapters migrate --from ... --to ...)"
            )
        fields = parse_fields(get(INDEX_FIELDS))
        spec = get(EMBED)
        if fields and (spec is None or spec == "none"):
            raise ServerConfigError(
                f"{INDEX_FIELDS} names fields to embed but {EMBED} sets no embedder"
            )
        with _naming(EMBED):
            index = parse_embed(spec, fields, option=EMBED)
        ttl_minutes = _minutes(TTL_MINUTES, get(TTL_MINUTES))
        sweep_minutes = _minutes(SWEEP_MINUTES, get(SWEEP_MINUTES))
        ttl: TTLConfig | None = None if ttl_minutes is None else {"default_ttl": ttl_minutes}
        return cls(location, cast("IndexConfig | None", index), ttl, sweep_minutes)


@contextmanager
def _naming(variable: str) -> Iterator[None]:
    """Report the CLI parsers' ``CLIError`` as a ``ServerConfigError`` that names ``variable``."""
    try:
        yield
    except CLIError as exc:
        message = str(exc)
        raise ServerConfigError(
            message if variable in message else f"{variable}: {message}"
        ) from None


def _minutes(variable: str, text: str | None) -> float | None:
    """A positive, finite number of minutes, or ``None`` when unset."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ServerConfigError(f"{variable} must be a positive number of minutes, got {text!r}")
    return value


@asynccontextmanager
async def generate_store() -> AsyncIterator[AsyncPostgresStore | AsyncRedisStore]:
    """The store for the LangGraph server, as ``langgraph.json``'s
    ``"store": {"path": "langmem_adapters.server.generate_store"}`` names it.

    At start: reads the variables (see the module docstring), starts the embedded PostgreSQL if the
    URL asks for it, connects once (an unreachable server raises ``StoreConnectionError`` at once),
    opens an ``AsyncPostgresStore`` on a connection pool (or an ``AsyncRedisStore``),
    runs ``setup()`` and starts the store's TTL sweeper (the server runs none for a custom store;
    items put with a ``ttl`` through the API expire even without ``LANGMEM_TTL_MINUTES``). At exit:
    stops the sweeper and closes the pool or client.
    """
    settings = await asyncio.to_thread(ServerSettings.from_env)
    async with _open(settings) as store:
        await store.setup()
        await store.start_ttl_sweeper(settings.sweep_minutes)
        try:
            yield store
        finally:
            await store.stop_ttl_sweeper()


@asynccontextmanager
async def _open(settings: ServerSettings) -> AsyncIterator[AsyncPostgresStore | AsyncRedisStore]:
    """The async store at the settings' location, after one test connection (the embedded server is
    started in a worker thread: it blocks, and the server's event loop must not)."""
    location = settings.location
    if location.kind == "redis":
        await _reachable(location, location.url)
        async with AsyncRedisStore.from_conn_string(
            location.url, index=settings.index, ttl=settings.ttl, prefix=location.table_prefix
        ) as redis_store:
            yield redis_store
        return
    with _naming(STORE_URL):
        dsn = make_conninfo(await asyncio.to_thread(location.dsn), connect_timeout=CONNECT_TIMEOUT)
    await _reachable(location, dsn)
    async with AsyncPostgresStore.from_conn_string(
        dsn,
        index=settings.index,  # type: ignore[arg-type]
        ttl=settings.ttl,
        pool_config={"min_size": 1, "max_size": POOL_MAX_SIZE},
        table_prefix=location.table_prefix,
    ) as pg_store:
        yield pg_store


async def _reachable(location: Location, target: str) -> None:
    """Connect once and hang up, so an unreachable or refusing server fails the start at once with
    its reason (a pool would retry in the background until its timeout)."""
    try:
        if location.kind == "redis":
            client = async_client(target, 1, {"socket_connect_timeout": CONNECT_TIMEOUT})
            try:
                await client.ping()
            finally:
                await aclose_client(client)
        else:
            conn = await psycopg.AsyncConnection.connect(target)
            await conn.close()
    except (OSError, psycopg.Error, redis.RedisError) as exc:
        raise StoreConnectionError(
            f"{STORE_URL}: cannot connect to {location.display}: {first_line(exc)}"
        ) from None
