"""Deprecated: the server base moved to :mod:`pytest_triton.servers.base` (``Budget`` is ``Deadline`` there).

The launcher how-to imported from here; the names still resolve, with a DeprecationWarning.
"""

from __future__ import annotations

import warnings
from typing import Any

_MOVED = {"Budget": "Deadline"}


def __getattr__(name: str) -> Any:
    from pytest_triton.servers import base

    new = _MOVED.get(name, name)
    if not hasattr(base, new):
        raise AttributeError(f"module 'pytest_triton.servers.server' has no attribute {name!r}")
    warnings.warn(
        f"pytest_triton.servers.server.{name} moved: import pytest_triton.servers.base.{new}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(base, new)
