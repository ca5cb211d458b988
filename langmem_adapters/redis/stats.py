"""The Redis stores' search statistics: the shared sizes and calibration
(:class:`~langmem_adapters.core.vectors.SearchStats`) plus the word counts of hybrid search and
the readings of the newest-first search shortcuts (``redis/search.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from langmem_adapters.core.bm25 import Corpus
from langmem_adapters.core.vectors import SearchStats, VectorStats, bounded

__all__ = ["RedisStats"]


@dataclass
class RedisStats(SearchStats):
    """Search statistics of one Redis store."""

    #: How many items hold each word: a hybrid search's lexical side leaves common words out.
    terms: dict[str, VectorStats] = field(default_factory=dict)
    #: The collection's word statistics where a search counts them itself (plain mode).
    corpus: Corpus = field(default_factory=Corpus)
    #: Documents in the items index, 0 while it is not fully built: from a size on, its
    #: newest-first searches try the search script's shortcuts (``redis/search.py``).
    items: VectorStats = field(default_factory=VectorStats)
    #: Per query, the last updated_at of its last newest-first window (``redis/search.py``).
    sort_edges: dict[str, int] = field(default_factory=dict)
    #: Whether the vector index has the exact twin (``redis/schema.py``), read with its size.
    twin: bool = False

    def term(self, word: str) -> VectorStats:
        """The count of items holding ``word`` (Query Engine hybrid search)."""
        return bounded(self.terms, word)
