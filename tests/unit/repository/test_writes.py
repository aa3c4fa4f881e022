"""Nothing is written outside the plugin's folders, and nothing of the user's changes: names and paths given to
the writers are checked, and a staged copy never writes through to the user's files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_triton.config import model_config_class
from pytest_triton.config.model import read_config
from pytest_triton.errors import ConfigError
from pytest_triton.repository.builder import RepositoryBuilder
from pytest_triton.repository.layout import stage_copy
from pytest_triton.repository.tensors import TensorSpec
from pytest_triton.strategies import ModelFolder
from pytest_triton.strategies import RepositorySpec
from pytest_triton.strategies import write_repository


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``tmp_path/models`` holding a model and a file, with a file beside it: all must survive."""
    root = tmp_path / "models"
    (root / "kept").mkdir(parents=True)
    (root / "kept" / "config.pbtxt").write_text('name: "kept"\n')
    (root / "notes.txt").write_text("mine")
    (tmp_path / "beside.txt").write_text("mine too")
    return root


def _untouched(root: Path) -> None:
    assert (root / "kept" / "config.pbtxt").read_text() == 'name: "kept"\n'
    assert (root / "notes.txt").read_text() == "mine"
    assert (root.parent / "beside.txt").read_text() == "mine too"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "/nonexistent-pytest-triton/x", "a\\b", "../models"])
def test_builder_refuses_a_model_name_that_is_not_one_folder(tree: Path, name: str) -> None:
    config = model_config_class()(name=name, backend="python")
    with pytest.raises(ConfigError, match="model name") as caught:
        RepositoryBuilder(tree).add_config(config, {"1/model.py": "pass\n"}).write()
    assert repr(name) in str(caught.value)
    _untouched(tree)


@pytest.mark.parametrize("rel", ["", ".", "../beside.txt", "../../x", "/etc/x", "1/../../x", "1\\model.py", "C:/x"])
def test_builder_refuses_a_file_path_outside_the_model_folder(tree: Path, rel: str) -> None:
    config = model_config_class()(name="m", backend="python")
    with pytest.raises(ConfigError, match="file path") as caught:
        RepositoryBuilder(tree).add_config(config, {rel: b"x"}).write()
    assert repr(rel) in str(caught.value)
    _untouched(tree)
    assert not (tree / "m").exists()


def test_builder_refuses_a_model_folder_that_links_out(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x")
    (tree / "m").symlink_to(outside)
    config = model_config_class()(name="m", backend="python")
    with pytest.raises(ConfigError, match="outside"):
        RepositoryBuilder(tree).add_config(config, {"1/model.py": "pass\n"}).write()
    assert (outside / "precious").read_text() == "x"


def test_builder_still_writes_nested_paths_and_folders(tmp_path: Path) -> None:
    config = model_config_class()(name="m", backend="python")
    root = RepositoryBuilder(tmp_path / "r").add_config(config, {"1/model.py": "pass\n", "1/data/": b""}).write()
    assert (root / "m" / "1" / "model.py").read_text() == "pass\n"
    assert (root / "m" / "1" / "data").is_dir()


@pytest.mark.parametrize(("folder", "files"), [("..", {}), ("", {}), ("m", {"../../x": b""})])
def test_write_repository_checks_extra_folders(tree: Path, folder: str, files: dict[str, bytes]) -> None:
    with pytest.raises(ConfigError):
        write_repository(RepositorySpec(()), tree, extra=[ModelFolder(folder, None, files)])
    _untouched(tree)


def test_a_write_to_a_staged_large_file_never_reaches_the_original(tmp_path: Path) -> None:
    source = tmp_path / "repo"
    (source / "m" / "1").mkdir(parents=True)
    weights = source / "m" / "1" / "model.onnx"
    original = os.urandom(2 << 20)  # over the 1 MiB at which staging used to link
    weights.write_bytes(original)
    staged = stage_copy(source, tmp_path / "staged") / "m" / "1" / "model.onnx"
    assert not staged.is_symlink()
    assert staged.read_bytes() == original
    with staged.open("r+b") as out:
        out.write(b"overwritten")
    staged.unlink()
    assert weights.read_bytes() == original
    assert weights.stat().st_nlink == 1


def test_builder_adds_a_tensorrt_plan_with_its_config_on_the_gpu(tmp_path: Path) -> None:
    plan = tmp_path / "engine.plan"
    plan.write_bytes(b"serialized engine")
    spec_in, spec_out = TensorSpec("x", "TYPE_FP16", (4,)), TensorSpec("y", "TYPE_FP16", (4,))
    builder = RepositoryBuilder(tmp_path / "r").add_tensorrt("trt", plan, inputs=[spec_in], outputs=[spec_out])
    root = builder.add_tensorrt("trt2", plan, inputs=[spec_in], outputs=[spec_out], versions=(1, 3)).write()
    assert (root / "trt" / "1" / "model.plan").read_bytes() == b"serialized engine"
    assert sorted(p.name for p in (root / "trt2").iterdir()) == ["1", "3", "config.pbtxt"]
    config = read_config(root / "trt" / "config.pbtxt").message
    assert (config.platform, [g.kind for g in config.instance_group]) == ("tensorrt_plan", [1])  # KIND_GPU
    assert ([i.name for i in config.input], [o.name for o in config.output]) == (["x"], ["y"])
