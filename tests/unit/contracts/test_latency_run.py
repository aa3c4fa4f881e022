"""A declared relative budget on a fake clock: the pair alternates window by window (the bench's interleaved
measurement), the declared ratio and the budget file's relative budgets of the pair are judged on it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_triton.bench.budgets import load_budgets
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.contracts.latency_run import judge_pair
from tests.fake_clock import FakeMachine

POLICY = WindowPolicy(window_requests=4, stable_windows=3, max_windows=6)

BUDGETS = """\
[cpu-test]
source = "unit test"
tolerance = 0.0

[[cpu-test.relative]]
name = "overhead (p50)"
variant = "served"
baseline = "inprocess"
metric = "p50_ms"
max_ratio = 1.1

[[cpu-test.relative]]
name = "throughput"
variant = "served"
baseline = "inprocess"
metric = "samples_per_s"
min_ratio = 0.5

[[cpu-test.relative]]
name = "another pair"
variant = "served"
baseline = "elsewhere"
metric = "p50_ms"
max_ratio = 1.0
"""


def _rule(max_ratio: float) -> RelativeBudget:
    return RelativeBudget("served-variant", "reference", "p50_ms", max_ratio=max_ratio, name="served-variant/reference")


def test_the_pair_alternates_and_the_declared_ratio_is_judged() -> None:
    m = FakeMachine()
    calls = {"inprocess": m.call("inprocess", 10), "served": m.call("served", 12)}
    outcome = judge_pair(_rule(1.5), calls, source="c.toml", hardware="cpu-test", policy=POLICY, clock=m.clock)
    assert m.order[:16] == ["inprocess"] * 4 + ["served"] * 4 + ["inprocess"] * 4 + ["served"] * 4
    declared = outcome.declared
    assert declared.status == "pass"
    assert declared.ratio == pytest.approx(1.2)
    assert declared.rounds == 9  # every round 1.2x: decided at the first look
    assert declared.interval == pytest.approx((1.2, 1.2))
    assert "decided at look 1 of 4 (9 rounds)" in outcome.settled
    assert (declared.budget.variant, declared.budget.baseline) == ("served", "inprocess")
    assert declared.budget.label == "c.toml: latency[served-variant/reference] p50"
    assert outcome.ok
    assert outcome.from_budgets == ()
    assert outcome.message().startswith(
        "relative latency passed: 'served-variant' / 'reference' p50_ms = 1.200 [1.200, 1.200]× "
        "(budget <= 1.5); passed: "
    )


def test_over_the_declared_ratio_fails() -> None:
    m = FakeMachine()
    calls = {"inprocess": m.call("inprocess", 10), "served": m.call("served", 12)}
    outcome = judge_pair(_rule(1.1), calls, hardware="cpu-test", policy=POLICY, clock=m.clock)
    assert outcome.declared.status == "fail"
    assert not outcome.ok
    assert outcome.message().startswith("relative latency failed:")


def test_the_budget_files_relative_budgets_of_the_pair_are_judged_too(tmp_path: Path) -> None:
    (tmp_path / "budgets.toml").write_text(BUDGETS)
    m = FakeMachine()
    calls = {"inprocess": m.call("inprocess", 10), "served": m.call("served", 12)}
    rate = {"inprocess": m.call("inprocess-b8", 40), "served": m.call("served-b8", 100)}
    outcome = judge_pair(
        _rule(1.5),
        calls,
        throughput_calls=rate,
        throughput_batch_size=8,
        budgets=load_budgets(tmp_path / "budgets.toml"),
        hardware="cpu-test",
        policy=POLICY,
        clock=m.clock,
    )
    # "another pair" names a variant not measured here: not judged on this measurement
    assert [(r.budget.label, r.status) for r in outcome.from_budgets] == [
        ("overhead (p50)", "fail"),  # 1.2 > 1.1
        ("throughput", "fail"),  # 0.4 < 0.5
    ]
    assert outcome.from_budgets[1].ratio == pytest.approx(0.4)
    assert "served-b8" in m.order  # samples/s were measured, interleaved, because a budget needs them
    assert not outcome.ok
    assert "budget file: overhead (p50): failed:" in outcome.message()


def test_samples_per_s_are_measured_only_when_a_budget_needs_them() -> None:
    m = FakeMachine()
    calls = {"inprocess": m.call("inprocess", 10), "served": m.call("served", 12)}
    rate = {"inprocess": m.call("inprocess-b8", 40), "served": m.call("served-b8", 100)}
    judge_pair(_rule(1.5), calls, throughput_calls=rate, policy=POLICY, clock=m.clock)
    assert "served-b8" not in m.order


def _straddling(m: FakeMachine) -> dict[str, Callable[[], None]]:
    """A pair whose per-round ratio is 1.0 and 3.0 in turn: a limit of 2.0 is never decided."""
    jitter = iter([10.0, 30.0] * 1000)

    def noisy() -> None:
        m.advance("served", next(jitter))

    return {"inprocess": m.call("inprocess", 10), "served": noisy}


def test_an_open_pair_is_measured_to_the_last_look_then_warns_or_fails_by_policy() -> None:
    policy = WindowPolicy(window_requests=3, stable_windows=3, max_windows=4)
    m = FakeMachine()
    warned = judge_pair(_rule(2.0), _straddling(m), policy=policy, clock=m.clock, inconclusive="warn")
    assert warned.declared.status == "inconclusive"
    assert warned.declared.rounds == 72  # more rounds only while open: every look taken
    assert warned.ok
    assert warned.open == (warned.declared,)
    assert "still open at the last look (72 rounds)" in warned.settled
    m = FakeMachine()
    failed = judge_pair(_rule(2.0), _straddling(m), policy=policy, clock=m.clock, inconclusive="fail")
    assert failed.declared.status == "inconclusive"
    assert not failed.ok


def test_no_look_starts_that_would_not_fit_in_the_time_budget() -> None:
    m = FakeMachine()
    policy = WindowPolicy(window_requests=3, stable_windows=3, max_windows=4)
    # a round takes about 0.09 s: looks at 9 and 18 rounds fit in 3 s, the one at 36 would not
    outcome = judge_pair(_rule(2.0), _straddling(m), policy=policy, clock=m.clock, verdict_seconds=3.0)
    assert outcome.declared.status == "inconclusive"
    assert outcome.declared.rounds == 18
    assert "the next look at 36 rounds would take about 3.2 s, over max_seconds=3" in outcome.settled


def test_a_pair_is_two_calls() -> None:
    with pytest.raises(ValueError, match="compares two calls"):
        judge_pair(_rule(1.5), {"a": lambda: None})
