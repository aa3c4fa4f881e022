"""Parity of one variant's outputs with the reference's: tolerances per output and derived agreement checks.

Outputs of every request are concatenated along axis 0 (the batch axis) before they are compared, so a
row is a sample; ``row_ids`` name the rows in the report (``s03``, ``rows 8-15[2]``).
"""

from __future__ import annotations

from collections.abc import Callable
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
from pytest_triton.errors import ConfigError
from pytest_triton.parity.tensors import LabelReport
from pytest_triton.parity.tensors import ParityReport
from pytest_triton.parity.tensors import Tolerance
from pytest_triton.parity.tensors import compare
from pytest_triton.parity.tensors import compare_labels

__all__ = [
    "DERIVED_CHECKS",
    "CheckResult",
    "Compared",
    "DerivedCheck",
    "compare_outputs",
    "compare_text_labels",
    "register_check",
    "unregister_check",
]


@final
@dataclass(frozen=True)
class CheckResult:
    """One check of one output: its tolerance, or a derived check (:data:`DERIVED_CHECKS`)."""

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


@final
@dataclass(frozen=True)
class Compared:
    """What a derived check sees: one output of the reference and of the variant, numbers of one shape."""

    output: str
    reference: NDArray[Any]
    candidate: NDArray[Any]
    variant: str
    reference_name: str
    row_ids: Sequence[str]

    def rows(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Both arrays as [rows, features] of float64 (row i is sample ``row_name(i)``)."""
        return _rows(self.reference), _rows(self.candidate)

    def row_name(self, row: int) -> str:
        return _row_name(self.row_ids, row)


@final
@dataclass(frozen=True)
class DerivedCheck:
    """A check computed from one output's numbers, declared as ``KEY = VALUE`` in ``[parity.outputs.NAME]``.

    ``parse`` turns the declared value into the check's setting, raising ValueError with what it expects (the
    contracts file's error names the key and the value); a declared ``false`` turns a check off. ``run`` gives
    one :class:`CheckResult` for one output. Register one with :func:`register_check`.
    """

    key: str
    parse: Callable[[object], Any]
    run: Callable[[Compared, Any], CheckResult]


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("true or false")
    return value


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError("an integer >= 1")
    return value


def _similarity(value: object) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not -1.0 <= value <= 1.0:
        raise ValueError("a minimum cosine similarity in [-1, 1]")
    return float(value)


def _argmax(seen: Compared, _: bool) -> CheckResult:
    ref, cand = seen.rows()
    report = compare_labels(
        ref.argmax(axis=1),
        cand.argmax(axis=1),
        ids=list(seen.row_ids),
        reference_name=seen.reference_name,
        candidate_name=seen.variant,
    )
    return CheckResult(seen.output, "argmax labels", report.ok, tuple(report.message().splitlines()), report)


def _top_k(seen: Compared, k: int) -> CheckResult:
    a, b = seen.rows()
    ref_sets = [frozenset(int(i) for i in r) for r in np.argsort(-a, axis=1, kind="stable")[:, :k]]
    cand_sets = [frozenset(int(i) for i in r) for r in np.argsort(-b, axis=1, kind="stable")[:, :k]]
    bad = [i for i, (x, y) in enumerate(zip(ref_sets, cand_sets)) if x != y]
    agree = len(ref_sets) - len(bad)
    lines = [f"top-{k} sets of {seen.output!r}: {seen.variant!r} agrees on {agree} of {len(ref_sets)} rows"]
    for i in bad[:10]:
        lines.append(f"  {seen.row_name(i)!r}: reference {sorted(ref_sets[i])} candidate {sorted(cand_sets[i])}")
    return CheckResult(seen.output, f"top-{k} sets", not bad, tuple(lines))


def _cosine(seen: Compared, minimum: float) -> CheckResult:
    a, b = seen.rows()
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, (a * b).sum(axis=1) / np.where(norms > 0, norms, 1.0), 1.0)
    cos = np.nan_to_num(cos, nan=-1.0)
    worst = int(np.argmin(cos))
    ok = bool(cos[worst] >= minimum)
    lines = [
        f"cosine similarity of {seen.output!r}: {seen.variant!r} min {cos[worst]:.6f} (required >= {minimum:g}) "
        f"at sample {seen.row_name(worst)!r}; {int((cos < minimum).sum())} of {len(cos)} rows below"
    ]
    return CheckResult(seen.output, f"cosine >= {minimum:g}", ok, tuple(lines))


# the derived checks by key, run in this order after an output's tolerance check
DERIVED_CHECKS: dict[str, DerivedCheck] = {
    check.key: check
    for check in (
        DerivedCheck("argmax", _flag, _argmax),
        DerivedCheck("top_k", _count, _top_k),
        DerivedCheck("cosine", _similarity, _cosine),
    )
}
OUTPUT_KEYS = frozenset({"preset", "atol", "rtol"})  # an output's tolerance; the derived checks' keys beside them


def register_check(check: DerivedCheck, *, replace: bool = False) -> None:
    """Make ``check`` declarable as ``check.key`` in ``[parity.outputs.NAME]``; a taken key needs ``replace``."""
    if check.key in OUTPUT_KEYS or (check.key in DERIVED_CHECKS and not replace):
        taken = ", ".join(sorted(OUTPUT_KEYS | set(DERIVED_CHECKS)))
        raise ConfigError(
            f"contract check key={check.key!r} is taken (taken: {taken}); "
            "pick another key, or pass replace=True to replace a derived check"
        )
    DERIVED_CHECKS[check.key] = check


def unregister_check(key: str) -> None:
    """Forget the derived check declared as ``key``."""
    DERIVED_CHECKS.pop(key, None)


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
        seen = Compared(check.name, ref, cand, variant, reference_name, row_ids)
        for key, derived in DERIVED_CHECKS.items():
            if key in check.derived:
                results.append(derived.run(seen, check.derived[key]))
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
