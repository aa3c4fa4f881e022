"""Side-by-side verdicts decided by the paired rounds, checked on their verdicts (not on their wording).

Two ways the interleaved machinery could be wrong and still print the right words: a run that settles on the
throughput ratio alone, and a relative budget judged on the two pooled figures instead of the per-round pairs.
Each case below is built so that the wrong rule gives the other verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator

import pytest

from pytest_triton.bench.interleave import measure_interleaved
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import evaluate_relative
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.stats import LatencyStats
from pytest_triton.bench.stats import summarize

MS = 1_000_000


class ScriptedClock:
    """A fake clock that each call moves by the next latency of its variant's script (ms, cycled)."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def variant(self, script: list[float]) -> Callable[[], None]:
        latencies: Iterator[float] = iter(script * 100)

        def call() -> None:
            self.now += int(next(latencies) * MS)

        return call


# five requests a window, 50 ms of wall time in every window: the throughput ratio never moves, the p50 does
STEADY = [10.0] * 5
P50_MOVES = [10.0] * 5 + [2.0, 2.0, 14.0, 16.0, 16.0] + [1.0, 1.0, 6.0, 21.0, 21.0]  # p50 10, 14, 6 ms


def test_a_run_whose_p50_ratio_moves_does_not_settle_on_a_steady_throughput_ratio() -> None:
    clock = ScriptedClock()
    calls = {"a": clock.variant(STEADY), "b": clock.variant(P50_MOVES)}
    policy = WindowPolicy(window_requests=5, stable_windows=3, max_windows=6, max_seconds=None)
    run = measure_interleaved(calls, policy=policy, clock=clock)
    assert not run.stable, run.reason
    assert run.rounds == 6  # bounded by max_windows, never settled
    p50_ok, rate_ok, text = run.pair_stability("b", "a")
    assert (p50_ok, rate_ok) == (False, True), text


def test_the_same_run_settles_once_the_p50_ratio_holds() -> None:
    clock = ScriptedClock()
    calls = {"a": clock.variant(STEADY), "b": clock.variant([2.0, 2.0, 12.0, 17.0, 17.0])}  # p50 12 every window
    policy = WindowPolicy(window_requests=5, stable_windows=3, max_windows=6, max_seconds=None)
    run = measure_interleaved(calls, policy=policy, clock=clock)
    assert run.stable, run.reason
    assert run.rounds == 3


def _stats(p50_ms: float) -> LatencyStats:
    return summarize([int(p50_ms * MS)] * 5, batch_size=1)


BUDGET = RelativeBudget(
    hardware="box", variant="ens", baseline="plain", metric="p50_ms", source="test", tolerance=0.0, max_ratio=1.2
)


@pytest.mark.parametrize(
    ("pooled", "rounds", "status"),
    [
        # pooled 1.5x (a slow round dominates the pooled median) but every round is within 1.2x: a pass
        ((15.0, 10.0), (1.05, 1.08, 1.10, 1.06, 1.07, 1.09, 1.04, 1.08, 1.06), "pass"),
        # pooled 1.0x but every round 1.4-1.5x over: a fail
        ((10.0, 10.0), (1.40, 1.45, 1.50, 1.42, 1.48, 1.41, 1.44, 1.46, 1.43), "fail"),
    ],
    ids=["pooled-over-paired-within", "pooled-within-paired-over"],
)
def test_a_relative_budget_is_judged_on_the_paired_rounds(
    pooled: tuple[float, float], rounds: tuple[float, ...], status: str
) -> None:
    mine, theirs = pooled
    diffs = [theirs * (r - 1.0) for r in rounds]
    result = evaluate_relative(BUDGET, _stats(mine), _stats(theirs), paired=(list(rounds), diffs))
    assert result.status == status, result.reason
    assert result.ratio == pytest.approx(sorted(rounds)[4])  # the median of the rounds, not 15/10 or 10/10
    # without the pairs nothing is decided: the pooled figures alone would give the other verdict
    alone = evaluate_relative(BUDGET, _stats(mine), _stats(theirs))
    assert alone.status == "inconclusive"
