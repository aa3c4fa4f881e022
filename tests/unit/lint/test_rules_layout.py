from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.lint import lint_path
from tests.unit.lint.helpers import lint_rules
from tests.unit.lint.helpers import write_model

PYTHON = 'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n'
MODEL_PY = "class TritonPythonModel:\n    pass\n"


def python_model(root: Path, name: str = "m", version: str = "1") -> Path:
    return write_model(root, name, PYTHON.format(name=name), {f"{version}/model.py": MODEL_PY})


def test_clean_python_model_has_no_findings(tmp_path: Path) -> None:
    python_model(tmp_path)
    assert lint_path(tmp_path) == []


@pytest.mark.parametrize("folder", ["v1", "01", "version1"])
def test_ignored_version_folders(tmp_path: Path, folder: str) -> None:
    python_model(tmp_path, version=folder)
    findings = lint_path(tmp_path)
    assert [f.rule for f in findings] == ["L101", "L102"]
    assert "at least one version must be available under the version policy" in findings[0].message
    assert findings[1].severity == "warning"


def test_name_mismatch_points_at_name_line(tmp_path: Path) -> None:
    write_model(tmp_path, "folder", '# c\nname: "other"\nbackend: "python"\n', {"1/model.py": MODEL_PY})
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.line, finding.col) == ("L103", 2, 1)


def test_missing_model_file_honours_default_model_filename(tmp_path: Path) -> None:
    write_model(tmp_path, "m", 'name: "m"\nbackend: "onnxruntime"\n', {"1/other.onnx": b"x"})
    assert lint_rules(tmp_path) == ["L104"]
    write_model(tmp_path, "m", 'name: "m"\nbackend: "onnxruntime"\ndefault_model_filename: "other.onnx"\n', {})
    assert "L104" not in lint_rules(tmp_path)


def test_hidden_folder_is_polled_as_a_model(tmp_path: Path) -> None:
    python_model(tmp_path)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    assert "L105" in lint_rules(tmp_path)


def test_config_at_repository_root(tmp_path: Path) -> None:
    python_model(tmp_path)
    (tmp_path / "config.pbtxt").write_text(PYTHON.format(name="x"))
    assert lint_rules(tmp_path) == ["L106"]


def test_missing_config_without_guessable_backend(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    findings = lint_path(tmp_path)
    assert [f.rule for f in findings] == ["L108"]
    assert "Could not determine backend for model 'm'" in findings[0].message


def test_missing_config_is_fine_for_onnx_autocomplete(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.onnx").write_bytes(b"")
    assert "L108" not in lint_rules(tmp_path)


def test_syntax_error_is_reported_and_other_models_still_linted(tmp_path: Path) -> None:
    write_model(tmp_path, "bad", 'name: "bad"\nbackend "python"\n', {"1/model.py": MODEL_PY})
    write_model(tmp_path, "good", 'name: "other"\nbackend: "python"\n', {"1/model.py": MODEL_PY})
    findings = lint_path(tmp_path)
    assert [(f.rule, f.line) for f in findings] == [("C001", 2), ("L103", 1)]
    assert findings[0].message.startswith("failed to read text proto")


def test_suppression_comment(tmp_path: Path) -> None:
    write_model(tmp_path, "f", 'name: "x"  # triton-lint: disable=L103\nbackend: "python"\n', {"1/model.py": ""})
    assert lint_path(tmp_path) == []


def test_missing_target(tmp_path: Path) -> None:
    assert lint_rules(tmp_path / "nope") == ["L107"]


def test_model_folder_target_keeps_only_its_findings(tmp_path: Path) -> None:
    folder = python_model(tmp_path, "a")
    write_model(tmp_path, "b", 'name: "zzz"\nbackend: "python"\n', {"1/model.py": MODEL_PY})
    assert lint_path(folder) == []
    assert lint_rules(tmp_path) == ["L103"]


def test_folder_of_repositories(tmp_path: Path) -> None:
    python_model(tmp_path / "one", "a")
    write_model(tmp_path / "two", "b", 'name: "zzz"\nbackend: "python"\n', {"1/model.py": MODEL_PY})
    assert lint_rules(tmp_path) == ["L103"]
    (tmp_path / "empty").mkdir()
    assert lint_rules(tmp_path / "empty") == ["L109"]
