"""The package graph has no cycle: packages of ``pytest_triton`` (and the modules at its top) import one way.

Every import of the project's own modules counts, at module level, inside functions and under
``TYPE_CHECKING`` alike: a lazy import still ties two packages together. ``benchmarks/`` is held to the same
rule module by module (its scripts share pieces through public names, never each other's private ones, and
never reach for ``sys.path``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_triton"
BENCHMARKS = PACKAGE.parent / "benchmarks"


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


@pytest.mark.parametrize("lower", ["client", "errors", "config", "lint", "archive"])
def test_low_layers_do_not_import_servers(lower: str) -> None:
    # the clients, the linter and the shared facts sit below the launchers
    assert "servers" not in package_graph().get(lower, set())


# -- benchmarks/: one package, modules that import one way ------------------------------------------------------


def _benchmark_imports(tree: ast.AST, package: str) -> dict[str, set[str]]:
    """Module of ``package`` → the names it takes from it (``from package import mod``: mod → {"*"})."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == package:
                for alias in node.names:
                    found.setdefault(alias.name, set()).add("*")
            elif node.module.startswith(package + "."):
                module = node.module.split(".")[1]
                found.setdefault(module, set()).update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(package + "."):
                    found.setdefault(alias.name.split(".")[1], set()).add("*")
    return found


def module_graph(root: Path = BENCHMARKS) -> dict[str, set[str]]:
    """Module of the ``root`` package → the modules of the same package it imports (anywhere in the file)."""
    modules = {p.stem for p in root.glob("*.py")} - {"__init__"}
    return {
        p.stem: set(_benchmark_imports(ast.parse(p.read_text(encoding="utf-8")), root.name)) & modules - {p.stem}
        for p in root.glob("*.py")
        if p.stem != "__init__"
    }


def private_reaches(root: Path = BENCHMARKS) -> list[str]:
    """``file: module._name`` for every private name one module of ``root`` takes from another."""
    found: list[str] = []
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = _benchmark_imports(tree, root.name)
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == root.name:
                aliases.update({a.asname or a.name: a.name for a in node.names})
            elif isinstance(node, ast.Import):
                aliases.update({a.asname: a.name.split(".")[1] for a in node.names if a.asname and "." in a.name})
        for module, names in imported.items():
            found += [f"{path.name}: {module}.{n}" for n in sorted(names) if n.startswith("_")]
        for node in ast.walk(tree):
            reach = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
            if reach and node.attr.startswith("_") and not node.attr.startswith("__"):  # type: ignore[attr-defined]
                found.append(f"{path.name}: {aliases[node.value.id]}.{node.attr}")  # type: ignore[attr-defined]
    return found


def test_benchmarks_is_a_package_without_import_cycles() -> None:
    assert (BENCHMARKS / "__init__.py").is_file(), "benchmarks/ is run with python -m benchmarks.NAME"
    graph = module_graph()
    assert graph, "no benchmark modules found"
    cycle = find_cycle(graph)
    assert cycle is None, "benchmark modules import each other: " + " -> ".join(cycle or [])


def test_benchmarks_share_public_names_only() -> None:
    assert private_reaches() == []


def test_benchmarks_do_not_edit_sys_path() -> None:
    offenders = [p.name for p in BENCHMARKS.glob("*.py") if "sys.path." in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_the_benchmark_checks_see_a_cycle_and_a_private_reach(tmp_path: Path) -> None:
    # the verdicts must be able to flip: the six gpu_*.py files of main 3ca3b39 did both
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "runner.py").write_text("from benchmarks import phases as ph\n\ndef go():\n    return ph._serve()\n")
    (root / "phases.py").write_text("def _serve():\n    from benchmarks.runner import go\n    return go\n")
    (root / "report.py").write_text("from benchmarks.phases import _serve\n")
    assert set(find_cycle(module_graph(root)) or []) == {"runner", "phases"}
    assert private_reaches(root) == ["report.py: phases._serve", "runner.py: phases._serve"]


# -- docs/architecture.md's "Who imports whom", generated from the graph ------------------------------------------

ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
_NAME_WIDTH = 21
_LINE_WIDTH = 116


def graph_lines(graph: dict[str, set[str]]) -> list[str]:
    """The graph as the page draws it: one line per unit, each after every unit it imports (ties by name),
    its imports after the name, wrapped under themselves."""
    placed: list[str] = []
    left = dict(graph)
    while left:
        ready = sorted(unit for unit, needs in left.items() if needs <= set(placed))
        if not ready:  # a cycle: test_no_import_cycle_between_packages names it
            ready = sorted(left)
        placed.append(ready[0])
        del left[ready[0]]
    lines: list[str] = []
    for unit in placed:
        words = [f"{name}," for name in sorted(graph[unit])] or ["(nothing)"]
        words[-1] = words[-1].rstrip(",")
        line = unit.ljust(_NAME_WIDTH)
        for word in words:
            if len(line) + len(word) + 1 > _LINE_WIDTH and line.strip() != unit:
                lines.append(line.rstrip())
                line = " " * _NAME_WIDTH
            line += word + " "
        lines.append(line.rstrip())
    return lines


def drawn_lines(page: Path = ARCHITECTURE) -> list[str]:
    """The code block under the page's "Who imports whom" heading."""
    text = page.read_text(encoding="utf-8")
    section = text[text.index("### Who imports whom") :]
    start = section.index("```\n") + len("```\n")
    return section[start : section.index("```", start)].rstrip("\n").split("\n")


def test_architecture_page_draws_the_graph_of_the_code() -> None:
    expected = graph_lines(package_graph())
    assert drawn_lines() == expected, "docs/architecture.md's import picture drifted; paste:\n" + "\n".join(expected)


def test_the_drawing_follows_a_new_import(tmp_path: Path) -> None:
    # the verdict must be able to flip: a unit that starts importing another moves below it and names it
    root = tmp_path / "pytest_triton"
    for unit in ("alpha", "beta"):
        (root / unit).mkdir(parents=True)
        (root / unit / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    top = "__init__             (nothing)"
    assert graph_lines(package_graph(root)) == [top, "alpha                (nothing)", "beta                 (nothing)"]
    (root / "alpha" / "mod.py").write_text("from pytest_triton.beta import x\n")
    assert graph_lines(package_graph(root)) == [top, "beta                 (nothing)", "alpha                beta"]
