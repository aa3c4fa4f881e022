"""Output parity between two variants of a model (ONNX fp32 vs TensorRT fp16, local vs SageMaker, ...).

Pass criterion (per element, the one ``numpy.allclose`` and ``numpy.testing.assert_allclose`` use, with
``reference`` as the desired side)::

    |candidate - reference| <= atol + rtol * |reference|

It is safe at zero: a zero reference allows ``atol``. The *relative error* that reports show is a separate,
symmetric figure, ``|candidate - reference| / max(|candidate|, |reference|, tiny)`` (``tiny`` the smallest
normal float64), bounded by 2 and 0 when both sides are equal (zeros included), so it never divides by zero.

NaN and Inf fail on either side, even when both sides hold them at the same place: an engine that produces
them is broken whatever the other one does. Shape, dtype (unless ``check_dtype=False``) and the set of output
names must match. Non-numeric outputs (Triton ``BYTES``) are compared for equality.

Tolerance presets (:data:`TOLERANCE_PRESETS`, editable): ``fp32`` atol=rtol=1e-4, ``fp16`` and ``tf32`` atol=rtol=1e-2.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import final

import numpy as np
import numpy.typing as npt

from pytest_triton.errors import ConfigError

__all__ = [
    "TOLERANCE_PRESETS",
    "LabelDisagreement",
    "LabelReport",
    "OutputParity",
    "ParityReport",
    "Tolerance",
    "assert_parity",
    "assert_same_labels",
    "compare",
    "compare_labels",
    "tolerance",
]

_TINY = float(np.finfo(np.float64).tiny)


@final
@dataclass(frozen=True)
class Tolerance:
    """Absolute and relative tolerance of a parity check; ``name`` is the preset it came from."""

    atol: float
    rtol: float
    name: str = "custom"

    def __post_init__(self) -> None:
        for field in ("atol", "rtol"):
            value = getattr(self, field)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise ConfigError(f"tolerance {self.name!r}: {field}={value!r}; expected a number >= 0")

    def allowed(self, reference: float) -> float:
        """The largest |difference| allowed at an element whose reference value is ``reference``."""
        return self.atol + self.rtol * abs(reference)

    def __str__(self) -> str:
        return f"{self.name}: atol={self.atol:g}, rtol={self.rtol:g}"


#: Named presets; change or add entries to configure them for a whole session.
TOLERANCE_PRESETS: dict[str, Tolerance] = {
    "fp32": Tolerance(atol=1e-4, rtol=1e-4, name="fp32"),
    "fp16": Tolerance(atol=1e-2, rtol=1e-2, name="fp16"),
    # ONNX Runtime's CUDA provider multiplies fp32 matrices in TF32 by default on Ampere and newer
    # (use_tf32): a 10-bit mantissa, beyond the fp32 preset against CPU fp32 (benchmarks/results/)
    "tf32": Tolerance(atol=1e-2, rtol=1e-2, name="tf32"),
}


def tolerance(preset: str | Tolerance = "fp32", *, atol: float | None = None, rtol: float | None = None) -> Tolerance:
    """A preset by name (or a :class:`Tolerance`), with ``atol``/``rtol`` overriding its values when given."""
    if isinstance(preset, Tolerance):
        base = preset
    else:
        try:
            base = TOLERANCE_PRESETS[preset]
        except KeyError:
            known = ", ".join(sorted(TOLERANCE_PRESETS))
            raise ConfigError(f"unknown tolerance preset {preset!r}; known presets: {known}") from None
    if atol is None and rtol is None:
        return base
    return Tolerance(
        atol=base.atol if atol is None else atol,
        rtol=base.rtol if rtol is None else rtol,
        name=f"{base.name}+custom",
    )


@final
@dataclass(frozen=True)
class OutputParity:
    """The comparison of one output; ``problem`` is None when it passed."""

    name: str
    problem: str | None
    reference_dtype: str = ""
    candidate_dtype: str = ""
    reference_shape: tuple[int, ...] = ()
    candidate_shape: tuple[int, ...] = ()
    total: int = 0
    mismatched: int = 0
    non_finite: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    worst_index: tuple[int, ...] | None = None
    worst_reference: Any = None
    worst_candidate: Any = None
    worst_allowed: float | None = None
    numeric: bool = True

    @property
    def ok(self) -> bool:
        return self.problem is None

    def describe(self) -> list[str]:
        """Lines for a report: what, where, how far off, and the worst element."""
        head = f"output {self.name!r}"
        if self.reference_dtype:
            head += f" {self.reference_dtype} {self.reference_shape}"
        if self.problem is not None:
            head += f": {self.problem}"
        lines = [head]
        if self.total and self.numeric:
            lines.append(
                f"  {self.mismatched} of {self.total} elements outside tolerance, {self.non_finite} non-finite; "
                f"max abs error {self.max_abs_error:.6g}, max rel error {self.max_rel_error:.6g}"
            )
        if self.worst_index is not None:
            where = f"[{', '.join(str(i) for i in self.worst_index)}]"
            text = f"  worst element {where}: reference={self.worst_reference!r} candidate={self.worst_candidate!r}"
            if self.worst_allowed is not None:
                diff = abs(float(self.worst_candidate) - float(self.worst_reference))
                text += f" (|diff|={diff:.6g}, allowed {self.worst_allowed:.6g})"
            lines.append(text)
        return lines


@final
@dataclass(frozen=True)
class ParityReport:
    """Every output's comparison; ``ok`` when all passed."""

    outputs: tuple[OutputParity, ...]
    tolerance: Tolerance
    reference_name: str = "reference"
    candidate_name: str = "candidate"

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)

    @property
    def failures(self) -> tuple[OutputParity, ...]:
        return tuple(o for o in self.outputs if not o.ok)

    def message(self) -> str:
        """A multi-line explanation: the criterion, then each failing output (or every output when all pass)."""
        verdict = "parity holds" if self.ok else "parity failed"
        lines = [
            f"{verdict}: {self.candidate_name!r} vs {self.reference_name!r} "
            f"(tolerance {self.tolerance}; pass if |candidate - reference| <= atol + rtol * |reference|)"
        ]
        for output in self.failures or self.outputs:
            lines.extend("  " + line for line in output.describe())
        return "\n".join(lines)


