"""Run a pair: parity of the head's variant against the base's, and their latency measured side by side.

Parity reuses the declaration's contract (:class:`~pytest_triton.contracts.parity_run.ContractRun`) with the
base's variant as the reference: the same inputs (Hypothesis shrinks a disagreement to a minimal input), the
same checks, at the head variant's precision. Latency reuses the interleaved measurement (base, head, base,
head, ... windows: drift of the machine cancels in the per-round ratios) and the relative-budget verdicts of
:mod:`pytest_triton.bench.relative`: p50 and p99 at ``[latency] batch_size``, samples/s at
``throughput_batch_size`` (the same run when the two are equal), each held to the declaration's
``[baseline]`` limits with the rule of :mod:`pytest_triton.bench.decision` (PASS, FAIL or INCONCLUSIVE; rounds
are added while an answer is open, within the session's verdict time budget).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import final

from pytest_triton.baseline.pairs import AsDeclared
from pytest_triton.baseline.pairs import Pair
from pytest_triton.contracts.latency_run import request_call
from pytest_triton.contracts.latency_run import target
from pytest_triton.contracts.parity_run import ContractRun
from pytest_triton.contracts.parity_run import ParityOutcome
from pytest_triton.contracts.serving import ContractServers
from pytest_triton.contracts.spec import Latency
from pytest_triton.parity.tensors import ParityReport

if TYPE_CHECKING:
    from pytest_triton.bench.relative import RelativeResult
    from pytest_triton.bench.results import UnstablePolicy
    from pytest_triton.bench.session import TritonBench

__all__ = ["PairLatency", "PairRun", "worst_element"]

METRICS = ("p50_ms", "p99_ms", "samples_per_s")


@final
@dataclass(frozen=True)
class PairLatency:
    """The three side-by-side verdicts of a pair (p50, p99, samples/s) and how the measurement ended."""

    pair: Pair
    results: tuple[RelativeResult, ...]  # in METRICS order
    settled: str
    inconclusive: UnstablePolicy = "warn"

    def by_metric(self, metric: str) -> RelativeResult:
        return self.results[METRICS.index(metric)]

    @property
    def judged(self) -> tuple[RelativeResult, ...]:
        """The results held to a limit (a figure without one is reported, not judged)."""
        return tuple(r for r in self.results if r.budget.allowed_ratio() is not None)

    @property
    def verdict(self) -> str:
        """``fail`` (a limit confidently broken), ``inconclusive`` (an answer still open), else ``pass``."""
        statuses = {r.status for r in self.judged}
        if "fail" in statuses or "not-measured" in statuses:
            return "fail"
        return "inconclusive" if "inconclusive" in statuses else "pass"

    @property
    def ok(self) -> bool:
        return self.verdict == "pass" or (self.verdict == "inconclusive" and self.inconclusive != "fail")

    def message(self) -> str:
        pair = self.pair
        lines = [f"latency of {pair.name!r} against {pair.base_name!r}: {self.verdict.upper()}"]
        for metric, result in zip(METRICS, self.results):
            lines.append(f"- {metric}: {result.status}: {result.reason}")
        lines.append(f"interleaved measurement: {self.settled}")
        return "\n".join(lines)


def worst_element(outcome: ParityOutcome) -> str:
    """The parity table's cell: the output and element farthest off, with both values and what was allowed."""
    outputs = [o for c in outcome.checks if isinstance(c.report, ParityReport) for o in c.report.outputs]
    failed = [c for c in outcome.checks if not c.ok]
    if not outputs:
        return failed[0].title() if failed else "no numeric output compared"
    worst = max(outputs, key=lambda o: (not o.ok, o.max_abs_error))
    if worst.ok and worst.max_abs_error == 0:
        text = f"{worst.name}: identical"
    elif worst.worst_index is None or worst.worst_reference is None:
        text = f"{worst.name}: identical" if worst.ok else f"{worst.name}: {worst.problem}"
    else:
        index = ", ".join(str(i) for i in worst.worst_index)
        allowed = f", allowed {worst.worst_allowed:.3g}" if worst.worst_allowed is not None else ""
        text = (
            f"{worst.name}[{index}]: base {worst.worst_reference:.6g}, PR {worst.worst_candidate:.6g} "
            f"(|diff| {abs(float(worst.worst_candidate) - float(worst.worst_reference)):.3g}{allowed})"
        )
    others = [c.title() for c in failed if not isinstance(c.report, ParityReport)]
    return "; ".join([text, *others])


