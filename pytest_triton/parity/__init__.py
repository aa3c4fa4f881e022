"""Output parity: tensors of two variants within a tolerance, and streams of responses, response by response."""

from __future__ import annotations

from pytest_triton.parity.streams import StreamParity
from pytest_triton.parity.streams import compare_streams
from pytest_triton.parity.tensors import TOLERANCE_PRESETS
from pytest_triton.parity.tensors import LabelDisagreement
from pytest_triton.parity.tensors import LabelReport
from pytest_triton.parity.tensors import OutputParity
from pytest_triton.parity.tensors import ParityReport
from pytest_triton.parity.tensors import Tolerance
from pytest_triton.parity.tensors import assert_parity
from pytest_triton.parity.tensors import assert_same_labels
from pytest_triton.parity.tensors import compare
from pytest_triton.parity.tensors import compare_labels
from pytest_triton.parity.tensors import tolerance

__all__ = [
    "TOLERANCE_PRESETS",
    "LabelDisagreement",
    "LabelReport",
    "OutputParity",
    "ParityReport",
    "StreamParity",
    "Tolerance",
    "assert_parity",
    "assert_same_labels",
    "compare",
    "compare_labels",
    "compare_streams",
    "tolerance",
]
