"""Decoupled models on a real tritonserver: every response over the gRPC stream, their parity and their times.

The repository is model_repos/streaming (stream_repeat and square_int32) plus two variants of
stream_repeat written by the test: one with a longer pause before each response, one that drops a response.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from pytest_triton.bench.streams import summarize_streams
from pytest_triton.client.streaming import TritonStreamTransport
from pytest_triton.errors import InferenceError
from pytest_triton.errors import InferenceTimeout
from pytest_triton.parity.streams import compare_streams
from pytest_triton.servers import LocalLauncher

from .local_triton_helpers import skip_without_embedded_triton

skip_without_embedded_triton()

EXAMPLES = Path(__file__).resolve().parents[3] / "model_repos" / "streaming"


def _variant(repository: Path, name: str, **parameters: str) -> None:
    """A copy of stream_repeat named ``name`` with other config parameters."""
    folder = repository / name
    shutil.copytree(EXAMPLES / "stream_repeat", folder)
    config = (folder / "config.pbtxt").read_text(encoding="utf-8").replace('"stream_repeat"', f'"{name}"', 1)
    for key, value in parameters.items():
        config, count = re.subn(
            rf'key: "{key}" value: {{ string_value: "[^"]*" }}',
            f'key: "{key}" value: {{ string_value: "{value}" }}',
            config,
        )
        assert count == 1, f"no parameter {key} in stream_repeat's config"
    (folder / "config.pbtxt").write_text(config, encoding="utf-8")


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonStreamTransport]:
    repository = tmp_path_factory.mktemp("streaming")
    shutil.copytree(EXAMPLES, repository, dirs_exist_ok=True)
    _variant(repository, "stream_slow", pause_ms="40")
    _variant(repository, "stream_lossy", drop_index="2")
    with LocalLauncher(repository, startup_timeout=120) as server:
        transport = TritonStreamTransport(server.urls.need("grpc"), deadline_s=30)
        yield transport
        transport.close()


def _values(n: int) -> dict[str, NDArray[np.int32]]:
    return {"IN": np.arange(10, 10 + n, dtype=np.int32)}


def test_every_response_arrives_in_order_until_the_final_flag(stream: TritonStreamTransport) -> None:
    result = stream.stream("stream_repeat", _values(5))
    assert [int(r.outputs["IDX"][0]) for r in result.responses] == [0, 1, 2, 3, 4]
    assert [int(r.outputs["OUT"][0]) for r in result.responses] == [10, 11, 12, 13, 14]
    times = [r.at_s for r in result.responses]
    assert times == sorted(times)
    assert result.total_s >= times[-1]


def test_square_int32_answers_n_times(stream: TritonStreamTransport) -> None:
    result = stream.stream("square_int32", {"IN": np.array([4], dtype=np.int32)})
    assert [r.outputs["OUT"].tolist() for r in result.responses] == [[4]] * 4
    assert stream.stream("square_int32", {"IN": np.array([0], dtype=np.int32)}).responses == ()


def test_a_dropped_response_fails_parity_naming_its_index(stream: TritonStreamTransport) -> None:
    reference = stream.stream("stream_repeat", _values(5))
    assert compare_streams(reference, stream.stream("stream_repeat", _values(5))).ok
    lossy = compare_streams(reference, stream.stream("stream_lossy", _values(5)), candidate_name="stream_lossy")
    assert lossy.first_difference == 2
    assert "'stream_lossy' sent 4 response(s), 'reference' sent 5" in lossy.message()


def test_a_longer_pause_shows_in_time_to_first_response_and_gaps(stream: TritonStreamTransport) -> None:
    # measured interleaved, so that the machine's load falls on both alike
    fast, slow = [], []
    for _ in range(5):
        fast.append(stream.stream("stream_repeat", _values(4)))
        slow.append(stream.stream("stream_slow", _values(4)))
    quick, paused = summarize_streams(fast), summarize_streams(slow)
    # the slow variant pauses 40 ms before each response, the example 2 ms
    assert paused.ttft_p50_ms >= 40.0
    assert paused.gap_p50_ms >= 40.0
    assert paused.gap_p50_ms > 3 * quick.gap_p50_ms
    assert quick.responses == paused.responses == 20


def test_a_request_past_its_deadline_times_out_and_the_stream_recovers(stream: TritonStreamTransport) -> None:
    with pytest.raises(InferenceTimeout, match=r"no final response within 0.05 s \(\d response\(s\) came\)"):
        stream.stream("stream_slow", _values(5), deadline_s=0.05)
    # late responses of the abandoned request never reach the next one
    result = stream.stream("stream_repeat", _values(3))
    assert [int(r.outputs["IDX"][0]) for r in result.responses] == [0, 1, 2]


def test_an_error_of_the_model_names_the_model_and_what_came(stream: TritonStreamTransport) -> None:
    with pytest.raises(InferenceError, match=r"stream of 'stream_repeat' .* failed after 0 response\(s\): .*INT32"):
        stream.stream("stream_repeat", {"IN": np.arange(3, dtype=np.float32)})
    with pytest.raises(InferenceError, match="unknown model"):
        stream.stream("no_such_model", _values(1))