@final
class PairRun:
    """One pair in one session: the head's variant and the base's, served on ``servers``."""

    def __init__(self, pair: Pair, servers: ContractServers) -> None:
        self.pair = pair
        self.servers = servers
        self.declaration = pair.pair_declaration()
        self._run: ContractRun | None = None

    def run(self) -> ContractRun:
        if self._run is None:
            assert self.pair.base is not None
            served = self.servers.serve(self.pair.base)
            reference = (AsDeclared(served.transport, self.pair.base), self.pair.base.model)
            self._run = ContractRun(self.declaration, self.servers, reference=reference)
        return self._run

    def parity(self) -> ParityOutcome:
        return self.run().parity(self.pair.name)

    def latency(self, bench: TritonBench) -> PairLatency:
        """Measure the pair side by side and judge it against ``[baseline]``; the verdicts go into the bench's
        relative-budget table (VariantUnavailable where either side cannot run here)."""
        from pytest_triton.bench.decision import LOOKS
        from pytest_triton.bench.interleave import measure_interleaved
        from pytest_triton.bench.relative import RelativeBudget
        from pytest_triton.bench.relative import evaluate_relative
        from pytest_triton.bench.relative import until_decided
        from pytest_triton.bench.sampling import warm_up_shapes

        run, pair = self.run(), self.pair
        latency = self.declaration.latency or Latency(variants=())
        limits = self.declaration.baseline
        base = target(run, pair.base_name, bench.hardware)
        head = target(run, pair.name, bench.hardware)
        sizes = dict.fromkeys((latency.batch_size, latency.throughput_batch_size, *latency.warm_batch_sizes))
        calls = {
            key: {rows: request_call(run, t, rows) for rows in sizes}
            for key, t in ((pair.base_name, base), (pair.name, head))
        }
        if latency.warmup:
            shapes: dict[Hashable, Callable[[], object]] = {
                (k, r): c for k, own in calls.items() for r, c in own.items()
            }
            warm_up_shapes(shapes, count=latency.warmup)
        policy = bench.policy
        if latency.window_ms is not None:
            policy = dataclasses.replace(policy, mode="time", window_ms=latency.window_ms)
        policy = dataclasses.replace(policy, max_seconds=bench.verdict_seconds)
        clock = bench.clock or time.perf_counter_ns
        source = f"--triton-baseline {pair.label}"
        limit = {"p50_ms": limits.max_p50_ratio, "p99_ms": limits.max_p99_ratio}
        budgets = {
            metric: RelativeBudget(
                pair.name,
                pair.base_name,
                metric,
                hardware=bench.hardware,
                source=source,
                name=f"{pair.latency_item} {metric.removesuffix('_ms')}",
                max_ratio=limit.get(metric),
                min_ratio=limits.min_samples_per_s_ratio if metric == "samples_per_s" else None,
            )
            for metric in METRICS
        }
        # the latency run also decides samples/s where both are measured at one batch size
        one_run = latency.throughput_batch_size == latency.batch_size
        on_latency = [b for m, b in budgets.items() if m != "samples_per_s" or one_run]
        started = time.monotonic()
        runs = {
            "latency": measure_interleaved(
                {k: own[latency.batch_size] for k, own in calls.items()},
                batch_size=latency.batch_size,
                policy=policy,
                clock=clock,
                looks=LOOKS,
                decided=until_decided([b for b in on_latency if b.allowed_ratio() is not None], LOOKS),
            )
        }
        if not one_run:
            left = max(bench.verdict_seconds - (time.monotonic() - started), 1.0)
            rate = budgets["samples_per_s"]
            runs["rate"] = measure_interleaved(
                {k: own[latency.throughput_batch_size] for k, own in calls.items()},
                batch_size=latency.throughput_batch_size,
                policy=dataclasses.replace(policy, max_seconds=left),
                clock=clock,
                looks=LOOKS,
                decided=until_decided([rate] if rate.allowed_ratio() is not None else [], LOOKS),
            )
        results = []
        for metric, budget in budgets.items():
            interleaved = runs["rate"] if metric == "samples_per_s" and "rate" in runs else runs["latency"]
            results.append(
                evaluate_relative(
                    budget,
                    interleaved.measurements[pair.name].stats(),
                    interleaved.measurements[pair.base_name].stats(),
                    stability=interleaved.pair_stability(pair.name, pair.base_name)[2],
                    paired=interleaved.paired(pair.name, pair.base_name, metric),
                )
            )
        settled = "; ".join(f"b={r.measurements[pair.name].batch_size}: {r.reason}" for r in runs.values())
        settled += f" ({time.monotonic() - started:.1f} s)"
        bench.relative.extend(results)
        return PairLatency(pair, tuple(results), settled, bench.inconclusive)
