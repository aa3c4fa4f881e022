"""GitHub Actions workflow commands: lint findings as annotations on a pull request's diff.

A line ``::error file=F,line=L,col=C,title=RULE::message`` printed by a step marks line L of file F in the
PR's "Files changed" view (``::warning`` and ``::notice`` likewise). GitHub's rule for the values: in the
message, ``%``, CR and LF are written ``%25``, ``%0D``, ``%0A``; in a property, ``:`` and ``,`` too (``%3A``,
``%2C``), since they separate the properties.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_triton.lint.finding import Finding

__all__ = ["annotation", "escape_data", "escape_property"]

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """A command's message: ``%``, CR and LF escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value: as a message, and ``:`` and ``,`` too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    """The workflow command for one finding; its hint follows the message on a line of its own. A finding
    about a whole file or folder (no line) names only the file."""
    properties = {"file": finding.path}
    if finding.line > 0:
        properties["line"] = str(finding.line)
        if finding.col > 0:
            properties["col"] = str(finding.col)
    properties["title"] = finding.rule
    message = f"{finding.rule} {finding.message}"
    if finding.hint:
        message += f"\nhint: {finding.hint}"
    fields = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::{_LEVEL[finding.severity]} {fields}::{escape_data(message)}"
