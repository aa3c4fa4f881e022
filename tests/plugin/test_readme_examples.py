"""The examples of README.md and docs/ are real: each marked block runs as written, in a project of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
LINT_PAGE = README.parent / "docs" / "lint.md"


def readme_example(name: str, page: Path = README) -> str:
    """The fenced code block between ``<!-- example: NAME -->`` and ``<!-- /example -->`` in ``page``."""
    text = page.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {re.escape(name)}( [^>]*)? -->\n```\w*\n(.*?)```\n<!-- /example -->", text, re.S)
    assert match, f"{page.relative_to(README.parent)} has no example {name!r}"
    return match.group(2)


@pytest.mark.xdist_group("embedded-triton")
def test_first_serving_test_runs_as_written(pytester: pytest.Pytester) -> None:
    pytest.importorskip(
        "pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')"
    )
    pytester.makepyfile(test_first=readme_example("first-serving-test"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*adapted: dense: no onnxruntime backend in this server*"])


def test_lint_example_is_the_real_output() -> None:
    """The lint block of docs/lint.md is what the command prints today (stdout, then the summary on stderr)."""
    import subprocess
    import sys

    block = readme_example("lint-broken", LINT_PAGE)
    command, _, shown = block.partition("\n")
    assert command == "$ python -m pytest_triton lint model_repos/broken"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_triton", "lint", "model_repos/broken"],
        cwd=README.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert shown == done.stdout + done.stderr, "docs/lint.md's lint example is out of date: paste the real output"
