"""Clients made from a URL: ``redis://``, ``rediss://``, ``unix://`` (redis-py's own forms) and
``redis+sentinel://``, a primary found through Redis Sentinel.

The Sentinel form (langchain-redis's, with several sentinels and options)::

    redis+sentinel://[[username]:password@]host[:port][,host[:port]...][/service_name[/db]][?option=value&...]

``host:port`` are the sentinels (port 26379 by default); ``service_name`` is the name the sentinels
monitor (default ``mymaster``); ``db`` defaults to 0. The credentials are those of the Redis nodes
(primary and replicas). Options (see :data:`SENTINEL_OPTIONS`): ``sentinel_username`` /
``sentinel_password`` for sentinels that require a login, ``socket_timeout`` and
``socket_connect_timeout`` in seconds (for the nodes and the sentinels; the sentinels' default to
2 s, the nodes' to redis-py's: none), ``min_other_sentinels``
(a sentinel that sees fewer peers is not trusted), ``max_connections`` (a store's connection pool).
The client is redis-py's ``Sentinel(...).master_for(service_name)``: each new connection asks the
sentinels where the primary is, so after a failover the client follows the promoted replica.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import redis
import redis.asyncio as aredis
import redis.asyncio.sentinel as asentinel
import redis.sentinel

from langmem_adapters.errors import InvalidArgumentError, first_line

__all__ = [
    "SENTINEL_OPTIONS",
    "SENTINEL_SCHEME",
    "SentinelTarget",
    "aclose_client",
    "async_client",
    "close_client",
    "is_sentinel_url",
    "parse_sentinel_url",
    "sync_client",
]

SENTINEL_SCHEME = "redis+sentinel"
SENTINEL_PORT = 26379
# langchain-redis's default, and the name in Redis's sample sentinel.conf
DEFAULT_SERVICE = "mymaster"

#: Seconds a sentinel may take to connect or answer, unless the URL says otherwise: without a
#: timeout (redis-py's default) one unreachable sentinel would stall every new connection.
SENTINEL_TIMEOUT = 2.0

#: Option name -> how its value is read (each once; an unknown option is an error, not ignored).
SENTINEL_OPTIONS: dict[str, type] = {
    "sentinel_username": str,
    "sentinel_password": str,
    "socket_timeout": float,
    "socket_connect_timeout": float,
    "min_other_sentinels": int,
    "max_connections": int,
}


@dataclass(frozen=True)
class SentinelTarget:
    """A parsed ``redis+sentinel://`` URL: where the sentinels are and what to ask them for."""

    sentinels: list[tuple[str, int]]
    service_name: str = DEFAULT_SERVICE
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    options: dict[str, Any] = field(default_factory=dict, repr=False)

    def sentinel_kwargs(self) -> dict[str, Any]:
        """Connection options of the sentinels themselves: the socket timeouts (``SENTINEL_TIMEOUT``
        unless the URL sets them) and their login."""
        kwargs: dict[str, Any] = {
            "socket_timeout": SENTINEL_TIMEOUT,
            "socket_connect_timeout": SENTINEL_TIMEOUT,
        }
        kwargs.update((k, v) for k, v in self.options.items() if k.startswith("socket_"))
        if "sentinel_username" in self.options:
            kwargs["username"] = self.options["sentinel_username"]
        if "sentinel_password" in self.options:
            kwargs["password"] = self.options["sentinel_password"]
        return kwargs

    def node_kwargs(self) -> dict[str, Any]:
        """Connection options of the primary's connections (database, login, timeouts, pool size)."""
        kwargs: dict[str, Any] = {
            "db": self.db,
            "username": self.username,
            "password": self.password,
        }
        kwargs.update(
            (k, v)
            for k, v in self.options.items()
            if k.startswith("socket_") or k == "max_connections"
        )
        return kwargs


def is_sentinel_url(url: str) -> bool:
    """Whether ``url`` names a primary through Redis Sentinel (``redis+sentinel://``)."""
    return url.split("://", 1)[0].lower() == SENTINEL_SCHEME


def _bad(url: str, problem: str) -> InvalidArgumentError:
    """The error for a malformed Sentinel URL; the URL is shown without its credentials."""
    shown = url.split("://", 1)[-1].rpartition("@")[2]
    return InvalidArgumentError(
        f"bad {SENTINEL_SCHEME}:// URL ({SENTINEL_SCHEME}://...{shown}): {problem}; the form is "
        f"{SENTINEL_SCHEME}://[[user]:password@]host[:port][,host[:port]...][/service_name[/db]][?option=value]"
    )


