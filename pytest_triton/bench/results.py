"""One variant's measured result (or the reason it was skipped), and the budget assertion."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal
from typing import final

from pytest_triton.bench.absolute import Verdict
from pytest_triton.bench.absolute import evaluate
from pytest_triton.bench.budgets import Budget
from pytest_triton.bench.budgets import BudgetFile
from pytest_triton.bench.engine import Calibration
from pytest_triton.bench.engine import EnginePath
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.server_stats import ServerSplit
from pytest_triton.bench.stats import LatencyStats
from pytest_triton.errors import TritonUnstableWarning

__all__ = [
    "UNSTABLE_CHOICES",
    "SideBySide",
    "UnstablePolicy",
    "VariantResult",
    "assert_contracts",
    "assert_within_budget",
    "build_result",
]

UnstablePolicy = Literal["fail", "warn"]
UNSTABLE_CHOICES: tuple[UnstablePolicy, ...] = ("warn", "fail")
"""What an unstable measurement within budget does: ``warn`` (reported, passes; the default) or ``fail``.
Over budget it fails either way."""


@final
@dataclass(frozen=True)
class VariantResult:
    """What one variant measured on one hardware, the budget it was held to and the verdict.

    ``latency`` is the percentile run (batch ``budget.batch_size``, usually 1), ``throughput`` the optional
    run at the throughput batch size (8). ``samples_ms`` are the latency run's kept samples (for histograms),
    ``warmup_s`` the excluded warm-up durations per shape. A skipped variant has ``verdict.status == "skipped"``
    and no measurements. ``path`` is the engine path it ran on (``engine_reason`` says how that is known);
    on the adapter path ``calibration`` is the adapter's own cost measured interleaved with it (or
    ``calibration_missing`` says why there is none).
    """

    variant: str
    hardware: str
    verdict: Verdict
    latency: LatencyStats | None = None
    throughput: LatencyStats | None = None
    server: ServerSplit | None = None
    budget: Budget | None = None
    model: str | None = None
    stable: bool = True
    stability: str = ""
    samples_ms: tuple[float, ...] = ()
    warmup_s: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    load_average: tuple[float, ...] = ()
    interleaved_with: tuple[str, ...] = ()
    path: EnginePath = "unknown"
    engine_reason: str = ""
    calibration: Calibration | None = None
    calibration_missing: str = ""

    @classmethod
    def skipped(cls, variant: str, hardware: str, reason: str, *, budget: Budget | None = None) -> VariantResult:
        """A variant that could not run here (e.g. TensorRT without its libraries): shown as SKIPPED, never passed."""
        return cls(variant, hardware, Verdict("skipped", reason), budget=budget, stable=False)

    @property
    def is_skipped(self) -> bool:
        return self.verdict.status == "skipped"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (samples included)."""
        return {
            "variant": self.variant,
            "hardware": self.hardware,
            "model": self.model,
            "verdict": self.verdict.as_dict(),
            "latency": self.latency.as_dict() if self.latency else None,
            "throughput": self.throughput.as_dict() if self.throughput else None,
            "server": self.server.as_dict() if self.server else None,
            "budget": self.budget.as_dict() if self.budget else None,
            "stable": self.stable,
            "stability": self.stability,
            "warmup_s": {k: list(v) for k, v in self.warmup_s.items()},
            "notes": list(self.notes),
            "load_average": list(self.load_average),
            "interleaved_with": list(self.interleaved_with),
            "path": self.path,
            "engine_reason": self.engine_reason,
            "calibration": self.calibration.as_dict() if self.calibration else None,
            "calibration_missing": self.calibration_missing,
            "samples_ms": list(self.samples_ms),
        }


def build_result(
    variant: str,
    hardware: str,
    latency: Measurement | None,
    throughput: Measurement | None = None,
    *,
    budgets: BudgetFile | None = None,
    server: ServerSplit | None = None,
    model: str | None = None,
    notes: Sequence[str] = (),
    load_average: Sequence[float] = (),
    interleaved_with: Sequence[str] = (),
    path: EnginePath = "unknown",
    engine_reason: str = "",
    calibration: Calibration | None = None,
    calibration_missing: str = "",
) -> VariantResult:
    """Summarize the measurements, look the budget up and give the verdict (under the hardware's policy)."""
    budget = budgets.lookup(hardware, variant) if budgets else None
    runs = [m for m in (latency, throughput) if m is not None]
    stable = all(m.stable for m in runs)
    stability = "; ".join(f"b={m.batch_size}: {m.reason}" for m in runs)
    if budgets is None:
        missing = "no budget file: measured and reported only"
    else:
        missing = budgets.missing_reason(hardware, variant)
    verdict = evaluate(
        budget,
        latency.stats() if latency else None,
        throughput.stats() if throughput else None,
        stable=stable,
        missing_reason=missing,
        policy=budgets.policy(hardware) if budgets else None,
        path=path,
    )
    warmup: dict[str, tuple[float, ...]] = {}
    for m in runs:
        for key, values in m.warmup.as_dict().items():
            warmup.setdefault(key, tuple(values))
    return VariantResult(
        variant=variant,
        hardware=hardware,
        verdict=verdict,
        latency=latency.stats() if latency else None,
        throughput=throughput.stats() if throughput else None,
        server=server,
        budget=budget,
        model=model,
        stable=stable,
        stability=stability,
        samples_ms=tuple(v / 1e6 for v in latency.samples_ns) if latency else (),
        warmup_s=warmup,
        notes=tuple(notes),
        load_average=tuple(load_average),
        interleaved_with=tuple(interleaved_with),
        path=path,
        engine_reason=engine_reason,
        calibration=calibration,
        calibration_missing=calibration_missing,
    )


