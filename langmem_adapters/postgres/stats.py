"""The Postgres stores' search statistics: the shared sizes and calibration
(:class:`~langmem_adapters.core.vectors.SearchStats`) plus when the lexical side's copy of the
word statistics was last renewed."""

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
