"""Stream latency: time to first response, pooled gaps, totals and responses/s, by perf_analyzer's percentiles."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_triton.bench.streams import summarize_streams
from pytest_triton.client.streaming import StreamResponse
from pytest_triton.client.streaming import StreamResult


def _stream(times_s: list[float], total_s: float) -> StreamResult:
    responses = tuple(StreamResponse({"OUT": np.zeros(1)}, t) for t in times_s)
    return StreamResult("m", responses, total_s)


def test_first_response_gaps_and_totals() -> None:
    streams = [_stream([0.010, 0.012, 0.015], 0.016), _stream([0.020, 0.021], 0.022)]
    summary = summarize_streams(streams)
    assert summary.requests == 2
    assert summary.responses == 5
    # first responses 10 and 20 ms: p50 by nearest rank (index int(0.5 * 1 + 0.5) = 1) is 20 ms
    assert summary.ttft_p50_ms == pytest.approx(20.0)
    # gaps pooled: 2, 3 (first stream) and 1 (second): sorted 1, 2, 3 → p50 2 ms, p99 3 ms
    assert summary.gap_p50_ms == pytest.approx(2.0)
    assert summary.gap_p99_ms == pytest.approx(3.0)
    assert summary.responses_per_s == pytest.approx(5 / 0.038)
    assert summary.value("ttft_ms") == summary.ttft_p50_ms


def test_a_stream_without_responses_counts_in_totals_only() -> None:
    summary = summarize_streams([_stream([], 0.005)])
    assert math.isnan(summary.ttft_p50_ms)
    assert math.isnan(summary.gap_p99_ms)
    assert summary.total_p50_ms == pytest.approx(5.0)
    assert summary.responses_per_s == 0.0


def test_unknown_key_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="ttft_p50_ms"):
        summarize_streams([_stream([0.001], 0.002)]).value("p50_ms")


def test_no_streams_is_an_error() -> None:
    with pytest.raises(ValueError, match="no streams"):
        summarize_streams([])
