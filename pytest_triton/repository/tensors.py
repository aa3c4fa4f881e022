"""Tensor descriptions shared by the builder, the adapter and the clients."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_triton.dtypes import DATA_TYPES

# Triton data type → numpy dtype name (BYTES/STRING tensors are numpy object arrays)
TRITON_TO_NUMPY: dict[str, str] = {d.config: d.numpy for d in DATA_TYPES if d.numpy is not None}
# ONNX TensorProto element type number → Triton data type
ONNX_TO_TRITON: dict[int, str] = {d.onnx: d.config for d in DATA_TYPES}


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
