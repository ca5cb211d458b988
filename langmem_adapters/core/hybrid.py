"""Hybrid retrieval, the part both backends share: the ``index={"hybrid": ...}`` option, the words of
a text (for client-side BM25 and escaped server queries), the query words the lexical side uses
(stop words aside), and the fusion of a lexical and a vector ranking into one page.

The default fusion is ``information`` (``core.information``: both sides in nats, each query word
weighed ``ln(N / df)``, the score a candidate's share of the most a candidate of the search could
carry, 0..1): the one fusion measured over plain BM25 and exact vector search on LongMemEval and
LoCoMo with three embedders (docs/hybrid.md); a store computes it, not :func:`fuse`. The other two
are kept: **relative-score fusion** (``fusion="relative"``, the default until 2026-12-04): each
side's scores are scaled to 0..1 over the candidates it returned (min-max: its best candidate 1, its
last 0; a side returning one candidate gives it 1), and an item's fused score is ``(vector_weight x
v + lexical_weight x l) / (vector_weight + lexical_weight)``, a side that did not return the item
adding 0; and reciprocal rank fusion (``fusion="rrf"``: ``weight / (k + rank)`` per side, Cormack et al.,
2009). The fused value is the item's ``score``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypeVar

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "FLOOR",
    "FUSIONS",
    "MAX_QUERY_CHARS",
    "RARE_SHARE",
    "RRF_K",
    "STOP_WORDS",
    "HybridSpec",
    "clean_query",
    "fuse",
    "query_words",
    "words",
]

K = TypeVar("K", bound=Hashable)

# The fusion constant of Cormack et al.: large enough that the first few ranks of one side do not
# drown the other side, small enough that rank still matters within a page.
RRF_K = 60

_WORD = re.compile(r"\w+", re.UNICODE)

#: The query words that select the lexical side's candidates: those held by at most this share of
#: the collection's indexed texts (or by no more texts than the page asks for, see
#: ``HybridSpec.rare_bound``). Every other word of the query (stop words aside) still adds its
#: weight to the candidates they select, so the ranking is over the query's words among the texts
#: holding at least one of its less common words; a query of common words only has no lexical side
#: (the vector ranking alone). This is also what bounds the lexical side's work: every row holding a
#: selecting word is read (Postgres) or returned by the server (Redis), so the share sets what a
#: search costs. 0.02 (since 2026-12-04, late; 0.05 before): under the information fusion it keeps
#: LongMemEval recall@5 within a point across the collection and 0.8-1.7 points lower in a
#: namespace (WordLlama 0.634 / 0.819 global / namespace against 0.630 / 0.827, MiniLM 0.641 / 0.814
#: against 0.642 / 0.831: over BM25's 0.622 / 0.804 either way), LoCoMo and our identifier set
#: unchanged (``benchmarks/fusion_study.py --rare-share``), and makes a LongMemEval hybrid search
#: 15-22% cheaper, Postgres's at about twice the vector search's time; 0.01 loses 1.3-1.7 points on
#: LoCoMo and the identifier questions. With GloVe, the weakest embedder we check with, the
#: namespace cell falls under BM25 (0.796 against 0.807 at 0.05). The numbers and the other data:
#: docs/hybrid.md, "The selecting share: 2%". (Until 0.x the rule was stricter, 0.005, and the other
#: words were dropped: chosen on the identifier set alone, it dropped the ordinary words
#: conversational questions are made of, and hybrid recall@5 on LongMemEval fell 11 points below
#: plain BM25; see docs/hybrid.md.)
RARE_SHARE = 0.02

#: The lexical side ranks only items scoring at least this fraction of the best one (0: every
#: match). Relative-score fusion already weighs a weak match by its distance from the best, so the
#: default keeps every match.
FLOOR = 0.0

#: The fusions ``HybridSpec.fusion`` names: relative-score fusion, reciprocal rank fusion, and both
#: sides in nats (``core.information``, the default: a store computes it, not :func:`fuse`).
FUSIONS = ("relative", "rrf", "information")

#: English function words the lexical side leaves out of a query (a query of nothing else keeps
#: them): they are in most texts, say nothing of what is asked, and a BM25 over them ranks texts by
#: length. The list is the common core of the NLTK and Lucene English lists, short on purpose:
#: words such as ``first`` or ``last`` can be what a question is about.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)

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
    for the lexical side (``rare_share``), its score floor (``floor``) and the fusion
    (``fusion``: ``relative``, ``rrf`` or ``information``; ``k`` is rrf's constant)."""

    k: int = RRF_K
    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    text_config: str = "simple"
    depth: int = 4
    rare_share: float = RARE_SHARE
    floor: float = FLOOR
    fusion: str = "information"

    @classmethod
    def from_option(cls, option: object) -> HybridSpec | None:
        """``None``/``False``: no hybrid; ``True``: the defaults; a dict: the defaults with some
        replaced (``k``, ``lexical_weight``, ``vector_weight``, ``text_config``, ``depth``,
        ``rare_share``, ``floor``, ``fusion``)."""
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
        return cls(**_checked(dict(option)))

    def candidates(self, offset: int, limit: int) -> int:
        """How many candidates the lexical side ranks for a page ending at ``offset + limit`` (the
        vector side ranks the page itself, as a vector-only search: an item past it that the
        lexical side ranks still enters the fusion by its lexical rank)."""
        return max(20, self.depth * (offset + limit))

    def rare_bound(self, size: float, page: int) -> int:
        """The most texts of a collection of ``size`` that may hold a query word selecting the
        lexical side's candidates, for a page ending at ``page``: ``max(1, page, rare_share x size)``. Rare relative to
        the collection, or held by no more texts than the page asks for (alone, such a word cannot
        fill the lexical side with more items than the page holds, so a small collection keeps an
        identifier a few of its memories share)."""
        return max(1, page, math.floor(self.rare_share * size))

    def rare(self, counts: Mapping[str, float], size: float, page: int) -> list[str]:
        """The words of ``counts`` (word -> texts holding it, in query order) that select the
        lexical side's candidates in a collection of ``size`` texts for a page ending at ``page``:
        those held by at most :meth:`rare_bound` (the others only add to their scores)."""
        bound = self.rare_bound(size, page)
        return [w for w, n in counts.items() if n <= bound]

    def best_score(self) -> float:
        """The highest fused score a search can give (first on every weighted side): 1.0 for
        relative-score fusion and for the ``information`` fusion (its scores are already shares
        of the most a candidate of the search could carry, ``core.information``), ``(vector_weight
        + lexical_weight) / (k + 1)`` for rank fusion."""
        if self.fusion == "rrf":
            return (self.vector_weight + self.lexical_weight) / (self.k + 1)
        return 1.0 if self.vector_weight + self.lexical_weight > 0 else 0.0

    def floored(self, scores: Sequence[float]) -> int:
        """How many of a lexical ranking's ``scores`` (best first) it keeps: those at least
        ``floor`` times the best."""
        best = scores[0] if scores else 0.0
        return sum(1 for s in scores if s >= self.floor * best)


