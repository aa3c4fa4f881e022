"""The package graph has no cycle: packages of ``pytest_triton`` (and the modules at its top) import one way.

Every import of the project's own modules counts, at module level, inside functions and under
``TYPE_CHECKING`` alike: a lazy import still ties two packages together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_triton"


def _unit_of(module: str) -> str:
    """The package (or top-level module) of ``pytest_triton`` that a dotted module name belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _imports_of(path: Path) -> set[str]:
    """Dotted names of the project's modules that ``path`` imports, wherever the import stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("pytest_triton."):
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pytest_triton."))
    return found


def package_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Unit → the other units it imports (a unit is a subpackage, or a module at the package's top)."""
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts) for p in root.rglob("*.py")}
    packages = {m.removesuffix(".__init__") for m in modules if m.endswith(".__init__")}
    known = {m.removesuffix(".__init__") for m in modules} | packages
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        unit = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        targets = {_unit_of(name) for name in _imports_of(path) if name in known}
        graph.setdefault(unit, set()).update(targets - {unit, "__init__"})
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that starts and ends at the same node, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycle_between_packages() -> None:
    cycle = find_cycle(package_graph())
    assert cycle is None, "packages import each other: " + " -> ".join(cycle or [])


def test_the_check_sees_a_cycle(tmp_path: Path) -> None:
    # the verdict must be able to flip: two packages that import each other, one of them lazily
    root = tmp_path / "pytest_triton"
    for pkg, other in (("alpha", "beta"), ("beta", "alpha")):
        (root / pkg).mkdir(parents=True)
        (root / pkg / "__init__.py").write_text("")
        (root / pkg / "mod.py").write_text(f"def f():\n    from pytest_triton.{other}.mod import f\n")
    (root / "__init__.py").write_text("")
    cycle = find_cycle(package_graph(root))
    assert cycle is not None
    assert set(cycle) == {"alpha", "beta"}


@pytest.mark.parametrize("lower", ["client", "errors", "config", "lint", "model_archive"])
def test_low_layers_do_not_import_servers(lower: str) -> None:
    # the clients, the linter and the shared facts sit below the launchers
    assert "servers" not in package_graph().get(lower, set())
