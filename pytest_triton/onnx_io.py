"""Reading an ONNX file's graph inputs and outputs: the one reader the linter and the builder share.

The model is read with the ``onnx`` package, without external data and without running it: only
the graph's inputs, outputs and initializer names are used, and files over ``FULL_LOAD_LIMIT``
bytes are scanned at the protobuf wire level instead of being loaded (weights are skipped).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_triton.dtypes import DATA_TYPES
from pytest_triton.errors import OnnxReadError

FULL_LOAD_LIMIT = 64 * 2**20
# config data type -> ONNX TensorProto.DataType (ModelConfigDataTypeToOnnxDataType); BF16 has none there
CONFIG_TO_ONNX = {d.config: d.onnx for d in DATA_TYPES if d.config != "TYPE_BF16"}
# ONNX type -> the name Triton prints after "TYPE_" (TRITONSERVER_DataTypeString)
ONNX_TO_TRITON = {d.onnx: d.kserve for d in DATA_TYPES if d.config != "TYPE_BF16"}
_LFS = b"version https://git-lfs"


@dataclass(frozen=True)
class Tensor:
    """A graph input or output: ONNX element type (None: not a tensor), dims (-1: symbolic; None: unknown)."""

    name: str
    elem_type: int | None
    dims: tuple[int, ...] | None


@dataclass(frozen=True)
class OnnxIO:
    """What the onnxruntime backend sees of a model: inputs, overridable initializers, outputs."""

    inputs: dict[str, Tensor]
    initializers: dict[str, Tensor]
    outputs: dict[str, Tensor]


def read_onnx_io(path: Path, *, full_load_limit: int = FULL_LOAD_LIMIT) -> OnnxIO:
    """The graph I/O of the model at ``path``; raises :class:`OnnxReadError`, never anything else."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(len(_LFS))
    except OSError as exc:
        raise OnnxReadError(f"cannot read the file: {exc.strerror or exc}") from exc
    if head == _LFS:
        raise OnnxReadError("the file is a Git LFS pointer, not the model (run `git lfs pull`)")
    if size == 0:
        raise OnnxReadError("the file is empty")
    try:
        return _scan(path) if size > full_load_limit else _load(path)
    except OnnxReadError:
        raise
    except Exception as exc:
        raise OnnxReadError(f"not an ONNX model ({type(exc).__name__}: {exc})") from exc


def _load(path: Path) -> OnnxIO:
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    if not proto.HasField("graph"):
        raise OnnxReadError("no graph in the file: not an ONNX model")
    graph = proto.graph
    initializers = [t.name for t in graph.initializer] + [s.values.name for s in graph.sparse_initializer]
    return _io(proto.ir_version, list(graph.input), list(graph.output), initializers)


def _varint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise OnnxReadError("truncated or corrupt protobuf")
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            return value, pos


def _fields(buf: Any, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """``(field number, wire type, start, end or varint value)`` of each field in ``buf[pos:end]``."""
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield number, wire, pos, value
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            if pos + length > end:
                raise OnnxReadError("truncated or corrupt protobuf")
            yield number, wire, pos, pos + length
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise OnnxReadError(f"unsupported protobuf wire type {wire}")
    if pos != end:
        raise OnnxReadError("truncated or corrupt protobuf")


def _tensor_name(buf: Any, start: int, end: int) -> str:
    for number, wire, lo, hi in _fields(buf, start, end):
        if number == 8 and wire == 2:  # TensorProto.name
            return bytes(buf[lo:hi]).decode("utf-8", "replace")
    return ""


def _scan(path: Path) -> OnnxIO:
    """Read ModelProto.graph's inputs, outputs and initializer names, skipping weights and nodes."""
    import onnx

    ir_version, graphs = 0, 0
    inputs: list[Any] = []
    outputs: list[Any] = []
    initializers: list[str] = []
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        for number, wire, start, end in _fields(buf, 0, len(buf)):
            if number == 1 and wire == 0:
                ir_version = end
            elif number == 7 and wire == 2:  # ModelProto.graph
                graphs += 1
                for gnum, gwire, lo, hi in _fields(buf, start, end):
                    if gwire != 2:
                        continue
                    if gnum in (11, 12):  # GraphProto.input / output
                        (inputs if gnum == 11 else outputs).append(onnx.ValueInfoProto.FromString(buf[lo:hi]))
                    elif gnum == 5:  # initializer
                        initializers.append(_tensor_name(buf, lo, hi))
                    elif gnum == 15:  # sparse_initializer: its values tensor carries the name
                        values = next((f for f in _fields(buf, lo, hi) if f[0] == 1 and f[1] == 2), None)
                        if values is not None:
                            initializers.append(_tensor_name(buf, values[2], values[3]))
    if not graphs:
        raise OnnxReadError("no graph in the file: not an ONNX model")
    return _io(ir_version, inputs, outputs, initializers)


def _tensor(info: Any) -> Tensor:
    if info.type.WhichOneof("value") != "tensor_type":
        return Tensor(info.name, None, None)
    tensor = info.type.tensor_type
    if not tensor.HasField("shape"):
        return Tensor(info.name, int(tensor.elem_type), None)
    dims = tuple(int(d.dim_value) if d.HasField("dim_value") else -1 for d in tensor.shape.dim)
    return Tensor(info.name, int(tensor.elem_type), dims)


def _io(ir_version: int, inputs: list[Any], outputs: list[Any], initializers: list[str]) -> OnnxIO:
    """ONNX Runtime's view: graph inputs backed by an initializer are overridable (IR >= 4), not inputs."""
    backed = set(initializers)
    return OnnxIO(
        {i.name: _tensor(i) for i in inputs if i.name not in backed},
        {i.name: _tensor(i) for i in inputs if i.name in backed} if ir_version >= 4 else {},
        {o.name: _tensor(o) for o in outputs},
    )
