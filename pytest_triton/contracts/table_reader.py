"""Typed access to a contracts file's TOML data: every value checked against its bounds, every error naming the
file, the line:col and the key path (``latency.relative[0].max_ratio``)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_triton.config.toml import KeyPath
from pytest_triton.config.toml import TomlDocument
from pytest_triton.config.toml import dotted
from pytest_triton.config.values import MAX_COUNT
from pytest_triton.config.values import integer_problem
from pytest_triton.config.values import number_problem
from pytest_triton.errors import ConfigError
from pytest_triton.errors import MissingDependency

__all__ = ["TableReader", "missing_module"]


class TableReader:
    """Typed access to the TOML data; every error names the file, the line:col and the key path."""

    def __init__(
        self,
        document: TomlDocument,
        prefix: tuple[str, ...],
        check_launcher: Callable[[str], object] | None = None,
    ) -> None:
        self.document = document
        self.path = document.path
        self.prefix = prefix
        self.check_launcher = check_launcher

    def key(self, keys: KeyPath) -> str:
        return dotted((*self.prefix, *keys))

    def fail(self, keys: KeyPath, message: str) -> ConfigError:
        return self.document.error((*self.prefix, *keys), message)

    def bad(self, keys: KeyPath, value: Any, expected: str) -> ConfigError:
        return self.fail(keys, f"{self.key(keys)}={value!r}: expected {expected}")

    def require(self, keys: KeyPath, module: str, package: str, extra: str, why: str) -> None:
        """A ConfigError at ``keys`` when the optional ``module`` cannot be imported, naming the extra to install
        (checked when the file is read, not once a server has started)."""
        if missing_module(module):
            raise self.fail(keys, f"{self.key(keys)} {why}: {MissingDependency(package, extra)}")

    def table(self, data: Any, keys: KeyPath, known: set[str]) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.bad(keys, data, "a table")
        unknown = sorted(set(data) - known)
        if unknown:
            where = self.key(keys) or "the top level"
            raise self.fail(
                (*keys, unknown[0]),
                f"{self.key((*keys, unknown[0]))}: unknown key {unknown[0]!r} in {where}; "
                f"known keys: {', '.join(sorted(known))}",
            )
        return data

    def string(self, data: Mapping[str, Any], keys: KeyPath, default: str | None = None) -> str:
        value = data.get(str(keys[-1]), default)
        if not isinstance(value, str) or not value:
            if str(keys[-1]) not in data and default is None:
                raise self.fail(keys, f"{self.key(keys)} is missing: expected a non-empty string")
            raise self.bad(keys, value, "a non-empty string")
        return value

    def choice(self, data: Mapping[str, Any], keys: KeyPath, choices: tuple[str, ...], default: str) -> str:
        value = data.get(str(keys[-1]), default)
        if value not in choices:
            raise self.bad(keys, value, f"one of {', '.join(repr(c) for c in choices)}")
        return str(value)

    def integer(
        self, data: Mapping[str, Any], keys: KeyPath, default: int, minimum: int = 1, maximum: int = MAX_COUNT
    ) -> int:
        value = data.get(str(keys[-1]), default)
        problem = integer_problem(value, minimum, maximum)
        if problem is not None:
            raise self.bad(keys, value, problem)
        return int(value)

    def number(
        self,
        data: Mapping[str, Any],
        keys: KeyPath,
        default: float | None = None,
        *,
        minimum: float = -sys.float_info.max,
        maximum: float = sys.float_info.max,
        above: bool = False,
        hint: str = "",
    ) -> float:
        value = data.get(str(keys[-1]), default)
        problem = number_problem(value, minimum, maximum, above=above)
        if problem is not None:
            raise self.bad(keys, value, f"{problem} ({hint})" if hint else problem)
        return float(value)

    def path_of(self, data: Mapping[str, Any], keys: KeyPath, what: str) -> Path:
        text = self.string(data, keys)
        if "\0" in text or len(text) > 4096:
            raise self.bad(keys, text[:200], f"the path of a {what} (no NUL byte, at most 4096 characters)")
        try:
            resolved = (self.path.parent / text).resolve()
            found = resolved.exists()
        except (OSError, RuntimeError) as exc:  # a name too long, a link loop
            raise self.fail(keys, f"{self.key(keys)}={text!r}: {what} cannot be reached: {exc}") from None
        if not found:
            raise self.fail(keys, f"{self.key(keys)}={text!r}: {what} {str(resolved)!r} does not exist")
        return resolved

    def names(
        self, data: Mapping[str, Any], keys: KeyPath, allowed: Mapping[str, Any] | tuple[str, ...]
    ) -> tuple[str, ...]:
        value = data.get(str(keys[-1]), [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(keys, value, "a list of strings")
        for item in value:
            if item not in allowed:
                raise self.bad(keys, item, f"one of {', '.join(repr(a) for a in allowed)}")
        return tuple(value)


def missing_module(module: str) -> bool:
    """Whether an optional module cannot be imported (looked up, not imported: Hypothesis takes 0.1 s)."""
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent that fails, or a module set to None in sys.modules
        return True
