"""Relative budgets and per-hardware enforcement: parsing, verdicts on synthetic samples, the unstable choice."""

from __future__ import annotations

import pytest

from pytest_triton.bench.absolute import evaluate
from pytest_triton.bench.budgets import parse_budgets
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import evaluate_relative
from pytest_triton.bench.results import assert_contracts
from pytest_triton.bench.results import build_result
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WarmupRecord
from pytest_triton.bench.sampling import Window
from pytest_triton.bench.stats import LatencyStats
from pytest_triton.bench.stats import summarize
from pytest_triton.errors import ConfigError
from pytest_triton.errors import TritonUnstableWarning

MS = 1_000_000
FILE = """
[ci-box]
source = "measured on ci-box"
tolerance = 0.25
enforce_absolute = false
enforce_reason = "shared runner: neighbours set the absolute numbers"

[ci-box.plain]
p50_ms = 10
p99_ms = 12
samples_per_s = 100

[[ci-box.relative]]
name = "ensemble overhead"
variant = "ens"
baseline = "plain"
metric = "p50_ms"
max_ratio = 1.2
max_added_ms = 1.0
tolerance = 0.0

[[ci-box.relative]]
variant = "ens"
baseline = "plain"
metric = "samples_per_s"
min_ratio = 0.9
tolerance = 0.1

[gpu]
source = "seed"
[gpu.plain]
p50_ms = 10
"""


def stats(p50_ms: float, *, rate: float = 100.0, batch: int = 1) -> LatencyStats:
    s = summarize([int(p50_ms * MS)] * 5, batch_size=batch)
    return LatencyStats(**{**s.__dict__, "samples_per_s": rate})


def test_the_file_declares_relative_budgets_and_the_hardware_policy() -> None:
    budgets = parse_budgets(FILE, "budgets.toml")
    policy = budgets.policy("ci-box")
    assert (policy.enforce_absolute, policy.reason) == (False, "shared runner: neighbours set the absolute numbers")
    assert budgets.policy("gpu").enforce_absolute
    assert budgets.policy("unknown").enforce_absolute
    overhead, rate = budgets.relative["ci-box"]
    assert (overhead.label, overhead.metric, overhead.max_ratio, overhead.max_added_ms) == (
        "ensemble overhead",
        "p50_ms",
        1.2,
        1.0,
    )
    assert (overhead.tolerance, overhead.source) == (0.0, "measured on ci-box")
    assert (rate.label, rate.min_ratio, rate.tolerance) == ("ens vs plain samples_per_s", 0.9, 0.1)
    assert budgets.relative_budgets("ci-box", {"ens", "plain"}) == (overhead, rate)
    assert budgets.relative_budgets("ci-box", {"plain"}) == ()
    assert "ens" not in budgets.budgets["ci-box"]
    assert "relative" not in budgets.budgets["ci-box"]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('variant = "a"\nmax_ratio = 1.1', r"ci\.relative\[0\]: no baseline"),
        ('variant = "a"\nbaseline = "b"', r"no limit; give max_ratio or max_added_ms"),
        ('variant = "a"\nbaseline = "b"\nmetric = "p42_ms"\nmax_ratio = 1', r"metric='p42_ms': expected one of"),
        ('variant = "a"\nbaseline = "b"\nmin_ratio = 0.9', r"min_ratio: not a limit of metric='p50_ms'"),
        (
            'variant = "a"\nbaseline = "b"\nmax_ratio = -1',
            r"relative\[0\].max_ratio=-1: expected a limit, a finite number in \(0, 1,000\]",
        ),
        ('variant = "a"\nbaseline = "b"\nmax_ratio = 1\nspeed = 3', r"relative\[0\]\.speed: unknown key"),
    ],
)
def test_bad_relative_entries_name_the_entry_and_the_line(entry: str, message: str) -> None:
    text = f'[ci]\nsource = "x"\n\n[[ci.relative]]\n{entry}\n'
    with pytest.raises(ConfigError, match=message) as info:
        parse_budgets(text, "b.toml")
    assert "b.toml:" in str(info.value)


def test_not_enforcing_absolute_budgets_needs_a_reason() -> None:
    with pytest.raises(ConfigError, match="enforce_absolute=false needs enforce_reason"):
        parse_budgets('[ci]\nsource = "x"\nenforce_absolute = false\n', "b.toml")
    with pytest.raises(ConfigError, match="expected true or false"):
        parse_budgets('[ci]\nsource = "x"\nenforce_absolute = "no"\n', "b.toml")


