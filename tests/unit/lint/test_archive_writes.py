"""Linting a model.tar.gz writes only what rules open as files (configs, model.py): measured on disk.

The bytes are counted in the linter's own temporary folder just before it is removed (its blocks on disk:
placeholders of the other members are sparse and count nothing), against a budget below the archive's size.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path
from typing import ClassVar

import pytest

from pytest_triton.lint import lint_path

BUDGET = 64 << 20  # docs/lint.md: linting an archive writes less than this
CONFIG = 'name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\n'


class _Measured(tempfile.TemporaryDirectory[str]):
    """The linter's temporary folder, its bytes on disk counted when it is removed."""

    written: ClassVar[list[int]] = []

    def cleanup(self) -> None:
        files = [p for p in Path(self.name).rglob("*") if p.is_file()]
        _Measured.written.append(sum(p.stat().st_blocks * 512 for p in files))
        super().cleanup()


@pytest.fixture
def bytes_written(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    _Measured.written = []
    monkeypatch.setattr(tempfile, "TemporaryDirectory", _Measured)  # the module the runner calls it from
    return _Measured.written


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def onnx_model(weight_bytes: int) -> bytes:
    """A model computing Y = X + W, with W an initializer of ``weight_bytes`` bytes."""
    import numpy as np
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    count = weight_bytes // 4
    weights = numpy_helper.from_array(np.zeros(count, dtype=np.float32), name="W")
    graph = helper.make_graph(
        [helper.make_node("Add", ["X", "W"], ["Y"])],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [count])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [count])],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return bytes(model.SerializeToString())


def test_an_archive_of_many_small_files_writes_only_the_config(tmp_path: Path, bytes_written: list[int]) -> None:
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        _add(tar, "m/config.pbtxt", b'name: "m"\nbackend: "python"\n')
        _add(tar, "m/1/model.py", b"class TritonPythonModel:\n    pass\n")
        for index in range(2_400):  # 2,400 x 40 KB: 98 MB of small files
            _add(tar, f"m/1/assets/{index:04d}.bin", bytes(40 << 10))
    assert lint_path(archive) == []
    (written,) = bytes_written
    assert written < BUDGET, f"{written:,} bytes written for an archive of 98 MB"
    assert written < 1 << 20  # the config and model.py, in a few blocks


def test_one_large_onnx_model_is_checked_from_the_stream(tmp_path: Path, bytes_written: list[int]) -> None:
    archive = tmp_path / "model.tar.gz"
    model = onnx_model(96 << 20)
    wrong = CONFIG + 'output [ { name: "Z" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'  # the model's output is Y
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        _add(tar, "m/config.pbtxt", wrong.encode())
        _add(tar, "m/1/model.onnx", model)
    findings = lint_path(archive)
    (written,) = bytes_written
    assert written < BUDGET, f"{written:,} bytes written for a {len(model):,}-byte model"
    assert written < 1 << 20
    assert "O504" in {f.rule for f in findings}, [f.format() for f in findings]  # its I/O was read all the same
    outputs = next(f for f in findings if f.rule == "O504")
    assert "'Z'" in outputs.message or "Z" in outputs.message


def test_stream_and_file_readers_agree(tmp_path: Path) -> None:
    from pytest_triton.onnx_io import read_onnx_io
    from pytest_triton.onnx_io import read_onnx_io_stream

    data = onnx_model(1 << 10)
    (tmp_path / "model.onnx").write_bytes(data)
    assert read_onnx_io_stream(io.BytesIO(data), len(data)) == read_onnx_io(tmp_path / "model.onnx")


def test_zeros_named_model_onnx_are_refused_quickly() -> None:
    from pytest_triton.errors import OnnxReadError
    from pytest_triton.onnx_io import read_onnx_io_stream

    with pytest.raises(OnnxReadError, match="field number 0"):
        read_onnx_io_stream(io.BytesIO(bytes(1 << 20)), 1 << 20)
