"""Relative budgets: one variant's figure as a ratio to another variant measured side by side with it.

A relative budget compares two variants measured in the same run, interleaved window by window (see
:func:`pytest_triton.bench.sampling.measure_interleaved`), so a slow-down of the whole machine moves both and
cancels in the ratio. Declared in the budget file under the hardware, beside the absolute budgets::

    [[cpu-2core-x86_64.relative]]
    variant = "triton-ensemble-cpu"     # the variant held to the budget
    baseline = "triton-onnx-cpu"        # the variant it is compared with
    metric = "p50_ms"                   # p50_ms, p90_ms, p95_ms, p99_ms or samples_per_s
    max_ratio = 1.25                    # percentiles: variant / baseline at most this ...
    max_added_ms = 3.0                  # ... or variant - baseline at most this (whichever allows more)
    # samples_per_s: min_ratio = 0.8    # variant / baseline at least this

The tolerance (the hardware's unless the entry sets its own) widens a limit as for absolute budgets:
``max_ratio * (1 + tolerance)``, ``max_added_ms * (1 + tolerance)``, ``min_ratio * (1 - tolerance)``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal
from typing import final

from pytest_triton.bench.decision import LOOKS
from pytest_triton.bench.decision import Decision
from pytest_triton.bench.decision import decide
from pytest_triton.bench.stats import PERCENTILES
from pytest_triton.bench.stats import LatencyStats

if TYPE_CHECKING:
    from pytest_triton.bench.interleave import Interleaved

__all__ = ["RELATIVE_METRICS", "RelativeBudget", "RelativeResult", "evaluate_relative", "judge_rounds", "until_decided"]

RELATIVE_METRICS: tuple[str, ...] = (*(f"p{p}_ms" for p in PERCENTILES), "samples_per_s")
RelativeStatus = Literal["pass", "fail", "inconclusive", "not-measured"]


@final
@dataclass(frozen=True)
class RelativeBudget:
    """``variant``'s ``metric`` against ``baseline``'s, on one hardware."""

    variant: str
    baseline: str
    metric: str
    hardware: str = ""  # "" in a contracts file's [[latency.relative]]: whatever hardware the run is on
    source: str = ""
    tolerance: float = 0.0
    max_ratio: float | None = None
    max_added_ms: float | None = None
    min_ratio: float | None = None
    name: str = ""
    notes: str = ""

    @property
    def label(self) -> str:
        return self.name or f"{self.variant} vs {self.baseline} {self.metric}"

    @property
    def is_rate(self) -> bool:
        return self.metric == "samples_per_s"

    def allowed_ratio(self) -> float | None:
        if self.is_rate:
            return None if self.min_ratio is None else self.min_ratio * (1 - self.tolerance)
        return None if self.max_ratio is None else self.max_ratio * (1 + self.tolerance)

    def allowed_added_ms(self) -> float | None:
        return None if self.max_added_ms is None else self.max_added_ms * (1 + self.tolerance)

    def describe(self) -> str:
        """``variant/baseline p50 ≤1.25× or ≤+3 ms ±25%``."""
        limits = []
        if self.is_rate and self.min_ratio is not None:
            limits.append(f"≥{self.min_ratio:g}×")
        if not self.is_rate and self.max_ratio is not None:
            limits.append(f"≤{self.max_ratio:g}×")
        if not self.is_rate and self.max_added_ms is not None:
            limits.append(f"≤+{self.max_added_ms:g} ms")
        return f"{self.metric} {' or '.join(limits)} of {self.baseline} ±{self.tolerance:.0%}"

    def as_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@final
@dataclass(frozen=True)
class RelativeResult:
    """A relative budget against two side-by-side measurements: both figures, the paired ratio, its interval and
    the outcome (:mod:`pytest_triton.bench.decision`)."""

    budget: RelativeBudget
    status: RelativeStatus
    reason: str
    variant_value: float | None = None
    baseline_value: float | None = None
    stability: str = ""
    paired_ratio: float | None = None
    paired_added: float | None = None
    rounds: int = 0
    interval: tuple[float, float] | None = None  # of the median per-round ratio
    confidence: float = 0.0  # of ``interval``

    @property
    def ratio(self) -> float | None:
        """The median of the per-round ratios when paired, else the ratio of the two figures."""
        if self.paired_ratio is not None:
            return self.paired_ratio
        if self.variant_value is None or not self.baseline_value:
            return None
        return self.variant_value / self.baseline_value

    @property
    def added(self) -> float | None:
        """The median of the per-round differences when paired, else the difference of the two figures."""
        if self.paired_added is not None:
            return self.paired_added
        if self.variant_value is None or self.baseline_value is None:
            return None
        return self.variant_value - self.baseline_value

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def interval_text(self) -> str:
        """``[1.012, 1.071]×``, or ``-`` without one."""
        return "-" if self.interval is None else f"[{self.interval[0]:.3f}, {self.interval[1]:.3f}]×"

    def figures(self) -> str:
        """``16.50 vs 15.90 ms; paired per round: 1.038× [1.012, 1.071]× (+0.60 ms), median of 18``."""
        if self.ratio is None or self.added is None or self.baseline_value is None or self.variant_value is None:
            return "not measured"
        unit = "/s" if self.budget.is_rate else " ms"
        added = f"{self.added:+.2f}{unit}"
        both = f"{self.variant_value:.2f} vs {self.baseline_value:.2f}{unit}"
        if self.paired_ratio is not None:
            interval = f" {self.interval_text()} ({self.confidence:.1%})" if self.interval else ""
            return f"{both}; paired per round: {self.ratio:.3f}×{interval} ({added}), median of {self.rounds}"
        return f"{both}: {self.ratio:.3f}× ({added})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget.as_dict(),
            "status": self.status,
            "reason": self.reason,
            "variant_value": self.variant_value,
            "baseline_value": self.baseline_value,
            "ratio": self.ratio,
            "ratio_interval": list(self.interval) if self.interval else None,
            "confidence": self.confidence,
            "added": self.added,
            "paired": self.paired_ratio is not None,
            "rounds": self.rounds,
            "stability": self.stability,
        }


def _value(stats: LatencyStats, metric: str) -> float:
    if metric == "samples_per_s":
        return stats.samples_per_s
    return stats.percentile_ms(int(metric[1:-3]))


def judge_rounds(
    budget: RelativeBudget, paired: tuple[Sequence[float], Sequence[float]], *, looks: int = len(LOOKS)
) -> tuple[Decision, str]:
    """The outcome of ``budget`` on per-round ratios and differences, and the limits it was held to in words.

    A percentile within its ratio *or* its added milliseconds passes when either interval is wholly within its
    limit, and fails only when both lie wholly beyond theirs."""
    ratios, differences = paired
    allowed_ratio, allowed_ms = budget.allowed_ratio(), budget.allowed_added_ms()
    if budget.is_rate:
        limit = allowed_ratio if allowed_ratio is not None else -math.inf
        text = f"≥ {allowed_ratio:.3f}×" if allowed_ratio is not None else "no limit"
        return decide(ratios, limit, higher_is_better=True, looks=looks), text
    judged = []
    if allowed_ratio is not None:
        judged.append((decide(ratios, allowed_ratio, looks=looks), f"≤ {allowed_ratio:.3f}×"))
    if allowed_ms is not None:
        judged.append((decide(differences, allowed_ms, looks=looks), f"≤ +{allowed_ms:.2f} ms"))
    if not judged:
        return decide(ratios, math.inf, looks=looks), "no limit"
    text = " or ".join(limit for _, limit in judged)
    outcomes = {d.outcome for d, _ in judged}
    shown = judged[0][0]  # the ratio's interval is the one reported where both are judged
    if "pass" in outcomes:
        return dataclasses.replace(shown, outcome="pass"), text
    if outcomes == {"fail"}:
        return shown, text
    return dataclasses.replace(shown, outcome="inconclusive"), text


def evaluate_relative(
    budget: RelativeBudget,
    variant: LatencyStats | None,
    baseline: LatencyStats | None,
    *,
    paired: tuple[Sequence[float], Sequence[float]] | None = None,
    stability: str = "",
    looks: int = len(LOOKS),
) -> RelativeResult:
    """Hold ``variant``'s figure to ``budget`` against ``baseline``'s (both from one interleaved measurement).

    ``paired`` holds the per-round ratios and differences (:meth:`Interleaved.paired`); the outcome is
    :func:`judge_rounds`' on them (``looks``: how many looks share the error rate), and without them the result
    is inconclusive: a ratio of two pooled figures says nothing of how sure it is. The pooled figures are
    reported beside the paired ratio.
    """
    if variant is None or baseline is None:
        missing = budget.variant if variant is None else budget.baseline
        return RelativeResult(budget, "not-measured", f"{missing!r} was not measured side by side in this run")
    mine, theirs = _value(variant, budget.metric), _value(baseline, budget.metric)
    if not theirs and not (paired and paired[0]):
        return RelativeResult(budget, "fail", f"{budget.baseline!r} {budget.metric} is 0: no ratio", mine, theirs)
    if not paired or not paired[0]:
        reason = f"{budget.metric} {mine:.3f} vs {theirs:.3f}: no paired rounds to judge on: inconclusive"
        return RelativeResult(budget, "inconclusive", reason, mine, theirs, stability)
    decision, limits = judge_rounds(budget, paired, looks=looks)
    result = RelativeResult(
        budget,
        decision.outcome,
        "",
        mine,
        theirs,
        stability,
        paired_ratio=statistics.median(paired[0]),
        paired_added=statistics.median(paired[1]),
        rounds=len(paired[0]),
        interval=decision.interval,
        confidence=decision.confidence,
    )
    said = {
        "pass": "within",
        "fail": "beyond",
        "inconclusive": "neither within nor beyond",
    }[decision.outcome]
    reason = f"{budget.metric} {result.figures()}: {said} {limits}"
    if decision.interval is None:
        reason += f"; {decision.describe()}"
    return dataclasses.replace(result, reason=reason)


def until_decided(budgets: Sequence[RelativeBudget], looks: Sequence[int] = LOOKS) -> Callable[[Interleaved], bool]:
    """The ``decided`` of :func:`~pytest_triton.bench.interleave.measure_interleaved` for ``budgets``: true once
    none of them is open any more (a budget whose variants are not in the run is not waited for)."""

    def decided(run: Interleaved) -> bool:
        for budget in budgets:
            if budget.variant not in run.measurements or budget.baseline not in run.measurements:
                continue
            paired = run.paired(budget.variant, budget.baseline, budget.metric)
            if judge_rounds(budget, paired, looks=len(looks))[0].outcome == "inconclusive":
                return False
        return True

    return decided
