"""String escapes as Triton's C++ parser reads them, and library warnings that never become X001.

Read from the embedded tritonserver 2.51 (a python model whose config holds the literal, loaded through the
repository API): ``"pyth\\on"``, ``'pyth\\on'``, ``"a\\qb"`` and ``"a\\8"`` fail with ``failed to read text
proto ... Error parsing text-format inference.ModelConfig: L:C: Invalid escape sequence in string
literal.`` (2:16 and 3:48 below); ``"a\\\\b"``, ``"a\\x41\\101\\n"`` and ``"a\\u0041"`` load. Python's parser
keeps ``\\o`` as it is and warns (DeprecationWarning), which ``-W error`` turned into an exception.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import warnings
from pathlib import Path

import pytest

from pytest_triton.config import parse_config
from pytest_triton.errors import ConfigSyntaxError
from pytest_triton.lint import lint_path
from pytest_triton.lint.rules import layout
from tests.unit.lint.helpers import write_model

INVALID = "Invalid escape sequence in string literal."
PARAMS = 'backend: "python"\nparameters {{ key: "k" value {{ string_value: "{}" }} }}'


def config(body: str, name: str = "m") -> str:
    return f'name: "{name}"\n{body}\nmax_batch_size: 0\n'


@pytest.mark.parametrize(
    ("body", "message", "line", "col"),
    [
        ('backend: "pyth\\on"', INVALID, 2, 16),  # Triton: 2:16
        ("backend: 'pyth\\on'", INVALID, 2, 16),  # Triton: 2:16
        (PARAMS.format("a\\qb"), INVALID, 3, 48),  # Triton: 3:48
        (PARAMS.format("a\\8"), INVALID, 3, 48),  # Triton: 3:48
        (PARAMS.format("a\\xZ"), "Expected hex digits for escape sequence.", 3, 49),
        (PARAMS.format("a\\u00G1"), "Expected four hex digits for \\u escape sequence.", 3, 51),
    ],
)
def test_escapes_triton_refuses(body: str, message: str, line: int, col: int) -> None:
    with pytest.raises(ConfigSyntaxError) as caught:
        parse_config(config(body))
    assert caught.value.reason == message
    assert (caught.value.line, caught.value.col) == (line, col)


@pytest.mark.parametrize(
    ("literal", "value"),
    [("a\\\\b", "a\\b"), ("a\\x41\\101\\n", "aAA\n"), ("a\\u0041", "aA"), ("\\'\\\"\\a", "'\"\a")],
)
def test_escapes_triton_reads(literal: str, value: str) -> None:
    parsed = parse_config(config(PARAMS.format(literal))).message
    assert parsed.parameters["k"].string_value == value


def test_question_mark_escape_parses_without_a_warning() -> None:
    # C++ reads \? as ? (its escape table); protobuf's Python unescaping keeps "\?" and warns: the warning
    # is silenced where it is raised, the value keeps the backslash (a known difference, not a finding)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parsed = parse_config(config(PARAMS.format("a\\?"))).message
    assert parsed.parameters["k"].string_value in ("a?", "a\\?")


def test_an_invalid_escape_is_c001_even_when_warnings_are_errors(tmp_path: Path) -> None:
    write_model(tmp_path, "m", config('backend: "pyth\\on"'), {"1/model.py": ""})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        findings = lint_path(tmp_path)
    assert [(f.rule, f.line, f.col) for f in findings] == [("C001", 2, 16)]
    assert findings[0].message.endswith(INVALID)


def test_a_library_warning_is_shown_as_x002_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a stand-in for a library that warns from inside a rule (protobuf did, on an escape it keeps)
    def warns(model: object) -> None:
        warnings.warn("something a library says", DeprecationWarning, stacklevel=1)

    family = dataclasses.replace(layout.FAMILY, model_checks=[warns, *layout.FAMILY.model_checks])
    monkeypatch.setattr(layout, "FAMILY", family)
    write_model(tmp_path, "m", config('backend: "python"'), {"1/model.py": ""})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        findings = lint_path(tmp_path)
    assert [f.rule for f in findings] == ["X002"]
    assert "DeprecationWarning: something a library says" in findings[0].message
    assert findings[0].severity == "info"


def _conftest() -> object:
    spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).parents[3] / "conftest.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("environ", "derandomized"),
    [
        ({"CI": "1"}, True),
        ({"HYPOTHESIS_PROFILE": "ci"}, True),
        ({}, False),
        ({"CI": "1", "HYPOTHESIS_PROFILE": "local"}, False),
    ],
)
def test_hypothesis_profile_is_derandomized_in_ci(
    environ: dict[str, str], derandomized: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hypothesis import settings

    was = settings._current_profile
    for key in ("CI", "HYPOTHESIS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    try:
        _conftest()
        current = settings.default
        assert current is not None
        assert current.derandomize is derandomized
    finally:
        settings.load_profile(was or "default")
    assert os.environ.get("CI") == environ.get("CI")
    assert sys.modules.get("root_conftest") is None
