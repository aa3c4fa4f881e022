"""Every channel says what pytest says: for every item of a run, pytest's own outcome (JUnit XML's testcase)
agrees with the item's word in the terminal table, the JSON report, the JUnit property, the markdown and the
SVG, and "passed, unstable" is a pytest warning of the plugin's own class; the same for relative budgets, whose
interval may leave the answer "inconclusive" (a warning of the plugin's own class, or a failure under
``--triton-inconclusive fail``). Where a warnings filter (``-W error::...``, an ini ``filterwarnings = error``)
makes those warnings errors, pytest fails the test and every channel says "failed".

The measured calls sleep, so no server is needed and the outcomes are decided by the budgets: one within
budget, one over, one within budget whose windows never settle (stability threshold 0 and an alternating
sleep), one without a budget (report-only) and one whose budget was written on another engine path."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.bench.outcome import OUTCOME_OF
from pytest_triton.bench.outcome import OutcomeWord
from tests.fake_clock import write_fake_clock

BUDGETS = """
[test-hw]
source = "this test"

[test-hw.within]
p50_ms = 1000

[test-hw.over]
p50_ms = 0.001

[test-hw.unsettled]
p50_ms = 1000

[test-hw.elsewhere]
p50_ms = 1000
path = "native"
"""

USER_TESTS = """
import itertools
import time

from pytest_triton.bench.sampling import WindowPolicy

SETTLED = WindowPolicy(window_requests=3, threshold=100.0, stable_windows=2, max_windows=2)
NEVER = WindowPolicy(window_requests=3, threshold=0.0, stable_windows=2, max_windows=2)


def nap():
    time.sleep(0.0005)


def test_within(triton_bench):
    triton_bench.check(triton_bench.measure("within", nap, warmup=1, policy=SETTLED))


def test_over(triton_bench):
    triton_bench.check(triton_bench.measure("over", nap, warmup=1, policy=SETTLED))


def test_unsettled(triton_bench):
    naps = itertools.cycle([0.0002] * 3 + [0.004] * 3)  # window 1 fast, window 2 slow: never within 0%
    call = lambda: time.sleep(next(naps))
    triton_bench.check(triton_bench.measure("unsettled", call, warmup=1, policy=NEVER))


def test_free(triton_bench):
    triton_bench.check(triton_bench.measure("free", nap, warmup=1, policy=SETTLED))


def test_elsewhere(triton_bench):
    triton_bench.check(triton_bench.measure("elsewhere", nap, warmup=1, policy=SETTLED))
"""

EXPECTED: dict[str, OutcomeWord] = {
    "within": "passed",
    "over": "failed",
    "unsettled": "passed, unstable",
    "free": "report-only",
    "elsewhere": "not-comparable",
}


def _pytest_outcomes(junit: Path) -> dict[str, str]:
    outcomes = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        outcomes[case.get("name", "").removeprefix("test_")] = (
            "failed" if failed else "skipped" if skipped else "passed"
        )
    return outcomes


def _junit_words(junit: Path) -> dict[str, str]:
    words = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        for prop in case.iter("property"):
            match = re.fullmatch(r"triton_verdict\[(.+)\]", prop.get("name", ""))
            if match:
                words[match.group(1)] = prop.get("value", "")
    return words


def _table_words(lines: list[str], names: list[str]) -> dict[str, str]:
    """The verdict cell of each variant's row in a text or markdown table (it starts with the word)."""
    words = {}
    known = sorted((w.upper() for w in OUTCOME_OF), key=len, reverse=True)
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")] if line.startswith("|") else re.split(r"\s{2,}", line)
        if cells and cells[0].split(" [")[0] in names:
            last = cells[-1]
            words[cells[0].split(" [")[0]] = next((w.lower() for w in known if last.startswith(w)), last)
    return words


def test_every_channel_says_what_pytest_says(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("budgets.toml").write_text(BUDGETS, encoding="utf-8")
    pytester.makepyfile(test_user=USER_TESTS)
    args = ["-p", "no:cacheprovider", "--triton-hardware", "test-hw", "--triton-budgets", "budgets.toml"]
    result = pytester.runpytest_subprocess(*args, "--triton-report", "out/run", "--junitxml", "junit.xml", "-rA")
    result.assert_outcomes(passed=4, failed=1, warnings=1)
    result.stdout.fnmatch_lines(["*TritonUnstableWarning: passed, unstable: unsettled: *"])
    names = list(EXPECTED)
    pytest_said = _pytest_outcomes(pytester.path / "junit.xml")
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    channels = {
        "terminal": _table_words(result.stdout.lines, names),
        "json": {r["variant"]: r["outcome"] for r in report["results"]},
        "junit": _junit_words(pytester.path / "junit.xml"),
        "markdown": _table_words((pytester.path / "out" / "run.md").read_text().splitlines(), names),
        "svg": {
            name: word.lower()
            for name, word in re.findall(
                r'data-variant="([^"]+)">.*?<text[^>]*text-anchor="end"[^>]*>([^<]+)</text>',
                (pytester.path / "out" / "run.svg").read_text(),
                re.DOTALL,
            )
        },
    }
    for channel, words in channels.items():
        assert words == EXPECTED, f"{channel} says {words}"
    for name, word in EXPECTED.items():
        assert OUTCOME_OF[word] == pytest_said[name], (name, word, pytest_said[name])


def test_passed_unstable_fails_in_every_channel_under_w_error(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("budgets.toml").write_text(BUDGETS, encoding="utf-8")
    pytester.makepyfile(test_user=USER_TESTS)
    args = ["-p", "no:cacheprovider", "--triton-hardware", "test-hw", "--triton-budgets", "budgets.toml", "-rA"]
    args += ["--triton-report", "out/run", "-k", "unsettled"]
    result = pytester.runpytest_subprocess(*args, "-W", "error::pytest_triton.errors.TritonUnstableWarning")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*latency budget unstable: variant 'unsettled'*",
            "*triton_unstable=warn acts as fail: the warnings filter "
            "'error::pytest_triton.errors.TritonUnstableWarning' (-W) makes TritonUnstableWarning an error*",
        ]
    )
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    assert {r["variant"]: r["outcome"] for r in report["results"]} == {"unsettled": "failed"}
    assert _table_words(result.stdout.lines, ["unsettled"]) == {"unsettled": "failed"}