def test_absolute_numbers_not_enforced_are_checked_and_reported_not_failed() -> None:
    budgets = parse_budgets(FILE, "budgets.toml")
    budget = budgets.lookup("ci-box", "plain")
    verdict = evaluate(budget, stats(30.0), policy=budgets.policy("ci-box"))
    assert verdict.status == "report-only"
    assert verdict.reason.startswith("over budget, not asserted here (ci-box: shared runner: neighbours set")
    assert [c.ok for c in verdict.checks] == [False, False, None]  # checked and shown, samples/s not measured at b=8
    enforced = evaluate(budgets.lookup("gpu", "plain"), stats(30.0), policy=budgets.policy("gpu"))
    assert enforced.status == "fail"


def _budget(**kw: object) -> RelativeBudget:
    fields: dict[str, object] = {
        "hardware": "hw",
        "variant": "ens",
        "baseline": "plain",
        "metric": "p50_ms",
        "source": "s",
        "tolerance": 0.0,
    }
    return RelativeBudget(**{**fields, **kw})  # type: ignore[arg-type]


def _rounds(mine: float, theirs: float, n: int = 9) -> tuple[list[float], list[float]]:
    """``n`` paired rounds that all agree: the ratio and difference of the two figures."""
    return [mine / theirs] * n, [mine - theirs] * n


@pytest.mark.parametrize(
    ("mine", "theirs", "status"),
    [
        (11.0, 10.0, "pass"),  # 1.1x, +1 ms: both within
        (12.5, 10.0, "fail"),  # 1.25x and +2.5 ms: neither
        (60.0, 50.0, "pass"),  # 1.2x: the ratio allows it though +10 ms does not
        (2.9, 2.0, "pass"),  # 1.45x, but only +0.9 ms: the difference allows it
    ],
)
def test_a_percentile_passes_within_the_ratio_or_the_added_milliseconds(
    mine: float, theirs: float, status: str
) -> None:
    budget = _budget(max_ratio=1.2, max_added_ms=1.0)
    result = evaluate_relative(budget, stats(mine), stats(theirs), paired=_rounds(mine, theirs))
    assert result.status == status, result.reason
    assert result.variant_value == mine
    assert result.baseline_value == theirs
    assert result.ratio == pytest.approx(mine / theirs)
    assert result.added == pytest.approx(mine - theirs)


def test_reported_with_both_numbers_the_ratio_and_its_interval() -> None:
    paired = ([1.08, 1.09, 1.10, 1.10, 1.10, 1.10, 1.11, 1.11, 1.12], [1.5] * 9)
    result = evaluate_relative(_budget(max_ratio=1.2), stats(16.5), stats(15.0), paired=paired)
    assert result.reason == (
        "p50_ms 16.50 vs 15.00 ms; paired per round: 1.100× [1.080, 1.120]× (99.5%) (+1.50 ms), median of 9: "
        "within ≤ 1.200×"
    )
    assert (result.interval, result.rounds) == ((1.08, 1.12), 9)
    over = evaluate_relative(_budget(max_ratio=1.05, tolerance=0.02), stats(16.5), stats(15.0), paired=paired)
    assert over.status == "fail"
    assert over.reason.endswith("median of 9: beyond ≤ 1.071×")


def test_tolerance_widens_the_limits() -> None:
    budget = _budget(max_ratio=1.0, max_added_ms=1.0, tolerance=0.25)
    assert (budget.allowed_ratio(), budget.allowed_added_ms()) == (1.25, 1.25)
    assert evaluate_relative(budget, stats(12.4), stats(10.0), paired=_rounds(12.4, 10.0)).status == "pass"
    assert evaluate_relative(budget, stats(12.6), stats(10.0), paired=_rounds(12.6, 10.0)).status == "fail"
    rate = _budget(metric="samples_per_s", min_ratio=1.0, tolerance=0.1)
    assert rate.allowed_ratio() == pytest.approx(0.9)
    assert evaluate_relative(rate, stats(1, rate=91.0), stats(1, rate=100.0), paired=_rounds(91, 100)).status == "pass"
    result = evaluate_relative(rate, stats(1, rate=89.0), stats(1, rate=100.0), paired=_rounds(89, 100))
    assert result.status == "fail"
    assert result.reason.endswith(": beyond ≥ 0.900×")


def test_without_paired_rounds_a_ratio_is_inconclusive() -> None:
    # two pooled figures say nothing of how sure their ratio is, however far over the limit
    result = evaluate_relative(_budget(max_ratio=1.2), stats(30.0), stats(10.0))
    assert result.status == "inconclusive"
    assert result.reason == "p50_ms 30.000 vs 10.000: no paired rounds to judge on: inconclusive"


