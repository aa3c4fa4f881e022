"""A declaration's streamed variants (``protocol = "stream"``, decoupled models): parity of streams, their latency.

Every request goes over Triton's gRPC stream (:class:`~pytest_triton.client.streaming.TritonStreamTransport`)
and all its responses are kept. Parity compares a variant's responses with the reference variant's, response by
response, at the variant's precision (:func:`~pytest_triton.parity.streams.compare_streams`); generated inputs are
searched and shrunk by Hypothesis as for other variants. Latency measures time to first response, the gaps
between responses and the whole stream (:mod:`pytest_triton.bench.streams`), after a warm-up, for the
declaration's window, and holds them to the stream limits of the variant's budget (``ttft_ms``, ``gap_p99_ms``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import final

from numpy.typing import NDArray

from pytest_triton.bench.absolute import Verdict
from pytest_triton.bench.streams import StreamLatency
from pytest_triton.bench.streams import evaluate_stream
from pytest_triton.bench.streams import summarize_streams
from pytest_triton.client.streaming import StreamResponse
from pytest_triton.client.streaming import StreamResult
from pytest_triton.client.streaming import TritonStreamTransport
from pytest_triton.contracts.checks import CheckResult
from pytest_triton.contracts.parity_run import ContractRun
from pytest_triton.contracts.parity_run import ParityOutcome
from pytest_triton.contracts.parity_run import format_tensors
from pytest_triton.contracts.parity_run import search_disagreement
from pytest_triton.contracts.samples import select_inputs
from pytest_triton.contracts.serving import ServedVariant
from pytest_triton.contracts.spec import Variant
from pytest_triton.contracts.spec import precision_tolerance
from pytest_triton.parity.streams import StreamParity
from pytest_triton.parity.streams import compare_streams

if TYPE_CHECKING:
    from pytest_triton.bench.outcome import OutcomeWord
    from pytest_triton.bench.session import TritonBench

__all__ = ["StreamLatencyOutcome", "StreamRun"]

DEFAULT_WINDOW_MS = 1000.0  # how long the measured streams run when the declaration sets no window_ms


@final
@dataclass(frozen=True)
class StreamLatencyOutcome:
    """A streamed variant's latency: what was measured, on which hardware, and the verdict of its budget."""

    variant: str
    budget_name: str
    hardware: str
    measured: StreamLatency
    verdict: Verdict
    warmup: int

    @property
    def word(self) -> OutcomeWord:
        """The item's word in every channel (:mod:`pytest_triton.bench.outcome`): a stream that never settled
        fails its item."""
        from pytest_triton.bench.outcome import outcome_word

        return "failed" if self.verdict.failed else outcome_word(self.verdict.status, "warn", "warn")

    def message(self) -> str:
        m = self.measured
        return (
            f"{self.budget_name}: {self.word.upper()}: {self.verdict.reason}\n"
            f"  {m.requests} streams, {m.responses} responses after {self.warmup} warm-up stream(s) on "
            f"{self.hardware}: time to first response p50 {m.ttft_p50_ms:.2f} / p99 {m.ttft_p99_ms:.2f} ms; "
            f"gaps p50 {m.gap_p50_ms:.2f} / p90 {m.gap_p90_ms:.2f} / p99 {m.gap_p99_ms:.2f} ms; "
            f"stream p50 {m.total_p50_ms:.2f} ms; {m.responses_per_s:.1f} responses/s"
        )


