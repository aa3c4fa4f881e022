"""Lint rules, one module per family; each module registers its ids in :mod:`.catalog`.

A rule module exposes ``MODEL_CHECKS`` (functions of a :class:`ModelContext`, run on every
model whose config parsed) and ``REPOSITORY_CHECKS`` (functions of a
:class:`RepositoryContext`, run once per repository).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

RULE_MODULES = (
    "layout",
    "schema",
    "ensemble",
    "ensemble_requests",
    "accelerators",
    "onnx_model",
    "deployment",
)


def load_rule_modules() -> list[ModuleType]:
    return [importlib.import_module(f"{__name__}.{name}") for name in RULE_MODULES]


def model_checks() -> list[Callable[[Any], None]]:
    return [check for module in load_rule_modules() for check in getattr(module, "MODEL_CHECKS", [])]


def repository_checks() -> list[Callable[[Any], None]]:
    return [check for module in load_rule_modules() for check in getattr(module, "REPOSITORY_CHECKS", [])]
