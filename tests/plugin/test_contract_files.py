"""A bad file named by the run (a contracts file, its budgets or samples file, the report's path) stops it at
the start with one usage error that names the file, the 1-based line:col and the key: no traceback, no error
per item, no server started, no wait. Each run here is ``--co``: the error has to come before collection ends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CONTRACTS = """\
[reference]
onnx = "model.onnx"

[variants.a]
repository = "repos"
model = "m"

[variants.b]
repository = "repos"
model = "m"

[inputs]
{inputs}

[latency]
budgets = "budgets.toml"
"""
BUDGETS = """\
[cpu-2core-x86_64]
tolerance = 0.1

[cpu-2core-x86_64.a]
p50_ms = 5.0
"""
SAMPLE = '{"inputs": [{"name": "x", "shape": [1], "datatype": "INT8", "data": [%s]}]}\n'


def project(root: Path, *, inputs: str = 'samples = "s.jsonl"', budgets: str = BUDGETS + 'source = "here"\n') -> None:
    (root / "repos").mkdir(exist_ok=True)
    (root / "model.onnx").write_bytes(b"")
    (root / "contracts.toml").write_text(CONTRACTS.format(inputs=inputs), encoding="utf-8")
    (root / "budgets.toml").write_text(budgets, encoding="utf-8")
    (root / "s.jsonl").write_text(SAMPLE % 1, encoding="utf-8")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--co", "-q", "-p", "no:cacheprovider", "--triton-contracts", "contracts.toml", *args, timeout=120
    )


def one_usage_error(result: pytest.RunResult, line: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([line])
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output, output
    assert "INTERNALERROR" not in output, output
    assert len([x for x in result.stderr.lines if x.startswith("ERROR:")]) == 1


def test_a_good_project_collects(pytester: pytest.Pytester) -> None:
    project(pytester.path)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["contracts.toml::parity[[]a[]]"])


def test_a_budgets_file_without_source_is_one_usage_error_at_1_based_line_col(pytester: pytest.Pytester) -> None:
    project(pytester.path, budgets=BUDGETS)
    one_usage_error(
        run(pytester),
        "ERROR: invalid file named by the contracts file */contracts.toml: */budgets.toml:4:19: "
        "cpu-2core-x86_64.a: no source; say where the numbers come from",
    )


def test_an_unbounded_budget_value_is_one_usage_error(pytester: pytest.Pytester) -> None:
    project(pytester.path, budgets=BUDGETS.replace("5.0", "inf") + 'source = "here"\n')
    one_usage_error(run(pytester), "ERROR: *budgets.toml:5:1: cpu-2core-x86_64.a.p50_ms=inf: expected milliseconds*")


def test_a_sample_out_of_its_datatype_is_one_usage_error(pytester: pytest.Pytester) -> None:
    project(pytester.path)
    (pytester.path / "s.jsonl").write_text(SAMPLE % 1 + SAMPLE % 1000, encoding="utf-8")
    one_usage_error(
        run(pytester),
        "ERROR: *s.jsonl:2: inputs[[]0[]] ('x').data[[]0[]]=1000: expected an integer from -128 to 127 (INT8)",
    )


def test_an_unbounded_contracts_value_is_one_usage_error(pytester: pytest.Pytester) -> None:
    project(pytester.path)
    text = (pytester.path / "contracts.toml").read_text(encoding="utf-8")
    (pytester.path / "contracts.toml").write_text(text + "window_ms = 1e15\n", encoding="utf-8")
    one_usage_error(
        run(pytester),
        "ERROR: invalid contracts file: */contracts.toml:17:1: latency.window_ms=1000000000000000.0: expected a finite "
        "number in (0, 3,600,000]",
    )


def test_a_contracts_file_that_is_not_utf8_is_one_usage_error(pytester: pytest.Pytester) -> None:
    project(pytester.path)
    raw = (pytester.path / "contracts.toml").read_bytes().replace(b'model = "m"', b'model = "m\xe9"', 1)
    (pytester.path / "contracts.toml").write_bytes(raw)
    one_usage_error(run(pytester), "ERROR: invalid contracts file: */contracts.toml:6:11: byte b'\\xe9' is not UTF-8*")


def test_a_fifo_as_contracts_file_is_refused_without_waiting(pytester: pytest.Pytester) -> None:
    project(pytester.path)
    (pytester.path / "contracts.toml").unlink()
    os.mkfifo(pytester.path / "contracts.toml")
    one_usage_error(
        run(pytester),
        "ERROR: invalid contracts file: */contracts.toml: the contracts file is a FIFO (named pipe), not a regular*",
    )


def test_generated_inputs_without_hypothesis_name_the_extra(pytester: pytest.Pytester) -> None:
    project(pytester.path, inputs="generate = {}")
    # an early plugin makes `import hypothesis` fail in the run, as in an environment without the extra
    (pytester.path / "no_hypothesis.py").write_text("import sys\nsys.modules['hypothesis'] = None\n")
    result = run(pytester, "-p", "no:hypothesispytest", "-p", "no_hypothesis")
    one_usage_error(
        result,
        "ERROR: invalid contracts file: */contracts.toml:13:1: inputs.generate draws inputs with Hypothesis: "
        "'hypothesis' is not installed; install it with: pip install 'pytest-triton?contracts?'",
    )


def test_a_report_path_that_cannot_be_written_is_a_usage_error_at_start(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--triton-report", "/proc/nope/x", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --triton-report='/proc/nope/x': cannot write the report into '/proc/nope'*"])
