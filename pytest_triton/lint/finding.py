"""What the linter reports: a :class:`Finding` per problem, and the catalogue of rule ids."""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Rule:
    """A stable rule id (never reused), its default severity and a one-line title."""

    id: str
    severity: Severity
    title: str


@dataclass(frozen=True, order=True)
class Finding:
    """One problem found in a model repository, with where it is and what to do about it."""

    path: str
    line: int
    col: int
    rule: str
    severity: Severity
    message: str
    hint: str = ""

    def as_dict(self) -> dict[str, str | int]:
        """The JSON form: exactly rule, severity, path, line, col, message, hint."""
        data = asdict(self)
        return {key: data[key] for key in ("rule", "severity", "path", "line", "col", "message", "hint")}

    def format(self) -> str:
        """flake8-style text: ``path:line:col: RULE message`` then ``  hint: ...``.

        A finding about a folder or a whole file has no line: ``path: RULE message``."""
        where = f"{self.path}:{self.line}:{self.col}" if self.line > 0 else self.path
        text = f"{where}: {self.rule} {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)
