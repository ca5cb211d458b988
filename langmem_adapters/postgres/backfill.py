"""The ``tsv`` of vector rows written before their table's store was hybrid (or by a non-hybrid
store), filled by a hybrid store's ``setup()`` from the items' values: a page of rows per round, in
key order, each row's text read again and used only if it is still the text its vector was
embedded from."""

from __future__ import annotations

import re
from typing import Any

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.hybrid import HybridSpec
from langmem_adapters.core.vectors import IndexSpec, extract_texts, text_hash
from langmem_adapters.postgres import sql
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import Round, Statement

__all__ = ["BACKFILL_PAGE", "backfill_plan"]

#: Vector rows whose ``tsv`` a hybrid store's ``setup()`` fills per round.
BACKFILL_PAGE = 1000

_FANNED = re.compile(r"^(.*)\.(\d+)$")


def _indexed_text(value: Any, field: str, digest: str) -> str | None:
    """The text a vector row of ``field`` was embedded from, read again from the item's value: a
    field path, or a ``[*]`` path's element (``path.<i>``); ``None`` unless its hash is the row's."""
    paths = [field]
    if (m := _FANNED.match(field)) is not None:
        paths.append(m.group(1))
    for path in paths:
        for name, text in extract_texts(value, [path]):
            if name == field and text_hash(text) == digest:
                return text
    return None


def backfill_plan(t: Tables, spec: IndexSpec, hybrid: HybridSpec) -> Steps[int]:
    """Fill ``tsv`` of the vector rows that have none (written before the store was hybrid, or by a
    non-hybrid store), from their items' values, a page per round in key order; how many rows. A
    row whose text cannot be read again (its hash no longer matches) gets an empty ``tsvector``:
    no lexical side, and it is not read again."""
    vt = t.vectors(spec)
    after: tuple[str, str, str] = ("", "", "")
    filled = 0
    while True:
        select = (
            f"SELECT v.ns, v.key, v.field, v.text_hash, s.value FROM {vt} v "
            f"JOIN {t.store} s ON s.ns = v.ns AND s.key = v.key "
            f"WHERE v.tsv IS NULL AND (v.ns, v.key, v.field) > (%s, %s, %s) "
            f"ORDER BY v.ns, v.key, v.field LIMIT {BACKFILL_PAGE}"
        )
        (rows,) = yield Round([Statement(select, list(after))])
        if not rows:
            return filled
        cells = [(ns, key, f, h, _indexed_text(value, f, h) or "") for ns, key, f, h, value in rows]
        columns = (("ns", "text"), ("key", "text"), ("field", "text"), ("h", "text"), ("x", "text"))
        source, params = sql.row_source(columns, cells)
        update = (
            f"UPDATE {vt} v SET tsv = {sql.tsvector_sql(hybrid.text_config, 'r.x')} "
            f"FROM {source} WHERE v.ns = r.ns AND v.key = r.key AND v.field = r.field "
            f"AND v.text_hash = r.h AND v.tsv IS NULL"
        )
        yield Round([Statement(update, params, fetch=False)])
        filled += len(rows)
        after = (rows[-1][0], rows[-1][1], rows[-1][2])
        if len(rows) < BACKFILL_PAGE:
            return filled
