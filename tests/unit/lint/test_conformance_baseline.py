"""The unconfirmed conformance cases, pinned: the ones the linter matches today must keep matching.

``test_conformance.py`` runs the 124 cases confirmed on Triton 2.51 and only prints a summary for the 25 that
were not confirmed (they need GPUs, loaded step models or another release's wording). That summary cannot fail,
so a rule change that stops matching one of them would pass unseen. Here the cases that match today are a
baseline: losing one fails, and so does matching one of the two that do not (then add it to the baseline).
"""

from __future__ import annotations

import pytest

from pytest_triton.lint import lint_path

from .test_conformance import CASES
from .test_conformance import Case
from .test_conformance import matching

# matched on main a56b4d4 (23 of 25)
MATCHED_TODAY = frozenset(
    {
        "autofill.ensemble.inconsistent_data_type",
        "autofill.ensemble.inconsistent_shape",
        "autofill.ensemble.invalid_batch_size",
        "autofill.ensemble.invalid_decoupled_branching",
        "autofill.ensemble.invalid_decoupled_branching_2",
        "autofill.ensemble.invalid_input_map",
        "autofill.ensemble.invalid_output_map",
        "autofill.ensemble.no_required_version",
        "autofill.ensemble.no_required_version_2",
        "autofill.ensemble.no_required_version_3",
        "autofill.ensemble.unmapped_input",
        "noautofill.default_priority_level0.onnxruntime_onnx",
        "noautofill.default_priority_level0.tensorrt_plan",
        "noautofill.default_priority_level1.onnxruntime_onnx",
        "noautofill.default_priority_level1.tensorrt_plan",
        "noautofill.invalid_cpu.onnxruntime_onnx",
        "noautofill.invalid_cpu.tensorrt_plan",
        "noautofill.negative_gpu.onnxruntime_onnx",
        "noautofill.negative_gpu.tensorrt_plan",
        "noautofill.priority_level0.onnxruntime_onnx",
        "noautofill.priority_level0.tensorrt_plan",
        "noautofill.priority_level1.onnxruntime_onnx",
        "noautofill.priority_level1.tensorrt_plan",
    }
)
# not matched today: the GPU index is checked against the GPUs Triton sees, which the linter does not know
NOT_MATCHED_TODAY = frozenset({"noautofill.invalid_gpu.onnxruntime_onnx", "noautofill.invalid_gpu.tensorrt_plan"})

UNCONFIRMED = [case for case in CASES if not case.confirmed]


def test_the_baseline_names_every_unconfirmed_case() -> None:
    assert {case.name for case in UNCONFIRMED} == MATCHED_TODAY | NOT_MATCHED_TODAY
    assert not MATCHED_TODAY & NOT_MATCHED_TODAY


@pytest.mark.parametrize("case", UNCONFIRMED, ids=[case.name for case in UNCONFIRMED])
def test_an_unconfirmed_case_matches_as_it_did(case: Case) -> None:
    matched = bool(matching(case, lint_path(case.target)))
    if case.name in MATCHED_TODAY:
        assert matched, f"{case.name} matched Triton's text before and no longer does"
    else:
        assert not matched, (
            f"{case.name} now matches Triton's text: move it to MATCHED_TODAY in {__name__.rsplit('.', 1)[-1]}.py"
        )