RELATIVE_BUDGETS = """
[test-hw]
source = "this test"
tolerance = 0.0

[[test-hw.relative]]
name = "near"
variant = "near"
baseline = "near-base"
max_ratio = 1.2

[[test-hw.relative]]
name = "far"
variant = "far"
baseline = "far-base"
max_ratio = 1.2

[[test-hw.relative]]
name = "close"
variant = "close"
baseline = "close-base"
max_ratio = 1.2
"""

RELATIVE_TESTS = """
from fake_clock import FakeMachine

from pytest_triton.bench.sampling import WindowPolicy


def judge(triton_bench, name, ratio, jitter_ms=0.0):
    # every request advances a fake clock: the per-round ratios are scripted, not measured on this machine; the
    # variant is jitter_ms slower in every other window of 5 only, so its ratios swing
    machine = FakeMachine()
    triton_bench.clock = machine.clock
    variant = machine.call(name, 10 * ratio, odd_window_extra_ms=jitter_ms, window_requests=5)
    calls = {f"{name}-base": machine.call("base", 10), name: variant}
    policy = WindowPolicy(window_requests=5, max_windows=6)
    triton_bench.check(triton_bench.measure_interleaved(calls, policy=policy, warmup=0))


def test_near(triton_bench):
    judge(triton_bench, "near", 1.1)


def test_far(triton_bench):
    judge(triton_bench, "far", 1.5)


def test_close(triton_bench):
    # ratios 1.0 and 1.25 in turn: the median's interval straddles 1.2 after every look
    judge(triton_bench, "close", 1.0, jitter_ms=2.5)
"""


def _relative_channels(pytester: pytest.Pytester, result: pytest.RunResult, names: list[str]) -> dict[str, Any]:
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    svg = (pytester.path / "out" / "run.svg").read_text()
    return {
        "terminal": _table_words(result.stdout.lines, names),
        "json": {r["budget"]["name"]: r["outcome"] for r in report["relative"]},
        "junit": {k: v for k, v in _junit_words(pytester.path / "junit.xml").items() if k in names},
        "markdown": _table_words((pytester.path / "out" / "run.md").read_text().splitlines(), names),
        "svg": {
            name: word.lower()
            for name, word in re.findall(
                r'data-relative="([^"]+)">.*?<text[^>]*text-anchor="end"[^>]*>([^<]+)</text>', svg, re.DOTALL
            )
        },
    }


@pytest.mark.parametrize(
    ("choice", "filters", "close_word", "outcomes"),
    [
        ("warn", (), "inconclusive", {"passed": 2, "failed": 1, "warnings": 1}),
        ("fail", (), "failed", {"passed": 1, "failed": 2}),
        # the plugin's warnings made errors (-W, or a project's filterwarnings = error): pytest fails the test
        ("warn", ("-W", "error::pytest_triton.errors.PytestTritonWarning"), "failed", {"passed": 1, "failed": 2}),
        ("warn", ("-o", "filterwarnings=error"), "failed", {"passed": 1, "failed": 2}),
    ],
    ids=["warn", "fail", "warn-W-error", "warn-ini-filterwarnings-error"],
)
def test_relative_verdicts_say_inconclusive_as_pytest_does(
    pytester: pytest.Pytester, choice: str, filters: tuple[str, ...], close_word: OutcomeWord, outcomes: dict[str, int]
) -> None:
    pytester.path.joinpath("budgets.toml").write_text(RELATIVE_BUDGETS, encoding="utf-8")
    pytester.makepyfile(test_user=RELATIVE_TESTS)
    write_fake_clock(pytester.path)
    args = ["-p", "no:cacheprovider", "--triton-hardware", "test-hw", "--triton-budgets", "budgets.toml"]
    args += ["--triton-inconclusive", choice, "--triton-report", "out/run", "--junitxml", "junit.xml", "-rA"]
    result = pytester.runpytest_subprocess(*args, *filters)
    result.assert_outcomes(**outcomes)
    if choice == "warn" and not filters:
        result.stdout.fnmatch_lines(["*TritonInconclusiveWarning: relative budget INCONCLUSIVE: close*"])
    if filters:
        result.stdout.fnmatch_lines(["*triton_inconclusive=warn acts as fail: the warnings filter *"])
    expected: dict[str, OutcomeWord] = {"near": "passed", "far": "failed", "close": close_word}
    pytest_said = _pytest_outcomes(pytester.path / "junit.xml")
    for channel, words in _relative_channels(pytester, result, list(expected)).items():
        assert words == expected, f"{channel} says {words}"
    for name, word in expected.items():
        assert OUTCOME_OF[word] == pytest_said[name], (name, word, pytest_said[name])
    report = json.loads((pytester.path / "out" / "run.json").read_text())
    close = next(r for r in report["relative"] if r["budget"]["name"] == "close")
    assert close["status"] == "inconclusive"  # the measurement's finding, whatever the choice makes of it
    assert close["ratio_interval"][0] < 1.2 < close["ratio_interval"][1]
    assert close["rounds"] > 0
