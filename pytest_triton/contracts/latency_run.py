"""Run a declaration's latency contract: each variant against the absolute budgets of this hardware, and
relative budgets between two variants measured side by side.

Absolute budgets go through the session's :class:`~pytest_triton.bench.session.TritonBench` (its hardware
key, its window policy, its report); a declaration's own budget file replaces the session's for its variants.
A relative budget measures its two variants with the bench's interleaved measurement
(:func:`~pytest_triton.bench.interleave.measure_interleaved`: A B A B windows, judged on the median of the
per-round ratios) and lands in the latency report's relative-budget table, together with the budget file's
relative budgets of the same pair on this hardware. An ONNX reference can be measured too, in this process.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import final

from pytest_triton.bench.decision import VERDICT_SECONDS
from pytest_triton.client.transports import Transport
from pytest_triton.contracts.parity_run import ContractRun
from pytest_triton.contracts.samples import batch_of
from pytest_triton.contracts.samples import select_inputs
from pytest_triton.contracts.serving import batching
from pytest_triton.contracts.serving import inference_protocol
from pytest_triton.contracts.spec import Latency

if TYPE_CHECKING:
    from pytest_triton.bench.budgets import BudgetFile
    from pytest_triton.bench.outcome import OutcomeWord
    from pytest_triton.bench.relative import RelativeBudget
    from pytest_triton.bench.relative import RelativeResult
    from pytest_triton.bench.results import UnstablePolicy
    from pytest_triton.bench.results import VariantResult
    from pytest_triton.bench.sampling import Clock
    from pytest_triton.bench.sampling import SentRequest
    from pytest_triton.bench.sampling import WindowPolicy
    from pytest_triton.bench.session import TritonBench

__all__ = ["RelativeOutcome", "Target", "judge_pair", "measure_relative", "measure_variant", "request_call", "target"]

_LATENCY_SEED = 0  # generated latency batches: any fixed values, the same every run


@final
@dataclass(frozen=True)
class Target:
    """What a latency item times: a served variant, or the declaration's ONNX reference in this process."""

    name: str  # the declaration's name (a variant's, or the reference's)
    transport: Transport
    model: str
    batches: bool  # whether requests carry a batch axis of any size
    budget_name: str  # its name in the budget file and the latency report
    outputs: Sequence[str] = ()  # what to ask for (none: every output)
    http_url: str | None = None  # for the server statistics split
    notes: tuple[str, ...] = ()
    server: Any = None  # the launcher serving it (None: the reference in this process)
    # another client's own transport, for concurrency > 1 (None: clients share ``transport``, as the in-process
    # reference can: ONNX Runtime's run is thread-safe)
    new_transport: Callable[[], Transport] | None = None


def target(run: ContractRun, name: str, hardware: str) -> Target:
    """The variant or reference ``name`` as something to time (raises VariantUnavailable where it cannot run)."""
    declaration = run.declaration
    reference = declaration.reference
    if name not in declaration.variants and name == reference.name and reference.onnx is not None:
        transport, model = run.reference()
        first = transport.input_specs(model)
        batches = bool(first) and bool(first[0].shape) and first[0].shape[0] == -1  # a dynamic leading axis
        notes = (f"contract {declaration.path.name}: the reference, ONNX Runtime in the test process",)
        return Target(name, transport, model, batches, name, notes=notes)
    variant = declaration.variants[name]
    served = run.servers.serve(variant)
    outputs = run.requested_outputs(variant)  # an ensemble's: a set it answers (ContractRun.request_notes says why)
    return Target(
        name,
        served.transport,
        variant.model,
        batching(run.servers.folder(variant.repository), variant.model),
        variant.budget_name(hardware),
        outputs=outputs,
        http_url=served.http_url,
        notes=(f"contract {declaration.path.name}: variant {name!r}", *served.notes, *run.notes_for(name)),
        server=served.server,
        new_transport=lambda: served.server.transport(inference_protocol(variant, served.server.urls)),
    )


def request_call(run: ContractRun, timed: Target, rows: int) -> SentRequest:
    """One prepared request of ``rows`` rows to ``timed`` (one sample where the model does not batch), as a
    call to time that says how many rows it sends."""
    from pytest_triton.bench.sampling import SentRequest

    transport = timed.transport
    names = [spec.name for spec in transport.input_specs(timed.model)]
    if run.declaration.inputs.samples is not None:
        samples = run.samples()
        tensors = batch_of(samples, rows) if timed.batches else samples[0].tensors
    else:
        from pytest_triton.contracts.generated import numpy_request

        specs, _ = run.generated_inputs()
        tensors = numpy_request(specs, batch_size=rows if timed.batches else None, seed=_LATENCY_SEED)
    variant = run.declaration.variants.get(timed.name)
    if variant is not None:
        tensors = variant.rename_inputs(tensors)
    tensors = select_inputs(tensors, names)
    # without a batch axis, a request is one sample whatever its shape
    sent = int(next(iter(tensors.values())).shape[0]) if timed.batches and tensors else 1
    outputs = list(timed.outputs)
    prepare = getattr(transport, "prepare", None)
    send = getattr(transport, "send", None)
    if callable(prepare) and callable(send):  # encode once, send many times
        request = prepare(timed.model, tensors, outputs)
        return SentRequest(lambda: send(request), sent)
    return SentRequest(lambda: transport.infer(timed.model, tensors, outputs), sent)


