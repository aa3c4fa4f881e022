"""Parity checks of one variant: tolerance per output, argmax labels, top-k sets, cosine similarity."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from pytest_triton.contracts.checks import compare_outputs
from pytest_triton.contracts.checks import compare_text_labels
from pytest_triton.contracts.spec import LabelCheck
from pytest_triton.contracts.spec import OutputCheck
from pytest_triton.parity.tensors import tolerance

REF = {"y": np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]], dtype=np.float32)}
ROWS = ["s1", "s2"]
WIDE = tolerance("fp32", atol=10.0)


def run(candidate: NDArray[Any], check: OutputCheck) -> list[tuple[str, bool, str]]:
    results = compare_outputs(
        REF, {"y": candidate}, [check], precision=tolerance("fp32"), variant="v", reference_name="ref", row_ids=ROWS
    )
    return [(r.check, r.ok, "\n".join(r.lines)) for r in results]


def test_all_checks_pass_on_equal_outputs() -> None:
    check = OutputCheck("y", derived={"argmax": True, "top_k": 2, "cosine": 0.999})
    assert [(c, ok) for c, ok, _ in run(REF["y"].copy(), check)] == [
        ("tolerance (fp32: atol=0.0001, rtol=0.0001)", True),
        ("argmax labels", True),
        ("top-2 sets", True),
        ("cosine >= 0.999", True),
    ]


def test_tolerance_names_output_worst_element_and_sample() -> None:
    candidate = REF["y"].copy()
    candidate[1, 2] += 0.5
    ((_, ok, text),) = run(candidate, OutputCheck("y"))
    assert not ok
    assert "'v' vs 'ref'" in text
    assert "worst element [1, 2]: reference=2.0 candidate=2.5" in text
    assert "the worst element is in sample 's2'" in text


@pytest.mark.parametrize(
    ("change", "check", "failed", "says"),
    [
        (
            (0, 0, 5.0),
            OutputCheck("y", tolerance=tolerance("fp32", atol=10.0), derived={"argmax": True}),
            "argmax labels",
            "'s1'",
        ),
        (
            (1, 2, 3.5),
            OutputCheck("y", tolerance=tolerance("fp32", atol=10.0), derived={"top_k": 1}),
            "top-1 sets",
            "'s2'",
        ),
        (
            (0, 0, -30.0),
            OutputCheck("y", tolerance=tolerance("fp32", atol=99.0), derived={"cosine": 0.99}),
            "cosine >= 0.99",
            "'s1'",
        ),
    ],
)
def test_derived_checks_fail_on_their_row(
    change: tuple[int, int, float], check: OutputCheck, failed: str, says: str
) -> None:
    candidate = REF["y"].copy()
    row, col, value = change
    candidate[row, col] = value
    results = {c: (ok, text) for c, ok, text in run(candidate, check)}
    assert results[failed][0] is False, results
    assert says in results[failed][1]
    assert all(ok for c, (ok, _) in results.items() if c != failed), results


def test_a_missing_output_fails_by_name() -> None:
    results = compare_outputs(
        REF, {}, [OutputCheck("y")], precision=tolerance("fp32"), variant="v", reference_name="ref", row_ids=ROWS
    )
    assert [(r.ok, r.lines[0]) for r in results] == [(False, "output 'y' missing from 'v' (it has [])")]


def test_text_labels_against_the_reference_argmax() -> None:
    check = LabelCheck("label", "y", ("a", "b", "c"), {"v": "LABEL"})
    good = np.array([[b"c"], [b"a"]], dtype=object)
    assert compare_text_labels(check, REF, good, "v", "ref", ROWS).ok
    bad = compare_text_labels(check, REF, np.array([[b"c"], [b"b"]], dtype=object), "v", "ref", ROWS)
    assert not bad.ok
    assert "[1] id='s2': reference='a' candidate='b'" in "\n".join(bad.lines)
    missing = compare_text_labels(check, REF, None, "v", "ref", ROWS)
    assert missing.lines == ("output 'LABEL' missing from 'v'",)
