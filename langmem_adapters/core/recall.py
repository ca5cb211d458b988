"""Recall of a vector index, measured by calibration (:mod:`langmem_adapters.core.calibration`):
the :class:`Probe` a backend supplies (plans over its index), recall@k of the index's answers
against exact ones (ties count), its lower bound, and synthetic queries made from stored vectors."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any, Protocol

import numpy as np

from langmem_adapters.core.drive import Steps

__all__ = ["Hit", "K", "Probe", "Z", "lower_bound", "per_query", "recall_at", "synthetic"]

Hit = tuple[Hashable, float]
"""One search result of a probe: the row's identity and its distance (smaller is nearer)."""

#: recall@K is what the target is about.
K = 10
#: A breadth is chosen when its sample's mean recall less this many standard errors (of the
#: queries' recalls) meets the target: misses concentrate on a few queries, so the spread of the
#: mean follows theirs. With a fixed margin instead (the mean >= 0.995 for 0.99, 60 queries) the
#: breadth chosen on LongMemEval (WordLlama, Postgres) gave 0.988 over all 470 questions.
Z = 2.0


class Probe(Protocol):
    """What a backend supplies: plans (yielding its rounds) over its vector index."""

    #: The widest breadth the backend's index accepts.
    max_breadth: int

    def count(self) -> Steps:
        """The number of vectors in the index (returns ``int``)."""
        ...

    def sample(self, n: int) -> Steps:
        """Up to ``n`` stored vectors at random (returns ``list[list[float]]``)."""
        ...

    def query(self, vector: list[float]) -> Any:
        """A vector in the form the probe's searches (and the store's query vectors) take."""
        ...

    def exact(self, queries: Sequence[Any], k: int) -> Steps:
        """The exact ``k`` nearest rows of each query (returns ``list[list[Hit]]``, nearest first)."""
        ...

    def ann(self, queries: Sequence[Any], k: int, breadth: int) -> Steps:
        """The index's ``k`` nearest rows of each query at ``breadth`` (as :meth:`exact`)."""
        ...

    def kept(self) -> Steps:
        """The measurement kept with the index as :meth:`Measurement.to_json` wrote it (returns
        ``str | None``: ``None`` when none is, or where it would be kept does not exist yet)."""
        ...

    def keep(self, measurement: str) -> Steps:
        """Keep a measurement (:meth:`Measurement.to_json`) with the index, replacing the last."""
        ...


def synthetic(stored: Sequence[Sequence[float]], seed: int | None = None) -> list[list[float]]:
    """Queries made from stored vectors, for a measurement with too few real queries: as many
    random vectors drawn from a normal distribution fitted (per dimension) to them. A stored
    vector is its own nearest neighbour and sits in the graph, which reads recall far too high
    (0.66 measured where 0.95 was read, on standard-normal data); a random query off the data errs
    on the hard side, and real queries replace these as soon as there are enough."""
    if not stored:
        return []
    sample = np.asarray(stored, dtype=np.float64)
    rng = np.random.default_rng(seed)
    drawn = rng.normal(sample.mean(axis=0), sample.std(axis=0) + 1e-9, size=sample.shape)
    return [[float(x) for x in row] for row in drawn]


def per_query(
    exact: Sequence[Sequence[Hit]], found: Sequence[Sequence[Hit]], k: int = K
) -> list[tuple[int, int]]:
    """Per query with exact neighbours, ``(hits, of)``: a row of ``found`` as near as the exact
    k-th (a tie) counts, so duplicate vectors do not read as misses."""
    out = []
    for truth, got in zip(exact, found):
        truth = list(truth)[:k]
        if not truth:
            continue
        keys = {key for key, _ in truth}
        edge = truth[-1][1] + 1e-6 * max(1.0, abs(truth[-1][1]))
        hits = sum(1 for key, d in got[:k] if key in keys or d <= edge)
        out.append((min(len(truth), hits), len(truth)))
    return out


def recall_at(exact: Sequence[Sequence[Hit]], found: Sequence[Sequence[Hit]], k: int = K) -> float:
    """Mean recall@k of ``found`` against ``exact`` (ties count, see :func:`per_query`)."""
    counts = per_query(exact, found, k)
    total = sum(of for _, of in counts)
    return sum(hits for hits, _ in counts) / total if total else 1.0


def lower_bound(exact: Sequence[Sequence[Hit]], found: Sequence[Sequence[Hit]]) -> float:
    """Mean recall@K less :data:`Z` standard errors of the queries' recalls."""
    counts = per_query(exact, found)
    if len(counts) < 2:
        return recall_at(exact, found)
    recalls = np.asarray([hits / of for hits, of in counts])
    return float(recalls.mean() - Z * recalls.std(ddof=1) / math.sqrt(len(recalls)))
