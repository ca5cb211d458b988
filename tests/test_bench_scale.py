"""The scale benchmark's growth factor (slowdown per 10x of items) and its report of a ``--json``
document (keys as strings, as read back from the file)."""

import json

import pytest

from benchmarks import bench_scale


def test_growth_is_the_slowdown_per_tenfold_items() -> None:
    assert bench_scale.growth({10_000: 100.0, 100_000: 50.0}) == pytest.approx(2.0)
    # Over two decades, the factor per decade: 4x slower in total is 2x per 10x.
    assert bench_scale.growth({1_000: 100.0, 10_000: 70.0, 100_000: 25.0}) == pytest.approx(2.0)
    assert bench_scale.growth({10_000: 100.0}) is None


def test_report_flags_index_backed_workloads_that_grow_too_fast() -> None:
    rates = {
        "10000": {"get": {"ours": 100.0, "official": 50.0}},
        "100000": {"get": {"ours": 40.0, "official": 10.0}},
    }
    limit = {n: {"put (single)": 0.9, "get": 0.85} for n in rates}
    doc = json.loads(json.dumps({"scale": {"postgres": rates}, "limit": {"postgres": limit}}))
    lines = bench_scale.report(doc, markdown=False).splitlines()
    ours = next(line for line in lines if line.startswith("get  ours"))
    official = next(line for line in lines if line.startswith("get  official"))
    assert "2.50 !" in ours and "2.00  4.00" in ours  # 2.5x per 10x; ours/official per N
    assert "5.00" in official and "!" not in official  # the official store is not flagged
    assert any("put (single) 90%, get 85%" in line for line in lines)
