"""Lint targets as pytest items: one item per model folder, one per repository-level check.

These items need no server; they fail with every error finding of their model (warnings
and infos are shown in the item's report section).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_triton.lint.finding import Finding


class TritonLintFailure(Exception):
    """Raised by a lint item; carries the findings that failed it."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__(f"{len(findings)} lint error(s)")
        self.findings = findings


class TritonLintItem(pytest.Item):
    """Lint findings of one model folder (or of a repository's root, or of a model.tar.gz)."""

    def __init__(self, *, findings: list[Finding], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.findings = findings
        self.add_marker("triton_lint")

    def runtest(self) -> None:
        notes = [f for f in self.findings if f.severity != "error"]
        if notes:
            self.add_report_section("call", "triton-lint", "\n".join(f.format() for f in notes))
        errors = [f for f in self.findings if f.severity == "error"]
        if errors:
            raise TritonLintFailure(errors)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: object = None) -> str:
        if isinstance(excinfo.value, TritonLintFailure):
            return "\n".join(f.format() for f in excinfo.value.findings)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"triton-lint: {self.name}"


def lint_targets_from_config(config: pytest.Config) -> list[Path]:
    targets = [Path(p) for p in config.getoption("triton_lint")]
    targets += [Path(p) for p in config.getini("triton_lint_paths")]
    return targets


def _group(target: Path, findings: list[Finding]) -> dict[str, list[Finding]]:
    """Findings keyed by model folder ('' for repository-level and archive findings)."""
    from pytest_triton.lint.runner import target_models

    groups: dict[str, list[Finding]] = {str(folder): [] for folder in target_models(target)}
    for finding in findings:
        key = next((folder for folder in groups if finding.path == folder or finding.path.startswith(folder + "/")), "")
        groups.setdefault(key, []).append(finding)
    return groups


def collect_lint_items(session: pytest.Session, targets: list[Path]) -> list[pytest.Item]:
    from pytest_triton.lint import lint_path

    items: list[pytest.Item] = []
    for target in targets:
        findings = lint_path(target)
        for key, group in sorted(_group(target, findings).items()):
            name = f"triton-lint[{key or target}]"
            path = Path(key) if key else target
            items.append(TritonLintItem.from_parent(session, name=name, path=path.resolve(), findings=group))
    return items
