"""House rules a test can hold: a launcher class is a page of code on the shared base.

Every launcher class the registry names as built in is at most :data:`MAX_LAUNCHER_LINES` physical lines, from
its ``class`` line to its last (ast's ``end_lineno - lineno + 1``), as a testcontainers module is a page on
``DockerContainer``. The classes are read from the source, not imported: the docker and SageMaker launchers need
their extras to import.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_triton"
MAX_LAUNCHER_LINES = 150


def builtin_launchers(root: Path = PACKAGE) -> dict[str, str]:
    """Launcher name → ``module:Class``, the registry's table of built-in launchers (``_BUILTIN``)."""
    tree = ast.parse((root / "servers" / "registry.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "_BUILTIN":
            assert node.value is not None
            table: dict[str, str] = ast.literal_eval(node.value)
            return table
    raise LookupError(f"no _BUILTIN table in {root / 'servers' / 'registry.py'}")


def class_lines(root: Path, target: str) -> int:
    """Physical lines of the class ``module:Class``, a class of the package at ``root``."""
    module, _, name = target.partition(":")
    path = root.parent.joinpath(*module.split(".")).with_suffix(".py")
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and node.name == name:
            assert node.end_lineno is not None
            return node.end_lineno - node.lineno + 1
    raise LookupError(f"{target}: {path} defines no class {name}")


def launcher_lines(root: Path = PACKAGE) -> dict[str, int]:
    """Class name → physical lines, for every built-in launcher class."""
    return {target.partition(":")[2]: class_lines(root, target) for target in builtin_launchers(root).values()}


def oversized(lines: dict[str, int]) -> dict[str, int]:
    """The classes of ``lines`` over :data:`MAX_LAUNCHER_LINES`."""
    return {name: n for name, n in lines.items() if n > MAX_LAUNCHER_LINES}


def test_every_builtin_launcher_class_is_a_page() -> None:
    assert oversized(launcher_lines()) == {}, f"launcher classes over {MAX_LAUNCHER_LINES} lines"


def test_the_check_sees_a_class_over_the_limit(tmp_path: Path) -> None:
    # the verdict must be able to flip: a registry naming a 151-line class and a 150-line one
    root = tmp_path / "pytest_triton"
    (root / "servers").mkdir(parents=True)
    (root / "servers" / "registry.py").write_text(
        "_BUILTIN: dict[str, str] = {\n"
        '    "big": "pytest_triton.servers.big:BigLauncher",\n'
        '    "page": "pytest_triton.servers.page:PageLauncher",\n'
        "}\n"
    )
    for module, name, body in (("big", "BigLauncher", 150), ("page", "PageLauncher", 149)):
        lines = [f"class {name}:", *(f"    x{i} = {i}" for i in range(body))]
        (root / "servers" / f"{module}.py").write_text("import os\n\n\n" + "\n".join(lines) + "\n\n\nY = 1\n")
    measured = launcher_lines(root)
    assert measured == {"BigLauncher": 151, "PageLauncher": 150}
    assert oversized(measured) == {"BigLauncher": 151}
