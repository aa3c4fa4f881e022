"""``package_model_tar`` writes what SageMaker serves: every file of every model folder, nested ones included.

The archive is read back as the container reads it (unpacked into a folder, as into /opt/ml/model) and compared
with the repository file by file, bytes included; it is reproducible, and refuses what SageMaker cannot take.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.archive.model_tar import read_env_file
from pytest_triton.archive.model_tar import sidecar_env
from pytest_triton.archive.model_tar import unpack_model_archive
from pytest_triton.errors import ConfigError
from pytest_triton.repository.sagemaker import package_model_tar

# a repository whose models keep files at every depth: beside config.pbtxt, in the version folders, and in
# folders below them (a tokenizer's assets, a weights folder)
FILES = {
    "tokenize/config.pbtxt": b'name: "tokenize"\nbackend: "python"\n',
    "tokenize/1/model.py": b"class TritonPythonModel:\n    pass\n",
    "tokenize/1/tokenizer.json": b'{"model": "unigram"}\n',
    "tokenize/1/assets/vocab/spm.model": b"\x00\x01vocab",
    "mdeberta/config.pbtxt": b'name: "mdeberta"\nbackend: "onnxruntime"\n',
    "mdeberta/1/model.onnx": b"\x08\x07onnx-bytes" * 100,
    "mdeberta/2/model.onnx": b"\x08\x07version-two",
    "mdeberta/2/trt_cache/engines/a.engine": b"engine",
    "mdeberta/labels.txt": b"entailment\nneutral\ncontradiction\n",
}


def _repository(root: Path) -> Path:
    for name, data in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_file_of_every_model_is_in_the_archive_with_its_bytes(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    archive = package_model_tar(repo, tmp_path / "out" / "model.tar.gz")
    unpacked = unpack_model_archive(archive, tmp_path / "opt-ml-model")
    assert _tree(unpacked) == FILES


def test_the_archive_has_model_folders_at_its_root_and_no_owner_or_time(tmp_path: Path) -> None:
    archive = package_model_tar(_repository(tmp_path / "repo"), tmp_path / "model.tar.gz")
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
    files = {m.name for m in members if m.isfile()}
    assert files == set(FILES)
    assert {m.name.split("/")[0] for m in members} == {"tokenize", "mdeberta"}
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members} == {(0, 0, "", "", 0)}


def test_two_packagings_are_the_same_bytes(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    first = package_model_tar(repo, tmp_path / "a" / "model.tar.gz").read_bytes()
    os.utime(repo / "tokenize" / "1" / "model.py", (1, 1))  # another time stamp changes nothing
    assert package_model_tar(repo, tmp_path / "b" / "model.tar.gz").read_bytes() == first


def test_the_default_model_is_written_beside_the_archive_and_removed_when_not_given(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    archive = package_model_tar(repo, tmp_path / "model.tar.gz", default_model="tokenize")
    assert read_env_file(sidecar_env(archive)) == {DEFAULT_MODEL_ENV: "tokenize"}
    package_model_tar(repo, archive)
    assert not sidecar_env(archive).exists()


@pytest.mark.parametrize(
    ("setup", "default_model", "message"),
    [
        ("empty", None, "has no model folders to package"),
        ("link", None, "is a link; SageMaker archives must hold plain files"),
        ("files", "missing", "default_model='missing' is not a model folder"),
    ],
)
def test_what_sagemaker_cannot_serve_is_refused(
    tmp_path: Path, setup: str, default_model: str | None, message: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    if setup != "empty":
        _repository(repo)
    if setup == "link":
        (repo / "mdeberta" / "1" / "shared.onnx").symlink_to(repo / "mdeberta" / "1" / "model.onnx")
    with pytest.raises(ConfigError, match=message):
        package_model_tar(repo, tmp_path / "model.tar.gz", default_model=default_model)
