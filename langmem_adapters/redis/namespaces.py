"""Namespace-wide operations on Redis: the plans of ``count`` and ``delete_namespace``.

``count`` in Query Engine mode with filters the index answers exactly (see
:func:`~langmem_adapters.redis.tokens.pushdown`) is one ``count`` script call on the server; otherwise
it reads the live namespaces under the prefix from the registry and their ZSETs: a ``ZCOUNT`` each
without a filter, else their live items (one ``read_ns`` call each, 64 per round) checked here.

``delete_namespace`` on a single server is one ``drop`` script call that re-reads the registry itself
and deletes only when it was given every namespace under the prefix (else it names the missing ones
and the call is repeated with them): items, vector documents, ZSETs and registry entries go together,
atomically. On a Redis Cluster the namespaces live in different slots: one call per namespace, each
atomic, and the registry entries stay until they age out (readers there check each namespace's ZSET).
"""

from __future__ import annotations

import time
from typing import Any

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition, matches
from langmem_adapters.core.values import load_json
from langmem_adapters.redis.layout import Keys, Mode, text, under
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.tokens import path_token, pushdown

__all__ = ["count_plan", "delete_namespace_plan"]

#: Documents the ``count`` script reads per ``FT.SEARCH`` page.
COUNT_PAGE = 10_000
#: Namespaces whose items one round of a filtered count reads.
READ_GROUP = 64


def _server_query(prefix: tuple[str, ...], conditions: tuple[Condition, ...]) -> str | None:
    """The Query Engine query matching exactly the prefix and the conditions, or None when some
    condition is only checked client-side."""
    pushed = [pushdown(c) for c in conditions]
    if any(c is None for c in pushed):
        return None
    parts = [f"@p:{{{path_token('n', prefix)}}}"] if prefix else []
    return f"({' '.join([*parts, *(c for c in pushed if c)])})"


def _live_under(reply: list[Any], prefix: tuple[str, ...]) -> list[str]:
    """The registry's namespace texts that lie at or below ``prefix`` (whole labels), sorted."""
    return sorted({n for n in map(text, reply) if under(nsp.split(n), prefix)})


def count_plan(
    keys: Keys, mode: Mode, prefix: tuple[str, ...], conditions: tuple[Condition, ...]
) -> Steps:
    """The number of live items at or below ``prefix`` whose values match ``conditions``."""
    query = _server_query(prefix, conditions) if mode == "query_engine" and conditions else None
    if query is not None:
        (found,) = yield Round([Call((keys.index(None), query, COUNT_PAGE), script="count")])
        return int(found)
    now_ms = time.time_ns() // 1_000_000
    (names,) = yield Round([Call(("ZRANGE", keys.registry, f"({now_ms}", "+inf", "BYSCORE"))])
    spaces = _live_under(names, prefix)
    if not spaces:
        return 0
    if not conditions:
        counts = yield Round(
            [Call(("ZCOUNT", keys.zset(ns), f"({now_ms}", "+inf")) for ns in spaces]
        )
        return sum(int(n) for n in counts)
    total = 0
    for i in range(0, len(spaces), READ_GROUP):
        group = spaces[i : i + READ_GROUP]
        replies = yield Round([Call((now_ms, "0"), "read_ns", (keys.zset(ns),)) for ns in group])
        rows = (row for reply in replies for row in load_json(reply))
        total += sum(matches(Record.parse(row[0], row[1]).value, conditions) for row in rows)
    return total


def delete_namespace_plan(
    keys: Keys, mode: Mode, prefix: tuple[str, ...], cluster: bool = False
) -> Steps:
    """Delete ``prefix`` and every namespace below it with their items and bookkeeping; returns
    how many live items went (see the module docstring for atomicity)."""
    base, qe = nsp.join(prefix), "1" if mode == "query_engine" else "0"
    (names,) = yield Round([Call(("ZRANGE", keys.registry, 0, -1))])
    spaces = _live_under(names, prefix)
    if cluster and not spaces:
        return 0
    if cluster:
        now_ms = time.time_ns() // 1_000_000
        drops = [Call((now_ms, qe, "0", base, ns), "drop", (keys.zset(ns),)) for ns in spaces]
        replies = yield Round(drops)
        return sum(int(r[1]) for r in replies)
    # Each repeat knows at least one more namespace (created meanwhile, under the prefix).
    while True:
        now_ms = time.time_ns() // 1_000_000
        zsets = tuple(keys.zset(ns) for ns in spaces)
        (reply,) = yield Round(
            [Call((now_ms, qe, "1", base, *spaces), script="drop", keys=(keys.registry, *zsets))]
        )
        if int(reply[0]) == 1:
            return int(reply[1])
        spaces = sorted({*spaces, *map(text, reply[1:])})
