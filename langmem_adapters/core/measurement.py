"""What a recall calibration measured (:class:`Measurement`, also as kept in the database), how a
backend searches before one exists (:class:`Cold`), and what ``vector_stats()`` reports
(:class:`VectorSearchStats`): the records of :mod:`langmem_adapters.core.calibration`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Literal

__all__ = ["Cold", "Measurement", "VectorSearchStats"]


@dataclass(frozen=True)
class Cold:
    """How a backend searches before any measurement fits the index: exactly up to
    ``exact_up_to`` vectors (where a scan costs about what the index does at the widest breadth;
    measured per backend, see ``docs/stores.md``), and at ``breadth`` above."""

    exact_up_to: int
    breadth: int


@dataclass(frozen=True)
class Measurement:
    """One calibration: on how many vectors, for which target, the breadth and mode chosen, the
    recall measured at it, the cost per query of both ways, the sample (``queries`` in all,
    ``real`` of them users' queries, the rest synthetic from stored vectors), when (epoch seconds)
    it ran, and whether this store instance read it from the database (``kept``)."""

    count: int
    breadth: int
    mode: Literal["ann", "exact"]
    recall: float
    exact_ms: float
    ann_ms: float
    queries: int
    real: int
    seconds: float
    at: float
    target: float = 0.0
    kept: bool = False

    def to_json(self) -> str:
        """The measurement as kept in the database (``kept`` aside: true of whoever reads it)."""
        return json.dumps({k: v for k, v in asdict(self).items() if k != "kept"})

    @classmethod
    def from_json(cls, raw: str | bytes) -> Measurement | None:
        """A kept measurement (``kept`` set), ``None`` when it does not read as one (another
        version's, or damaged: it is measured again)."""
        try:
            data = json.loads(raw)
            names = {f.name for f in fields(cls)} - {"kept"}
            m = cls(**{k: data[k] for k in names}, kept=True)
        except (ValueError, TypeError, KeyError):
            return None
        return m if m.mode in ("ann", "exact") and m.count >= 0 and m.queries > 0 else None

    @property
    def sample(self) -> Literal["queries", "stored", "mixed"]:
        """What the sample's queries were: users' queries, synthetic ones from stored vectors, or both."""
        return "queries" if self.real >= self.queries else "stored" if not self.real else "mixed"


@dataclass(frozen=True)
class VectorSearchStats:
    """What ``vector_stats()`` reports about a store's vector search.

    ``size``: vectors in the index; ``breadth``: the ANN search breadth in use (``None`` where search
    is exact); ``mode``: ``"ann"`` or ``"exact"`` (for searches over prefixes larger than
    ``exact_below``; smaller ones are always exact); ``source``: what set them (``"calibrated"``,
    ``"explicit"`` ``ef_search``, ``"schedule"`` by size without a target, ``"cold"`` until a measurement fits the index: exact up to the
    backend's line, else the widest breadth; ``"exact"`` index kind or plain mode); ``target``: the
    recall target; ``recall``/``measured_at``/``measured_size``: the last measurement (``None``
    before one), with ``sample_size`` (its queries), ``real_queries`` (how many of them were users'
    queries, the rest synthetic from stored vectors), ``sample`` (``"queries"``, ``"stored"`` or
    ``"mixed"``), ``kept`` (read from the database: measured by an earlier store instance),
    ``exact_ms``/``ann_ms`` (per query, exact and at the chosen breadth) and ``seconds`` (how long
    it took); ``last_error``: why the last background check failed.
    """

    size: int
    breadth: int | None
    mode: Literal["ann", "exact"]
    source: Literal["calibrated", "explicit", "schedule", "cold", "exact"]
    target: float | None
    recall: float | None = None
    measured_at: datetime | None = None
    measured_size: int | None = None
    sample_size: int | None = None
    real_queries: int | None = None
    sample: Literal["queries", "stored", "mixed"] | None = None
    kept: bool | None = None
    exact_ms: float | None = None
    ann_ms: float | None = None
    seconds: float | None = None
    last_error: str | None = None
