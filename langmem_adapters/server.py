"""The LangGraph server's custom store: :func:`generate_store`, configured by environment variables.

The LangGraph server (``langgraph dev`` locally, the same server in deployment) loads a long-term
memory store named in ``langgraph.json``. Its loader takes either a file path (``./src/store.py:name``)
or a dotted module path, so this package's entry point is written with dots::

    {"graphs": {"agent": "./graph.py:graph"},
     "store": {"path": "langmem_adapters.server.generate_store"}}

(``langmem_adapters.server:generate_store`` does not load: the server splits a module path at its
last dot.) The store section's ``index`` (``embed``, ``dims``, ``fields``) and ``ttl``
(``default_ttl``, ``refresh_on_read``, ``sweep_interval_minutes``) are honoured: the server hands
them to a custom store as JSON in ``LANGGRAPH_STORE``, and each ``LANGMEM_*`` variable set overrides
its part. The variables, read when the server starts; a bad value fails the start with a
:class:`~langmem_adapters.errors.ServerConfigError` naming the variable (or the langgraph.json key):

- ``LANGMEM_STORE_URL``: the CLI's store URLs (``embedded``, ``embedded:PATH``, ``postgresql://...``
  with an optional ``?table_prefix=``, ``redis://...`` or ``redis+sentinel://...`` with an optional
  ``?prefix=``); default ``embedded``.
- ``LANGMEM_EMBED``: ``hash:DIMS`` (offline) or a LangChain ``init_embeddings`` string such as
  ``openai:text-embedding-3-small``; unset (or ``none``) means no vector index.
- ``LANGMEM_INDEX_FIELDS``: comma-separated value paths to embed (default: the whole value).
- ``LANGMEM_TTL_MINUTES``: the default TTL of new items (default: none, items never expire).
- ``LANGMEM_SWEEP_MINUTES``: minutes between TTL sweeps (default 5).
- ``LANGGRAPH_STORE``: set by the server from langgraph.json (not by hand).

An empty variable counts as unset.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import math
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import psycopg
import redis
from langgraph.store.base import IndexConfig, TTLConfig
from langgraph.store.base.embed import ensure_embeddings
from psycopg.conninfo import make_conninfo

from langmem_adapters.errors import (
    InvalidSettingError,
    ServerConfigError,
    SettingUnavailableError,
    StoreConnectionError,
    first_line,
)
from langmem_adapters.postgres import AsyncPostgresStore
from langmem_adapters.redis import AsyncRedisStore
from langmem_adapters.redis.urls import aclose_client, async_client
from langmem_adapters.settings import (
    CONNECT_TIMEOUT,
    Location,
    parse_embed,
    parse_fields,
    parse_location,
)

__all__ = [
    "EMBED",
    "INDEX_FIELDS",
    "LANGGRAPH_STORE",
    "POOL_MAX_SIZE",
    "STORE_URL",
    "SWEEP_MINUTES",
    "TTL_MINUTES",
    "ServerSettings",
    "generate_store",
]

#: The environment variables :func:`generate_store` reads.
STORE_URL = "LANGMEM_STORE_URL"
EMBED = "LANGMEM_EMBED"
INDEX_FIELDS = "LANGMEM_INDEX_FIELDS"
TTL_MINUTES = "LANGMEM_TTL_MINUTES"
SWEEP_MINUTES = "LANGMEM_SWEEP_MINUTES"
#: Where langgraph-api puts langgraph.json's ``store`` section (JSON) for a custom store.
LANGGRAPH_STORE = "LANGGRAPH_STORE"

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
        """Parse the variables (``os.environ`` unless given) over langgraph.json's ``index`` and
        ``ttl`` (``LANGGRAPH_STORE``); raises ``ServerConfigError`` naming the first bad one. An
        embedder that is a LangChain model is built and embeds one probe text to learn its size, so
        a missing key or package fails here too."""
        env = os.environ if environ is None else environ
        section = _store_section(env.get(LANGGRAPH_STORE) or None)

        def get(name: str) -> str | None:
            return env.get(name) or section.get(name)

        def named(name: str) -> str:
            """How a message names where a value came from: the variable, or langgraph.json."""
            return name if env.get(name) or name not in section else JSON_KEYS[name]

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
                f"{named(INDEX_FIELDS)} names fields to embed but {named(EMBED)} sets no embedder"
            )
        dims = None if env.get(EMBED) else section.get(DIMS)
        if dims is not None and _check_dims(dims) and spec == "hash":
            spec = f"hash:{dims}"
        with _naming(named(EMBED)):
            index = (
                _from_file(spec, fields, named(EMBED))
                if spec is not None and ".py:" in spec
                else parse_embed(spec, fields, option=named(EMBED))
            )
        if index is not None and dims is not None and index["dims"] != dims:
            raise ServerConfigError(
                f"{JSON_KEYS[DIMS]} is {dims} but its embedder makes vectors of "
                f"{index['dims']} dimensions"
            )
        ttl_minutes = _minutes(named(TTL_MINUTES), get(TTL_MINUTES))
        sweep_minutes = _minutes(named(SWEEP_MINUTES), get(SWEEP_MINUTES))
        ttl: dict[str, Any] = {} if ttl_minutes is None else {"default_ttl": ttl_minutes}
        if section.get(REFRESH) is not None:
            ttl["refresh_on_read"] = section[REFRESH]
        return cls(
            location,
            cast("IndexConfig | None", index),
            cast(TTLConfig, ttl) if ttl else None,
            sweep_minutes,
        )


# The parts of langgraph.json's store section, under the variable each corresponds to (and two
# with no variable): ``LANGMEM_*`` set in the environment wins over them.
DIMS = "index.dims"
REFRESH = "ttl.refresh_on_read"
#: The langgraph.json key behind each part, as messages name it.
JSON_KEYS = {
    EMBED: "langgraph.json store.index.embed",
    INDEX_FIELDS: "langgraph.json store.index.fields",
    DIMS: "langgraph.json store.index.dims",
    TTL_MINUTES: "langgraph.json store.ttl.default_ttl",
    SWEEP_MINUTES: "langgraph.json store.ttl.sweep_interval_minutes",
    REFRESH: "langgraph.json store.ttl.refresh_on_read",
}


def _store_section(text: str | None) -> dict[str, str]:
    """langgraph.json's ``store`` ``index`` and ``ttl`` (the JSON of ``LANGGRAPH_STORE``), as the
    values of the ``LANGMEM_*`` variables they correspond to (``DIMS``, ``REFRESH`` besides)."""
    if text is None:
        return {}
    try:
        store = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ServerConfigError(f"{LANGGRAPH_STORE} is not JSON: {exc.msg}") from None
    if not isinstance(store, dict):
        raise ServerConfigError(f"{LANGGRAPH_STORE} must be a JSON object, got {text[:80]!r}")
    index, ttl = _object(store, "index"), _object(store, "ttl")
    found: dict[str, Any] = {
        EMBED: _text(index.get("embed"), "index.embed"),
        INDEX_FIELDS: _fields(index.get("fields")),
        DIMS: index.get("dims"),
        TTL_MINUTES: _number(ttl.get("default_ttl")),
        SWEEP_MINUTES: _number(ttl.get("sweep_interval_minutes")),
        REFRESH: ttl.get("refresh_on_read"),
    }
    if found[REFRESH] is not None and not isinstance(found[REFRESH], bool):
        raise ServerConfigError(
            f"{JSON_KEYS[REFRESH]} must be true or false, got {found[REFRESH]!r}"
        )
    return {k: v for k, v in found.items() if v is not None}


def _object(store: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``store[key]``: a JSON object, ``{}`` when absent or null."""
    value = store.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ServerConfigError(f"langgraph.json store.{key} must be an object, got {value!r}")
    return value


