"""Whether the session's warnings filters make one of the plugin's warnings an error.

pytest applies the ini option ``filterwarnings`` and then each ``-W`` (a later filter wins) around every test
call. In a project with ``filterwarnings = ["error"]`` (a common setting), a
:class:`~pytest_triton.errors.TritonInconclusiveWarning` raised inside a test makes pytest say *failed*, while the
session's ``triton_inconclusive = warn`` would have every report channel say *inconclusive*. The plugin asks
once per session, with this module, what the filters do to each of its warning classes, and a choice of
``warn`` that the filters turn into an error counts as ``fail``: pytest and every channel then agree.

The filters are read as the :mod:`warnings` module reads them (``action:message:category:module:lineno``, the
standard format) and tried on a probe warning under a copy of the interpreter's filters, so ``python -W`` and
``PYTHONWARNINGS`` count too. A filter that names a message text or a module is decided per warning at the
warning's own site; a ``@pytest.mark.filterwarnings`` mark applies to its own test only. Neither is seen here.
"""

from __future__ import annotations

import importlib
import re
import warnings
from typing import Any

import pytest

__all__ = ["error_filter"]

_ACTIONS = ("default", "error", "ignore", "always", "all", "module", "once")


def error_filter(config: pytest.Config, category: type[Warning]) -> str | None:
    """Which filter makes ``category`` an error in this session's test calls, in words, or None."""
    written = [(f"{text!r} (ini filterwarnings)", text, False) for text in config.getini("filterwarnings")]
    cmdline = getattr(config.known_args_namespace, "pythonwarnings", None) or []
    written += [(f"{text!r} (-W)", text, True) for text in cmdline]
    applied = [(said, parsed) for said, text, escape in written if (parsed := _parse(text, escape=escape))]
    with warnings.catch_warnings():
        warnings.showwarning = _discard  # the probe is never shown; catch_warnings restores the hook
        for _, parsed in applied:
            warnings.filterwarnings(*parsed)
        try:
            warnings.warn(category("probe"), stacklevel=1)
        except category:
            deciding = [said for said, parsed in applied if parsed[0] == "error" and issubclass(category, parsed[2])]
            if deciding:
                return f"the warnings filter {deciding[-1]}"
            return "the warnings filters in effect (python -W, PYTHONWARNINGS or a filterwarnings mark)"
    return None


def _discard(*args: Any, **kwargs: Any) -> None:
    return None


def _parse(text: str, *, escape: bool) -> tuple[Any, str, type[Warning], str, int] | None:
    """``action:message:category:module:lineno`` as :func:`warnings.filterwarnings` takes it; None for a filter
    that this probe cannot try (pytest reports a malformed one itself)."""
    parts = [part.strip() for part in text.split(":")]
    if len(parts) > 5:
        return None
    action, message, category_name, module, lineno = (parts + [""] * 5)[:5]
    # the warnings module's own reading: an empty action is "default", an unambiguous prefix names its action
    matches = [name for name in _ACTIONS if name.startswith(action)] if action else ["default"]
    category = _category(category_name)
    if category is None or (action not in _ACTIONS and len(matches) != 1):
        return None
    if escape:
        message = re.escape(message)
        module = re.escape(module) + r"\Z" if module else ""
    try:
        line = int(lineno) if lineno else 0
    except ValueError:
        return None
    return (action if action in _ACTIONS else matches[0]), message, category, module, line


def _category(name: str) -> type[Warning] | None:
    if not name:
        return Warning
    module_name, _, attribute = name.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name or "builtins"), attribute)
    except (ImportError, AttributeError):
        return None
    return found if isinstance(found, type) and issubclass(found, Warning) else None
