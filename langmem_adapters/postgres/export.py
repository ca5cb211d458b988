"""Export and restore on Postgres: the plan reading one page of ``iter_items`` and the plan writing
one page of ``restore`` (timestamps and expiry kept, vectors computed for the store's index).
"""

from __future__ import annotations

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.ops import Write
from langmem_adapters.core.records import Cursor, StoredItem
from langmem_adapters.core.store import ItemsPage
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import LIVE, Round, Statement, ns_condition
from langmem_adapters.postgres.writes import ItemVectors, Stamps, write_statements, write_vectors

__all__ = ["items_plan", "restore_plan"]


def items_plan(t: Tables, prefix: tuple[str, ...], after: Cursor, limit: int) -> Steps[ItemsPage]:
    """Up to ``limit`` live items at or below ``prefix`` (whole labels) that sort after ``after``
    by namespace text then key (the ``COLLATE "C"`` primary key order, read straight off its index),
    and the cursor of the last one (``None`` when the page came back short: nothing follows)."""
    ns_sql, ns_params = ns_condition("s.ns", prefix)
    sql = (
        "SELECT s.ns, s.key, s.value, s.created_at, s.updated_at, s.expires_at, "
        f"s.ttl_minutes FROM {t.store} s WHERE {ns_sql} AND {LIVE.format(a='s')} "
        "AND (s.ns, s.key) > (%s, %s) ORDER BY s.ns, s.key LIMIT %s"
    )
    (rows,) = yield Round([Statement(sql, [*ns_params, *after, limit])])
    items = [
        StoredItem(nsp.split(ns), key, value, created, updated, expires, ttl)
        for ns, key, value, created, updated, expires, ttl in rows
    ]
    return items, ((rows[-1][0], rows[-1][1]) if len(rows) == limit else None)


def restore_plan(
    t: Tables, spec: IndexSpec | None, records: list[tuple[StoredItem, str]]
) -> Steps[int]:
    """Write a page of checked records (never empty, with their value JSON) in one transaction:
    each item upserted with its own value, timestamps, expiry and TTL, its namespace registered,
    and with an index its vectors of the index's fields replaced (stored embeddings of unchanged
    text reused), as a put would."""
    writes = [
        Write(r.namespace, r.key, r.value, value_json, None, r.ttl_minutes)
        for r, value_json in records
    ]
    stamps: dict[tuple[str, str], Stamps] = {
        (nsp.join(r.namespace), r.key): (r.created_at, r.updated_at, r.expires_at)
        for r, _ in records
    }
    vectors: ItemVectors = {}
    if spec is not None:
        vectors = yield from write_vectors(t, spec, writes)
    items, vector_writes = write_statements(t, spec, writes, vectors, stamps=stamps)
    yield Round(items + vector_writes, tx=True)
    return len(records)
