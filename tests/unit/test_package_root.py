"""The package root exports the fixtures' types for annotations, and importing it stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_triton

PLUGIN = Path(pytest_triton.__file__).parent / "plugin" / "hooks.py"
FIXTURES = {"triton_repository", "triton_server", "triton_server_factory", "triton_client", "triton_bench"}


def _fixture_types() -> dict[str, str]:
    """Each public fixture of plugin/hooks.py → the type it gives (the return annotation, Iterator[...] unwrapped)."""
    found: dict[str, str] = {}
    for node in ast.parse(PLUGIN.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name in FIXTURES and node.returns is not None:
            returns = node.returns
            if isinstance(returns, ast.Subscript):  # Iterator[X] of a yield fixture
                returns = returns.slice
            assert isinstance(returns, ast.Name), ast.dump(returns)
            found[node.name] = returns.id
    return found


def test_every_fixture_type_is_exported_from_the_package_root() -> None:
    types = _fixture_types()
    assert set(types) == FIXTURES
    for fixture, name in types.items():
        assert name in pytest_triton.__all__, f"{fixture} gives {name}, which pytest_triton does not export"
        exported = getattr(pytest_triton, name)
        assert exported.__name__ == name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        pytest_triton.NoSuchThing  # noqa: B018


def test_importing_the_package_imports_no_fixture_module_and_not_pytest() -> None:
    code = (
        "import sys, pytest_triton\n"
        "print([m for m in ('pytest', 'pytest_triton.plugin.server_factory', 'pytest_triton.servers',"
        " 'pytest_triton.bench')"
        " if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
