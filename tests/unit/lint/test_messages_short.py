"""A finding is one line a person reads: a list in a config is written out up to a bound, however long it is."""

from __future__ import annotations

from pathlib import Path

from pytest_triton.lint import lint_path
from pytest_triton.lint.rules.schema_common import WRITTEN_VALUES
from pytest_triton.lint.rules.schema_common import fmt_list
from pytest_triton.lint.rules.schema_common import fmt_shape


def test_short_lists_are_written_whole() -> None:
    values = list(range(WRITTEN_VALUES))
    assert fmt_list(values) == "[" + ", ".join(map(str, values)) + "]"
    assert fmt_shape([-1, 3, 224]) == "[-1,3,224]"


def test_a_long_list_keeps_its_ends_and_counts_the_rest() -> None:
    text = fmt_list([7] * 1000 + [-7])
    assert text.endswith(", -7] (1,001 values)")
    assert "... 985 more" in text
    assert len(text) < 120


def test_a_million_dims_make_a_finding_of_one_short_line(tmp_path: Path) -> None:
    model = tmp_path / "m"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text("class TritonPythonModel:\n    pass\n", encoding="utf-8")
    dims = ", ".join(["1"] * 999_999 + ["-7"])
    line = f'input [{{ name: "x" data_type: TYPE_FP32 dims: [ {dims} ] }}]'
    (model / "config.pbtxt").write_text(
        f'name: "m"\nbackend: "python"\nmax_batch_size: 0\n{line}\n'
        'output [{ name: "y" data_type: TYPE_FP32 dims: [ 1 ] }]\n',
        encoding="utf-8",
    )
    findings = [f for f in lint_path(tmp_path) if f.rule == "S229"]
    assert len(findings) == 1
    assert findings[0].message.endswith("-7] (1,000,000 values))")
    assert len(findings[0].message) < 300
    assert (findings[0].line, findings[0].col) == (4, line.index("-7") + 1)  # at the bad value itself
