"""Parity of outputs and labels between two variants: criterion, non-finite values, messages, presets."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pytest_triton.errors import ConfigError
from pytest_triton.parity.tensors import TOLERANCE_PRESETS
from pytest_triton.parity.tensors import Tolerance
from pytest_triton.parity.tensors import assert_parity
from pytest_triton.parity.tensors import assert_same_labels
from pytest_triton.parity.tensors import compare
from pytest_triton.parity.tensors import compare_labels
from pytest_triton.parity.tensors import tolerance

F32 = np.float32


def a(*values: Any, dtype: Any = F32) -> npt.NDArray[Any]:
    return np.array(values, dtype=dtype)


# (id, reference, candidate, preset, expected ok, fragment of the message or "")
CASES: list[tuple[str, npt.NDArray[Any], npt.NDArray[Any], str, bool, str]] = [
    ("equal", a(1.0, 2.0, 3.0), a(1.0, 2.0, 3.0), "fp32", True, ""),
    ("within fp32", a(1.0, -2.0, 1000.0), a(1.00005, -2.0001, 1000.05), "fp32", True, ""),
    ("beyond fp32", a(1.0, 2.0, 3.0), a(1.0, 2.01, 3.0), "fp32", False, "worst element [1]"),
    ("within fp16", a(1.0, 2.0, 3.0), a(1.01, 2.02, 2.99), "fp16", True, ""),
    ("beyond fp16", a(1.0, 2.0, 3.0), a(1.0, 2.0, 3.2), "fp16", False, "worst element [2]"),
    ("zero reference within atol", a(0.0, 0.0), a(5e-5, -5e-5), "fp32", True, ""),
    ("zero reference beyond atol", a(0.0, 1.0), a(2e-4, 1.0), "fp32", False, "reference=0.0"),
    ("both zero", a(0.0, -0.0), a(-0.0, 0.0), "fp32", True, ""),
    ("NaN on both sides", a(1.0, np.nan), a(1.0, np.nan), "fp32", False, "non-finite"),
    ("NaN in candidate", a(1.0, 2.0), a(1.0, np.nan), "fp16", False, "candidate=nan"),
    ("Inf on both sides", a(np.inf, 1.0), a(np.inf, 1.0), "fp32", False, "reference=inf"),
    ("-Inf in reference", a(-np.inf), a(0.0), "fp32", False, "non-finite"),
    ("shape mismatch", a(1.0, 2.0), np.array([[1.0, 2.0]], dtype=F32), "fp32", False, "shape mismatch"),
    ("dtype mismatch", a(1.0), a(1.0, dtype=np.float16), "fp16", False, "dtype mismatch"),
    ("int labels equal", a(0, 2, 1, dtype=np.int64), a(0, 2, 1, dtype=np.int64), "fp32", True, ""),
    ("int labels differ", a(0, 2, 1, dtype=np.int64), a(0, 1, 1, dtype=np.int64), "fp32", False, "worst element [1]"),
    (
        "bytes equal",
        a(b"entailment", b"neutral", dtype=object),
        a(b"entailment", b"neutral", dtype=object),
        "fp32",
        True,
        "",
    ),
    ("bytes differ", a(b"entailment", dtype=object), a(b"neutral", dtype=object), "fp32", False, "candidate='neutral'"),
    ("float64 extremes", a(1e308, dtype=np.float64), a(-1e308, dtype=np.float64), "fp32", False, "values differ"),
    ("empty", np.zeros((0, 3), F32), np.zeros((0, 3), F32), "fp32", True, ""),
]


@pytest.mark.parametrize(
    ("reference", "candidate", "preset", "ok", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_compare_table(
    reference: npt.NDArray[Any], candidate: npt.NDArray[Any], preset: str, ok: bool, fragment: str
) -> None:
    report = compare({"logits": reference}, {"logits": candidate}, preset=preset)
    assert report.ok is ok, report.message()
    assert fragment in report.message()
    if ok:
        assert_parity({"logits": reference}, {"logits": candidate}, preset=preset)
    else:
        with pytest.raises(AssertionError, match="parity failed"):
            assert_parity({"logits": reference}, {"logits": candidate}, preset=preset)


def test_failure_message_names_output_dtype_shape_errors_and_worst_element() -> None:
    ref = np.zeros((2, 3), dtype=F32)
    cand = ref.copy()
    cand[0, 1] = 0.002  # within... no: 0.002 > 1e-4, but smaller excess than the next one
    cand[1, 2] = 0.5
    with pytest.raises(AssertionError) as info:
        assert_parity({"logits": ref}, {"logits": cand}, reference_name="onnx-fp32", candidate_name="trt-fp16")
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0].startswith("parity failed: 'trt-fp16' vs 'onnx-fp32' (tolerance fp32: atol=0.0001, rtol=0.0001")
    assert "output 'logits' float32 (2, 3): values differ beyond tolerance" in text
    assert "2 of 6 elements outside tolerance, 0 non-finite; max abs error 0.5, max rel error 1" in text
    assert "worst element [1, 2]: reference=0.0 candidate=0.5 (|diff|=0.5, allowed 0.0001)" in text


def test_worst_element_is_the_one_using_most_of_its_allowance() -> None:
    # |diff| is larger at index 0, but index 1 (reference 0) has the smaller allowance and exceeds it more
    report = compare({"y": a(1000.0, 0.0)}, {"y": a(1000.05, 9e-5)})
    assert report.ok
    (out,) = report.outputs
    assert out.worst_index == (1,)
    assert out.max_abs_error == pytest.approx(0.05, rel=1e-3)


def test_relative_error_is_symmetric_and_bounded() -> None:
    (out,) = compare({"y": a(0.0, 2.0)}, {"y": a(1.0, 2.0)}).outputs
    assert out.max_rel_error == pytest.approx(1.0)  # |1 - 0| / max(|1|, |0|)
    (same,) = compare({"y": a(0.0)}, {"y": a(0.0)}).outputs
    assert same.max_rel_error == 0.0


def test_missing_and_extra_outputs_fail() -> None:
    report = compare({"logits": a(1.0), "probs": a(1.0)}, {"logits": a(1.0), "extra": a(0.0)})
    problems = {o.name: o.problem for o in report.failures}
    assert set(problems) == {"probs", "extra"}
    assert "missing from 'candidate'" in str(problems["probs"])
    assert "not produced by 'reference'" in str(problems["extra"])


def test_dtype_check_can_be_relaxed_for_fp16_outputs() -> None:
    ref = a(0.25, 1.5, -3.0)
    cand = ref.astype(np.float16)
    assert not compare({"y": ref}, {"y": cand}, preset="fp16").ok
    assert compare({"y": ref}, {"y": cand}, preset="fp16", check_dtype=False).ok


def test_presets_and_overrides() -> None:
    assert tolerance("fp32") == Tolerance(1e-4, 1e-4, "fp32")
    assert tolerance("fp16") == Tolerance(1e-2, 1e-2, "fp16")
    custom = tolerance("fp16", atol=0.5)
    assert (custom.atol, custom.rtol, custom.name) == (0.5, 1e-2, "fp16+custom")
    assert compare({"y": a(0.0)}, {"y": a(0.4)}, preset="fp16", atol=0.5).ok
    with pytest.raises(ConfigError, match="unknown tolerance preset 'bf16'; known presets: fp16, fp32"):
        tolerance("bf16")
    with pytest.raises(ConfigError, match="atol=-1"):
        Tolerance(-1, 0)


def test_presets_are_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TOLERANCE_PRESETS, "int8", Tolerance(0.1, 0.1, "int8"))
    assert compare({"y": a(1.0)}, {"y": a(1.15)}, preset="int8").ok
    assert "tolerance int8" in compare({"y": a(1.0)}, {"y": a(1.5)}, preset="int8").message()


@settings(max_examples=50, deadline=None)
@given(arrays(np.float32, st.integers(1, 20), elements=st.floats(-1e6, 1e6, width=32)))
def test_an_array_always_matches_itself(values: npt.NDArray[np.float32]) -> None:
    assert compare({"y": values}, {"y": values.copy()}).ok


@settings(max_examples=50, deadline=None)
@given(arrays(np.float32, st.integers(1, 20), elements=st.floats(width=32)), st.integers(0, 19))
def test_any_nan_fails(values: npt.NDArray[np.float32], where: int) -> None:
    values = values.copy()
    values[where % values.size] = np.nan
    assert not compare({"y": values}, {"y": values.copy()}).ok


# -- labels ---------------------------------------------------------------------------------------------------


def test_same_labels_pass() -> None:
    report = assert_same_labels(["entailment", "neutral"], [b"entailment", b"neutral"])
    assert report.ok
    assert report.total == 2


def test_label_disagreements_are_listed_with_ids_and_counts() -> None:
    reference = ["entailment", "contradiction", "neutral", "entailment"]
    collapsed = ["neutral"] * 4  # the seed's ORT CPU INT8 failure
    with pytest.raises(AssertionError) as info:
        assert_same_labels(
            reference,
            np.array(collapsed, dtype=object),
            ids=["s1", "s2", "s3", "s4"],
            reference_name="onnx-fp32",
            candidate_name="ort-int8",
        )
    lines = str(info.value).splitlines()
    assert lines[0] == "labels: 'ort-int8' agrees with 'onnx-fp32' on 1 of 4 samples"
    assert lines[1:4] == [
        "  [0] id='s1': reference='entailment' candidate='neutral'",
        "  [1] id='s2': reference='contradiction' candidate='neutral'",
        "  [3] id='s4': reference='entailment' candidate='neutral'",
    ]
    assert lines[4] == "  onnx-fp32 label counts: 'entailment'×2, 'contradiction'×1, 'neutral'×1"
    assert lines[5] == "  ort-int8 label counts: 'neutral'×4"


def test_label_length_mismatch_fails() -> None:
    report = compare_labels([0, 1, 2], [0, 1])
    assert not report.ok
    assert "length mismatch: reference has 3 labels, candidate 2" in report.message()


def test_label_ids_of_the_wrong_length_are_reported() -> None:
    report = compare_labels([0, 1], [0, 2], ids=["only-one"])
    assert not report.ok
    assert "ids has 1 entries for 2 labels" in report.message()
    assert "[1] id=1: reference=1 candidate=2" in report.message()


def test_non_finite_elements_count_as_mismatched_and_are_the_worst() -> None:
    (out,) = compare({"y": a(1.0, 5.0, np.nan)}, {"y": a(1.0, 9.0, np.nan)}).outputs
    assert (out.non_finite, out.mismatched, out.total) == (1, 2, 3)
    assert out.worst_index == (2,)
    assert out.max_abs_error == 4.0  # over the finite pairs only
