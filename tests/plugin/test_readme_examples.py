"""The README's examples are real: each marked block runs as written, in a project of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example(name: str) -> str:
    """The fenced code block between ``<!-- example: NAME -->`` and ``<!-- /example -->`` in README.md."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {re.escape(name)} -->\n```\w*\n(.*?)```\n<!-- /example -->", text, re.S)
    assert match, f"README.md has no example {name!r}"
    return match.group(1)


@pytest.mark.xdist_group("embedded-triton")
def test_first_serving_test_runs_as_written(pytester: pytest.Pytester) -> None:
    pytest.importorskip(
        "pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')"
    )
    pytester.makepyfile(test_first=readme_example("first-serving-test"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*adapted: dense: no onnxruntime backend in this server*"])
