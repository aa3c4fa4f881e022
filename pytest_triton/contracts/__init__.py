"""Declared contracts: a TOML file that names a model's variants, its reference, inputs, parity and latency.

The plugin turns each file into test items (``parity[VARIANT]``, ``latency[VARIANT]``,
``latency[VARIANT/BASELINE]``); nothing in this package imports pytest.
"""

from __future__ import annotations

from pytest_triton.contracts.declaration import load_declaration
from pytest_triton.contracts.declaration import parse_declaration
from pytest_triton.contracts.parity_run import ContractRun
from pytest_triton.contracts.parity_run import ParityOutcome
from pytest_triton.contracts.serving import ContractServers
from pytest_triton.contracts.spec import Declaration
from pytest_triton.errors import VariantUnavailable

__all__ = [
    "ContractRun",
    "ContractServers",
    "Declaration",
    "ParityOutcome",
    "VariantUnavailable",
    "load_declaration",
    "parse_declaration",
]
