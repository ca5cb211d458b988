"""Self-calibrating vector search: a recall target instead of search-breadth knobs.

A store with an ANN index keeps the last query vectors it searched with (a bounded window), and in
the background measures its own recall@10 against an exact search on its own data: the queries
(recent ones, topped up with stored vectors while there are too few), their exact nearest
neighbours, then the ANN answer at growing breadths until one meets ``target_recall``. The breadth
used from then on is the first that met it, or the store answers exactly when an exact scan costs
no more than the index at that breadth (or no breadth met it). It measures again when the index
doubled or halved, and after a spot check (a few recent queries) shows recall drifting below the
target. Explicit ``ef_search`` (``ef_runtime`` on Redis) still wins.

The logic (which queries, recall, the choice of breadth and mode, when to measure) lives here, once;
a backend supplies a :class:`Probe` (plans for: count the vectors, sample stored vectors, exact
top-k, ANN top-k at a breadth); :mod:`~langmem_adapters.core.calibrated` runs it off the request
path and offers ``vector_stats()`` / ``calibrate()``.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Hashable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal, Protocol

import numpy as np

from langmem_adapters.core.vectors import IndexSpec

__all__ = [
    "Calibrator",
    "Hit",
    "Measurement",
    "Probe",
    "VectorSearchStats",
    "explicit_breadth",
    "recall_at",
    "synthetic",
]

log = logging.getLogger(__name__)

Steps = Generator[Any, Any, Any]
Hit = tuple[Hashable, float]
"""One search result of a probe: the row's identity and its distance (smaller is nearer)."""

#: recall@K is what the target is about.
K = 10
#: Queries of one full measurement, and of one spot check.
QUERIES, SPOT = 40, 10
#: Recent query vectors kept in memory (the newest ``QUERIES`` are measured with).
RECENT = 256
#: A breadth must measure this much above the target: 40 queries' recall@10 spreads by about 0.01
#: (one standard deviation) from the recall of all queries, and a margin of one (0.01) left held-out
#: queries at 0.946 where the store read 0.96 (Redis, 100k normal vectors): two keep it above.
MARGIN = 0.02
#: A spot check below ``target - DRIFT`` measures again.
DRIFT = 0.02
#: Searches between spot checks, and the least time between two background checks.
SPOT_EVERY, MIN_INTERVAL = 500, 60.0
#: After a failed check, the least time before the next try.
RETRY = 10.0
#: How long the first measurement waits for ``QUERIES`` distinct real queries before it tops them
#: up with synthetic ones.
PATIENCE = 30.0


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


def explicit_breadth(spec: IndexSpec) -> int:
    """The breadth ``ann_index_config`` sets (``ef_search``; ``ef_runtime`` as on Redis), else 0."""
    return int(spec.ann.get("ef_search") or spec.ann.get("ef_runtime") or 0)


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


def recall_at(exact: Sequence[Sequence[Hit]], found: Sequence[Sequence[Hit]], k: int = K) -> float:
    """Mean recall@k of ``found`` against ``exact``; a row as near as the exact k-th (a tie) counts,
    so duplicate vectors do not read as misses."""
    total, hits = 0, 0
    for truth, got in zip(exact, found):
        truth = list(truth)[:k]
        if not truth:
            continue
        keys = {key for key, _ in truth}
        edge = truth[-1][1] + 1e-6 * max(1.0, abs(truth[-1][1]))
        total += len(truth)
        hits += min(len(truth), sum(1 for key, d in got[:k] if key in keys or d <= edge))
    return hits / total if total else 1.0


@dataclass(frozen=True)
class Measurement:
    """One calibration: on how many vectors, the breadth and mode chosen, the recall measured at it,
    the cost per query of both ways, and when (epoch seconds) it ran."""

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


@dataclass(frozen=True)
class VectorSearchStats:
    """What ``vector_stats()`` reports about a store's vector search.

    ``size``: vectors in the index; ``breadth``: the ANN search breadth in use (``None`` where search
    is exact); ``mode``: ``"ann"`` or ``"exact"`` (for searches over prefixes larger than
    ``exact_below``; smaller ones are always exact); ``source``: what set them (``"calibrated"``,
    ``"explicit"`` ``ef_search``, ``"schedule"`` by size until a calibration ran, ``"exact"`` index
    kind or plain mode); ``target``: the recall target; ``recall``/``measured_at``/``measured_size``:
    the last measurement (``None`` before one), with ``exact_ms``/``ann_ms`` (per query, exact and at
    the chosen breadth), ``seconds`` (how long it took) and ``real_queries`` (how many of its 40
    queries were real, the rest synthetic); ``last_error``: why the last background check failed.
    """

    size: int
    breadth: int | None
    mode: Literal["ann", "exact"]
    source: Literal["calibrated", "explicit", "schedule", "exact"]
    target: float | None
    recall: float | None = None
    measured_at: datetime | None = None
    measured_size: int | None = None
    exact_ms: float | None = None
    ann_ms: float | None = None
    seconds: float | None = None
    real_queries: int | None = None
    last_error: str | None = None


