"""Export and restore on Redis: one page of ``iter_items`` read from the namespace registry and the
namespace ZSETs, and one page of ``restore`` written by the write script (op ``r``).

A page of items reads the live namespaces under the prefix (the registry), then the live keys of
the next namespaces in order (their ZSETs, a few namespaces per round, more while the page is
short), then the items themselves. The ZSETs are ordered by expiry, not by key: each page reads (and
sorts here) every live key of the namespaces it reaches into.

A restore page is one write-script call, so it is applied whole or not at all; on a Redis Cluster
it is, like a batch, a registry step and then one call per namespace (each atomic).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Generator
from datetime import timedelta
from typing import Any

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.embedding import Embed
from langmem_adapters.core.ops import Write
from langmem_adapters.core.records import Cursor, StoredItem
from langmem_adapters.core.store import ItemsPage
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.layout import EPOCH, NO_EXPIRY, Keys, Mode, datetime_of, text
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.writes import (
    Entry,
    delete_entry,
    embed_writes,
    lexical_text,
    restore_entry,
    write_rounds,
)

__all__ = ["items_plan", "restore_plan"]


def _under(ns_text: str, base: str) -> bool:
    """Whether a namespace text lies under the prefix text ``base`` (whole labels)."""
    return not base or ns_text == base or ns_text.startswith(base + nsp.SEP)


def _keys_after(keys: Keys, ns_text: str, members: list[Any], after: Cursor) -> list[str]:
    """The item keys of a namespace's ZSET members, sorted, after the cursor."""
    start = len(keys.item(ns_text, ""))
    found = sorted(text(m)[start:] for m in members)
    if ns_text == after[0]:
        found = found[bisect.bisect_right(found, after[1]) :]
    return found


def _stored(reply: Any, now_ms: int) -> StoredItem | None:
    """The item of an ``HMGET m c x`` reply, None when it is gone or expired."""
    meta, created, x = reply
    if meta is None or x is None or int(x) <= now_ms:
        return None
    r = Record.parse(meta, created)
    expires = None if int(x) >= NO_EXPIRY else EPOCH + timedelta(milliseconds=int(x))
    return StoredItem(
        r.namespace, r.key, r.value, datetime_of(r.created), datetime_of(r.updated), expires, r.ttl
    )


def items_plan(
    keys: Keys, prefix: tuple[str, ...], after: Cursor, limit: int
) -> Generator[Round, list[Any], ItemsPage]:
    """Up to ``limit`` live items under ``prefix`` after ``after``, in (namespace text, key) order,
    and the cursor of the next page (None when this one is the last)."""
    now_ms = time.time_ns() // 1_000_000
    (names,) = yield Round([Call(("ZRANGE", keys.registry, f"({now_ms}", "+inf", "BYSCORE"))])
    base = nsp.join(prefix)
    spaces = sorted(n for n in map(text, names) if n >= after[0] and _under(n, base))
    items: list[StoredItem] = []
    group = 4  # namespaces whose keys one round reads; grows while the page stays short
    while spaces and len(items) < limit:
        batch, spaces, group = spaces[:group], spaces[group:], min(group * 4, 1024)
        members = yield Round(
            [Call(("ZRANGE", keys.zset(ns), f"({now_ms}", "+inf", "BYSCORE")) for ns in batch]
        )
        wanted = [(ns, k) for ns, m in zip(batch, members) for k in _keys_after(keys, ns, m, after)]
        while wanted and len(items) < limit:  # items that expired meanwhile are read past
            chunk, wanted = wanted[: limit - len(items)], wanted[limit - len(items) :]
            replies = yield Round(
                [Call(("HMGET", keys.item(ns, k), "m", "c", "x")) for ns, k in chunk]
            )
            items += [item for item in (_stored(r, now_ms) for r in replies) if item]
    return items, (items[-1].cursor if len(items) == limit else None)


def restore_plan(
    keys: Keys,
    mode: Mode,
    spec: IndexSpec | None,
    records: list[tuple[StoredItem, str]],
    cluster: bool = False,
) -> Generator[Embed | Round, Any, int]:
    """Write checked records (with their value JSON) as they were, in one write-script call: value,
    timestamps, expiry and TTL kept, with a put's bookkeeping, vectors for the store's index (stored
    ones of unchanged text reused). A record already expired deletes the item. Returns how many."""
    now_us = time.time_ns() // 1000
    vectors = {}
    if spec is not None:
        writes = [Write(r.namespace, r.key, r.value, j, None, r.ttl_minutes) for r, j in records]
        vectors = yield from embed_writes(keys, spec, writes)
    now = EPOCH + timedelta(microseconds=now_us)
    entries: list[Entry] = []
    for r, value_json in records:
        ns_text = nsp.join(r.namespace)
        if r.expires_at is not None and r.expires_at <= now:
            entries.append(delete_entry(ns_text, r.key))
        else:
            vecs = vectors.get((ns_text, r.key), [])
            words = lexical_text(spec, r.value, None)
            entries.append(restore_entry(mode, r, value_json, vecs, words))
    for request in write_rounds(keys, mode, now_us, entries, cluster) if entries else ():
        _written = yield request  # the script's count of puts; every record was applied
    return len(records)
