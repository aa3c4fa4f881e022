from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from pytest_triton.lint import lint_path
from tests.unit.lint.helpers import lint_rules
from tests.unit.lint.helpers import rules
from tests.unit.lint.helpers import write_model

PY = 'name: "{0}"\nbackend: "python"\nmax_batch_size: 0\n'


def make_tarball(path: Path, members: dict[str, bytes], *, link: tuple[str, str] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo(link[0])
            info.type = tarfile.SYMTYPE
            info.linkname = link[1]
            tar.addfile(info)
    return path


def model_members(name: str) -> dict[str, bytes]:
    return {f"{name}/config.pbtxt": PY.format(name).encode(), f"{name}/1/model.py": b"x = 1\n"}


def test_clean_tarball(tmp_path: Path) -> None:
    archive = make_tarball(tmp_path / "model.tar.gz", model_members("m"))
    assert lint_path(archive) == []


def test_config_at_tarball_root(tmp_path: Path) -> None:
    archive = make_tarball(tmp_path / "model.tar.gz", {"config.pbtxt": PY.format("m").encode(), "1/model.py": b""})
    findings = lint_path(archive)
    assert "D601" in rules(findings)
    d601 = next(f for f in findings if f.rule == "D601")
    assert d601.path == f"{archive}!/config.pbtxt"
    assert "Incorrect directory structure" in d601.message


@pytest.mark.parametrize(
    ("member", "link"),
    [("../evil.txt", None), ("/abs.txt", None), ("m/link", ("m/link", "/etc/passwd"))],
    ids=["dotdot", "absolute", "symlink"],
)
def test_unsafe_members_are_refused_and_not_written(tmp_path: Path, member: str, link: tuple[str, str] | None) -> None:
    members = model_members("m")
    if link is None:
        members[member] = b"boom"
    archive = make_tarball(tmp_path / "model.tar.gz", members, link=link)
    assert "D606" in lint_rules(archive)
    assert not (tmp_path / "evil.txt").exists()


def test_corrupt_tarball(tmp_path: Path) -> None:
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(b"\x1f\x8bnot really gzip")
    assert lint_rules(archive) == ["D607"]


def test_several_models_need_default_model_name(tmp_path: Path) -> None:
    archive = make_tarball(tmp_path / "model.tar.gz", {**model_members("a"), **model_members("b")})
    assert lint_rules(archive) == ["D602"]
    (tmp_path / "model.tar.gz.env").write_text("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=b\n")
    assert lint_rules(archive) == []
    (tmp_path / "model.tar.gz.env").write_text("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=zzz\n")
    assert lint_rules(archive) == ["D603"]


def test_default_model_option_on_a_folder(tmp_path: Path) -> None:
    write_model(tmp_path, "a", PY.format("a"), {"1/model.py": ""})
    assert lint_path(tmp_path, sagemaker_default_model="a") == []
    assert rules(lint_path(tmp_path, sagemaker_default_model="b")) == ["D603"]


def test_variable_dims_with_dynamic_batching_is_info(tmp_path: Path) -> None:
    config = (
        'name: "m"\nbackend: "python"\nmax_batch_size: 8\n'
        'input [ { name: "ids" data_type: TYPE_INT64 dims: [ -1 ] } ]\n'
        'output [ { name: "o" data_type: TYPE_FP32 dims: [ 3 ] } ]\ndynamic_batching { }\n'
    )
    write_model(tmp_path, "m", config, {"1/model.py": ""})
    findings = [f for f in lint_path(tmp_path) if f.rule == "D604"]
    assert [(f.severity, f.line) for f in findings] == [("info", 4)]
    write_model(tmp_path, "m", config.replace("-1", "512"), {"1/model.py": ""})
    assert "D604" not in lint_rules(tmp_path)


def test_tensorflow_platform_warning(tmp_path: Path) -> None:
    write_model(tmp_path, "m", 'name: "m"\nplatform: "tensorflow_savedmodel"\n', {"1/model.savedmodel/x": ""})
    assert "D605" in lint_rules(tmp_path)
