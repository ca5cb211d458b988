"""Namespace-wide operations on Redis: the plans of ``count`` and ``delete_namespace``.

``count`` in Query Engine mode with filters the index answers exactly (see
:func:`~langmem_adapters.redis.tokens.pushdown`) is one ``count`` script call on the server; otherwise
it reads the live namespaces under the prefix from the registry and their ZSETs: a ``ZCOUNT`` each
without a filter, else their live items (one ``read_ns`` call each, 64 per round) checked here.

``delete_namespace`` deletes a batch at a time (``DROP_BATCH`` items and namespaces per ``drop``
script call) so that no call blocks the server, or outlasts a client's socket timeout, for long: one
call for 100k items in Query Engine mode with vectors took 7.3 s (the client timed out while the
server went on deleting), 250 items per call take at most ~20 ms each and the same total (16-d
vectors, ``benchmarks/bench_drop.py``, 2026-12-04; per item costs grow with the vector index, hence
a batch well below 50 ms). Each call leaves every namespace whole: it deletes a namespace's items
from its lowest expiry up with their ZSET entries (its top, the registry's score, goes last), and a
namespace's ZSET and registry entry with its last item. On a single server the calls take the
namespaces in order; the one that empties the last of them re-reads the registry and names the
namespaces created meanwhile under the prefix, which are deleted next: the call returns once the
prefix was found empty. On a Redis Cluster the namespaces live in different slots: one call per
namespace, rounds of namespaces holding a batch in all, and the registry entries stay until they
age out (readers there check each namespace's ZSET).
"""

from __future__ import annotations

import time
from typing import Any

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition, matches
from langmem_adapters.redis.layout import Keys, Mode, text, under
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.tokens import path_token, pushdown

__all__ = ["count_plan", "delete_namespace_plan"]

#: Documents the ``count`` script reads per ``FT.SEARCH`` page.
COUNT_PAGE = 10_000
#: Namespaces whose items one round of a filtered count reads.
READ_GROUP = 64
#: Most ZSET entries (items) and namespaces one ``drop`` call deletes: see the module docstring.
DROP_BATCH = 250


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
        # Each reply: a flat array of its items' meta and created (see lua/read_ns.lua).
        rows = ((reply[at], reply[at + 1]) for reply in replies for at in range(0, len(reply), 2))
        total += sum(
            matches(Record.parse(meta, created).value, conditions) for meta, created in rows
        )
    return total


def delete_namespace_plan(
    keys: Keys, mode: Mode, prefix: tuple[str, ...], cluster: bool = False
) -> Steps:
    """Delete ``prefix`` and every namespace below it with their items and bookkeeping, a batch
    per script call; returns how many live items went (see the module docstring)."""
    base, qe = nsp.join(prefix), "1" if mode == "query_engine" else "0"
    (names,) = yield Round([Call(("ZRANGE", keys.registry, 0, -1))])
    spaces = _live_under(names, prefix)
    if cluster:
        return (yield from _drop_each(keys, qe, base, spaces))
    removed = 0
    while True:
        # the first namespaces (a batch of them at most); the registry checked with the last ones
        given = spaces[:DROP_BATCH]
        check = "2" if len(given) == len(spaces) else "1"
        now_ms = time.time_ns() // 1_000_000
        zsets = tuple(keys.zset(ns) for ns in given)
        args = (now_ms, qe, check, base, DROP_BATCH, *given)
        (reply,) = yield Round([Call(args, script="drop", keys=(keys.registry, *zsets))])
        removed += int(reply[0])
        emptied, listed = int(reply[1]), [text(ns) for ns in reply[2:]]
        if check == "2" and emptied == len(given) and not listed:
            return removed
        # listed: created under the prefix meanwhile (only when every given one went)
        spaces = sorted({*spaces[emptied:], *listed})


def _drop_each(keys: Keys, qe: str, base: str, spaces: list[str]) -> Steps:
    """Cluster: one ``drop`` call per namespace (its own slot), rounds of namespaces whose
    entries add up to a batch (a pipeline runs on a node back to back); returns the live items
    deleted."""
    if not spaces:
        return 0
    sizes = yield Round([Call(("ZCARD", keys.zset(ns))) for ns in spaces])
    pending = {ns: int(n) for ns, n in zip(spaces, sizes)}
    removed = 0
    while pending:
        group: list[str] = []
        budget = DROP_BATCH
        for ns, size in pending.items():
            if group and size + 1 > budget:
                break
            group.append(ns)
            budget -= size + 1
        now_ms = time.time_ns() // 1_000_000
        replies = yield Round(
            [
                Call((now_ms, qe, "0", base, DROP_BATCH, ns), "drop", (keys.zset(ns),))
                for ns in group
            ]
        )
        for ns, reply in zip(group, replies):
            removed += int(reply[0])
            if int(reply[1]):
                del pending[ns]
            else:  # more than a batch: alone in its next rounds
                pending[ns] = DROP_BATCH
    return removed
