"""Deprecated: the server base moved to :mod:`pytest_triton.servers.base` (``Budget`` is
:class:`pytest_triton.servers.wait.Deadline`).

The launcher how-to imported from here; the names still resolve, with a DeprecationWarning.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = {"Budget": ("wait", "Deadline")}


def __getattr__(name: str) -> Any:
    module, new = _MOVED.get(name, ("base", name))
    where = importlib.import_module(f"pytest_triton.servers.{module}")
    if not hasattr(where, new):
        raise AttributeError(f"module 'pytest_triton.servers.server' has no attribute {name!r}")
    warnings.warn(
        f"pytest_triton.servers.server.{name} moved: import pytest_triton.servers.{module}.{new}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(where, new)
