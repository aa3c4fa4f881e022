"""Inputs of a contract: samples files (KServe v2 JSON lines, .npz) and generated tensors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_triton.contracts.generated import GeneratedInput
from pytest_triton.contracts.generated import generated_inputs
from pytest_triton.contracts.generated import numpy_request
from pytest_triton.contracts.generated import request_tensors
from pytest_triton.contracts.samples import batch_of
from pytest_triton.contracts.samples import load_samples
from pytest_triton.contracts.spec import TensorRule
from pytest_triton.errors import ConfigError
from pytest_triton.repository import RepositoryBuilder
from pytest_triton.repository import TensorSpec

LINE = {
    "id": "s01",
    "inputs": [
        {"name": "ids", "shape": [1, 3], "datatype": "INT64", "data": [[5, 6, 0]]},
        {"name": "TEXT", "shape": [1, 1], "datatype": "BYTES", "data": ["héllo"]},
    ],
}


def test_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    second = {"inputs": [{"name": "ids", "shape": [2, 3], "datatype": "INT64", "data": [1, 2, 3, 4, 5, 6]}]}
    path.write_text(json.dumps(LINE) + "\n\n" + json.dumps(second) + "\n", encoding="utf-8")
    first, other = load_samples(path)
    assert first.id == "s01"
    assert first.tensors["ids"].dtype == np.int64
    assert first.tensors["ids"].tolist() == [[5, 6, 0]]
    assert first.tensors["TEXT"].tolist() == [["héllo".encode()]]
    assert (other.id, other.rows) == ("line 3", 2)
    assert batch_of([other], 3)["ids"].tolist() == [[1, 2, 3], [4, 5, 6], [1, 2, 3]]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"s.jsonl:1: not a JSON line"),
        ('{"inputs": []}', r"s.jsonl:1: a sample line is a KServe v2 request"),
        (
            '{"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1]}]}',
            r"inputs\[0\] \('x'\).data: 1 values do not fit shape=\[2\]",
        ),
        ('{"inputs": [{"name": "x", "shape": [1], "datatype": "FP99", "data": [1]}]}', r"datatype='FP99'; expected"),
    ],
)
def test_json_lines_errors_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_samples(path)


def _line(datatype: str, shape: object, data: object, name: object = "x") -> str:
    return json.dumps({"inputs": [{"name": name, "shape": shape, "datatype": datatype, "data": data}]})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            _line("INT8", [1], [1000]),
            r"s.jsonl:2: inputs\[0\] \('x'\).data\[0\]=1000: expected an integer from -128 to 127 \(INT8\)",
        ),
        (_line("UINT8", [2], [1, -1]), r"data\[1\]=-1: expected an integer from 0 to 255 \(UINT8\)"),
        (
            _line("INT64", [1], [2**64]),
            r"data\[0\]=18446744073709551616: expected an integer from -9223372036854775808",
        ),
        (_line("BYTES", [1], [10**8]), r"data\[0\]=100000000: expected a string \(BYTES\)"),
        (_line("FP32", [1], [True]), r"data\[0\]=True: expected a number \(FP32\)"),
        (_line("FP16", [1], [1e10]), r"data\[0\]=10000000000.0: expected a number within"),
        (_line("FP32", [1], [{"a": 1}]), r"data\[0\]=\{'a': 1\}: expected a number"),
        (_line("BOOL", [1], [1]), r"data\[0\]=1: expected true or false \(BOOL\)"),
        (_line("FP32", [2, 2], [[1, 2], [3]]), r"data: 3 values do not fit shape=\[2, 2\] \(4 values\)"),
        (
            _line("FP32", [1], [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]),
            r"nested deeper than 32",
        ),
        (_line("FP32", [-1], [1]), r"shape=\[-1\]: expected a list of dims from 0 to 1,048,576"),
        (_line("FP32", [1 << 20, 1 << 20], []), r"1,099,511,627,776 elements, over 16,777,216"),
        (_line("FP32", "2", [1, 2]), r"shape='2': expected a list of dims"),
        (_line("FP32", [1], [1], name=7), r"inputs\[0\].name=7: expected a tensor name"),
        (_line("BYTES", [1], ["\udce9"]), r"data: a string is not UTF-8"),
        ("[" * 100_000, r"s.jsonl:2: not a JSON line"),
    ],
    ids=lambda v: v[:40] if isinstance(v, str) and v.startswith("{") else None,
)
def test_every_sample_value_is_checked_against_its_datatype(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(_line("FP32", [1], [0.5]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_samples(path)


def test_npz_files_of_other_than_plain_arrays_are_config_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, x=np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(ConfigError, match=r"s.npz: not an .npz of plain arrays \(Object arrays cannot be loaded"):
        load_samples(path)
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ConfigError, match=r"s.npz: not an .npz of plain arrays"):
        load_samples(path)
    np.savez(path, x=np.zeros((2,), dtype=[("a", "i4"), ("b", "f4")]))
    with pytest.raises(ConfigError, match=r"array 'x' has dtype=\[\('a', '<i4'\), \('b', '<f4'\)\]"):
        load_samples(path)
    np.savez_compressed(path, x=np.zeros((4 << 20,), dtype=np.uint8))  # 4 MB of zeros in a few KB
    assert path.stat().st_size < 64 << 10
    monkeypatch.setenv("PYTEST_TRITON_FILE_LIMITS", "samples=1M")
    with pytest.raises(ConfigError, match=r"its arrays unpack to 4,194,\d+ bytes, over the 1,048,576"):
        load_samples(path)


def test_npz_rows_become_requests(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, x=np.arange(10, dtype=np.float32).reshape(5, 2), m=np.ones((5, 2), dtype=np.int64))
    samples = load_samples(path, batch_size=2)
    assert [s.id for s in samples] == ["rows 0-1", "rows 2-3", "rows 4-4"]
    assert samples[2].tensors["x"].tolist() == [[8.0, 9.0]]
    np.savez(path, x=np.zeros((5, 2)), m=np.zeros((4, 2)))
    with pytest.raises(ConfigError, match="same number of rows on axis 0"):
        load_samples(path)


def _specs() -> list[GeneratedInput]:
    return [
        GeneratedInput("ids", "int64", (6,), TensorRule("ids", 0, 1000)),
        GeneratedInput("mask", "int64", (6,), TensorRule("mask", mask=True, min_ones=2)),
        GeneratedInput("x", "float32", (2,), TensorRule("x", -0.5, 0.5)),
    ]


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_generated_tensors_keep_their_rules(data: st.DataObject) -> None:
    tensors = data.draw(request_tensors(_specs(), batch_size=3))
    assert tensors["ids"].shape == (3, 6)
    assert tensors["ids"].dtype == np.int64
    assert 0 <= tensors["ids"].min() <= tensors["ids"].max() < 1000
    for row in tensors["mask"]:
        ones = int(row.sum())
        assert ones >= 2
        assert row.tolist() == [1] * ones + [0] * (6 - ones)  # ones, then zeros
    assert tensors["x"].dtype == np.float32
    assert -0.5 <= tensors["x"].min() <= tensors["x"].max() <= 0.5


def test_numpy_requests_follow_the_rules_and_the_seed() -> None:
    one = numpy_request(_specs(), batch_size=4, seed=3)
    assert {k: v.tolist() for k, v in one.items()} == {
        k: v.tolist() for k, v in numpy_request(_specs(), batch_size=4, seed=3).items()
    }
    assert one["ids"].shape == (4, 6)
    assert one["mask"].sum(axis=1).min() >= 2
    assert numpy_request(_specs(), batch_size=None, seed=3)["x"].shape == (2,)


def test_inputs_come_from_the_config(tmp_path: Path) -> None:
    builder = RepositoryBuilder(tmp_path / "repo").add_python(
        "m",
        source="class TritonPythonModel:\n    pass\n",
        inputs=[TensorSpec("tokens", "TYPE_INT32", (-1,)), TensorSpec("TEXT", "TYPE_STRING", (1,))],
        outputs=[TensorSpec("y", "TYPE_FP32", (1,))],
        max_batch_size=4,
    )
    config = builder.write() / "m" / "config.pbtxt"
    with pytest.raises(ConfigError, match=r"inputs.generate.tensors.tokens.shape is needed: .* dims \[-1\]"):
        generated_inputs(config, {}, where="c.toml")
    with pytest.raises(ConfigError, match=r"input 'TEXT' .* is TYPE_STRING; only numeric and bool inputs"):
        generated_inputs(config, {"tokens": TensorRule("tokens", shape=(8,))}, where="c.toml")
    with pytest.raises(ConfigError, match=r"inputs.generate.tensors.nope: .* has no input 'nope'"):
        generated_inputs(config, {"nope": TensorRule("nope")}, where="c.toml")
