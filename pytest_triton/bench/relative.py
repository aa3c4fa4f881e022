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

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Literal
from typing import final

from pytest_triton.bench.stats import PERCENTILES
from pytest_triton.bench.stats import LatencyStats

__all__ = ["RELATIVE_METRICS", "RelativeBudget", "RelativeResult", "evaluate_relative"]

RELATIVE_METRICS: tuple[str, ...] = (*(f"p{p}_ms" for p in PERCENTILES), "samples_per_s")
RelativeStatus = Literal["pass", "fail", "unstable", "not-measured"]


@final
@dataclass(frozen=True)
class RelativeBudget:
    """``variant``'s ``metric`` against ``baseline``'s, on one hardware."""

    hardware: str
    variant: str
    baseline: str
    metric: str
    source: str
    tolerance: float
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

    @property
    def batch_size_key(self) -> Literal["batch_size", "throughput_batch_size"]:
        """Which of the hardware's batch sizes this metric is measured at."""
        return "throughput_batch_size" if self.is_rate else "batch_size"

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
    """A relative budget against two side-by-side measurements: both numbers, the ratio and the verdict."""

    budget: RelativeBudget
    status: RelativeStatus
    reason: str
    variant_value: float | None = None
    baseline_value: float | None = None
    stable: bool = True
    stability: str = ""
    paired_ratio: float | None = None
    paired_added: float | None = None
    rounds: int = 0

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
        return self.status in ("fail", "unstable")

    def figures(self) -> str:
        """``16.50 vs 15.90 ms: 1.038× (+0.60 ms)``."""
        if self.ratio is None or self.added is None or self.baseline_value is None or self.variant_value is None:
            return "not measured"
        unit = "/s" if self.budget.is_rate else " ms"
        added = f"{self.added:+.2f}{unit}"
        both = f"{self.variant_value:.2f} vs {self.baseline_value:.2f}{unit}"
        if self.paired_ratio is not None:
            return f"{both}; paired per round: {self.ratio:.3f}× ({added}), median of {self.rounds}"
        return f"{both}: {self.ratio:.3f}× ({added})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget.as_dict(),
            "status": self.status,
            "reason": self.reason,
            "variant_value": self.variant_value,
            "baseline_value": self.baseline_value,
            "ratio": self.ratio,
            "added": self.added,
            "paired": self.paired_ratio is not None,
            "rounds": self.rounds,
            "stable": self.stable,
            "stability": self.stability,
        }


def _value(stats: LatencyStats, metric: str) -> float:
    if metric == "samples_per_s":
        return stats.samples_per_s
    return stats.percentile_ms(int(metric[1:-3]))


def evaluate_relative(
    budget: RelativeBudget,
    variant: LatencyStats | None,
    baseline: LatencyStats | None,
    *,
    stable: bool = True,
    stability: str = "",
    paired: tuple[Sequence[float], Sequence[float]] | None = None,
) -> RelativeResult:
    """Hold ``variant``'s figure to ``budget`` against ``baseline``'s (both from one interleaved measurement).

    ``paired`` holds the per-round ratios and differences (:meth:`Interleaved.paired`): when given, their
    medians are judged (drift cancels within a round); the two pooled figures are still reported. ``stable``
    says whether the per-round ratio settled (perf_analyzer's 10% rule on the ratio, not on the absolute
    numbers); a ratio within budget that never settled is ``unstable``; one over budget fails, except where the
    rounds did not settle and their most favourable quartile is within budget: then the rounds disagree about
    the verdict, and the result is ``unstable`` too (a fail needs three rounds in four over the limit).
    """
    if variant is None or baseline is None:
        missing = budget.variant if variant is None else budget.baseline
        return RelativeResult(budget, "not-measured", f"{missing!r} was not measured side by side in this run")
    mine, theirs = _value(variant, budget.metric), _value(baseline, budget.metric)
    pairs: dict[str, Any] = {}
    if paired is not None and paired[0]:
        pairs = {
            "paired_ratio": statistics.median(paired[0]),
            "paired_added": statistics.median(paired[1]),
            "rounds": len(paired[0]),
        }
    result = RelativeResult(budget, "pass", "", mine, theirs, stable, stability, **pairs)
    ratio, added = result.ratio, result.added
    if ratio is None or added is None:
        return RelativeResult(budget, "fail", f"{budget.baseline!r} {budget.metric} is 0: no ratio", mine, theirs)
    ok = _within(budget, ratio, added)
    if budget.is_rate:
        allowed_ratio = budget.allowed_ratio()
        limit = f"≥ {allowed_ratio:.3f}×" if allowed_ratio is not None else "no limit"
        text = f"{budget.metric} {result.figures()} {'' if ok else 'not '}{limit}"
    else:
        limits = []
        if budget.allowed_ratio() is not None:
            limits.append(f"{budget.allowed_ratio():.3f}×")
        if budget.allowed_added_ms() is not None:
            limits.append(f"+{budget.allowed_added_ms():.2f} ms")
        text = f"{budget.metric} {result.figures()} {'within' if ok else 'over'} {' or '.join(limits) or 'no limit'}"
    quartile = _favourable_quartile(budget, paired) if not ok and not stable else None
    if quartile is not None and _within(budget, *quartile):
        status: RelativeStatus = "unstable"
        text = (
            f"over budget by the median of rounds, within it for at least a quarter of them ({quartile[0]:.3f}×), "
            f"and the ratio did not settle: inconclusive; {text}"
        )
    elif not ok:
        status = "fail"
    elif not stable:
        status = "unstable"
        text = f"within budget but the ratio did not settle; {text}"
    else:
        status = "pass"
    return RelativeResult(budget, status, text, mine, theirs, stable, stability, **pairs)


def _within(budget: RelativeBudget, ratio: float, added: float) -> bool:
    """Whether a ratio (and difference) keeps to the budget: a rate at least its ratio; a percentile within its
    ratio or its added milliseconds, whichever allows more."""
    allowed_ratio, allowed_ms = budget.allowed_ratio(), budget.allowed_added_ms()
    if budget.is_rate:
        return allowed_ratio is None or ratio >= allowed_ratio
    passes = [ratio <= allowed_ratio] if allowed_ratio is not None else []
    passes += [added <= allowed_ms] if allowed_ms is not None else []
    return any(passes) if passes else True


def _favourable_quartile(
    budget: RelativeBudget, paired: tuple[Sequence[float], Sequence[float]] | None
) -> tuple[float, float] | None:
    """The per-round ratio and difference a quarter of the rounds are better than (the lower quartile for a
    percentile, the upper one for a rate); None without at least four paired rounds."""
    if paired is None or len(paired[0]) < 4:
        return None
    ratios, diffs = (statistics.quantiles(values, n=4, method="inclusive") for values in paired)
    return (ratios[2], diffs[2]) if budget.is_rate else (ratios[0], diffs[0])
