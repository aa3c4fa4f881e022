"""Lint targets as pytest collectors: one collector per target, one item per model folder.

The collectors hang under the session the way pytest's own file collectors do (added to the
session's collect report before pytest walks it), so ``collected N items``, ``-k``/``-m``
deselection and ``--co`` all count the same lint items. The items need no server; each fails
with every error finding of its model (warnings and infos are shown in its report section), and
a target that cannot be linted fails its own item, never the session.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_triton.errors import LintFailed
from pytest_triton.plugin.items import TritonItem

if TYPE_CHECKING:
    from pytest_triton.lint.finding import Finding
    from pytest_triton.lint.limits import LintLimits


class TritonLintFailure(LintFailed):
    """Raised by a lint item; carries the findings that failed it (the errors.py LintFailed)."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("\n".join(f.format() for f in findings), findings)


class TritonLintItem(TritonItem):
    """Lint findings of one model folder (or of a repository's root, or of a model.tar.gz)."""

    kind = "triton-lint"
    plain_failures = (TritonLintFailure,)

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


class TritonLintTarget(pytest.Collector):
    """One ``--triton-lint`` target: lints it once and yields an item per model folder."""

    def __init__(self, *, target: Path, limits: LintLimits | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.target = target
        self.limits = limits

    def collect(self) -> Iterable[pytest.Item]:
        from pytest_triton.lint.runner import lint_target

        result = lint_target(self.target, limits=self.limits)
        for key, group in result.groups.items():
            if key == "" and not group:
                continue  # nothing at the target's own level: no item for it
            name = f"triton-lint[{key or self.target}]"
            path = Path(key.split("!/")[0]) if key else self.target
            yield TritonLintItem.from_parent(
                self, name=name, path=path.resolve(), nodeid=f"{self.nodeid}::{name}", findings=group
            )
        if not result.groups:  # an empty target still shows up
            name = f"triton-lint[{self.target}]"
            yield TritonLintItem.from_parent(self, name=name, path=self.target.resolve(), findings=[])


def lint_targets_from_config(config: pytest.Config) -> list[Path]:
    from pytest_triton.plugin.options import many

    return [Path(p) for p in many(config, "triton_lint")]


def lint_limits_from_config(config: pytest.Config) -> LintLimits:
    """``--triton-lint-limit NAME=N`` options over ini ``triton_lint_limits`` over the defaults."""
    from pytest_triton.errors import ConfigError
    from pytest_triton.lint.limits import LintLimits
    from pytest_triton.plugin.options import many

    try:
        return LintLimits().with_values(many(config, "triton_lint_limit"))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc


def lint_collectors(session: pytest.Session) -> list[pytest.Collector]:
    targets = lint_targets_from_config(session.config)
    if not targets:
        return []
    limits = lint_limits_from_config(session.config)
    return [
        TritonLintTarget.from_parent(
            session, name=f"triton-lint[{target}]", nodeid=f"triton-lint[{target}]", target=target, limits=limits
        )
        for target in targets
    ]
