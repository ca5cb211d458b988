"""The two sides of a Query Engine search: the vector search and, for a hybrid store's query
search, its lexical side (``redis.lexical``, or ``redis.information`` under the information
fusion)."""

from __future__ import annotations

from langgraph.store.base import SearchOp

from langmem_adapters.core.filters import Condition
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.information import Information
from langmem_adapters.redis.layout import Keys
from langmem_adapters.redis.lexical import Lexical
from langmem_adapters.redis.search import Knn, Searcher
from langmem_adapters.redis.stats import RedisStats

__all__ = ["sides"]


def sides(
    keys: Keys,
    spec: IndexSpec | None,
    op: SearchOp,
    conds: tuple[Condition, ...],
    qvec: list[float] | None,
    knn: Knn,
    edges: dict[str, int] | None,
    stats: RedisStats,
) -> tuple[Searcher, Lexical | None]:
    """A Query Engine search's server side: its :class:`Searcher`; for a hybrid store's query
    search, that of the vector side (the first candidates of the same search) and the lexical side
    (``stats``: the store's word counts; under the information fusion, :class:`Information`)."""
    hybrid = spec.hybrid if spec is not None and qvec is not None else None
    if spec is None or qvec is None or hybrid is None:
        return Searcher.build(keys, spec, op, conds, qvec, knn, edges), None
    wide = op._replace(offset=0, limit=op.offset + op.limit)  # as wide as a vector search
    vector = Searcher.build(keys, spec, wide, conds, qvec, knn, edges)
    if hybrid.fusion == "information":
        return vector, Information(keys, vector, op, conds, hybrid, stats)
    return vector, Lexical(keys, vector, op, conds, hybrid, stats)
