"""Self-calibrating vector search: a recall target instead of search-breadth knobs.

A store with an ANN index keeps a bounded reservoir of the query vectors it searched with (the
newest distinct ones, across namespaces and time), and in the background measures its own recall@10
against an exact search on its own data: a random sample of the reservoir (topped up with synthetic
queries drawn from the stored vectors while there are too few real ones), their exact nearest
neighbours, then the ANN answer at growing breadths until one meets the target. The breadth used
from then on is the first that met it, or the store answers exactly when an exact scan costs no more
than the index at that breadth (or no breadth met it).

What was measured is kept with the index (a row on Postgres, a hash field on Redis: the backend's
:class:`~langmem_adapters.core.recall.Probe`), so a new store instance reads it at its first check and starts where the last one
left off. Until a measurement valid for the index's size exists, search is *cold*: exact up to the
backend's measured exact-scan line, else at the widest breadth. It measures again when the index
grew by a quarter or halved, when the distinct queries seen doubled since (the first time at
``QUERIES`` real ones: the query mix may have moved), and when a spot check (a few recent queries)
shows recall drifting below the target.
Explicit ``ef_search`` (``ef_runtime`` on Redis) still wins.

The logic (which queries, recall, the choice of breadth and mode, when to measure) lives here, once;
a backend supplies a :class:`~langmem_adapters.core.recall.Probe` (plans for: count the vectors, sample stored vectors, exact
top-k, ANN top-k at a breadth, read and write the kept measurement);
:mod:`~langmem_adapters.core.calibrated` runs it off the request path and offers
``vector_stats()`` / ``calibrate()``.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Literal, NamedTuple

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.measurement import Cold, Measurement, VectorSearchStats
from langmem_adapters.core.recall import K, Probe, lower_bound, recall_at, synthetic

__all__ = ["Calibrator", "Cold", "Measurement", "VectorSearchStats"]

log = logging.getLogger(__name__)

#: Queries of one full measurement (topped up with synthetic ones to this many), and of one spot
#: check.
QUERIES, SPOT = 100, 10
#: Real queries a measurement samples at most, when the reservoir holds them. Near 0.99 the misses
#: sit in 5-7% of the queries (each losing ~16% of its top 10), so a sample of 100 holds a handful
#: of them, and by chance too few: in a simulation of this procedure over every query's recall at
#: each breadth (Postgres, WordLlama: LongMemEval global, 470 questions; 500 English sentences over
#: 10,000 others) 5.3% / 9.1% of 100-query samples chose a breadth whose recall over all the
#: queries was under 0.99, 2.2% / 3.4% of 200-query ones, at a narrower breadth on average (127
#: against 149, 140 against 151); standard-normal vectors 0.2% / 0.0%. A larger ``Z`` (2.5) with
#: 100 queries cut them less (3.2% / 5.9%) at a wider breadth (180 / 173).
SAMPLE = 200
#: Distinct query vectors kept (the newest): a measurement samples ``SAMPLE`` of them at random, so
#: it spans the last ~1000 searches (many namespaces, not the last conversation).
RESERVOIR = 1024
#: A spot check below ``target - DRIFT`` measures again.
DRIFT = 0.02
#: The index grown by this factor (or halved) since the measurement: measured again, and cold
#: until then (a breadth measured on fewer vectors finds less among more).
GROWTH = 1.25
#: Searches between spot checks, and the least time between two background checks.
SPOT_EVERY, MIN_INTERVAL = 500, 60.0
#: After a failed check, the least time before the next try.
RETRY = 10.0


class Rung(NamedTuple):
    """One breadth tried by a measurement: its mean recall, that less :data:`Z` standard errors
    (``bound``), and its cost per query."""

    breadth: int
    recall: float
    bound: float
    ann_ms: float


class Calibrator:
    """The calibration state of one vector index: the reservoir of recent queries, the measurement
    in force, and when the next background check is due. Searches call :meth:`observe` (cheap,
    never blocking). ``clock`` (monotonic seconds) is what tests drive."""

    def __init__(
        self,
        target: float | None,
        min_size: int,
        wake: Callable[[], None] | None = None,
        cold: Cold | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.target = target
        self.min_size = min_size
        self.wake = wake
        self.cold = cold or Cold(0, 0)
        self.clock = clock
        # The newest distinct query vectors (keyed by a hashable copy): a repeated query would
        # measure one neighbourhood many times.
        self.recent: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()  # searches add to ``recent`` while a check reads it
        self.measurement: Measurement | None = None
        #: Distinct queries this instance has seen, and how many it had when the measurement in
        #: force was made (0 for one read from the database: none of this instance's queries).
        self.distinct = 0
        self._basis = 0
        self.searches = 0
        self.last_error: str | None = None
        self.loaded = False  # the kept measurement was read (once per instance)
        self._checked_searches = 0
        self._checked_at: float | None = None
        self._rng = random.Random(0)
        self.running = False

    def observe(self, queries: Sequence[Any], count: int) -> None:
        """Note a batch's query vectors and the index size it saw; wake the background when a check
        is due (the kept measurement not read yet, none fits the index's size, or time for a spot
        check). The test and the setting of ``running`` hold the lock: concurrent searches start
        one check."""
        with self._lock:
            for q in queries:
                key = q if isinstance(q, Hashable) else tuple(q)
                self.distinct += key not in self.recent
                self.recent[key] = q
                self.recent.move_to_end(key)
                if len(self.recent) > RESERVOIR:
                    self.recent.popitem(last=False)
            self.searches += len(queries)
            if self.target is None or self.wake is None or self.running:
                return
            if count <= self.min_size and self.measurement is None:
                return
            if not self._due(count, self.clock()):
                return
            self.running = True
        self.wake()

    def fits(self, count: int) -> bool:
        """Whether the measurement in force was made on an index of about ``count`` vectors (and
        for this target): else search is cold until the next one."""
        m = self.measurement
        return (
            m is not None
            and m.target == self.target
            and count <= GROWTH * m.count
            and 2 * count > m.count
        )

    def _stale(self, count: int) -> bool:
        """Whether the breadth must be measured (again): none fits the index, or the queries it
        was measured on are too few of those seen since (the query mix may have moved): measured
        again once ``QUERIES`` real queries came, then each time the distinct queries doubled, or
        (past the reservoir) a reservoir's worth of new ones came."""
        m = self.measurement
        if m is None or not self.fits(count):
            return True
        basis = self._basis
        return self.distinct >= max(QUERIES, min(2 * basis, basis + RESERVOIR))

    def _due(self, count: int, now: float) -> bool:
        if not self.loaded and self._checked_at is None:
            return True  # read what an earlier instance measured, at the first search
        stale = self._stale(count)
        since = math.inf if self._checked_at is None else now - self._checked_at
        if since < (RETRY if stale else MIN_INTERVAL):
            return False
        return stale or self.searches - self._checked_searches >= SPOT_EVERY

    def newest(self, n: int) -> list[Any]:
        """The ``n`` newest distinct query vectors (a copy)."""
        with self._lock:
            return list(self.recent.values())[-n:]

    def sample(self, n: int) -> list[Any]:
        """``n`` distinct query vectors drawn at random from the reservoir (all when it holds fewer)."""
        with self._lock:
            held = list(self.recent.values())
        return held if len(held) <= n else self._rng.sample(held, n)

    def breadth(self, count: int, fallback: int) -> int:
        """The breadth for an index of ``count`` vectors: the measured one when it fits, else the
        cold breadth (``fallback`` when the backend has none)."""
        m = self.measurement
        if m is not None and self.fits(count):
            return m.breadth
        return self.cold.breadth or fallback

    def exact_up_to(self, below: int, explicit: bool) -> int:
        """The largest prefix (in vectors) to scan exactly rather than search through the index.

        An exact scan of a prefix costs its share ``f`` of the whole index's scan (``exact_ms``); the
        index, filtered to the prefix, visits about ``1/f`` times the nodes of an unfiltered search
        (``ann_ms``): the scan is the cheaper one while ``f <= sqrt(ann_ms / exact_ms)``. Measured on
        Postgres at 100k real-text vectors, a 2% prefix took 200 ms through the index (5 q/s) where
        this rule predicts 175 ms, and its scan 5 ms. ``below`` (``exact_below``) is the floor, and
        the whole rule when it was set explicitly; with no measurement, the cold line is."""
        m = self.measurement
        if explicit:
            return below
        if m is None:
            return max(below, self.cold.exact_up_to)
        if m.mode == "exact" or m.exact_ms <= 0 or m.ann_ms <= 0:
            return below
        return max(below, int(math.sqrt(m.ann_ms / m.exact_ms) * m.count))

    def exact_at(self, count: int) -> bool:
        """Whether every search over an index of ``count`` vectors is exact: the measurement in
        force chose it, or none fits and the index is within the cold line."""
        if self.fits(count):
            return self.measurement is not None and self.measurement.mode == "exact"
        return count <= self.cold.exact_up_to

    def check(self, probe: Probe, force: bool = False) -> Steps:
        """The background check: read the kept measurement (once), count; measure when due (or
        ``force``), else spot-check recent queries and measure when recall drifted. Returns the
        measurement in force."""
        self._checked_at, self._checked_searches = self.clock(), self.searches
        if not self.loaded:
            raw = yield from probe.kept()
            self.loaded = True
            kept = Measurement.from_json(raw) if raw is not None else None
            if kept is not None and kept.target == self.target and self.measurement is None:
                self.measurement, self._basis = kept, 0
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

    def _queries(self, probe: Probe) -> Steps:
        """The measurement's queries: a random sample of the reservoir (up to :data:`SAMPLE`),
        topped up to :data:`QUERIES` with synthetic ones from stored vectors; and how many of them
        are real."""
        queries = self.sample(SAMPLE)
        real = len(queries)
        if real < QUERIES:
            stored = yield from probe.sample(QUERIES - real)
            queries += [probe.query(v) for v in synthetic(stored)]
        return queries, real

    def measure(self, probe: Probe, count: int) -> Steps:
        """Measure recall@K at growing breadths on the sampled queries; choose the first breadth
        whose recall less :data:`Z` standard errors meets the target, or exact search when it is as
        cheap or no breadth meets it. Returns (and keeps, here and with the index) the
        :class:`Measurement`."""
        assert self.target is not None
        target = self.target
        started = time.perf_counter()
        basis = self.distinct
        queries, real = yield from self._queries(probe)
        t0 = time.perf_counter()
        truth = yield from probe.exact(queries, K)
        exact_ms = (time.perf_counter() - t0) * 1000 / max(len(queries), 1)

        def at(breadth: int) -> Steps:
            t0 = time.perf_counter()
            found = yield from probe.ann(queries, K, breadth)
            ann_ms = (time.perf_counter() - t0) * 1000 / max(len(queries), 1)
            return Rung(breadth, recall_at(truth, found), lower_bound(truth, found), ann_ms)

        chosen: Rung | None = None
        last = Rung(probe.max_breadth, 0.0, 0.0, float("inf"))
        below = K
        for breadth in _ladder(probe.max_breadth):
            last = yield from at(breadth)
            if last.bound >= target:
                chosen = last
                break
            if last.ann_ms > 2 * exact_ms:  # already dearer than the exact scan, and not there yet
                break
            below = breadth
        if chosen is not None and chosen.breadth - below > 8:  # one halving step between the rungs
            middle = yield from at((below + chosen.breadth) // 2)
            chosen = middle if middle.bound >= target else chosen
        breadth, recall, _, ann_ms = chosen or last
        mode: Literal["ann", "exact"] = (
            "ann" if chosen is not None and ann_ms < exact_ms else "exact"
        )
        m = Measurement(
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
            target=self.target,
        )
        self.measurement, self._basis = m, basis
        log.info("vector search calibrated: %s", m)
        yield from probe.keep(m.to_json())
        return m

    def report(
        self,
        size: int,
        fallback: int | None,
        fixed: Literal["explicit", "schedule"] | None,
        exact_kind: bool,
    ) -> VectorSearchStats:
        """The :class:`VectorSearchStats` of this index: ``fixed`` when an explicit breadth or (no
        target) the size schedule sets ``fallback`` as the breadth; ``exact_kind`` when every search
        is exact whatever was measured."""
        m = self.measurement
        base = VectorSearchStats(
            size=size,
            breadth=self.cold.breadth or fallback,
            mode="ann",
            source="cold",
            target=self.target,
            last_error=self.last_error,
        )
        if m is not None:
            base = replace(
                base,
                recall=m.recall,
                measured_at=datetime.fromtimestamp(m.at, timezone.utc),
                measured_size=m.count,
                sample_size=m.queries,
                real_queries=m.real,
                sample=m.sample,
                kept=m.kept,
                exact_ms=round(m.exact_ms, 3),
                ann_ms=round(m.ann_ms, 3),
                seconds=round(m.seconds, 3),
            )
        if exact_kind:
            return replace(base, breadth=None, mode="exact", source="exact")
        if fixed is not None:
            return replace(base, breadth=fallback, source=fixed)
        if m is None or not self.fits(size):
            if self.exact_at(size):
                return replace(base, breadth=None, mode="exact")
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
