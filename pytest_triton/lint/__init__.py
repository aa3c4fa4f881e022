"""The model repository linter: rules, findings and the runner."""

from __future__ import annotations

from pytest_triton.lint.finding import Finding
from pytest_triton.lint.finding import Rule
from pytest_triton.lint.finding import Severity
from pytest_triton.lint.finding import has_errors
from pytest_triton.lint.runner import lint_path
from pytest_triton.lint.runner import lint_paths

__all__ = ["Finding", "Rule", "Severity", "has_errors", "lint_path", "lint_paths"]