def one_sample_note(timed: Target, latency: Latency) -> tuple[str, ...]:
    """Why a model that does not batch reports samples/s equal to requests/s (nothing for one that batches)."""
    if timed.batches:
        return ()
    asked = latency.throughput_batch_size
    unused = f" (throughput_batch_size {asked} cannot apply)" if asked != 1 else ""
    return (
        f"{timed.model} does not batch (max_batch_size 0): every request sends 1 sample, so samples/s = "
        f"requests/s{unused}",
    )


def _policy(latency: Latency, bench: TritonBench) -> WindowPolicy:
    if latency.window_ms is None:
        return bench.policy
    return dataclasses.replace(bench.policy, mode="time", window_ms=latency.window_ms)


def _budgets(latency: Latency, bench: TritonBench) -> BudgetFile | None:
    if latency.budgets is None:
        return bench.budgets
    from pytest_triton.bench.budgets import load_budgets

    return load_budgets(latency.budgets)


def _warm_calls(
    run: ContractRun, timed: Target, latency: Latency, opened: list[Transport]
) -> dict[int, Callable[[], object]]:
    """A request per batch size to warm (and, for throughput, to measure): every shape before any measurement.
    With ``latency.concurrency`` N > 1, each is N clients sending at once, each on its own transport (the ones
    made here are added to ``opened``, for the caller to close)."""
    from pytest_triton.bench.sampling import Clients

    sizes = dict.fromkeys((latency.batch_size, latency.throughput_batch_size, *latency.warm_batch_sizes))
    if latency.concurrency == 1:
        return {rows: request_call(run, timed, rows) for rows in sizes}
    clients = [timed]
    for _ in range(latency.concurrency - 1):
        if timed.new_transport is None:
            clients.append(timed)
            continue
        opened.append(timed.new_transport())
        clients.append(dataclasses.replace(timed, transport=opened[-1]))
    return {rows: Clients(tuple(request_call(run, client, rows) for client in clients)) for rows in sizes}


def _close(transports: list[Transport]) -> None:
    for transport in transports:
        close = getattr(transport, "close", None)
        if callable(close):
            close()


def measure_variant(
    run: ContractRun, name: str, bench: TritonBench, *, benchmark: Callable[[], Any] | None = None
) -> VariantResult:
    """Measure variant (or ONNX reference) ``name`` and record it in the session's bench (raises
    VariantUnavailable where it cannot run); the caller asserts the verdict. ``benchmark`` returns
    pytest-benchmark's fixture (or None), which gets the latency samples too; it is called only once the variant
    runs (pytest-benchmark warns about a fixture a skipped test never used)."""
    latency = run.declaration.latency
    assert latency is not None
    timed = target(run, name, bench.hardware)
    budgets = _budgets(latency, bench)
    if latency.budgets is not None and budgets is not None:
        bench.use_declared_budgets(budgets, timed.budget_name)
    own = type(bench)(hardware=bench.hardware, budgets=budgets, policy=_policy(latency, bench), clock=bench.clock)
    opened: list[Transport] = []
    from pytest_triton.bench.engine import engine_of
    from pytest_triton.bench.sampling import rows_of
    from pytest_triton.bench.session import ServedBy
    from pytest_triton.bench.session import Throughput

    engine = engine_of(timed.server, timed.model)  # adapter rows get their calibration model on the same server
    if engine.calibration_model is not None:
        calibration = dataclasses.replace(timed, model=engine.calibration_model)
        engine = engine.with_call(request_call(run, calibration, latency.batch_size))
    try:
        calls = _warm_calls(run, timed, latency, opened)
        shapes: dict[Hashable, Callable[[], object]] = {rows_of(c, rows): c for rows, c in calls.items()}
        call, rate_call = calls[latency.batch_size], calls[latency.throughput_batch_size]
        rows, rate_rows = rows_of(call, latency.batch_size), rows_of(rate_call, latency.throughput_batch_size)
        throughput = Throughput(rate_call, rate_rows) if rate_rows != rows or latency.concurrency > 1 else None
        started = dt.datetime.now(dt.timezone.utc)
        notes = (*timed.notes, *one_sample_note(timed, latency))
        if latency.concurrency > 1:
            notes = (*notes, f"{latency.concurrency} clients at once (concurrency {latency.concurrency})")
        result = own.measure(
            timed.budget_name,
            call,
            batch_size=rows,
            throughput=throughput,
            warmup=latency.warmup,
            warm_shapes=shapes,
            served_by=ServedBy(timed.http_url, timed.model) if timed.http_url else None,
            engine=engine,
            notes=notes,
            benchmark=benchmark() if benchmark is not None else None,
        )
    finally:
        _close(opened)
    ended = dt.datetime.now(dt.timezone.utc)
    server_notes = getattr(timed.server, "latency_notes", None)  # what only this server knows (SageMaker's)
    if callable(server_notes):
        extra = tuple(server_notes(started, ended))
        result = dataclasses.replace(result, notes=(*result.notes, *extra))
    late_note = getattr(timed.server, "late_latency_note", None)  # known only later: CloudWatch's split
    if own.triton_version and not bench.triton_version:
        bench.triton_version = own.triton_version
    return bench.add(result, late=late_note(started, ended) if callable(late_note) else None)


