"""Bounded fuzzing of the files a user hands the plugin, as tests/unit/lint/test_fuzz.py fuzzes config.pbtxt:
whatever a contracts, budgets or samples file holds, reading it gives a valid result or a ConfigError (with a
1-based position where it names one), never another exception, and never a wait (each example has a deadline).

The seeds are the project's own files (model_repos/); the edits splice in pieces that broke readers before:
huge and non-finite numbers, wrong types, deep nesting, non-UTF-8 bytes, odd keys."""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_triton.bench.budgets import load_budgets
from pytest_triton.contracts.declaration import load_declaration
from pytest_triton.contracts.samples import load_samples
from pytest_triton.errors import ConfigError

WORKTREE = Path(__file__).resolve().parents[3]
MODEL_REPOS = WORKTREE / "model_repos"
CONTRACT_SEEDS = [p.read_bytes() for p in sorted(MODEL_REPOS.glob("*.contracts.toml"))]
BUDGET_SEEDS = [(MODEL_REPOS / "budgets.toml").read_bytes()]
SAMPLE_SEEDS = [b"\n".join(p.read_bytes().splitlines()[:3]) for p in sorted((MODEL_REPOS / "samples").glob("*.jsonl"))]
TOML_PIECES = [
    b"1e15", b"inf", b"-inf", b"nan", b"-1", b"0", b"9223372036854775807", b"-9223372036854775808", b"1e308",
    b"true", b'"x"', b"[]", b"{}", b"[[1]]", b"\n[x]\n", b"\n[[latency.relative]]\n", b"\n[a.b.c]\nd = 1\n",
    b" = ", b"=", b"\"", b"'''", b'"""', b"#", b"\\", b"\xff", b"\xe9", b"\x00", b"\r", b".", b"\n",
    b"window_ms = 1e15\n", b"throughput_batch_size = 1000000000000\n", b"batch_size = 0\n", b"warmup = -1\n",
    b"max_ratio = nan\n", b"p50_ms = inf\n", b"tolerance = 1\n", b'source = ""\n', b'repository = "\\u0000"\n',
    b'samples = "/dev/zero.jsonl"\n', b'budgets = "' + b"a/" * 3000 + b'"\n', b"shape = [1048577]\n",
]  # fmt: skip
JSON_PIECES = [
    b"1000", b"-1", b"1e400", b"NaN", b"Infinity", b"true", b"null", b'"x"', b"[", b"]", b"{", b"}", b",", b":",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", b'"INT8"', b'"BYTES"', b'"BF16"',
    b"18446744073709551616", b"[1048576, 1048576]", b"\xff", b"\\ud800", b"\n", b'"shape"', b'"data"',
]  # fmt: skip
FUZZ = settings(
    max_examples=80,
    deadline=datetime.timedelta(seconds=5),  # a read that runs on fails the example instead of hanging the suite
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


def edited(seeds: list[bytes], pieces: list[bytes]) -> st.SearchStrategy[bytes]:
    edits = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 12), st.sampled_from(pieces)), max_size=6)
    return st.builds(_apply, st.sampled_from(seeds), edits) | st.binary(max_size=300)


def _apply(data: bytes, edits: list[tuple[float, int, bytes]]) -> bytes:
    for where, cut, piece in edits:
        at = int(where * len(data))
        data = data[:at] + piece + data[at + cut :]
    return data


def positioned(error: ConfigError) -> None:
    """A ConfigError's position is 1-based, or left out (0) when it has none."""
    assert error.line >= 0
    assert error.col >= 0
    assert error.col == 0 or error.line >= 1
    assert ":0:" not in str(error).split(" ", 1)[0]


def _project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    for name in ("scenario07", "tabular", "streaming", "samples", "assets"):
        (folder / name).symlink_to(MODEL_REPOS / name)
    shutil.copy(MODEL_REPOS / "budgets.toml", folder / "budgets.toml")
    return folder


@FUZZ
@given(text=edited(CONTRACT_SEEDS, TOML_PIECES))
def test_any_contracts_file_is_a_declaration_or_a_config_error(
    tmp_path_factory: pytest.TempPathFactory, text: bytes
) -> None:
    folder = _project(tmp_path_factory)
    path = folder / "fuzz.contracts.toml"
    path.write_bytes(text)
    try:
        load_declaration(path)
    except ConfigError as exc:
        positioned(exc)


@FUZZ
@given(text=edited(BUDGET_SEEDS, TOML_PIECES))
def test_any_budgets_file_is_budgets_or_a_config_error(tmp_path_factory: pytest.TempPathFactory, text: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "budgets.toml"
    path.write_bytes(text)
    try:
        load_budgets(path)
    except ConfigError as exc:
        positioned(exc)


@FUZZ
@given(text=edited(SAMPLE_SEEDS, JSON_PIECES), batch_size=st.integers(1, 8))
def test_any_samples_file_is_samples_or_a_config_error(
    tmp_path_factory: pytest.TempPathFactory, text: bytes, batch_size: int
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "s.jsonl"
    path.write_bytes(text)
    try:
        samples = load_samples(path, batch_size=batch_size)
    except ConfigError as exc:
        positioned(exc)
        return
    for sample in samples:  # what is read is what a request can carry
        for array in sample.tensors.values():
            assert array.dtype.kind in "biufO"
            json.dumps(sample.id)
