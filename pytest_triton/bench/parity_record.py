"""A parity comparison as the report keeps it: per variant, outputs compared, preset, errors, worst element, labels.

Built from :mod:`pytest_triton.parity.tensors`'s reports (:func:`~pytest_triton.parity.tensors.compare` and
:func:`~pytest_triton.parity.tensors.compare_labels`), so the report shows the numbers the assertion judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import final

if TYPE_CHECKING:  # numpy stays out of the bench's import (the plugin imports the bench in its summary)
    from pytest_triton.parity.tensors import LabelReport
    from pytest_triton.parity.tensors import OutputParity
    from pytest_triton.parity.tensors import ParityReport

__all__ = ["OutputRecord", "ParityRecord"]


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: numpy scalars become Python ones, NaN and infinities their names."""
    item = getattr(value, "item", None)
    value = item() if callable(item) else value
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value


def _short(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else repr(value)


@final
@dataclass(frozen=True)
class OutputRecord:
    """One output's comparison."""

    name: str
    ok: bool
    problem: str | None
    dtype: str
    shape: tuple[int, ...]
    total: int
    mismatched: int
    max_abs_error: float
    max_rel_error: float
    worst_index: tuple[int, ...] | None
    worst_reference: Any
    worst_candidate: Any
    worst_allowed: float | None

    @classmethod
    def of(cls, output: OutputParity) -> OutputRecord:
        return cls(
            name=output.name,
            ok=output.ok,
            problem=output.problem,
            dtype=output.candidate_dtype or output.reference_dtype,
            shape=tuple(output.candidate_shape or output.reference_shape),
            total=output.total,
            mismatched=output.mismatched,
            max_abs_error=float(output.max_abs_error),
            max_rel_error=float(output.max_rel_error),
            worst_index=None if output.worst_index is None else tuple(int(i) for i in output.worst_index),
            worst_reference=_plain(output.worst_reference),
            worst_candidate=_plain(output.worst_candidate),
            worst_allowed=output.worst_allowed,
        )

    def worst_text(self) -> str:
        if self.worst_index is None:
            return "-"
        where = ",".join(str(i) for i in self.worst_index)
        return f"[{where}] {_short(self.worst_candidate)} vs {_short(self.worst_reference)}"

    def as_dict(self) -> dict[str, Any]:
        out = {f: _plain(getattr(self, f)) for f in self.__dataclass_fields__}
        out["shape"] = list(self.shape)
        out["worst_index"] = None if self.worst_index is None else list(self.worst_index)
        return out


@final
@dataclass(frozen=True)
class ParityRecord:
    """One variant against the reference: every output's comparison and the label agreement."""

    variant: str
    reference: str
    preset: str
    tolerance: str
    outputs: tuple[OutputRecord, ...]
    labels_total: int | None = None
    labels_agree: int | None = None
    label_disagreements: tuple[str, ...] = ()
    transport: str = ""

    @classmethod
    def of(
        cls, variant: str, parity: ParityReport | None, labels: LabelReport | None = None, *, transport: str = ""
    ) -> ParityRecord:
        disagreements = labels.disagreements if labels is not None else ()
        return cls(
            variant=variant,
            reference=parity.reference_name if parity else (labels.reference_name if labels else "reference"),
            preset=parity.tolerance.name if parity else "-",
            tolerance=str(parity.tolerance) if parity else "-",
            outputs=tuple(OutputRecord.of(o) for o in parity.outputs) if parity else (),
            labels_total=labels.total if labels is not None else None,
            labels_agree=labels.total - len(disagreements) if labels is not None else None,
            label_disagreements=tuple(f"{d.id}: {d.reference!r} -> {d.candidate!r}" for d in disagreements),
            transport=transport,
        )

    @property
    def ok(self) -> bool:
        labels_ok = self.labels_total is None or self.labels_agree == self.labels_total
        return labels_ok and all(o.ok for o in self.outputs)

    @property
    def label(self) -> str:
        return f"{self.variant} ({self.transport})" if self.transport else self.variant

    def labels_text(self) -> str:
        if self.labels_total is None:
            return "-"
        return f"{self.labels_agree}/{self.labels_total}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "transport": self.transport,
            "reference": self.reference,
            "preset": self.preset,
            "tolerance": self.tolerance,
            "ok": self.ok,
            "outputs": [o.as_dict() for o in self.outputs],
            "labels_total": self.labels_total,
            "labels_agree": self.labels_agree,
            "label_disagreements": list(self.label_disagreements),
        }
