"""Tensor data types, once: config.pbtxt's name, KServe v2's name, numpy's dtype and ONNX's element type.

Every table the package needs (config → numpy for the builder, numpy → KServe for the clients, ONNX → config
for the linter and the builder, onnxruntime's type names for the reference) is derived from ``DATA_TYPES``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataType:
    """One data type under its four names; ``numpy`` is None where numpy has none (BF16)."""

    config: str  # config.pbtxt: TYPE_FP32
    kserve: str  # KServe v2 / Triton's API: FP32 (TRITONSERVER_DataTypeString)
    numpy: str | None  # numpy dtype name; "object" for strings
    onnx: int  # onnx.TensorProto.DataType
    onnx_name: str  # how onnxruntime names it: tensor(float)


DATA_TYPES: tuple[DataType, ...] = (
    DataType("TYPE_BOOL", "BOOL", "bool", 9, "tensor(bool)"),
    DataType("TYPE_UINT8", "UINT8", "uint8", 2, "tensor(uint8)"),
    DataType("TYPE_UINT16", "UINT16", "uint16", 4, "tensor(uint16)"),
    DataType("TYPE_UINT32", "UINT32", "uint32", 12, "tensor(uint32)"),
    DataType("TYPE_UINT64", "UINT64", "uint64", 13, "tensor(uint64)"),
    DataType("TYPE_INT8", "INT8", "int8", 3, "tensor(int8)"),
    DataType("TYPE_INT16", "INT16", "int16", 5, "tensor(int16)"),
    DataType("TYPE_INT32", "INT32", "int32", 6, "tensor(int32)"),
    DataType("TYPE_INT64", "INT64", "int64", 7, "tensor(int64)"),
    DataType("TYPE_FP16", "FP16", "float16", 10, "tensor(float16)"),
    DataType("TYPE_FP32", "FP32", "float32", 1, "tensor(float)"),
    DataType("TYPE_FP64", "FP64", "float64", 11, "tensor(double)"),
    DataType("TYPE_STRING", "BYTES", "object", 8, "tensor(string)"),
    DataType("TYPE_BF16", "BF16", None, 16, "tensor(bfloat16)"),
)

BY_CONFIG = {d.config: d for d in DATA_TYPES}
BY_ONNX = {d.onnx: d for d in DATA_TYPES}
BY_ONNX_NAME = {d.onnx_name: d for d in DATA_TYPES}
BY_NUMPY = {d.numpy: d for d in DATA_TYPES if d.numpy is not None}