def assert_within_budget(result: VariantResult, *, allow_unstable: bool = False) -> None:
    """Fail when the verdict is ``fail`` (or ``unstable``, unless ``allow_unstable``); other verdicts pass."""
    __tracebackhide__ = True
    assert_contracts([result], unstable="warn" if allow_unstable else "fail")


@final
@dataclass(frozen=True)
class SideBySide:
    """Variants measured interleaved in one run, and the relative budgets between them."""

    variants: tuple[VariantResult, ...]
    relative: tuple[RelativeResult, ...]
    settled: str = ""

    def __getitem__(self, variant: str) -> VariantResult:
        for result in self.variants:
            if result.variant == variant:
                return result
        raise KeyError(f"{variant!r} was not measured here (measured: {', '.join(r.variant for r in self.variants)})")


def _failures(result: VariantResult, unstable: UnstablePolicy) -> list[str]:
    status = result.verdict.status
    if not (status == "fail" or (status == "unstable" and unstable == "fail")):
        return []
    lines = [f"latency budget {status}: variant {result.variant!r} on {result.hardware!r}"]
    lines += [f"  {c.describe()}" for c in result.verdict.checks if c.ok is not True]
    if status == "unstable" or not result.stable:
        lines.append(f"  stability: {result.stability}")
        lines.append("  hint: longer windows (window_requests / window_ms) or max_windows usually settle it")
        if status == "unstable":
            lines.append("  (triton_unstable=fail; with warn, an unstable measurement within budget passes)")
    if result.budget is not None:
        lines.append(f"  budget: {result.budget.describe()} (source: {result.budget.source})")
    if result.latency is not None:
        s = result.latency
        lines.append(
            f"  measured at b={s.batch_size}: p50 {s.p50_ms:.2f} p90 {s.p90_ms:.2f} p95 {s.p95_ms:.2f} "
            f"p99 {s.p99_ms:.2f} ms over {s.count} requests"
        )
    return lines


def _relative_failures(result: RelativeResult, inconclusive: UnstablePolicy) -> list[str]:
    if not (result.status == "fail" or (result.status == "inconclusive" and inconclusive == "fail")):
        return []
    b = result.budget
    lines = [f"relative budget {result.status}: {b.label} on {b.hardware!r}: {result.reason}"]
    lines.append(f"  budget: {b.variant} {b.describe()} (source: {b.source})")
    if result.stability:
        lines.append(f"  stability: {result.stability}")
    return lines


def assert_contracts(
    results: Sequence[VariantResult],
    relative: Sequence[RelativeResult] = (),
    *,
    unstable: UnstablePolicy = "warn",
    inconclusive: UnstablePolicy = "warn",
) -> None:
    """Fail once, listing every variant over its budget and every relative budget not met.

    An unstable measurement within budget fails only with ``unstable="fail"``; over budget it fails always.
    An INCONCLUSIVE relative budget fails only with ``inconclusive="fail"``.
    Report-only, skipped and not-measured results pass (they are shown in the report as what they are); an
    unstable one that passes warns with :class:`~pytest_triton.errors.TritonUnstableWarning`.
    """
    __tracebackhide__ = True
    lines = [line for r in results for line in _failures(r, unstable)]
    lines += [line for r in relative for line in _relative_failures(r, inconclusive)]
    if lines:
        raise AssertionError("\n".join(lines))
    unsettled = [f"{r.variant}: {r.verdict.reason}" for r in results if r.verdict.status == "unstable"]
    if unsettled:  # passed, unstable: the plugin's own warning class, filterable and -W error able
        warnings.warn(TritonUnstableWarning("passed, unstable: " + "; ".join(unsettled)), stacklevel=3)
