"""What the linter reports: a :class:`Finding` per problem, and the catalogue of rule ids."""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
from typing import Literal

# C0 and C1 control characters, DEL and the Unicode line and paragraph separators: in a terminal or a CI log
# a newline in a model folder's name would start a line of its own (``::error ...`` is a GitHub workflow
# command), an ESC would drive the terminal
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))} | {
    0x2028: "\\u2028",
    0x2029: "\\u2029",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


def printable(text: str) -> str:
    """``text`` with control characters written as Python escapes (``\\n``, ``\\x1b``): one line, inert."""
    return text.translate(_CONTROLS)


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

        A finding about a folder or a whole file has no line: ``path: RULE message``.
        A control character in the path, message or hint is shown escaped, so each finding is its own lines.
        """
        path = printable(self.path)
        where = f"{path}:{self.line}:{self.col}" if self.line > 0 else path
        text = f"{where}: {self.rule} {printable(self.message)}"
        if self.hint:
            text += f"\n  hint: {printable(self.hint)}"
        return text


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)
