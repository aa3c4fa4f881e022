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


# -- cases the differential test against the real Triton found -----------------------------------


@pytest.mark.parametrize(("folder", "version"), [("1.0", 1), ("+2", 2), ("3a", 3)])
def test_version_folder_read_by_leading_integer(tmp_path: Path, folder: str, version: int) -> None:
    write_model(tmp_path, "ens", 'name: "ens"\nplatform: "ensemble"\n', {f"{folder}/.keep": ""})
    findings = [f for f in lint_path(tmp_path) if f.rule.startswith("L")]
    assert [(f.rule, f.severity) for f in findings] == [("L102", "warning")]
    assert f"read as version {version}" in findings[0].message


def test_python_model_in_non_canonical_folder_misses_its_file(tmp_path: Path) -> None:
    python_model(tmp_path, version="1.0")
    findings = lint_path(tmp_path)
    assert [f.rule for f in findings] == ["L104", "L102"]
    assert "Triton looks for model.py in 1/" in findings[0].message


def test_version_overflowing_int64_is_an_error(tmp_path: Path) -> None:
    python_model(tmp_path)
    (tmp_path / "m" / "99999999999999999999").mkdir()
    assert "L110" in lint_rules(tmp_path)


def test_only_versions_the_policy_loads_need_model_files(tmp_path: Path) -> None:
    python_model(tmp_path)
    (tmp_path / "m" / "0").mkdir()  # empty, but only the latest version (1) is loaded
    assert lint_path(tmp_path) == []
    (tmp_path / "m" / "config.pbtxt").write_text(PYTHON.format(name="m") + "version_policy { all { } }\n")
    assert lint_rules(tmp_path) == ["L104"]


@pytest.mark.parametrize("policy", ["specific { versions: 2 }", "latest { }"])
def test_version_policy_that_loads_nothing(tmp_path: Path, policy: str) -> None:
    write_model(tmp_path, "m", PYTHON.format(name="m") + f"version_policy {{ {policy} }}\n", {"1/model.py": ""})
    findings = lint_path(tmp_path)
    assert [f.rule for f in findings] == ["L101"]
    assert "version_policy" in findings[0].message


def test_backend_decides_the_model_file_whatever_the_platform_label(tmp_path: Path) -> None:
    write_model(tmp_path, "m", 'name: "m"\nplatform: "tensorrt_plan"\nbackend: "python"\n', {"1/model.py": ""})
    assert "L104" not in lint_rules(tmp_path)


def test_missing_python_config_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.py").write_text(MODEL_PY)
    assert [(f.rule, f.severity) for f in lint_path(tmp_path)] == [("C002", "warning")]


def test_plus_sign_and_non_utf8_comment(tmp_path: Path) -> None:
    write_model(tmp_path, "m", 'name: "m"\nbackend: "python"\nmax_batch_size: +2\n', {"1/model.py": ""})
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.line, finding.col) == ("C001", 3, 17)
    assert "Expected integer, got: +" in finding.message
    (tmp_path / "m" / "config.pbtxt").write_bytes(b'# caf\xe9\nname: "m"\nbackend: "python"\n')
    assert lint_path(tmp_path) == []
    (tmp_path / "m" / "config.pbtxt").write_bytes(b'name: "m\xe9"\nbackend: "python"\n')
    assert lint_rules(tmp_path) == ["C001"]


def test_a_rule_id_given_twice_must_keep_its_definition() -> None:
    from pytest_triton.lint.rules import catalog

    same = ("L101", catalog.RULES["L101"].severity, catalog.RULES["L101"].title)
    assert catalog.build_catalog([[same], [same]])["L101"] == catalog.RULES["L101"]
    with pytest.raises(ValueError, match="'L101' is registered twice"):
        catalog.build_catalog([[same], [("L101", "info", "something else")]])
