"""The page of a Postgres query search with each item's score: the vector side's rows, or for a
hybrid search the fusion of its two sides' candidates (``core.hybrid.fuse``, or
``core.information`` for ``fusion="information"``).

A hybrid search's sides come back in one round: the vector side's page with its items, the
lexical side's candidates by key and score, those ranked around the page (``lexical.valued``)
with their items too, so that the fused page's items are at hand without a second round trip in most
searches (the page held only those items on 88% / 97% of LongMemEval's questions, global /
namespace, and 83% / 85% of LoCoMo's; docs/hybrid.md). The page's other items are read in one
more round (``postgres.search.items_statement``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from langmem_adapters.core.hybrid import HybridSpec, fuse
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.sql import ItemRow, VectorRow

__all__ = [
    "Fused",
    "Items",
    "LexicalRow",
    "Scored",
    "fuse_rows",
    "known_items",
    "rows_by_key",
    "scored_rows",
    "with_items",
]

Scored = list[tuple[Sequence[Any], float]]
"""A page's rows (``ITEM_COLUMNS`` first), each with its score."""

Fused = list[tuple[tuple[str, str], float]]
"""A hybrid page: each item's key (namespace text, key) with its fused score, best first."""

Items = dict[tuple[str, str], ItemRow]
"""Items read by a hybrid search, by key (namespace text, key)."""


class LexicalRow(NamedTuple):
    """A row of the lexical statement: the item's key, its lexical score (the IDF sum of the query
    words it holds), for the information fusion its distance to the query vector and the query's
    IDF mass (the weights of every query word the statement weighed), and the item's other
    columns (``ITEM_COLUMNS``), its ``value`` only for the candidates ranked around the page
    (``lexical.valued``; NULL for the rest: an item's value is never NULL)."""

    ns: str
    key: str
    score: float
    distance: float | None
    mass: float | None
    value: Any
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None


def scored_rows(spec: IndexSpec, vector_rows: Sequence[Sequence[Any]]) -> Scored:
    """A vector search's page (``VectorRow``s) with each item's similarity."""
    return [(r, spec.score(float(r[6]))) for r in vector_rows]


def fuse_rows(
    hybrid: HybridSpec,
    vector: Sequence[VectorRow],
    lexical: Sequence[LexicalRow],
    offset: int,
    limit: int,
) -> Fused:
    """The page ``[offset, offset + limit)`` of the fusion of the two sides' rows (each best
    first), each item's key with its fused score."""
    lexical = lexical[: hybrid.floored([float(r.score) for r in lexical])]
    if hybrid.fusion == "information":
        fused = fuse_information(
            [VectorCandidate((r.ns, r.key), float(r.distance)) for r in vector],
            [_candidate(r) for r in lexical],
            hybrid,
            page=offset + limit,
            depth=hybrid.candidates(offset, limit),
            mass=float(lexical[0].mass or 0.0) if lexical else 0.0,
        )
    else:
        fused = fuse(
            [((r.ns, r.key), -float(r.distance)) for r in vector],
            [((r.ns, r.key), float(r.score)) for r in lexical],
            hybrid,
        )
    return fused[offset : offset + limit]


def known_items(vector: Sequence[VectorRow], lexical: Sequence[LexicalRow]) -> Items:
    """The items a hybrid search's sides read with their candidates: every one of the vector
    side's page, and the lexical side's read around the page (those with a value). An item both
    read keeps the vector side's row (read last when the vector side fell back to an exact
    query)."""
    items = rows_by_key([v[:6] for v in vector])  # a vector row: ITEM_COLUMNS, then its distance
    for r in lexical:
        if r.value is not None:
            row = ItemRow(r.ns, r.key, r.value, r.created_at, r.updated_at, r.ttl_minutes)
            items.setdefault((r.ns, r.key), row)
    return items


def rows_by_key(rows: Iterable[Sequence[Any]]) -> Items:
    """Items read by key (``ITEM_COLUMNS`` rows)."""
    return {(r.ns, r.key): r for r in map(ItemRow._make, rows)}


def with_items(fused: Fused, items: Items) -> Scored:
    """The fused page with its items' rows, in the fused order; an item not found (deleted or
    expired since it was scored, when it was read after the fusion) is left out."""
    return [(items[key], score) for key, score in fused if key in items]


def _candidate(row: LexicalRow) -> LexicalCandidate[tuple[str, str]]:
    """A lexical row of the information fusion as its candidate (its distance is always read)."""
    assert row.distance is not None, "the lexical statement read no distance"
    return LexicalCandidate((row.ns, row.key), float(row.score), float(row.distance))
