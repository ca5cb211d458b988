"""The benchmark's summary: each run's two stores are measured side by side, so it reports the median
of the runs' ratios, not a ratio of medians taken from different runs."""

from benchmarks import bench_postgres as bench


def test_summary_ratio_is_the_median_of_each_runs_ratio() -> None:
    runs: list[bench.Results] = [
        {"get": {"ours": 10.0, "official": 2.0}},  # 5x
        {"get": {"ours": 4.0, "official": 1.0}},  # 4x, a slow run for both
        {"get": {"ours": 30.0, "official": 10.0}},  # 3x
    ]
    rows = bench.table_rows(bench.median_results(runs), {}, bench.median_ratios(runs))
    assert rows[0]["ours"] == 10.0 and rows[0]["official"] == 2.0  # medians per store
    assert rows[0]["ratio"] == 4.0  # not 10 / 2
    assert bench.table_rows(bench.median_results(runs), {})[0]["ratio"] == 5.0
