"""docs/lint.md's "Writing a rule" runs: its family joins the catalogue and reports on a repository."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_triton.lint import lint_path
from pytest_triton.lint.rules import Family
from pytest_triton.lint.rules import catalog
from pytest_triton.lint.rules import register_family
from pytest_triton.lint.rules import unregister_family
from tests.unit.lint.helpers import write_model

DOC = Path(__file__).resolve().parents[3] / "docs" / "lint.md"
CONFIG = 'name: "m"\nbackend: "python"\ninstance_group [ {{ kind: KIND_CPU count: {count} }} ]\n'


@pytest.fixture
def team_rules() -> Iterator[Family]:
    module = importlib.import_module("tests.unit.lint.example_family")
    module = importlib.reload(module)  # registers its family again after an earlier test removed it
    yield module.TEAM_RULES
    unregister_family(module.TEAM_RULES)


def test_the_documented_family_is_this_file() -> None:
    code = Path(__file__).with_name("example_family.py").read_text(encoding="utf-8")
    body = code[code.index("from pytest_triton") :]
    assert body in DOC.read_text(encoding="utf-8"), "docs/lint.md no longer shows example_family.py"


def test_the_family_reports_its_rule_at_the_line(tmp_path: Path, team_rules: Family) -> None:
    write_model(tmp_path, "m", CONFIG.format(count=16), {"1/model.py": ""})
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.severity, finding.line) == ("Z901", "warning", 3)
    assert finding.message == "instance_group 0 asks for count 16; our runners have 8 cores"
    assert catalog.RULES["Z901"].title == "more model instances than a runner has cores"
    write_model(tmp_path, "m", CONFIG.format(count=8))
    assert lint_path(tmp_path) == []


def test_an_unregistered_family_is_gone(tmp_path: Path, team_rules: Family) -> None:
    unregister_family(team_rules)
    write_model(tmp_path, "m", CONFIG.format(count=16), {"1/model.py": ""})
    assert lint_path(tmp_path) == []
    assert "Z901" not in catalog.RULES


def test_an_id_outside_the_prefix_or_taken_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="lists rule ids \\['E999'\\] of another prefix"):
        Family("Z", "strays", [("E999", "error", "not a Z rule")])
    clash = Family("E", "clash", [("E301", "info", "another meaning for an id in use")])
    with pytest.raises(ValueError, match="rule id 'E301' is registered twice"):
        register_family(clash)
    assert catalog.RULES["E301"].severity == "error"  # the refused family left nothing behind
