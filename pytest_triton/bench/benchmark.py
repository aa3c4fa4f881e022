"""Hand measured latencies to pytest-benchmark, so ``--benchmark-save``/``--benchmark-compare`` see them.

What we chose, and why (pytest-benchmark 5.3.1 and later 5.x; see the bench extra in pyproject.toml):

- pytest-benchmark has no public way to add externally timed rounds. Its ``benchmark.pedantic(target,
  rounds=N, iterations=1)`` times each round as ``end - start`` of two calls to the fixture's timer, around one
  call of ``target``. We run ``pedantic`` over a no-op target with the fixture's timer swapped, for that call
  only, for a *replay clock* that returns ``0`` then ``sample`` for each round: every round pytest-benchmark
  records is exactly one of our measured request latencies (in seconds, its unit), in order. Its own
  statistics (min, max, mean, stddev, median, IQR, ops, ...) and therefore ``--benchmark-compare`` and
  ``--benchmark-compare-fail=median:5%`` then work on the real latencies, not on a no-op's timing.
- The swap touches one private attribute (``BenchmarkFixture._timer``); after the call we check that the
  recorded rounds equal our samples and raise a clear error if a pytest-benchmark release changed this.
- ``benchmark.extra_info`` carries what pytest-benchmark does not compute: p50/p90/p95/p99 (perf_analyzer's
  rule), samples/s, batch size, stability, warm-up and, with a :class:`VariantResult`, the verdict, budget and
  server split. It is saved in the JSON under ``extra_info``.
- With ``--benchmark-disable`` nothing is recorded (pedantic only calls the no-op once, and 5.3.1 writes no
  ``--benchmark-json`` file); with
  ``--benchmark-skip`` the ``benchmark`` fixture skips the test before we get here.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.sampling import Measurement

__all__ = ["benchmark_extra_info", "record_benchmark"]


class _ReplayClock:
    """A timer for pytest-benchmark's runner: ``0.0``, ``sample[0]``, ``0.0``, ``sample[1]``, ..."""

    __name__ = "pytest_triton_replayed_perf_counter_ns"

    def __init__(self, samples_s: Sequence[float]) -> None:
        self._values = [v for s in samples_s for v in (0.0, s)]
        self._next = 0

    def __call__(self) -> float:
        value = self._values[self._next]
        self._next += 1
        return value


def _noop() -> None:
    return None


def benchmark_extra_info(measurement: Measurement, result: VariantResult | None = None) -> dict[str, Any]:
    """The JSON-ready ``extra_info`` entries for a measurement (and its result, when given)."""
    stats = measurement.stats()
    info: dict[str, Any] = {
        "latency_unit": "ms",
        "p50_ms": stats.p50_ms,
        "p90_ms": stats.p90_ms,
        "p95_ms": stats.p95_ms,
        "p99_ms": stats.p99_ms,
        "mean_ms": stats.mean_ms,
        "samples_per_s": stats.samples_per_s,
        "batch_size": stats.batch_size,
        "requests": stats.count,
        "percentile_method": "perf_analyzer nearest rank: sorted[int(p/100*(n-1)+0.5)]",
        "stable": measurement.stable,
        "stability": measurement.reason,
        "warmup_s": measurement.warmup.as_dict(),
    }
    if result is not None:
        info["variant"] = result.variant
        info["hardware"] = result.hardware
        info["verdict"] = result.verdict.status
        info["verdict_reason"] = result.verdict.reason
        if result.throughput is not None:
            info["throughput_batch_size"] = result.throughput.batch_size
            info["throughput_samples_per_s"] = result.throughput.samples_per_s
        if result.budget is not None:
            info["budget"] = result.budget.as_dict()
        if result.server is not None:
            info["server"] = result.server.as_dict()
    return info


def record_benchmark(
    benchmark: Any,
    measurement: Measurement,
    *,
    result: VariantResult | None = None,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Record ``measurement``'s kept samples as the rounds of pytest-benchmark's ``benchmark`` fixture.

    Uses the fixture once (a second benchmark in the same test raises pytest-benchmark's FixtureAlreadyUsed).
    """
    samples_s = [ns / 1e9 for ns in measurement.samples_ns]
    if not samples_s:
        raise ValueError("the measurement has no samples to record")
    benchmark.extra_info.update(benchmark_extra_info(measurement, result))
    if extra:
        benchmark.extra_info.update(extra)
    if not hasattr(benchmark, "_timer"):
        raise RuntimeError(
            "this pytest-benchmark has no BenchmarkFixture._timer; pytest-triton cannot replay measured samples "
            "into it (tested with pytest-benchmark 5.3.1-5.x); extra_info still holds the percentiles"
        )
    original = benchmark._timer
    benchmark._timer = _ReplayClock(samples_s)
    try:
        benchmark.pedantic(_noop, rounds=len(samples_s), iterations=1, warmup_rounds=0)
    finally:
        benchmark._timer = original
    recorded = getattr(getattr(benchmark, "stats", None), "stats", None)
    if getattr(benchmark, "disabled", False) or recorded is None:
        return
    if list(recorded.data) != samples_s:
        raise RuntimeError(
            f"pytest-benchmark recorded {len(recorded.data)} rounds that differ from the {len(samples_s)} measured "
            "samples; this pytest-benchmark version runs pedantic() differently than pytest-triton expects"
        )
