"""The verdict of one measurement against its absolute budget (:class:`~pytest_triton.bench.budgets.Budget`):
every limit checked, then ``pass``, ``fail``, ``unstable``, ``report-only`` or ``not-comparable``.

The budget file is read and validated in :mod:`pytest_triton.bench.budgets`; relative budgets (one variant
against another, side by side) are judged in :mod:`pytest_triton.bench.relative`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import Literal
from typing import final

from pytest_triton.bench.budgets import Budget
from pytest_triton.bench.budgets import HardwarePolicy
from pytest_triton.bench.engine import EnginePath
from pytest_triton.bench.stats import LatencyStats

__all__ = ["Check", "Verdict", "VerdictStatus", "evaluate"]

VerdictStatus = Literal["pass", "fail", "unstable", "report-only", "skipped", "not-comparable"]


@final
@dataclass(frozen=True)
class Check:
    """One limit against its measurement; ``ok`` is None when that figure was not measured."""

    metric: str
    limit: float
    allowed: float
    measured: float | None
    ok: bool | None

    def describe(self) -> str:
        rate = self.metric.endswith("_per_s")  # samples_per_s, a stream's responses_per_s: minimums
        unit = "/s" if rate else " ms"
        if self.measured is None:
            return f"{self.metric} not measured (budget {self.limit:g}{unit})"
        sign = ("≥" if self.ok else "<") if rate else ("≤" if self.ok else ">")
        return f"{self.metric} {self.measured:.2f}{unit} {sign} {self.allowed:.2f}{unit}"

    def as_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@final
@dataclass(frozen=True)
class Verdict:
    """``pass``, ``fail``, ``unstable`` (limits met but the measurement never settled), ``report-only`` or
    ``skipped``; ``reason`` says why in a line."""

    status: VerdictStatus
    reason: str
    checks: tuple[Check, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status in ("fail", "unstable")

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "checks": [c.as_dict() for c in self.checks]}


def evaluate(
    budget: Budget | None,
    latency: LatencyStats | None,
    throughput: LatencyStats | None = None,
    *,
    stable: bool = True,
    missing_reason: str = "no budget: measured and reported only",
    policy: HardwarePolicy | None = None,
    path: EnginePath = "unknown",
) -> Verdict:
    """Hold ``latency`` (percentiles) and ``throughput`` (samples/s) to ``budget``.

    Percentiles are checked on the measurement taken at ``budget.batch_size``, samples/s on the one taken at
    ``budget.throughput_batch_size`` (either argument may be that one); a limit with no such measurement is
    listed as not measured, never as passed. A budget written on another engine ``path`` than the row's is
    ``not-comparable``, with no checks. Under a ``policy`` that does not enforce absolute budgets, the
    checks are made and shown but the verdict is ``report-only`` with the policy's reason.
    """
    if budget is None:
        return Verdict("report-only", missing_reason)
    if budget.path is not None and budget.path != path:
        return Verdict("not-comparable", _not_comparable(budget, path))
    runs = [s for s in (latency, throughput) if s is not None]
    at_latency = next((s for s in runs if s.batch_size == budget.batch_size), None)
    at_rate = next((s for s in runs if s.batch_size == budget.throughput_batch_size), None)
    checks: list[Check] = []
    for p, limit in budget.percentile_limits().items():
        allowed = limit * (1 + budget.tolerance)
        measured = at_latency.percentile_ms(p) if at_latency else None
        checks.append(Check(f"p{p}_ms", limit, allowed, measured, None if measured is None else measured <= allowed))
    if budget.samples_per_s is not None:
        allowed = budget.samples_per_s * (1 - budget.tolerance)
        rate = at_rate.samples_per_s if at_rate else None
        checks.append(
            Check("samples_per_s", budget.samples_per_s, allowed, rate, None if rate is None else rate >= allowed)
        )
    failed = [c for c in checks if c.ok is False]
    unmeasured = [c for c in checks if c.ok is None]
    text = "; ".join(c.describe() for c in failed or checks)
    if policy is not None and not policy.enforce_absolute:
        within = "over budget" if failed else "within budget" if not unmeasured else "partly measured"
        unsettled = "" if stable else ", measurement unstable"
        return Verdict(
            "report-only",
            f"{within}{unsettled}, not asserted here ({budget.hardware}: {policy.reason}); {text}",
            tuple(checks),
        )
    if failed:
        return Verdict("fail", text, tuple(checks))
    if not stable:
        return Verdict("unstable", f"within budget but the measurement did not stabilize; {text}", tuple(checks))
    if unmeasured and len(unmeasured) == len(checks):
        return Verdict("report-only", f"nothing measured at the budget's batch sizes; {text}", tuple(checks))
    return Verdict("pass", text, tuple(checks))


def _not_comparable(budget: Budget, path: EnginePath) -> str:
    where = f"{budget.hardware}.{budget.variant}"
    if path == "unknown":
        return (
            f"budget {where} was written on the {budget.path} path and this server does not say how it serves the "
            "model: not judged"
        )
    extra = " (the adapter's hand-over is in the budget, not in this run)" if budget.path == "adapter" else ""
    return (
        f"budget {where} was written on the {budget.path} path and this row ran on the {path} path{extra}: not "
        f"judged; add a budget measured on the {path} path (path = {path!r})"
    )
