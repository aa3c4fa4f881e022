"""Parity of streams: counts, the first response that differs, the tolerance of the variant's precision."""

from __future__ import annotations

import numpy as np

from pytest_triton.client.streaming import StreamResponse
from pytest_triton.client.streaming import StreamResult
from pytest_triton.parity.streams import compare_streams


def _stream(values: list[float], *, model: str = "m") -> StreamResult:
    responses = tuple(
        StreamResponse({"OUT": np.array([v], dtype=np.float32), "IDX": np.array([i], dtype=np.int32)}, 0.001 * (i + 1))
        for i, v in enumerate(values)
    )
    return StreamResult(model, responses, 0.001 * (len(values) + 1))


def test_equal_streams_agree() -> None:
    result = compare_streams(_stream([1.0, 2.0, 3.0]), _stream([1.0, 2.0, 3.0]))
    assert result.ok
    assert result.first_difference is None
    assert "every response within tolerance" in result.message()


def test_a_response_outside_tolerance_is_named_by_index_output_and_worst_element() -> None:
    result = compare_streams(_stream([1.0, 2.0, 3.0]), _stream([1.0, 2.0, 3.5]), candidate_name="slow")
    assert not result.ok
    assert result.first_difference == 2
    message = result.message()
    assert "streams differ at response 2" in message
    assert "output 'OUT'" in message
    assert "reference=3.0 candidate=3.5" in message


def test_within_the_precision_tolerance_agrees() -> None:
    # fp16's preset allows 1e-2 relative: 3.01 against 3.0 holds there, not at fp32
    assert compare_streams(_stream([3.0]), _stream([3.01]), preset="fp16").ok
    assert not compare_streams(_stream([3.0]), _stream([3.01]), preset="fp32").ok


def test_a_dropped_response_names_the_first_index_that_differs() -> None:
    # the candidate drops response 1: its response 1 is the reference's response 2 (IDX differs)
    ref = _stream([5.0, 5.0, 5.0])
    cand = StreamResult("m", (ref.responses[0], ref.responses[2]), 0.004)
    result = compare_streams(ref, cand, candidate_name="lossy")
    assert result.first_difference == 1
    assert "'lossy' sent 2 response(s), 'reference' sent 3" in result.message()
    assert "output 'IDX'" in result.message()


def test_a_short_stream_says_where_it_ended() -> None:
    result = compare_streams(_stream([1.0, 2.0, 3.0]), _stream([1.0, 2.0]), candidate_name="short")
    assert result.first_difference == 2
    assert result.report is None
    assert "'short' has no response 2: its stream ended after 2 response(s)" in result.message()


def test_a_longer_stream_differs_too() -> None:
    result = compare_streams(_stream([1.0]), _stream([1.0, 1.0]))
    assert result.first_difference == 1
    assert not result.ok


def test_two_empty_streams_agree() -> None:
    assert compare_streams(_stream([]), _stream([])).ok