@final
class StreamRun:
    """The streamed variants of one :class:`ContractRun`: one stream per served variant, kept for the session."""

    def __init__(self, run: ContractRun) -> None:
        self.run = run
        self._streams: dict[int, TritonStreamTransport] = {}

    def close(self) -> None:
        for stream in self._streams.values():
            stream.close()
        self._streams.clear()

    def _stream(self, served: ServedVariant) -> TritonStreamTransport:
        key = id(served.server)
        if key not in self._streams:
            self._streams[key] = TritonStreamTransport(served.server.urls.need("grpc"))
        return self._streams[key]

    def _send(self, served: ServedVariant, tensors: Mapping[str, NDArray[Any]]) -> StreamResult:
        """One request to a streamed variant, its outputs under the reference's names."""
        variant = served.variant
        names = [spec.name for spec in served.transport.input_specs(variant.model)]
        result = self._stream(served).stream(variant.model, select_inputs(variant.rename_inputs(tensors), names))
        back = {mine: theirs for theirs, mine in variant.outputs.items()}
        if not back:
            return result
        renamed = tuple(
            StreamResponse({back.get(k, k): v for k, v in r.outputs.items()}, r.at_s) for r in result.responses
        )
        return StreamResult(result.model, renamed, result.total_s)

    def _reference(self) -> tuple[Variant, ServedVariant]:
        name = self.run.declaration.reference.variant
        assert name is not None, "a declaration of streams has a variant as its reference (checked when read)"
        variant = self.run.declaration.variants[name]
        return variant, self.run.servers.serve(variant)

    # -- parity ----------------------------------------------------------------------------------------------

    def parity(self, name: str) -> ParityOutcome:
        """Compare variant ``name``'s streams with the reference variant's (VariantUnavailable where it cannot run)."""
        variant = self.run.declaration.variants[name]
        served = self.run.servers.serve(variant)
        _, reference = self._reference()
        preset = precision_tolerance(variant.precision_on(served.has_gpu))

        def compare(tensors: Mapping[str, NDArray[Any]]) -> StreamParity:
            return compare_streams(
                self._send(reference, tensors),
                self._send(served, tensors),
                preset=preset,
                reference_name=self.run.declaration.reference.name,
                candidate_name=name,
            )

        if self.run.declaration.inputs.generated is not None:
            return self._parity_generated(name, compare)
        checks = []
        for sample in self.run.samples():
            result = compare(sample.tensors)
            checks.append(_check(f"sample {sample.id}", result))
            if not result.ok:
                break  # the first sample that differs is the one to read
        where = self.run.declaration.inputs.samples
        text = f"{len(checks)} sample(s) of {where.name if where else 'the samples'}, streamed"
        failed = [c for c in checks if not c.ok]
        summary = CheckResult("stream", "responses", not failed, tuple(c.lines[0] for c in checks[-3:]))
        return ParityOutcome(name, self.run.declaration.reference.name, tuple(failed or [summary]), text)

    def _parity_generated(self, name: str, compare: Any) -> ParityOutcome:
        from pytest_triton.contracts.generated import request_tensors

        generated = self.run.declaration.inputs.generated
        assert generated is not None
        specs, batches = self.run.generated_inputs()
        deadline = time.monotonic() + generated.max_seconds
        tried = 0

        def disagrees(tensors: dict[str, NDArray[Any]]) -> bool:
            nonlocal tried
            if time.monotonic() > deadline:
                return False
            tried += 1
            return not compare(tensors).ok

        strategy = request_tensors(specs, batch_size=generated.batch_size if batches else None)
        minimal = search_disagreement(strategy, disagrees, generated)
        text = f"{tried} generated inputs (seed={generated.seed}), streamed"
        reference = self.run.declaration.reference.name
        if minimal is None:
            check = CheckResult("stream", "responses", True, (f"no disagreement found on {text}",))
            return ParityOutcome(name, reference, (check,), text)
        return ParityOutcome(
            name, reference, (_check("the minimal input", compare(minimal)),), text, format_tensors(minimal)
        )

    # -- latency ---------------------------------------------------------------------------------------------

    def latency(self, name: str, bench: TritonBench) -> StreamLatencyOutcome:
        """Time variant ``name``'s streams and hold them to its budget's stream limits."""
        declaration = self.run.declaration
        latency = declaration.latency
        assert latency is not None
        variant = declaration.variants[name]
        served = self.run.servers.serve(variant)
        if declaration.inputs.samples is not None:
            tensors = self.run.samples()[0].tensors
        else:
            from pytest_triton.contracts.generated import numpy_request

            specs, _ = self.run.generated_inputs()
            tensors = numpy_request(specs, batch_size=None, seed=0)
        for _ in range(latency.warmup):
            self._send(served, tensors)
        window_s = (latency.window_ms or DEFAULT_WINDOW_MS) / 1000.0
        results: list[StreamResult] = []
        ends = time.perf_counter() + window_s
        while time.perf_counter() < ends or len(results) < 3:
            results.append(self._send(served, tensors))
        measured = summarize_streams(results)
        budget_name = variant.budget_name(bench.hardware)
        budgets = bench.budgets
        if latency.budgets is not None:
            from pytest_triton.bench.budgets import load_budgets

            budgets = load_budgets(latency.budgets)
        budget = budgets.lookup(bench.hardware, budget_name) if budgets is not None else None
        policy = budgets.policy(bench.hardware) if budgets is not None else None
        missing = budgets.missing_reason(bench.hardware, budget_name) if budgets is not None else "no budget file"
        verdict = evaluate_stream(budget, measured, missing_reason=missing, policy=policy)
        return StreamLatencyOutcome(name, budget_name, bench.hardware, measured, verdict, latency.warmup)


def _check(where: str, result: StreamParity) -> CheckResult:
    lines = (f"{where}: {result.message().splitlines()[0]}", *result.message().splitlines()[1:])
    return CheckResult("stream", "responses", result.ok, lines, report=result.report)
