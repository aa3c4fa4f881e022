"""Reading an ONNX file's graph inputs and outputs: the one reader the linter and the builder share.

The model is read with the ``onnx`` package, without external data and without running it: only
the graph's inputs, outputs and initializer names are used, and files over ``FULL_LOAD_LIMIT``
bytes are scanned at the protobuf wire level instead of being loaded (weights are skipped).
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO
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


class _Stream:
    """A forward-only reader of protobuf fields from a file object (an archive member), skipping what it
    does not keep in chunks: the weights are read past, never held."""

    def __init__(self, read: Callable[[int], bytes], size: int) -> None:
        self.source_read, self.pos, self.size = read, 0, size

    def read(self, count: int) -> bytes:
        data = self.source_read(count)
        while len(data) < count and (more := self.source_read(count - len(data))):
            data += more
        if len(data) != count:
            raise OnnxReadError("truncated or corrupt protobuf")
        self.pos += count
        return data

    def skip(self, count: int) -> None:
        while count > 0:
            count -= len(self.read(min(count, _CHUNK)))

    def varint(self) -> int:
        value = shift = 0
        while shift <= 63:
            byte = self.read(1)[0]
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value
        raise OnnxReadError("truncated or corrupt protobuf")

    def fields(self, end: int) -> Iterator[tuple[int, int, int]]:
        """``(field number, wire type, varint value or payload length)`` up to offset ``end``; the caller
        reads or skips a length-delimited payload before asking for the next field."""
        while self.pos < end:
            tag = self.varint()
            number, wire = tag >> 3, tag & 7
            if number == 0:  # no field has number 0: zeros, or not protobuf at all
                raise OnnxReadError("not an ONNX model (field number 0)")
            if wire in (0, 2):
                value = self.varint()
                if wire == 2 and self.pos + value > end:
                    raise OnnxReadError("truncated or corrupt protobuf")
                yield number, wire, value
            elif wire in (1, 5):
                self.skip(8 if wire == 1 else 4)
            else:
                raise OnnxReadError(f"unsupported protobuf wire type {wire}")
        if self.pos != end:
            raise OnnxReadError("truncated or corrupt protobuf")

    def tensor_name(self, end: int) -> str:
        """TensorProto.name (field 8), every other field read past."""
        name = ""
        for number, wire, value in self.fields(end):
            if wire != 2:
                continue
            if number == 8 and value <= _MAX_VALUE_INFO:
                name = self.read(value).decode("utf-8", "replace")
            else:
                self.skip(value)
        return name


_CHUNK = 1 << 20
_MAX_VALUE_INFO = 1 << 20  # one graph input's or output's description: a name, a type, a shape


def read_onnx_io_stream(source: IO[bytes], size: int) -> OnnxIO:
    """The graph I/O of an ONNX model read once, front to back, from ``source`` (``size`` bytes): an archive
    member is checked without being written out. Raises :class:`OnnxReadError`, never anything else."""
    try:
        return _read_stream(source, size)
    except OnnxReadError:
        raise
    except Exception as exc:
        raise OnnxReadError(f"not an ONNX model ({type(exc).__name__}: {exc})") from exc


def _read_stream(source: IO[bytes], size: int) -> OnnxIO:
    import onnx

    if size == 0:
        raise OnnxReadError("the file is empty")
    head = _Stream(source.read, size).read(min(len(_LFS), size))
    if head == _LFS:
        raise OnnxReadError("the file is a Git LFS pointer, not the model (run `git lfs pull`)")
    stream = _Stream(_Prefixed(head, source).read, size)
    ir_version, graphs = 0, 0
    inputs: list[Any] = []
    outputs: list[Any] = []
    initializers: list[str] = []
    for number, wire, value in stream.fields(size):
        if number == 1 and wire == 0:
            ir_version = value
        elif number == 7 and wire == 2:  # ModelProto.graph
            graphs += 1
            for gnum, gwire, length in stream.fields(stream.pos + value):
                if gwire != 2:
                    continue
                end = stream.pos + length
                if gnum in (11, 12) and length <= _MAX_VALUE_INFO:  # GraphProto.input / output
                    info = onnx.ValueInfoProto.FromString(stream.read(length))
                    (inputs if gnum == 11 else outputs).append(info)
                elif gnum == 5:  # initializer
                    initializers.append(stream.tensor_name(end))
                elif gnum == 15:  # sparse_initializer: its values tensor (field 1) carries the name
                    for snum, swire, slength in stream.fields(end):
                        if snum == 1 and swire == 2:
                            initializers.append(stream.tensor_name(stream.pos + slength))
                        elif swire == 2:
                            stream.skip(slength)
                else:
                    stream.skip(length)
        elif wire == 2:
            stream.skip(value)
    if not graphs:
        raise OnnxReadError("no graph in the file: not an ONNX model")
    return _io(ir_version, inputs, outputs, initializers)


class _Prefixed:
    """``head`` (already read) and then the rest of ``source``."""

    def __init__(self, head: bytes, source: IO[bytes]) -> None:
        self.head, self.source = head, source

    def read(self, count: int) -> bytes:
        if self.head:
            taken, self.head = self.head[:count], self.head[count:]
            return taken + (self.source.read(count - len(taken)) if count > len(taken) else b"")
        return self.source.read(count)


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
