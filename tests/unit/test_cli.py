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


def test_docs_prints_the_pages_shipped_in_the_package() -> None:
    listed = run_cli("docs")
    assert listed.returncode == 0
    assert set(listed.stdout.split()) == {p.stem for p in (ROOT / "docs").glob("*.md")}
    page = run_cli("docs", "contracts")
    assert page.stdout == (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")
    unknown = run_cli("docs", "nope")
    assert unknown.returncode == 2
    assert "page='nope': expected one of architecture, contracts," in unknown.stderr


def test_usage_names_the_command_as_invoked() -> None:
    script = Path(sys.executable).with_name("pytest-triton")
    as_script = subprocess.run([str(script), "init", "-h"], capture_output=True, text=True, cwd=ROOT)
    assert as_script.stdout.startswith("usage: pytest-triton init "), as_script.stdout
    assert run_cli("init", "-h").stdout.startswith("usage: python -m pytest_triton init ")
    assert run_cli("-h").stdout.startswith("usage: python -m pytest_triton ")