@final
@dataclass(frozen=True)
class RelativeOutcome:
    """A declared relative budget's verdict, and the budget file's relative budgets of the same pair, all
    judged on one interleaved measurement."""

    rule: RelativeBudget
    declared: RelativeResult
    from_budgets: tuple[RelativeResult, ...]
    settled: str  # how the interleaved measurement ended
    inconclusive: UnstablePolicy = "warn"

    @property
    def results(self) -> tuple[RelativeResult, ...]:
        return (self.declared, *self.from_budgets)

    @property
    def ok(self) -> bool:
        """A FAIL fails; an INCONCLUSIVE fails only under ``inconclusive = "fail"``."""
        return not any(
            r.status == "fail" or (r.status == "inconclusive" and self.inconclusive == "fail") for r in self.results
        )

    @property
    def open(self) -> tuple[RelativeResult, ...]:
        """The inconclusive results (a warning each under ``inconclusive = "warn"``)."""
        return tuple(r for r in self.results if r.status == "inconclusive")

    @property
    def word(self) -> OutcomeWord:
        """The item's word in every channel (:mod:`pytest_triton.bench.outcome`): the worst of its verdicts."""
        from pytest_triton.bench.outcome import outcome_word

        if not self.ok:
            return "failed"
        words = [outcome_word(r.status, "warn", self.inconclusive) for r in self.results]
        return "inconclusive" if "inconclusive" in words else words[0]

    def message(self) -> str:
        from pytest_triton.bench.outcome import outcome_word

        rule, result = self.rule, self.declared
        word = outcome_word(result.status, "warn", self.inconclusive)
        ratio = "n/a" if result.ratio is None else f"{result.ratio:.3f}"
        lines = [
            f"relative latency {self.word}: {rule.variant!r} / {rule.baseline!r} {rule.metric} = {ratio} "
            f"{result.interval_text()} (budget <= {rule.max_ratio:g}); {word}: {result.reason}",
            f"interleaved measurement: {self.settled}",
        ]
        lines += [
            f"budget file: {r.budget.label}: {outcome_word(r.status, 'warn', self.inconclusive)}: {r.reason}"
            for r in self.from_budgets
        ]
        return "\n".join(lines)


def measure_relative(run: ContractRun, rule: RelativeBudget, bench: TritonBench) -> RelativeOutcome:
    """Hold ``rule.variant`` to at most ``rule.max_ratio`` times ``rule.baseline``, measured side by side, and
    record every verdict in the session bench's relative-budget table (VariantUnavailable where either
    cannot run)."""
    from pytest_triton.bench.sampling import rows_of
    from pytest_triton.bench.sampling import warm_up_shapes

    latency = run.declaration.latency
    assert latency is not None
    baseline = target(run, rule.baseline, bench.hardware)
    candidate = target(run, rule.variant, bench.hardware)
    # the report's names are the budget file's, so its relative budgets of this pair apply
    same = baseline.budget_name == candidate.budget_name
    base_key, cand_key = (rule.baseline, rule.variant) if same else (baseline.budget_name, candidate.budget_name)
    budgets = _budgets(latency, bench)
    if latency.budgets is not None and budgets is not None:
        for key in (base_key, cand_key):
            bench.use_declared_budgets(budgets, key)
    opened: list[Transport] = []
    try:
        pairs = ((base_key, baseline), (cand_key, candidate))
        warm = {key: _warm_calls(run, timed, latency, opened) for key, timed in pairs}
        if latency.warmup:
            shapes: dict[Hashable, Callable[[], object]] = {
                (key, rows): c for key, own in warm.items() for rows, c in own.items()
            }
            warm_up_shapes(shapes, count=latency.warmup)
        calls = {key: own[latency.batch_size] for key, own in warm.items()}
        rate_calls = {key: own[latency.throughput_batch_size] for key, own in warm.items()}
        outcome = judge_pair(
            rule,
            calls,
            throughput_calls=rate_calls,
            batch_size=rows_of(calls[base_key], latency.batch_size),
            throughput_batch_size=rows_of(rate_calls[base_key], latency.throughput_batch_size),
            source=run.declaration.path.name,
            budgets=budgets,
            hardware=bench.hardware,
            policy=_policy(latency, bench),
            clock=bench.clock,
            inconclusive=bench.inconclusive,
            verdict_seconds=bench.verdict_seconds,
        )
    finally:
        _close(opened)
    bench.relative.extend(outcome.results)
    return outcome


