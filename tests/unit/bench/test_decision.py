"""The verdict rule of relative budgets and PR verdicts: exact small cases, and its error rates by simulation.

The simulation draws per-round ratios from a log-normal distribution around a known true ratio and runs the
rule with its looks as a measurement does (9, 18, 36, 72 rounds, stopping at the first answer). A planted rule
that judges the point estimate alone is run through the same checks and must be caught.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from collections.abc import Sequence

import pytest

from pytest_triton.bench.decision import ALPHA
from pytest_triton.bench.decision import LOOKS
from pytest_triton.bench.decision import decide
from pytest_triton.bench.decision import median_interval
from pytest_triton.bench.decision import rank_for
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import judge_rounds

LIMIT = 1.10
Rule = Callable[[Sequence[float], float], str]


@pytest.mark.parametrize(
    ("n", "alpha", "k"),
    [
        (8, ALPHA / 4, 0),  # 2 / 2**8 > 0.0025: no interval from 8 rounds
        (9, ALPHA / 4, 1),  # 1 / 2**9 = 0.00195 <= 0.0025 < 10 / 2**9
        (18, ALPHA / 4, 3),
        (36, ALPHA / 4, 10),
        (72, ALPHA / 4, 24),
        (5, 0.05, 1),  # 1/32 = 0.031 <= 0.05 < 6/32
        (10, 0.05, 2),  # P(B <= 1) = 11/1024 <= 0.05 < P(B <= 2) = 56/1024
        (0, 0.05, 0),
    ],
)
def test_rank_for_is_the_largest_rank_within_alpha(n: int, alpha: float, k: int) -> None:
    assert rank_for(n, alpha) == k
    if k:  # the next rank would spend more than alpha
        assert (
            sum(math.comb(n, j) for j in range(k)) / 2**n <= alpha < sum(math.comb(n, j) for j in range(k + 1)) / 2**n
        )


def test_median_interval_takes_the_kth_order_statistics() -> None:
    values = [1.09, 1.01, 1.05, 1.03, 1.07, 1.02, 1.08, 1.04, 1.06, 1.00]
    assert median_interval(values, 0.05) == (1.01, 1.08)  # k = 2 of 10
    assert median_interval(values[:8], ALPHA / 4) is None


@pytest.mark.parametrize(
    ("ratios", "higher_is_better", "outcome"),
    [
        ([1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.09], False, "pass"),  # max 1.09 <= 1.10
        ([1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.10], False, "pass"),  # at the limit is within
        ([1.11, 1.12, 1.13, 1.14, 1.15, 1.16, 1.17, 1.18, 1.30], False, "fail"),  # min 1.11 > 1.10
        ([1.00, 1.12, 1.13, 1.14, 1.15, 1.16, 1.17, 1.18, 1.30], False, "inconclusive"),  # one round within
        ([1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07], False, "inconclusive"),  # 8 rounds: no interval
        ([1.11, 1.12, 1.13, 1.14, 1.15, 1.16, 1.17, 1.18, 1.30], True, "pass"),  # a rate at least 1.10
        ([1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.09], True, "fail"),
    ],
)
def test_decide_on_nine_rounds(ratios: list[float], higher_is_better: bool, outcome: str) -> None:
    decision = decide(ratios, LIMIT, higher_is_better=higher_is_better)
    assert decision.outcome == outcome
    assert decision.rounds == len(ratios)
    assert decision.confidence == pytest.approx(1 - 2 * ALPHA / len(LOOKS))


def test_a_percentile_passes_on_either_limit_and_fails_only_beyond_both() -> None:
    budget = RelativeBudget("b", "a", "p50_ms", max_ratio=1.10, max_added_ms=1.0)
    over_ratio = [1.20 + i / 100 for i in range(9)]
    small = [0.5] * 9  # +0.5 ms: within the added milliseconds
    assert judge_rounds(budget, (over_ratio, small))[0].outcome == "pass"
    assert judge_rounds(budget, (over_ratio, [2.0] * 9))[0].outcome == "fail"
    assert judge_rounds(budget, (over_ratio, [0.5] * 4 + [2.0] * 5))[0].outcome == "inconclusive"


def sequential(rule: Rule, true_ratio: float, sigma: float, rng: random.Random) -> tuple[str, int]:
    """One simulated verdict: rounds drawn until the rule answers at a look, or the last look."""
    ratios: list[float] = []
    outcome = "inconclusive"
    for look in LOOKS:
        while len(ratios) < look:
            ratios.append(math.exp(rng.gauss(math.log(true_ratio), sigma)))
        outcome = rule(ratios, LIMIT)
        if outcome != "inconclusive":
            break
    return outcome, len(ratios)


def rates(rule: Rule, true_ratio: float, sigma: float, draws: int = 4000) -> dict[str, float]:
    rng = random.Random(f"{true_ratio}:{sigma}")
    outcomes = [sequential(rule, true_ratio, sigma, rng)[0] for _ in range(draws)]
    return {o: outcomes.count(o) / draws for o in ("pass", "fail", "inconclusive")}


def interval_rule(ratios: Sequence[float], limit: float) -> str:
    return decide(ratios, limit).outcome


def point_estimate_rule(ratios: Sequence[float], limit: float) -> str:
    """The planted wrong rule: the median against the limit, blind to how sure it is."""
    return "pass" if statistics.median(ratios) <= limit else "fail"


def error_rate_problems(rule: Rule, sigma: float) -> list[str]:
    """What the issue's bar says of ``rule`` (limit 1.10x): false alarms at 1.00 and at the limit itself at most
    1%, detection 10% beyond the limit (1.21x) at least 95%, inconclusive at most 5% at 1.00 and 1.21x."""
    problems = []
    clean, at_limit, beyond = rates(rule, 1.00, sigma), rates(rule, LIMIT, sigma), rates(rule, LIMIT * 1.10, sigma)
    if clean["fail"] > 0.01:
        problems.append(f"false alarms at 1.00x: {clean['fail']:.2%}")
    if at_limit["fail"] > ALPHA:
        problems.append(f"false alarms at the limit: {at_limit['fail']:.2%}")
    if at_limit["pass"] > ALPHA:
        problems.append(f"misses at the limit: {at_limit['pass']:.2%}")
    if beyond["fail"] < 0.95:
        problems.append(f"detection at 1.21x: {beyond['fail']:.2%}")
    for name, found in (("1.00x", clean), ("1.21x", beyond)):
        if found["inconclusive"] > 0.05:
            problems.append(f"inconclusive at {name}: {found['inconclusive']:.2%}")
    return problems


@pytest.mark.parametrize("sigma", [0.03, 0.05, 0.08])
def test_the_rule_meets_the_error_rates_on_log_normal_rounds(sigma: float) -> None:
    # sigma: the per-round ratio's spread (log scale); 0.08 is more than two CPU hogs gave on 2 cores
    assert error_rate_problems(interval_rule, sigma) == []


def test_a_planted_point_estimate_rule_is_caught() -> None:
    # at the limit itself the median of the rounds is over it half the time: a point-estimate rule cries wolf
    problems = error_rate_problems(point_estimate_rule, 0.05)
    assert any(p.startswith("false alarms at the limit") for p in problems), problems
    assert any(p.startswith("misses at the limit") for p in problems), problems


def test_a_sample_straddling_the_limit_is_not_a_fail() -> None:
    # median 1.12 over the limit, but four of nine rounds within: the interval straddles it
    ratios = [1.02, 1.04, 1.06, 1.08, 1.12, 1.14, 1.16, 1.18, 1.20]
    assert point_estimate_rule(ratios, LIMIT) == "fail"
    decision = decide(ratios, LIMIT)
    assert decision.outcome == "inconclusive"
    assert decision.interval == (1.02, 1.20)