def _text(value: Any, key: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ServerConfigError(
            f"langgraph.json store.{key} must be a string such as 'openai:text-embedding-3-small' "
            f"or 'hash:64', got {value!r}"
        )
    return value


def _fields(value: Any) -> str | None:
    """``index.fields`` (a list of paths) as ``LANGMEM_INDEX_FIELDS`` text."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(f, str) and "," not in f for f in value):
        raise ServerConfigError(
            f"langgraph.json store.index.fields must be a list of value paths, got {value!r}"
        )
    return ",".join(value)


def _number(value: Any) -> str | None:
    """A number of minutes of the store section, as variable text (checked as the variable is)."""
    return None if value is None else str(value)


def _from_file(spec: str, fields: list[str] | None, named: str) -> dict[str, Any]:
    """The index of an embedder named as langgraph-api names one: ``./path/file.py:name`` (relative
    to the server's directory, the project's) or ``package.module.py:name``; the object is an
    ``Embeddings`` or an embedding function, whose size one probe text tells."""
    module_name, attribute = spec.rsplit(":", 1)
    try:
        if "/" in module_name:
            path = Path(module_name).resolve()
            found = importlib.util.spec_from_file_location(f"_langmem_embed_{path.stem}", path)
            if found is None or found.loader is None:
                raise ServerConfigError(f"{named}: no Python file at {module_name!r}")
            module = importlib.util.module_from_spec(found)
            found.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name.removesuffix(".py"))
        embeddings = ensure_embeddings(getattr(module, attribute))
        dims = len(embeddings.embed_query("dimension probe"))
    except ServerConfigError:
        raise
    except Exception as exc:  # the user's module may raise anything while it loads
        raise ServerConfigError(f"{named}: cannot load {spec!r}: {first_line(exc)}") from exc
    return {"dims": dims, "embed": embeddings, "fields": list(fields or ["$"])}


def _check_dims(dims: Any) -> bool:
    """Accept langgraph.json's ``index.dims`` if it is a positive integer (the embedder's size must
    then agree with it; a bare ``hash`` embedder takes it)."""
    if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
        raise ServerConfigError(f"{JSON_KEYS[DIMS]} must be a positive integer, got {dims!r}")
    return True


@contextmanager
def _naming(variable: str) -> Iterator[None]:
    """Report a settings error (:mod:`langmem_adapters.settings`) as a ``ServerConfigError`` that
    names ``variable``."""
    try:
        yield
    except ServerConfigError:
        raise
    except (InvalidSettingError, SettingUnavailableError) as exc:
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
