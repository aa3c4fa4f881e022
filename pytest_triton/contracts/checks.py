"""Parity of one variant's outputs with the reference's: tolerances per output and derived agreement checks.

Outputs of every request are concatenated along axis 0 (the batch axis) before they are compared, so a
row is a sample; ``row_ids`` name the rows in the report (``s03``, ``rows 8-15[2]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import final

import numpy as np
from numpy.typing import NDArray

from pytest_triton.contracts.spec import LabelCheck
from pytest_triton.contracts.spec import OutputCheck
from pytest_triton.parity.tensors import LabelReport
from pytest_triton.parity.tensors import ParityReport
from pytest_triton.parity.tensors import Tolerance
from pytest_triton.parity.tensors import compare
from pytest_triton.parity.tensors import compare_labels

__all__ = ["CheckResult", "compare_outputs", "compare_text_labels"]


@final
@dataclass(frozen=True)
class CheckResult:
    """One check of one output: ``tolerance``, ``argmax``, ``top_k`` or ``cosine``."""

    output: str
    check: str
    ok: bool
    lines: tuple[str, ...]
    report: ParityReport | LabelReport | None = field(default=None, compare=False)  # what the latency report shows

    def title(self) -> str:
        return f"{self.output} {self.check}: {'ok' if self.ok else 'FAILED'}"


def _rows(array: NDArray[Any]) -> NDArray[np.float64]:
    """The array as [rows, features] (a 1-D output is one feature per row)."""
    flat = np.asarray(array, dtype=np.float64)
    if flat.ndim == 0:
        return flat.reshape(1, 1)
    return flat.reshape(flat.shape[0], -1)


def _row_name(row_ids: Sequence[str], row: int) -> str:
    return row_ids[row] if row < len(row_ids) else f"row {row}"


def _tolerance(
    name: str, ref: NDArray[Any], cand: NDArray[Any], tol: Tolerance, variant: str, ref_name: str, rows: Sequence[str]
) -> CheckResult:
    report = compare(
        {name: ref}, {name: cand}, preset=tol, check_dtype=False, reference_name=ref_name, candidate_name=variant
    )
    lines = report.message().splitlines()
    output = report.outputs[0]
    if output.worst_index:
        lines.append(f"  the worst element is in sample {_row_name(rows, output.worst_index[0])!r}")
    return CheckResult(name, f"tolerance ({tol})", report.ok, tuple(lines), report)


def _argmax(
    name: str, ref: NDArray[Any], cand: NDArray[Any], variant: str, ref_name: str, rows: Sequence[str]
) -> CheckResult:
    report = compare_labels(
        _rows(ref).argmax(axis=1),
        _rows(cand).argmax(axis=1),
        ids=list(rows),
        reference_name=ref_name,
        candidate_name=variant,
    )
    return CheckResult(name, "argmax labels", report.ok, tuple(report.message().splitlines()), report)


def _top_k(name: str, ref: NDArray[Any], cand: NDArray[Any], k: int, variant: str, rows: Sequence[str]) -> CheckResult:
    a, b = _rows(ref), _rows(cand)
    ref_sets = [frozenset(int(i) for i in r) for r in np.argsort(-a, axis=1, kind="stable")[:, :k]]
    cand_sets = [frozenset(int(i) for i in r) for r in np.argsort(-b, axis=1, kind="stable")[:, :k]]
    bad = [i for i, (x, y) in enumerate(zip(ref_sets, cand_sets)) if x != y]
    lines = [f"top-{k} sets of {name!r}: {variant!r} agrees on {len(ref_sets) - len(bad)} of {len(ref_sets)} rows"]
    for i in bad[:10]:
        lines.append(f"  {_row_name(rows, i)!r}: reference {sorted(ref_sets[i])} candidate {sorted(cand_sets[i])}")
    return CheckResult(name, f"top-{k} sets", not bad, tuple(lines))


def _cosine(
    name: str, ref: NDArray[Any], cand: NDArray[Any], minimum: float, variant: str, rows: Sequence[str]
) -> CheckResult:
    a, b = _rows(ref), _rows(cand)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, (a * b).sum(axis=1) / np.where(norms > 0, norms, 1.0), 1.0)
    cos = np.nan_to_num(cos, nan=-1.0)
    worst = int(np.argmin(cos))
    ok = bool(cos[worst] >= minimum)
    lines = [
        f"cosine similarity of {name!r}: {variant!r} min {cos[worst]:.6f} (required >= {minimum:g}) "
        f"at sample {_row_name(rows, worst)!r}; {int((cos < minimum).sum())} of {len(cos)} rows below"
    ]
    return CheckResult(name, f"cosine >= {minimum:g}", ok, tuple(lines))


def compare_outputs(
    reference: Mapping[str, NDArray[Any]],
    candidate: Mapping[str, NDArray[Any]],
    checks: Sequence[OutputCheck],
    *,
    precision: Tolerance,
    variant: str,
    reference_name: str,
    row_ids: Sequence[str],
) -> list[CheckResult]:
    """Every check of every output; ``precision`` is the tolerance of outputs that declare none.

    ``candidate`` is keyed by the reference's output names (the variant's own names already mapped)."""
    wanted = list(checks) or [OutputCheck(name) for name in reference]
    results: list[CheckResult] = []
    for check in wanted:
        if check.name not in reference or check.name not in candidate:
            side = reference_name if check.name not in reference else variant
            have = sorted(reference if check.name not in reference else candidate)
            results.append(
                CheckResult(
                    check.name, "present", False, (f"output {check.name!r} missing from {side!r} (it has {have})",)
                )
            )
            continue
        ref, cand = np.asarray(reference[check.name]), np.asarray(candidate[check.name])
        tol = check.tolerance or precision
        results.append(_tolerance(check.name, ref, cand, tol, variant, reference_name, row_ids))
        if ref.shape != cand.shape or ref.dtype.kind not in "biuf" or cand.dtype.kind not in "biuf":
            continue  # the tolerance check names the mismatch; derived checks need numbers of one shape
        if check.argmax:
            results.append(_argmax(check.name, ref, cand, variant, reference_name, row_ids))
        if check.top_k is not None:
            results.append(_top_k(check.name, ref, cand, check.top_k, variant, row_ids))
        if check.cosine is not None:
            results.append(_cosine(check.name, ref, cand, check.cosine, variant, row_ids))
    return results


def compare_text_labels(
    check: LabelCheck,
    reference: Mapping[str, NDArray[Any]],
    labels: NDArray[Any] | None,
    variant: str,
    reference_name: str,
    row_ids: Sequence[str],
) -> CheckResult:
    """The variant's text labels against the names of the reference's row-wise argmax of ``check.source``."""
    title = f"labels {check.outputs[variant]!r} vs names of argmax({check.source})"
    if check.source not in reference or labels is None:
        missing = check.source if check.source not in reference else check.outputs[variant]
        side = reference_name if check.source not in reference else variant
        return CheckResult(check.name, title, False, (f"output {missing!r} missing from {side!r}",))
    report = compare_labels(
        check.reference_labels(reference[check.source]),
        np.asarray(labels).reshape(-1),
        ids=list(row_ids),
        reference_name=reference_name,
        candidate_name=variant,
    )
    return CheckResult(check.name, title, report.ok, tuple(report.message().splitlines()), report)
