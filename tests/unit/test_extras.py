"""The extras that the README, the docs and the workflows name: none installs onnxruntime and onnxruntime-gpu
together (ONNX Runtime: one of them per environment, they share the ``onnxruntime`` package), and the base
install carries nothing only serving needs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
NAMED = re.compile(r"(?:\.|pytest-triton)\[([a-z0-9, -]+)\]")
TEXTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / ".github").rglob("*.yml"))]
TEXTS += [ROOT / ".ci" / "run", ROOT / "tox.ini", *sorted((ROOT / "benchmarks").glob("*.sh"))]


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def distributions(extras: set[str], optional: dict[str, list[str]] | None = None) -> set[str]:
    """Every distribution name the base install plus ``extras`` requires (self-references expanded)."""
    optional = PROJECT["optional-dependencies"] if optional is None else optional
    names = {_name(r) for r in PROJECT["dependencies"]}
    seen: set[str] = set()
    todo = list(extras)
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        assert extra in optional, f"extra {extra!r} is named but not defined in pyproject.toml"
        for requirement in optional[extra]:
            if _name(requirement) == "pytest-triton":
                todo += [e.strip() for e in requirement.split("[", 1)[1].split("]", 1)[0].split(",")]
            else:
                names.add(_name(requirement))
    return names


def named_combinations() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in TEXTS:
        for match in NAMED.finditer(path.read_text(encoding="utf-8")):
            found[f"{path.relative_to(ROOT)}: [{match.group(1)}]"] = {e.strip() for e in match.group(1).split(",")}
    return found


def test_the_texts_name_extras() -> None:
    assert any("gpu.yml" in where for where in named_combinations()), named_combinations()


@pytest.mark.parametrize("where", sorted(named_combinations()))
def test_no_named_extras_install_both_onnxruntimes(where: str) -> None:
    names = distributions(named_combinations()[where])
    assert not {"onnxruntime", "onnxruntime-gpu"} <= names, f"{where} installs onnxruntime and onnxruntime-gpu"


def test_the_check_sees_both_onnxruntimes_where_they_are() -> None:
    optional = {**PROJECT["optional-dependencies"], "both": ["pytest-triton[serve]", "onnxruntime-gpu>=1.17"]}
    assert {"onnxruntime", "onnxruntime-gpu"} <= distributions({"both"}, optional)


def test_base_dependencies_carry_nothing_only_serving_needs() -> None:
    base = distributions(set())
    assert "tritonclient" in base
    assert "protobuf" in base
    assert not any("[" in r for r in PROJECT["dependencies"] if _name(r) == "tritonclient"), "tritonclient extras"
    assert not base & {"grpcio", "gevent", "onnxruntime", "onnxruntime-gpu", "nvidia-pytriton"}
