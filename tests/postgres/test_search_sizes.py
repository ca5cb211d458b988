"""The table sizes a Postgres vector search is planned with, against a calibration (driven as the
sans-IO plan it is: each round answered with the counts a table of that size gives)."""

from __future__ import annotations

from langgraph.store.base import SearchOp

from langmem_adapters.core.calibration import Calibrator, Measurement
from langmem_adapters.core.vectors import IndexSpec, SearchStats
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.search import EF_SEARCH, Sizes, search_sizes
from langmem_adapters.postgres.sql import Round
from tests.stores import hash_index

CAP = EF_SEARCH[-1][0]  # the counts stop here


def sizes(stats: SearchStats, total: int, prefix: int) -> Sizes:
    """Plan one search under ``("a",)`` on a table of ``total`` vectors, ``prefix`` of them there."""
    spec = IndexSpec.from_config(hash_index(fields=["text"]))
    op = SearchOp(("a",), query="q")
    steps = search_sizes(Tables("sz"), spec, [(0, op, ())], stats, ["[0.1]"])
    request = next(steps)
    assert isinstance(request, Round) and len(request.statements) == 2
    try:
        steps.send([[(min(total, CAP),)], [(min(prefix, CAP),)]])
    except StopIteration as done:
        return done.value
    raise AssertionError("search_sizes asked for a second round")


def measured(count: int, ann_ms: float = 50.0, exact_ms: float = 100.0) -> Measurement:
    return Measurement(count, 40, "ann", 0.97, exact_ms, ann_ms, 40, 40, 1.0, 0.0, target=0.95)


def calibrator(woken: list[int] | None = None) -> Calibrator:
    """A calibrator for 0.95 whose kept measurement was read already (this instance's is set)."""
    cal = Calibrator(0.95, 1000, (lambda: woken.append(1)) if woken is not None else None)
    cal.loaded = True
    return cal


def test_a_table_over_the_count_cap_is_not_seen_as_halved() -> None:
    """300k vectors count as the cap (100,001): measured at 300k, that is no halving, so searches
    wake no check (they did at every search, every 10 s: ten exact scans of the table each)."""
    woken: list[int] = []
    cal = calibrator(woken)
    cal.measurement = measured(300_000)
    sizes(SearchStats(calibration=cal), 300_000, 50)
    assert woken == []
    # A table that did double since its measurement (50k -> over the cap) still wakes one.
    cal = calibrator(woken)
    cal.measurement = measured(50_000)
    sizes(SearchStats(calibration=cal), 300_000, 50)
    assert woken == [1]


def test_a_prefix_counted_at_the_cap_is_never_scanned_exactly() -> None:
    """Calibration can rate scans cheaper up to sqrt(50 / 100) x 300k = 212k vectors; a count at the
    cap says only "large", so such a prefix goes through the index; a small one is scanned."""
    cal = calibrator()
    cal.measurement = measured(300_000)
    assert cal.exact_up_to(1000, explicit=False) > CAP
    assert sizes(SearchStats(calibration=cal), 300_000, 200_000).narrow == set()
    assert sizes(SearchStats(calibration=cal), 300_000, 50_000).narrow == {"a"}


def test_a_prefix_holding_half_of_the_vectors_is_broad() -> None:
    """Half of the vectors or more under the prefix: broad (searched without an iterative scan);
    a prefix counted at the cap is only known to be large, never broad."""
    assert sizes(SearchStats(), 10_000, 5_000).broad == {"a"}
    assert sizes(SearchStats(), 10_000, 4_999).broad == set()
    assert sizes(SearchStats(), 300_000, 200_000).broad == set()
