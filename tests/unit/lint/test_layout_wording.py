"""The L rules whose condition Triton reports quote Triton (one failing and one passing case per rule).

The cases and Triton's words are in :mod:`.layout_cases`; the passing case is the same model folder with the
fault removed (a plain python model with 1/model.py), which lints clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.lint import lint_path
from tests.unit.lint.layout_cases import CASES
from tests.unit.lint.layout_cases import MODEL_PY
from tests.unit.lint.layout_cases import LayoutCase
from tests.unit.lint.layout_cases import python_config


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_rule_quotes_triton(tmp_path: Path, case: LayoutCase) -> None:
    folder = case.write(tmp_path, "mdl")
    findings = [f for f in lint_path(folder) if f.rule == case.rule]
    assert [f.message for f in findings if case.text("mdl") in f.message], [f.format() for f in findings]


@pytest.mark.parametrize("rule", sorted({c.rule for c in CASES}))
def test_the_fault_removed_lints_clean(tmp_path: Path, rule: str) -> None:
    clean = LayoutCase("clean", rule, {"config.pbtxt": python_config("{m}"), "1/model.py": MODEL_PY}, "")
    assert [f.format() for f in lint_path(clean.write(tmp_path, "mdl"))] == []