@pytest.mark.parametrize(
    ("rounds", "status"),
    [
        ((1.10, 1.15, 1.30, 1.35, 1.40, 1.45, 1.45, 1.50, 1.50), "inconclusive"),  # one round within the limit
        ((1.22, 1.26, 1.30, 1.35, 1.40, 1.45, 1.45, 1.50, 1.50), "fail"),  # every round over it
        ((1.22, 1.26, 1.30, 1.35, 1.40, 1.45, 1.45, 1.50), "inconclusive"),  # 8 rounds: no interval yet
    ],
)
def test_rounds_over_budget_fail_only_when_the_interval_is_wholly_over(rounds: tuple[float, ...], status: str) -> None:
    budget = _budget(max_ratio=1.2)
    diffs = [10.0 * (r - 1.0) for r in rounds]  # a 10 ms baseline, no added-ms limit
    result = evaluate_relative(budget, stats(13.0), stats(10.0), paired=(list(rounds), diffs))
    assert result.status == status, result.reason


def test_a_rate_with_rounds_on_both_sides_is_inconclusive() -> None:
    budget = _budget(metric="samples_per_s", min_ratio=0.9)
    rounds = [0.80, 0.82, 0.85, 0.86, 0.87, 0.88, 0.89, 0.95, 0.97]  # median 0.87 < 0.9, two rounds within
    diffs = [100.0 * (r - 1.0) for r in rounds]
    result = evaluate_relative(budget, stats(1, rate=86.0), stats(1, rate=100.0), paired=(rounds, diffs))
    assert result.status == "inconclusive", result.reason
    assert result.reason.endswith("neither within nor beyond ≥ 0.900×")


def test_a_variant_not_measured_side_by_side_is_not_measured() -> None:
    result = evaluate_relative(_budget(max_ratio=1.2), None, stats(10.0))
    assert result.status == "not-measured"
    assert result.reason == "'ens' was not measured side by side in this run"


def _measurement(latencies_ms: list[float], *, stable: bool) -> Measurement:
    ns = tuple(int(v * MS) for v in latencies_ms)
    return Measurement(
        ns, sum(ns), 1, stable, "stable" if stable else "unstable: spread 97%", (Window(ns, sum(ns)),), WarmupRecord()
    )


@pytest.mark.parametrize(
    ("latency_ms", "stable", "choice", "fails"),
    [
        (9.0, True, "warn", False),
        (9.0, False, "warn", False),  # within budget, unstable: warned
        (9.0, False, "fail", True),  # within budget, unstable: the user chose fail
        (20.0, False, "warn", True),  # over budget: fails whatever the choice
        (20.0, True, "warn", True),
    ],
)
def test_the_unstable_choice(latency_ms: float, stable: bool, choice: str, fails: bool) -> None:
    budgets = parse_budgets(FILE, "budgets.toml")
    result = build_result("plain", "gpu", _measurement([latency_ms] * 3, stable=stable), budgets=budgets)
    if fails:
        with pytest.raises(AssertionError, match=r"latency budget (fail|unstable): variant 'plain' on 'gpu'"):
            assert_contracts([result], unstable=choice)  # type: ignore[arg-type]
    elif not stable:  # passed, unstable: the plugin's own warning
        with pytest.warns(TritonUnstableWarning, match="passed, unstable: plain: within budget"):
            assert_contracts([result], unstable=choice)  # type: ignore[arg-type]
    else:
        assert_contracts([result], unstable=choice)  # type: ignore[arg-type]


def test_relative_failures_are_listed_together_with_their_budget() -> None:
    fail = evaluate_relative(
        _budget(max_ratio=1.1, name="overhead"), stats(13.0), stats(10.0), paired=_rounds(13.0, 10.0)
    )
    paired = ([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8], [0.0] * 9)
    inconclusive = evaluate_relative(_budget(max_ratio=1.5), stats(11.0), stats(10.0), paired=paired, stability="why")
    assert inconclusive.status == "inconclusive"
    assert_contracts([], [inconclusive], inconclusive="warn")
    with pytest.raises(AssertionError) as info:
        assert_contracts([], [fail, inconclusive], inconclusive="fail")
    text = str(info.value)
    assert "relative budget fail: overhead on 'hw': p50_ms 13.00 vs 10.00 ms; paired per round: 1.300×" in text
    assert "relative budget inconclusive: ens vs plain p50_ms on 'hw'" in text
    assert "stability: why" in text
