"""The page of a Postgres query search with each item's score: the vector side's rows, or for a
hybrid search the fusion of its two sides' candidates (``core.hybrid.fuse``, or
``core.information`` for ``fusion="information"``).

A hybrid search's sides name their candidates by key only (``KEY_COLUMNS``, the lexical
statement's keys and scores): the fusion gives the page's keys, whose items are read in one more
round (``postgres.search.items_statement``). Outputting an item's value costs the server ~10 us
(a 2 KB memory's JSON), so a search reading only its page's items instead of every candidate's
(20 vector rows and up to 40 lexical ones) saved 14-16% of a hybrid search with the information
fusion and 10% with relative fusion on LongMemEval (docs/hybrid.md; as fast with 10k short memories).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from langmem_adapters.core.hybrid import HybridSpec, fuse
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.sql import ItemRow, VectorRow

__all__ = ["Fused", "LexicalRow", "Scored", "fuse_rows", "scored_rows", "with_items"]

Scored = list[tuple[Sequence[Any], float]]
"""A page's rows (``ITEM_COLUMNS`` first), each with its score."""

Fused = list[tuple[tuple[str, str], float]]
"""A hybrid page: each item's key (namespace text, key) with its fused score, best first."""


class LexicalRow(NamedTuple):
    """A row of the lexical statement: the item's key, its lexical score (the IDF sum of the query
    words it holds) and, for the information fusion, its distance to the query vector and the
    query's IDF mass (the weights of every query word the statement weighed)."""

    ns: str
    key: str
    score: float
    distance: float | None = None
    mass: float | None = None


def scored_rows(spec: IndexSpec, vector_rows: Sequence[Sequence[Any]]) -> Scored:
    """A vector search's page (``VectorRow``s) with each item's similarity."""
    return [(r, spec.score(float(r[6]))) for r in vector_rows]


def fuse_rows(
    hybrid: HybridSpec,
    vector_rows: Sequence[Sequence[Any]],
    lexical_rows: Sequence[Sequence[Any]],
    offset: int,
    limit: int,
) -> Fused:
    """The page ``[offset, offset + limit)`` of the fusion of the two sides' rows (each best
    first: ``VectorRow``s, ``LexicalRow``s), each item's key with its fused score."""
    lexical = [LexicalRow(*r) for r in lexical_rows]
    lexical = lexical[: hybrid.floored([float(r.score) for r in lexical])]
    vector = [VectorRow._make(r) for r in vector_rows]
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


def with_items(fused: Fused, rows: Sequence[Sequence[Any]]) -> Scored:
    """The fused page with its items' rows (``ITEM_COLUMNS``, read after the fusion), in the
    fused order; an item deleted or expired since it was scored is left out."""
    items = {(r.ns, r.key): r for r in map(ItemRow._make, rows)}
    return [(items[key], score) for key, score in fused if key in items]


def _candidate(row: LexicalRow) -> LexicalCandidate[tuple[str, str]]:
    """A lexical row of the information fusion as its candidate (its distance is always read)."""
    assert row.distance is not None, "the lexical statement read no distance"
    return LexicalCandidate((row.ns, row.key), float(row.score), float(row.distance))