def judge_pair(
    rule: RelativeBudget,
    calls: Mapping[str, Callable[[], object]],
    *,
    throughput_calls: Mapping[str, Callable[[], object]] | None = None,
    batch_size: int = 1,
    throughput_batch_size: int = 8,
    source: str = "contracts",
    budgets: BudgetFile | None = None,
    hardware: str = "",
    policy: WindowPolicy | None = None,
    clock: Clock | None = None,
    inconclusive: UnstablePolicy = "warn",
    verdict_seconds: float = VERDICT_SECONDS,
) -> RelativeOutcome:
    """Measure the pair of ``calls`` (baseline first, then the variant, by their report names) in alternating
    windows and judge ``rule`` and the budget file's relative budgets of that pair on ``hardware``.

    Samples/s are measured (``throughput_calls``, interleaved too) only when a budget of the file needs them.
    Rounds are added while a budget's answer is open, at the looks of :mod:`pytest_triton.bench.decision`, for
    at most ``verdict_seconds`` of measurement in all.
    """
    import time

    from pytest_triton.bench.decision import LOOKS
    from pytest_triton.bench.interleave import measure_interleaved
    from pytest_triton.bench.relative import evaluate_relative
    from pytest_triton.bench.relative import until_decided
    from pytest_triton.bench.sampling import WindowPolicy

    if len(calls) != 2:
        raise ValueError(f"a relative budget compares two calls; got {sorted(calls)}")
    base_key, cand_key = calls
    timing: dict[str, Any] = {"clock": clock} if clock else {}
    from_file = budgets.relative_budgets(hardware, {base_key, cand_key}) if budgets else ()
    declared = dataclasses.replace(
        rule,
        hardware=hardware,
        variant=cand_key,
        baseline=base_key,
        source=f"{source} [[latency.relative]]",
        name=f"{source}: latency[{rule.name}] {rule.metric.removesuffix('_ms')}",
    )
    judged = (declared, *from_file)
    started = time.monotonic()
    policy = dataclasses.replace(policy or WindowPolicy(), max_seconds=verdict_seconds)
    looked: dict[str, Any] = {"looks": LOOKS, **timing}
    rate_budgets = [b for b in judged if b.is_rate]
    runs = {
        "latency": measure_interleaved(
            calls,
            batch_size=batch_size,
            policy=policy,
            decided=until_decided([b for b in judged if not b.is_rate], LOOKS),
            **looked,
        )
    }
    if throughput_calls and rate_budgets:
        left = max(verdict_seconds - (time.monotonic() - started), 1.0)
        runs["rate"] = measure_interleaved(
            throughput_calls,
            batch_size=throughput_batch_size,
            policy=dataclasses.replace(policy, max_seconds=left),
            decided=until_decided(rate_budgets, LOOKS),
            **looked,
        )
    results = []
    for budget in judged:
        interleaved = runs.get("rate" if budget.is_rate else "latency")
        if interleaved is None:  # a samples/s budget without throughput calls
            results.append(evaluate_relative(budget, None, None))
            continue
        mine, theirs = interleaved.measurements[cand_key].stats(), interleaved.measurements[base_key].stats()
        results.append(
            evaluate_relative(
                budget,
                mine,
                theirs,
                stability=interleaved.pair_stability(cand_key, base_key)[2],
                paired=interleaved.paired(cand_key, base_key, budget.metric),
            )
        )
    settled = "; ".join(f"b={r.measurements[base_key].batch_size}: {r.reason}" for r in runs.values())
    settled += f" ({time.monotonic() - started:.1f} s)"
    return RelativeOutcome(rule, results[0], tuple(results[1:]), settled, inconclusive)
