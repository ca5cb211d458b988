"""The page of a Postgres query search with each item's score: the vector side's rows, or for a
hybrid search their fusion with the lexical statement's rows (``core.hybrid.fuse``, or
``core.information`` for ``fusion="information"``).

Under relative and rank fusion the lexical statement carries an item's columns only for the rows
within the page (``postgres.lexical.lexical_search``), as no row past it can reach the fused page.
The information fusion ranks every candidate by its distance too, so any can: every row carries its
columns. (Reading only the page's in the first round and any other the fusion put on the page in a
second one was measured 8% faster on LongMemEval, 3-8% in a second run: under the 10% a special
case must earn, docs/hybrid.md.)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from langgraph.store.base import SearchOp

from langmem_adapters.core.hybrid import HybridSpec, fuse
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.sql import VectorRow

__all__ = ["LexicalRow", "Scored", "fuse_rows", "scored_rows"]

Scored = list[tuple[Sequence[Any], float]]
"""A page's rows (``ITEM_COLUMNS`` first), each with its score."""


class LexicalRow(NamedTuple):
    """A row of the lexical statement: ``ITEM_COLUMNS`` (all but the key NULL past the lexical
    page, unless the fusion is ``information``), the lexical score (the IDF sum of the query words
    the item holds) and, for the information fusion, the item's distance to the query vector."""

    ns: str
    key: str
    value: Any
    created_at: datetime | None
    updated_at: datetime | None
    ttl_minutes: float | None
    score: float
    distance: float | None = None


def scored_rows(
    spec: IndexSpec,
    op: SearchOp,
    vector_rows: Sequence[Sequence[Any]],
    lexical_rows: Sequence[Sequence[Any]] | None,
) -> Scored:
    """A query search's page with each item's score: the vector rows' similarity (``vector_rows``
    are the page), or with ``lexical_rows`` (a hybrid search, ``vector_rows`` its candidates) the
    fused page of :func:`fuse_rows`."""
    if lexical_rows is None or spec.hybrid is None:
        return [(r, spec.score(float(r[6]))) for r in vector_rows]
    return fuse_rows(spec.hybrid, vector_rows, lexical_rows, op.offset, op.limit)


def fuse_rows(
    hybrid: HybridSpec,
    vector_rows: Sequence[Sequence[Any]],
    lexical_rows: Sequence[Sequence[Any]],
    offset: int,
    limit: int,
) -> Scored:
    """The page ``[offset, offset + limit)`` of the fusion of the two sides' rows (each best
    first: ``VectorRow``s, ``LexicalRow``s), with each item's fused score. Under relative or rank
    fusion a lexical row past the lexical page (its columns NULL) cannot reach the page: each of
    the page's lexical rows scores at least as high on that side and comes first on ties, and the
    fusion adds each side's share, never less for a higher score. Under the information fusion it
    can, and every lexical row carries its columns."""
    lexical = [LexicalRow(*r) for r in lexical_rows]
    lexical = lexical[: hybrid.floored([float(r.score) for r in lexical])]
    vector = [VectorRow._make(r) for r in vector_rows]
    rows: dict[tuple[str, str], Sequence[Any]] = {(r.ns, r.key): r for r in lexical}
    rows.update(((r.ns, r.key), r) for r in vector)
    if hybrid.fusion == "information":
        fused = fuse_information(
            [VectorCandidate((r.ns, r.key), float(r.distance)) for r in vector],
            [_candidate(r) for r in lexical],
            hybrid,
            page=offset + limit,
            depth=hybrid.candidates(offset, limit),
        )
        return [(rows[key], score) for key, score in fused[offset : offset + limit]]
    fused = fuse(
        [((r.ns, r.key), -float(r.distance)) for r in vector],
        [((r.ns, r.key), float(r.score)) for r in lexical],
        hybrid,
    )
    page = [(rows[key], score) for key, score in fused[offset : offset + limit]]
    assert all(r[2] is not None for r, _ in page), "a lexical row past the page reached it"
    return page


def _candidate(row: LexicalRow) -> LexicalCandidate[tuple[str, str]]:
    """A lexical row of the information fusion as its candidate (its distance is always read)."""
    assert row.distance is not None, "the lexical statement read no distance"
    return LexicalCandidate((row.ns, row.key), float(row.score), float(row.distance))
