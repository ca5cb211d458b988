"""The page of a Postgres query search with each item's score: the vector side's rows, or for a
hybrid search their fusion with the lexical statement's rows (``core.hybrid.fuse``, or
``core.information`` for ``fusion="information"``).

The lexical statement carries an item's columns only for the rows within the page
(``postgres.lexical.lexical_search``): enough for relative and rank fusion, where no row past it
can reach the fused page. The information fusion ranks every candidate by its distance too, so a
lexical candidate past the lexical page can: the items of such rows are read in a second round,
sent only when the fused page holds one (sending every candidate's columns in the first round cost
+5% of a global search, +16% of a namespace one: docs/hybrid.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from langgraph.store.base import SearchOp

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.hybrid import HybridSpec, fuse
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import (
    ITEM_COLUMNS,
    KEY,
    LIVE,
    Round,
    Statement,
    VectorRow,
    filter_sql,
    row_source,
)

__all__ = ["LexicalRow", "Scored", "fuse_rows", "scored_page"]

Scored = list[tuple[Sequence[Any], float]]
"""A page's rows (``ITEM_COLUMNS`` first), each with its score."""


class LexicalRow(NamedTuple):
    """A row of the lexical statement: ``ITEM_COLUMNS`` (all but the key NULL past the lexical
    page), the lexical score (the IDF sum of the query words the item holds) and, for the
    information fusion, the item's distance to the query vector."""

    ns: str
    key: str
    value: Any
    created_at: datetime | None
    updated_at: datetime | None
    ttl_minutes: float | None
    score: float
    distance: float | None = None


def scored_page(
    t: Tables,
    spec: IndexSpec,
    op: SearchOp,
    conditions: tuple[Condition, ...],
    vector_rows: Sequence[Sequence[Any]],
    lexical_rows: Sequence[Sequence[Any]] | None,
) -> Steps[Scored]:
    """A query search's page with each item's score: the vector rows' similarity (``vector_rows``
    are the page), or with ``lexical_rows`` (a hybrid search, ``vector_rows`` its candidates) the
    fused page of :func:`fuse_rows`, its items that came without their columns read in one more
    round (live and passing the filters still; one gone since is left out)."""
    if lexical_rows is None or spec.hybrid is None:
        return [(r, spec.score(float(r[6]))) for r in vector_rows]
    page = fuse_rows(spec.hybrid, vector_rows, lexical_rows, op.offset, op.limit)
    missing = [(r[0], r[1]) for r, _ in page if r[2] is None]
    if not missing:
        return page
    (got,) = yield Round([_items_statement(t, conditions, missing)])
    found = {(r[0], r[1]): r for r in got}
    kept = [(found.get((r[0], r[1])) if r[2] is None else r, score) for r, score in page]
    return [(r, score) for r, score in kept if r is not None]


def _items_statement(
    t: Tables, conditions: tuple[Condition, ...], keys: list[tuple[str, str]]
) -> Statement:
    """The live items of ``keys`` (namespace text, key) that pass the filters (``ITEM_COLUMNS``)."""
    source, params = row_source(KEY, keys)
    f_sql, f_params = filter_sql(conditions, "i.value")
    return Statement(
        f"SELECT {ITEM_COLUMNS.format(a='i')} FROM {t.store} i "
        f"JOIN {source} ON i.ns = r.ns AND i.key = r.key WHERE {LIVE.format(a='i')} AND {f_sql}",
        [*params, *f_params],
    )


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
    can (see :func:`scored_page`)."""
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
