"""The example repositories and samples files of the declarations equal a fresh build of them."""

from __future__ import annotations

import filecmp
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

MODEL_REPOS = Path(__file__).resolve().parents[3] / "model_repos"


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _same_tree(fresh: Path, committed: Path) -> list[str]:
    diff = filecmp.dircmp(fresh, committed)
    problems = (
        [f"{committed}: only in one of them: {diff.left_only + diff.right_only}"]
        if diff.left_only or diff.right_only
        else []
    )
    _, mismatch, errors = filecmp.cmpfiles(fresh, committed, diff.common_files, shallow=False)
    problems += [f"{committed / name} differs" for name in mismatch + errors]
    for sub in diff.common_dirs:
        problems += _same_tree(fresh / sub, committed / sub)
    return problems


def test_tabular_example_is_fresh(tmp_path: Path) -> None:
    builder = _load(MODEL_REPOS / "build_tabular.py")
    builder.build(tmp_path / "assets", tmp_path / "tabular")
    problems = _same_tree(tmp_path / "tabular", MODEL_REPOS / "tabular")
    problems += _same_tree(tmp_path / "assets", MODEL_REPOS / "assets" / "tabular")
    assert not problems, "run python model_repos/build_tabular.py and commit:\n" + "\n".join(problems)


def test_scenario07_samples_file_is_fresh() -> None:
    pytest.importorskip("tokenizers", reason="the NLI tokenizer needs tokenizers (pip install '.[serve]')")
    tool = _load(MODEL_REPOS / "tools" / "make_nli_kserve_samples.py")
    committed = (MODEL_REPOS / "samples" / "nli_samples.kserve.jsonl").read_text(encoding="utf-8")
    assert committed == "\n".join(tool.kserve_lines()) + "\n", "run python model_repos/tools/make_nli_kserve_samples.py"
