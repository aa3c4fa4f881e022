"""Run a declaration's latency contract: each variant against the absolute budgets of this hardware, and
relative budgets between two variants measured side by side.

Absolute budgets go through the session's :class:`~pytest_triton.bench.session.TritonBench` (its hardware
key, its window policy, its report); a declaration's own budget file replaces the session's for its variants.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
from collections.abc import Callable
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import final

from pytest_triton.contracts.parity_run import ContractRun
from pytest_triton.contracts.samples import batch_of
from pytest_triton.contracts.samples import select_inputs
from pytest_triton.contracts.serving import ServedVariant
from pytest_triton.contracts.serving import batching
from pytest_triton.contracts.spec import Latency
from pytest_triton.contracts.spec import RelativeBudget

if TYPE_CHECKING:
    from pytest_triton.bench.results import VariantResult
    from pytest_triton.bench.sampling import WindowPolicy
    from pytest_triton.bench.session import TritonBench

__all__ = ["RelativeOutcome", "measure_pair", "measure_relative", "measure_variant", "request_call"]

_LATENCY_SEED = 0  # generated latency batches: any fixed values, the same every run


def request_call(run: ContractRun, served: ServedVariant, rows: int) -> Callable[[], object]:
    """One prepared request of ``rows`` rows to a served variant, as a call to time."""
    variant = served.variant
    transport = served.transport
    batches = batching(run.servers.folder(variant.repository), variant.model)
    names = [spec.name for spec in transport.input_specs(variant.model)]
    if run.declaration.inputs.samples is not None:
        samples = run.samples()
        tensors = batch_of(samples, rows) if batches else samples[0].tensors
    else:
        from pytest_triton.contracts.generated import numpy_request

        specs, _ = run.generated_inputs()
        tensors = numpy_request(specs, batch_size=rows if batches else None, seed=_LATENCY_SEED)
    tensors = select_inputs(variant.rename_inputs(tensors), names)
    outputs = run.requested_outputs(variant)
    prepare = getattr(transport, "prepare", None)
    send = getattr(transport, "send", None)
    if callable(prepare) and callable(send):  # encode once, send many times
        request = prepare(variant.model, tensors, outputs)
        return lambda: send(request)
    return lambda: transport.infer(variant.model, tensors, outputs)


def _policy(latency: Latency, bench: TritonBench) -> WindowPolicy:
    if latency.window_ms is None:
        return bench.policy
    return dataclasses.replace(bench.policy, mode="time", window_ms=latency.window_ms)


def measure_variant(run: ContractRun, name: str, bench: TritonBench) -> VariantResult:
    """Measure variant ``name`` and record it in the session's bench (raises VariantUnavailable where it
    cannot run); the caller asserts the verdict."""
    latency = run.declaration.latency
    assert latency is not None
    variant = run.declaration.variants[name]
    served = run.servers.serve(variant)
    budgets = bench.budgets
    if latency.budgets is not None:
        from pytest_triton.bench.budgets import load_budgets

        budgets = load_budgets(latency.budgets)
    own = type(bench)(hardware=bench.hardware, budgets=budgets, policy=_policy(latency, bench), clock=bench.clock)
    call = request_call(run, served, latency.batch_size)
    warm: dict[Hashable, Callable[[], object]] = {
        rows: request_call(run, served, rows) for rows in latency.warm_batch_sizes
    }
    throughput = None
    if latency.throughput_batch_size != latency.batch_size:
        throughput = warm.get(latency.throughput_batch_size) or request_call(run, served, latency.throughput_batch_size)
    started = dt.datetime.now(dt.timezone.utc)
    result = own.measure(
        variant.budget_name(bench.hardware),
        call,
        batch_size=latency.batch_size,
        throughput_call=throughput,
        throughput_batch_size=latency.throughput_batch_size,
        warm_shapes=warm,
        warmup=latency.warmup,
        http_url=served.http_url,
        model=variant.model,
        notes=(f"contract {run.declaration.path.name}: variant {name!r}", *served.notes),
    )
    server_notes = getattr(served.server, "latency_notes", None)  # what only this server knows (a SageMaker split)
    if callable(server_notes):
        extra = tuple(server_notes(started, dt.datetime.now(dt.timezone.utc)))
        result = dataclasses.replace(result, notes=(*result.notes, *extra))
    return bench.add(result)


@final
@dataclass(frozen=True)
class RelativeOutcome:
    """A relative budget's verdict: the two percentiles (medians over the rounds) and their ratio."""

    rule: RelativeBudget
    candidate_ms: tuple[float, ...]
    baseline_ms: tuple[float, ...]

    @property
    def ratio(self) -> float:
        return statistics.median(self.candidate_ms) / statistics.median(self.baseline_ms)

    @property
    def ok(self) -> bool:
        return self.ratio <= self.rule.max_ratio

    def message(self) -> str:
        rule = self.rule
        p = f"p{rule.percentile}"
        verdict = "holds" if self.ok else "FAILED"
        rounds = ", ".join(f"{c:.3f}/{b:.3f}" for c, b in zip(self.candidate_ms, self.baseline_ms))
        return (
            f"relative latency {verdict}: {rule.variant!r} {p} / {rule.baseline!r} {p} = {self.ratio:.3f} "
            f"(budget <= {rule.max_ratio:g}); medians {statistics.median(self.candidate_ms):.3f} ms / "
            f"{statistics.median(self.baseline_ms):.3f} ms over {len(self.candidate_ms)} interleaved rounds "
            f"(ms per round: {rounds})"
        )


def measure_pair(
    candidate: Callable[[], object],
    baseline: Callable[[], object],
    *,
    percentile: int,
    batch_size: int,
    policy: WindowPolicy,
    warmup: int,
    rounds: int = 3,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``percentile`` of each call per round, the two measured in alternation (baseline first each round).

    The one place to switch to the bench's interleaved measurement when it lands (bench9)."""
    from pytest_triton.bench.sampling import measure
    from pytest_triton.bench.sampling import warm_up_shapes

    if warmup:
        warm_up_shapes({"baseline": baseline, "candidate": candidate}, count=warmup)
    cand: list[float] = []
    base: list[float] = []
    for _ in range(rounds):
        for call, out in ((baseline, base), (candidate, cand)):
            stats = measure(call, batch_size=batch_size, warmup=0, policy=policy).stats()
            out.append(stats.percentile_ms(percentile))
    return tuple(cand), tuple(base)


def measure_relative(run: ContractRun, rule: RelativeBudget, bench: TritonBench) -> RelativeOutcome:
    """Hold ``rule.variant`` to at most ``rule.max_ratio`` times ``rule.baseline`` (VariantUnavailable where
    either cannot run)."""
    latency = run.declaration.latency
    assert latency is not None
    calls: dict[str, Any] = {}
    for name in (rule.variant, rule.baseline):
        served = run.servers.serve(run.declaration.variants[name])
        calls[name] = request_call(run, served, latency.batch_size)
    cand, base = measure_pair(
        calls[rule.variant],
        calls[rule.baseline],
        percentile=rule.percentile,
        batch_size=latency.batch_size,
        policy=_policy(latency, bench),
        warmup=latency.warmup,
    )
    return RelativeOutcome(rule, cand, base)
