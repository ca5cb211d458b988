"""The Redis stores' constructor options: the client given once (positionally or under the official
stores' keyword), the key prefix under either name, ``cluster_mode`` checked against the client,
and the pool size of a client made from a URL."""

from __future__ import annotations

from typing import Any, Literal

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["POOL_SIZE", "ModeOption", "check_cluster_mode", "one_client", "one_prefix"]

ModeOption = Literal["auto", "query_engine", "plain"]

# Connections of the pool a store makes for a URL: tasks and threads beyond it wait for one.
POOL_SIZE = 64


def one_client(client: Any, alias: Any, alias_name: str) -> Any:
    """The client (or URL) given positionally or under the official store's keyword, not both."""
    if client is not None and alias is not None:
        raise InvalidArgumentTypeError(
            f"pass the Redis client once: positionally or as {alias_name}=, not both"
        )
    if client is None and alias is None:
        raise InvalidArgumentTypeError(
            f"a Redis client or URL is required (positionally or as {alias_name}=)"
        )
    return client if client is not None else alias


def one_prefix(prefix: str | None, store_prefix: str | None) -> str:
    """``prefix``, or the official stores' ``store_prefix`` under its name here."""
    if prefix is not None and store_prefix is not None and prefix != store_prefix:
        raise InvalidArgumentTypeError(
            "pass the key prefix once: as prefix= or as store_prefix=, not both"
        )
    return prefix or store_prefix or "langmem"


def check_cluster_mode(cluster_mode: bool | None, cluster: bool) -> None:
    """The official stores' ``cluster_mode``: here the client's type decides; a mismatch is an error."""
    if cluster_mode is not None and bool(cluster_mode) != cluster:
        kind = "a RedisCluster client" if cluster else "a single-server client"
        raise InvalidArgumentError(
            f"cluster_mode={cluster_mode!r} does not match the client, which is {kind}"
        )