def compare(
    reference: Mapping[str, npt.NDArray[Any]],
    candidate: Mapping[str, npt.NDArray[Any]],
    *,
    atol: float | None = None,
    rtol: float | None = None,
    preset: str | Tolerance = "fp32",
    check_dtype: bool = True,
    reference_name: str = "reference",
    candidate_name: str = "candidate",
) -> ParityReport:
    """Compare every output of ``candidate`` with ``reference`` (see the module docstring for the criterion)."""
    tol = tolerance(preset, atol=atol, rtol=rtol)
    outputs: list[OutputParity] = []
    for name in reference:
        if name not in candidate:
            outputs.append(OutputParity(name, f"missing from {candidate_name!r} (it has {sorted(candidate)})"))
            continue
        outputs.append(
            _compare_output(name, np.asarray(reference[name]), np.asarray(candidate[name]), tol, check_dtype)
        )
    for name in candidate:
        if name not in reference:
            outputs.append(OutputParity(name, f"not produced by {reference_name!r} (it has {sorted(reference)})"))
    return ParityReport(tuple(outputs), tol, reference_name, candidate_name)


def assert_parity(
    reference: Mapping[str, npt.NDArray[Any]],
    candidate: Mapping[str, npt.NDArray[Any]],
    *,
    atol: float | None = None,
    rtol: float | None = None,
    preset: str | Tolerance = "fp32",
    check_dtype: bool = True,
    reference_name: str = "reference",
    candidate_name: str = "candidate",
) -> ParityReport:
    """Raise AssertionError naming each failing output and its worst element; return the report otherwise."""
    __tracebackhide__ = True
    report = compare(
        reference,
        candidate,
        atol=atol,
        rtol=rtol,
        preset=preset,
        check_dtype=check_dtype,
        reference_name=reference_name,
        candidate_name=candidate_name,
    )
    if not report.ok:
        raise AssertionError(report.message())
    return report


