"""Latency statistics as perf_analyzer computes them.

Percentiles use perf_analyzer's own rule (``InferenceProfiler::SummarizeLatency``): on the latencies sorted
ascending, the p-th percentile is the element at 0-based index ``int(p / 100 * (n - 1) + 0.5)``: the
linear-interpolation position rounded half up to the nearest rank, with no interpolation between samples, so
every percentile is a latency that was actually measured. (This is not the textbook nearest-rank
``ceil(p / 100 * n)``; for n = 10, p90 is the 9th smallest here and there, but p50 is the 6th here, the 5th there.)

The standard deviation is the population one (perf_analyzer: ``E[x²] - mean²``). Throughput is
``batch_size * requests / elapsed`` in samples per second, where ``elapsed`` is the wall time of the measured
windows (gaps between requests included), as perf_analyzer reports ``infer/sec``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from typing import Any
from typing import TypeVar
from typing import final

__all__ = ["PERCENTILES", "LatencyStats", "nearest_rank", "summarize", "throughput"]

PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)

_T = TypeVar("_T", int, float)


def nearest_rank(sorted_values: Sequence[_T], percentile: float) -> _T:
    """The ``percentile`` (0-100) of values sorted ascending, by perf_analyzer's rounding rule."""
    if not sorted_values:
        raise ValueError("no samples: cannot take a percentile of an empty sequence")
    if not 0 <= percentile <= 100:
        raise ValueError(f"percentile={percentile!r}; expected 0 <= percentile <= 100")
    index = int(percentile / 100.0 * (len(sorted_values) - 1) + 0.5)
    return sorted_values[index]


def throughput(batch_size: int, requests: int, elapsed_ns: int) -> float:
    """Samples per second: ``batch_size * requests / elapsed`` (0 when nothing elapsed)."""
    if elapsed_ns <= 0:
        return 0.0
    return batch_size * requests * 1e9 / elapsed_ns


@final
@dataclass(frozen=True)
class LatencyStats:
    """Summary of one measurement: latencies in milliseconds, throughput in samples per second."""

    count: int
    batch_size: int
    min_ms: float
    max_ms: float
    mean_ms: float
    stdev_ms: float
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    elapsed_s: float
    samples_per_s: float

    @property
    def requests_per_s(self) -> float:
        return self.samples_per_s / self.batch_size

    def percentile_ms(self, percentile: int) -> float:
        """One of the reported percentiles (50, 90, 95 or 99)."""
        if percentile not in PERCENTILES:
            raise ValueError(f"percentile={percentile!r}; reported percentiles are {PERCENTILES}")
        value: float = getattr(self, f"p{percentile}_ms")
        return value

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``requests_per_s`` included)."""
        out = asdict(self)
        out["requests_per_s"] = self.requests_per_s
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyStats:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


def summarize(samples_ns: Sequence[int], *, batch_size: int = 1, elapsed_ns: int | None = None) -> LatencyStats:
    """Summarize request latencies (nanoseconds, one per request of ``batch_size`` samples).

    ``elapsed_ns`` is the wall time the requests took; by default the sum of the latencies (no gaps).
    """
    if not samples_ns:
        raise ValueError("no samples to summarize")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r}; expected >= 1")
    ordered = sorted(samples_ns)
    elapsed = sum(ordered) if elapsed_ns is None else elapsed_ns
    ms = [v / 1e6 for v in ordered]
    pct = {p: nearest_rank(ordered, p) / 1e6 for p in PERCENTILES}
    stdev = statistics.pstdev(ms) if len(ms) > 1 else 0.0
    return LatencyStats(
        count=len(ordered),
        batch_size=batch_size,
        min_ms=ms[0],
        max_ms=ms[-1],
        mean_ms=math.fsum(ms) / len(ms),
        stdev_ms=stdev,
        p50_ms=pct[50],
        p90_ms=pct[90],
        p95_ms=pct[95],
        p99_ms=pct[99],
        elapsed_s=elapsed / 1e9,
        samples_per_s=throughput(batch_size, len(ordered), elapsed),
    )
