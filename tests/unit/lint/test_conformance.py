"""Conformance: the linter reports Triton's own error for Triton's own model-config QA cases.

The corpus lives beside the repository in ``../shared/conformance/`` (see its README.md): each
case is a repository ``triton-qa/CASE/target/`` and ``expect.json`` lists the texts Triton
fails with. For a case confirmed on Triton 2.51 the linter must report an error whose message
contains one of them. Cases that were not confirmed (they need GPUs, loaded step models or
another release's wording) are skipped with the reason and counted in a summary.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_triton.lint import Finding
from pytest_triton.lint import lint_path

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "conformance" / "triton-qa"
UNCONFIRMED = "not confirmed on Triton 2.51: needs GPUs/loaded step models"

if not CORPUS.is_dir():
    pytest.skip(f"conformance corpus not found at {CORPUS} (../shared/conformance/)", allow_module_level=True)


@dataclass(frozen=True)
class Case:
    name: str
    target: Path
    expected: tuple[str, ...]
    confirmed: bool


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _unescape(text: str) -> str:
    r"""Expected texts are regular expressions in places (``\[1, 3\]``); match them literally."""
    return re.sub(r"\\(.)", r"\1", text)


def load_cases() -> list[Case]:
    cases = []
    for folder in sorted(p for p in CORPUS.iterdir() if (p / "expect.json").is_file()):
        data = json.loads((folder / "expect.json").read_text(encoding="utf-8"))
        expected = tuple(_collapse(_unescape(text)) for text in data["expected"])
        cases.append(Case(folder.name, folder / "target", expected, bool(data["confirmed_on_triton"])))
    return cases


CASES = load_cases()


def matching(case: Case, findings: list[Finding]) -> list[Finding]:
    """Error findings whose message contains one of Triton's expected texts."""
    return [
        f for f in findings if f.severity == "error" and any(text in _collapse(f.message) for text in case.expected)
    ]


def _report(case: Case, findings: list[Finding]) -> str:
    lines = [f"{case.name}: no error finding contains any of", *(f"  {text!r}" for text in case.expected)]
    lines += ["findings:", *(f"  {f.rule} {f.severity}: {f.message}" for f in findings)]
    return "\n".join(lines)


def test_corpus_is_complete() -> None:
    assert len(CASES) == 149
    assert sum(case.confirmed for case in CASES) == 124


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_linter_reports_tritons_error(case: Case) -> None:
    if not case.confirmed:
        pytest.skip(UNCONFIRMED)
    findings = lint_path(case.target)
    assert matching(case, findings), _report(case, findings)


def test_unconfirmed_cases_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Report (never fail) how many unconfirmed cases the linter matches anyway."""
    unconfirmed = [case for case in CASES if not case.confirmed]
    missed = [case.name for case in unconfirmed if not matching(case, lint_path(case.target))]
    with capsys.disabled():
        print(
            f"\nconformance: {len(unconfirmed) - len(missed)} of {len(unconfirmed)} unconfirmed cases match"
            + (f"; not matched: {', '.join(missed)}" if missed else "")
        )
