"""The scale benchmark's growth factor (slowdown per 10x of items) and its report of a ``--json``
document (keys as strings, as read back from the file): what the table says, in either layout,
not how it is spaced."""

import json
import re

import pytest

from benchmarks import bench_scale


def test_growth_is_the_slowdown_per_tenfold_items() -> None:
    assert bench_scale.growth({10_000: 100.0, 100_000: 50.0}) == pytest.approx(2.0)
    # Over two decades, the factor per decade: 4x slower in total is 2x per 10x.
    assert bench_scale.growth({1_000: 100.0, 10_000: 70.0, 100_000: 25.0}) == pytest.approx(2.0)
    assert bench_scale.growth({10_000: 100.0}) is None


def table(report: str) -> dict[tuple[str, str], dict[str, str]]:
    """The report's rows by (workload, store), each cell by its column's header (cells are split
    at runs of two or more spaces, or at ``|``)."""
    split = re.compile(r"\s*\|\s*|\s{2,}")
    lines = [line for line in report.splitlines() if line.strip()]
    header = next(split.split(line.strip()) for line in lines if line.startswith("workload"))
    rows = {}
    for line in lines:
        cells = split.split(line.strip())
        if len(cells) > 2 and cells[1] in ("ours", "official"):
            rows[cells[0], cells[1]] = dict(zip(header, cells))
    return rows


@pytest.mark.parametrize("markdown", [False, True], ids=["text", "markdown"])
def test_report_flags_index_backed_workloads_that_grow_too_fast(markdown: bool) -> None:
    rates = {
        "10000": {"get": {"ours": 100.0, "official": 50.0}},
        "100000": {"get": {"ours": 40.0, "official": 10.0}},
    }
    limit = {n: {"put (single)": 0.9, "get": 0.85} for n in rates}
    doc = json.loads(json.dumps({"scale": {"postgres": rates}, "limit": {"postgres": limit}}))
    report = bench_scale.report(doc, markdown=markdown)
    rows = table(report)
    ours, official = rows["get", "ours"], rows["get", "official"]
    assert (ours["N=10,000"], ours["N=100,000"]) == ("100", "40")
    growth = ours["x per 10x"].split()
    assert growth == ["2.50", "!"]  # 2.5x slower per 10x: flagged
    assert (ours["ours/off N=10,000"], ours["ours/off N=100,000"]) == ("2.00", "4.00")
    assert official["x per 10x"] == "5.00"  # the official store is not flagged
    assert "!" not in " ".join(official.values())
    assert "put (single) 90%, get 85%" in report
