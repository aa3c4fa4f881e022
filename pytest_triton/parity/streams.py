"""Parity of two streams: the same number of responses, and each response's outputs within tolerance.

A decoupled model answers a request with a sequence of responses. Two variants agree on a request when they
send as many responses and response ``i`` of one agrees with response ``i`` of the other (every output, by
:func:`pytest_triton.parity.tensors.compare`). A disagreement names the first response that differs: its index, the
output and its worst element; a shorter or longer stream says how many responses each side sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from pytest_triton.client.streaming import StreamResult
from pytest_triton.parity.tensors import ParityReport
from pytest_triton.parity.tensors import Tolerance
from pytest_triton.parity.tensors import compare


@final
@dataclass(frozen=True)
class StreamParity:
    """The comparison of one request's two streams; ``first_difference`` is None when they agree."""

    reference_name: str
    candidate_name: str
    reference_count: int
    candidate_count: int
    first_difference: int | None
    report: ParityReport | None  # the comparison of the first differing response (None: one side has none there)

    @property
    def ok(self) -> bool:
        return self.first_difference is None

    def message(self) -> str:
        """What differs, starting with the first response that does."""
        counts = (
            f"{self.candidate_name!r} sent {self.candidate_count} response(s), "
            f"{self.reference_name!r} sent {self.reference_count}"
        )
        if self.ok:
            return f"streams agree: {counts}, every response within tolerance"
        index = self.first_difference
        lines = [f"streams differ at response {index}: {counts}"]
        if self.report is not None:
            lines.extend("  " + line for line in self.report.message().splitlines())
        else:
            shorter = self.candidate_name if self.candidate_count < self.reference_count else self.reference_name
            lines.append(f"  {shorter!r} has no response {index}: its stream ended after {index} response(s)")
        return "\n".join(lines)


def compare_streams(
    reference: StreamResult,
    candidate: StreamResult,
    *,
    preset: str | Tolerance = "fp32",
    check_dtype: bool = True,
    reference_name: str = "reference",
    candidate_name: str = "candidate",
) -> StreamParity:
    """Compare ``candidate``'s responses with ``reference``'s, one by one, in arrival order."""
    ref, cand = reference.responses, candidate.responses
    for index, (expected, got) in enumerate(zip(ref, cand)):
        report = compare(
            expected.outputs,
            got.outputs,
            preset=preset,
            check_dtype=check_dtype,
            reference_name=reference_name,
            candidate_name=candidate_name,
        )
        if not report.ok:
            return StreamParity(reference_name, candidate_name, len(ref), len(cand), index, report)
    if len(ref) != len(cand):
        return StreamParity(reference_name, candidate_name, len(ref), len(cand), min(len(ref), len(cand)), None)
    return StreamParity(reference_name, candidate_name, len(ref), len(cand), None, None)
