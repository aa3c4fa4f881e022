"""Latency of streams: time to first response, the gaps between responses, the whole stream, responses/s.

perf_analyzer's ``--streaming`` and genai-perf report the same quantities for decoupled models; here they are
summarised from :class:`~pytest_triton.client.streaming.StreamResult` values with perf_analyzer's percentile
rule (:func:`~pytest_triton.bench.stats.nearest_rank`). Gaps are pooled over every stream measured: a gap is
the time between a response and the one before it in the same stream, so a stream of n responses gives n - 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import fields
from typing import Any
from typing import final

from pytest_triton.bench.absolute import Check
from pytest_triton.bench.absolute import Verdict
from pytest_triton.bench.budgets import STREAM_KEY_ALIASES
from pytest_triton.bench.budgets import STREAM_LIMIT_KEYS
from pytest_triton.bench.budgets import Budget
from pytest_triton.bench.budgets import HardwarePolicy
from pytest_triton.bench.stats import nearest_rank
from pytest_triton.client.streaming import StreamResult


@final
@dataclass(frozen=True)
class StreamLatency:
    """One measurement of a streaming model: requests, responses and their times in milliseconds."""

    requests: int
    responses: int
    ttft_p50_ms: float
    ttft_p90_ms: float
    ttft_p99_ms: float
    gap_p50_ms: float
    gap_p90_ms: float
    gap_p99_ms: float
    total_p50_ms: float
    total_p99_ms: float
    responses_per_s: float

    def value(self, key: str) -> float:
        """The measured value of a budget key (``ttft_ms`` and ``total_ms`` mean their p50)."""
        name = STREAM_KEY_ALIASES.get(key, key)
        if name not in {f.name for f in fields(self)} or name in ("requests", "responses"):
            known = ", ".join((*STREAM_LIMIT_KEYS, "responses_per_s"))
            raise KeyError(f"{key!r} is not a stream latency key (known: {known})")
        result: float = getattr(self, name)
        return result

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _percentiles_ms(values_s: Sequence[float], percentiles: Sequence[int]) -> list[float]:
    if not values_s:
        return [math.nan for _ in percentiles]
    ordered = sorted(values_s)
    return [nearest_rank(ordered, p) * 1e3 for p in percentiles]


def summarize_streams(results: Sequence[StreamResult]) -> StreamLatency:
    """Summarise measured streams; a request that got no response counts in ``total`` but not in ``ttft``."""
    if not results:
        raise ValueError("no streams to summarize")
    firsts = [r.first_response_s for r in results if r.first_response_s is not None]
    gaps = [gap for r in results for gap in r.gaps_s]
    totals = [r.total_s for r in results]
    responses = sum(len(r.responses) for r in results)
    ttft = _percentiles_ms(firsts, (50, 90, 99))
    gap = _percentiles_ms(gaps, (50, 90, 99))
    total = _percentiles_ms(totals, (50, 99))
    elapsed = math.fsum(totals)
    return StreamLatency(
        requests=len(results),
        responses=responses,
        ttft_p50_ms=ttft[0],
        ttft_p90_ms=ttft[1],
        ttft_p99_ms=ttft[2],
        gap_p50_ms=gap[0],
        gap_p90_ms=gap[1],
        gap_p99_ms=gap[2],
        total_p50_ms=total[0],
        total_p99_ms=total[1],
        responses_per_s=responses / elapsed if elapsed > 0 else 0.0,
    )


def evaluate_stream(
    budget: Budget | None,
    measured: StreamLatency,
    *,
    missing_reason: str = "no budget: measured and reported only",
    policy: HardwarePolicy | None = None,
) -> Verdict:
    """Hold a stream measurement to the stream limits of ``budget`` (``ttft_ms``, ``gap_p99_ms``, ...)."""
    if budget is None or not budget.stream:
        reason = missing_reason if budget is None else f"{budget.variant}: the budget has no stream limits"
        return Verdict("report-only", reason)
    checks = []
    for key, limit in budget.stream.items():
        value = measured.value(key)
        known = value == value  # NaN: no response came, so there is no first response and no gap
        if key == "responses_per_s":
            allowed = limit * (1 - budget.tolerance)
            ok = value >= allowed if known else None
        else:
            allowed = limit * (1 + budget.tolerance)
            ok = value <= allowed if known else None
        checks.append(Check(key, limit, allowed, value if known else None, ok))
    failed = [c for c in checks if c.ok is False]
    text = "; ".join(c.describe() for c in failed or checks)
    if policy is not None and not policy.enforce_absolute:
        within = "over budget" if failed else "within budget"
        return Verdict("report-only", f"{within}, not asserted here ({budget.hardware}: {policy.reason}); {text}")
    return Verdict("fail" if failed else "pass", text, tuple(checks))
