"""The README's examples are real: each marked block runs as written, in a project of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example(name: str) -> str:
    """The fenced code block between ``<!-- example: NAME -->`` and ``<!-- /example -->`` in README.md."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {re.escape(name)}( [^>]*)? -->\n```\w*\n(.*?)```\n<!-- /example -->", text, re.S)
    assert match, f"README.md has no example {name!r}"
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
    """The README's lint block is what the command prints today (stdout, then the summary on stderr)."""
    import subprocess
    import sys

    block = readme_example("lint-broken")
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
    assert shown == done.stdout + done.stderr, "README.md's lint example is out of date: paste the real output"
