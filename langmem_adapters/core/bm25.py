"""Okapi BM25 computed client-side, for stores without a server-side text index (Redis plain mode):
the lexical ranking of a hybrid search over the texts of the items it searches.

The formula is the one of Robertson and Zaragoza (2009) with Lucene's non-negative IDF, the form
the Redis Query Engine's ``BM25STD`` scorer has too (its document statistics differ slightly):
``score(d) = sum over query terms t in d of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| /
avgdl))`` with ``idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))``; ``N`` is the number of texts,
``n(t)`` how many contain ``t``, ``|d|`` a text's length in words and ``avgdl`` the mean length.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

__all__ = ["K1", "B", "bm25"]

#: Term-frequency saturation: the usual default (Lucene, Elasticsearch, the Redis Query Engine).
K1 = 1.2
#: Length normalisation: the usual default.
B = 0.75


def bm25(
    query: Sequence[str], texts: Sequence[Sequence[str]], k1: float = K1, b: float = B
) -> list[float]:
    """The BM25 score of each text (a sequence of words) for the query words (repeats count once);
    0.0 for a text sharing no word with the query."""
    terms = set(query)
    n = len(texts)
    if not terms or not n:
        return [0.0] * n
    # most texts share no word with the query: counted only where one does
    counts = [None if terms.isdisjoint(t) else Counter(w for w in t if w in terms) for t in texts]
    df = Counter(w for c in counts if c for w in c)
    idf = {w: math.log(1.0 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in df}
    avgdl = sum(map(len, texts)) / n or 1.0
    scores = [0.0] * n
    for i, c in enumerate(counts):
        if c:
            norm = k1 * (1.0 - b + b * len(texts[i]) / avgdl)
            scores[i] = sum(idf[w] * tf * (k1 + 1.0) / (tf + norm) for w, tf in c.items())
    return scores
