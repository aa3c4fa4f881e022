"""The latency contracts through pytest: relative budgets asserted, absolute ones reported, the unstable choice.

Every request advances a fake clock by a scripted amount, so nothing here depends on the machine's speed.
"""

from __future__ import annotations

import json
import warnings

import pytest

from tests.fake_clock import write_fake_clock

BUDGETS = """
[fake-ci]
source = "made up for the test"
tolerance = 0.0
enforce_absolute = false
enforce_reason = "a shared runner: the neighbours set the absolute numbers"

[fake-ci.plain]
p50_ms = 5

[[fake-ci.relative]]
name = "ensemble overhead"
variant = "ens"
baseline = "plain"
max_ratio = 1.2

[[fake-ci.relative]]
variant = "ens"
baseline = "plain"
metric = "samples_per_s"
min_ratio = 0.8

[fake-gpu]
source = "made up for the test"
tolerance = 0.0

[fake-gpu.plain]
p50_ms = 5
"""

TEST_FILE = """
import os

from fake_clock import FakeMachine

from pytest_triton.bench.sampling import WindowPolicy

RATIO = float(os.environ["RATIO"])
JITTER_MS = float(os.environ.get("JITTER_MS", "0"))


def test_side_by_side(triton_bench):
    # plain opens every round: the whole machine is 3x slower every other round; every other window of ens
    # only is JITTER_MS slower: its ratio swings
    machine = FakeMachine(slow_pace=3.0)
    plain = lambda ms: machine.call("plain", ms, sets_pace=True)
    ens = lambda ms: machine.call("ens", ms, odd_window_extra_ms=JITTER_MS)
    triton_bench.clock = machine.clock
    result = triton_bench.measure_interleaved(
        {"plain": plain(10), "ens": ens(10 * RATIO)},
        throughput_calls={"plain": plain(40), "ens": ens(40 * RATIO)},
        policy=WindowPolicy(window_requests=5, max_windows=6),
        warmup=0,
    )
    triton_bench.check(result)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".toml", budgets=BUDGETS)
    pytester.makepyfile(test_contract=TEST_FILE)
    write_fake_clock(pytester.path)
    return pytester


def _run(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str, **env: str) -> pytest.RunResult:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # in process, the session would inherit this repository's filterwarnings = error around this test (and count
    # the unsure choices as fail): a user's session starts from the interpreter's defaults
    with warnings.catch_warnings():
        warnings.resetwarnings()
        return project.runpytest("-p", "no:cacheprovider", "--triton-budgets=budgets.toml", *args)


def test_relative_budgets_hold_while_absolute_numbers_are_only_reported(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(project, monkeypatch, "--triton-hardware=fake-ci", "--triton-report=out/report", RATIO="1.1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*triton latency*",
            "plain *REPORT-ONLY: over budget*not asserted here (fake-ci: a shared runner*",
            "ensemble overhead*plain*1.100×*PASSED",
            "ens vs plain samples_per_s*0.909×*PASSED",
            "relative budgets of 'fake-ci' are asserted; absolute numbers are reported, not asserted (a shared "
            "runner: the neighbours set the absolute numbers); triton_unstable=warn, triton_inconclusive=warn",
        ]
    )
    data = json.loads((project.path / "out" / "report.json").read_text())
    assert [r["status"] for r in data["relative"]] == ["pass", "pass"]
    assert data["relative"][0]["ratio"] == pytest.approx(1.1)
    assert data["provenance"]["hardware"] == "fake-ci"
    assert data["provenance"]["unstable"] == "warn"
    assert data["provenance"]["inconclusive"] == "warn"
    assert {r["variant"]: r["interleaved_with"] for r in data["results"]} == {"plain": ["ens"], "ens": ["plain"]}


def test_a_relative_budget_over_its_limit_fails_with_both_numbers(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(project, monkeypatch, "--triton-hardware=fake-ci", RATIO="1.5")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*relative budget fail: ensemble overhead on 'fake-ci': p50_ms * ms; "
            "paired per round: 1.500× [[]1.500, 1.500[]]× (99.5%) (+*), median of 9: beyond ≤ 1.200×",
            "*budget: ens p50_ms ≤1.2× of plain ±0%*",
        ]
    )


def test_an_open_ratio_is_inconclusive_warns_by_default_and_fails_when_asked(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ens is 2.5 ms slower in every other round only: the rounds' ratios are 1.0 and 1.25 in turn, around 1.2;
    # the outer run's filterwarnings = error reaches the inner one: the warning is shown as such here
    shown = "-W", "default::pytest_triton.errors.TritonInconclusiveWarning"
    warned = _run(project, monkeypatch, "--triton-hardware=fake-ci", *shown, RATIO="1.0", JITTER_MS="2.5")
    warned.assert_outcomes(passed=1, warnings=1)
    warned.stdout.fnmatch_lines(
        [
            "*TritonInconclusiveWarning: relative budget INCONCLUSIVE: ensemble overhead: *"
            "median of 72: neither within nor beyond ≤ 1.200×",
            "ensemble overhead*[[]1.000, 1.250[]]×*INCONCLUSIVE",
        ]
    )
    failed = _run(
        project, monkeypatch, "--triton-hardware=fake-ci", "--triton-inconclusive=fail", RATIO="1.0", JITTER_MS="2.5"
    )
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*relative budget inconclusive: ensemble overhead*"])


def test_the_ini_chooses_too_and_a_bad_value_is_a_usage_error(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makeini("[pytest]\ntriton_inconclusive = fail\n")
    failed = _run(project, monkeypatch, "--triton-hardware=fake-ci", RATIO="1.0", JITTER_MS="2.5")
    failed.assert_outcomes(failed=1)
    for option in ("triton_unstable", "triton_inconclusive"):
        project.makeini(f"[pytest]\n{option} = maybe\n")
        bad = _run(project, monkeypatch, "--triton-hardware=fake-ci", RATIO="1.0")
        assert bad.ret != 0
        bad.stderr.fnmatch_lines([f"*{option}='maybe': expected warn or fail*"])


def test_absolute_budgets_are_asserted_on_known_hardware(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fake-gpu has no enforce_absolute = false: plain's p50 of 10 ms (or 30 ms in slow rounds) > 5 ms fails
    result = _run(project, monkeypatch, "--triton-hardware=fake-gpu", RATIO="1.0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*latency budget fail: variant 'plain' on 'fake-gpu'*", "*p50_ms * ms > 5.00 ms*"])
