"""Hybrid retrieval, the part both backends share: the ``index={"hybrid": ...}`` option, the words of
a text (for client-side BM25 and escaped server queries), and reciprocal rank fusion of a lexical and
a vector ranking into one page.

A hybrid search ranks each candidate by ``vector_weight / (k + vector_rank) + lexical_weight / (k +
lexical_rank)`` (ranks from 1; a side that did not return the item adds nothing), the fusion Cormack
et al. (2009) proposed and Graphiti and Elasticsearch use: it needs no score calibration between a
cosine similarity and a text rank, so it works with any embedder and any text-search configuration.
The fused value is the item's ``score``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "FLOOR",
    "MAX_QUERY_CHARS",
    "RARE_SHARE",
    "RRF_K",
    "HybridSpec",
    "clean_query",
    "fuse",
    "words",
]

K = TypeVar("K", bound=Hashable)

# The fusion constant of Cormack et al.: large enough that the first few ranks of one side do not
# drown the other side, small enough that rank still matters within a page.
RRF_K = 60

_WORD = re.compile(r"\w+", re.UNICODE)

#: A query word takes part in the lexical side when at most this share of the collection's indexed
#: texts holds it (or no more texts than the page asks for, see ``HybridSpec.rare_bound``): an
#: inverse-document-frequency threshold, the same on every backend and at every size. The lexical side is for what a question names specifically
#: (an order number, an error code, a path), which few memories hold; words many memories share
#: are the vector side's job. 0.5% is ``idf = ln(1 + 199.5)`` ~ 5.3 nats: on the retrieval
#: benchmark it met both targets of #18 (see docs/hybrid.md); a word held by more (an error code in
#: 2% of the memories) is left to the vector side.
RARE_SHARE = 0.005

#: The lexical side ranks only items scoring at least this fraction of the best one: an item that
#: shares only common words with the query (and so scores far lower than one holding its rare
#: identifier) would otherwise take a lexical rank, and fusion would lift it above the item sought.
FLOOR = 0.5

#: How much of a query's text the lexical side parses: a longer text is no keyword query, and a
#: bound keeps the server's query small whatever a caller sends.
MAX_QUERY_CHARS = 2000

# What a server's text parameter cannot carry (NUL, lone surrogates): replaced by spaces.
_UNSENDABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass(frozen=True)
class HybridSpec:
    """Validated hybrid options: the fusion constant, each side's weight, the Postgres text-search
    configuration (``simple``: no stemming or stop words, so identifiers and any language match),
    how many lexical candidates per result wanted (``depth``), which query words are rare enough
    for the lexical side (``rare_share``) and its score floor (``floor``)."""

    k: int = RRF_K
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    text_config: str = "simple"
    depth: int = 4
    rare_share: float = RARE_SHARE
    floor: float = FLOOR

    @classmethod
    def from_option(cls, option: object) -> HybridSpec | None:
        """``None``/``False``: no hybrid; ``True``: the defaults; a dict: the defaults with some
        replaced (``k``, ``lexical_weight``, ``vector_weight``, ``text_config``, ``depth``,
        ``rare_share``, ``floor``)."""
        if option is None or option is False:
            return None
        if option is True:
            return cls()
        if not isinstance(option, Mapping):
            raise InvalidArgumentTypeError(
                f"index 'hybrid' must be True, False or a dict of options, got {option!r}"
            )
        unknown = sorted(set(option) - set(cls.__dataclass_fields__))
        if unknown:
            raise InvalidArgumentError(
                f"unknown index 'hybrid' option(s) {unknown}; "
                f"known: {sorted(cls.__dataclass_fields__)}"
            )
        got: dict[str, Any] = dict(option)
        for name in ("k", "depth"):
            v = got.get(name, 1)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InvalidArgumentError(f"hybrid '{name}' must be a positive integer, got {v!r}")
        for name in ("lexical_weight", "vector_weight"):
            v = got.get(name, 1.0)
            if (
                not isinstance(v, (int, float))
                or isinstance(v, bool)
                or not math.isfinite(v)
                or v < 0
            ):
                raise InvalidArgumentError(
                    f"hybrid '{name}' must be a finite number >= 0, got {v!r}"
                )
            got[name] = float(v)
        for name in ("rare_share", "floor"):
            if name not in got:
                continue
            v = got[name]
            if (
                not isinstance(v, (int, float))
                or isinstance(v, bool)
                or not math.isfinite(v)
                or not 0 <= v <= 1
            ):
                raise InvalidArgumentError(
                    f"hybrid '{name}' must be a number from 0 to 1, got {v!r}"
                )
            got[name] = float(v)
        config = got.get("text_config", "simple")
        if not isinstance(config, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", config):
            raise InvalidArgumentError(
                f"hybrid 'text_config' must be a text search configuration name, got {config!r}"
            )
        return cls(**got)

    def candidates(self, offset: int, limit: int) -> int:
        """How many candidates the lexical side ranks for a page ending at ``offset + limit`` (the
        vector side ranks the page itself, as a vector-only search: an item past it that the
        lexical side ranks still enters the fusion by its lexical rank)."""
        return max(20, self.depth * (offset + limit))

    def rare_bound(self, size: float, page: int) -> int:
        """The most texts of a collection of ``size`` that may hold a query word the lexical side
        uses, for a page ending at ``page``: ``max(1, page, rare_share x size)``. Rare relative to
        the collection, or held by no more texts than the page asks for (alone, such a word cannot
        fill the lexical side with more items than the page holds, so a small collection keeps an
        identifier a few of its memories share)."""
        return max(1, page, math.floor(self.rare_share * size))

    def rare(self, counts: Mapping[str, float], size: float, page: int) -> list[str]:
        """The words of ``counts`` (word -> texts holding it, in query order) the lexical side
        uses in a collection of ``size`` texts for a page ending at ``page``: those held by at
        most :meth:`rare_bound`."""
        bound = self.rare_bound(size, page)
        return [w for w, n in counts.items() if n <= bound]

    def floored(self, scores: Sequence[float]) -> int:
        """How many of a lexical ranking's ``scores`` (best first) it keeps: those at least
        ``floor`` times the best."""
        best = scores[0] if scores else 0.0
        return sum(1 for s in scores if s >= self.floor * best)


def words(text: str) -> list[str]:
    """The lower-cased words (Unicode letters, digits, underscore) of ``text``: how client-side
    BM25 tokenizes, and the only characters a server query is built from, so no query syntax of the
    caller's text reaches a server."""
    return [w.casefold() for w in _WORD.findall(text)]


def clean_query(text: str) -> str:
    """The query text a server parses for the lexical side: at most ``MAX_QUERY_CHARS``
    characters, NUL and lone surrogates replaced by spaces (a server cannot receive them)."""
    return _UNSENDABLE.sub(" ", text[:MAX_QUERY_CHARS])


def fuse(vector: Sequence[K], lexical: Sequence[K], spec: HybridSpec) -> list[tuple[K, float]]:
    """Reciprocal rank fusion of two rankings (best first, each key at most once), best first; ties
    keep the vector ranking's order, then the lexical one's. A side weighted 0 is left out
    (``vector_weight=0``: a lexical-only ranking)."""
    sides = [(vector, spec.vector_weight), (lexical, spec.lexical_weight)]
    sides = [(ranking, weight) for ranking, weight in sides if weight > 0]
    scores: dict[K, float] = {}
    for ranking, weight in sides:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (spec.k + rank)
    first: dict[K, int] = {}
    for i, key in enumerate(key for ranking, _ in sides for key in ranking):
        first.setdefault(key, i)
    return sorted(scores.items(), key=lambda kv: (-kv[1], first[kv[0]]))
