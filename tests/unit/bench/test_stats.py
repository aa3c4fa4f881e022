"""Percentiles by perf_analyzer's rule, summaries and throughput."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_triton.bench.stats import LatencyStats
from pytest_triton.bench.stats import nearest_rank
from pytest_triton.bench.stats import summarize
from pytest_triton.bench.stats import throughput

MS = 1_000_000


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        # index = int(p / 100 * (n - 1) + 0.5) on values 1..n, worked by hand
        (1, {50: 1, 90: 1, 95: 1, 99: 1}),
        (2, {50: 2, 90: 2, 95: 2, 99: 2}),  # 0.5 -> 1 (half rounds up)
        (4, {50: 3, 90: 4, 95: 4, 99: 4}),  # p50: 1.5 + .5 -> 2
        (10, {50: 6, 90: 9, 95: 10, 99: 10}),  # p90: 8.1 + .5 -> 8; p95: 8.55 + .5 -> 9
        (20, {50: 11, 90: 18, 95: 19, 99: 20}),  # p90: 17.1 + .5 -> 17; p95: 18.05 + .5 -> 18; p99: 18.81 + .5 -> 19
        (100, {50: 51, 90: 90, 95: 95, 99: 99}),  # p50: 49.5 + .5 -> 50; p99: 98.01 + .5 -> 98
        (150, {50: 76, 90: 135, 95: 143, 99: 149}),  # p50: 74.5 + .5 -> 75; p90: 134.1 -> 134; p95: 141.55 -> 142
    ],
)
def test_nearest_rank_matches_hand_computed_values(n: int, expected: dict[int, int]) -> None:
    values = list(range(1, n + 1))
    assert {p: nearest_rank(values, p) for p in expected} == expected


def test_nearest_rank_never_interpolates() -> None:
    assert nearest_rank([10, 20], 50) == 20
    assert nearest_rank([10.0, 20.0, 30.0], 25) == 20.0  # 0.5 -> index 1


def test_nearest_rank_rejects_empty_and_out_of_range() -> None:
    with pytest.raises(ValueError, match="no samples"):
        nearest_rank([], 50)
    with pytest.raises(ValueError, match="percentile=101"):
        nearest_rank([1], 101)


def test_summarize_sorts_and_converts_to_ms() -> None:
    samples = [v * MS for v in (30, 10, 20, 40, 50, 60, 70, 80, 90, 100)]
    s = summarize(samples)
    assert (s.count, s.min_ms, s.max_ms, s.mean_ms) == (10, 10.0, 100.0, 55.0)
    assert (s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms) == (60.0, 90.0, 100.0, 100.0)
    assert s.stdev_ms == pytest.approx(28.722813, rel=1e-6)  # population stdev of 10..100
    assert s.elapsed_s == pytest.approx(0.55)  # default: no gaps, the sum of latencies
    assert s.samples_per_s == pytest.approx(10 / 0.55)


def test_throughput_at_batch_8_is_batch_times_requests_over_elapsed() -> None:
    assert throughput(8, 100, 2_000_000_000) == pytest.approx(400.0)
    s = summarize([40 * MS] * 100, batch_size=8, elapsed_ns=4_500_000_000)
    assert s.samples_per_s == pytest.approx(8 * 100 / 4.5)
    assert s.requests_per_s == pytest.approx(100 / 4.5)
    assert throughput(8, 10, 0) == 0.0


def test_summarize_rejects_nothing_and_bad_batch() -> None:
    with pytest.raises(ValueError, match="no samples"):
        summarize([])
    with pytest.raises(ValueError, match="batch_size=0"):
        summarize([1], batch_size=0)


def test_stats_round_trip_and_percentile_lookup() -> None:
    s = summarize([MS, 2 * MS, 3 * MS])
    assert LatencyStats.from_dict(s.as_dict()) == s
    assert s.percentile_ms(99) == 3.0
    with pytest.raises(ValueError, match="percentile=75"):
        s.percentile_ms(75)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**11), min_size=1, max_size=400))
def test_percentiles_are_ordered_measured_values(samples: list[int]) -> None:
    s = summarize(samples)
    assert s.min_ms <= s.p50_ms <= s.p90_ms <= s.p95_ms <= s.p99_ms <= s.max_ms
    measured = {v / 1e6 for v in samples}
    assert {s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms} <= measured
