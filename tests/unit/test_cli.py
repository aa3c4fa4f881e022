from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_triton", *args], capture_output=True, text=True, cwd=ROOT)


def test_lint_broken_example_exits_1_with_flake8_style_lines() -> None:
    result = run_cli("lint", "model_repos/broken")
    assert result.returncode == 1
    assert (
        "model_repos/broken/classifier/config.pbtxt:7:3: C001 failed to read text proto from "
        'classifier/config.pbtxt: Expected ",", found "{"' in (result.stdout)
    )
    assert "  hint: " in result.stdout


def test_lint_json_has_exactly_the_documented_keys() -> None:
    result = run_cli("lint", "--format", "json", "model_repos/broken")
    findings = json.loads(result.stdout)
    assert findings
    assert {tuple(sorted(f)) for f in findings} == {("col", "hint", "line", "message", "path", "rule", "severity")}


def test_lint_clean_example_exits_0() -> None:
    result = run_cli("lint", "model_repos/examples")
    assert result.returncode == 0, result.stdout
    assert result.stdout == ""


def test_usage_error_exits_2() -> None:
    assert run_cli("lint").returncode == 2
    assert run_cli("lint", "--format", "yaml", "x").returncode == 2


def test_rules_lists_every_family_with_unique_ids() -> None:
    result = run_cli("rules")
    assert result.returncode == 0
    ids = [line.split()[0] for line in result.stdout.splitlines()]
    assert len(ids) == len(set(ids)) > 100
    assert {rule[0] for rule in ids} == {"A", "C", "D", "E", "L", "O", "S", "X"}