def _compare_output(
    name: str, ref: npt.NDArray[Any], cand: npt.NDArray[Any], tol: Tolerance, check_dtype: bool
) -> OutputParity:
    base = OutputParity(
        name,
        None,
        reference_dtype=str(ref.dtype),
        candidate_dtype=str(cand.dtype),
        reference_shape=tuple(int(d) for d in ref.shape),
        candidate_shape=tuple(int(d) for d in cand.shape),
    )
    if ref.shape != cand.shape:
        return dataclasses.replace(base, problem=f"shape mismatch: reference {ref.shape} vs candidate {cand.shape}")
    if check_dtype and ref.dtype != cand.dtype:
        return dataclasses.replace(base, problem=f"dtype mismatch: reference {ref.dtype} vs candidate {cand.dtype}")
    numeric = all(a.dtype.kind in "biuf" for a in (ref, cand))
    if not numeric:
        return _compare_exact(base, ref, cand)
    return _compare_numeric(base, ref.astype(np.float64), cand.astype(np.float64), tol)


def _compare_exact(base: OutputParity, ref: npt.NDArray[Any], cand: npt.NDArray[Any]) -> OutputParity:
    ref_items = [_label(v) for v in ref.reshape(-1).tolist()]
    cand_items = [_label(v) for v in cand.reshape(-1).tolist()]
    bad = [i for i, (a, b) in enumerate(zip(ref_items, cand_items)) if a != b]
    result = dataclasses.replace(base, total=len(ref_items), mismatched=len(bad), numeric=False)
    if not bad:
        return result
    index = tuple(int(i) for i in np.unravel_index(bad[0], ref.shape)) if ref.shape else ()
    return dataclasses.replace(
        result,
        problem=f"{len(bad)} of {len(ref_items)} values differ",
        worst_index=index,
        worst_reference=ref_items[bad[0]],
        worst_candidate=cand_items[bad[0]],
    )


def _compare_numeric(
    base: OutputParity, ref: npt.NDArray[np.float64], cand: npt.NDArray[np.float64], tol: Tolerance
) -> OutputParity:
    total = int(ref.size)
    if total == 0:
        return base
    finite = np.isfinite(ref) & np.isfinite(cand)
    r = np.where(finite, ref, 0.0)
    c = np.where(finite, cand, 0.0)
    with np.errstate(over="ignore"):  # |c - r| of values near float64's max is inf: a mismatch, not a warning
        diff = np.abs(c - r)
        rel = diff / np.maximum(np.maximum(np.abs(r), np.abs(c)), _TINY)
        allowed = tol.atol + tol.rtol * np.abs(r)
    within = finite & (diff <= allowed)
    non_finite = int(total - np.count_nonzero(finite))
    mismatched = int(total - np.count_nonzero(within))
    if non_finite:
        flat_worst = int(np.flatnonzero(~finite)[0])
    else:
        # the element that uses up most of its allowance (the first of equals)
        with np.errstate(over="ignore", invalid="ignore"):
            ratio = np.nan_to_num(diff / np.maximum(allowed, _TINY), nan=np.inf)
        flat_worst = int(np.argmax(ratio))
    index = tuple(int(i) for i in np.unravel_index(flat_worst, ref.shape)) if ref.shape else ()
    problem = None
    if non_finite:
        problem = f"{non_finite} non-finite value(s) (NaN or Inf fail on either side)"
    elif mismatched:
        problem = "values differ beyond tolerance"
    return dataclasses.replace(
        base,
        problem=problem,
        total=total,
        mismatched=mismatched,
        non_finite=non_finite,
        max_abs_error=float(diff.max()),
        max_rel_error=float(rel.max()),
        worst_index=index,
        worst_reference=float(ref.reshape(-1)[flat_worst]),
        worst_candidate=float(cand.reshape(-1)[flat_worst]),
        worst_allowed=None if non_finite else float(allowed.reshape(-1)[flat_worst]),
    )