def _checked(got: dict[str, Any]) -> dict[str, Any]:
    """The ``hybrid`` option's given fields, checked (weights and shares as floats); a field not
    given keeps the dataclass's default."""
    for name in ("k", "depth"):
        v = got.get(name)
        if name in got and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise InvalidArgumentError(f"hybrid '{name}' must be a positive integer, got {v!r}")
    for name in ("lexical_weight", "vector_weight"):
        if name in got:
            got[name] = _number(name, got[name], "a finite number >= 0", 0.0, math.inf)
    for name in ("rare_share", "floor"):
        if name in got:
            got[name] = _number(name, got[name], "a number from 0 to 1", 0.0, 1.0)
    if "fusion" in got and got["fusion"] not in FUSIONS:
        raise InvalidArgumentError(
            f"hybrid 'fusion' must be one of {list(FUSIONS)}, got {got['fusion']!r}"
        )
    config = got.get("text_config")
    if "text_config" in got and (
        not isinstance(config, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", config)
    ):
        raise InvalidArgumentError(
            f"hybrid 'text_config' must be a text search configuration name, got {config!r}"
        )
    return got


def _number(name: str, v: object, what: str, least: float, most: float) -> float:
    """``v`` as a float when it is a finite number from ``least`` to ``most``, else the error
    naming the option ``name`` and ``what`` it must be."""
    if (
        not isinstance(v, (int, float))
        or isinstance(v, bool)
        or not math.isfinite(v)
        or not least <= v <= most
    ):
        raise InvalidArgumentError(f"hybrid '{name}' must be {what}, got {v!r}")
    return float(v)


def words(text: str) -> list[str]:
    """The lower-cased words (Unicode letters, digits, underscore) of ``text``: how client-side
    BM25 tokenizes, and the only characters a server query is built from, so no query syntax of the
    caller's text reaches a server."""
    return [w.casefold() for w in _WORD.findall(text)]


def query_words(text: str) -> list[str]:
    """The distinct words of a query (:func:`words`, in order) the lexical side matches: all but
    the :data:`STOP_WORDS`, or all of them when nothing else is left ("who am I?")."""
    found = list(dict.fromkeys(words(text)))
    kept = [w for w in found if w not in STOP_WORDS]
    return kept or found


def clean_query(text: str) -> str:
    """The query text a server parses for the lexical side: at most ``MAX_QUERY_CHARS``
    characters, NUL and lone surrogates replaced by spaces (a server cannot receive them)."""
    return _UNSENDABLE.sub(" ", text[:MAX_QUERY_CHARS])


Scored = Sequence[tuple[K, float]]
"""A ranking with each key's score on its side (best first, each key at most once)."""


def fuse(vector: Scored[K], lexical: Scored[K], spec: HybridSpec) -> list[tuple[K, float]]:
    """The ``relative`` or ``rrf`` fusion (``spec.fusion``) of two scored rankings (best first,
    each key at most once), best first; ties keep the vector ranking's order, then the lexical
    one's. A side weighted 0 is left out (``vector_weight=0``: a lexical-only ranking). The
    ``information`` fusion needs each candidate's distance: ``core.information``."""
    assert spec.fusion != "information", "core.information.fuse_information fuses this one"
    sides = [(vector, spec.vector_weight), (lexical, spec.lexical_weight)]
    sides = [(ranking, weight) for ranking, weight in sides if weight > 0]
    total = sum(weight for _, weight in sides) or 1.0
    scores: dict[K, float] = {}
    for ranking, weight in sides:
        for key, value in _scaled(ranking, spec):
            scores[key] = scores.get(key, 0.0) + weight * value
    if spec.fusion == "relative":
        scores = {key: value / total for key, value in scores.items()}
    # a stable sort: ties keep the order the keys came in (the vector ranking's first)
    return sorted(scores.items(), key=itemgetter(1), reverse=True)


def _scaled(ranking: Scored[K], spec: HybridSpec) -> list[tuple[K, float]]:
    """One side's contribution before its weight: ``1 / (k + rank)`` for rank fusion; for
    relative-score fusion its scores min-max scaled to 0..1 (all 1 when they are equal)."""
    if spec.fusion == "rrf":
        return [(key, 1.0 / (spec.k + rank)) for rank, (key, _) in enumerate(ranking, start=1)]
    values = [value for _, value in ranking]
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    if not high > low:
        return [(key, 1.0) for key, _ in ranking]
    return [(key, (value - low) / (high - low)) for key, value in ranking]