def _address(url: str, part: str) -> tuple[str, int]:
    """One ``host[:port]`` (IPv6 hosts in brackets) of the sentinel list."""
    if part.startswith("["):
        host, _, rest = part[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    else:
        host, _, port = part.rpartition(":") if ":" in part else (part, "", "")
    if not host:
        raise _bad(url, f"sentinel address {part!r} has no host")
    if port and not port.isdigit():
        raise _bad(url, f"sentinel port {port!r} is not a number")
    return host, int(port) if port else SENTINEL_PORT


def _option(url: str, name: str, value: str) -> Any:
    """An option's value, read as :data:`SENTINEL_OPTIONS` says."""
    kind = SENTINEL_OPTIONS.get(name)
    if kind is None:
        raise _bad(url, f"unknown option {name!r} (known: {', '.join(SENTINEL_OPTIONS)})")
    try:
        parsed = kind(value)
    except ValueError:
        raise _bad(url, f"option {name}={value!r} is not a {kind.__name__}") from None
    if kind is str:
        return parsed
    if name == "min_other_sentinels" and parsed < 0:
        raise _bad(url, f"option {name}={value!r} must be >= 0")
    if name != "min_other_sentinels" and not parsed > 0:  # a zero timeout or pool is unusable
        raise _bad(url, f"option {name}={value!r} must be > 0")
    return parsed


def parse_sentinel_url(url: str) -> SentinelTarget:
    """Read a ``redis+sentinel://`` URL (see the module's docstring); a malformed one raises
    :class:`~langmem_adapters.errors.InvalidArgumentError` naming the problem."""
    if not is_sentinel_url(url):
        raise _bad(url, f"the scheme is not {SENTINEL_SCHEME}")
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    sentinels = [_address(url, p) for p in hosts.split(",") if p]
    if not sentinels:
        raise _bad(url, "no sentinel address")
    path = [unquote(p) for p in parts.path.split("/") if p]
    if len(path) > 2:
        raise _bad(url, "the path is /service_name/db, with nothing after db")
    if len(path) == 2 and not path[1].isdigit():
        raise _bad(url, f"database {path[1]!r} is not a number")
    options: dict[str, Any] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in options:
            raise _bad(url, f"option {name!r} is given twice")
        options[name] = _option(url, name, value)
    return SentinelTarget(
        sentinels=sentinels,
        service_name=path[0] if path else DEFAULT_SERVICE,
        db=int(path[1]) if len(path) == 2 else 0,
        username=unquote(username) or None,
        password=unquote(password) or None,
        options=options,
    )


def _redis_py(factory: Callable[..., Any], url: str, **options: Any) -> Any:
    """``factory(url, **options)`` (a redis-py ``from_url``), a URL it cannot read refused with
    ``InvalidArgumentError`` (redis-py raises a bare ``ValueError``)."""
    try:
        return factory(url, **options)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"unusable Redis URL ({first_line(exc)}); the forms are redis://, rediss://, unix:// "
            f"and {SENTINEL_SCHEME}://"
        ) from exc


def _sentinel(kind: Callable[..., Any], url: str) -> tuple[SentinelTarget, Any]:
    """The URL read, and a redis-py ``Sentinel`` (sync or async ``kind``) asking its sentinels."""
    target = parse_sentinel_url(url)
    min_others = target.options.get("min_other_sentinels", 0)
    return target, kind(
        target.sentinels, min_other_sentinels=min_others, sentinel_kwargs=target.sentinel_kwargs()
    )


def sync_client(url: str, **options: Any) -> redis.Redis:
    """A redis-py client for ``url``: the primary behind Sentinel, or redis-py's ``from_url``;
    ``options`` (``socket_connect_timeout=``...) are for the connections to the Redis nodes."""
    if not is_sentinel_url(url):
        return _redis_py(redis.Redis.from_url, url, **options)
    target, sentinel = _sentinel(redis.sentinel.Sentinel, url)
    return sentinel.master_for(target.service_name, **{**target.node_kwargs(), **options})


def async_client(url: str, max_connections: int, connection_args: dict[str, Any]) -> aredis.Redis:
    """A ``redis.asyncio`` client for ``url`` with at most ``max_connections`` connections: in a
    blocking pool, or behind Sentinel in redis-py's Sentinel pool, which cannot block (the store
    queues its plans up to that size instead, see :func:`~.connection.pool_limit`)."""
    if not is_sentinel_url(url):
        options = {"max_connections": max_connections, **connection_args}
        pool = _redis_py(aredis.BlockingConnectionPool.from_url, url, **options)
        return aredis.Redis.from_pool(pool)
    target, sentinel = _sentinel(asentinel.Sentinel, url)
    kwargs = {"max_connections": max_connections, **target.node_kwargs(), **connection_args}
    return sentinel.master_for(target.service_name, **kwargs)


def _sentinel_clients(client: Any) -> list[Any]:
    """The clients a Sentinel-backed client asks for the primary (closed with it when we made it)."""
    manager = getattr(getattr(client, "connection_pool", None), "sentinel_manager", None)
    return list(getattr(manager, "sentinels", []))


def close_client(client: redis.Redis) -> None:
    """Close a client made by :func:`sync_client`, and its sentinel clients if it has any."""
    client.close()
    for sentinel in _sentinel_clients(client):
        sentinel.close()


async def aclose_client(client: aredis.Redis) -> None:
    """Close a client made by :func:`async_client`, and its sentinel clients if it has any."""
    await client.aclose()
    for sentinel in _sentinel_clients(client):
        await sentinel.aclose()
