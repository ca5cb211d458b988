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

__all__ = ["MAX_QUERY_CHARS", "RRF_K", "HybridSpec", "clean_query", "fuse", "words"]

K = TypeVar("K", bound=Hashable)

# The fusion constant of Cormack et al.: large enough that the first few ranks of one side do not
# drown the other side, small enough that rank still matters within a page.
RRF_K = 60

_WORD = re.compile(r"\w+", re.UNICODE)

#: How much of a query's text the lexical side parses: a longer text is no keyword query, and a
#: bound keeps the server's query small whatever a caller sends.
MAX_QUERY_CHARS = 2000

# What a server's text parameter cannot carry (NUL, lone surrogates): replaced by spaces.
_UNSENDABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass(frozen=True)
class HybridSpec:
    """Validated hybrid options: the fusion constant, each side's weight, the Postgres text-search
    configuration (``simple``: no stemming or stop words, so identifiers and any language match),
    and how many candidates each side contributes per result wanted (``depth``)."""

    k: int = RRF_K
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    text_config: str = "simple"
    depth: int = 4

    @classmethod
    def from_option(cls, option: object) -> HybridSpec | None:
        """``None``/``False``: no hybrid; ``True``: the defaults; a dict: the defaults with some
        replaced (``k``, ``lexical_weight``, ``vector_weight``, ``text_config``, ``depth``)."""
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
        config = got.get("text_config", "simple")
        if not isinstance(config, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", config):
            raise InvalidArgumentError(
                f"hybrid 'text_config' must be a text search configuration name, got {config!r}"
            )
        return cls(**got)

    def candidates(self, offset: int, limit: int) -> int:
        """How many candidates each side ranks for a page ending at ``offset + limit``."""
        return max(20, self.depth * (offset + limit))


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