# -- labels -------------------------------------------------------------------------------------------------


def _label(value: Any) -> Any:
    """Triton returns BYTES outputs as ``bytes``; compare them as text."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


@final
@dataclass(frozen=True)
class LabelDisagreement:
    """One sample whose predicted label differs between the two variants."""

    position: int
    id: Any
    reference: Any
    candidate: Any


@final
@dataclass(frozen=True)
class LabelReport:
    """Label agreement between two variants over the same samples."""

    total: int
    disagreements: tuple[LabelDisagreement, ...]
    reference_counts: tuple[tuple[Any, int], ...]
    candidate_counts: tuple[tuple[Any, int], ...]
    reference_name: str = "reference"
    candidate_name: str = "candidate"
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and not self.disagreements

    def message(self) -> str:
        agree = self.total - len(self.disagreements)
        lines = [
            f"labels: {self.candidate_name!r} agrees with {self.reference_name!r} on {agree} of {self.total} samples"
        ]
        if self.problem:
            lines.append(f"  {self.problem}")
        for d in self.disagreements:
            lines.append(f"  [{d.position}] id={d.id!r}: reference={d.reference!r} candidate={d.candidate!r}")
        if not self.ok:
            lines.append(f"  {self.reference_name} label counts: {_counts_text(self.reference_counts)}")
            lines.append(f"  {self.candidate_name} label counts: {_counts_text(self.candidate_counts)}")
        return "\n".join(lines)


def _counts_text(counts: Iterable[tuple[Any, int]]) -> str:
    return ", ".join(f"{label!r}×{n}" for label, n in counts) or "(none)"


def _labels(values: Sequence[Any] | npt.NDArray[Any]) -> list[Any]:
    if isinstance(values, np.ndarray):
        return [_label(v) for v in values.reshape(-1).tolist()]
    return [_label(v) for v in values]


def compare_labels(
    reference_labels: Sequence[Any] | npt.NDArray[Any],
    candidate_labels: Sequence[Any] | npt.NDArray[Any],
    *,
    ids: Sequence[Any] | None = None,
    reference_name: str = "reference",
    candidate_name: str = "candidate",
) -> LabelReport:
    """Compare predicted labels sample by sample; ``ids`` name the samples in the report (default: position)."""
    ref = _labels(reference_labels)
    cand = _labels(candidate_labels)
    names = list(ids) if ids is not None else list(range(len(ref)))
    problem = None
    if len(ref) != len(cand):
        problem = f"length mismatch: reference has {len(ref)} labels, candidate {len(cand)}"
    elif len(names) != len(ref):
        problem = f"ids has {len(names)} entries for {len(ref)} labels"
        names = list(range(len(ref)))
    disagreements = tuple(LabelDisagreement(i, names[i], a, b) for i, (a, b) in enumerate(zip(ref, cand)) if a != b)
    return LabelReport(
        total=max(len(ref), len(cand)),
        disagreements=disagreements,
        reference_counts=tuple(Counter(ref).most_common()),
        candidate_counts=tuple(Counter(cand).most_common()),
        reference_name=reference_name,
        candidate_name=candidate_name,
        problem=problem,
    )


def assert_same_labels(
    reference_labels: Sequence[Any] | npt.NDArray[Any],
    candidate_labels: Sequence[Any] | npt.NDArray[Any],
    *,
    ids: Sequence[Any] | None = None,
    reference_name: str = "reference",
    candidate_name: str = "candidate",
) -> LabelReport:
    """Raise AssertionError listing every sample whose label differs (and both label distributions)."""
    __tracebackhide__ = True
    report = compare_labels(
        reference_labels, candidate_labels, ids=ids, reference_name=reference_name, candidate_name=candidate_name
    )
    if not report.ok:
        raise AssertionError(report.message())
    return report
