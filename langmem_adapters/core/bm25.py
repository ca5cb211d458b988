"""Okapi BM25 computed client-side, for stores without a server-side text index (Redis plain mode):
the lexical ranking of a hybrid search over the texts of the items it searches.

The formula is the one of Robertson and Zaragoza (2009) with Lucene's non-negative IDF, the form
the Redis Query Engine's ``BM25STD`` scorer has too (its document statistics differ slightly):
``score(d) = sum over query terms t in d of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| /
avgdl))`` with ``idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))``; ``N`` is the number of texts,
``n(t)`` how many contain ``t``, ``|d|`` a text's length in words and ``avgdl`` the mean length.

``N``, ``n(t)`` and ``avgdl`` are the **collection's** (a :class:`Corpus`), as a search engine's
are its index's, however few texts a search ranks: a namespace's 32 memories are too few to tell a
rare word from a common one (a word in 10 of them may be in 1% of the collection), and Postgres and
the Query Engine weigh and pick a query's words by the whole table or index, so plain mode agrees.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from langmem_adapters.core.refresh import Refreshed

__all__ = ["K1", "B", "Corpus", "bm25"]

#: Term-frequency saturation: the usual default (Lucene, Elasticsearch, the Redis Query Engine).
K1 = 1.2
#: Length normalisation: the usual default.
B = 0.75


@dataclass
class Corpus(Refreshed):
    """A collection's word statistics: ``size`` texts holding words, ``length`` words in all, and
    ``df``, how many texts hold each word, for the words at least two hold (a word held by one text
    or none is found by counting the searched texts: they are part of the collection, so what they
    hold is then exact; leaving those out keeps one entry per word that recurs, not per identifier).
    Counted at most once a minute (:class:`~langmem_adapters.core.refresh.Refreshed`); the texts a
    search ranks are a lower bound of it meanwhile (:meth:`held`)."""

    size: int = 0
    length: int = 0
    df: dict[str, int] = field(default_factory=dict)

    def update(self, size: int, length: int, df: Iterable[tuple[str, int]]) -> None:
        """Set from a new count: ``df`` the (word, texts holding it) pairs, every word or some."""
        self.size, self.length = size, length
        self.df = {w: n for w, n in df if n >= 2}
        self.mark()

    def held(self, word: str, searched: int) -> int:
        """Texts of the collection holding ``word``, ``searched`` of them among the searched ones."""
        return max(self.df.get(word, 0), searched)


def bm25(
    query: Sequence[str],
    texts: Sequence[Sequence[str]],
    k1: float = K1,
    b: float = B,
    corpus: Corpus | None = None,
) -> list[float]:
    """The BM25 score of each text (a sequence of words) for the query words (repeats count once);
    0.0 for a text sharing no word with the query. ``N``, ``n(t)`` and ``avgdl`` are the
    ``corpus``'s where given (each at least what ``texts`` show), else those of ``texts``."""
    terms = set(query)
    if not terms or not texts:
        return [0.0] * len(texts)
    # most texts share no word with the query: counted only where one does
    counts = [None if terms.isdisjoint(t) else Counter(w for w in t if w in terms) for t in texts]
    df = Counter(w for c in counts if c for w in c)
    n, avgdl = len(texts), sum(map(len, texts)) / len(texts) or 1.0
    if corpus is not None and corpus.size >= sum(1 for t in texts if t):
        n, avgdl = corpus.size, corpus.length / corpus.size or 1.0
        df = Counter({w: corpus.held(w, c) for w, c in df.items()})
    idf = {w: math.log(1.0 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in df}
    scores = [0.0] * len(texts)
    for i, c in enumerate(counts):
        if c:
            norm = k1 * (1.0 - b + b * len(texts[i]) / avgdl)
            scores[i] = sum(idf[w] * tf * (k1 + 1.0) / (tf + norm) for w, tf in c.items())
    return scores
