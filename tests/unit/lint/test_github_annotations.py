"""``lint --format github``: every finding as a GitHub Actions annotation, escaped as GitHub's workflow commands
require (the message: ``%``, CR, LF; a property: those and ``:``, ``,``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_triton.lint.finding import Finding
from pytest_triton.lint.github import annotation
from pytest_triton.lint.github import escape_data
from pytest_triton.lint.github import escape_property

ROOT = Path(__file__).resolve().parents[3]


def lint_github(*paths: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest_triton", "lint", "--format", "github", *paths]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False, timeout=120)


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("plain", "plain", "plain"),
        ("100% sure", "100%25 sure", "100%25 sure"),
        ("a\nb\r\nc", "a%0Ab%0D%0Ac", "a%0Ab%0D%0Ac"),
        ("x: 1, y: 2", "x: 1, y: 2", "x%3A 1%2C y%3A 2"),
        ("%3A", "%253A", "%253A"),  # an escape already in the text stays text
    ],
)
def test_messages_and_properties_are_escaped_as_github_requires(text: str, data: str, prop: str) -> None:
    assert escape_data(text) == data
    assert escape_property(text) == prop


def test_a_finding_becomes_one_annotation_line_with_its_hint() -> None:
    finding = Finding("m/a,b:c/config.pbtxt", 7, 3, "C001", "error", 'Expected ",", found "{"', "fix it: 100%")
    assert annotation(finding) == (
        "::error file=m/a%2Cb%3Ac/config.pbtxt,line=7,col=3,title=C001::"
        'C001 Expected ",", found "{"%0Ahint: fix it: 100%25'
    )


def test_severities_map_to_error_warning_and_notice_and_a_folder_has_no_line() -> None:
    levels = [annotation(Finding("m", 0, 0, "L101", s, "x")).split(" ", 1)[0] for s in ("error", "warning", "info")]
    assert levels == ["::error", "::warning", "::notice"]
    assert annotation(Finding("m", 0, 0, "L101", "error", "x")) == "::error file=m,title=L101::L101 x"


def test_the_cli_prints_one_annotation_per_finding_and_exits_1_on_errors() -> None:
    done = lint_github("model_repos/broken")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines, done.stderr
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines), lines
    assert (
        "::error file=model_repos/broken/classifier/config.pbtxt,line=7,col=3,title=C001::C001 failed to read text "
        'proto from classifier/config.pbtxt: Expected ",", found "{"%0Ahint: ' in done.stdout
    )
    assert any(
        line.startswith("::warning file=model_repos/broken/trt_cache_in_tmp/config.pbtxt,line=") for line in lines
    )


def test_a_clean_repository_prints_no_annotation() -> None:
    done = lint_github("model_repos/examples")
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
