"""Lint rules, one module per family; each ends with ``FAMILY = Family(...)`` (:mod:`.family`): its rule table
(ids, severities, titles) and its checks. The catalogue (:mod:`.catalog`) and the runner gather the families
from here: the built-in modules below, and families added with :func:`register_family`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from pytest_triton.lint.rules.family import Family

RULE_MODULES = (
    "layout",
    "schema",
    "ensemble",
    "ensemble_requests",
    "accelerators",
    "onnx_model",
    "deployment",
)
_ADDED: list[Family] = []


def families() -> list[Family]:
    """The built-in families, in the order their checks run, then the added ones."""
    built_in = [importlib.import_module(f"{__name__}.{name}").FAMILY for name in RULE_MODULES]
    return [*built_in, *_ADDED]


def register_family(family: Family) -> None:
    """Add a family of rules (a plugin's, a project's own): its ids join the catalogue, its checks every run.
    A family registered again under the same name replaces the earlier one (a module imported twice)."""
    from pytest_triton.lint.rules import catalog

    _ADDED[:] = [added for added in _ADDED if added.name != family.name]
    _ADDED.append(family)
    catalog.rules.cache_clear()
    try:
        catalog.rules()
    except ValueError:
        unregister_family(family)
        raise


def unregister_family(family: Family) -> None:
    from pytest_triton.lint.rules import catalog

    _ADDED[:] = [added for added in _ADDED if added.name != family.name]
    catalog.rules.cache_clear()


def model_checks() -> list[Callable[[Any], None]]:
    return [check for family in families() for check in family.model_checks]


def repository_checks() -> list[Callable[[Any], None]]:
    return [check for family in families() for check in family.repository_checks]


__all__ = [
    "RULE_MODULES",
    "Family",
    "families",
    "model_checks",
    "register_family",
    "repository_checks",
    "unregister_family",
]
