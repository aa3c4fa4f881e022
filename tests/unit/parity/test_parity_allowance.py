"""The parity criterion decides the verdict: ``|candidate - reference| <= atol + rtol * |reference|``.

``test_parity.py`` checks the messages; these cases are chosen so that the verdict itself (pass or fail) flips
for each plausible wrong formula: the larger of atol and rtol·|ref| instead of their sum, the candidate's
magnitude instead of the reference's, either side's larger or smaller magnitude, rtol alone, atol alone, and a
reference whose sign is not taken off. atol and rtol differ (0.01 and 0.1) so that no two terms coincide, and
the arrays are float64 so that no case sits on a rounding edge.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_triton.parity.tensors import Tolerance
from pytest_triton.parity.tensors import compare

TOL = Tolerance(atol=0.01, rtol=0.1, name="probe")

# (id, reference, candidate, passes): the allowance at reference 10 is 0.01 + 0.1 * 10 = 1.01
CASES = [
    # |diff| 1.005: within the sum 1.01, beyond max(atol, rtol*|ref|) = 1.0
    ("sum, not max", 10.0, 11.005, True),
    # |diff| 1.005 below the reference: rtol*|candidate| would allow only 0.9095
    ("reference, not candidate", 10.0, 8.995, True),
    # |diff| 1.02: over 1.01; rtol*|candidate| (1.112) or the larger magnitude would let it pass
    ("over the allowance", 10.0, 11.02, False),
    # a zero reference allows atol: rtol alone would allow nothing
    ("zero reference within atol", 0.0, 0.009, True),
    ("zero reference beyond atol", 0.0, 0.011, False),
    # a negative reference allows as much as a positive one (rtol * reference would be negative)
    ("negative reference", -10.0, -11.005, True),
    # |diff| 0.5 at reference 10: rtol*|ref| alone is 1.0, atol alone 0.01 would fail it
    ("rtol part counts", 10.0, 10.5, True),
]


@pytest.mark.parametrize(("reference", "candidate", "passes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_verdict_follows_the_formula(reference: float, candidate: float, passes: bool) -> None:
    report = compare({"y": np.array([reference])}, {"y": np.array([candidate])}, preset=TOL)
    assert report.ok is passes, report.message()
    assert TOL.allowed(reference) == pytest.approx(0.01 + 0.1 * abs(reference))
    (output,) = report.outputs
    if not passes:
        assert output.worst_allowed == pytest.approx(TOL.allowed(reference))


def test_each_element_gets_its_own_allowance() -> None:
    # one array: the elements that pass alone pass together, the one that fails alone is the one counted
    reference = np.array([c[1] for c in CASES])
    candidate = np.array([c[2] for c in CASES])
    report = compare({"y": reference}, {"y": candidate}, preset=TOL)
    (output,) = report.outputs
    assert output.mismatched == sum(not c[3] for c in CASES)
    assert output.worst_index == (4,)  # 0.011 of 0.01 uses up more of its allowance than 1.02 of 1.01 does
