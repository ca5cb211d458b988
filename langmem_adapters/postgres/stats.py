"""The Postgres stores' search statistics: the shared sizes and calibration
(:class:`~langmem_adapters.core.vectors.SearchStats`) plus when the lexical side's copy of the
word statistics was last renewed, with the namespaces' shares of the rows."""

from __future__ import annotations

from dataclasses import dataclass, field

from langmem_adapters.core.refresh import Refreshed
from langmem_adapters.core.vectors import SearchStats

__all__ = ["PostgresStats"]


@dataclass
class PostgresStats(SearchStats):
    """Search statistics of one Postgres store (one vector generation)."""

    #: When the lexical side's copy of the word statistics was last renewed (``postgres/lexical.py``).
    lexicon: Refreshed = field(default_factory=Refreshed)
    #: The share of the rows holding each namespace word ANALYZE recorded (``schema.ns_words``),
    #: read with that copy: which words of a search's prefix the lexical side looks up.
    namespace_shares: dict[str, float] = field(default_factory=dict)
