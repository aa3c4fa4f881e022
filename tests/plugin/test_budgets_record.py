"""--triton-budgets-record and --triton-budgets-margin as a user meets them (the recorded file itself:
tests/unit/bench/test_budgets_record.py; the whole path from a wheel: tests/integration/install/test_first_day.py)."""

from __future__ import annotations

import pytest


def test_a_bad_margin_stops_the_run_before_any_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:xdist", "--triton-budgets-margin", "0.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--triton-budgets-margin='0.5': expected a factor from 1 to 1000*"])


def test_a_run_without_latency_rows_says_nothing_was_recorded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:xdist", "--triton-budgets-record", "budgets.toml")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*triton budgets*", "budgets not recorded: no latency row was measured*"])
    assert not (pytester.path / "budgets.toml").exists()
