"""Tensor descriptions shared by the builder, the adapter and the clients."""

from __future__ import annotations

from dataclasses import dataclass

# Triton data type → numpy dtype name (BYTES/STRING tensors are numpy object arrays)
TRITON_TO_NUMPY: dict[str, str] = {
    "TYPE_BOOL": "bool",
    "TYPE_UINT8": "uint8",
    "TYPE_UINT16": "uint16",
    "TYPE_UINT32": "uint32",
    "TYPE_UINT64": "uint64",
    "TYPE_INT8": "int8",
    "TYPE_INT16": "int16",
    "TYPE_INT32": "int32",
    "TYPE_INT64": "int64",
    "TYPE_FP16": "float16",
    "TYPE_FP32": "float32",
    "TYPE_FP64": "float64",
    "TYPE_STRING": "object",
}
# ONNX TensorProto element type number → Triton data type
ONNX_TO_TRITON: dict[int, str] = {
    1: "TYPE_FP32",
    2: "TYPE_UINT8",
    3: "TYPE_INT8",
    4: "TYPE_UINT16",
    5: "TYPE_INT16",
    6: "TYPE_INT32",
    7: "TYPE_INT64",
    8: "TYPE_STRING",
    9: "TYPE_BOOL",
    10: "TYPE_FP16",
    11: "TYPE_FP64",
    12: "TYPE_UINT32",
    13: "TYPE_UINT64",
    16: "TYPE_BF16",
}


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output as config.pbtxt declares it (dims exclude the batch dimension)."""

    name: str
    data_type: str
    dims: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.data_type.startswith("TYPE_"):
            object.__setattr__(self, "data_type", f"TYPE_{self.data_type.upper()}")
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
