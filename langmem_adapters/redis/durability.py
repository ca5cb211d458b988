"""Waiting for replicas (``wait_replicas=N``): a write is acknowledged only once N replicas have it.

Redis replicates asynchronously: a primary that dies right after answering can take its last writes
with it, and Sentinel promotes a replica that never saw them. With ``wait_replicas=N`` every round
that may write ends with ``WAIT N timeout`` on the same connection (WAIT counts the replicas that
have everything this connection wrote); fewer than N within the timeout fails the call with
:class:`~langmem_adapters.errors.StoreConnectionError`. The write stays applied on the primary (as
after a lost reply); re-running the batch is safe. Rounds of read-only commands and scripts are
sent as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from langmem_adapters.core.ops import check_count
from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    StoreConnectionError,
)
from langmem_adapters.redis.scripts import Call, Round

__all__ = ["ReplicaWait", "replica_wait"]

#: Commands and scripts the stores send that never write; anything else counts as a write.
READ_COMMANDS = frozenset(
    {"FT._LIST", "FT.INFO", "FT.SEARCH", "FT.AGGREGATE", "GET", "HGET", "HGETALL", "HMGET", "INFO"}
    | {"JSON.GET", "JSON.TYPE", "ZCARD", "ZCOUNT", "ZRANGE", "ZSCORE", "EXISTS", "PTTL", "TTL"}
)
READ_SCRIPTS = frozenset({"count", "lexical", "read_ns", "search", "words"})


def _writes(call: Call) -> bool:
    if call.script is not None:
        return call.script not in READ_SCRIPTS
    return not call.args or str(call.args[0]).upper() not in READ_COMMANDS


@dataclass(frozen=True)
class ReplicaWait:
    """``WAIT replicas timeout_ms`` after every round that may write."""

    replicas: int
    timeout_ms: int

    def round(self, request: Round) -> Round:
        """``request``, with the WAIT appended if any of its calls may write."""
        if not any(_writes(call) for call in request.calls):
            return request
        wait = Call(("WAIT", self.replicas, self.timeout_ms))
        return Round([*request.calls, wait], request.check)

    def replies(self, request: Round, results: list[Any]) -> list[Any]:
        """The replies to ``request``'s own calls, once the WAIT sent after them (if any) says
        enough replicas have them; raises :class:`StoreConnectionError` otherwise."""
        if len(results) == len(request.calls):
            return results
        acked = results[-1]
        if isinstance(acked, Exception) or not isinstance(acked, int):
            raise StoreConnectionError(
                f"Redis refused WAIT after a write ({acked}): the write may not reach a replica; "
                "wait_replicas needs the store connected to a primary"
            )
        if acked < self.replicas:
            raise StoreConnectionError(
                f"the write reached the Redis primary but only {acked} of the {self.replicas} "
                f"replicas required (wait_replicas) confirmed it within {self.timeout_ms} ms, so a "
                "failover now could lose it; re-running the batch is safe"
            )
        return results[: len(request.calls)]


def replica_wait(replicas: object, timeout: object, cluster: bool) -> ReplicaWait | None:
    """The store's ``wait_replicas`` / ``wait_timeout`` (seconds) checked: ``None`` when 0."""
    count = check_count("wait_replicas", replicas)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
        raise InvalidArgumentTypeError(
            f"wait_timeout must be a number of seconds, got {type(timeout).__name__}"
        )
    if not (0 < timeout < math.inf):
        raise InvalidArgumentError(f"wait_timeout must be > 0 seconds and finite, got {timeout}")
    if count and cluster:
        raise InvalidArgumentError(
            "wait_replicas applies to a single primary (or one behind Sentinel), not a Redis Cluster"
        )
    return ReplicaWait(count, max(1, math.ceil(timeout * 1000))) if count else None
