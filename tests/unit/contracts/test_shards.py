"""--triton-shard's rule: which shard a job is (K/N, or N with the CI's index) and which variants it runs."""

from __future__ import annotations

import pytest

from pytest_triton.contracts.shards import Shard
from pytest_triton.contracts.shards import assign_shards
from pytest_triton.contracts.shards import parse_shard
from pytest_triton.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "environ", "expected"),
    [
        ("2/4", {}, Shard(2, 4, "--triton-shard")),
        (" 1 / 1 ", {}, Shard(1, 1, "--triton-shard")),
        ("2/4", {"JOB_COMPLETION_INDEX": "0"}, Shard(2, 4, "--triton-shard")),  # K/N wins over the environment
        ("3", {"JOB_COMPLETION_INDEX": "2"}, Shard(3, 3, "JOB_COMPLETION_INDEX")),  # Kubernetes: 0-based
        ("2", {"PYTEST_TRITON_SHARD_INDEX": "0"}, Shard(1, 2, "PYTEST_TRITON_SHARD_INDEX")),  # a GitHub matrix
        ("2", {"JOB_COMPLETION_INDEX": "1", "PYTEST_TRITON_SHARD_INDEX": "0"}, Shard(2, 2, "JOB_COMPLETION_INDEX")),
    ],
)
def test_parse_shard(text: str, environ: dict[str, str], expected: Shard) -> None:
    assert parse_shard(text, environ) == expected


@pytest.mark.parametrize(
    ("text", "environ", "message"),
    [
        ("0/2", {}, r"shard 0 of 2 \(from --triton-shard\): a shard is 1\.\.2"),
        ("3/2", {}, r"shard 3 of 2 \(from --triton-shard\): a shard is 1\.\.2"),
        ("1/0", {}, r"--triton-shard='1/0': N=0 shards"),
        ("one/two", {}, r"--triton-shard='one/two': expected K/N"),
        ("2", {}, r"no shard index: none of JOB_COMPLETION_INDEX, PYTEST_TRITON_SHARD_INDEX is set"),
        ("2", {"JOB_COMPLETION_INDEX": "2"}, r"shard 3 of 2 \(from JOB_COMPLETION_INDEX \(0-based\)\)"),
        ("2", {"PYTEST_TRITON_SHARD_INDEX": "x"}, r"PYTEST_TRITON_SHARD_INDEX='x': expected a 0-based shard index"),
    ],
)
def test_parse_shard_refuses(text: str, environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_shard(text, environ)


@pytest.mark.parametrize(
    ("groups", "total", "expected"),
    [
        # the tabular example: the ensemble's 3 items (parity, latency, relative) alone, the others together
        (
            {"t::ensemble": 3, "t::onnx-fp32": 2, "t::onnx-fp16": 2},
            2,
            {"t::ensemble": 1, "t::onnx-fp16": 2, "t::onnx-fp32": 2},
        ),
        ({"a": 1, "b": 1, "c": 1, "d": 1}, 2, {"a": 1, "b": 2, "c": 1, "d": 2}),
        ({"a": 2}, 3, {"a": 1}),  # more shards than variants: the others run no contract item
        ({"a": 5, "b": 1, "c": 1, "d": 1, "e": 1}, 2, {"a": 1, "b": 2, "c": 2, "d": 2, "e": 2}),
    ],
)
def test_assign_shards(groups: dict[str, int], total: int, expected: dict[str, int]) -> None:
    assert assign_shards(groups, total) == expected
    assert assign_shards(dict(reversed(list(groups.items()))), total) == expected  # order-free: deterministic


def test_assign_shards_balances_item_counts() -> None:
    groups = {f"file::v{i}": 1 + i % 3 for i in range(20)}
    loads = [0, 0, 0]
    for key, shard in assign_shards(groups, 3).items():
        loads[shard - 1] += groups[key]
    assert max(loads) - min(loads) <= max(groups.values())
