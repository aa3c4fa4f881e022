"""Shape agreement along ensemble edges whose ends batch differently (Triton's ValidateTensorConsistency:
the dims must agree with -1 as a wildcard, or else the dims with the batch dimension prepended)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.lint import lint_path
from tests.unit.lint.helpers import write_model
from tests.unit.lint.test_rules_onnx import tiny_onnx


def python_step(name: str, batch: int, in_dims: str, out_dims: str) -> str:
    return (
        f'name: "{name}"\nbackend: "python"\nmax_batch_size: {batch}\n'
        f'input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ {in_dims} ] }} ]\n'
        f'output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ {out_dims} ] }} ]\n'
    )


ENSEMBLE = """name: "ens"
platform: "ensemble"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ %s ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ %s ] } ]
ensemble_scheduling { step [
  { model_name: "a" model_version: -1 input_map { key: "IN" value: "X" } output_map { key: "OUT" value: "mid" } },
  { model_name: "b" model_version: -1 input_map { key: "IN" value: "mid" } output_map { key: "OUT" value: "Y" } }
] }
"""


@pytest.mark.parametrize(
    ("a_batch", "a_out", "b_batch", "b_in", "verdict"),
    [
        (0, "-1, 16", 8, "16", None),  # [-1,16] against the batching [-1,16]: agrees with the batch dim
        (0, "-1", 8, "16", None),  # -1 matches 16 before the batch dim is counted
        (0, "4, 16", 8, "16", None),  # [4,16] against [-1,16]: the batch wildcard takes the 4
        (
            0,
            "-1, 8",
            8,
            "16",
            "inconsistent shape: [-1,8] is inferred from model a while [-1,16] is inferred from model b",
        ),
        (0, "-1, -1, 16", 8, "16", "inconsistent shape: [-1,-1,16] is inferred from model a while [-1,16] is inferred"),
        (8, "16", 0, "-1, 16, 1", "inconsistent shape: [-1,16] is inferred from model a while [-1,16,1] is inferred"),
        (8, "-1", 0, "2, 3", None),  # [-1] and [2,3] differ in rank, but [-1,-1] matches [2,3]
        (8, "3", 0, "2, 4", "inconsistent shape: [-1,3] is inferred from model a while [2,4] is inferred from model b"),
    ],
)
def test_edge_between_steps_that_batch_differently(
    tmp_path: Path, a_batch: int, a_out: str, b_batch: int, b_in: str, verdict: str | None
) -> None:
    a_in = "16" if a_batch else "-1, 16"
    b_out = "16" if b_batch else "-1, 16"
    write_model(tmp_path, "a", python_step("a", a_batch, a_in, a_out), {"1/model.py": ""})
    write_model(tmp_path, "b", python_step("b", b_batch, b_in, b_out), {"1/model.py": ""})
    write_model(tmp_path, "ens", ENSEMBLE % ("-1, 16", "-1, 16"))
    (tmp_path / "ens" / "1").mkdir()
    findings = [f for f in lint_path(tmp_path) if f.severity == "error"]
    if verdict is None:
        assert findings == []
    else:
        (finding,) = findings
        assert finding.rule == "E318"
        assert f"in ensemble ens, ensemble tensor mid: {verdict}" in finding.message


# --- a step whose I/O the onnxruntime backend fills in from its model.onnx ------------------------------

ORT_STEP_WITHOUT_IO = 'name: "a"\nbackend: "onnxruntime"\nmax_batch_size: 8\n'


def ort_step_repository(root: Path, out_dims: list[int | str], out_type: int, b_in: str, b_type: str) -> Path:
    """ens: X -> a (onnxruntime, no I/O in its config) -> mid -> b (python, batching) -> Y."""
    onnx = tiny_onnx([("IN", 1, ["batch", 16])], [("OUT", out_type, out_dims)])
    write_model(root, "a", ORT_STEP_WITHOUT_IO, {"1/model.onnx": onnx})
    b = python_step("b", 8, b_in, "16").replace("TYPE_FP32 dims: [ " + b_in, f"{b_type} dims: [ " + b_in, 1)
    write_model(root, "b", b, {"1/model.py": ""})
    write_model(root, "ens", ENSEMBLE % ("-1, 16", "-1, 16"))
    return root


def test_a_step_auto_completed_from_its_onnx_file_is_checked_like_a_written_one(tmp_path: Path) -> None:
    ort_step_repository(tmp_path, ["batch", 8], 1, "16", "TYPE_FP32")
    (finding,) = [f for f in lint_path(tmp_path) if f.rule.startswith("E")]
    assert finding.rule == "E318"
    expected = "inconsistent shape: [-1,8] is inferred from model a while [-1,16] is inferred from model b"
    assert expected in finding.message


def test_an_onnx_step_whose_file_agrees_passes(tmp_path: Path) -> None:
    ort_step_repository(tmp_path, ["batch", 16], 1, "16", "TYPE_FP32")
    assert not [f.format() for f in lint_path(tmp_path) if f.rule.startswith("E")]


def test_an_onnx_step_whose_output_type_differs_is_e317(tmp_path: Path) -> None:
    ort_step_repository(tmp_path, ["batch", 16], 7, "16", "TYPE_FP32")  # INT64 out, FP32 in
    (finding,) = [f for f in lint_path(tmp_path) if f.rule.startswith("E")]
    assert finding.rule == "E317"
    assert "TYPE_INT64 is inferred from model a while TYPE_FP32 is inferred from model b" in finding.message


def test_an_onnx_step_that_cannot_batch_is_left_to_o507_not_guessed(tmp_path: Path) -> None:
    ort_step_repository(tmp_path, [4, 8], 1, "16", "TYPE_FP32")  # a fixed first dim: completion fails at load
    found = lint_path(tmp_path)
    assert "O507" in [f.rule for f in found]
    assert not [f.format() for f in found if f.rule.startswith("E") and f.severity == "error"]
    unchecked = [f for f in found if f.rule == "E323"]  # each tensor it maps is named, with why
    assert unchecked
    assert all("could not be read or completed (see O501/O507)" in f.message for f in unchecked)


def test_an_onnx_step_with_only_a_batch_dimension_is_completed_as_dims_1(tmp_path: Path) -> None:
    # AutoCompleteIO writes dims [1] (reshape [] when batching) where dropping the batch dimension leaves
    # none: b's [1] then agrees; completing it as [] reported [-1] against [-1,1]
    ort_step_repository(tmp_path, ["batch"], 1, "1", "TYPE_FP32")
    assert not [f.format() for f in lint_path(tmp_path) if f.rule.startswith("E")]
    write_model(tmp_path, "b", python_step("b", 8, "2", "16"), {"1/model.py": ""})
    (finding,) = [f for f in lint_path(tmp_path) if f.rule.startswith("E")]
    assert (
        "inconsistent shape: [-1,1] is inferred from model a while [-1,2] is inferred from model b" in finding.message
    )