class Calibrator:
    """The calibration state of one vector index: recent queries, the last measurement, and when
    the next background check is due. Searches call :meth:`observe` (cheap, never blocking)."""

    def __init__(self, target: float | None, min_size: int, wake: Callable[[], None] | None = None):
        self.target = target
        self.min_size = min_size
        self.wake = wake
        # The newest distinct query vectors (keyed by a hashable copy): a repeated query would
        # measure one neighbourhood many times.
        self.recent: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()  # searches add to ``recent`` while a check reads it
        self.measurement: Measurement | None = None
        self.searches = 0
        self.last_error: str | None = None
        self._checked_searches = 0
        self._checked_at = 0.0
        self._first_seen: float | None = None
        self.running = False

    def observe(self, queries: Sequence[Any], count: int) -> None:
        """Note a batch's query vectors and the index size it saw; wake the background when a check
        is due (never measured, the index doubled or halved, or time for a spot check). The test
        and the setting of ``running`` hold the lock: concurrent searches start one check."""
        with self._lock:
            for q in queries:
                key = q if isinstance(q, Hashable) else tuple(q)
                self.recent[key] = q
                self.recent.move_to_end(key)
                if len(self.recent) > RECENT:
                    self.recent.popitem(last=False)
            self.searches += len(queries)
            if self._first_seen is None:
                self._first_seen = time.monotonic()
            if self.target is None or self.wake is None or self.running:
                return
            if count <= self.min_size and self.measurement is None:
                return
            if not self._due(count, time.monotonic()):
                return
            self.running = True
        self.wake()

    def _stale(self, count: int) -> bool:
        """Whether the breadth must be measured (again): never measured, the index doubled or
        halved since, or it was measured on synthetic queries and enough real ones came since."""
        m = self.measurement
        if m is None or count >= 2 * m.count or 2 * count <= m.count:
            return True
        return m.real < QUERIES and len(self.recent) >= QUERIES

    def _due(self, count: int, now: float) -> bool:
        waiting = now - (self._first_seen or now) < PATIENCE
        if self.measurement is None and len(self.recent) < QUERIES and waiting:
            return False  # wait a while for real queries: synthetic ones are a harder stand-in
        stale = self._stale(count)
        if now - self._checked_at < (RETRY if stale else MIN_INTERVAL):
            return False
        return stale or self.searches - self._checked_searches >= SPOT_EVERY

    def newest(self, n: int) -> list[Any]:
        """The ``n`` newest distinct query vectors (a copy)."""
        with self._lock:
            return list(self.recent.values())[-n:]

    def breadth(self, fallback: int) -> int:
        """The measured breadth, else ``fallback`` (the size schedule)."""
        return self.measurement.breadth if self.measurement is not None else fallback

    def exact_up_to(self, below: int, explicit: bool) -> int:
        """The largest prefix (in vectors) to scan exactly rather than search through the index.

        An exact scan of a prefix costs its share ``f`` of the whole index's scan (``exact_ms``); the
        index, filtered to the prefix, visits about ``1/f`` times the nodes of an unfiltered search
        (``ann_ms``): the scan is the cheaper one while ``f <= sqrt(ann_ms / exact_ms)``. Measured on
        Postgres at 100k real-text vectors, a 2% prefix took 200 ms through the index (5 q/s) where
        this rule predicts 175 ms, and its scan 5 ms. ``below`` (``exact_below``) is the floor, and
        the whole rule when it was set explicitly or nothing has been measured yet."""
        m = self.measurement
        if explicit or m is None or m.mode == "exact" or m.exact_ms <= 0 or m.ann_ms <= 0:
            return below
        return max(below, int(math.sqrt(m.ann_ms / m.exact_ms) * m.count))

    @property
    def exact(self) -> bool:
        """Whether the last measurement chose exact search."""
        return self.measurement is not None and self.measurement.mode == "exact"

    def check(self, probe: Probe, force: bool = False) -> Steps:
        """The background check: count; measure when due (or ``force``), else spot-check recent
        queries and measure when recall drifted. Returns the measurement in force."""
        self._checked_at, self._checked_searches = time.monotonic(), self.searches
        count = int((yield from probe.count()))
        m = self.measurement
        if self.target is None or (count <= self.min_size and not force):
            return m
        if force or m is None or self._stale(count):
            return (yield from self.measure(probe, count))
        spot = self.newest(SPOT)
        if m.mode == "exact" or not spot:
            return m
        truth = yield from probe.exact(spot, K)
        recall = recall_at(truth, (yield from probe.ann(spot, K, m.breadth)))
        if recall < self.target - DRIFT:
            return (yield from self.measure(probe, count))
        return m

    def measure(self, probe: Probe, count: int) -> Steps:
        """Measure recall@K at growing breadths on up to ``QUERIES`` queries; choose the first
        breadth meeting the target (plus ``MARGIN``), or exact search when it is as cheap or no
        breadth meets it. Returns (and keeps) the :class:`Measurement`."""
        assert self.target is not None
        started = time.perf_counter()
        queries = self.newest(QUERIES)
        real = len(queries)
        if real < QUERIES:
            stored = yield from probe.sample(QUERIES - real)
            queries += [probe.query(v) for v in synthetic(stored)]
        t0 = time.perf_counter()
        truth = yield from probe.exact(queries, K)
        exact_ms = (time.perf_counter() - t0) * 1000 / max(len(queries), 1)
        goal = min(1.0, self.target + MARGIN)

        def at(breadth: int) -> Steps:
            t0 = time.perf_counter()
            found = yield from probe.ann(queries, K, breadth)
            ann_ms = (time.perf_counter() - t0) * 1000 / max(len(queries), 1)
            return breadth, recall_at(truth, found), ann_ms

        chosen: tuple[int, float, float] | None = None
        last: tuple[int, float, float] = (probe.max_breadth, 0.0, float("inf"))
        below = K
        for breadth in _ladder(probe.max_breadth):
            last = yield from at(breadth)
            if last[1] >= goal:
                chosen = last
                break
            if last[2] > 2 * exact_ms:  # already dearer than the exact scan, and not there yet
                break
            below = breadth
        if chosen is not None and chosen[0] - below > 8:  # one halving step between the rungs
            middle = yield from at((below + chosen[0]) // 2)
            chosen = middle if middle[1] >= goal else chosen
        breadth, recall, ann_ms = chosen or last
        mode: Literal["ann", "exact"] = (
            "ann" if chosen is not None and ann_ms < exact_ms else "exact"
        )
        self.measurement = Measurement(
            count=count,
            breadth=breadth,
            mode=mode,
            recall=1.0 if mode == "exact" else recall,
            exact_ms=exact_ms,
            ann_ms=ann_ms,
            queries=len(queries),
            real=real,
            seconds=time.perf_counter() - started,
            at=time.time(),
        )
        log.info("vector search calibrated: %s", self.measurement)
        return self.measurement

    def report(
        self, size: int, fallback: int | None, explicit: bool, exact_kind: bool
    ) -> VectorSearchStats:
        """The :class:`VectorSearchStats` of this index (``fallback``: the schedule's breadth)."""
        m = self.measurement
        base = VectorSearchStats(
            size=size,
            breadth=fallback,
            mode="ann",
            source="schedule",
            target=self.target,
            last_error=self.last_error,
        )
        if m is not None:
            base = replace(
                base,
                recall=m.recall,
                measured_at=datetime.fromtimestamp(m.at, timezone.utc),
                measured_size=m.count,
                exact_ms=round(m.exact_ms, 3),
                ann_ms=round(m.ann_ms, 3),
                seconds=round(m.seconds, 3),
                real_queries=m.real,
            )
        if exact_kind:
            return replace(base, breadth=None, mode="exact", source="exact")
        if explicit:
            return replace(base, source="explicit")
        if m is None:
            return base
        if m.mode == "exact":
            return replace(base, breadth=None, mode="exact", source="calibrated")
        return replace(base, breadth=m.breadth, source="calibrated")


def _ladder(top: int) -> list[int]:
    """The breadths tried, from 16 up, growing by about 1.5x, ending at ``top``."""
    out, b = [], 16
    while b < top:
        out.append(b)
        b = int(b * 1.5)
    return [*out, top]
